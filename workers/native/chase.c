/*
 * pfnmap analogs: anonymous mappings backed by 4 KiB pages (MADV_NOHUGEPAGE)
 * or 2 MiB transparent huge pages (MADV_HUGEPAGE, 2 MiB aligned), an lmbench
 * `lat_mem_rd -t` pointer chase over them, and a streaming copy.
 *
 * The chase follows lmbench's `lat_mem_rd -t` (src/lib_mem.c): base_initialize()
 * shuffles ALL the 4 KiB pages (getpagesize()) of the MAXLEN buffer, and
 * thrash_initialize() chains only the first range / 4 KiB pages of that
 * shuffle for a row of size `range`, so a row's pages are scattered over the
 * whole buffer. Here the buffer is the `length`-byte mapping and the row is
 * the `working_set`. Each page's lines (stride bytes apart) are taken in
 * bit-reversed order (words_initialize()); line (i + j) mod n of chosen page i
 * points to line (i + j + 1) mod n of the next chosen page, and the last page
 * to the first with j + 1. So every load goes to a different page, each lap of
 * k = working_set / 4 KiB loads visits every chosen page once, and the whole
 * cycle (k x n loads) visits every line of the chosen pages once. lmbench's
 * default stride is 64.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "memsweep.h"

#define PAGE 4096u

/* A private anonymous mapping of `bytes` (rounded up to 4 KiB) starting at a multiple of `align`
 * (a power of two >= 4 KiB); nothing is touched. NULL when mmap() fails. */
void *ms_map(size_t bytes, size_t align)
{
	size_t total;
	char *raw, *base, *end;

	if (align < PAGE)
		align = PAGE;
	bytes = (bytes + PAGE - 1) & ~(size_t)(PAGE - 1);
	total = bytes + align;
	raw = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	base = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
	end = base + bytes;
	if (base > raw)
		munmap(raw, (size_t)(base - raw));
	if (raw + total > end)
		munmap(end, (size_t)(raw + total - end));
	return base;
}

int ms_unmap(void *p, size_t bytes)
{
	bytes = (bytes + PAGE - 1) & ~(size_t)(PAGE - 1);
	return munmap(p, bytes) ? -errno : 0;
}

/* madvise(MADV_HUGEPAGE) when huge, else MADV_NOHUGEPAGE; 0 or -errno (EINVAL without THP). */
int ms_advise(void *p, size_t bytes, int huge)
{
#if defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
	return madvise(p, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) ? -errno : 0;
#else
	(void)p;
	(void)bytes;
	return huge ? -EINVAL : 0;
#endif
}

/* Touch (write) every 4 KiB page so the measurement sees no page faults. */
void ms_prefault(void *p, size_t bytes)
{
	volatile char *c = p;
	size_t off;

	for (off = 0; off < bytes; off += PAGE)
		c[off] = 0;
}

static uint64_t xorshift64star(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* A random order of the npages pages (byte offsets), as lmbench's permutation(): Fisher-Yates. */
static size_t *permutation(size_t npages, uint64_t *s)
{
	size_t *pages = malloc(npages * sizeof(*pages)), i;

	if (!pages)
		return NULL;
	for (i = 0; i < npages; i++)
		pages[i] = i * PAGE;
	for (i = npages - 1; i > 0; i--) {
		size_t k = xorshift64star(s) % (i + 1), t = pages[i];

		pages[i] = pages[k];
		pages[k] = t;
	}
	return pages;
}

/*
 * Build the thrash chain over working_set / 4 KiB pages of [base, base + length):
 * the first pages of a random order of all length / 4 KiB pages (length and
 * working_set multiples of 4 KiB, 0 < working_set <= length; working_set 0 is
 * length; stride a power of two from 8 to 4096). Only the chosen pages are
 * written. Returns the chain's start, or NULL.
 */
void *ms_chase_build(void *base, size_t length, size_t working_set, size_t stride, uint64_t seed)
{
	char *b = base;
	size_t npages, k, nwords, nbits, i, j;
	size_t *pages, *words;
	uint64_t s = seed ? seed : 0x9e3779b97f4a7c15ull;
	void *start;

	if (!working_set)
		working_set = length;
	npages = length / PAGE;
	k = working_set / PAGE;
	if (length % PAGE || working_set % PAGE || k == 0 || working_set > length || stride < sizeof(void *) ||
	    stride > PAGE || (stride & (stride - 1)))
		return NULL;
	nwords = PAGE / stride;
	pages = permutation(npages, &s); /* base_initialize(): every page of the buffer */
	words = malloc(nwords * sizeof(*words));
	if (!pages || !words) {
		free(pages);
		free(words);
		return NULL;
	}
	for (nbits = 0; (1u << nbits) < nwords; nbits++)
		;
	for (i = 0; i < nwords; i++) { /* words_initialize(): bit-reversed line order */
		size_t r = 0;

		for (j = 0; j < nbits; j++)
			if (i & (1u << j))
				r |= 1u << (nbits - j - 1);
		words[i] = r * stride;
	}
	for (i = 0; i < k; i++) { /* thrash_initialize(): the first k pages of the order */
		int last = i + 1 == k;

		for (j = 0; j < nwords; j++) {
			size_t cur = pages[i] + words[(i + j) % nwords];
			size_t next = last ? pages[0] + words[(j + 1) % nwords]
					   : pages[i + 1] + words[(i + j + 1) % nwords];

			*(void **)(b + cur) = b + next;
		}
	}
	start = b + pages[0] + words[0];
	free(pages);
	free(words);
	return start;
}

#define ONE p = (void **)*p;
#define FOUR ONE ONE ONE ONE
#define SIXTEEN FOUR FOUR FOUR FOUR

/* Follow the chain for `loads` dependent loads; *end gets the last pointer. Returns the elapsed ns. */
uint64_t ms_chase(void *start, uint64_t loads, void **end)
{
	void **p = start;
	uint64_t t0 = ms_now_ns(), i, dt;

	for (i = loads / 16; i; i--) {
		SIXTEEN
	}
	for (i = loads % 16; i; i--) {
		ONE
	}
	dt = ms_now_ns() - t0;
	*end = p;
	return dt;
}

/* The chase, recording the byte offset from base of every address loaded (for the tests). */
void ms_chase_trace(void *base, void *start, uint64_t loads, uint64_t *offsets)
{
	void **p = start;
	uint64_t i;

	for (i = 0; i < loads; i++) {
		offsets[i] = (uint64_t)((char *)p - (char *)base);
		p = (void **)*p;
	}
}

/* One streaming copy of `bytes` with the C library's memcpy(). Returns the elapsed ns. */
uint64_t ms_stream_copy(void *dst, const void *src, size_t bytes)
{
	uint64_t t0 = ms_now_ns();

	memcpy(dst, src, bytes);
	asm volatile("" : : "r"(dst) : "memory");
	return ms_now_ns() - t0;
}
