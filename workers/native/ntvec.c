/*
 * A second reference for the host's non-temporal write bandwidth: 16-byte
 * MOVNTDQ stores (SSE2, the x86_64 baseline), four per 64-byte line, then
 * SFENCE. Built with the compiler's default flags (SSE allowed), unlike the
 * kernel analogs. Elsewhere memset(). Returns the elapsed ns.
 */
#include "memsweep.h"

#ifdef MS_X86
#include <emmintrin.h>
#endif

uint64_t ms_nt_stream_sse(void *dst, size_t bytes)
{
	uint64_t t0 = ms_now_ns();
#ifdef MS_X86
	__m128i v = _mm_set1_epi8(0x5a);
	char *p = dst, *end = p + (bytes & ~(size_t)(MS_LINE - 1));

	for (; p < end; p += MS_LINE) {
		_mm_stream_si128((__m128i *)p, v);
		_mm_stream_si128((__m128i *)(p + 16), v);
		_mm_stream_si128((__m128i *)(p + 32), v);
		_mm_stream_si128((__m128i *)(p + 48), v);
	}
	_mm_sfence();
#else
	memset(dst, 0x5a, bytes);
#endif
	return ms_now_ns() - t0;
}
