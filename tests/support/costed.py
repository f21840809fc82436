"""A test-only model with a default cost of its own (the model's `costs`), as a plugin declares one;
registered by importing this module (spec key `plugins`)."""

from __future__ import annotations

import polars as pl

from workers.axes import Axis
from workers.model import Metric, Model
from workers.profiles import Profile, Quantity
from workers.registry import register

STEP_NS = Quantity(value=2.0, unit="ns", source="assumed", note="test-only: the cost of one step")


class CostedModel(Model):
    name = "costed"
    version = "1"
    description = "test-only: i steps at the [costed] section's step_ns each"
    axes = (Axis(name="i", kind="int", unit="", default=0, doc="steps"),)
    metrics = (Metric(column="metric_time_ns", dtype=pl.Float64, doc="i x step_ns", better="lower"),)
    headline = "metric_time_ns"
    costs = {"step_ns": STEP_NS}

    def evaluate(self, points: pl.DataFrame, profile: Profile) -> pl.DataFrame:
        step_ns = float(profile.value(self.name, "step_ns"))
        return {"metric_time_ns": points["param_i"] * step_ns}


MODEL = register(CostedModel())
