"""The model contract's value objects: Metric, Comparison, and what Model derives from them."""

import numpy as np
import polars as pl
import pytest

from workers import get_model
from workers.calibrate import figure_frame
from workers.evaluate import evaluate
from workers.model import Comparison, LastPoints, Metric
from workers.profiles import load_profile


def test_a_metric_takes_its_unit_from_its_column_name():
    """metric_init_ms is in ms, metric_gbs in GB/s: the dataset's unit rule, not a second declaration."""
    assert Metric(column="metric_init_ms", dtype=pl.Float64, doc="t").unit == "ms"
    gbs = Metric(column="metric_gbs", dtype=pl.Float64, doc="bw", better="higher")
    assert gbs.higher_is_better and not Metric(column="metric_heads", dtype=pl.Int64, doc="n").higher_is_better


def test_metric_dtypes_keep_the_declaration_order():
    """Model.metric_dtypes: column -> dtype, in the order the model declares its metrics."""
    model = get_model("young")
    assert list(model.metric_dtypes) == [m.column for m in model.metrics]
    assert model.metric_dtypes["metric_scan_ms"] == pl.Float64 and model.metric("metric_scan_ms").better == "lower"


def test_comparison_axis_is_an_axis_name_or_its_column():
    """Comparison.column is the param column either way."""
    assert Comparison(axis="strategy", baseline="slow", metric="metric_init_ms", label="s").column == \
        Comparison(axis="param_strategy", baseline="slow", metric="metric_init_ms", label="s").column == \
        "param_strategy"


def test_value_labels_name_declared_values_only():
    """pfnmap's order 9 is "PMD (order 9)" by axis name or column; other values and axes have none."""
    pfnmap = get_model("pfnmap")
    assert pfnmap.value_label("compound_order", 9) == pfnmap.value_label("param_compound_order", 9) == "PMD (order 9)"
    assert pfnmap.value_label("compound_order", 5) is None and pfnmap.value_label("arch", "x86_64") is None
    assert pfnmap.value_label("compound_order", [9]) is None  # an unhashable value has no name


def test_last_points_derives_again_for_other_points_and_keeps_only_small_frames():
    """LastPoints gives what it derived for an equal frame (equal by value, not identity), derives anew for
    a frame that differs in one value, and keeps nothing of a frame larger than its rows."""
    calls = []

    def derive(points):
        calls.append(points.height)
        return object()

    memo = LastPoints(rows=3)
    a = pl.DataFrame({"param_x": [1, 2, 3]})
    first = memo.get(a, derive)
    assert memo.get(a.clone(), derive) is first and calls == [3]
    assert memo.get(a.with_columns(pl.col("param_x").set_sorted()), derive) is first  # same values
    changed = memo.get(pl.DataFrame({"param_x": [1, 2, 4]}), derive)
    assert changed is not first and calls == [3, 3]
    big = pl.DataFrame({"param_x": [1, 2, 3, 4]})
    assert memo.get(big, derive) is not memo.get(big, derive) and calls == [3, 3, 4, 4]


@pytest.mark.parametrize("name", ["memmap", "pfnmap"])
def test_a_model_that_keeps_its_last_points_answers_as_a_fresh_one(name):
    """memmap and pfnmap keep what their figures' points derive (a fit evaluates them thousands of times):
    an evaluation after other points and other costs equals one of a fresh interpreter's (recomputed here
    with the memo emptied), and the arrays they keep cannot be written."""
    model, seed = get_model(name), load_profile("seed")
    free = model.calibration.free_params[0]
    moved = seed.with_values({(free.section, free.key): free.upper}, source="test")
    figures = figure_frame(model, model.calibration.figures)
    evaluate(model, figures, seed)
    after_others = evaluate(model, figures.head(3), moved)
    again = evaluate(model, figures, seed)
    kept = model._points._last[1]
    arrays = [v for part in kept if isinstance(part, dict) for v in part.values() if isinstance(v, np.ndarray)]
    assert arrays and not any(v.flags.writeable for v in arrays)
    for frame, profile, got in ((figures, seed, again), (figures.head(3), moved, after_others)):
        model._points._last = None
        assert got.equals(evaluate(model, frame, profile))
