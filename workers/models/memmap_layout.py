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
"""

from __future__ import annotations

import numpy as np

from ..units import KiB, MiB

PAGE = 4 * KiB
INFO_BLOCK = 8 * KiB  # nd_info_block_reserve(): ALIGN(SZ_8K, PAGE_SIZE)
RESERVE_PFNS = INFO_BLOCK // PAGE  # altmap->reserve with a 2 MiB aligned base (init_altmap_reserve)
COMPAT_ALIGN = 2 * MiB  # memremap_compat_align() = SUBSECTION_SIZE on x86_64
MAX_STRUCT_PAGE_SIZE = 64  # include/linux/mm_types.h; the map=dev reservation per pfn
VMEMMAP_RESERVE_NR = 2  # include/linux/mm.h
PAGES_PER_SECTION = 32768  # 128 MiB sections on x86_64 (SECTION_SIZE_BITS 27)


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
