"""Error bars (workers/interval.py): the answer moved by the least and the largest signed held-out residual of
its kind, the refits' answers, half the largest residual more where no figure checked the point, and every
assumed range spanned; how many published figures they hold."""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest

from workers.dataset import SOURCES
from workers.modeled import rows as model_rows
from workers import evidence, get_model, interval
from workers.calibrate import predict
from workers.evaluate import evaluate
from workers.model import points_frame, validation_figures
from workers.profiles import RANGE, load_profile

SEED = load_profile("seed")
MEMMAP, PFNMAP, YOUNG = get_model("memmap"), get_model("pfnmap"), get_model("young")
MODELS = (MEMMAP, PFNMAP, YOUNG)
BIG = dict(namespace_size="4TiB", align="1GiB", mode="devdax", map="dev", strategy="template_nt_inline")


def bars(model, points, profile=SEED) -> pl.DataFrame:
    rows = evaluate(model, points_frame(model, points), profile)
    return pl.concat([rows, interval.bars(model, profile, rows, evidence.label(model, profile, rows)["evidence"])],
                     how="horizontal")


def loo(fid: str) -> float:
    return max(abs(e) for e in SEED.leave_one_out[fid])


def test_each_recorded_refit_predicts_its_held_out_figure_at_the_recorded_leave_one_out_error():
    """seed.toml's [refits] of the figures are the fits behind its [leave_one_out]: the figure each one left
    out, predicted under its costs, is off by the error recorded for it (a bound's only below it), to the 6
    digits the costs are written with; the "range:" entries are the fits at an assumed range's ends."""
    figures = {f.id: (m, f) for m in MODELS for f in m.calibration.figures}
    assert {k for k in SEED.refits if not k.startswith(RANGE)} == set(SEED.leave_one_out) == set(figures)
    for fid, refits in ((k, v) for k, v in SEED.refits.items() if not k.startswith(RANGE)):
        model, figure = figures[fid]
        errors = [figure.error(predict(model, (figure,), interval._with(SEED, costs))[0]) for costs in refits]
        low, high = SEED.leave_one_out[fid]
        assert (errors[0], errors[-1]) == pytest.approx((low, high), abs=2e-4), fid
        assert (len(refits) == 2) == (low != high), fid
    low, high = SEED.refits[RANGE + "young.unmap_step_ns"]
    assert (low["young.unmap_step_ns"], high["young.unmap_step_ns"]) == SEED.sections["young"]["unmap_step_ns"].range


def test_the_residual_of_a_kind_is_its_figures_largest_leave_one_out_error():
    """memmap's times: its 8 figures' largest (fsdax template, 14.6%); pfnmap's loads and copies apart (4.0% and
    0.5%); young's scan times without the two ratio figures and the bound; a speedup the ratios of the
    figures' pairs held out, and each kind claims (n - 1) / (n + 1)."""
    memmap, pfnmap, young = (interval.stated(m, SEED) for m in MODELS)
    assert memmap.q["metric_init_ms"] == pytest.approx(loo("memmap/fsdax/template")) and memmap.n["metric_init_ms"] == 8
    assert memmap.rate("metric_init_ms") == pytest.approx(7 / 9)
    assert pfnmap.q["metric_ns_per_load"] == pytest.approx(loo("pfnmap/lat_mem_rd/pte/64MiB"))
    assert pfnmap.q["metric_copy_ms"] == pytest.approx(max(loo(f.id) for f in PFNMAP.calibration.figures
                                                         if f.metric == "metric_copy_ms"))
    assert young.q["metric_scan_ms"] == pytest.approx(max(loo(f.id) for f in YOUNG.calibration.figures
                                                        if f.metric == "metric_scan_ms"))
    ratios = interval.ratio_residuals(MEMMAP, SEED)
    assert len(ratios) == 12 and memmap.q["metric_speedup_vs_slow"] == pytest.approx(max(map(abs, ratios)))


def test_the_bar_s_sides_are_the_kind_s_most_over_and_most_under_predicted_figure():
    """memmap over-predicts its fsdax times (worst fsdax template, +14.6% left out) and under-predicts its devdax
    ones (worst devdax slow, -12.4%): an answer's bar reaches down to answer / 1.146 and up to answer / 0.876,
    each side from its own figures, not the larger one mirrored. pfnmap's loads err mostly low (worst PTE 64 MiB,
    -4.0%; the most over-predicted, PMD 64 MiB, +2.4%): a lopsided bar."""
    memmap, pfnmap = interval.stated(MEMMAP, SEED), interval.stated(PFNMAP, SEED)
    assert memmap.sides["metric_init_ms"] == pytest.approx(
        (1 / (1 + SEED.leave_one_out["memmap/fsdax/template"][1]), 1 / (1 + SEED.leave_one_out["memmap/devdax/slow"][0])))
    low, high = pfnmap.sides["metric_ns_per_load"]
    assert low == pytest.approx(1 / (1 + SEED.leave_one_out["pfnmap/lat_mem_rd/pmd/64MiB"][1]))
    assert high == pytest.approx(1 / (1 + SEED.leave_one_out["pfnmap/lat_mem_rd/pte/64MiB"][0]))
    assert high - 1 > 1.5 * (1 - low)
    assert interval.sides([0.02, 0.05]) == pytest.approx((1 / 1.05, 1.0))  # all over: nothing above the answer


def test_a_fit_point_s_bar_holds_its_figure_and_is_no_narrower_than_its_leave_one_out_error():
    """At each figure's own point the stored bar holds the published figure and is at least as wide as that
    figure's leave-one-out error, and no wider than 2.5 times its model's largest (the two worst misses, one
    each side, plus what the refits' answers and an assumed range add)."""
    for model in MODELS:
        state = interval.stated(model, SEED)
        figures = model.calibration.figures
        rows = bars(model, [f.params for f in figures])
        for i, f in enumerate(figures):
            v, lo, hi = (rows[c][i] for c in (f.metric, *interval.columns(f.metric)))
            assert lo <= v <= hi and (lo <= f.published <= hi or f.bound == ">=" and hi >= f.published), f.id
            assert (hi - lo) / v >= loo(f.id), f.id
            assert (hi - lo) / v <= 2.5 * state.error, f.id


def test_an_extrapolated_answer_is_widened_by_half_its_residual_more():
    """4 TiB at 1 GiB align is extrapolated: its bar takes in the answer moved by the kind's two sides and each
    refit's and assumed range end's answer, and reaches half the kind's largest residual past them."""
    state = interval.stated(MEMMAP, SEED)
    q, (down, up) = state.q["metric_init_ms"], state.sides["metric_init_ms"]
    row = bars(MEMMAP, [BIG]).row(0, named=True)
    v = row["metric_init_ms"]
    answers = [evaluate(MEMMAP, points_frame(MEMMAP, [BIG]), p)["metric_init_ms"][0] for p in state.alternatives]
    assert row["lo_init_ms"] == pytest.approx(min(v * down, *answers) * (1 - q * interval.FAR_WIDENING), rel=1e-5)
    assert row["hi_init_ms"] == pytest.approx(max(v * up, *answers) * (1 + q * interval.FAR_WIDENING), rel=1e-5)


def test_an_assumed_range_is_spanned_with_the_other_costs_refit_at_its_ends():
    """young.unmap_step_ns is assumed in [53.65, 101] ns: the unmap time of a batched unmap is the per-step cost
    times the steps, so the bar reaches from the answer at the low end (with its refit) to the high end's."""
    point = [dict(namespace_size="8GiB", mapped_size="10GiB", align="2MiB", compound_order=4, young_fraction=0.0,
                  arch="arm64", first_pte_cont=True, batching="batched", lru="classic", unmap="batched")]
    row = bars(YOUNG, point).row(0, named=True)
    ends = [evaluate(YOUNG, points_frame(YOUNG, point), interval._with(SEED, c))["metric_unmap_ms"][0]
            for c in SEED.refits[RANGE + "young.unmap_step_ns"]]
    assert ends[0] < row["metric_unmap_ms"] < ends[1]
    assert row["lo_unmap_ms"] <= ends[0] and row["hi_unmap_ms"] >= ends[1]


def test_coverage_holds_nine_in_ten_of_the_published_figures_and_misses_only_a_kind_s_extremes():
    """interval.coverage() and stored(): of the 41 published figures at least 90% inside the bar at their own
    point (every fit figure inside its stored bar); a fit figure falls outside the bar built without it only
    where its own residual lies beyond all of its kind's others (what the (n - 1) / (n + 1) claim allows);
    young's validation bound inside."""
    left = [h for m in MODELS for h in interval.coverage(m, SEED)]
    fit = [h for m in MODELS for h in interval.stored(m, SEED)]
    assert len(left) == 8 + 5 + 20 + 7 + 1 and len(fit) == 8 + 20 + 7
    assert all(h.inside for h in fit)
    own = fit + [h for h in left if h.use == "validation"]
    assert sum(h.inside for h in own) >= 0.9 * len(own)
    figures = {f.id: f for m in MODELS for f in m.calibration.figures}
    for h in (h for h in left if h.use == "fit" and not h.inside):
        kind = [g for g in figures.values() if g.metric == figures[h.figure].metric and g.bound == "="
                and g.id.split("/")[0] == h.figure.split("/")[0]]
        errors = sorted(SEED.leave_one_out[g.id][0] for g in kind)
        assert SEED.leave_one_out[h.figure][0] in (errors[0], errors[-1]), h.figure
    assert all(h.inside for h in left if h.figure.startswith("young/validation/"))


def test_answers_at_the_figures_are_remembered_by_the_profile_s_values_not_its_refits():
    """interval.at_figures(), which coverage() asks once per figure left out: a profile with the same values and
    another refits table gets the answers already computed; a changed cost gets its own, equal to evaluating
    the model afresh."""
    figures = PFNMAP.calibration.figures
    first = interval.at_figures(PFNMAP, figures, SEED)
    assert interval.at_figures(PFNMAP, figures, dataclasses.replace(SEED, refits={}, leave_one_out={})) is first
    key, entry = next((k, e) for k, e in SEED.sections["pfnmap"].items() if not isinstance(e, str))
    moved = SEED.with_values({("pfnmap", key): entry.value * 2 + 1}, source="what-if")
    again = interval.at_figures(PFNMAP, figures, moved)
    assert again is not first
    assert again.equals(evaluate(PFNMAP, interval.figure_frame(PFNMAP, figures), moved))


def test_a_model_with_no_refits_states_its_validation_error_and_bars_every_answer_by_it():
    """A profile that records no refits of a model but validation figures of it (memmap without its
    [refits]): the stated error is its largest validation error, and every answer's bar is that much either
    side."""
    bare = dataclasses.replace(SEED, refits={k: v for k, v in SEED.refits.items() if not k.startswith("memmap/")})
    state = interval.stated(MEMMAP, bare)
    checks = validation_figures(MEMMAP, bare)
    values = predict(MEMMAP, checks, bare)
    worst = max(abs(float(f.error(v))) for f, v in zip(checks, values))
    assert state.refits == () and "validation figures" in state.basis and state.error == pytest.approx(worst)
    row = bars(MEMMAP, [BIG], bare).row(0, named=True)
    v = row["metric_init_ms"]
    assert (row["lo_init_ms"], row["hi_init_ms"]) == pytest.approx((v * (1 - worst), v * (1 + worst)), rel=1e-6)


def test_a_profile_with_no_refits_and_no_validation_has_no_bars():
    """A profile that records neither (an old --save, a profile of one's own) gives null bars and says why."""
    bare = dataclasses.replace(SEED, refits={}, validation=())
    assert interval.stated(MEMMAP, bare).error is None and "no error bar" in interval.stated(MEMMAP, bare).basis
    row = bars(MEMMAP, [BIG], bare).row(0, named=True)
    assert row["metric_init_ms"] is not None and row["lo_init_ms"] is None and row["hi_init_ms"] is None


def test_a_what_if_profile_scales_its_base_s_refits_to_its_own_costs():
    """epyc_genoa sets the copy costs apart from seed's fit: its refits are seed's, each cost moved by the
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
    rows = model_rows(MEMMAP, points, SEED)
    assert rows["status"].to_list() == ["ok", "infeasible"]
    assert rows["lo_init_ms"].is_null().to_list() == [False, True]
    assert set(interval.dtypes(MEMMAP)) <= set(rows.columns) and rows.schema["lo_init_ms"] == pl.Float32
    assert [s.name for s in SOURCES if s.bars] == ["model"]  # the others' bars: null in the host's layout


def test_the_baselines_ratio_to_itself_has_no_bar_and_another_s_has_the_ratios_residual():
    """slow's speedup over itself is 1 with no doubt, even at 4 TiB (extrapolated); template's speedup there
    reaches at least as far as the figures' ratios erred held out, on each side."""
    rows = bars(MEMMAP, [dict(BIG, strategy="slow"), dict(BIG, strategy="template")])
    slow, template = rows.row(0, named=True), rows.row(1, named=True)
    assert slow["metric_speedup_vs_slow"] == slow["lo_speedup_vs_slow"] == slow["hi_speedup_vs_slow"] == 1.0
    down, up = interval.stated(MEMMAP, SEED).sides["metric_speedup_vs_slow"]
    assert down < 1 < up
    assert template["lo_speedup_vs_slow"] <= template["metric_speedup_vs_slow"] * down
    assert template["hi_speedup_vs_slow"] >= template["metric_speedup_vs_slow"] * up


def test_a_model_that_fails_under_a_refit_gives_error_rows_of_the_full_schema(monkeypatch):
    """A refit the model cannot evaluate (a cost out of its domain) fails the chunk's rows, not the chunk:
    every row is `error` naming the exception, with every metric column, and no bars, build or evidence to lay out."""
    points = points_frame(MEMMAP, [BIG, dict(BIG, namespace_size="1TiB")])
    good = model_rows(MEMMAP, points, SEED)

    def broken(*args, **kwargs):
        raise ValueError("refit out of range")

    monkeypatch.setattr(interval, "bars", broken)
    rows = model_rows(MEMMAP, points, SEED)
    # the rows a model source gives with neither bars nor evidence; the host lays them out with both null
    assert set(rows.columns) < set(good.columns) and all(rows.schema[c] == good.schema[c] for c in rows.columns)
    assert not {"lo_init_ms", "hi_init_ms", "evidence"} & set(rows.columns)
    assert rows["status"].to_list() == ["error", "error"] and "refit out of range" in rows["reason"][0]
    assert set(good.columns) - set(rows.columns) == {*interval.dtypes(MEMMAP), "kernel_build", *evidence.COLUMNS}


def test_an_x86_time_spans_the_assumed_factor_on_the_arm64_servers_costs_and_its_ratios_do_not():
    """young.x86_scale (assumed 1, range 0.5-2: the x86 figures are ratios, which no common factor moves): an
    x86 time's bar reaches half and twice its answer, and its evidence names the assumption; its speedup over
    per_pte, a ratio, keeps the bar of its kind."""
    point = dict(namespace_size="8GiB", mapped_size="10GiB", align="2MiB", compound_order=4, young_fraction=0.0,
                 arch="x86_64", first_pte_cont=False, batching="batched", lru="mglru", unmap="batched")
    rows = evaluate(YOUNG, points_frame(YOUNG, [point]), SEED)
    row = bars(YOUNG, [point]).row(0, named=True)
    v = row["metric_scan_ms"]  # the bar is Float32: its ends to 1e-6
    assert row["lo_scan_ms"] <= 0.5 * v * (1 + 1e-6) and row["hi_scan_ms"] >= 2.0 * v * (1 - 1e-6)
    assert row["hi_speedup_vs_per_pte"] < 1.5 * row["metric_speedup_vs_per_pte"]
    assumed = evidence.label(YOUNG, SEED, rows)["evidence_assumptions"][0].to_list()
    assert "x86 costs (young.x86_scale)" in assumed and "unmap step (young.unmap_step_ns)" in assumed


def test_a_pmem_time_spans_the_xpline_amplification_and_a_dram_one_does_not_move():
    """memmap.pmem_writeback_amplification is assumed 4 within [1, 4] (a write-back merged in its XPLine, or
    not): a pmem map=dev slow bind's bar reaches down to its time at 1x, a DRAM one's is no wider for it."""
    pmem, dram = (dict(BIG, strategy="slow", medium=m, namespace_size="100GiB") for m in ("pmem", "dram"))
    one = interval._with(SEED, {"memmap.pmem_writeback_amplification": 1.0})
    at_one = evaluate(MEMMAP, points_frame(MEMMAP, [pmem]), one)["metric_init_ms"][0]
    rows = bars(MEMMAP, [pmem, dram])
    assert at_one < 0.8 * rows["metric_init_ms"][0] and rows["lo_init_ms"][0] <= at_one
    without = dataclasses.replace(SEED, refits={k: v for k, v in SEED.refits.items()
                                                if k != RANGE + "memmap.pmem_writeback_amplification"},
                                  sections={**SEED.sections, "memmap": {
                                      k: dataclasses.replace(e, range=None) if k == "pmem_writeback_amplification"
                                      else e for k, e in SEED.sections["memmap"].items()}})
    assert bars(MEMMAP, [dram], without)["lo_init_ms"][0] == pytest.approx(rows["lo_init_ms"][1], rel=1e-6)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_refits_on_every_row_or_on_the_ok_rows_alone_give_the_same_bars(model, monkeypatch):
    """spread() prices a refit on every row's point where nearly all are ok (the model's cached counts) and on
    the ok rows alone elsewhere: the bars are the same either way, ok and not-ok rows mixed."""
    from tests.support.grids import sampled

    rows = evaluate(model, sampled(model.name, 4000), SEED)
    assert 0 < (rows["status"] == "ok").sum() < rows.height
    labels = evidence.label(model, SEED, rows)["evidence"]
    got = {}
    for share in (0.0, 1.01):  # every row's point always; the ok rows' always
        monkeypatch.setattr(interval, "WHOLE_FRAME", share)
        got[share] = interval.bars(model, SEED, rows, labels)
    assert got[0.0].equals(got[1.01])
    assert got[0.0].null_count().sum_horizontal().item() < got[0.0].width * got[0.0].height
