"""Row sources: one Backend for each way a point becomes a row, in the table BACKENDS.

A spec's `source` picks backends by name: "model" rows are the model's own
`evaluate` on the sweep's profile; "measured" rows are the model's user-space
analog run on the worker (workers.measure); "kernel" rows are the real kernel
path, bound in a guest the worker boots (workers.guest). A backend says all that differs
between them: how many points make a chunk, what besides the grid fixes its
rows (hashed into its chunk ids), which of the runner's pools runs its chunks
on Ray, whether `memsweep plan` computes its rows, and the compute step itself.
sweeps.run.chunks, sweeps.run.task, sweeps.run.driver and sweeps.run.dryrun look
a backend up by a chunk's `source` and never branch on it.
The runner runs the backends in table order: model chunks first, then
measured ones (so nothing of ours runs beside a measurement), then kernel ones.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Callable

import polars as pl

from workers import evaluate, evidence, get_model, interval
from workers.dataset import DTYPES, GUEST_COLUMNS, KERNEL, MEASURE_COLUMNS, MEASURED, MODELED
from workers.evaluate import error_rows
from workers.guest.rows import kernel_rows
from workers.guest.settings import KernelSettings
from workers.measure.measure import measure
from workers.measure.settings import MeasureSettings
from workers.model import Model
from workers.profiles import Profile

if TYPE_CHECKING:
    from sweeps.spec.load import SweepSpec

SHARED, NODE_ALONE = "shared", "node-alone"  # a Backend's placement
# Modeled chunks are sized by their measured cost (sweeps.run.cost); where none is known (plan() alone), by
# the model's declared points_per_second: about this many seconds of its own rows.
TARGET_SECONDS = 0.25
MAX_CHUNK_POINTS = 1_000_000  # bounds a worker's memory for one chunk
# A measured point takes ~0.1-10 s; the points of a chunk are sampled round-robin (workers.measure), so
# more points spread each one's samples over more time, fewer resume more finely.
MEASURED_CHUNK_POINTS = 8
# A kernel chunk is one guest boot (6-18 s under TCG on 2 cores) and then about a second per 2 GiB namespace.
KERNEL_CHUNK_POINTS = 24


@dataclass(frozen=True, kw_only=True, slots=True)
class SourceSettings:
    """How rows are computed besides the grid and the profile: the spec's [measure] and [kernel] tables."""

    measure: MeasureSettings = field(default_factory=MeasureSettings)
    kernel: KernelSettings = field(default_factory=KernelSettings)


@dataclass(frozen=True, kw_only=True, slots=True)
class Backend:
    """One row source: its name (the `source` of its chunks and rows) and what a sweep needs of it."""

    name: str
    chunk_points: Callable[[SweepSpec, str], int]  # points per chunk of a model, unless the spec sets them
    digest_inputs: Callable[[SweepSpec], dict]  # what fixes its rows besides model, profile and grid
    # The compute step: points (param_* columns) in; the params, status, reason, the model's metrics, their
    # error bars (workers.interval), MEASURE_COLUMNS, the evidence columns and GUEST_COLUMNS out, one row per point; a failure becomes rows with status "error".
    rows: Callable[[Model, pl.DataFrame, Profile, SourceSettings], pl.DataFrame]
    # Where its chunks run (the driver maps it to a pool of Ray tasks or actors): SHARED, any free CPU; or
    # NODE_ALONE, one chunk at a time on each node, nothing else of ours beside it.
    placement: str
    # What `memsweep plan` computes of its points here: each point's status and reason (the model's own
    # evaluation, without bars, evidence or a part); None when plan only counts them (measured rows: their values
    # and time depend on the node and on [measure]; kernel rows: a guest's). Its chunks are sized by their cost
    # where it is computed here (sweeps.run.cost).
    statuses: Callable[[Model, pl.DataFrame, Profile], pl.DataFrame] | None = None

    @property
    def planned_here(self) -> bool:
        return self.statuses is not None


def model_chunk_points(spec: SweepSpec, model: str) -> int:
    """~TARGET_SECONDS of the model's work at its declared points_per_second, at most MAX_CHUNK_POINTS."""
    rate = get_model(model).points_per_second
    return max(1, min(MAX_CHUNK_POINTS, int(rate * TARGET_SECONDS)))


def _nulls(columns) -> list[pl.Expr]:
    return [pl.lit(None, dtype=dt).alias(c) for c, dt in columns.items()]


GUEST_DTYPES = {c: pl.Utf8 for c in GUEST_COLUMNS}
MEASURE_DTYPES = {c: DTYPES[c] for c in MEASURE_COLUMNS}


def model_rows(model: Model, params: pl.DataFrame, profile: Profile, settings: SourceSettings) -> pl.DataFrame:
    """The model's evaluation of the points (workers.evaluate: an exception gives error rows) with each
    answer's error bar (workers.interval) and what it rests on (workers.evidence), measure_* and the guest's
    columns null."""
    rows = evaluate(model, params, profile)
    labels = evidence.label(model, profile, rows)
    try:
        bars = interval.bars(model, profile, rows, labels["evidence"])
    except Exception as e:  # noqa: BLE001 - a model that fails under a refit fails the chunk's rows, not the chunk
        rows, bars = pl.concat([params, error_rows(model, params.height, e)], how="horizontal"), \
            _frame(interval.dtypes(model), params.height)
        labels = _frame(evidence.COLUMNS, params.height)
    return pl.concat([rows, bars, labels], how="horizontal").with_columns(_nulls({**MEASURE_DTYPES, **GUEST_DTYPES}))


def _frame(columns: dict, height: int) -> pl.DataFrame:
    return pl.DataFrame({c: pl.Series(c, [None] * height, dtype=dt) for c, dt in columns.items()})


def measured_digest_inputs(spec: SweepSpec) -> dict:
    """Measured rows also depend on how they are measured: the spec's [measure] settings."""
    return {"source": MEASURED, "measure": asdict(spec.measure)}


def measured_rows(model: Model, params: pl.DataFrame, profile: Profile, settings: SourceSettings) -> pl.DataFrame:
    """The points measured on this node; a failure of the measure backend becomes error rows, as with models."""
    try:
        out = measure(model, params, profile, settings.measure)
    except Exception as e:  # noqa: BLE001 - a broken measurement must not lose the chunk
        out = error_rows(model, params.height, e, MEASURE_DTYPES)
    return pl.concat([params, out], how="horizontal").with_columns(
        _nulls({**GUEST_DTYPES, **interval.dtypes(model), **evidence.COLUMNS}))


def kernel_digest_inputs(spec: SweepSpec) -> dict:
    """Kernel rows also depend on the kernel: the [kernel] settings, its release and its image's digest."""
    return {"source": KERNEL, "kernel": spec.kernel.identity()}


def guest_rows(model: Model, params: pl.DataFrame, profile: Profile, settings: SourceSettings) -> pl.DataFrame:
    """The points bound in one guest boot on this node (workers.guest.rows); a failure becomes error rows."""
    try:
        out = kernel_rows(model, params, profile, settings.kernel)
    except Exception as e:  # noqa: BLE001 - a broken guest run must not lose the chunk
        out = error_rows(model, params.height, e, {**MEASURE_DTYPES, **GUEST_DTYPES})
    return pl.concat([params, out], how="horizontal").with_columns(
        _nulls({**interval.dtypes(model), **evidence.COLUMNS})).select(
        *params.columns, "status", "reason", *model.metric_dtypes, *interval.dtypes(model), *MEASURE_COLUMNS,
        *evidence.COLUMNS, *GUEST_COLUMNS)


BACKENDS: dict[str, Backend] = {
    MODELED: Backend(name=MODELED, chunk_points=model_chunk_points, digest_inputs=lambda spec: {},
                     rows=model_rows, placement=SHARED,
                     statuses=lambda model, points, profile: evaluate(model, points, profile).select("status", "reason")),
    MEASURED: Backend(name=MEASURED, chunk_points=lambda spec, model: MEASURED_CHUNK_POINTS,
                        digest_inputs=measured_digest_inputs, rows=measured_rows, placement=NODE_ALONE),
    # A guest is one QEMU process on one CPU (TCG), so kernel chunks share a node like model chunks.
    KERNEL: Backend(name=KERNEL, chunk_points=lambda spec, model: KERNEL_CHUNK_POINTS,
                      digest_inputs=kernel_digest_inputs, rows=guest_rows, placement=SHARED),
}
