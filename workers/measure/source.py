"""The `measured` row source: the model's user-space analog run on the worker (workers.measure.measure)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import polars as pl

from workers.dataset import MEASURED
from workers.evaluate import error_rows
from workers.model import Model
from workers.profiles import Profile
from workers.source import NODE_ALONE, Backend, Settings

from .measure import measure
from .settings import MeasureSettings

# A measured point takes ~0.1-10 s; the points of a chunk are sampled round-robin (workers.measure), so
# more points spread each one's samples over more time, fewer resume more finely.
CHUNK_POINTS = 8


def rows(model: Model, params: pl.DataFrame, profile: Profile, settings: MeasureSettings) -> pl.DataFrame:
    """The points measured on this node; a failure of the measure backend becomes error rows, as with models."""
    try:
        out = measure(model, params, profile, settings)
    except Exception as e:  # noqa: BLE001 - a broken measurement must not lose the chunk
        out = error_rows(model, params.height, e)
    return pl.concat([params, out], how="horizontal")


def _load(table: dict, base_dir: Path | None) -> MeasureSettings:
    return MeasureSettings.from_table(table)  # MeasureSettingsError names the key


def _plan(settings: MeasureSettings, chunks: int) -> dict:
    """Its settings, and the least time its chunks take on one node: each samples for span_ms at least."""
    return {**asdict(settings), "min_seconds_one_node": chunks * settings.span_ms / 1000}


def _plan_text(m: dict, secs) -> str:
    per = ", ".join(f"{k} {n:,}" for k, n in m["per_model"].items())
    return (f"{m['points']:,} points ({per}) in {m['chunks']:,} chunks, not measured here: "
            f"their time depends on repeats ({m['repeats']}), warmup ({m['warmup']}) and span_ms "
            f"({m['span_ms']}) and on each point's own run time. A chunk's sampling rounds last at least "
            f"span_ms, one chunk at a time per node: at least {secs(m['min_seconds_one_node'])} on one "
            "node. Each node decides which points it can measure (the rest are infeasible rows); their parts "
            "are not in the dataset size above.")


BACKEND = Backend(
    name=MEASURED, rows=rows, chunk_points=lambda model: CHUNK_POINTS, placement=NODE_ALONE,
    settings=Settings(table="measure", load=_load, identity=asdict, in_every_identity=True, plan=_plan,
                      plan_text=_plan_text),
)
