"""What a model's measurement plan is made of, and the generic pieces the models' planners share.

A model's planner (its `measurement`, workers.model.Measurement; workers/models/<model>/measure.py)
turns its points into one Plan per point, or the reason this node cannot measure it. A plan's
open() maps and pre-faults its memory and builds what the routine needs; the Run it yields times
one run of the routine per sample() call, in stretches, and summarize() turns a point's runs into
Samples of the metric the model's measurement fills. Shared here: the Run / Samples discipline and
lmbench's lat_mem_rd chase (Chain, chase_loads(), chase_warm_loads(): a sample timed in slices of
SLICE_LOADS loads).
measure.py keeps the Runs of several points open at once and samples them in
turn, so a stretch of host noise lands on one sample of many points rather
than on every sample of one.
"""

from __future__ import annotations

import math
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Callable, Protocol

from workers.units import KiB

from .native import Native

PAGE = 4 * KiB
CHASE_STRIDE = 64  # lmbench lat_mem_rd's default stride on 64-bit (512 / sizeof(char *))
CHASE_LOADS = 1 << 22  # loads per sample: whole laps over the pages, at most the chain's full cycle
SLICE_LOADS = 1 << 16  # a sample is timed in slices of this many loads (~10-20 ms), for Samples.floor
# Untimed loads before each chase sample, so it is timed in the chain's steady state as lmbench's are (its timed
# intervals follow the same chain's previous ones; ours follow other points' samples): the full cycle when it
# is at most this long (a working set that fits a cache is then in it), else whole laps of about this many.
CHASE_WARM_LOADS = 1 << 20


@dataclass(frozen=True, kw_only=True, slots=True)
class Samples:
    """One value of the measured metric per repeat (after warm-up), and whether THP backed the memory.

    `floor` is the least disturbed value: each run is timed in stretches (a total time: its consecutive
    parts, each at its fastest repeat, summed; a time per unit of work: the fastest stretch, e.g. a
    chase slice of SLICE_LOADS loads), so a burst of host noise costs one stretch, not the whole
    repeat."""

    values: tuple[float, ...]
    floor: float
    huge_pages: bool | None = None


Stretches = list[tuple[int, int]]  # one timed run: (ns, units of work) per stretch


@dataclass(frozen=True, kw_only=True, slots=True)
class Run:
    """A point's memory, ready to measure. sample() times one run of the routine. `per_unit`: the metric
    is ns per unit of work (ns/load, ns/copy), whose fastest stretch is the floor; else it is the
    run's total time, the stretches its consecutive parts (the same ones every run), and the floor
    sums each part's fastest run. The metric is ns x scale."""

    sample: Callable[[], Stretches]
    scale: float
    per_unit: bool = False
    huge_pages: bool | None = None


def summarize(run: Run, runs: list[Stretches]) -> Samples:
    """Samples of `runs` (the repeats of one point, each one sample() of `run`)."""
    # A stretch timed at 0 ns measured nothing (the clock did not move on: one memmap run of a loaded CI
    # host gave a floor of 0): it is left out of the floor, which it would otherwise be.
    if run.per_unit:
        values = tuple(sum(ns for ns, _ in r) / sum(n for _, n in r) * run.scale for r in runs)
        floor = min((ns / n for r in runs for ns, n in r if ns > 0), default=0.0) * run.scale
    else:
        values = tuple(sum(ns for ns, _ in r) * run.scale for r in runs)
        floor = sum(min((ns for ns, _ in part if ns > 0), default=0) for part in zip(*runs)) * run.scale
    return Samples(values=values, huge_pages=run.huge_pages, floor=floor)


def whole_pages(nbytes: int) -> int:
    """`nbytes` rounded up to whole 4 KiB pages."""
    return -(-nbytes // PAGE) * PAGE


class Plan(Protocol):
    """What a planner returns for a point this node can measure: the bytes of memory it maps (measure.py
    refuses what the node cannot spare and samples together the plans that fit together) and open(), a
    context manager that maps and pre-faults that memory and yields the Run."""

    @property
    def memory(self) -> int: ...

    def open(self, k: Native) -> AbstractContextManager[Run]: ...


class Chain:
    """lat_mem_rd's chase over a built chain: every call continues where the last one stopped."""

    def __init__(self, k: Native, start: int):
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
