"""The model contract's value objects: Metric, Comparison, and what Model derives from them."""

import polars as pl

from workers import get_model
from workers.model import Comparison, Metric


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
