"""The model contract's value objects: Metric, Comparison, what Model derives from them and its short forms."""

import numpy as np
import polars as pl
import pytest

from workers import get_model
from workers.calibrate import figure_frame
from workers.evaluate import evaluate
from workers.axes import STRUCT_PAGE_SIZE
from workers.findings import MAX
from workers.model import Axis, Comparison, LastPoints, Lines, Medians, Metric, Model
from workers.plots import Cond, Series, X
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
    kept = kept if isinstance(kept, tuple) else (kept,)  # memmap keeps a tuple, pfnmap its inputs
    arrays = [v for part in kept if isinstance(part, dict) for v in part.values() if isinstance(v, np.ndarray)]
    assert arrays and not any(v.flags.writeable for v in arrays)
    for frame, profile, got in ((figures, seed, again), (figures.head(3), moved, after_others)):
        model._points._last = None
        assert got.equals(evaluate(model, frame, profile))


class Short(Model):
    """A model declared in the short forms a plugin uses: a shared axis by name, the report and a figure's
    parts as dicts, rules for infeasible points, and metrics returned as arrays by column."""

    name = "short"
    axes = ("struct_page_size", Axis(name="n", kind="int", default=1, doc="steps"))
    metrics = (Metric(column="metric_time_ns", dtype=pl.Float64, doc="n x P", better="lower"),
               Metric(column="metric_bytes", dtype=pl.Int64, doc="n x P"))
    headline = "metric_time_ns"
    infeasible = ((pl.col("param_n") < 0, "n must not be negative"),)
    report = dict(comparison=dict(axis="n", baseline=1), plots=(
        Lines(id="t", title="t", caption="c", x=dict(column="param_n", scale="log"), y="metric_time_ns",
              hue=dict(column="param_struct_page_size", order=(64,)), where={"param_n": 2}),),
        findings=(Medians(id="m", figure="t", text="{most}", metric="metric_time_ns", by="param_n",
                          quote=(("most", MAX),), where={"param_struct_page_size": 64}),))

    def evaluate(self, points, profile):
        n, p = points["param_n"].to_numpy(), points["param_struct_page_size"].to_numpy()
        return {"metric_time_ns": n * p, "metric_bytes": n * p}  # int64 arrays: the host casts to Float64


def test_the_short_forms_become_the_contract_objects():
    """A shared axis named is the shared Axis; the report dict a Report whose comparison reads the headline
    and names the axis; a figure's dicts its X and Series, a `where` dict equalities."""
    model = Short()
    assert model.axes[0] is STRUCT_PAGE_SIZE
    assert model.report.comparison == Comparison(axis="n", baseline=1, metric="metric_time_ns", label="n")
    plot, finding = model.report.plots[0], model.report.findings[0]
    assert plot.x == (X("param_n", "log"),) and plot.hue == Series("param_struct_page_size", order=(64,))
    assert plot.where == (Cond("param_n", "==", 2),)
    assert finding.where == (Cond("param_struct_page_size", "==", 64),)


def test_the_host_builds_the_rows_from_the_arrays_a_model_returns():
    """status and reason from the model's rules, metrics in their declared dtypes, nulled where not ok."""
    points = pl.DataFrame({"param_struct_page_size": [64, 64], "param_n": [3, -1]})
    out = evaluate(Short(), points, load_profile("seed"))
    assert out["status"].to_list() == ["ok", "infeasible"]
    assert out["reason"].to_list() == [None, "n must not be negative"]
    assert out.schema["metric_time_ns"] == pl.Float64 and out["metric_time_ns"].to_list() == [192.0, None]
    assert out["metric_bytes"].to_list() == [192, None]


def test_a_model_may_give_the_reason_itself():
    """A "reason" entry (null where feasible) takes the place of the rules."""
    class Told(Short):
        def evaluate(self, points, profile):
            return {**super().evaluate(points, profile), "reason": ["told so", None]}

    out = evaluate(Told(), pl.DataFrame({"param_struct_page_size": [64, 64], "param_n": [3, -1]}),
                   load_profile("seed"))
    assert out["status"].to_list() == ["infeasible", "ok"] and out["reason"].to_list() == ["told so", None]


def test_a_shared_axis_named_wrong_is_refused_naming_the_shared_ones():
    """A string in `axes` must be a shared axis's name; the error names the class, the string and the choices."""
    with pytest.raises(ValueError, match=r"Typo.axes names 'struct_pagesize', which is no shared axis; a name "
                                         r"must be one of \['align', 'compound_order', 'namespace_size', "
                                         r"'struct_page_size'\]"):
        type("Typo", (Short,), {"axes": ("struct_pagesize",)})
