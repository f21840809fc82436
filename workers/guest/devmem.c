/* The /dev/mem probe of huge pfnmap leaves (workers/guest/devmem.py): remap_pfn_range() in an x86 guest.
 *
 * /dev/mem's mmap_mem() (drivers/char/mem.c) calls remap_pfn_range() over the physical range asked for, so
 * no driver is needed. Per line of /probe.conf, "ID HUGE SIZE PA_OFFSET VA_OFFSET HOLE FORK", a child
 * process of its own (a fresh mm: no page table of an earlier line is reused):
 * - writes HUGE (0 or 1) to the kernel's remap_pfn_pmd switch (workers/guest/hugepfn/0002), when it has one;
 * - maps SIZE bytes of /dev/mem at physical PA_BASE + PA_OFFSET, at a virtual address whose offset in its
 *   1 GiB region is (PA_OFFSET + VA_OFFSET) mod 1 GiB, in a 1 GiB region no other mapping touches (a PMD
 *   table of its own; the PUD table is the stack's, under norandmaps), once to warm the allocators up and
 *   once timed;
 * - counts the leaves inside the mapping per level from the kernel's dump of this process's page tables
 *   (/sys/kernel/debug/page_tables/current_kernel: arch/x86/mm/debug_pagetables.c ptdump_curknl_show(),
 *   which walks current->mm, user half included; smaps and pagemap skip VM_PFNMAP) and the page-table pages
 *   the mmap() added (VmPTE of /proc/self/status: mm_pgtables_bytes(), deposited tables included);
 * - when HOLE >= 0, unmaps the page at that offset (a PMD leaf there is split: the RFC's
 *   __split_huge_pmd_locked() branch) and counts again;
 * - when FORK is 1, forks while the mapping is live and the child counts its own leaves (copy_huge_pmd());
 * - unmaps the rest and times that.
 * Under QEMU's -icount shift=0 the guest clock advances 1 ns per instruction, so each time is the
 * instructions of the call (plus any interrupt inside it: reruns of one boot repeat them exactly).
 * Output, one line per configuration on stdout: "memsweep-devmem ID key=value ...", or
 * "memsweep-devmem ID error=..." when a step failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PA_BASE 0x40000000UL /* mem=1024M on the guest's command line: RAM past it the kernel never uses */
#define GiB (1UL << 30)
#define PAGE 4096UL
#define SWITCH "/sys/module/kernel/parameters/remap_pfn_pmd"
#define DUMP "/sys/kernel/debug/page_tables/current_kernel"

struct leaves {
	unsigned long pte, pmd, pud; /* present leaves inside [start, end) */
};

static unsigned long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long)ts.tv_sec * 1000000000UL + (unsigned long)ts.tv_nsec;
}

/* VmPTE in bytes (fs/proc/task_mmu.c task_mem(): mm_pgtables_bytes() >> 10, in kB). */
static long vm_pte(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPTE: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

/* The ptdump lines (arch/x86/mm/dump_pagetables.c note_page(): "0xSTART-0xEND  SIZE  PROT...  LEVEL", runs
 * of one level and one protection merged) that overlap [start, end), summed per level. A present run shows
 * "RW" or "ro" (printk_prot()); a run that is not present shows blanks instead. */
static int count(unsigned long start, unsigned long end, struct leaves *out)
{
	char line[512];
	FILE *f = fopen(DUMP, "r");

	memset(out, 0, sizeof(*out));
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b, lo, hi;
		char *level;

		if (sscanf(line, "0x%lx-0x%lx", &a, &b) != 2 || b <= start || a >= end)
			continue;
		if (!strstr(line, " RW ") && !strstr(line, " ro "))
			continue;
		lo = a > start ? a : start;
		hi = b < end ? b : end;
		level = strrchr(line, ' ');
		if (!level)
			continue;
		level++;
		if (!strncmp(level, "pte", 3))
			out->pte += (hi - lo) >> 12;
		else if (!strncmp(level, "pmd", 3))
			out->pmd += (hi - lo) >> 21;
		else if (!strncmp(level, "pud", 3))
			out->pud += (hi - lo) >> 30;
	}
	fclose(f);
	return 0;
}

static int set_switch(int huge)
{
	int fd = open(SWITCH, O_WRONLY);

	if (fd < 0)
		return huge ? -1 : 0; /* a kernel without the switch makes PTEs only: asking for them is fine */
	if (write(fd, huge ? "1\n" : "0\n", 2) != 2) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static void fail(long id, const char *step)
{
	printf("memsweep-devmem %ld error=%s:%s\n", id, step, strerror(errno));
	fflush(stdout);
	_exit(1);
}

static void run(long id, int huge, unsigned long size, unsigned long pa_off, unsigned long va_off, long hole,
		int do_fork)
{
	struct leaves l, h = {0}, c = {0};
	unsigned long t0, t_map, t_hole = 0, t_unmap, va, base;
	long pt0, pt1, pt2;
	char *reserve, *p;
	int fd, status = 0;

	if (set_switch(huge))
		fail(id, "switch");
	fd = open("/dev/mem", O_RDWR | O_SYNC);
	if (fd < 0)
		fail(id, "open");
	/* A free stretch with a whole 1 GiB region in it, given back before the mapping takes its place. */
	reserve = mmap(NULL, 3 * GiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (reserve == MAP_FAILED)
		fail(id, "reserve");
	base = ((unsigned long)reserve + GiB - 1) & ~(GiB - 1);
	munmap(reserve, 3 * GiB);
	va = base + ((pa_off + va_off) & (GiB - 1));
	/* Once unmeasured: the slab caches and per-cpu page lists the calls draw on are refilled by this one
	 * (a refill is a new page cleared: ~4,400 instructions that would land in whichever mapping came first). */
	p = mmap((void *)va, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, PA_BASE + pa_off);
	if (p == MAP_FAILED || munmap(p, size))
		fail(id, "warm-up");
	pt0 = vm_pte();
	t0 = now_ns();
	p = mmap((void *)va, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, PA_BASE + pa_off);
	t_map = now_ns() - t0;
	if (p == MAP_FAILED)
		fail(id, "mmap");
	pt1 = vm_pte();
	if (count(va, va + size, &l))
		fail(id, "ptdump");
	if (do_fork) {
		pid_t pid = fork();

		if (pid < 0)
			fail(id, "fork");
		if (pid == 0) { /* the child's own page tables: what copy_huge_pmd() and copy_pte_range() made */
			struct leaves k;

			if (count(va, va + size, &k))
				_exit(2);
			/* the child's counts, as its exit status cannot hold them: one line on stdout */
			printf("memsweep-devmem-child %ld %lu %lu %lu\n", id, k.pte, k.pmd, k.pud);
			fflush(stdout);
			_exit(0);
		}
		if (waitpid(pid, &status, 0) < 0)
			fail(id, "waitpid");
	}
	if (hole >= 0) {
		t0 = now_ns();
		if (munmap(p + hole, PAGE))
			fail(id, "hole");
		t_hole = now_ns() - t0;
		if (count(va, va + size, &h))
			fail(id, "ptdump");
	}
	t0 = now_ns();
	if (munmap(p, size))
		fail(id, "munmap");
	t_unmap = now_ns() - t0;
	pt2 = vm_pte();
	if (count(va, va + size, &c))
		fail(id, "ptdump");
	close(fd);
	printf("memsweep-devmem %ld va=%lu pte=%lu pmd=%lu pud=%lu pt_bytes=%ld mmap_ns=%lu munmap_ns=%lu "
	       "hole_pte=%lu hole_pmd=%lu hole_ns=%lu child=%d after=%lu pt_left=%ld\n",
	       id, va, l.pte, l.pmd, l.pud, pt1 - pt0, t_map, t_unmap, h.pte, h.pmd, t_hole,
	       do_fork ? (WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) : -1,
	       c.pte + c.pmd + c.pud, pt2 - pt0);
	fflush(stdout);
	_exit(0);
}

int main(int argc, char **argv)
{
	FILE *conf = fopen(argc > 1 ? argv[1] : "/probe.conf", "r");
	long id, hole;
	int huge, do_fork;
	unsigned long size, pa_off, va_off;

	if (!conf) {
		printf("memsweep-devmem-fatal no configuration: %s\n", strerror(errno));
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fscanf(conf, "%ld %d %lu %lu %lu %ld %d", &id, &huge, &size, &pa_off, &va_off, &hole, &do_fork) == 7) {
		pid_t pid = fork();
		int status;

		if (pid == 0)
			run(id, huge, size, pa_off, va_off, hole, do_fork);
		if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
			printf("memsweep-devmem %ld error=child:%s\n", id, pid < 0 ? strerror(errno) : "killed");
	}
	printf("memsweep-devmem-done\n");
	return 0;
}
