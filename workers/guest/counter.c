/* The instruction counter's check (workers/guest/counter.py): a loop of known length in the guest, timed
 * by the guest's own clock. Under QEMU's -icount shift=0 that clock advances 1 ns per instruction, so a
 * run of N iterations of two instructions (dec, jnz) must read 2N ns, plus what the clock_gettime()
 * call and the interrupts (and the tasks they wake) that land inside the run add.
 *
 * Freestanding (no libc: the guest has none), built -static -nostdlib; it prints one line
 * "ITERATIONS NANOSECONDS" per run on stdout and exits.
 */
typedef unsigned long u64;

#define SYS_write 1
#define SYS_exit 60
#define SYS_clock_gettime 228
#define CLOCK_MONOTONIC 1

/* Short and long runs, twice each: what lands inside a run (a timer interrupt, a kworker) only adds. */
static const u64 runs[] = {10000000UL, 40000000UL, 10000000UL, 40000000UL};

static long syscall3(long nr, long a, long b, long c)
{
	long ret;

	asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return ret;
}

static u64 now_ns(void)
{
	struct { long sec, nsec; } ts;

	syscall3(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&ts, 0);
	return (u64)ts.sec * 1000000000UL + (u64)ts.nsec;
}

/* Exactly 2 * n instructions: the loop body is `dec` and `jnz`, nothing else. */
static void spin(u64 n)
{
	asm volatile("1: dec %0\n\tjnz 1b" : "+r"(n) : : "cc");
}

static int decimal(char *out, u64 v)
{
	char tmp[24];
	int n = 0, len = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		out[len++] = tmp[--n];
	return len;
}

__attribute__((force_align_arg_pointer, noreturn)) void _start(void)
{
	char line[64];

	for (unsigned int i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		u64 start = now_ns();
		spin(runs[i]);
		u64 took = now_ns() - start;
		int len = decimal(line, runs[i]);
		line[len++] = ' ';
		len += decimal(line + len, took);
		line[len++] = '\n';
		syscall3(SYS_write, 1, (long)line, len);
	}
	syscall3(SYS_exit, 0, 0, 0);
	__builtin_unreachable();
}
