"""Namespace layout and struct-page counts of a pmem/dax namespace bind (x86_64, 4 KiB pages).

Pure integer arithmetic on numpy arrays, one element per point, following:
- drivers/nvdimm/pfn_devs.c `nd_pfn_init()`: align' = max(align,
  memremap_compat_align() = 2 MiB); end_trunc = start + size -
  ALIGN_DOWN(start + size, align'); map=dev: offset = ALIGN(start + 8 KiB +
  page_map_size, align') - start with page_map_size = MAX_STRUCT_PAGE_SIZE (64)
  x npfns, or sizeof(struct page) x npfns with page_struct_override
  (CONFIG_NVDIMM_KMSAN); map=mem: offset = ALIGN(start + 8 KiB, align') - start.
  `__nvdimm_setup_pfn()`: the pgmap range is [start, start + size - end_trunc);
  with map=dev the altmap reserves nd_info_block_reserve() (8 KiB = 2 pfns).
- mm/mm_init.c `memmap_init_range()`: with an altmap (map=dev) it initializes
  the struct pages of the memmap area, pfns [base + reserve, base + offset/4K).
- mm/mm_init.c `memmap_init_zone_device()`: walks from the data start (map=dev,
  altmap) or the range start (map=mem) in steps of pgmap_vmemmap_nr() = 2^k;
  `memmap_init_compound()` writes compound_nr_pages() - 1 tails per head.
- `compound_nr_pages()` / include/linux/mm.h `__vmemmap_can_optimize()`: only
  without an altmap (map=mem), sizeof(struct page) a power of two and
  2^k x P / 4096 > VMEMMAP_RESERVE_NR (2): then 2 x 4096 / P struct pages per
  compound are written; the other tails alias the shared vmemmap page.
- `cond_resched()` when IS_ALIGNED(pfn, PAGES_PER_SECTION) in the head loop
  (the seed series' tree).

What the vmemmap costs in memory (`vmemmap()`), following how memremap_pages()
-> arch_add_memory() -> __add_pages() populates it one section at a time
(mm/sparse.c `sparse_add_section()` -> `section_activate()` ->
`populate_section_memmap()` -> mm/sparse-vmemmap.c `__populate_section_memmap()`):
- vmemmap_can_optimize() (map=mem, P a power of two, big enough compounds):
  `vmemmap_populate_compound_pages()` maps the whole span with 4 KiB PTEs; per
  compound a head and a tail vmemmap page are allocated, every other PTE reuses
  the tail page (and a 1 GiB compound's later sections reuse the previous
  section's, `reuse_compound_section()`).
- otherwise arch/x86/mm/init_64.c `vmemmap_populate()`: a chunk smaller than a
  section's worth of struct pages (a partial section at either end of the
  range) goes to `vmemmap_populate_basepages(start, end, node, NULL)`: 4 KiB
  struct-page pages from DRAM even with map=dev (NULL altmap). Whole sections
  go to `vmemmap_populate_hugepages()`: one 2 MiB PMD leaf per PMD the span
  touches, its block from the altmap (map=dev, `altmap_alloc_block_buf()`) or
  DRAM (`vmemmap_alloc_block_buf()`); a PMD that a partial section already
  mapped with a PTE table is filled with 4 KiB pages from the same allocator
  (`vmemmap_populate_basepages(addr, next, node, altmap)`).
- every page-table page comes from DRAM on the node (`vmemmap_pmd_populate()` /
  `vmemmap_pud_populate()` -> `vmemmap_alloc_block_zero()`): a PTE table per
  2 MiB of vmemmap span mapped with PTEs, a PMD table per 1 GiB of span.
Assumptions: the namespace's physical base is a multiple of 1 GiB plus
`start_offset`, and the vmemmap of that 1 GiB-aligned base is itself 1 GiB
aligned (vmemmap_base is PUD aligned; bases at other multiples shift the
2 MiB / 1 GiB boundaries of P = 80 and 96 spans and can add one table); every
PTE/PMD table the span touches is counted as the namespace's own (a neighbour
may share the first or last one); PUD and upper tables (one PUD page per
512 GiB of vmemmap, i.e. 32 TiB of memory at P = 64) are taken as present; the
altmap always holds the leaves (nd_pfn_init() reserves 64, or P with
NVDIMM_KMSAN, bytes per pfn rounded up to max(align, 2 MiB), and
vmemmap_populate_hugepages() has no fallback when it runs out: -ENOMEM); a
partial tail section whose vmemmap begins inside the last PMD leaf of the
whole sections is taken as covered by that leaf.
"""

from __future__ import annotations

import numpy as np

from workers.units import KiB, MiB

PAGE = 4 * KiB
INFO_BLOCK = 8 * KiB  # nd_info_block_reserve(): ALIGN(SZ_8K, PAGE_SIZE)
RESERVE_PFNS = INFO_BLOCK // PAGE  # altmap->reserve with a 2 MiB aligned base (init_altmap_reserve)
COMPAT_ALIGN = 2 * MiB  # memremap_compat_align() = SUBSECTION_SIZE on x86_64
MAX_STRUCT_PAGE_SIZE = 64  # include/linux/mm_types.h; the map=dev reservation per pfn
VMEMMAP_RESERVE_NR = 2  # include/linux/mm.h
PAGES_PER_SECTION = 32768  # 128 MiB sections on x86_64 (SECTION_SIZE_BITS 27)
PMD_SPAN = 2 * MiB  # vmemmap mapped by one PMD leaf or one PTE table (512 x 4 KiB)
PUD_SPAN = 1 << 30  # vmemmap mapped by one PMD table (512 x 2 MiB)


def _align_up(x, a):
    return (x + a - 1) // a * a


def layout(size, align, start, map_dev, psize, kmsan) -> dict[str, np.ndarray]:
    """nd_pfn_init()'s layout: offset, end_trunc, pfns in range R, data pfns D, area pfns.

    `ok` is False where the kernel refuses ("unable to satisfy requested alignment").
    """
    a = np.maximum(align, COMPAT_ALIGN)
    npfns = np.maximum(size - INFO_BLOCK, 0) // PAGE
    end_trunc = (start + size) % a  # start + size - ALIGN_DOWN(start + size, align')
    per_pfn = np.where((psize > MAX_STRUCT_PAGE_SIZE) & kmsan, psize, MAX_STRUCT_PAGE_SIZE)
    meta = np.where(map_dev, per_pfn * npfns, 0)
    offset = _align_up(start + INFO_BLOCK + meta, a) - start
    ok = offset < size - end_trunc
    in_range = np.maximum(size - end_trunc, 0) // PAGE
    data = np.maximum(size - end_trunc - offset, 0) // PAGE
    area = np.where(map_dev & ok, offset // PAGE - RESERVE_PFNS, 0)
    return {"align_eff": a, "end_trunc": end_trunc, "offset": offset, "ok": ok,
            "pfns_in_range": in_range, "data_pfns": data, "area_pages": area}


def vmemmap_can_optimize(map_dev, order, psize):
    """__vmemmap_can_optimize(): no altmap, P a power of two, 2^k * P / 4096 > 2."""
    nr_vmemmap_pages = (np.left_shift(1, order) * psize) // PAGE
    return ~map_dev & ((psize & (psize - 1)) == 0) & (nr_vmemmap_pages > VMEMMAP_RESERVE_NR)


def walk(lay: dict, start, map_dev, order, psize) -> dict[str, np.ndarray]:
    """What memmap_init_zone_device() writes: heads, tails written/aliased, cond_resched calls.

    map=dev starts at the data (altmap: base + vmem_altmap_offset()); map=mem at
    the range start, so the metadata pfns are initialized as device pages too.
    """
    pfns = np.where(map_dev, lay["data_pfns"], lay["pfns_in_range"])
    first = np.where(map_dev, start + lay["offset"], start) // PAGE
    c = np.left_shift(1, order).astype(np.int64)
    heads = pfns // c
    opt = vmemmap_can_optimize(map_dev, order, psize)
    per_compound = np.where(opt, VMEMMAP_RESERVE_NR * PAGE // np.maximum(psize, 8), c)  # compound_nr_pages()
    end = first + heads * c
    aligned = (end - 1) // PAGES_PER_SECTION - (first + PAGES_PER_SECTION - 1) // PAGES_PER_SECTION + 1
    resched = np.where(c >= PAGES_PER_SECTION, heads, np.maximum(aligned, 0) * (heads > 0))
    return {
        "walked": pfns, "first_pfn": first, "heads": heads, "optimized": opt & (order > 0),
        "per_compound": per_compound, "tails_written": heads * (per_compound - 1),
        "tails_aliased": heads * (c - per_compound), "cond_resched": resched,
    }


def lines(heads, per_run, runs_per_head, psize) -> dict[str, np.ndarray]:
    """Cache lines of the struct pages written: contiguous runs starting line-aligned.

    One run of all pages when no tail is aliased, else one run per compound.
    A line is partial when a struct-page boundary falls inside it.
    """
    run = np.where(runs_per_head, per_run, heads * per_run)
    runs = np.where(runs_per_head, heads, (heads > 0).astype(np.int64))
    per_line = 64 // np.gcd(psize, 64)  # pages until a boundary is line-aligned again
    lines_per_run = (run * psize + 63) // 64
    partial_per_run = run - run // per_line
    return {"lines": runs * lines_per_run, "partial": runs * partial_per_run}


def _touched(lo, hi, g):
    """How many g-aligned blocks the byte range [lo, hi) touches (0 when empty)."""
    return np.where(hi > lo, (hi - 1) // g - lo // g + 1, 0)


def vmemmap(lay: dict, start, map_dev, optimized, heads, psize) -> dict[str, np.ndarray]:
    """Memory that populating the vmemmap of the pgmap range takes (see the module doc).

    Keys: counted_pages (what the kernel's nr_memmap_pages counter adds), struct_dram (bytes of
    struct-page memory from DRAM), struct_altmap (from the namespace), pte_tables, pmd_tables, pt_bytes (page tables, all DRAM),
    leaves (2 MiB PMD leaves), base_pages (4 KiB vmemmap pages outside leaves).
    """
    sec = PAGES_PER_SECTION
    p0 = start // PAGE
    p1 = p0 + np.where(lay["ok"], lay["pfns_in_range"], 0)
    s0 = -(-p0 // sec) * sec  # first section boundary at or after p0
    s1 = p1 // sec * sec  # last section boundary at or before p1
    full = s1 > s0  # at least one whole section: vmemmap_populate_hugepages()
    h_end = np.minimum(s0, p1)
    t0 = np.maximum(np.where(full, s1, s0), h_end)
    # vmemmap byte offsets (pfn x P from the 1 GiB-aligned origin): head partial section H,
    # whole sections F, tail partial section T
    hv0, hv1 = p0 * psize, h_end * psize
    fv0, fv1 = np.where(full, s0 * psize, 0), np.where(full, s1 * psize, 0)
    tv0, tv1 = t0 * psize, np.maximum(p1, t0) * psize
    n_h, n_f, n_t = _touched(hv0, hv1, PMD_SPAN), _touched(fv0, fv1, PMD_SPAN), _touched(tv0, tv1, PMD_SPAN)
    ceil_pmd = lambda v: -(-v // PMD_SPAN) * PMD_SPAN  # noqa: E731
    # H's PTE table already holds F's first PMD: F fills it with 4 KiB pages (from F's allocator)
    shared_hf = full & (hv1 > hv0) & (fv0 % PMD_SPAN != 0)
    shared_pages = np.where(shared_hf, (np.minimum(fv1, ceil_pmd(fv0)) - fv0) // PAGE, 0)
    leaves = n_f - shared_hf
    # T starts inside F's last leaf: that part is mapped already
    tail_leaf = full & (tv1 > tv0) & (tv0 % PMD_SPAN != 0)
    t_pages = (tv1 - tv0 - np.where(tail_leaf, np.minimum(tv1, ceil_pmd(tv0)) - tv0, 0)) // PAGE
    h_pages = (hv1 - hv0) // PAGE
    shared_ht = ~full & (hv1 > hv0) & (tv1 > tv0) & (tv0 % PMD_SPAN != 0)  # two partial sections, one PTE table
    pte_plain = n_h + n_t - tail_leaf - shared_ht
    pmd_tables = _touched(p0 * psize, p1 * psize, PUD_SPAN)
    # vmemmap_populate_compound_pages(): every PTE of the span, 2 vmemmap pages per compound
    pte_tables = np.where(optimized, _touched(p0 * psize, p1 * psize, PMD_SPAN), pte_plain)
    from_range = leaves * PMD_SPAN + shared_pages * PAGE  # the allocator of the whole sections
    partial = (h_pages + t_pages) * PAGE  # NULL altmap: always DRAM
    struct_dram = np.where(optimized, heads * VMEMMAP_RESERVE_NR * PAGE,
                           np.where(map_dev, partial, partial + from_range))
    # /proc/vmstat nr_memmap_pages: __add_pages() adds the range section by section and each chunk counts
    # section_nr_vmemmap_pages() (mm/sparse-vmemmap.c, 6.12.118): DIV_ROUND_UP(nr_pages * P, PAGE_SIZE)
    # unoptimized, whatever the PMD leaves that back it take (80-byte pages: 640 a section, not 2 MiB's
    # 512 rounded up to leaves); VMEMMAP_RESERVE_NR per compound optimized
    chunk_pages = lambda n: -(-n * psize // PAGE)  # noqa: E731
    sections = np.where(full, (s1 - s0) // sec, 0)
    counted = chunk_pages(h_end - p0) + sections * chunk_pages(sec) + chunk_pages(np.maximum(p1, t0) - t0)
    return {
        "counted_pages": np.where(optimized, heads * VMEMMAP_RESERVE_NR, counted),
        "struct_dram": struct_dram, "struct_altmap": np.where(map_dev & ~optimized, from_range, 0),
        "pte_tables": pte_tables, "pmd_tables": pmd_tables, "pt_bytes": (pte_tables + pmd_tables) * PAGE,
        "leaves": np.where(optimized, 0, leaves),
        "base_pages": np.where(optimized, heads * VMEMMAP_RESERVE_NR, h_pages + t_pages + shared_pages),
    }
