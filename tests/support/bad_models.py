"""Model objects that each break one rule of the contract, for fake `memsweep.models` entry points
(tests/workers/test_registry.py, tests/sweeps/test_cli.py). Nothing registers them on import."""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from workers.axes import Axis
from workers.findings import MIN, Medians
from workers.hooks import Hook
from workers.model import Assumption, Calibration, Comparison, CostOrder, Figure, Measurement, Metric, Model, Report
from workers.plots import Cond, Lines, X, Y

AXIS_X = Axis(name="x", kind="int", unit="", default=0, doc="an integer")


class Good(Model):
    name = "good"
    version = "1"
    axes = (AXIS_X,)
    metrics = (Metric(column="metric_y", dtype=pl.Int64, doc="x + 1", better="lower"),)
    headline = "metric_y"
    report = Report(comparison=Comparison(axis="x", baseline=0, metric="metric_y", label="x"), best_keys=("x",),
                    value_labels={"x": {0: "zero"}})

    def evaluate(self, points: pl.DataFrame, profile) -> pl.DataFrame:
        return points.select((pl.col("param_x") + 1).alias("metric_y"))


class Twin(Good):
    """Another model that calls itself "good"."""


def variant(**attrs) -> Model:
    """A Good model with some class attributes replaced."""
    return type("Variant", (Good,), attrs)()


def reporting(**fields) -> Model:
    """A Good model with some fields of its report replaced."""
    return variant(report=replace(Good.report, **fields))


def calibrating(**fields) -> Model:
    """A Good model with a calibration of these fields."""
    return variant(calibration=Calibration(**fields))


def figure(**kw) -> Figure:
    return Figure(**{"id": "good/one", "model": "good", "metric": "metric_y", "published": 1.0, "unit": "",
                     "params": {"x": 1}, "source": "made up", **kw})


GOOD = Good()
# memmap's Int64 count as a float: the clash between memmap and copy that broke one scan of a sweep folder
LINES_PARTIAL_AS_FLOAT = variant(name="other", metrics=(
    Metric(column="metric_y", dtype=pl.Int64, doc="x + 1", better="lower"),
    Metric(column="metric_lines_partial", dtype=pl.Float64, doc="lines partly covered, averaged"),
))
TWIN = Twin()
NOT_A_MODEL = {"name": "good"}
BAD_NAME = variant(name="Good-Model")
EMPTY_NAME = variant(name="")
NO_AXES = variant(axes=())
DUPLICATE_AXES = variant(axes=(AXIS_X, AXIS_X))
METRICS_AS_MAPPING = variant(metrics={"metric_y": pl.Int64})
UNPREFIXED_METRIC = variant(metrics=(Metric(column="y", dtype=pl.Int64, doc="x + 1"),))
BAD_DTYPE = variant(metrics=(Metric(column="metric_y", dtype="Int64", doc="x + 1"),))
UNDOCUMENTED_METRIC = variant(metrics=(Metric(column="metric_y", dtype=pl.Int64, doc=" "),))
BAD_BETTER = variant(metrics=(Metric(column="metric_y", dtype=pl.Int64, doc="x + 1", better="smaller"),))
UNKNOWN_HEADLINE = variant(headline="metric_z")
COMPARISON_OF_UNKNOWN_AXIS = reporting(comparison=Comparison(axis="strategy", baseline=0, metric="metric_y", label="x"))
COMPARISON_OF_UNKNOWN_METRIC = reporting(comparison=Comparison(axis="param_x", baseline=0, metric="metric_z",
                                                               label="x"))
BEST_KEY_NOT_AN_AXIS = reporting(best_keys=("x", "y"))
LABELS_OF_UNKNOWN_AXIS = reporting(value_labels={"param_x": {0: "zero"}})
FIGURE_OF_ANOTHER_MODEL = calibrating(figures=(figure(model="young"),))
FIGURE_WITH_UNKNOWN_AXIS = calibrating(figures=(figure(params={"x": 1, "namespace_size": "1GiB"}),))
MEASUREMENT_OF_UNKNOWN_METRIC = variant(measurement=Measurement(planner="good.analog:plan", metric="metric_z"))
MEASUREMENT_NAMED_BY_UNKNOWN_AXIS = variant(measurement=Measurement(planner="good.analog:plan", metric="metric_y",
                                                                    id_axes=("x", "namespace_size")))
MEASUREMENT_WITHOUT_PLANNER_OR_REASON = variant(measurement=Measurement(metric="metric_y"))
MEASUREMENT_OF_UNKNOWN_CACHE = variant(measurement=Measurement(planner="good.analog:plan", metric="metric_y",
                                                               host_caches={("good", "llc_bytes"): "l3"}))


def medians(**kw) -> Medians:
    return Medians(**{"id": "y_by_x", "figure": "good_y", "metric": "metric_y", "by": "param_x",
                      "quote": (("low", MIN),), "text": "y is {low} at x = {low_at}.", **kw})


FINDING_OF_UNKNOWN_COLUMN = reporting(findings=(medians(metric="metric_z"),))
FINDING_WITH_UNKNOWN_PLACEHOLDER = reporting(findings=(medians(text="y is {high} at most."),))
FINDING_WITHOUT_FIGURE_ID = reporting(findings=(Hook(id="best_x", figure=3, call="tests.support.bad_models:medians"),))
TABLE_OF_A_BAD_CALL = reporting(tables=(Hook(id="y_by_z", title="y by z", call="tables.y by z"),))


def plot(**kw) -> Lines:
    return Lines(**{"id": "good_y", "title": "y vs x", "caption": "y.", "x": "param_x", "y": "metric_y",
                    "hue": "param_x", **kw})


PLOT_OF_UNKNOWN_COLUMN = reporting(plots=(plot(y="metric_z"),))
PLOT_NAMED_PARITY = reporting(plots=(plot(id="parity"),))
PLOT_WITH_UNKNOWN_SCALE = reporting(plots=(plot(x=X("param_x", scale="log3")),))
PLOT_WITH_UNKNOWN_OP = reporting(plots=(plot(where=(Cond("param_x", "=~", 1),)),))
PLOT_WITH_A_NUMBER_FOR_X = reporting(plots=(plot(x=3),))
PLOT_WITH_A_METRIC_PER_PANEL_WITHOUT_SPLIT = reporting(plots=(plot(y=Y({0: "metric_y"})),))
FIGURE_OF_A_BAD_CALL = reporting(plots=(Hook(id="good_best", title="best x", call="good:best x"),))
ORDER_OF_ONE_COST = calibrating(cost_orders=(CostOrder(lower="llc_gbs", higher="llc_gbs", why="made up"),))
ASSUMPTION_WITHOUT_TEXT = calibrating(assumptions=(Assumption(name="warm", text=" ", where=lambda rows, p: True),))
# Declarations of the optional parts set on the model itself, as models did before the parts existed.
PLOTS_ON_THE_MODEL = variant(plots=(plot(),))
FIGURES_AS_A_METHOD = variant(figures=lambda self: (figure(),))
