/*
 * memsweep-build: kernel-flags (built without SSE/MMX/AVX, as the kernel is: see build.py)
 * memmap-init analog: memmap_init_zone_device() (mm/mm_init.c) over an array
 * of struct pages of P bytes (P a compile-time constant: 64, 72, 80, 88, 96),
 * with the four strategies of the ZONE_DEVICE template series (v10):
 *   0 slow               zone_device_page_init_slow() for every page (patch 1/8)
 *   1 template           refresh the PFN field of a template, memcpy() it (patches 4-5)
 *   2 template_nt        ... copied by the out-of-line __memcpy_flushcache() (patch 7)
 *   3 template_nt_inline ... by the inline MOVNTI memcpy_flushcache() (patch 8)
 * All four leave identical bytes. Each store the kernel's C names is one store
 * here (volatile), as the memmap model counts them.
 *
 * The struct page is an analog of include/linux/mm_types.h on x86_64 (offsets
 * below); the PFN-dependent field is the section number in page->flags, which
 * set_page_links() writes and set_page_section_from_pfn() refreshes in the
 * template (SECTION_IN_PAGE_FLAGS configurations). Addresses a struct page
 * holds (compound_head, list heads) are those of a notional vmemmap, so two
 * buffers initialized for the same pfns hold the same bytes.
 */
#include "memsweep.h"

/* struct page byte offsets */
#define PG_FLAGS 0
#define PG_LRU_NEXT 8 /* lru.next, pgmap (ZONE_DEVICE), compound_head (tails) */
#define PG_LRU_PREV 16 /* lru.prev, zone_device_data */
#define PG_MAPPING 24
#define PG_PRIVATE 40
#define PG_MAPCOUNT 48
#define PG_REFCOUNT 52
#define PG_LAST_CPUPID 64 /* LAST_CPUPID_NOT_IN_PAGE_FLAGS: a field of its own when P > 64 */
/* struct folio fields in page[1] and page[2] */
#define F1_LARGE_MAPCOUNT 16
#define F1_NR_PAGES_MAPPED 20
#define F1_ENTIRE_MAPCOUNT 24
#define F1_PINCOUNT 28
#define F1_MM_ID_MAPCOUNT 32
#define F1_MM_IDS 40
#define F1_NR_PAGES 48
#define F2_DEFERRED_LIST 16

/* page->flags layout (include/linux/page-flags-layout.h, analog widths) */
#define PG_HEAD_BIT 6
#define PG_RESERVED_BIT 10
#define LAST_CPUPID_SHIFT 24
#define LAST_CPUPID_MASK 0xffull
#define SECTIONS_SHIFT 32
#define SECTIONS_MASK 0x7ffffull
#define NODES_SHIFT 51
#define NODES_MASK 0x3ffull
#define ZONES_SHIFT 61
#define ZONES_MASK 0x7ull
#define ZONE_DEVICE_IDX 4ull
#define PFN_SECTION_SHIFT 15 /* 128 MiB sections, 4 KiB pages */
#define PAGES_PER_SECTION (1ull << PFN_SECTION_SHIFT)

#define VMEMMAP_START 0xffffea0000000000ull
#define TAIL_MAPPING (0xdead000000000000ull + 0x400) /* include/linux/poison.h */
#define PGMAP_COOKIE 0xffff888000100000ull /* a notional struct dev_pagemap * */

enum { SLOW = 0, TEMPLATE = 1, TEMPLATE_NT = 2, TEMPLATE_NT_INLINE = 3 };

#define W64(pg, off, v) (*(volatile uint64_t *)((pg) + (off)) = (uint64_t)(v))
#define W32(pg, off, v) (*(volatile uint32_t *)((pg) + (off)) = (uint32_t)(v))
#define R64(pg, off) (*(volatile uint64_t *)((pg) + (off)))
#define RMW64(pg, off, clear, set) W64(pg, off, (R64(pg, off) & ~(uint64_t)(clear)) | (uint64_t)(set))

/* cond_resched(): an out-of-line call that returns at once (nothing else is runnable here). */
__attribute__((noinline)) static void cond_resched_analog(void)
{
	asm volatile("" ::: "memory");
}

MS_ALWAYS_INLINE uint64_t vmemmap_addr(uint64_t pfn, size_t P)
{
	return VMEMMAP_START + pfn * P;
}

/* set_page_section() / set_page_section_from_pfn(): the PFN-dependent flags field */
MS_ALWAYS_INLINE void set_page_section(char *pg, uint64_t pfn)
{
	RMW64(pg, PG_FLAGS, SECTIONS_MASK << SECTIONS_SHIFT, ((pfn >> PFN_SECTION_SHIFT) & SECTIONS_MASK) << SECTIONS_SHIFT);
}

/* __init_single_page() (mm/mm_init.c) */
MS_ALWAYS_INLINE void init_single_page(char *pg, uint64_t pfn, size_t P)
{
	size_t i;

#pragma GCC unroll 16
	for (i = 0; i < P / 8; i++) /* mm_zero_struct_page(): one store per word */
		W64(pg, 8 * i, 0);
	RMW64(pg, PG_FLAGS, ZONES_MASK << ZONES_SHIFT, ZONE_DEVICE_IDX << ZONES_SHIFT); /* set_page_links(): zone */
	RMW64(pg, PG_FLAGS, NODES_MASK << NODES_SHIFT, 0); /* ... node 0 */
	set_page_section(pg, pfn); /* ... section */
	W32(pg, PG_REFCOUNT, 1); /* init_page_count() */
	W32(pg, PG_MAPCOUNT, -1); /* page_mapcount_reset() */
	if (P > 64) /* page_cpupid_reset_last() */
		W32(pg, PG_LAST_CPUPID, LAST_CPUPID_MASK);
	else
		RMW64(pg, PG_FLAGS, 0, LAST_CPUPID_MASK << LAST_CPUPID_SHIFT);
	W64(pg, PG_LRU_NEXT, vmemmap_addr(pfn, P) + PG_LRU_NEXT); /* INIT_LIST_HEAD(&page->lru) */
	W64(pg, PG_LRU_PREV, vmemmap_addr(pfn, P) + PG_LRU_NEXT);
}

/* zone_device_page_init_slow(): __zone_device_page_init() + the refcount policy (patch 1/8) */
MS_ALWAYS_INLINE void init_slow(char *pg, uint64_t pfn, int refcount_reset, size_t P)
{
	init_single_page(pg, pfn, P);
	RMW64(pg, PG_FLAGS, 0, 1ull << PG_RESERVED_BIT); /* __SetPageReserved() */
	W64(pg, PG_LRU_NEXT, PGMAP_COOKIE); /* page_folio(page)->pgmap = pgmap */
	W64(pg, PG_LRU_PREV, 0); /* page->zone_device_data = NULL */
	if (refcount_reset) /* pagemap_requires_refcount_reset(): FS_DAX and others, not GENERIC */
		W32(pg, PG_REFCOUNT, 0);
}

/* zone_device_tail_page_init() (patch 5/8): slow init + prep_compound_tail() + set_page_count(0) */
MS_ALWAYS_INLINE void init_tail(char *pg, uint64_t pfn, uint64_t head_pfn, int refcount_reset, size_t P)
{
	init_slow(pg, pfn, refcount_reset, P);
	W64(pg, PG_MAPPING, TAIL_MAPPING);
	W64(pg, PG_LRU_NEXT, vmemmap_addr(head_pfn, P) | 1); /* set_compound_head() */
	W64(pg, PG_PRIVATE, 0);
	W32(pg, PG_REFCOUNT, 0);
}

/* prep_compound_head() (mm/internal.h): the folio fields in page[1] (and page[2] when order > 1) */
MS_ALWAYS_INLINE void prep_compound_head(char *head, uint64_t head_pfn, unsigned int order, size_t P)
{
	char *f1 = head + P, *f2 = head + 2 * P;

	RMW64(f1, PG_FLAGS, 0xffull, order); /* folio_set_order(): _flags_1 */
	W32(f1, F1_NR_PAGES, 1u << order); /* ... _nr_pages */
	W32(f1, F1_LARGE_MAPCOUNT, -1);
	W32(f1, F1_NR_PAGES_MAPPED, 0);
	W64(f1, F1_MM_IDS, 0);
	W64(f1, F1_MM_ID_MAPCOUNT, ~0ull); /* _mm_id_mapcount[0..1] = -1 */
	W32(f1, F1_PINCOUNT, 0);
	W32(f1, F1_ENTIRE_MAPCOUNT, -1);
	if (order > 1) { /* INIT_LIST_HEAD(&folio->_deferred_list) */
		W64(f2, F2_DEFERRED_LIST, vmemmap_addr(head_pfn + 2, P) + F2_DEFERRED_LIST);
		W64(f2, F2_DEFERRED_LIST + 8, vmemmap_addr(head_pfn + 2, P) + F2_DEFERRED_LIST);
	}
}

/* zone_device_page_init_from_template(): refresh the PFN field, copy the template */
MS_ALWAYS_INLINE void init_from_template(char *pg, uint64_t pfn, char *tmpl, const int strategy, size_t P)
{
	set_page_section(tmpl, pfn);
	if (strategy == TEMPLATE)
		memcpy(pg, tmpl, P);
	else if (strategy == TEMPLATE_NT)
		ms_memcpy_flushcache(pg, tmpl, P); /* memcpy_nontemporal() without patch 8: out of line */
	else
		ms_memcpy_nt_inline(pg, tmpl, P);
}

/* One head of memmap_init_zone_device()'s loop: slow init (and seed the template when `first`) or a
 * template copy; then cond_resched() once per section. */
MS_ALWAYS_INLINE void init_head(char *page, uint64_t pfn, int reset, char *tmpl, int first, const int strategy,
				const size_t P)
{
	if (strategy == SLOW) {
		init_slow(page, pfn, reset, P);
	} else if (first) { /* seed the head template from the first real struct page */
		init_slow(page, pfn, reset, P);
		memcpy(tmpl, page, P);
	} else {
		init_from_template(page, pfn, tmpl, strategy, P);
	}
	if ((pfn & (PAGES_PER_SECTION - 1)) == 0)
		cond_resched_analog();
}

/*
 * memmap_init_zone_device() + memmap_init_compound(): `heads` heads of 2^order
 * pfns from start_pfn; per_compound struct pages written per head (2^order,
 * or compound_nr_pages() when tails alias), packed at buf + h * per_compound * P.
 * Every `seg` heads (0: never) the elapsed ns since t0 goes to *marks++, so a
 * caller can tell a disturbed stretch of a long run from the rest.
 */
MS_ALWAYS_INLINE void memmap_run(char *buf, uint64_t heads, uint64_t per_compound, unsigned int order,
				 uint64_t start_pfn, int reset, const int strategy, const size_t P, uint64_t seg,
				 uint64_t *marks, uint64_t t0)
{
	char head_tmpl[P] __attribute__((aligned(16)));
	char tail_tmpl[P] __attribute__((aligned(16)));
	uint64_t nr = 1ull << order, h, i, left = seg ? seg + 1 : UINT64_MAX;

	if (nr == 1) { /* fsdax: the head loop alone (pfns_per_compound == 1) */
		for (h = 0; h < heads; h++) {
			if (--left == 0) {
				*marks++ = ms_now_ns() - t0;
				left = seg;
			}
			init_head(buf + h * P, start_pfn + h, reset, head_tmpl, h == 0, strategy, P);
		}
		goto out;
	}
	for (h = 0; h < heads; h++) {
		uint64_t pfn = start_pfn + h * nr;
		char *page = buf + h * per_compound * P;

		if (--left == 0) {
			*marks++ = ms_now_ns() - t0;
			left = seg;
		}
		init_head(page, pfn, reset, head_tmpl, h == 0, strategy, P);
		RMW64(page, PG_FLAGS, 0, 1ull << PG_HEAD_BIT); /* __SetPageHead() */
		for (i = 1; i < per_compound; i++) {
			char *tail = page + i * P;

			if (strategy == SLOW) {
				init_tail(tail, pfn + i, pfn, reset, P);
			} else if (i == 1) { /* the first tail seeds the tail template */
				init_tail(tail, pfn + i, pfn, reset, P);
				memcpy(tail_tmpl, tail, P);
			} else {
				init_from_template(tail, pfn + i, tail_tmpl, strategy, P);
			}
		}
		prep_compound_head(page, pfn, order, P);
	}
out:
	if (strategy == TEMPLATE_NT || strategy == TEMPLATE_NT_INLINE)
		ms_sfence();
}

#define MEMMAP_FN(P)                                                                                      \
	static uint64_t memmap_##P(char *buf, uint64_t heads, uint64_t per, unsigned int order,           \
				   uint64_t pfn, int reset, int strategy, uint64_t seg, uint64_t *marks)  \
	{                                                                                                 \
		uint64_t t0 = ms_now_ns();                                                                \
		switch (strategy) {                                                                       \
		case SLOW: memmap_run(buf, heads, per, order, pfn, reset, SLOW, P, seg, marks, t0); break; \
		case TEMPLATE:                                                                            \
			memmap_run(buf, heads, per, order, pfn, reset, TEMPLATE, P, seg, marks, t0);      \
			break;                                                                            \
		case TEMPLATE_NT:                                                                         \
			memmap_run(buf, heads, per, order, pfn, reset, TEMPLATE_NT, P, seg, marks, t0);   \
			break;                                                                            \
		default:                                                                                  \
			memmap_run(buf, heads, per, order, pfn, reset, TEMPLATE_NT_INLINE, P, seg, marks, t0); \
			break;                                                                            \
		}                                                                                         \
		return ms_now_ns() - t0;                                                                  \
	}

MEMMAP_FN(64)
MEMMAP_FN(72)
MEMMAP_FN(80)
MEMMAP_FN(88)
MEMMAP_FN(96)

int ms_memmap_supported(int psize)
{
	return psize == 64 || psize == 72 || psize == 80 || psize == 88 || psize == 96;
}

/*
 * Initialize heads x per_compound struct pages of `psize` bytes at buf with
 * `strategy` (0..3); refcount_reset: 1 for fsdax (MEMORY_DEVICE_FS_DAX), 0 for
 * devdax (GENERIC). With seg > 0, marks[j] (j < (heads - 1) / seg) receives the
 * elapsed ns when head (j + 1) x seg starts. Returns the elapsed ns, or
 * UINT64_MAX for bad arguments.
 */
uint64_t ms_memmap_init(int psize, int strategy, void *buf, uint64_t heads, uint64_t per_compound,
			unsigned int order, uint64_t start_pfn, int refcount_reset, uint64_t seg, uint64_t *marks)
{
	uint64_t nr = 1ull << (order > 30 ? 0 : order);

	if (strategy < SLOW || strategy > TEMPLATE_NT_INLINE || order > 30 || per_compound < 1 ||
	    per_compound > nr || (order == 1 && per_compound < 2) || (order > 1 && per_compound < 3) ||
	    (seg && !marks))
		return UINT64_MAX;
	switch (psize) {
	case 64: return memmap_64(buf, heads, per_compound, order, start_pfn, refcount_reset, strategy, seg, marks);
	case 72: return memmap_72(buf, heads, per_compound, order, start_pfn, refcount_reset, strategy, seg, marks);
	case 80: return memmap_80(buf, heads, per_compound, order, start_pfn, refcount_reset, strategy, seg, marks);
	case 88: return memmap_88(buf, heads, per_compound, order, start_pfn, refcount_reset, strategy, seg, marks);
	case 96: return memmap_96(buf, heads, per_compound, order, start_pfn, refcount_reset, strategy, seg, marks);
	}
	return UINT64_MAX;
}
