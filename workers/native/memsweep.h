/*
 * memsweep native routines: user-space analogs of the kernel paths the models price.
 *
 * Shared by the translation units: the clock, the out-of-line non-temporal
 * copy (an analog of __memcpy_flushcache(), arch/x86/lib/usercopy_64.c) and
 * the inline fixed-size MOVNTI copy of [PATCH v10 8/8] "x86/string: extend
 * memcpy_flushcache() fixed-size fastpaths" (arch/x86/include/asm/string_64.h).
 * On architectures without MOVNTI every non-temporal copy is memcpy(), as the
 * generic memcpy_nontemporal() of [PATCH v10 6/8] is.
 */
#ifndef MEMSWEEP_H
#define MEMSWEEP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MS_LINE 64
/* x86_64 code paths (MOVNTI, CLWB, SFENCE); -DMS_GENERIC builds what other architectures get */
#if defined(__x86_64__) && !defined(MS_GENERIC)
#define MS_X86 1
#endif
#define MS_ALWAYS_INLINE static inline __attribute__((always_inline))

/* ntcopy.c */
uint64_t ms_now_ns(void);
int ms_set_clock(int thread_cpu);
void ms_sfence(void);
/* hidden: the analogs call it directly (as the kernel calls __memcpy_flushcache()), not through the PLT */
__attribute__((visibility("hidden"))) void ms_memcpy_flushcache(void *dst, const void *src, size_t n);

/* chase.c: pfnmap analogs (anonymous mappings, lmbench lat_mem_rd -t chase, streaming copy) */
void *ms_map(size_t bytes, size_t align);
int ms_unmap(void *p, size_t bytes);
int ms_advise(void *p, size_t bytes, int huge);
void ms_prefault(void *p, size_t bytes);
/* the chain over working_set / 4 KiB pages picked at random from the length-byte mapping (0: all of it) */
void *ms_chase_build(void *base, size_t length, size_t working_set, size_t stride, uint64_t seed);
uint64_t ms_chase(void *start, uint64_t loads, void **end);
void ms_chase_trace(void *base, void *start, uint64_t loads, uint64_t *offsets);
uint64_t ms_stream_copy(void *dst, const void *src, size_t bytes);

#ifdef MS_X86
/* movnti_4() / movnti_8() of patch 8/8: one non-temporal store each, with a memory clobber. */
MS_ALWAYS_INLINE void ms_movnti_4(void *dst, const void *src)
{
	asm volatile("movntil %1, %0" : "=m"(*(uint32_t *)dst) : "r"(*(const uint32_t *)src) : "memory");
}

MS_ALWAYS_INLINE void ms_movnti_8(void *dst, const void *src)
{
	asm volatile("movntiq %1, %0" : "=m"(*(uint64_t *)dst) : "r"(*(const uint64_t *)src) : "memory");
}

MS_ALWAYS_INLINE void ms_movnti_16(void *dst, const void *src)
{
	ms_movnti_8(dst, src);
	ms_movnti_8((char *)dst + 8, (const char *)src + 8);
}

MS_ALWAYS_INLINE void ms_movnti_32(void *dst, const void *src)
{
	ms_movnti_16(dst, src);
	ms_movnti_16((char *)dst + 16, (const char *)src + 16);
}

MS_ALWAYS_INLINE void ms_movnti_64(void *dst, const void *src)
{
	ms_movnti_32(dst, src);
	ms_movnti_32((char *)dst + 32, (const char *)src + 32);
}
#endif

/*
 * memcpy_flushcache() of patch 8/8 for a compile-time constant size: 4, 8, 16,
 * 32, 48, 64, 80 and 96 bytes are inline MOVNTI sequences; any other size (72,
 * 88, ...) takes the out-of-line call. Callers pass a constant `n`.
 */
MS_ALWAYS_INLINE void ms_memcpy_nt_inline(void *dst, const void *src, size_t n)
{
#ifdef MS_X86
	char *d = dst;
	const char *s = src;

	switch (n) {
	case 4: ms_movnti_4(d, s); return;
	case 8: ms_movnti_8(d, s); return;
	case 16: ms_movnti_16(d, s); return;
	case 32: ms_movnti_32(d, s); return;
	case 48: ms_movnti_32(d, s); ms_movnti_16(d + 32, s + 32); return;
	case 64: ms_movnti_64(d, s); return;
	case 80: ms_movnti_64(d, s); ms_movnti_16(d + 64, s + 64); return;
	case 96: ms_movnti_64(d, s); ms_movnti_32(d + 64, s + 64); return;
	}
#endif
	ms_memcpy_flushcache(dst, src, n);
}

#endif /* MEMSWEEP_H */
