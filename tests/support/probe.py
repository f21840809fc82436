"""A test-only model, registered by importing this module (spec key `plugins`).

It makes chunks as slow or as failing as a test needs; the shipped models are
never stand-ins for it.
"""

from __future__ import annotations

import time

import polars as pl

from workers.axes import Axis
from workers.model import Metric, Model
from workers.registry import register


class ProbeModel(Model):
    name = "probe"
    version = "1"
    description = "test-only: i squared, with an optional delay per chunk and an optional failure"
    axes = (
        Axis(name="i", kind="int", unit="", default=0, doc="an integer"),
        Axis(name="delay_ms", kind="float", unit="ms", default=0.0, doc="sleep per chunk"),
        Axis(name="explode", kind="bool", unit="", default=False, doc="raise when a chunk holds such a point"),
    )
    metrics = (
        Metric(column="metric_i_squared", dtype=pl.Int64,
               doc="i * i (null when i is negative: such a point is infeasible)"),
        Metric(column="metric_half_i", dtype=pl.Float64, doc="i / 2"),
    )
    headline = "metric_i_squared"
    points_per_second = 1e6
    infeasible = ((pl.col("param_i") < 0, "i is negative: the probe has no square for it"),)

    def evaluate(self, points: pl.DataFrame, profile) -> pl.DataFrame:
        time.sleep(float(points["param_delay_ms"].max()) / 1000.0)
        if points["param_explode"].any():
            raise RuntimeError("the probe model was asked to explode")
        i = pl.col("param_i")
        return points.select(pl.when(i >= 0).then(i * i).alias("metric_i_squared"), (i / 2).alias("metric_half_i"))


MODEL = register(ProbeModel())


# A sweep of probe points 0..last, each taking `delay` ms, in chunks of 10 (format name=, last=, delay=).
SPEC = """name = "{name}"
models = ["probe"]
plugins = ["tests.support.probe"]
chunk_points = 10
[axes.probe]
i = {{ from = 0, to = {last}, step = 1 }}
delay_ms = [{delay}]
"""

