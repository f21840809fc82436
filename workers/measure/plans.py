"""What measuring one point means for each model: a plan (memory, kernel runs) or the reason it cannot be.

A plan's open() maps and pre-faults its memory and builds what the kernel
needs; the Run it yields times one run of the kernel per sample() call, in
stretches, and summarize() turns a point's runs into Samples of the model's
headline metric:
- memmap: metric_init_ms, the analog of memmap_init_zone_device() over the
  point's struct pages (counts from workers/models/memmap_layout.py), timed in
  segments of SEGMENT_PAGES struct pages;
- copy: metric_ns_per_copy, namespace_size // P copies over the destination;
- pfnmap: metric_ns_per_load (lat_mem_rd_random, timed in slices of
  SLICE_LOADS loads) or metric_copy_ms (memcpy_seq) over a mapping of 4 KiB
  pages (compound_order 0) or 2 MiB THPs (9 or auto); the chase runs through
  working_set / 4 KiB pages picked at random from the whole mapping (as a row
  of lmbench `lat_mem_rd -t MAXLEN`), the copy copies the first working_set
  bytes.
measure.py keeps the Runs of several points open at once and samples them in
turn, so a stretch of host noise lands on one sample of many points rather
than on every sample of one.
"""

from __future__ import annotations

import math
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import polars as pl

from ..models import memmap as mm
from ..models import memmap_layout as ml
from ..models.copy import PATCHED_INLINE, MAINLINE_INLINE
from ..models.pfnmap_geometry import PMD, starts
from ..units import KiB
from .host import anon_huge_bytes, machine_arch
from .kernels import COPY_SIZES, MEMMAP_SIZES, Kernels, Mapping

PAGE = 4 * KiB
CHASE_STRIDE = 64  # lmbench lat_mem_rd's default stride on 64-bit (512 / sizeof(char *))
CHASE_LOADS = 1 << 22  # loads per sample: whole laps over the pages, at most the chain's full cycle
SLICE_LOADS = 1 << 16  # a sample is timed in slices of this many loads (~10-20 ms), for Samples.floor
# Untimed loads before each chase sample, so it is timed in the chain's steady state as lmbench's are (its timed
# intervals follow the same chain's previous ones; ours follow other points' samples): the full cycle when it
# is at most this long (a working set that fits a cache is then in it), else whole laps of about this many.
CHASE_WARM_LOADS = 1 << 20
SEGMENT_PAGES = 1 << 16  # a memmap run is timed in segments of about this many struct pages (~0.2 ms)
NT_STRATEGIES = ("template_nt", "template_nt_inline", "nt_call", "nt_inline")
YOUNG_REASON = ("young has no user-space analog: test_and_clear_young_ptes() clears access bits in the "
                "kernel's arm64 page tables during reclaim, which no user process can run")


@dataclass(frozen=True, kw_only=True, slots=True)
class Samples:
    """One value of the headline metric per repeat (after warm-up), and whether THP backed the memory.

    `floor` is the least disturbed value: each run is timed in stretches (memmap: segments of
    SEGMENT_PAGES struct pages, summed over the fastest repeat of each; the chase: slices of
    SLICE_LOADS loads, the fastest), so a burst of host noise costs one stretch, not the whole
    repeat."""

    values: tuple[float, ...]
    floor: float
    huge_pages: bool | None = None


Stretches = list[tuple[int, int]]  # one timed run: (ns, units of work) per stretch


@dataclass(frozen=True, kw_only=True, slots=True)
class Run:
    """A point's memory, ready to measure. sample() times one run of the kernel. `per_unit`: the metric
    is ns per unit of work (ns/load, ns/copy), whose fastest stretch is the floor; else it is the
    run's total time, the stretches its consecutive parts (the same ones every run), and the floor
    sums each part's fastest run. The metric is ns x scale."""

    sample: Callable[[], Stretches]
    scale: float
    per_unit: bool = False
    huge_pages: bool | None = None


def summarize(run: Run, runs: list[Stretches]) -> Samples:
    """Samples of `runs` (the repeats of one point, each one sample() of `run`)."""
    if run.per_unit:
        values = tuple(sum(ns for ns, _ in r) / sum(n for _, n in r) * run.scale for r in runs)
        floor = min(ns / n for r in runs for ns, n in r) * run.scale
    else:
        values = tuple(sum(ns for ns, _ in r) * run.scale for r in runs)
        floor = sum(min(ns for ns, _ in part) for part in zip(*runs)) * run.scale
    return Samples(values=values, huge_pages=run.huge_pages, floor=floor)


def _pages(nbytes: int) -> int:
    return -(-nbytes // PAGE) * PAGE


@dataclass(frozen=True, kw_only=True, slots=True)
class MemmapPlan:
    """heads x per_compound struct pages of psize bytes, initialized with `strategy` from start_pfn."""

    psize: int
    strategy: str
    heads: int
    per_compound: int
    order: int
    start_pfn: int
    refcount_reset: bool

    @property
    def memory(self) -> int:
        return _pages(self.heads * self.per_compound * self.psize)

    @contextmanager
    def open(self, k: Kernels) -> Iterator[Run]:
        with Mapping(k, self.memory) as m:
            # x86 vmemmap_populate() maps the memmap with 2 MiB pages where it can: so does the analog
            m.advise(0, self.memory, True)
            m.prefault()
            yield Run(sample=lambda: [(ns, 1) for ns in k.memmap_init(
                m.addr, psize=self.psize, strategy=self.strategy, heads=self.heads, per_compound=self.per_compound,
                order=self.order, start_pfn=self.start_pfn, refcount_reset=self.refcount_reset,
                segment_heads=self.segment_heads)], scale=1e-6)

    @property
    def segment_heads(self) -> int:
        return max(1, SEGMENT_PAGES // self.per_compound)


@dataclass(frozen=True, kw_only=True, slots=True)
class CopyPlan:
    """n copies of `size` bytes at a destination aligned to `align`, plus dst_offset."""

    size: int
    strategy: str  # the kernel's: memcpy, nt_call, nt_inline (patched inline set)
    n: int
    align: int
    dst_offset: int

    @property
    def memory(self) -> int:
        return _pages(self.dst_offset + self.n * self.size)

    @contextmanager
    def open(self, k: Kernels) -> Iterator[Run]:
        with Mapping(k, self.memory, align=max(self.align, PAGE)) as dst, Mapping(k, PAGE) as src:
            dst.advise(0, self.memory, True)  # the direct map is mapped with huge pages
            dst.prefault()
            src.write(0, bytes(range(256))[: self.size])
            yield Run(sample=lambda: [(k.copy_run(dst.addr + self.dst_offset, src.addr, size=self.size,
                                                  strategy=self.strategy, n=self.n), self.n)],
                      scale=1.0, per_unit=True)


@dataclass(frozen=True, kw_only=True, slots=True)
class PfnmapPlan:
    """A region of `length` bytes starting `offset` bytes into a 2 MiB block; THP on its whole 2 MiB
    blocks when huge (the partial head and tail blocks stay 4 KiB, as remap_pfn_range()'s do). The
    access touches `working_set` bytes of it (None: all): the chase, working_set / 4 KiB pages picked
    at random from the whole region (lmbench -t's base_initialize() + thrash_initialize()); the copy,
    the first working_set bytes."""

    length: int
    offset: int
    huge: bool
    copy: bool  # memcpy_seq (a streaming copy into a second such region) or the lat_mem_rd -t chase
    working_set: int | None = None

    @property
    def touched(self) -> int:
        """Bytes the access touches: the working set, or the whole region."""
        return self.length if self.working_set is None else self.working_set

    @property
    def span(self) -> int:
        return -(-(self.offset + self.length) // PMD) * PMD

    @property
    def memory(self) -> int:
        return self.span * (2 if self.copy else 1)

    def _region(self, k: Kernels) -> Mapping:
        m = Mapping(k, self.span, align=PMD)
        lo = -(-self.offset // PMD) * PMD
        hi = (self.offset + self.length) // PMD * PMD
        if self.huge and hi > lo:
            m.advise(0, lo, False)
            m.advise(lo, hi - lo, True)
            m.advise(hi, self.span - hi, False)
        else:
            m.advise(0, self.span, False)
        if self.copy or self.huge:
            m.prefault(self.offset, self.length)
        # The 4 KiB chase is not prefaulted: as in lmbench (thrash_initialize() in src/lib_mem.c writes
        # each chosen page's pointers, page after page in chain order, into a freshly malloc'ed buffer),
        # only the chained pages are faulted in, and in chain order. The order decides which physical
        # page backs which virtual one: prefaulting in address order measured 0.63-0.75x lmbench's
        # ns/load at 128-512 MiB (benchmarks/RESULTS.md).
        return m

    def _huge_backed(self, m: Mapping) -> bool:
        whole = max(0, (self.offset + self.length) // PMD * PMD - (-(-self.offset // PMD) * PMD))
        got = anon_huge_bytes(m.addr + self.offset, self.length)
        return whole > 0 and got >= 0.9 * whole

    @contextmanager
    def open(self, k: Kernels) -> Iterator[Run]:
        with ExitStack() as stack:
            src = stack.enter_context(self._region(k))
            if self.copy:
                dst = stack.enter_context(self._region(k))
                yield Run(sample=lambda: [(k.stream_copy(dst.addr + self.offset, src.addr + self.offset,
                                                         self.touched), 1)],
                          scale=1e-6, huge_pages=self._huge_backed(src) and self._huge_backed(dst))
                return
            chain = Chain(k, k.chase_build(src.addr + self.offset, self.length, working_set=self.touched,
                                           stride=CHASE_STRIDE, seed=1))
            loads, warm = chase_loads(self.touched), chase_warm_loads(self.touched)
            yield Run(sample=lambda: chain.follow(loads, warm=warm), scale=1.0, per_unit=True,
                      huge_pages=self._huge_backed(src))


class Chain:
    """lat_mem_rd's chase over a built chain: every call continues where the last one stopped."""

    def __init__(self, k: Kernels, start: int):
        self.k, self.at = k, start

    def follow(self, loads: int, warm: int = 0) -> Stretches:
        """`warm` untimed loads, then `loads` dependent loads timed in slices of SLICE_LOADS: (ns, loads)
        per slice."""
        if warm:
            _, self.at = self.k.chase(self.at, warm)
        out = []
        while loads:
            n = min(loads, SLICE_LOADS)
            ns, self.at = self.k.chase(self.at, n)
            out.append((ns, n))
            loads -= n
        return out


def chase_loads(working_set: int) -> int:
    """Loads per sample, about CHASE_LOADS: whole cycles (every line of the working set once each) when the
    cycle is shorter, else whole laps over the working set's 4 KiB pages (each page once per lap).

    lmbench's benchmark_loads() (src/lat_mem_rd.c) follows the chain without a break for each timed
    interval of 100 ms or more, going round a small working set's cycle hundreds of times; caches
    whose replacement adapts to a cyclic pattern (a 1 MiB set in a 1 MiB L2) only settle over many
    cycles. One cycle per sample measured 1.8-3.2x lmbench's ns/load at 1 MiB."""
    npages = max(1, working_set // PAGE)
    cycle = npages * (PAGE // CHASE_STRIDE)
    if cycle <= CHASE_LOADS:
        return cycle * (CHASE_LOADS // cycle)
    return max(1, math.ceil(CHASE_LOADS / npages)) * npages


def chase_warm_loads(working_set: int) -> int:
    """Untimed loads before a sample: the full cycle (every line of the working set once) when it is at most
    CHASE_WARM_LOADS, else whole laps (every page once each) of about that many: the data lines, page-table
    lines and TLB entries the steady state keeps are back before the timing starts."""
    npages = max(1, working_set // PAGE)
    return min(PAGE // CHASE_STRIDE, max(1, round(CHASE_WARM_LOADS / npages))) * npages


Plan = MemmapPlan | CopyPlan | PfnmapPlan


def plan_memmap(points: pl.DataFrame) -> list[Plan | str]:
    """The memmap analog per point. `map` only changes the counts (map=dev walks the data pfns, map=mem
    all pfns, with tails aliased where the vmemmap is optimized): the analog always writes DRAM."""
    arr = points.select(
        pl.col("param_namespace_size").fill_null(0).alias("size"),
        pl.col("param_struct_page_size").fill_null(64).alias("psize"),
        pl.col("param_align").fill_null(ml.PAGE).clip(ml.PAGE, None).alias("align"),
        pl.col("param_compound_order").fill_null(-1).alias("order"),
        (pl.col("param_mode") == "devdax").fill_null(False).alias("devdax"),
        (pl.col("param_map") == "dev").fill_null(True).alias("map_dev"),
        pl.col("param_start_offset").fill_null(0).alias("start"),
        pl.col("param_nvdimm_kmsan").fill_null(False).alias("kmsan"),
        pl.col("param_strategy").fill_null("slow").alias("strategy"),
        ((pl.col("param_medium") == "pmem") & (pl.col("param_map") == "dev")).fill_null(False).alias("pmem"),
    )
    a = {c: arr[c].to_numpy() for c in arr.columns}
    order, _ = mm.resolve_order(a["order"], a["devdax"], a["align"])
    order = np.clip(order, 0, 18)
    lay = ml.layout(a["size"], a["align"], a["start"], a["map_dev"], a["psize"], a["kmsan"])
    w = ml.walk(lay, a["start"], a["map_dev"], order, a["psize"])
    x86 = machine_arch() == "x86_64"
    out: list[Plan | str] = []
    for i in range(points.height):
        psize, strategy, heads = int(a["psize"][i]), str(a["strategy"][i]), int(w["heads"][i])
        if a["pmem"][i]:
            out.append("medium = pmem with map=dev stores the struct pages to persistent memory; the analog writes "
                       "this node's DRAM, so it cannot measure that (use medium = dram, or map = mem)")
        elif psize not in MEMMAP_SIZES:
            out.append(f"struct_page_size {psize} has no compiled analog: the memmap kernels are built for "
                       f"P = {', '.join(map(str, MEMMAP_SIZES))} bytes")
        elif strategy in NT_STRATEGIES and not x86:
            out.append(f"{strategy} needs MOVNTI: on {machine_arch()} memcpy_nontemporal() is plain memcpy(), "
                       "so the template strategy's rows are the measurement")
        elif heads <= 0:
            out.append("the namespace has no data pfns to initialize")
        else:
            out.append(MemmapPlan(psize=psize, strategy=strategy, heads=heads, per_compound=int(w["per_compound"][i]),
                                  order=int(order[i]), start_pfn=int(w["first_pfn"][i]),
                                  refcount_reset=not bool(a["devdax"][i])))
    return out


def plan_copy(points: pl.DataFrame) -> list[Plan | str]:
    """The copy loop per point; nt_inline with the mainline inline set (4/8/16) is the call for larger sizes."""
    rows = points.select("param_namespace_size", "param_struct_page_size", "param_align", "param_dst_offset",
                         "param_strategy", "param_inline_sizes").rows()
    x86 = machine_arch() == "x86_64"
    out: list[Plan | str] = []
    for total, size, align, dst_offset, strategy, inline_sizes in rows:
        inline = PATCHED_INLINE if inline_sizes == "patched" else MAINLINE_INLINE
        if size not in COPY_SIZES:
            out.append(f"copy size {size} has no compiled kernel: built for 8..128 bytes in steps of 8")
        elif strategy != "memcpy" and not x86:
            out.append(f"{strategy} needs MOVNTI: on {machine_arch()} memcpy_nontemporal() is plain memcpy()")
        else:
            kernel = "nt_inline" if strategy == "nt_inline" and size in inline else (
                "memcpy" if strategy == "memcpy" else "nt_call")
            out.append(CopyPlan(size=size, strategy=kernel, n=total // size, align=align, dst_offset=dst_offset))
    return out


def plan_pfnmap(points: pl.DataFrame) -> list[Plan | str]:
    """A THP or 4 KiB mapping per point. The physical placement (align, pa_offset) is honoured through the
    virtual offset into a 2 MiB block (THP keeps va and pa congruent); va_offset not a multiple of 2 MiB
    allows no huge leaves, so such points map 4 KiB pages; 1 GiB leaves cannot be had from THP.
    `param_working_set` (missing, null or -1: the whole mapping) is what the access touches."""
    ws = (pl.col("param_working_set") if "param_working_set" in points.columns else pl.lit(None, pl.Int64))
    arr = points.select(
        pl.col("param_namespace_size").alias("length"), pl.col("param_align").alias("align"),
        pl.col("param_compound_order").fill_null(9).alias("order"),
        pl.col("param_pa_offset").fill_null(-1).alias("pa_offset"),
        pl.col("param_va_offset").fill_null(0).alias("va_offset"),
        pl.col("param_arch").alias("arch"), pl.col("param_access").alias("access"),
        ws.cast(pl.Int64).fill_null(-1).alias("working_set"),
    )
    a = {c: arr[c].to_numpy() for c in arr.columns}
    _, va = starts(a["align"], a["pa_offset"], a["va_offset"])
    here = machine_arch()
    out: list[Plan | str] = []
    for i in range(points.height):
        order, arch = int(a["order"][i]), str(a["arch"][i])
        if arch != here:
            out.append(f"arch={arch} cannot be measured on this {here} node")
        elif order not in (0, 9):
            out.append(f"compound_order {order}: the measurement maps 4 KiB pages (0) or 2 MiB transparent huge "
                       "pages (9); 1 GiB leaves would need reserved hugetlbfs gigantic pages")
        else:
            huge = order == 9 and int(a["va_offset"][i]) % PMD == 0
            length, ws = int(a["length"][i]), int(a["working_set"][i])
            if ws != -1 and not (0 < ws <= length and ws % PAGE == 0):
                out.append(f"working_set {ws} cannot be measured: the chase visits whole 4 KiB pages of the "
                           f"{length}-byte mapping (a multiple of 4KiB from 4KiB to namespace_size, or all)")
                continue
            out.append(PfnmapPlan(length=length, offset=int(va[i]) % PMD, huge=huge,
                                  copy=str(a["access"][i]) == "memcpy_seq",
                                  working_set=None if ws < 0 or ws >= length else ws))
    return out


def plan_young(points: pl.DataFrame) -> list[Plan | str]:
    return [YOUNG_REASON] * points.height


PLANNERS: dict[str, Callable[[pl.DataFrame], list[Plan | str]]] = {
    "memmap": plan_memmap, "copy": plan_copy, "pfnmap": plan_pfnmap, "young": plan_young,
}
