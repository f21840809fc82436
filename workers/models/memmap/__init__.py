"""memmap: struct page initialization when a pmem/dax namespace binds (memmap_init_zone_device()).

Layout and counts come from workers/models/memmap/layout.py (nd_pfn_init(),
memmap_init_zone_device(), vmemmap_can_optimize()). Each struct page is priced
by the work the kernel does for it, with costs shared across kinds, modes and
strategies:

- slow (zone_device_page_init_slow()): field stores, cached. A head stores
  P/8 zeroing words + 7 (__init_single_page) + 3 zone-device fields (+1
  refcount reset for FS_DAX); a compound tail adds prep_compound_tail()'s 3
  stores and set_page_count(0); each compound adds __SetPageHead() and
  prep_compound_head() (9 stores, +2 for _deferred_list when order > 1).
- template (patches 4-5): one slow head init seeds the head template and one
  slow tail init per compound seeds the tail template (plus a P-byte memcpy
  into the on-stack template each); every other page is a copy priced by the
  copy model (`copy.instructions`, strategy memcpy). The PFN refresh is free on
  x86_64: set_page_section_from_pfn() is a no-op with SPARSEMEM_VMEMMAP and
  there is no WANT_PAGE_VIRTUAL.
- template_nt (patch 7): the copy is memcpy_nontemporal() -> memcpy_flushcache()
  with the mainline inline sizes (4/8/16): an out-of-line __memcpy_flushcache().
- template_nt_inline (patch 8): the patched inline sizes (4..96).

Time (ms) = max(compute, memory + serialized misses x DRAM latency), + memmap.exposed_fraction of the
shorter side for a cached store stream (combined() says why), where compute is the kernel's
own work: the operation counts of work.py (the ones whose instructions equal a guest's under QEMU's
counter) times the cycles each operation's machine code takes on the profile's core (llvm-mca of the
series' build as the guest ran it: workers/models/incore.py, benchmarks/kernel_cycles.py), at the
profile's clock (copy.clock_ghz; in_core_ns()); and memory is the copy model's memory_ns() of the lines
stored (an LLC-sized memmap is priced at LLC bandwidth, not as a DRAM stream). Where compute binds the
strategies' ratios so follow the kernel's cycles, not a count of stores: template_nt executes 1.81x
slow's instructions and takes 1.69x its cycles. A serialized miss stalls the store stream,
not the instructions around it: out-of-order execution carries on under it,
so it adds to the memory side (the published devdax template_nt time is within
2% of fsdax's, while devdax template_nt_inline, memory-bound, is 23% slower).
The serialized misses are those of the non-temporal strategies at each
compound, to lines MOVNTI left in no cache: __SetPageHead() reads the head's
flags right after MOVNTI wrote that line, and prep_compound_head()'s
_deferred_list store (order > 1) lands in page[2]'s line, which MOVNTI wrote
and evicted; the first tail's slow init misses only on the lines of page[1]
beyond the head's 128-byte pair, which the L2 spatial prefetcher fetches with
the head (none at P = 64). Mechanism and sources at `serial_misses()`.
`metric_init_ms` is memmap_init_zone_device()'s time (what the seed's
pr_debug() reports); the map=dev memmap-area pages memmap_init_range() writes
earlier are counted (`metric_area_pages`) but not timed.

Medium (axis `medium`): what the namespace is. `dram` is what the seed
measured (its VM emulates pmem in DRAM), priced with the [copy] costs. `pmem`
is Optane-class persistent memory: with map=dev the struct pages live on the
namespace, so every store, write-back, read for ownership and serialized miss
of the init goes to the medium (`pmem_costs()`): a stream runs at the lesser of
what the core sustains and what the media take, per DIMM times the DIMMs the
namespace interleaves over (axis `pmem_dimms`); a cached line's write-back
writes a whole 256-byte XPLine (pmem_writeback_amplification); a serialized
miss costs Optane's latency. LLC-resident lines stay at LLC cost. With map=mem
the struct pages are in DRAM whatever the medium, so the medium changes only
whether the machine can have the namespace: a profile whose machine takes no
Optane (memmap.optane = false) makes every pmem point infeasible.

Memory (`metric_memmap_dram_bytes`): every DRAM byte the bind takes for the
memmap: struct pages in DRAM (map=mem; with map=dev only those of partial
sections, which vmemmap_populate() maps with base pages from DRAM) plus the
page tables that map the vmemmap (`metric_vmemmap_pt_bytes`); counts and
assumptions in layout.py (`vmemmap()`).

x86_64 only: sizeof(struct page) is a multiple of 16 (struct page is
__aligned(2 * sizeof(unsigned long)) with CONFIG_HAVE_ALIGNED_STRUCT_PAGE,
include/linux/mm_types.h, which x86 selects), so 64, 80 and 96 are the sizes
patch 8 names; other sizes are infeasible here (the copy model still takes any).
"""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np
import polars as pl

from workers.axes import ALIGN, COMPOUND_ORDER, NAMESPACE_SIZE, STRUCT_PAGE_SIZE, Axis, choice
from workers.hooks import Hook
from workers.model import (LAST_LEVEL, Assumption, Calibration, Comparison, Figure, FreeParam, KernelCheck, WorkCheck,
                           LastPoints, Measurement, Metric, Model, Reasons, Report)
from workers.models import copy as cp
from workers.models import incore
from workers.plots import POOL, Lines, Overlay, Panels, Series, X, Y
from workers.profiles import Profile, Quantity
from workers.units import GiB, KiB, MiB

from . import layout as ml
from . import work

STRATEGIES = ("slow", "template", "template_nt", "template_nt_inline")
SLOW, TEMPLATE, TEMPLATE_NT, TEMPLATE_NT_INLINE = range(4)
# the copy each template strategy makes: (copy-model strategy, patched inline sizes)
_COPY = {TEMPLATE: (cp.MEMCPY, False), TEMPLATE_NT: (cp.NT_INLINE, False), TEMPLATE_NT_INLINE: (cp.NT_INLINE, True)}

# Stores per struct page (mm/mm_init.c, include/linux/mm.h, mm/internal.h; x86_64, SPARSEMEM_VMEMMAP):
# __init_single_page(): mm_zero_struct_page() P/8, set_page_links() 2 flag RMWs (zone, node; the section
# is not in flags), init_page_count(), _mapcount = -1, page_cpupid_reset_last() (flags RMW),
# INIT_LIST_HEAD(&page->lru) 2
SINGLE_PAGE_FIXED = 7
ZONE_DEVICE_FIELDS = 3  # __zone_device_page_init(): __SetPageReserved(), folio->pgmap, zone_device_data
TAIL_EXTRA = 4  # prep_compound_tail(): mapping, compound_head, private; set_page_count(page, 0)
# __SetPageHead() + prep_compound_head(): folio_set_order() (_flags_1 RMW, _nr_pages), _large_mapcount,
# _nr_pages_mapped, _mm_ids, _mm_id_mapcount[0..1] (one quadword), _pincount, _entire_mapcount
COMPOUND_FIXED = 9
DEFERRED_LIST = 2  # INIT_LIST_HEAD(&folio->_deferred_list), order > 1; in page[2] (struct folio)
MAX_ZEROED = 96  # __mm_zero_struct_page(): BUILD_BUG_ON(sizeof(struct page) > 96)
STRUCT_PAGE_ALIGN = 16  # _struct_page_alignment: __aligned(2 * sizeof(unsigned long)), HAVE_ALIGNED_STRUCT_PAGE
SUPPORTED_ALIGNS = (4 * KiB, 2 * MiB, 1 * GiB)  # nd_pfn_supported_alignments(): PAGE, PMD, PUD sizes
SOURCE = ("Li Zhe, [PATCH v10 {n}/8] ZONE_DEVICE memmap init template fast path, linux-mm, Aug 2026 "
          "(seeds/zone-device-memmap-template-init.v10.txt): 100 GB namespace, map=dev, Ice Lake server VM, "
          "average of 30 rebinds")

MODE = choice("mode", ("fsdax", "devdax"), "fsdax",
              "fsdax: nd_pmem, MEMORY_DEVICE_FS_DAX, order-0 pages; devdax: dax_pmem, MEMORY_DEVICE_GENERIC, "
              "compound pages of the namespace align")
MAP = choice("map", ("dev", "mem"), "dev", "dev: the memmap lives on the namespace (altmap); mem: in DRAM")
MEDIUM = choice("medium", ("dram", "pmem"), "dram",
                "what backs the namespace: dram (pmem emulated in DRAM, as the seed's VM) or pmem (Optane-class: "
                "each stream at the lesser of the core's rate and the media's, memmap.pmem_*); with map=dev the "
                "struct pages are stored to it, with map=mem they stay in DRAM whatever the medium")
STRATEGY = choice("strategy", STRATEGIES, "template_nt_inline",
                  "slow: field-by-field init (mainline); template: memcpy of a template (patches 4-5); "
                  "template_nt: memcpy_nontemporal (patch 7); template_nt_inline: + inline MOVNTI (patch 8)")
START_OFFSET = Axis(
    name="start_offset", kind="int", unit="bytes", default=0,
    doc="physical start of the namespace modulo 1 GiB (the kernel requires a multiple of 2 MiB)",
    rule="a non-negative multiple of 4KiB", check=lambda v: v >= 0 and v % (4 * KiB) == 0,
)
PMEM_DIMMS = Axis(
    name="pmem_dimms", kind="int", unit="", default=6,
    doc="medium = pmem: the Optane DIMMs the namespace interleaves over (one socket of a Cascade Lake or Ice "
        "Lake server: 1 to 8; the study the costs come from interleaves 6)",
    rule="an integer from 1 to 16", check=lambda v: 1 <= v <= 16,
)
NVDIMM_KMSAN = Axis(
    name="nvdimm_kmsan", kind="bool", unit="", default=False,
    doc="CONFIG_NVDIMM_KMSAN: lets map=dev reserve sizeof(struct page) > 64 bytes per pfn",
)

INT, FLOAT, BOOL = pl.Int64, pl.Float64, pl.Boolean


def resolve_order(compound_order, devdax, align):
    """compound_order with "auto" (-1 here) resolved as the kernel does: fsdax 0, devdax log2(align/4 KiB)."""
    kernel = np.where(devdax, np.log2(np.maximum(align, ml.PAGE) // ml.PAGE).round().astype(np.int64), 0)
    return np.where(compound_order < 0, kernel, compound_order), kernel


def _copy_table() -> dict[str, np.ndarray]:
    """Per-copy counts of a struct-page copy (8-byte aligned) for [strategy code, P // 8]."""
    sizes = np.arange(0, MAX_ZEROED + 9, 8)
    rows = {k: np.zeros((4, sizes.size), dtype=np.int64) for k in ("stores", "calls", "nt_bytes", "loops")}
    for s, (copy_strategy, patched) in _COPY.items():
        ins = cp.instructions(sizes, 0, np.full(sizes.shape, copy_strategy), patched)
        rows["stores"][s] = ins["cached_stores"] + ins["movnti"]
        rows["calls"][s] = ins["calls"]
        rows["nt_bytes"][s] = ins["nt_bytes"]
        rows["loops"][s] = ins["loops"]
    return rows


_COPY_TABLE = _copy_table()


def pmem_costs(cost: cp.CopyCosts, profile: Profile, dimms) -> cp.CopyCosts:
    """`cost` with the memory terms of a struct-page array stored on pmem interleaved over `dimms` Optane DIMMs
    (a number or an array per point), each the lesser of the core's stream and the media's rate:

    - non-temporal stores: min(the core's NT stream, dram_write_gbs; per-DIMM NT write rate x dimms);
    - write-backs of cached lines: each one rewrites a 256-byte XPLine of the DIMM, so the media take
      pmem_writeback_amplification times the bytes: min(the core's stream; media rate / amplification);
    - reads for ownership: min(the core's RFO stream to Optane, the profile's DRAM rate over the one-thread
      DRAM / Optane read ratio (a latency-bound stream); per-DIMM read rate x dimms);
    - a serialized miss: the profile's DRAM latency times the Optane / DRAM latency ratio.
    Each entry names its study, table and row in the profile ([memmap])."""
    v = lambda k: float(profile.value("memmap", k))  # noqa: E731
    dimms = np.asarray(dimms, dtype=float)
    media_write = v("pmem_dimm_nt_write_gbs") * dimms
    return replace(cost, dram_write_gbs=np.minimum(cost.dram_write_gbs, media_write),
                   writeback_gbs=np.minimum(cost.dram_write_gbs, media_write / v("pmem_writeback_amplification")),
                   dram_rfo_gbs=np.minimum(cost.dram_rfo_gbs / v("pmem_read_ratio"), v("pmem_dimm_read_gbs") * dimms),
                   dram_latency_ns=cost.dram_latency_ns * v("pmem_latency_ratio"))


def no_optane(profile: Profile) -> str | None:
    """Why the profile's machine cannot have a pmem namespace (memmap.optane = false), or None."""
    entry = profile.sections.get("memmap", {}).get("optane")
    if entry is None or not isinstance(entry, Quantity) or entry.value:
        return None
    return (f"medium = pmem: profile {profile.name}'s machine takes no Optane-class persistent memory "
            f"(memmap.optane = false: {entry.note})")


def serial_misses(psize, deep):
    """Misses per compound that stall the store stream of the non-temporal strategies (memmap_init_compound()
    after the head's MOVNTI copy; `deep`: order > 1).

    A line MOVNTI wrote is in no cache afterwards: a non-temporal store neither writes its line into the cache
    hierarchy nor fetches it (Intel SDM Vol. 2B, MOVNTI), and to write-back memory it evicts a cached copy
    (Intel 64 and IA-32 Architectures Optimization Reference Manual, "Memory Type and Non-temporal Stores").
    So (1) __SetPageHead()'s read-modify-write of head->flags, right after the head's copy, loads from memory,
    and (2) with order > 1 prep_compound_head()'s INIT_LIST_HEAD(&folio->_deferred_list) stores to page[2]'s
    line, which the first tail-template copy wrote and evicted: a store miss. Each holds the store buffer,
    which drains in program order (SDM Vol. 3A, section 11.10 "Store Buffer"), so the stores behind it wait one
    memory latency while the instructions around them run on. (3) The first tail's slow init stores to page[1]:
    the line that completes the head's line to a 128-byte aligned pair comes with the head's miss (the L2
    spatial prefetcher, Optimization Reference Manual, "Data Prefetching"; a compound head is 128-byte aligned
    for devdax's orders 9 and 18), so only page[1]'s lines beyond that pair miss: none at P = 64, one at 80
    and 96.
    """
    beyond_pair = np.maximum(0, (2 * psize - 1) // cp.LINE - np.maximum(psize // cp.LINE, 2) + 1)
    return 1 + deep + beyond_pair


def combined(compute, memory, exposed):
    """The time of a store stream whose instructions take `compute` ns and whose traffic takes `memory` ns:
    the longer of the two, plus the `exposed` fraction of the shorter that does not run under it (a number
    or one per point). 0 is max(): out-of-order execution hides the shorter side entirely; 1 is their sum.

    timing() exposes memmap.exposed_fraction of a cached store stream and none of a non-temporal one. A
    cached store waits in the store buffer until its line's read for ownership completes, and the buffer
    drains in program order (Intel SDM Vol. 3A, 11.10 "Store Buffer"); once it is full the core stops
    allocating, so the instructions behind it wait too (the Optimization Reference Manual's "store buffer
    full" stall): part of the in-core time adds to the memory time. MOVNTI retires into a write-combining
    buffer with no read for ownership (SDM Vol. 2B, MOVNTI), so an NT stream's instructions run under its
    writes. Fit with the clock and the two DRAM streams to the eight figures: 0.77. It is what sets slow
    (48 instructions, 10.1 cycles a page) apart from template (40, 7.7) at 100 GiB, where both move the
    same bytes: fsdax 244.28 against 215.55 ms published. With 0 (max()) the fit's worst leave-one-out
    error is 17.7%, with the fraction fit 14.6%. A fit of the old store-count model to the analog's measured
    times gave 0.01 for all strategies at once (benchmarks/combination_rule.py): not yet redone for this
    split."""
    return np.maximum(compute, memory) + exposed * np.minimum(compute, memory)


def in_core_ns(strategy, n: dict, psize, cost: cp.CopyCosts, core: incore.Cycles):
    """memmap_init_zone_device()'s in-core time (ns): its operation counts `n` (work.counts()) times the
    cycles each takes in the build the core's cycles were traced from (workers/models/incore.py), at the
    profile's clock. The build has 64-byte struct pages: at another size a copy costs what the copy model
    counts for that size at the profile's cycles per store, call and loop iteration (cp.cycles()), and a
    slow init stores P/8 words to zero the page where the build stores 8. So an operation is the recorded
    cycles less the 64-byte copy (or zeroing) the recording priced, plus the point's own."""
    pick = np.clip(strategy - 1, 0, 2)
    idx = strategy * _COPY_TABLE["stores"].shape[1]
    at = {k: v.ravel()[idx + np.minimum(psize, MAX_ZEROED + 8) // 8] for k, v in _COPY_TABLE.items()}
    at64 = {k: v.ravel()[idx + work.BUILD_STRUCT_PAGE // 8] for k, v in _COPY_TABLE.items()}
    recorded64 = at64["stores"] * core.copy_store + at64["calls"] * core.copy_call + at64["loops"] * core.copy_loop
    copy = cp.cycles(at["stores"], at["calls"], cost, at["loops"]) - recorded64
    zero = psize // 8 * cost.store_cycles - work.BUILD_STRUCT_PAGE // 8 * core.copy_store
    cycles = (n["call"] * core.call + n["pageblock"] * core.pageblock + n["compound"] * core.compound
              + n["head_slow"] * (core.head_slow + zero) + n["tail_slow"] * (core.tail_slow + zero)
              + n["head_copy"] * (np.asarray(core.head_copy)[pick] + copy)
              + n["tail_copy"] * (np.asarray(core.tail_copy)[pick] + copy))
    return cycles / cost.clock_ghz


def timing(strategy, w: dict, n: dict, n_slow: dict, stored_lines, psize, order, fsdax, cost: cp.CopyCosts,
           exposed: float, core: incore.Cycles) -> dict:
    """Stores, calls, traffic and time (ns) of memmap_init_zone_device() per point, for the point's strategy
    (`strategy`: codes; `n` its operation counts) and for slow (`slow_init`, for the speedup; `n_slow`):
    the in-core time (in_core_ns()) and the memory time combined as combined() says: `exposed` of the
    shorter not hidden for a cached store stream, all of it hidden for a non-temporal one."""
    heads, tails = w["heads"], w["per_compound"] - 1
    compound = order > 0
    deep = order > 1
    head_slow = psize // 8 + SINGLE_PAGE_FIXED + ZONE_DEVICE_FIELDS + fsdax
    tail_slow = psize // 8 + SINGLE_PAGE_FIXED + ZONE_DEVICE_FIELDS + TAIL_EXTRA
    per_compound = np.where(compound, COMPOUND_FIXED + DEFERRED_LIST * deep, 0)
    written = heads * (1 + tails)
    footprint = stored_lines * cp.LINE
    slow_stores = heads * (head_slow + tails * tail_slow + per_compound)
    cached_bound = cp.memory_ns(footprint, 0.0, 0.0, footprint, cost)
    # template strategies: seeds are slow inits plus a memcpy() into the on-stack template
    idx = strategy * _COPY_TABLE["stores"].shape[1] + np.minimum(psize, MAX_ZEROED + 8) // 8
    per_copy = {k: v.ravel()[idx] for k, v in _COPY_TABLE.items()}
    first = (heads > 0).astype(np.int64)
    seeds = heads * compound  # memmap_init_compound(): the first tail seeds the tail template
    copies = np.maximum(written - first - seeds, 0)
    stores = (first * head_slow + seeds * tail_slow + heads * per_compound + (first + seeds) * (psize // 8)
              + copies * per_copy["stores"])
    calls = copies * per_copy["calls"]
    nt = (strategy == TEMPLATE_NT) | (strategy == TEMPLATE_NT_INLINE)
    page1_lines = (2 * psize - 1) // cp.LINE - psize // cp.LINE + 1
    retouched = seeds * (1 + page1_lines + deep) + first * ((psize + cp.LINE - 1) // cp.LINE)
    cold = retouched * cp.LINE
    nt_bound = cp.memory_ns(0.0, cold, copies * per_copy["nt_bytes"], footprint, cost)
    serial = np.where(nt & compound, heads * serial_misses(psize, deep), 0)
    slow = strategy == SLOW
    stores = np.where(slow, slow_stores, stores)
    calls = np.where(slow, 0, calls)
    compute = in_core_ns(strategy, n, psize, cost, core)
    slow_compute = in_core_ns(np.zeros_like(strategy), n_slow, psize, cost, core)
    bound = np.where(nt, nt_bound, cached_bound)
    stall = serial * cost.dram_latency_ns
    return {"stores": stores, "calls": calls, "rfo": np.where(nt, cold, footprint), "serial": serial,
            "compute": compute, "bound": bound, "stall": stall,
            "init": combined(compute, bound + stall, np.where(nt, 0.0, exposed)),
            "written": written, "slow_init": combined(slow_compute, cached_bound, exposed)}


def _inputs(points: pl.DataFrame) -> dict[str, np.ndarray]:
    """Each point's params as numpy arrays, a null as the axis reads it (compound order -1: auto) and the
    strategy as its index in STRATEGIES (slow when unknown)."""
    arr = points.select(
        pl.col("param_namespace_size").fill_null(0).clip(0, None).alias("size"),
        pl.col("param_struct_page_size").fill_null(64).clip(8, 1024).alias("psize"),
        pl.col("param_align").fill_null(ml.PAGE).clip(ml.PAGE, None).alias("align"),
        pl.col("param_compound_order").fill_null(-1).alias("order"),
        (pl.col("param_mode") == "devdax").fill_null(False).alias("devdax"),
        (pl.col("param_map") == "dev").fill_null(True).alias("map_dev"),
        pl.col("param_strategy").replace_strict(
            {s: i for i, s in enumerate(STRATEGIES)}, default=SLOW, return_dtype=pl.Int64).alias("strategy"),
        pl.col("param_start_offset").fill_null(0).clip(0, None).alias("start"),
        pl.col("param_nvdimm_kmsan").fill_null(False).alias("kmsan"),
        (pl.col("param_medium") == "pmem").fill_null(False).alias("pmem"),
        pl.col("param_pmem_dimms").fill_null(PMEM_DIMMS.default).clip(1, None).alias("dimms"),
    )
    return {c: arr[c].to_numpy() for c in arr.columns}


def _timing_on_medium(a: dict[str, np.ndarray], w: dict, n: tuple[dict, dict], stored_lines, order,
                      profile: Profile) -> dict:
    """timing() of each point (`a`: _inputs(); `n`: its operation counts, and slow's) priced with the profile's
    copy costs and its core's recorded cycles, or with its pmem costs where the struct pages live on a pmem
    namespace (map=dev on medium pmem)."""
    cost = cp.CopyCosts.of(profile)
    core = incore.recorded(work.PRICED, profile.text("copy", "cpu"))
    fsdax = (~a["devdax"]).astype(np.int64)
    exposed = float(profile.value("memmap", "exposed_fraction"))
    t = timing(a["strategy"], w, *n, stored_lines, a["psize"], order, fsdax, cost, exposed, core)
    on_pmem = a["map_dev"] & a["pmem"]  # map=mem keeps the struct pages in DRAM whatever the medium
    if on_pmem.any():
        tp = timing(a["strategy"], w, *n, stored_lines, a["psize"], order, fsdax,
                    pmem_costs(cost, profile, a["dimms"]), exposed, core)
        t = {k: np.where(on_pmem, tp[k], v) for k, v in t.items()}
    return t


# The report's figures of this model (drawn by analysis/figures/declared.py).
_STRATEGIES = ("slow", "template", "template_nt", "template_nt_inline")
# Show the 80/96-byte struct pages under map=dev too: CONFIG_NVDIMM_KMSAN only matters for P > 64.
_KMSAN_ON = {"nvdimm_kmsan": True}
_PAGE_SIZES_KEPT = {"struct_page_size": (64, 80, 96, 128)}
PLOTS = (
    Lines(id="memmap_init", title="memmap: init time vs namespace size per strategy",
          x=X("namespace_size", label="namespace size (bytes, log2)"),
          y=Y("metric_init_ms", label="init time (ms)"), hue=Series("strategy", order=_STRATEGIES),
          panels=Panels(facets=("struct_page_size", "mode", "map", "medium",
                                "nvdimm_kmsan", "align", "compound_order"), keep=_PAGE_SIZES_KEPT),
          hold=_KMSAN_ON,
          caption="Modeled memmap_init_zone_device() time (median per point of the held slice). slow: field-by-"
                  "field init; template: memcpy of a template; template_nt: memcpy_nontemporal (out-of-line "
                  "__memcpy_flushcache); template_nt_inline: inline MOVNTI (patch 8). Struct page sizes that are "
                  "not a multiple of 16 are infeasible on x86_64; map=dev needs CONFIG_NVDIMM_KMSAN for P > 64."),
    Hook(id="memmap_speedup_heatmap", title="memmap: best speedup over slow",
         call="workers.models.memmap.report:speedup_heatmap"),
    Lines(id="memmap_overhead", title="memmap overhead: device and DRAM bytes vs struct page size",
          x=X("struct_page_size", "ticks", "sizeof(struct page) (bytes)"),
          y=Y({"dev": "metric_memmap_device_bytes", "mem": "metric_memmap_dram_bytes"}, "size",
              {"dev": "memmap bytes on the namespace", "mem": "memmap bytes in DRAM"}),
          hue=Series("metric_compound_order", title="compound order (resolved)"),
          panels=Panels("map", order=("dev", "mem")),
          hold={**_KMSAN_ON, "mode": POOL, "align": POOL, "compound_order": POOL},
          overlay=Overlay(flag="metric_vmemmap_optimized"),
          caption="map=dev reserves 64 bytes per pfn on the namespace (sizeof(struct page) with "
                  "CONFIG_NVDIMM_KMSAN). map=mem with compound pages and a power-of-two struct page writes only "
                  "2 x 4096 / P struct pages per compound (stars: vmemmap optimization); 80- and 96-byte struct "
                  "pages lose it and pay the full memmap. Medians over mode, align and compound order."),
)

# The report's key findings about memmap init and overhead, and its table: functions of its rows that return the
# numbers (workers/models/memmap/report.py; analysis/report/ words them and writes the cells).
FINDINGS = (
    Hook(id="best_strategy", figure="memmap_init", call="workers.models.memmap.report:best_strategy"),
    Hook(id="inline_movnti", figure="memmap_init", call="workers.models.memmap.report:inline_movnti"),
    Hook(id="medium", figure="memmap_init", call="workers.models.memmap.report:medium"),
    Hook(id="dedup_lost", figure="memmap_overhead", call="workers.models.memmap.report:dedup_lost"),
)
TABLES = (
    Hook(id="overhead", title="memmap overhead by map location, struct page size and compound order",
         call="workers.models.memmap.report:overhead"),
)


# 4 costs for 8 figures, shared by every kind, mode and strategy: the core's clock, at which the kernel's own
# operations run the cycles llvm-mca gives them on an Ice Lake-SP core (workers/models/incore.py), the two DRAM
# streams, and how much of a cached store stream's in-core time does not run under its misses (combined()). The clock is searched within what an Ice Lake-SP part runs at: from the lowest base
# clock, 2.0 GHz (Xeon Gold 6330), to the highest turbo, 3.7 GHz (Xeon Gold 6334; Intel ARK, 3rd generation Xeon
# Scalable). The figures are one Ice Lake-SP core's (the seed's VM), so its DRAM streams are searched within what
# one such core can move: 2-40 GB/s. A core's bandwidth is lines in flight x 64 B / latency (Little's law); Intel
# cores keep about 10-20 misses in flight (D. Lemire, "Memory-level parallelism: Intel Skylake versus Intel
# Cannonlake", 2019: about ten on Skylake, twice that on Cannon Lake), and the published single-core figures
# are about 12 GB/s for an Ice Lake-SP core at full memory-level parallelism (Lemire, "Memory-level
# parallelism: Intel Ice Lake versus Amazon Graviton 3", 2022) and 7.4 GB/s read, 4.3 GB/s ntstore for a
# Cascade Lake core (Yang et al., FAST 2020, github.com/NVSL/OptaneStudy graphs/04-bandwidth_thcount_dram.csv,
# 1 thread). 40 GB/s would take 60 lines in flight at 100 ns.
FREE_PARAMS = (
    FreeParam(section="copy", key="clock_ghz", lower=2.0, upper=3.7),
    FreeParam(section="copy", key="dram_write_gbs", lower=2.0, upper=40.0),
    FreeParam(section="copy", key="dram_rfo_gbs", lower=2.0, upper=40.0),
    FreeParam(section="memmap", key="exposed_fraction", lower=0.0, upper=1.0),
)
# Measured rows (workers.measure) are the user-space analog on any host: its code is not the kernel's and its
# core may not be the profile's, so the clock is an effective one (the analog's work at the recorded kernel's
# cycles per operation), and the copy's own cycles per store, call and loop iteration are fit with it: rows
# span P = 64..96, which the copy prices by those. They also reach memmaps inside and beyond the LLC, which pin
# its bandwidth. The bandwidths keep wide bounds (an EPYC core's RFO stream fits near 180 GB/s,
# workers/measure/fit.py).
MEASURED_FREE_PARAMS = (
    FreeParam(section="copy", key="clock_ghz", lower=0.5, upper=8.0),
    FreeParam(section="copy", key="store_cycles", lower=0.1, upper=10.0),
    FreeParam(section="copy", key="call_cycles", lower=0.0, upper=100.0),
    FreeParam(section="copy", key="loop_cycles", lower=0.0, upper=20.0),
    FreeParam(section="copy", key="dram_write_gbs", lower=1.0, upper=200.0),
    FreeParam(section="copy", key="dram_rfo_gbs", lower=1.0, upper=200.0),
    FreeParam(section="copy", key="llc_gbs", lower=1.0, upper=500.0),
    FREE_PARAMS[3],
)

# What an answer rests on that no figure checks (workers.evidence). The eight figures are at one
# namespace on a DRAM-emulated pmem (the seed's VM); what moves the answers away from there:
LLC_WARM_SHARE = 0.1  # answers with at least this share of their struct-page lines priced LLC-resident


def llc_warm(rows: pl.DataFrame, profile: Profile) -> pl.Series:
    """Rows whose stored struct pages fit the LLC well enough that `copy.warm_llc` (the destination stays
    resident between rebinds, as the seed's 30 rebinds keep it) decides a tenth of their lines or more."""
    if not bool(profile.value("copy", "warm_llc")):
        return pl.Series([False] * rows.height)
    llc = float(profile.value("copy", "llc_bytes"))
    footprint = rows["metric_lines_stored"].cast(pl.Float64) * cp.LINE
    return (llc / footprint.clip(1.0, None)) >= LLC_WARM_SHARE


def on_pmem(rows: pl.DataFrame, profile: Profile) -> pl.Series:
    """Rows whose struct pages are stored to a pmem namespace (map=dev on medium pmem)."""
    return (rows["param_medium"] == "pmem") & (rows["param_map"] == "dev")


# Both are about costs: they move the times and what follows from them, never a count or a size.
TIMES = ("metric_compute_ms", "metric_stall_ms", "metric_bound_ms", "metric_init_ms", "metric_speedup_vs_slow",
         "metric_dominant")
ASSUMPTIONS = (
    Assumption(name="LLC-warm struct pages (copy.warm_llc)", where=llc_warm, metrics=TIMES,
               text="struct pages that fit the LLC are priced as resident between rebinds, as the seed's 30 "
                    "rebinds keep them; a first bind finds them cold"),
    Assumption(name="pmem costs: Optane DC rates and ratios of another machine (memmap.pmem_*)", where=on_pmem,
               metrics=TIMES,
               text="Optane's per-DIMM media rates, its write-back amplification and its DRAM ratios come from "
                    "one study of first-generation Optane DC on Cascade Lake, not fit to any figure"),
)


def published_figures(model: str) -> tuple[Figure, ...]:
    """The eight init times of `model` (this model's name) in the seed series (MODEL.md): 100 GiB, P = 64,
    map=dev."""
    base = {"namespace_size": "100GiB", "struct_page_size": 64, "align": "2MiB", "compound_order": "auto",
            "map": "dev", "start_offset": 0, "nvdimm_kmsan": False,
            "medium": "dram"}  # the seed's VM emulates pmem in DRAM
    published = {
        ("fsdax", "slow"): (244.28, 4), ("fsdax", "template"): (215.55, 4),
        ("fsdax", "template_nt"): (150.83, 7), ("fsdax", "template_nt_inline"): (96.79, 8),
        ("devdax", "slow"): (273.31, 5), ("devdax", "template"): (244.37, 5),
        ("devdax", "template_nt"): (153.55, 7), ("devdax", "template_nt_inline"): (119.04, 8),
    }
    driver = {"fsdax": "nd_pmem", "devdax": "dax_pmem"}
    return tuple(
        Figure(id=f"memmap/{mode}/{strategy}", model=model, metric="metric_init_ms", published=value,
               unit="ms", params={**base, "mode": mode, "strategy": strategy},
               source=SOURCE.format(n=n) + f": {driver[mode]} {value} ms")
        for (mode, strategy), (value, n) in published.items()
    )


def _instructions(a: dict, n: dict, profile: Profile) -> pl.Series:
    """The modeled instructions of memmap_init_zone_device() in the profile's build (work.profile_costs: a
    build fit by calibrate --from, else work.PRICED), from the operation counts `n` (null where it copies with
    a strategy the build's costs lack, or for a struct page size other than the build's)."""
    costs = work.profile_costs(profile)
    v = costs.instructions(a["strategy"], n)
    ok = ~np.isnan(v) & (a["psize"] == work.BUILD_STRUCT_PAGE)
    return pl.Series(np.where(ok, np.round(np.nan_to_num(v)), 0).astype(np.int64)).set(pl.Series(~ok), None)


def work_counts(points: pl.DataFrame) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Each point's strategy index and memmap_init_zone_device()'s operation counts (work.counts())."""
    a, _order, _lay, _w, n, *_ = MODEL._points.get(points, MODEL._of_points)
    return a["strategy"], n[0]


class MemmapModel(Model):
    name = "memmap"
    # 7: compute from the kernel's cycles per operation at the core's clock; 6: pmem by mechanism, axis pmem_dimms;
    # 5: memmap_pages as nr_memmap_pages counts them; 4: metric_init_instructions; 3: metric_memmap_pages
    # 8: error bars from the signed leave-one-out residuals (workers.interval)
    version = "8"
    _points = LastPoints()  # a fit's figures: inputs, layout, walk and reasons derived once
    description = ("memmap_init_zone_device(): struct pages written, memmap placement and init time of the "
                   "slow / template / template_nt / template_nt_inline strategies")
    axes = (NAMESPACE_SIZE, STRUCT_PAGE_SIZE, ALIGN, COMPOUND_ORDER, MODE, MAP, STRATEGY, START_OFFSET,
            NVDIMM_KMSAN, MEDIUM, PMEM_DIMMS)
    metrics = (
        Metric(column="metric_pfns_in_range", dtype=INT,
               doc="pfns of the pgmap range: (namespace_size - end_trunc) / 4 KiB"),
        Metric(column="metric_data_pfns", dtype=INT,
               doc="pfns after the info block and memmap area: (namespace_size - end_trunc - offset) / 4 KiB"),
        Metric(column="metric_pfns_covered", dtype=INT,
               doc="pfns whose struct page is initialized or aliased (map=dev: all but the 2 info-block pfns)"),
        Metric(column="metric_offset_bytes", dtype=INT,
               doc="nd_pfn_init() dataoff: info block + memmap (map=dev) padded to max(align, 2 MiB)"),
        Metric(column="metric_end_trunc_bytes", dtype=INT,
               doc="bytes cut from the namespace end to align it to max(align, 2 MiB)"),
        Metric(column="metric_compound_order", dtype=INT,
               doc="vmemmap_shift k used (auto resolved: fsdax 0, devdax log2(align / 4 KiB))"),
        Metric(column="metric_vmemmap_optimized", dtype=BOOL,
               doc="vmemmap_can_optimize(): tails alias shared vmemmap pages (map=mem, P a power of 2)"),
        Metric(column="metric_struct_pages_written", dtype=INT,
               doc="struct pages the bind initializes: heads + tails written + memmap-area pages"),
        Metric(column="metric_heads", dtype=INT,
               doc="pages memmap_init_zone_device() walks as heads (one per 2^k pfns)"),
        Metric(column="metric_tails_written", dtype=INT,
               doc="compound tails memmap_init_compound() writes (compound_nr_pages() - 1 per head)"),
        Metric(column="metric_tails_aliased", dtype=INT,
               doc="compound tails left to the shared vmemmap page (vmemmap optimization)"),
        Metric(column="metric_area_pages", dtype=INT,
               doc="struct pages of the map=dev memmap area, written by memmap_init_range() (not timed)"),
        Metric(column="metric_memmap_device_bytes", dtype=INT,
               doc="namespace bytes given to the memmap (map=dev: offset - 8 KiB info block)"),
        Metric(column="metric_memmap_dram_bytes", dtype=INT,
               doc="every DRAM byte of the bind's memmap: struct pages in DRAM (map=mem: 2 MiB leaves, or 2 pages "
                   "per compound when optimized; any map: partial sections' base pages) + vmemmap_pt_bytes"),
        Metric(column="metric_memmap_pages", dtype=INT,
               doc="4 KiB vmemmap pages holding the range's struct pages, in DRAM or on the device (6.12's "
                   "/proc/vmstat nr_memmap_pages counts these for a section-aligned range)"),
        Metric(column="metric_vmemmap_pt_bytes", dtype=INT,
               doc="page tables mapping the range's vmemmap (DRAM): a PTE table per 2 MiB of vmemmap mapped with 4 "
                   "KiB pages, a PMD table per 1 GiB of vmemmap"),
        Metric(column="metric_overhead_fraction", dtype=FLOAT, better="lower",
               doc="memmap bytes (device + DRAM, page tables included) / namespace_size"),
        Metric(column="metric_stores", dtype=INT,
               doc="store instructions of memmap_init_zone_device() (field stores, copy moves/MOVNTIs)"),
        Metric(column="metric_bytes_stored", dtype=INT,
               doc="struct page bytes memmap_init_zone_device() writes (pages written x P)"),
        Metric(column="metric_lines_stored", dtype=INT, doc="cache lines of the struct pages written"),
        Metric(column="metric_lines_partial", dtype=INT,
               doc="of those, lines a struct-page boundary falls inside (P not a multiple of 64)"),
        Metric(column="metric_rfo_bytes", dtype=INT,
               doc="bytes read for ownership by cached stores (all lines, or the re-touched lines with NT)"),
        Metric(column="metric_copy_calls", dtype=INT, doc="out-of-line __memcpy_flushcache() calls"),
        Metric(column="metric_cond_resched", dtype=INT,
               doc="cond_resched() calls: heads at a PAGES_PER_SECTION-aligned pfn"),
        Metric(column="metric_serial_misses", dtype=INT,
               doc="misses the NT strategies serialize: serial_misses() per compound (2 at P = 64 when order > 1) "
                   "times the heads, to the medium the struct pages live on"),
        Metric(column="metric_compute_ms", dtype=FLOAT, better="lower",
               doc="in-core time: operations x the cycles the kernel's code takes for each on the profile's core "
                   "(workers/models/incore.py) / copy.clock_ghz"),
        Metric(column="metric_stall_ms", dtype=FLOAT, better="lower",
               doc="serialized misses x the miss latency of the medium the struct pages live on"),
        Metric(column="metric_bound_ms", dtype=FLOAT, better="lower",
               doc="memory-bandwidth lower bound of the traffic (LLC-priced when the memmap fits)"),
        Metric(column="metric_init_ms", dtype=FLOAT, better="lower",
               doc="modeled memmap_init_zone_device() time: max(compute, bound + stall), see combined()"),
        Metric(column="metric_init_instructions", dtype=INT, better="lower",
               doc="instructions memmap_init_zone_device() executes: kernel rows under QEMU's instruction "
                   "counter; modeled: operation counts x instructions per operation of memsweep's series:6.12 "
                   "build (memmap/work.py; 64-byte struct pages)"),
        Metric(column="metric_speedup_vs_slow", dtype=FLOAT, better="higher",
               doc="init time of slow / init time of this strategy"),
        Metric(column="metric_dominant", dtype=pl.Utf8,
               doc="what sets the time: compute, else memory (bound) or latency (stall), the larger"),
    )
    headline = "metric_init_ms"
    arithmetic = ("metric_pfns_in_range", "metric_data_pfns", "metric_pfns_covered", "metric_offset_bytes",
                  "metric_end_trunc_bytes", "metric_compound_order", "metric_vmemmap_optimized",
                  "metric_struct_pages_written", "metric_heads", "metric_tails_written", "metric_tails_aliased",
                  "metric_area_pages", "metric_memmap_device_bytes", "metric_memmap_dram_bytes",
                  "metric_memmap_pages", "metric_vmemmap_pt_bytes", "metric_overhead_fraction")
    points_per_second = 1.5e6  # ~2e6 measured on one core, 1,000,000 mixed points
    report = Report(
        comparison=Comparison(axis="strategy", baseline="slow", metric="metric_init_ms", label="strategy"),
        best_keys=("struct_page_size", "mode", "map"), plots=PLOTS, findings=FINDINGS, tables=TABLES)
    calibration = Calibration(figures=published_figures(name), free_params=FREE_PARAMS,
                              measured_free_params=MEASURED_FREE_PARAMS, assumptions=ASSUMPTIONS,
                              # 16 MiB of struct pages: LLC-resident between rebinds, so the in-core work binds
                              work=WorkCheck(point={"namespace_size": "1GiB", "mode": "fsdax", "map": "mem",
                                                    "align": "2MiB", "struct_page_size": 64},
                                             work="metric_init_instructions", compute="metric_compute_ms",
                                             binds="metric_dominant"))
    # The user-space analog of memmap_init_zone_device() (workers/models/memmap/measure.py) fills
    # metric_init_ms; its figures are named memmap/measured/<mode>/P<P>/<strategy>/<size>. The struct pages
    # are priced with the copy costs, so a fit takes the host's last-level cache as copy.llc_bytes.
    measurement = Measurement(
        planner="workers.models.memmap.measure:plan_memmap", metric="metric_init_ms",
        id_axes=("mode", "struct_page_size", "strategy", "namespace_size"), id_prefixes={"struct_page_size": "P"},
        host_caches={("copy", "llc_bytes"): LAST_LEVEL},
    )
    # A real kernel in a guest binds each point's namespace (workers/models/memmap/kernel.py): its counts
    # and layout must equal the model's; its time is a guest's (under TCG, not a machine's).
    kernel = KernelCheck(
        planner="workers.models.memmap.kernel:plan", reader="workers.models.memmap.kernel:read",
        metrics=("metric_memmap_pages", "metric_offset_bytes", "metric_memmap_device_bytes",
                 "metric_end_trunc_bytes", "metric_data_pfns", "metric_init_ms", "metric_init_instructions"),
        exact=("metric_memmap_pages", "metric_offset_bytes", "metric_memmap_device_bytes",
               "metric_end_trunc_bytes", "metric_data_pfns"),
        sampled="metric_init_instructions", work=("metric_init_instructions",),
        bound="workers.models.memmap.kernel:bound", fitted="workers.models.memmap.kernel:fitted",
        build="workers.models.memmap.work:build_of", fitter="workers.models.memmap.kernel:fit_build",
    )

    def evaluate(self, points: pl.DataFrame, profile: Profile) -> dict:
        """Layout, counts and modeled init time for every point (see the module doc)."""
        a, order, lay, w, n, geo, vm, reason = self._points.get(points, self._of_points)
        refused = no_optane(profile) if a["pmem"].any() else None
        if refused:  # the machine, not the point: after every reason of the point's own
            reason = reason.zip_with(reason.is_not_null() | ~pl.Series(a["pmem"]), pl.Series([refused] * len(reason)))
        size, psize, map_dev = a["size"], a["psize"], a["map_dev"]
        t = _timing_on_medium(a, w, n, geo["lines"], order, profile)
        dram = vm["struct_dram"] + vm["pt_bytes"]
        device = np.where(map_dev, lay["offset"] - ml.INFO_BLOCK, 0)
        written = t["written"]
        memory_side = t["bound"] + t["stall"]
        dominant = np.where(t["compute"] >= memory_side, 0, np.where(t["stall"] >= t["bound"], 2, 1))
        with np.errstate(divide="ignore", invalid="ignore"):
            return {
                "reason": reason,  # feasibility rests on derived columns and the profile: given, not `infeasible`
                "metric_pfns_in_range": lay["pfns_in_range"], "metric_data_pfns": lay["data_pfns"],
                "metric_pfns_covered": np.where(map_dev, lay["pfns_in_range"] - ml.RESERVE_PFNS,
                                                lay["pfns_in_range"]),
                "metric_offset_bytes": lay["offset"], "metric_end_trunc_bytes": lay["end_trunc"],
                "metric_compound_order": order, "metric_vmemmap_optimized": w["optimized"],
                "metric_struct_pages_written": written + lay["area_pages"], "metric_heads": w["heads"],
                "metric_tails_written": w["tails_written"], "metric_tails_aliased": w["tails_aliased"],
                "metric_area_pages": lay["area_pages"], "metric_memmap_device_bytes": device,
                "metric_memmap_dram_bytes": dram,
                "metric_memmap_pages": vm["counted_pages"],
                "metric_vmemmap_pt_bytes": vm["pt_bytes"],
                "metric_overhead_fraction": (device + dram) / size,
                "metric_stores": t["stores"], "metric_bytes_stored": written * psize,
                "metric_lines_stored": geo["lines"], "metric_lines_partial": geo["partial"],
                "metric_rfo_bytes": t["rfo"], "metric_copy_calls": t["calls"],
                "metric_cond_resched": w["cond_resched"], "metric_serial_misses": t["serial"],
                "metric_compute_ms": t["compute"] / 1e6, "metric_stall_ms": t["stall"] / 1e6,
                "metric_bound_ms": t["bound"] / 1e6, "metric_init_ms": t["init"] / 1e6,
                "metric_init_instructions": _instructions(a, n[0], profile),
                "metric_speedup_vs_slow": t["slow_init"] / t["init"],
                "metric_dominant": pl.Series(dominant).replace_strict(
                    {0: "compute", 1: "memory", 2: "latency"}, return_dtype=pl.Utf8),
            }  # the host builds the frame: status from the reason, metrics nulled where not ok

    def _of_points(self, points: pl.DataFrame) -> tuple:
        """What depends on the points alone: inputs, compound order, layout, walk, operation counts (of the
        point's strategy and of slow), lines, vmemmap and the reason a point cannot exist (kept by
        LastPoints)."""
        a = _inputs(points)
        size, psize, align, start, map_dev, devdax = (a[k] for k in ("size", "psize", "align", "start",
                                                                     "map_dev", "devdax"))
        order, kernel_order = resolve_order(a["order"], devdax, align)
        order = np.clip(order, 0, 18)
        lay = ml.layout(size, align, start, map_dev, psize, a["kmsan"])
        w = ml.walk(lay, start, map_dev, order, psize)
        n = (work.counts(a["strategy"], w, order), work.counts(np.full_like(a["strategy"], SLOW), w, order))
        geo = ml.lines(w["heads"], w["per_compound"], w["optimized"], psize)
        vm = ml.vmemmap(lay, start, map_dev, w["optimized"], w["heads"], psize)
        reason = pl.DataFrame({
            "p_big": psize > MAX_ZEROED, "p_align": psize % STRUCT_PAGE_ALIGN != 0,
            "bad_align": ~np.isin(align, SUPPORTED_ALIGNS), "bad_start": start % ml.COMPAT_ALIGN != 0,
            "fs_order": ~devdax & (order > 0), "dd_order": devdax & (order != kernel_order), "kmsan": map_dev & (psize > 64) & ~a["kmsan"],
            "dd_mem_start": devdax & ~map_dev & (start % align != 0), "small": ~lay["ok"],
        }).select(self._reasons().alias("reason"))["reason"]
        return a, order, lay, w, n, geo, vm, reason

    @staticmethod
    @functools.cache  # one expression, built once: a fit evaluates its figures thousands of times
    def _reasons() -> pl.Expr:
        """Why a point cannot exist (first rule that matches), or null; columns from evaluate()."""
        c = pl.col
        return (Reasons()
                .add(c("p_big"), "sizeof(struct page) above 96 bytes does not build on x86_64 "
                     "(__mm_zero_struct_page() BUILD_BUG_ON, include/linux/mm.h)")
                .add(c("p_align"), "sizeof(struct page) must be a multiple of 16 on x86_64 (64, 80 or 96): struct "
                     "page is __aligned(2 * sizeof(unsigned long)) with CONFIG_HAVE_ALIGNED_STRUCT_PAGE, which x86 "
                     "selects (_struct_page_alignment, include/linux/mm_types.h)")
                .add(c("bad_align"), "align must be 4KiB, 2MiB or 1GiB: the pfn-device alignments x86_64 "
                     "supports (nd_pfn_supported_alignments(): PAGE_SIZE, HPAGE_PMD_SIZE, HPAGE_PUD_SIZE)")
                .add(c("bad_start"), "start_offset must be a multiple of 2MiB: nd_pfn_init() rejects a namespace "
                     "start misaligned to memremap_compat_align()")
                .add(c("fs_order"), "fsdax (nd_pmem) maps order-0 pages: compound_order must be 0 or auto")
                .add(c("dd_order"), "devdax (dax_pmem) sets vmemmap_shift = order_base_2(align / 4KiB): "
                     "compound_order must be auto or 0 / 9 / 18 for align 4KiB / 2MiB / 1GiB")
                .add(c("kmsan"), "map=dev with sizeof(struct page) > 64 needs CONFIG_NVDIMM_KMSAN (nd_pfn_init(): "
                     "'Memory debug options prevent using pmem for the page map'): set nvdimm_kmsan or map=mem")
                .add(c("dd_mem_start"), "devdax with map=mem walks compounds from the namespace start: "
                     "start_offset must be a multiple of align")
                .add(c("small"), "namespace too small for its info block, memmap and alignment padding "
                     "(nd_pfn_init(): unable to satisfy requested alignment)")
                .expr())


MODEL = MemmapModel()
