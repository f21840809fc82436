"""The `model` row source: the model's own answer at each point, with its error bar and what it rests on."""

from __future__ import annotations

import polars as pl

from . import evidence, interval
from .dataset import MODELED
from .evaluate import error_rows, evaluate
from .model import Model
from .profiles import Profile
from .source import SHARED, Backend

# Modeled chunks are sized by their measured cost (sweeps.run.cost); where none is known (plan() alone), by
# the model's declared points_per_second: about this many seconds of its own rows.
TARGET_SECONDS = 0.25
MAX_CHUNK_POINTS = 1_000_000  # bounds a worker's memory for one chunk


def chunk_points(model: Model) -> int:
    """~TARGET_SECONDS of the model's work at its declared points_per_second, at most MAX_CHUNK_POINTS."""
    return max(1, min(MAX_CHUNK_POINTS, int(model.points_per_second * TARGET_SECONDS)))


def rows(model: Model, params: pl.DataFrame, profile: Profile, settings: None = None) -> pl.DataFrame:
    """The model's evaluation of the points (workers.evaluate: an exception gives error rows) with each
    answer's error bar (workers.interval) and what it rests on (workers.evidence)."""
    out = evaluate(model, params, profile)
    labels = evidence.label(model, profile, out)
    try:
        bars = interval.bars(model, profile, out, labels["evidence"])
    except Exception as e:  # noqa: BLE001 - a model that fails under a refit fails the chunk's rows, not the chunk
        return pl.concat([params, error_rows(model, params.height, e)], how="horizontal")
    return pl.concat([out, bars, _build(model, profile, out), labels], how="horizontal")


def _build(model: Model, profile: Profile, out: pl.DataFrame) -> pl.DataFrame:
    """kernel_build: the build whose instruction costs priced a row's count of the kernel's work (KernelCheck.work),
    on the rows that have one; null on the others, and on every row of a model that counts none."""
    build = model.kernel.priced_build(profile) if model.kernel is not None else None
    if build is None:
        return pl.DataFrame({"kernel_build": pl.Series([None] * out.height, dtype=pl.Utf8)})
    counted = pl.any_horizontal(pl.col(m).is_not_null() for m in model.kernel.work)
    return out.select(pl.when(counted).then(pl.lit(build)).alias("kernel_build"))


def statuses(model: Model, points: pl.DataFrame, profile: Profile) -> pl.DataFrame:
    """Each point's status and reason, as `memsweep plan` counts them (no bars, no evidence)."""
    return evaluate(model, points, profile).select("status", "reason")


BACKEND = Backend(name=MODELED, rows=rows, chunk_points=chunk_points, placement=SHARED, statuses=statuses)
