"""Model objects that each break one rule of the contract, for fake `memsweep.models` entry points
(tests/workers/test_registry.py, tests/sweeps/test_cli.py). Nothing registers them on import."""

from __future__ import annotations

import polars as pl

from workers.axes import Axis
from workers.model import Comparison, Figure, Metric, Model

X = Axis(name="x", kind="int", unit="", default=0, doc="an integer")


class Good(Model):
    name = "good"
    version = "1"
    axes = (X,)
    metrics = (Metric(column="metric_y", dtype=pl.Int64, doc="x + 1", better="lower"),)
    headline = "metric_y"
    comparison = Comparison(axis="x", baseline=0, metric="metric_y", label="x")
    best_keys = ("x",)
    value_labels = {"x": {0: "zero"}}

    def evaluate(self, points: pl.DataFrame, profile) -> pl.DataFrame:
        return points.select(pl.lit("ok").alias("status"), pl.lit(None, dtype=pl.Utf8).alias("reason"),
                             (pl.col("param_x") + 1).alias("metric_y"))


class Twin(Good):
    """Another model that calls itself "good"."""


def variant(**attrs) -> Model:
    """A Good model with some class attributes replaced (`figures`: the tuple figures() returns)."""
    figures = attrs.pop("figures", None)
    if figures is not None:
        attrs["figures"] = lambda self: figures
    return type("Variant", (Good,), attrs)()


def figure(**kw) -> Figure:
    return Figure(**{"id": "good/one", "model": "good", "metric": "metric_y", "published": 1.0, "unit": "",
                     "params": {"x": 1}, "source": "made up", **kw})


GOOD = Good()
TWIN = Twin()
NOT_A_MODEL = {"name": "good"}
BAD_NAME = variant(name="Good-Model")
EMPTY_NAME = variant(name="")
NO_AXES = variant(axes=())
DUPLICATE_AXES = variant(axes=(X, X))
METRICS_AS_MAPPING = variant(metrics={"metric_y": pl.Int64})
UNPREFIXED_METRIC = variant(metrics=(Metric(column="y", dtype=pl.Int64, doc="x + 1"),))
BAD_DTYPE = variant(metrics=(Metric(column="metric_y", dtype="Int64", doc="x + 1"),))
UNDOCUMENTED_METRIC = variant(metrics=(Metric(column="metric_y", dtype=pl.Int64, doc=" "),))
BAD_BETTER = variant(metrics=(Metric(column="metric_y", dtype=pl.Int64, doc="x + 1", better="smaller"),))
UNKNOWN_HEADLINE = variant(headline="metric_z")
COMPARISON_OF_UNKNOWN_AXIS = variant(comparison=Comparison(axis="strategy", baseline=0, metric="metric_y", label="x"))
COMPARISON_OF_UNKNOWN_METRIC = variant(comparison=Comparison(axis="param_x", baseline=0, metric="metric_z",
                                                             label="x"))
BEST_KEY_NOT_AN_AXIS = variant(best_keys=("x", "y"))
LABELS_OF_UNKNOWN_AXIS = variant(value_labels={"param_x": {0: "zero"}})
FIGURE_OF_ANOTHER_MODEL = variant(figures=(figure(model="young"),))
FIGURE_WITH_UNKNOWN_AXIS = variant(figures=(figure(params={"x": 1, "namespace_size": "1GiB"}),))
