"""pfnmap's measurement plan: lmbench's lat_mem_rd -t chase or a streaming copy over THP or 4 KiB pages.

A point's plan maps `namespace_size` bytes of anonymous memory with 4 KiB pages (compound_order 0)
or 2 MiB transparent huge pages (9 or auto) and runs its access over it: lat_mem_rd_random fills
metric_ns_per_load (the chase of workers.measure.plans, timed in slices of SLICE_LOADS loads) and
memcpy_seq fills metric_copy_ms. The chase runs through working_set / 4 KiB pages picked at random
from the whole mapping (as a row of lmbench `lat_mem_rd -t MAXLEN`), the copy copies the first
working_set bytes. The pfnmap model declares it (`PfnmapModel.measurement`); workers.measure
imports this module only when it measures pfnmap points.
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Iterator

import polars as pl

from workers.measure.host import anon_huge_bytes, machine_arch
from workers.measure.native import Native, Mapping
from workers.measure.plans import CHASE_STRIDE, PAGE, Chain, Plan, Run, chase_loads, chase_warm_loads

from .geometry import PMD, starts


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

    def _region(self, k: Native) -> Mapping:
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
    def open(self, k: Native) -> Iterator[Run]:
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
