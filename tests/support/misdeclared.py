"""A test-only plugin module that raises on import: its model's report dict misspells a field, which
Report refuses when the class is made (spec key `plugins`)."""

from __future__ import annotations

import polars as pl

from workers.model import Axis, Metric, Model


class Misdeclared(Model):
    name = "misdeclared"
    axes = (Axis(name="n", kind="int", default=1, doc="n"),)
    metrics = (Metric(column="metric_t_ns", dtype=pl.Float64, doc="n", better="lower"),)
    headline = "metric_t_ns"
    report = dict(comparsion=dict(axis="n", baseline=1))

    def evaluate(self, points, profile):
        return {"metric_t_ns": points["param_n"]}
