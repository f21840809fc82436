"""memmap's measurement plan: the analog of memmap_init_zone_device() over a point's struct pages.

A point's plan initializes the struct pages the model counts (heads x pages per compound, from
workers/models/memmap/layout.py) in an anonymous mapping, with the C routine of its strategy
(workers/native), filling metric_init_ms; a run is timed in segments of SEGMENT_PAGES struct pages.
The memmap model declares it (`MemmapModel.measurement`); workers.measure imports this module only
when it measures memmap points.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import polars as pl

from workers.measure.host import machine_arch
from workers.measure.native import MEMMAP_SIZES, Native, Mapping
from workers.measure.plans import Plan, Run, whole_pages
from workers.models import memmap as mm

from . import layout as ml

SEGMENT_PAGES = 1 << 16  # a memmap run is timed in segments of about this many struct pages (~0.2 ms)
NT_STRATEGIES = ("template_nt", "template_nt_inline", "nt_call", "nt_inline")


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
        return whole_pages(self.heads * self.per_compound * self.psize)

    @contextmanager
    def open(self, k: Native) -> Iterator[Run]:
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
            out.append(f"struct_page_size {psize} has no compiled analog: the memmap routines are built for "
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
