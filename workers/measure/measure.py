"""The measure backend's entry point: run a model's points as user-space analogs on this node.

`measure(model, points, profile, settings)` returns rows of the model's own
schema (status, reason, every metric column) plus MEASURE_COLUMNS, one per
point, in order. What a point runs is the model's own declaration
(`model.measurement`, workers.model.Measurement: its planner, and the metric
it fills): a measured row fills that metric (and the declared derived
columns) with the median of `repeats` samples taken after `warmup` runs
(MeasureSettings), pinned to one CPU, on pre-faulted memory, timed by the
thread's CPU time (or wall time); the other metrics stay null. `measure_min` is the least disturbed
value (plans.Samples.floor). The points of one call whose memory fits
together are sampled round-robin: on a shared host, noise comes in bursts of
seconds, which then cost one sample of several points instead of every sample
of one. A point is infeasible when the model says it cannot exist under
`profile` (same rules, same reasons as the sweep's modeled rows), when this
node cannot honour one of its axes (the model's planner says why), when the
model declares no measurement (or the reason it has none), when its memory
does not fit MemAvailable minus a safety margin, or when the node has no C
compiler.
"""

from __future__ import annotations

import os
import statistics
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator

import polars as pl

from workers.dataset import DTYPES, MEASURE_COLUMNS
from workers.evaluate import evaluate
from workers.model import STATUS_ERROR, STATUS_INFEASIBLE, STATUS_OK, Model
from workers.profiles import Profile
from workers.units import GiB, MiB

from .exceptions import CompilerNotFound, MeasureError
from .host import mem_available_bytes
from .native import CLOCKS, load
from .plans import Plan, Samples, summarize
from .settings import SPAN_MS, MeasureSettings

SAFETY_MIN_BYTES = 512 * MiB  # memory left to the rest of the node, at least ...
SAFETY_FRACTION = 0.10  # ... or this share of MemAvailable, whichever is larger
MAX_ROUNDS_FACTOR = 20  # rounds go on past `repeats` to last span_ms, but at most this many times `repeats`


def measure(model: Model, points: pl.DataFrame, profile: Profile, settings: MeasureSettings = MeasureSettings(),
            *, clock: str = "thread", cc: str = "cc", cache_dir: Path | str | None = None) -> pl.DataFrame:
    """Measured rows for `points`: ["status", "reason", *model.metric_dtypes, *MEASURE_COLUMNS], same height and order.

    `profile`: the sweep's profile, for the model's own feasibility rules (model_status). `settings`:
    repeats, warm-up, the CPU to pin to for the duration, and the least time the round-robin of one
    batch lasts (more rounds than `repeats` for quick points; see interleaved()). `clock`: "thread"
    times the measuring thread's CPU time, so other tasks sharing the pinned CPU do not inflate a
    sample (they doubled wall-clock ns/load on this project's 2-CPU machine); "wall" times elapsed
    time. `cc` / `cache_dir`: the compiler and library cache (build.py).
    """
    if clock not in CLOCKS:
        raise ValueError(f"'clock' must be one of {CLOCKS} (got {clock!r}).")
    status, reason = model_status(model, points, profile)
    results: list[Samples | None] = [None] * points.height
    ok = [i for i, s in enumerate(status) if s == STATUS_OK]
    plans: list[Plan | str] = planned(model, points[ok]) if ok else []
    todo: list[tuple[int, Plan]] = []
    for i, plan in zip(ok, plans):
        if isinstance(plan, str):
            status[i], reason[i] = STATUS_INFEASIBLE, plan
        else:
            todo.append((i, plan))
    if todo:
        try:
            native = load(cc=cc, cache_dir=cache_dir)
            native.set_clock(clock)
        except MeasureError as e:  # no compiler: the node cannot measure; a failed build: a bug
            bad = STATUS_INFEASIBLE if isinstance(e, CompilerNotFound) else STATUS_ERROR
            for i, _ in todo:
                status[i], reason[i] = bad, str(e)
            todo = []
    with pinned(settings.cpu if todo else None):
        fits = []
        for i, plan in todo:
            refusal = memory_refusal(plan.memory)
            if refusal:
                status[i], reason[i] = STATUS_INFEASIBLE, refusal
            else:
                fits.append((i, plan))
        for batch in batches(fits):
            outcomes = interleaved(native, batch, settings.warmup, settings.repeats, settings.span_ms)
            for i, outcome in outcomes:
                if isinstance(outcome, Samples):
                    results[i] = outcome
                else:
                    status[i], reason[i] = STATUS_ERROR, outcome
    return _frame(model, points, status, reason, results)


def batches(todo: list[tuple[int, Plan]], root: Path | str = "/") -> Iterator[list[tuple[int, Plan]]]:
    """`todo` in order, cut into runs of plans whose memory fits this node together (each fits alone)."""
    available = mem_available_bytes(root)
    budget = None if available is None else available - max(SAFETY_MIN_BYTES, int(available * SAFETY_FRACTION))
    batch: list[tuple[int, Plan]] = []
    used = 0
    for item in todo:
        if batch and budget is not None and used + item[1].memory > budget:
            yield batch
            batch, used = [], 0
        batch.append(item)
        used += item[1].memory
    if batch:
        yield batch


def interleaved(k, batch: list[tuple[int, Plan]], warmup: int, repeats: int,
                span_ms: int = SPAN_MS) -> list[tuple[int, Samples | str]]:
    """Open every plan of `batch`, warm each up, then take the repeats round-robin: repeat r of every
    point before repeat r + 1 of any, so the points' samples spread over the whole batch's time. Rounds
    go on past `repeats` until they span `span_ms` milliseconds (at most MAX_ROUNDS_FACTOR x repeats
    rounds): points of a few ms would otherwise be sampled inside one burst of host noise.
    A point whose mapping or routine fails gets the error (as "Type: message") and the rest go on."""
    runs: dict[int, list] = {}
    failed: dict[int, str] = {}
    with ExitStack() as stack:
        live = []
        for i, plan in batch:
            try:
                run = stack.enter_context(plan.open(k))
                for _ in range(warmup):
                    run.sample()
            except (OSError, MemoryError, MeasureError) as e:
                failed[i] = f"{type(e).__name__}: {e}"
                continue
            live.append((i, run))
            runs[i] = []
        started, rounds = time.monotonic(), 0
        while rounds < repeats or (time.monotonic() - started < span_ms / 1000
                                   and rounds < MAX_ROUNDS_FACTOR * repeats):
            rounds += 1
            for i, run in live:
                if i in failed:
                    continue
                try:
                    runs[i].append(run.sample())
                except (OSError, MemoryError, MeasureError) as e:
                    failed[i] = f"{type(e).__name__}: {e}"
        summaries = {i: summarize(run, runs[i]) for i, run in live if i not in failed}
    return [(i, failed[i] if i in failed else summaries[i]) for i, _ in batch]


def model_status(model: Model, points: pl.DataFrame, profile: Profile) -> tuple[list[str], list[str | None]]:
    """The model's own status and reason per point: a point that cannot exist is not measured either."""
    out = evaluate(model, points, profile)
    return out["status"].to_list(), out["reason"].to_list()


def memory_refusal(needed: int, root: Path | str = "/") -> str | None:
    """Why `needed` bytes cannot be mapped here (MemAvailable minus the safety margin), or None."""
    available = mem_available_bytes(root)
    if available is None:
        return None
    margin = max(SAFETY_MIN_BYTES, int(available * SAFETY_FRACTION))
    if needed <= available - margin:
        return None
    return (f"needs {needed / GiB:.2f} GiB of memory to measure, more than this node can spare: "
            f"MemAvailable {available / GiB:.2f} GiB minus a {margin / GiB:.2f} GiB safety margin")


@contextmanager
def pinned(cpu: int | None) -> Iterator[int | None]:
    """Pin the calling thread to `cpu` (or the lowest CPU it may use) and restore its affinity after."""
    if cpu is None or not hasattr(os, "sched_setaffinity"):
        yield None
        return
    before = os.sched_getaffinity(0)
    target = cpu if cpu in before else min(before)
    os.sched_setaffinity(0, {target})
    try:
        yield target
    finally:
        os.sched_setaffinity(0, before)


def planned(model: Model, points: pl.DataFrame) -> list[Plan | str]:
    """The model's plan (or the reason it cannot be measured here) per point, from its declaration."""
    m = model.measurement
    if m is None:
        reason = (f"model {model.name!r} has no measurement: it declares no user-space analog "
                  "(workers.model.Measurement) to run")
    elif not m.measurable:
        reason = m.reason or f"model {model.name!r} has no measurement"
    else:
        plans = list(m.plan(points))
        if len(plans) != points.height:
            raise ValueError(f"model {model.name!r}: its measurement planner returned {len(plans)} plans for "
                             f"{points.height} points (one plan or reason per point)")
        return plans
    return [reason] * points.height


def measured_metric(model: Model, points: pl.DataFrame) -> list[str | None]:
    """The metric column measure_min / measure_median summarize, per point (the model's declaration)."""
    m = model.measurement
    return [None] * points.height if m is None else m.metrics_of(points)


def _frame(model: Model, points: pl.DataFrame, status: list[str], reason: list[str | None],
           results: list[Samples | None]) -> pl.DataFrame:
    n = points.height
    cols: dict[str, list] = {"status": status, "reason": reason}
    cols.update({m: [None] * n for m in model.metric_dtypes})
    cols.update({m: [None] * n for m in MEASURE_COLUMNS})
    names = measured_metric(model, points)
    derived = model.measurement.derived if model.measurement is not None else {}
    per = {col: points[f"param_{axis}"].to_list() for col, axis in derived.items()}
    for i, res in enumerate(results):
        if res is None:
            continue
        med = statistics.median(res.values)
        cols[names[i]][i] = med
        for col, values in per.items():  # declared derived columns: axis value / median (bytes / ns: GB/s)
            cols[col][i] = values[i] / med if med > 0 else None
        cols["measure_repeats"][i] = len(res.values)
        cols["measure_min"][i] = res.floor
        cols["measure_median"][i] = med
        cols["measure_max"][i] = max(res.values)
        cols["measure_huge_pages"][i] = res.huge_pages
    schema = {"status": pl.Utf8, "reason": pl.Utf8, **model.metric_dtypes, **{c: DTYPES[c] for c in MEASURE_COLUMNS}}
    return pl.DataFrame(cols, schema=schema)
