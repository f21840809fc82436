/*
 * memsweep-build: kernel-flags (built without SSE/MMX/AVX, as the kernel is: see build.py)
 * The copy primitive of the copy model: one S-byte copy of a source (the
 * template) repeated over a contiguous destination, copy i at dst + i * S.
 * S is a compile-time constant (8..128, multiples of 8), as sizeof(struct page)
 * is at the kernel's call site. Strategies:
 *   0 memcpy     the compiler's constant-size memcpy() (kernel flags: no SSE)
 *   1 nt_call    the out-of-line __memcpy_flushcache() analog
 *   2 nt_inline  memcpy_flushcache() of patch 8/8: inline MOVNTI for 4..96, else the call
 * The mainline inline set (4/8/16) is nt_inline for 8 and 16 and nt_call otherwise:
 * the caller picks. NT strategies end with SFENCE. Returns the elapsed ns.
 */
#include "memsweep.h"

MS_ALWAYS_INLINE void copy_loop(char *dst, const char *src, uint64_t n, const int strategy, const size_t S)
{
	uint64_t i;

	for (i = 0; i < n; i++, dst += S) {
		if (strategy == 0)
			memcpy(dst, src, S);
		else if (strategy == 1)
			ms_memcpy_flushcache(dst, src, S);
		else
			ms_memcpy_nt_inline(dst, src, S);
	}
	if (strategy != 0)
		ms_sfence();
}

#define COPY_FN(S)                                                                    \
	static uint64_t copy_##S(char *dst, const char *src, uint64_t n, int strategy) \
	{                                                                             \
		uint64_t t0 = ms_now_ns();                                            \
		if (strategy == 0)                                                    \
			copy_loop(dst, src, n, 0, S);                                 \
		else if (strategy == 1)                                               \
			copy_loop(dst, src, n, 1, S);                                 \
		else                                                                  \
			copy_loop(dst, src, n, 2, S);                                 \
		return ms_now_ns() - t0;                                              \
	}

COPY_FN(8)
COPY_FN(16)
COPY_FN(24)
COPY_FN(32)
COPY_FN(40)
COPY_FN(48)
COPY_FN(56)
COPY_FN(64)
COPY_FN(72)
COPY_FN(80)
COPY_FN(88)
COPY_FN(96)
COPY_FN(104)
COPY_FN(112)
COPY_FN(120)
COPY_FN(128)

/* n copies of the `size`-byte src at dst, dst + size, ...; UINT64_MAX for a size or strategy not built. */
uint64_t ms_copy_run(int size, int strategy, void *dst, const void *src, uint64_t n)
{
	if (strategy < 0 || strategy > 2)
		return UINT64_MAX;
	switch (size) {
	case 8: return copy_8(dst, src, n, strategy);
	case 16: return copy_16(dst, src, n, strategy);
	case 24: return copy_24(dst, src, n, strategy);
	case 32: return copy_32(dst, src, n, strategy);
	case 40: return copy_40(dst, src, n, strategy);
	case 48: return copy_48(dst, src, n, strategy);
	case 56: return copy_56(dst, src, n, strategy);
	case 64: return copy_64(dst, src, n, strategy);
	case 72: return copy_72(dst, src, n, strategy);
	case 80: return copy_80(dst, src, n, strategy);
	case 88: return copy_88(dst, src, n, strategy);
	case 96: return copy_96(dst, src, n, strategy);
	case 104: return copy_104(dst, src, n, strategy);
	case 112: return copy_112(dst, src, n, strategy);
	case 120: return copy_120(dst, src, n, strategy);
	case 128: return copy_128(dst, src, n, strategy);
	}
	return UINT64_MAX;
}
