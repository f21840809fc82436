"""copy's measurement plan: the copy loop, n copies of struct_page_size bytes over a destination array.

A point's plan runs the C routine of its strategy (workers/native: memcpy, the out-of-line
__memcpy_flushcache() or the inline MOVNTI sequence) n = namespace_size // struct_page_size times,
filling metric_ns_per_copy (and metric_gbs from it). The copy model declares it
(`CopyModel.measurement`); workers.measure imports this module only when it measures copy points.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

import polars as pl

from workers.measure.host import machine_arch
from workers.measure.native import COPY_SIZES, Native, Mapping
from workers.measure.plans import PAGE, Plan, Run, whole_pages
from workers.models.copy import MAINLINE_INLINE, PATCHED_INLINE


@dataclass(frozen=True, kw_only=True, slots=True)
class CopyPlan:
    """n copies of `size` bytes at a destination aligned to `align`, plus dst_offset."""

    size: int
    strategy: str  # the routine's: memcpy, nt_call, nt_inline (patched inline set)
    n: int
    align: int
    dst_offset: int

    @property
    def memory(self) -> int:
        return whole_pages(self.dst_offset + self.n * self.size)

    @contextmanager
    def open(self, k: Native) -> Iterator[Run]:
        with Mapping(k, self.memory, align=max(self.align, PAGE)) as dst, Mapping(k, PAGE) as src:
            dst.advise(0, self.memory, True)  # the direct map is mapped with huge pages
            dst.prefault()
            src.write(0, bytes(range(256))[: self.size])
            yield Run(sample=lambda: [(k.copy_run(dst.addr + self.dst_offset, src.addr, size=self.size,
                                                  strategy=self.strategy, n=self.n), self.n)],
                      scale=1.0, per_unit=True)


def plan_copy(points: pl.DataFrame) -> list[Plan | str]:
    """The copy loop per point; nt_inline with the mainline inline set (4/8/16) is the call for larger sizes."""
    rows = points.select("param_namespace_size", "param_struct_page_size", "param_align", "param_dst_offset",
                         "param_strategy", "param_inline_sizes").rows()
    x86 = machine_arch() == "x86_64"
    out: list[Plan | str] = []
    for total, size, align, dst_offset, strategy, inline_sizes in rows:
        inline = PATCHED_INLINE if inline_sizes == "patched" else MAINLINE_INLINE
        if size not in COPY_SIZES:
            out.append(f"copy size {size} has no compiled routine: built for 8..128 bytes in steps of 8")
        elif strategy != "memcpy" and not x86:
            out.append(f"{strategy} needs MOVNTI: on {machine_arch()} memcpy_nontemporal() is plain memcpy()")
        else:
            routine = "nt_inline" if strategy == "nt_inline" and size in inline else (
                "memcpy" if strategy == "memcpy" else "nt_call")
            out.append(CopyPlan(size=size, strategy=routine, n=total // size, align=align, dst_offset=dst_offset))
    return out
