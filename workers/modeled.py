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
    return pl.concat([out, bars, labels], how="horizontal")


def statuses(model: Model, points: pl.DataFrame, profile: Profile) -> pl.DataFrame:
    """Each point's status and reason, as `memsweep plan` counts them (no bars, no evidence)."""
    return evaluate(model, points, profile).select("status", "reason")


BACKEND = Backend(name=MODELED, rows=rows, chunk_points=chunk_points, placement=SHARED, statuses=statuses)
