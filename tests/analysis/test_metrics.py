"""Metrics on small hand-built frames with known answers, and the published comparison."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl

from workers.profiles import load_profile
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis import metrics as M
from analysis.read import Sweep
from tests.analysis.conftest import write_sweep
from workers import get_model


def strategies_frame() -> pl.LazyFrame:
    """Three strategies at two sizes and two struct page sizes; `fast` is 4x / 2x faster than `slow`."""
    rows = []
    for size in (1, 2):
        for p in (64, 80):
            base = 100.0 * size * (1.25 if p == 80 else 1.0)
            rows += [
                {"param_strategy": "slow", "param_size": size, "param_p": p, "metric_ms": base},
                {"param_strategy": "mid", "param_size": size, "param_p": p, "metric_ms": base / 2},
                {"param_strategy": "fast", "param_size": size, "param_p": p, "metric_ms": base / (4 if p == 64 else 2)},
            ]
    rows.append({"param_strategy": "fast", "param_size": 3, "param_p": 64, "metric_ms": None})
    df = pl.DataFrame(rows).with_columns(pl.lit("ok").alias("status"))
    return df.with_columns(pl.when(pl.col("param_size") == 3).then(pl.lit("infeasible")).otherwise("status")
                           .alias("status")).lazy()


def test_speedup_is_baseline_over_variant_at_the_same_other_axes():
    """speedup = slow's time / the variant's time at equal size and struct page size."""
    sp = M.speedup(strategies_frame(), "param_strategy", "slow", "metric_ms", ["param_size", "param_p"]).collect()
    got = {(r["param_strategy"], r["param_size"], r["param_p"]): r["speedup"] for r in sp.iter_rows(named=True)}
    assert got[("slow", 1, 64)] == 1.0
    assert got[("mid", 2, 80)] == pytest.approx(2.0)
    assert got[("fast", 1, 64)] == pytest.approx(4.0)
    assert got[("fast", 2, 80)] == pytest.approx(2.0)
    assert ("fast", 3, 64) not in got  # infeasible rows are not compared


def test_speedup_of_a_higher_is_better_metric_is_variant_over_baseline():
    """For bandwidth-like metrics the ratio is inverted (variant / baseline)."""
    lf = pl.DataFrame({"status": ["ok"] * 2, "param_s": ["a", "b"], "metric_gbs": [2.0, 5.0]}).lazy()
    sp = M.speedup(lf, "param_s", "a", "metric_gbs", [], higher=True).collect().sort("param_s")
    assert sp["speedup"].to_list() == [1.0, 2.5]
    copy = get_model("copy")
    assert M.higher_is_better(copy, "metric_gbs") and not M.higher_is_better(copy, "metric_ns_per_copy")
    assert not M.higher_is_better(None, "metric_gbs")  # a model no longer registered declares nothing


def test_speedup_joins_on_null_auto_orders():
    """A null ("auto") compound order matches the baseline's null order."""
    lf = pl.DataFrame({"status": ["ok"] * 4, "param_strategy": ["slow", "fast"] * 2,
                       "param_compound_order": [None, None, 9, 9], "metric_ms": [10.0, 5.0, 8.0, 2.0]},
                      schema_overrides={"param_compound_order": pl.Int64}).lazy()
    sp = M.speedup(lf, "param_strategy", "slow", "metric_ms", ["param_compound_order"]).collect()
    fast = sp.filter(pl.col("param_strategy") == "fast").sort("param_compound_order", nulls_last=True)
    assert fast["speedup"].to_list() == [4.0, 2.0]


def test_best_by_picks_the_fastest_strategy_per_configuration():
    """The winner, its value and the runner-up's value per (size, P)."""
    best = M.best_by(strategies_frame(), "param_strategy", "metric_ms", ["param_size", "param_p"]).collect()
    rows = {(r["param_size"], r["param_p"]): r for r in best.iter_rows(named=True)}
    assert rows[(1, 64)]["best"] == "fast" and rows[(1, 64)]["best_value"] == 25.0
    assert rows[(1, 64)]["runner_up_value"] == 50.0
    assert rows[(2, 80)]["best"] in ("fast", "mid") and rows[(2, 80)]["best_value"] == 125.0
    assert best.height == 4


def test_best_by_maximizes_when_asked():
    """minimize=False picks the largest value."""
    best = M.best_by(strategies_frame(), "param_strategy", "metric_ms", ["param_size"], minimize=False).collect()
    assert best["best"].to_list() == ["slow", "slow"]


def test_growth_exponents_recover_power_laws():
    """y = 3 x is exponent 1, y = x^2 / 7 exponent 2, per series."""
    xs = [2.0 ** i for i in range(10, 20)]
    df = pl.DataFrame({"status": "ok", "s": ["lin"] * 10 + ["sq"] * 10,
                       "x": xs * 2, "y": [3 * x for x in xs] + [x * x / 7 for x in xs]})
    exps = M.growth_exponents(M.series_points(df.lazy(), "x", "y", ["s"]), ["s"]).sort("s")
    assert exps["exponent"].to_list() == pytest.approx([1.0, 2.0])
    assert exps["points"].to_list() == [10, 10]


def regimes(df: pl.DataFrame, x: str, y: str, by: list[str]) -> pl.DataFrame:
    return M.regimes_of(M.series_points(df, x, y, by), by)


def test_regime_change_point_is_found_where_the_slope_changes():
    """Linear up to 1 MiB, then quadratic: break at 1 MiB, slopes 1 then 2; a straight line has none."""
    xs = [2 ** i for i in range(12, 30)]
    knee = 2 ** 20
    y = [float(x) if x <= knee else knee * (x / knee) ** 2 for x in xs]
    df = pl.DataFrame({"s": ["knee"] * len(xs) + ["line"] * len(xs), "x": xs * 2, "y": y + [5.0 * x for x in xs]})
    out = regimes(df, "x", "y", ["s"]).sort("s")
    knee_row, line_row = out.row(0, named=True), out.row(1, named=True)
    assert knee_row["changes"] and knee_row["break_x"] == knee
    assert knee_row["slope_before"] == pytest.approx(1.0) and knee_row["slope_after"] == pytest.approx(2.0)
    assert not line_row["changes"] and line_row["break_x"] is None
    assert line_row["slope_before"] == pytest.approx(1.0)


@settings(max_examples=25, deadline=None)
@given(k=st.integers(min_value=3, max_value=12), a=st.floats(0.2, 1.5), b=st.floats(1.8, 3.0))
def test_regime_change_finds_any_interior_knee(k, a, b):
    """For y = x^a then x^b (continuous at the k-th point), the break is that point."""
    xs = [2 ** i for i in range(16)]
    knee = xs[k]
    y = [x ** a if x <= knee else knee ** a * (x / knee) ** b for x in xs]
    out = regimes(pl.DataFrame({"x": xs, "y": y}), "x", "y", [])
    assert out["break_x"][0] == knee
    assert out["slope_after"][0] - out["slope_before"][0] == pytest.approx(b - a, rel=1e-6)


def test_regimes_leave_out_short_series():
    """Series with fewer than four points get no break."""
    out = regimes(pl.DataFrame({"s": ["a"] * 3, "x": [1, 2, 4], "y": [1.0, 2.0, 8.0]}), "x", "y", ["s"])
    assert out.height == 0 and "break_x" in out.columns


def test_speedup_summary_from_the_per_variant_frame():
    """min / median / max of baseline / variant per variant over configurations where both are ok."""
    wide = pl.DataFrame({"v0": [100.0, 200.0, 125.0, 250.0, None], "v1": [25.0, 50.0, 62.5, 125.0, 10.0]})
    summary = {r["s"]: r for r in M.speedup_summary(["slow", "fast"], wide, "s", "slow", higher=False)
               .iter_rows(named=True)}
    assert (summary["fast"]["min"], summary["fast"]["max"]) == (pytest.approx(2.0), pytest.approx(4.0))
    assert summary["fast"]["median"] == pytest.approx(3.0) and summary["fast"]["configurations"] == 4
    assert summary["slow"]["median"] == 1.0
    up = M.speedup_summary(["slow", "fast"], wide, "s", "slow", higher=True).row(1, named=True)
    assert up["max"] == pytest.approx(0.5)
    assert M.speedup_summary(["fast"], wide, "s", "slow", higher=False).height == 0


def test_reason_counts():
    """Non-ok rows per reason, the commonest first."""
    lf = pl.DataFrame({"status": ["ok", "infeasible", "infeasible", "error", "infeasible"],
                       "reason": [None, "too small", "too small", "boom", "odd"]}).lazy()
    reasons = M.reason_counts(lf).collect()
    assert reasons.row(0) == ("infeasible", "too small", 2) and reasons.height == 3


def test_headline_metric_prefers_the_declared_headline_then_a_time():
    """memmap -> its headline metric_init_ms; an unknown model -> its first _ms / _ns metric."""
    assert M.headline_metric(get_model("memmap"), ["metric_heads", "metric_init_ms"]) == "metric_init_ms"
    assert M.headline_metric(get_model("pfnmap"), ["metric_setup_us", "metric_ns_per_load"]) == "metric_ns_per_load"
    assert M.headline_metric(None, ["metric_count", "metric_walk_ns", "metric_x_ms"]) == "metric_x_ms"
    assert M.headline_metric(None, ["metric_count"]) == "metric_count"
    assert M.headline_metric(None, []) is None


def test_published_comparison_matches_figure_points_and_computes_errors(tmp_path):
    """A figure's row is found by its params (others at defaults); error = (model - published) / published."""
    young = get_model("young")
    figs = {f.id: f for f in young.calibration.figures}
    per_pte = figs["young/arm64/per_pte"]
    row = {a.column: a.canonical(per_pte.params.get(a.name, a.default)) for a in young.axes}
    other = {**row, "param_compound_order": 6}
    df = pl.DataFrame([row, other], schema={a.column: a.dtype for a in young.axes}).with_columns(
        pl.lit("ok").alias("status"), pl.Series("metric_scan_ms", [517.0, 1.0]),
        pl.Series("metric_time_reduction_vs_per_pte", [0.0, 0.0]))
    sweep = Sweep(write_sweep(tmp_path, "pub", {"young": df}))
    out = {r["id"]: r for r in M.published_comparison(sweep).iter_rows(named=True)}
    validation = {v["id"] for v in load_profile("seed").validation if v["model"] == "young"}
    assert set(out) == set(figs) | validation
    assert {i for i, r in out.items() if r["use"] == "validation"} == validation  # the profile's, apart
    hit = out["young/arm64/per_pte"]
    assert hit["in_sweep"] and hit["rows"] == 1 and hit["model_value"] == 517.0
    assert hit["error"] == pytest.approx((517.0 - 470.0) / 470.0)
    assert not out["young/arm64/batched"]["in_sweep"] and out["young/arm64/batched"]["error"] is None
    assert math.isclose(out["young/x86_64/improvement"]["published"], 0.15)


def test_measured_vs_model_pairs_rows_by_point_id():
    """measured / model per point present on both sides; unmeasured and infeasible points drop out."""
    model = pl.DataFrame({"point_id": [1, 2, 3], "status": "ok", "param_s": ["a", "b", "c"],
                          "metric_ms": [10.0, 20.0, 30.0]}).lazy()
    measured = pl.DataFrame({"point_id": [1, 2, 3], "status": ["ok", "ok", "infeasible"],
                             "param_s": ["a", "b", "c"], "metric_ms": [15.0, None, 1.0]}).lazy()
    out = M.measured_vs_model(model, measured, "metric_ms", ["param_s"]).collect()
    assert out.rows() == [(1, "a", 15.0, 10.0, 1.5)]


def test_published_comparison_adds_measured_values_when_measured(tmp_path):
    """A measured row at a figure's point fills measured_value and measured_error."""
    young = get_model("young")
    fig = next(f for f in young.calibration.figures if f.id == "young/arm64/batched")
    row = {a.column: a.canonical(fig.params.get(a.name, a.default)) for a in young.axes}
    df = pl.DataFrame([row, row], schema={a.column: a.dtype for a in young.axes}).with_columns(
        pl.lit("ok").alias("status"), pl.Series("source", ["model", "measured"]),
        pl.Series("metric_scan_ms", [180.0, 90.0]), pl.Series("metric_time_reduction_vs_per_pte", [0.5, None]))
    out = {r["id"]: r for r in M.published_comparison(Sweep(write_sweep(tmp_path, "m", {"young": df})))
           .iter_rows(named=True)}
    hit = out["young/arm64/batched"]
    assert (hit["model_value"], hit["error"], hit["measured_value"]) == (180.0, 0.0, 90.0)
    assert hit["measured_error"] == pytest.approx(-0.5) and hit["measured_rows"] == 1


def test_best_by_keeps_ties():
    """Equal times (within a relative TIE_RTOL) tie: the tie lists both, the runner-up is the next distinct
    value."""
    rows = [{"param_order": o, "param_size": s, "metric_ns": t}
            for s, times in ((1, (100.0, 100.0 * (1 + 1e-12), 150.0)), (2, (100.0, 60.0, 150.0)),
                             (3, (70.0, 70.0, 70.0)))
            for o, t in zip((0, 9, 18), times)]
    lf = pl.DataFrame(rows).with_columns(pl.lit("ok").alias("status")).lazy()
    best = M.best_by(lf, "param_order", "metric_ns", ["param_size"]).collect()
    by_size = {r["param_size"]: r for r in best.iter_rows(named=True)}
    assert by_size[1]["tied"] == [0, 9] and by_size[1]["runner_up_value"] == 150.0 and by_size[1]["n_tied"] == 2
    assert by_size[2]["tied"] == [9] and by_size[2]["best"] == 9 and by_size[2]["runner_up_value"] == 100.0
    assert by_size[3]["tied"] == [0, 9, 18] and by_size[3]["runner_up_value"] is None


def test_ties_best_is_relative_to_the_best():
    """Within a relative TIE_RTOL of the best ties, beyond does not; a best of 0 ties only 0."""
    assert M.ties_best(100.0 * (1 + M.TIE_RTOL / 2), 100.0) and not M.ties_best(100.0 * (1 + 2 * M.TIE_RTOL), 100.0)
    assert M.ties_best(0.0, 0.0) and not M.ties_best(1e-300, 0.0)


def test_tied_best_picks_the_best_per_configuration():
    """Per row of a per_variant frame: the best column (nulls not ok), its value, the columns tying it;
    maximizing picks the largest; a row with no ok variant has an infinite best and no tie."""
    wide = pl.DataFrame({"v0": [100.0, 100.0, None], "v1": [100.0 * (1 + 1e-12), 60.0, None],
                         "v2": [150.0, None, None]})
    pick, best, near = M.tied_best(wide, ["v0", "v1", "v2"], minimize=True)
    assert pick[:2].tolist() == [0, 1] and best[:2].tolist() == [100.0, 60.0] and best[2] == math.inf
    assert near.tolist() == [[True, True, False], [False, True, False], [False, False, False]]
    pick, best, near = M.tied_best(wide, ["v0", "v1", "v2"], minimize=False)
    assert pick[:2].tolist() == [2, 0] and near[1].tolist() == [True, False, False]


def test_win_counts_count_ties_apart():
    """A tie is its own outcome in the win counts, not a win of either; configurations without an ok
    variant are not counted."""
    wide = pl.DataFrame({"v0": [100.0, 100.0, 70.0, None], "v1": [100.0 * (1 + 1e-12), 60.0, 70.0, None],
                         "v2": [150.0, 150.0, 70.0, None]})
    wins = M.win_counts([0, 9, 18], wide, minimize=True)
    outcomes = {tuple(r["tied"]): (r["tie"], r["configurations"]) for r in wins.iter_rows(named=True)}
    assert outcomes == {(0, 9): (True, 1), (9,): (False, 1), (0, 9, 18): (True, 1)}
    assert wins["share"].sum() == pytest.approx(1.0)


def test_series_points_and_growth_exponents_match_the_row_wise_fit():
    """The sums per (series, x) give the same exponents as a least-squares fit of the rows, repeated rows too."""
    xs = [2.0 ** i for i in range(10, 16)]
    df = pl.DataFrame({"status": "ok", "s": ["a"] * 12 + ["b"] * 6, "x": xs * 3,
                       "y": [3 * x for x in xs] * 2 + [x ** 1.5 for x in xs]})
    pts = M.series_points(df.lazy(), "x", "y", ["s"])
    assert pts["s"].to_list() == ["a", "b"] and pts["_w"].to_list()[0] == [2] * 6
    got = M.growth_exponents(pts, ["s"]).sort("s")
    want = [np.polyfit(np.log(g["x"].to_numpy()), np.log(g["y"].to_numpy()), 1)[0]
            for _, g in df.sort("s").group_by("s", maintain_order=True)]
    assert got["exponent"].to_list() == pytest.approx(want)
    assert got["points"].to_list() == [12, 6]


def _split_sweep(src: str, dest: Path, model: str, parts: int) -> str:
    """A copy of a sweep whose `model` rows are cut into `parts` part files (other models left out)."""
    from workers.dataset import MANIFEST, SPEC_FILE, part_path
    from workers.dataset.parts import checksum
    rows = pl.read_parquet(f"{src}/{part_path(model, '*')}", hive_partitioning=False)
    step = -(-rows.height // parts)
    (dest / part_path(model, "x")).parent.mkdir(parents=True)
    records = {}
    for i in range(parts):
        rows.slice(i * step, step).write_parquet(dest / part_path(model, f"c{i}"))
        data = (dest / part_path(model, f"c{i}")).read_bytes()  # recorded as a run records its parts
        part = rows.slice(i * step, step)
        records[f"c{i}"] = {"model": model, "rows": part.height, "bytes": len(data), "checksum": checksum(data),
                            "status": dict(part["status"].value_counts().iter_rows())}
    (dest / SPEC_FILE).write_bytes((Path(src) / SPEC_FILE).read_bytes())
    manifest = json.loads((Path(src) / MANIFEST).read_text())
    manifest["parts"] = records  # the new parts are its rows
    (dest / MANIFEST).write_text(json.dumps(manifest))
    return str(dest)


def test_batched_aggregates_equal_the_whole_scan(default_sweep, tmp_path, monkeypatch):
    """Folding a model's parts batch by batch (scan_batches + reduce_batches), and the series a few at a
    time, gives the same per-variant minimums and growth sums as one scan of every row: only the memory
    they take differs."""
    folder = _split_sweep(default_sweep, tmp_path / "split", "memmap", 5)
    whole = Sweep(default_sweep)
    total = whole.scan("memmap", None).select(pl.len()).collect().item()
    split = Sweep(folder, batch_rows=total // 2)
    batches = split.scan_batches("memmap")
    assert len(batches) == 3  # five parts of a fifth each, at most half per batch: 2 + 2 + 1
    assert sum(b.select(pl.len()).collect().item() for b in batches) == split.scan("memmap").select(pl.len()).collect().item()

    keys = [c for c in whole.params("memmap") if c != "param_strategy"]
    want_values, want = M.per_variant(whole.rows("memmap"), "param_strategy", "metric_init_ms", keys)
    got_values, got = M.per_variant(split.rows("memmap"), "param_strategy", "metric_init_ms", keys)
    assert got_values == want_values and got.height == want.height > 500
    assert got.sort(keys, nulls_last=True).equals(want.sort(keys, nulls_last=True))

    series = [c for c in keys if c != "param_namespace_size"]
    lf = lambda s: [M.ok(b) for b in s.scan_batches("memmap")]  # noqa: E731
    want_shares = len(M._shares(series, {c: whole.axis_values("memmap")[c]["value"].to_list() for c in series}, 4))
    monkeypatch.setattr(M, "MAX_SERIES_PER_PASS", 4)
    got = M.series_points(lf(split), "param_namespace_size", "metric_init_ms", series)
    monkeypatch.undo()
    assert want_shares > 4
    want = M.series_points(M.ok(whole.scan("memmap")), "param_namespace_size", "metric_init_ms", series)
    assert got["_w"].to_list() == want["_w"].to_list()
    assert got.drop("_y", "_yy").equals(want.drop("_y", "_yy"))
    for c in ("_y", "_yy"):
        assert [v for row in got[c].to_list() for v in row] == pytest.approx([v for row in want[c].to_list() for v in row])
