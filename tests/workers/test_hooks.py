"""workers.hooks: the polars steps a model's own findings share with the declared Medians."""

from __future__ import annotations

import polars as pl

from workers import hooks


def test_medians_take_the_median_its_bar_and_any_flag_per_group():
    """Per group: the median of the (scaled) metric, the medians of its bar's ends, the rows, any flag."""
    lf = pl.DataFrame({"g": ["a", "a", "b"], "metric_x": [1.0, 3.0, 5.0], "lo_x": [0.5, 2.5, 4.0],
                       "hi_x": [1.5, 3.5, 6.0], "metric_f": [False, True, False]}).lazy()
    df = hooks.medians(lf, "metric_x", [pl.col("g")], bar=("lo_x", "hi_x"), scale=lambda v: v * 2,
                       flags=("metric_f",)).sort("g")
    assert df.rows() == [("a", 4.0, 3.0, 5.0, 2, True), ("b", 10.0, 8.0, 12.0, 1, False)]
    gs = hooks.groups(df, lambda r: (r["g"], r["g"].upper()), ("metric_f",))
    assert [(g.at, g.text, g.value, g.n, g.bar, dict(g.flags)) for g in gs] == [
        ("a", "A", 4.0, 2, (3.0, 5.0), {"metric_f": True}), ("b", "B", 10.0, 1, (8.0, 12.0), {"metric_f": False})]


def test_a_group_without_a_median_is_left_out_and_a_bar_absent_from_the_rows_is_none():
    """A null median drops its group; bar columns the rows lack give no bar."""
    lf = pl.DataFrame({"g": [1, 2], "metric_x": [None, 2.0]}, schema={"g": pl.Int64, "metric_x": pl.Float64}).lazy()
    gs = hooks.groups(hooks.medians(lf, "metric_x", [pl.col("g")], bar=("lo_x", "hi_x")), lambda r: (r["g"], ""))
    assert [(g.at, g.bar) for g in gs] == [(2, None)]


def test_pick_the_largest_smallest_first_last_or_all():
    """max / min by median (ties: the lowest group value), first / last by group value, all; None of none."""
    gs = [hooks.Group(at=v, text=str(v), value=m, n=1) for v, m in ((1, 2.0), (2, 5.0), (3, 5.0), (4, 1.0))]
    assert [hooks.pick(gs, w).at for w in ("max", "min", "first", "last")] == [2, 4, 1, 4]
    assert hooks.pick(gs, "all") == gs and hooks.pick([], "max") is None


def test_resolve_imports_a_reference_and_keeps_a_function():
    """"package.module:function" is imported on use; a function is returned as it is."""
    assert hooks.resolve("workers.hooks:pick") is hooks.pick and hooks.resolve(len) is len
