/*
 * memsweep-build: kernel-flags (built without SSE/MMX/AVX, as the kernel is: see build.py)
 * Non-temporal copies and the clock. Built like the kernel (no SSE/AVX
 * registers: -mno-sse -mno-mmx -mno-avx, as arch/x86/Makefile does), so
 * constant-size memcpy() expands to 8-byte moves as it does in the kernel.
 */
#define _GNU_SOURCE
#include <time.h>

#include "memsweep.h"

#ifdef MS_X86
#include <cpuid.h>
#endif

enum { WB_NONE = 0, WB_CLFLUSH = 1, WB_CLFLUSHOPT = 2, WB_CLWB = 3 };
static int writeback_kind = WB_NONE;

/* The CPU's cache-line write-back instruction: CLWB if present (what clean_cache_range() uses), else
 * CLFLUSHOPT, else CLFLUSH. CPUID.(EAX=7,ECX=0):EBX bit 24 = CLWB, bit 23 = CLFLUSHOPT. */
__attribute__((constructor)) static void detect_writeback(void)
{
#ifdef MS_X86
	unsigned int a, b, c, d;

	writeback_kind = WB_CLFLUSH;
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
		if (b & (1u << 24))
			writeback_kind = WB_CLWB;
		else if (b & (1u << 23))
			writeback_kind = WB_CLFLUSHOPT;
	}
#endif
}

/* The clock every timed routine reads: wall time (CLOCK_MONOTONIC) or the calling thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID), which leaves out the time other tasks ran on the pinned CPU. */
static clockid_t clock_id = CLOCK_MONOTONIC;

int ms_set_clock(int thread_cpu)
{
	clock_id = thread_cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC;
	return 0;
}

uint64_t ms_now_ns(void)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void ms_sfence(void)
{
#ifdef MS_X86
	asm volatile("sfence" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

#ifdef MS_X86
/* clean_cache_range() (arch/x86/lib/usercopy_64.c): write back every line of [addr, addr + size). */
static void clean_cache_range(void *addr, size_t size)
{
	char *p = (char *)((uintptr_t)addr & ~(uintptr_t)(MS_LINE - 1));
	char *end = (char *)addr + size;

	for (; p < end; p += MS_LINE) {
		if (writeback_kind == WB_CLWB)
			asm volatile("clwb %0" : "+m"(*(volatile char *)p));
		else if (writeback_kind == WB_CLFLUSHOPT)
			asm volatile("clflushopt %0" : "+m"(*(volatile char *)p));
		else
			asm volatile("clflush %0" : "+m"(*(volatile char *)p));
	}
}
#endif

/*
 * __memcpy_flushcache() (arch/x86/lib/usercopy_64.c), out of line: a cached
 * memcpy() + write-back of the head up to 8-byte alignment, 32-byte blocks of
 * four MOVNTI, 8-byte MOVNTI, one 4-byte MOVNTI, and a cached tail + write-back.
 */
__attribute__((noinline)) void ms_memcpy_flushcache(void *dst, const void *src, size_t size)
{
#ifdef MS_X86
	uintptr_t dest = (uintptr_t)dst;
	uintptr_t source = (uintptr_t)src;

	if (dest & 7) {
		size_t len = 8 - (dest & 7);

		if (len > size)
			len = size;
		memcpy((void *)dest, (const void *)source, len);
		clean_cache_range((void *)dest, len);
		dest += len;
		source += len;
		size -= len;
		if (!size)
			return;
	}
	while (size >= 32) {
		ms_movnti_32((void *)dest, (const void *)source);
		dest += 32;
		source += 32;
		size -= 32;
	}
	while (size >= 8) {
		ms_movnti_8((void *)dest, (const void *)source);
		dest += 8;
		source += 8;
		size -= 8;
	}
	while (size >= 4) {
		ms_movnti_4((void *)dest, (const void *)source);
		dest += 4;
		source += 4;
		size -= 4;
	}
	if (size) {
		memcpy((void *)dest, (const void *)source, size);
		clean_cache_range((void *)dest, size);
	}
#else
	memcpy(dst, src, size); /* generic memcpy_nontemporal(): plain memcpy() */
#endif
}

/*
 * The host's streaming non-temporal write bandwidth with the same instruction
 * the analogs use: eight MOVNTI per 64-byte line over [dst, dst + bytes), then
 * SFENCE. `bytes` is a multiple of 64. Returns the elapsed ns.
 */
uint64_t ms_nt_stream_movnti(void *dst, size_t bytes)
{
	uint64_t t0 = ms_now_ns();
#ifdef MS_X86
	uint64_t v = 0x5a5a5a5a5a5a5a5aull;
	char *p = dst, *end = p + (bytes & ~(size_t)(MS_LINE - 1));

	for (; p < end; p += MS_LINE) {
		asm volatile("movntiq %1, 0(%0)\n\tmovntiq %1, 8(%0)\n\t"
			     "movntiq %1, 16(%0)\n\tmovntiq %1, 24(%0)\n\t"
			     "movntiq %1, 32(%0)\n\tmovntiq %1, 40(%0)\n\t"
			     "movntiq %1, 48(%0)\n\tmovntiq %1, 56(%0)"
			     : : "r"(p), "r"(v) : "memory");
	}
	ms_sfence();
#else
	memset(dst, 0x5a, bytes);
#endif
	return ms_now_ns() - t0;
}
