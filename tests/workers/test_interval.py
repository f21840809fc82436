"""Error bars (workers/interval.py): the spread of each answer over the leave-one-out refits the profile
records, widened where no figure checked the point."""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest

from sweeps.run.sources import SourceSettings, guest_rows, measured_rows, model_rows
from workers import evidence, get_model, interval
from workers.calibrate import predict
from workers.evaluate import evaluate
from workers.model import points_frame
from workers.profiles import load_profile

SEED = load_profile("seed")
MEMMAP, YOUNG = get_model("memmap"), get_model("young")
BIG = dict(namespace_size="4TiB", align="1GiB", mode="devdax", map="dev", strategy="template_nt_inline")


def bars(model, points, profile=SEED) -> pl.DataFrame:
    rows = evaluate(model, points_frame(model, points), profile)
    return pl.concat([rows, interval.bars(model, profile, rows, evidence.label(model, profile, rows)["evidence"])],
                     how="horizontal")


def test_each_recorded_refit_predicts_its_held_out_figure_at_the_recorded_leave_one_out_error():
    """seed.toml's [refits] are the fits behind its [leave_one_out]: the figure each one left out, predicted
    under its costs, is off by the error recorded for it (the low end under the first, the high end under the
    last), to the 6 digits the costs are written with."""
    figures = {f.id: (m, f) for m in (MEMMAP, get_model("pfnmap"), YOUNG) for f in m.calibration.figures}
    assert set(SEED.refits) == set(SEED.leave_one_out) == set(figures)
    for fid, refits in SEED.refits.items():
        model, figure = figures[fid]
        errors = [predict(model, (figure,), interval._with(SEED, costs))[0] / figure.published - 1 for costs in refits]
        low, high = SEED.leave_one_out[fid]
        assert (errors[0], errors[-1]) == pytest.approx((low, high), abs=2e-4), fid
        assert (len(refits) == 2) == (low != high), fid


def test_a_fit_point_s_bar_covers_what_the_fit_that_left_it_out_predicts():
    """At each memmap figure's point the bar spans the answer of the fit that did not see the figure: the
    published template step (fsdax 215.55 ms, devdax 244.37 ms) lies inside bars the model's one value
    (229.6 ms for both) would hide."""
    rows = bars(MEMMAP, [f.params for f in MEMMAP.calibration.figures])
    for f, (v, lo, hi) in zip(MEMMAP.calibration.figures, rows.select("metric_init_ms", "lo_init_ms",
                                                                       "hi_init_ms").rows()):
        assert lo <= v <= hi, f.id
        for end in SEED.leave_one_out[f.id]:  # the held-out prediction: published x (1 + its error)
            assert lo * 0.9999 <= f.published * (1 + end) <= hi * 1.0001, f.id
    template = rows.filter(pl.col("param_strategy") == "template")
    assert template["metric_init_ms"].n_unique() == 1  # the model cannot tell the modes apart here
    assert all(lo <= 215.55 * 1.001 and hi >= 244.37 * 0.999 for lo, hi in template.select("lo_init_ms",
                                                                                          "hi_init_ms").rows())


def test_an_extrapolated_answer_is_widened_by_the_stated_error():
    """4 TiB at 1 GiB align is extrapolated: its bar is the refits' spread widened by the largest
    leave-one-out error (15.6%) on each side, so it is wider than that error around the answer."""
    state = interval.stated(MEMMAP, SEED)
    assert state.error == pytest.approx(0.1563) and len(state.refits) == 9
    row = bars(MEMMAP, [BIG]).row(0, named=True)
    v, lo, hi = row["metric_init_ms"], row["lo_init_ms"], row["hi_init_ms"]
    assert lo <= v * (1 - state.error) * 1.0001 and hi >= v * (1 + state.error) * 0.9999


def test_a_model_with_no_refits_states_its_validation_error_and_bars_every_answer_by_it():
    """A profile that records no refits of a model but validation figures of it (young without its
    [refits]): the stated error is its largest validation error, and every answer's bar is that much either
    side."""
    bare = dataclasses.replace(SEED, refits={k: v for k, v in SEED.refits.items() if not k.startswith("young/")})
    state = interval.stated(YOUNG, bare)
    assert state.refits == () and "validation figures" in state.basis and state.error == pytest.approx(0.407, abs=1e-3)
    row = bars(YOUNG, [f.params for f in YOUNG.calibration.figures[:1]], bare).row(0, named=True)
    v = row["metric_young_clear_ms"]
    assert (row["lo_young_clear_ms"], row["hi_young_clear_ms"]) == pytest.approx(
        (v * (1 - state.error), v * (1 + state.error)), rel=1e-6)


def test_a_profile_with_no_refits_and_no_validation_has_no_bars():
    """A profile that records neither (an old --save, a profile of one's own) gives null bars and says why."""
    bare = dataclasses.replace(SEED, refits={}, validation=())
    assert interval.stated(MEMMAP, bare).error is None and "no error bar" in interval.stated(MEMMAP, bare).basis
    row = bars(MEMMAP, [BIG], bare).row(0, named=True)
    assert row["metric_init_ms"] is not None and row["lo_init_ms"] is None and row["hi_init_ms"] is None


def test_a_what_if_profile_scales_its_base_s_refits_to_its_own_costs():
    """epyc_genoa sets every copy cost apart from seed's fit: its refits are seed's, each cost moved by the
    refit's ratio to seed's value, so its bars are seed's relative doubt around its own answers."""
    genoa = load_profile("epyc_genoa")
    key = ("copy", "dram_write_gbs")
    for fid, refits in SEED.refits.items():
        if fid.startswith("memmap/"):
            for mine, base in zip(genoa.refits[fid], refits):
                assert mine["copy.dram_write_gbs"] == pytest.approx(
                    base["copy.dram_write_gbs"] * genoa.value(*key) / SEED.value(*key))
    row = bars(MEMMAP, [BIG], genoa).row(0, named=True)
    assert row["lo_init_ms"] < row["metric_init_ms"] < row["hi_init_ms"]


def test_only_modeled_rows_carry_bars_and_rows_not_ok_have_none():
    """Measured and kernel rows are observations (null bars); an infeasible modeled row has none either."""
    points = points_frame(MEMMAP, [BIG, dict(BIG, namespace_size="1MiB")])
    rows = model_rows(MEMMAP, points, SEED, SourceSettings())
    assert rows["status"].to_list() == ["ok", "infeasible"]
    assert rows["lo_init_ms"].is_null().to_list() == [False, True]
    assert set(interval.dtypes(MEMMAP)) <= set(rows.columns) and rows.schema["lo_init_ms"] == pl.Float32
    for backend in (measured_rows, guest_rows):
        other = backend(MEMMAP, points.head(0), SEED, SourceSettings())
        assert set(interval.dtypes(MEMMAP)) <= set(other.columns)


def test_a_ratio_of_two_answers_is_not_widened():
    """slow's speedup over itself is 1 at every refit, and stays 1 with no bar around it at 4 TiB
    (extrapolated); the template step's speedup there is only its refits' spread, narrower than its time's."""
    rows = bars(MEMMAP, [dict(BIG, strategy="slow"), dict(BIG, strategy="template")])
    slow, template = rows.row(0, named=True), rows.row(1, named=True)
    assert slow["metric_speedup_vs_slow"] == slow["lo_speedup_vs_slow"] == slow["hi_speedup_vs_slow"] == 1.0
    rel = lambda r, m: (r[f"hi_{m}"] - r[f"lo_{m}"]) / r[f"metric_{m}"]  # noqa: E731
    assert 0 < rel(template, "speedup_vs_slow") < rel(template, "init_ms")


def test_a_model_that_fails_under_a_refit_gives_error_rows_of_the_full_schema(monkeypatch):
    """A refit the model cannot evaluate (a cost out of its domain) fails the chunk's rows, not the chunk:
    every row is `error` naming the exception, with every column of a model row, bars and evidence null."""
    points = points_frame(MEMMAP, [BIG, dict(BIG, namespace_size="1TiB")])
    good = model_rows(MEMMAP, points, SEED, SourceSettings())

    def broken(*args, **kwargs):
        raise ValueError("refit out of range")

    monkeypatch.setattr(interval, "bars", broken)
    rows = model_rows(MEMMAP, points, SEED, SourceSettings())
    assert rows.columns == good.columns and rows.schema == good.schema
    assert rows["status"].to_list() == ["error", "error"] and "refit out of range" in rows["reason"][0]
    assert rows["lo_init_ms"].is_null().all() and rows["evidence"].is_null().all()
