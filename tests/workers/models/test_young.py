"""The young cost model (workers/models/young/__init__.py): counts, feasibility, calibration."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from workers.calibrate import predict
from workers.evaluate import evaluate
from workers.models.young import reference as ref
from workers.models.young import MODEL
from workers.profiles import load_profile
from workers.model import points_frame

PROFILE = load_profile("seed")


def frame(*rows: dict) -> pl.DataFrame:
    """A points frame from partial rows (missing axes take their defaults)."""
    return points_frame(MODEL, rows)


def run(*rows: dict) -> pl.DataFrame:
    return evaluate(MODEL, frame(*rows), PROFILE)


FIG = {"namespace_size": "8GiB", "align": "2MiB", "compound_order": 4, "young_fraction": 0.0}


def test_seed_profile_reproduces_arm64_figures_within_10_percent():
    """With the seed profile, 8 GiB of 64 KiB folios take ~470 ms per PTE and ~180 ms batched on arm64."""
    out = run({**FIG, "batching": "per_pte"}, {**FIG, "batching": "batched"})
    per_pte, batched = out["metric_scan_ms"].to_list()
    assert per_pte == pytest.approx(470.0, rel=0.10)
    assert batched == pytest.approx(180.0, rel=0.10)
    assert per_pte / batched == pytest.approx(470.0 / 180.0, rel=0.10)
    assert out["metric_speedup_vs_per_pte"][1] == pytest.approx(per_pte / batched)


def test_seed_profile_x86_improvement_near_published():
    """On x86 the batched scan saves about 15% of the per-PTE time (within 10% of 0.15)."""
    out = run({**FIG, "arch": "x86_64", "first_pte_cont": False, "batching": "batched"})
    assert out["metric_time_reduction_vs_per_pte"][0] == pytest.approx(0.15, rel=0.10)


def test_calibration_fits_every_figure_with_fewer_parameters(seed_calibration):
    """Calibration fits 3 costs to 7 figures (the seed's three MGLRU figures and the classic series' four, the
    x86 '50%+' a bound) and lands every figure within 12% (the classic batched unmap, 249 ms, is the worst:
    221 ms); unmap_step_ns is held within its assumed range."""
    cal = seed_calibration(MODEL.name)
    assert len(MODEL.calibration.free_params) == 3 and len(MODEL.calibration.figures) == 7
    assert cal.max_error < 0.12 and cal.identification.independent == 3
    fitted = predict(MODEL, MODEL.calibration.figures, cal.profile)
    for f, v in zip(MODEL.calibration.figures, fitted):
        assert abs(f.error(v)) < 0.12, f.id
    assert [f.id for f in MODEL.calibration.figures if f.bound == ">="] == ["young/classic/x86_64/unmap_improvement"]


def test_figures_name_every_axis_and_exist():
    """Each figure gives a value for every axis and its point is feasible."""
    for f in MODEL.calibration.figures:
        assert set(f.params) == set(MODEL.axis_names), f.id
    assert (run(*[f.params for f in MODEL.calibration.figures])["status"] == "ok").all()


def test_figure_point_counts():
    """8 GiB of 64 KiB cont folios: 16x the visits and calls per PTE, one block walk per folio batched."""
    out = run({**FIG, "batching": "per_pte"}, {**FIG, "batching": "batched"})
    pages, folios = 8 * 2**30 // 4096, 8 * 2**30 // 65536
    assert out["metric_calls"].to_list() == [pages, folios]
    assert out["metric_ptes_visited"].to_list() == [16 * pages, pages]
    assert out["metric_blocks_touched"].to_list() == [pages, folios]
    assert out["metric_tlb_flushes"].to_list() == [0, 0]


def test_per_pte_rows_have_unit_speedup():
    """A per_pte row's speedup over the per_pte scan is exactly 1 and it saves nothing."""
    out = run({"batching": "per_pte", "compound_order": 6}, {"batching": "per_pte", "arch": "x86_64",
                                                             "first_pte_cont": False})
    assert out["metric_speedup_vs_per_pte"].to_list() == [1.0, 1.0]
    assert out["metric_time_reduction_vs_per_pte"].to_list() == [0.0, 0.0]


def test_auto_order_is_a_64k_folio():
    """compound_order 'auto' gives the same row as order 4."""
    out = run({"compound_order": "auto", "namespace_size": "1GiB"}, {"compound_order": 4, "namespace_size": "1GiB"})
    assert out.row(0)[len(MODEL.axes):] == out.row(1)[len(MODEL.axes):]


def test_classic_lru_flushes_only_young_on_arm64():
    """lru=classic flushes once per young folio batched and once per block per PTE; x86 and MGLRU never."""
    rows = [{"namespace_size": "1MiB", "young_fraction": 0.5, "lru": "classic", "batching": b, "compound_order": 5}
            for b in ("batched", "per_pte")]
    rows += [{**rows[0], "lru": "mglru"}, {**rows[0], "arch": "x86_64", "first_pte_cont": False}]
    assert run(*rows)["metric_tlb_flushes"].to_list() == [4, 8, 0, 0]


def test_head_block_unfolded_reduces_per_pte_visits():
    """first_pte_cont=false makes the head block non-cont: 16 fewer block walks of 16 per folio."""
    out = run(*({"compound_order": 5, "namespace_size": "128KiB", "batching": "per_pte", "first_pte_cont": v}
                for v in (True, False)))
    assert out["metric_ptes_visited"].to_list() == [512, 16 + 16 * 16]
    assert out["metric_cont_blocks"].to_list() == [2, 1]


CLASSIC = {"namespace_size": "8GiB", "mapped_size": "10GiB", "align": "2MiB", "compound_order": 4,
           "young_fraction": 1.0, "lru": "classic"}


def test_either_lru_walks_a_once_referenced_folio_twice():
    """A young folio is walked young and kept, then walked old and freed, under the classic LRU and under
    MGLRU (lru_gen_set_refs() keeps it on its first young walk: Debian's arm64 7.3 walks so); only the classic
    LRU's young walk flushes the TLB."""
    one = {"namespace_size": "64KiB", "compound_order": 4, "young_fraction": 1.0}
    out = run({**one, "lru": "classic"}, {**one, "lru": "mglru"}, {**one, "lru": "classic", "young_fraction": 0.0})
    assert out["metric_walks"].to_list() == [2, 2, 1]
    assert out["metric_kept_folios"].to_list() == [1, 1, 0]
    assert out["metric_calls"].to_list() == [2, 2, 1]  # batched: one helper call per walk
    assert out["metric_tlb_flushes"].to_list() == [1, 0, 0]  # only the classic LRU's young walk flushes


def test_classic_validation_layout_walks_every_mapped_folio_first():
    """10 GiB mapped and young, 8 GiB freed: 163,840 kept first walks and 131,072 second walks; the
    per-PTE unmap takes a step per PTE and unfolds every block, the batched one a step per folio."""
    out = run({**CLASSIC, "unmap": "per_pte"}, {**CLASSIC, "unmap": "batched"})
    folios, mapped = 8 * 2**30 // 65536, 10 * 2**30 // 65536
    assert out["metric_walks"].to_list() == [mapped + folios] * 2
    assert out["metric_kept_folios"].to_list() == [mapped] * 2
    assert out["metric_young_folios"].to_list() == [mapped] * 2
    assert out["metric_unmap_steps"].to_list() == [16 * folios, folios]
    assert out["metric_unfolds"].to_list() == [folios, 0]
    assert out["metric_unmap_tlb_flushes"].to_list() == [17 * folios, folios]


def test_unmap_axis_changes_only_the_unmap():
    """unmap = per_pte against batched: same walks and helper time, more unmap time, and the reduction
    against the per-PTE unmap is 0 for a per_pte row."""
    out = run({**CLASSIC, "unmap": "per_pte"}, {**CLASSIC, "unmap": "batched"})
    assert out["metric_young_clear_ms"][0] == out["metric_young_clear_ms"][1]
    assert out["metric_unmap_ms"][0] > out["metric_unmap_ms"][1]
    assert out["metric_time_reduction_vs_per_pte_unmap"][0] == 0.0
    saved = 1 - out["metric_scan_ms"][1] / out["metric_scan_ms"][0]
    assert out["metric_time_reduction_vs_per_pte_unmap"][1] == pytest.approx(saved)


def test_mapped_size_all_is_namespace_size():
    """mapped_size 'all' gives the row of mapped_size = namespace_size, under either LRU."""
    for lru in ("classic", "mglru"):
        base = {"namespace_size": "1GiB", "young_fraction": 0.5, "lru": lru}
        out = run({**base, "mapped_size": "all"}, {**base, "mapped_size": "1GiB"})
        assert out.row(0)[len(MODEL.axes):] == out.row(1)[len(MODEL.axes):]


def test_call_ns_is_held_where_the_figures_put_it_when_it_is_freed():
    """call_ns is held at the value the seed's three figures gave it: freed as a fourth cost, the seven
    figures carry four independent numbers and put it within 15% of the held value (15.8 ns)."""
    from workers.calibrate import fit, log_residuals
    from workers.model import FreeParam

    free = MODEL.calibration.free_params + (FreeParam(section="young", key="call_ns", lower=1.0, upper=100.0),)
    figs = MODEL.calibration.figures
    x = fit(MODEL, figs, PROFILE, free, starts=4)
    assert x[-1] == pytest.approx(PROFILE.value("young", "call_ns"), rel=0.15)
    at = PROFILE.with_values({(p.section, p.key): v for p, v in zip(free, x)}, source="calibrated")
    base = log_residuals(figs, predict(MODEL, figs, at))
    jac = np.array([(log_residuals(figs, predict(MODEL, figs, at.with_values({(p.section, p.key): v * 1.001},
                                                                               source="calibrated"))) - base)
                    / np.log(1.001) for p, v in zip(free, x)]).T
    s = np.linalg.svd(jac, compute_uv=False)
    assert (s > 0.01 * s[0]).sum() == 4
    assert PROFILE.sections["young"]["call_ns"].source == "calibrated"


def test_the_unmap_prices_a_deferred_flush_and_an_unfold_s_synchronous_one_apart():
    """A per-PTE unmap of one 64 KiB folio on arm64: 16 steps, each a walk step, its rmap work and a
    deferred TLBI, and one unfold, whose TLBI + DSB waits (tlb_sync_ns); x86 has neither TLBI nor unfold."""
    cost = {k: PROFILE.value("young", k) for k in ("call_ns", "unmap_step_ns", "pte_atomic_ns", "tlb_flush_ns",
                                                    "tlb_sync_ns", "pte_read_ns")}
    one = {"namespace_size": "64KiB", "compound_order": 4, "unmap": "per_pte"}
    arm, x86 = run(one, {**one, "arch": "x86_64", "first_pte_cont": False})["metric_unmap_ms"].to_list()
    steps = 16 * (cost["call_ns"] + cost["unmap_step_ns"])
    atomics = (2 * 16 + 3 * 16) * cost["pte_atomic_ns"]  # per PTE 2, per step 3 (counts.py)
    assert arm * 1e6 == pytest.approx(steps + (atomics + 16 * cost["pte_atomic_ns"]) + 16 * cost["tlb_flush_ns"]
                                      + cost["tlb_sync_ns"] + 16 * cost["pte_read_ns"])
    assert x86 * 1e6 == pytest.approx(steps + atomics + 16 * cost["pte_atomic_ns"])  # x86: tlb_gen per step


def test_the_classic_set_alone_predicts_the_seed_set():
    """Validation across the two sets: the classic series' figures alone (its five, its x86 '50%+' and '10%+'
    bounds among them), fitting the three costs, predict the seed's three MGLRU figures within 35% (470 ms ->
    445 ms, 180 ms -> 222 ms, 15% -> 12%). The other way round cannot be done: the MGLRU figures unmap one
    step per folio and unfold nothing, so they cannot price tlb_sync_ns."""
    from workers.calibrate import fit
    from workers.model import validation_figures

    classic = tuple(f for f in MODEL.calibration.figures if "/classic/" in f.id) + validation_figures(MODEL, PROFILE)
    seed = tuple(f for f in MODEL.calibration.figures if "/classic/" not in f.id)
    free = MODEL.calibration.free_params
    x = fit(MODEL, classic, PROFILE, free, starts=4)
    costs = PROFILE.with_values({(p.section, p.key): v for p, v in zip(free, x)}, source="calibrated")
    errors = [f.error(v) for v, f in zip(predict(MODEL, seed, costs), seed)]
    assert max(abs(e) for e in errors) < 0.35
    assert max(abs(f.error(v)) for v, f in zip(predict(MODEL, classic, costs), classic)) < 0.10


@pytest.mark.parametrize(("row", "match"), [
    ({"compound_order": 10}, "at most order 9"),
    ({"compound_order": 9, "align": "2MiB"}, "PMD-mapped"),
    ({"namespace_size": "100KiB"}, "whole number of folios"),
    ({"namespace_size": "1MiB", "mapped_size": "512KiB"}, "at least namespace_size"),
    ({"namespace_size": "1MiB", "mapped_size": "1028KiB"}, "mapped_size must be a whole number"),
])
def test_infeasible_points_have_reasons_and_no_metrics(row, match):
    """Points that cannot exist are kept as infeasible rows with a readable reason and null metrics."""
    out = run(row)
    assert out["status"][0] == "infeasible"
    assert match in out["reason"][0]
    assert all(out[m][0] is None for m in MODEL.metric_dtypes)


def test_young_fraction_outside_unit_interval_is_infeasible_or_rejected():
    """young_fraction 1.5 is rejected by the axis rule and infeasible if it reaches evaluate."""
    with pytest.raises(ValueError, match="from 0 to 1"):
        MODEL.axis("young_fraction").canonical(1.5)
    points = frame({}).with_columns(pl.lit(1.5).alias("param_young_fraction"))
    out = evaluate(MODEL, points, PROFILE)
    assert out["status"][0] == "infeasible" and "young_fraction" in out["reason"][0]


def test_output_keeps_order_and_declared_schema():
    """A mixed frame comes back in order, with the declared columns, and never as error rows."""
    rows = [{"compound_order": k, "first_pte_cont": k >= 4} for k in range(0, 12)]
    out = run(*rows)
    assert out.height == len(rows) and not (out["status"] == "error").any()
    assert out["param_compound_order"].to_list() == list(range(12))
    assert out.columns[-len(MODEL.metric_dtypes):] == list(MODEL.metric_dtypes)


def _reference_counts(params: dict) -> dict:
    """The reference's counts for one configuration: a reclaim run on the table build_table() simulates."""
    t = ref.build_table(namespace_size=params["namespace_size"], align=params["align"],
                        order=params["compound_order"], arch=params["arch"], first_pte_cont=params["first_pte_cont"],
                        young_fraction=params["young_fraction"], mapped_size=params.get("mapped_size"))
    cont, pages = t.cont.copy(), 1 << t.order
    run = ref.reclaim(t, lru=params["lru"], batching=params["batching"], unmap=params.get("unmap", "batched"),
                      arch=params["arch"])
    assert run.activated == 0
    cont_blocks = sum(int(cont[t.offset + f * pages:t.offset + (f + 1) * pages].sum()) for f in run.freed)
    return {"metric_folios": t.reclaim, "metric_mapped_folios": t.folios,
            "metric_cont_blocks": cont_blocks // ref.CONT_PTES,
            "metric_walks": run.walks, "metric_kept_folios": run.kept, "metric_young_folios": run.young_folios,
            "metric_calls": run.helpers.calls, "metric_ptes_visited": run.helpers.ptes_visited,
            "metric_blocks_touched": run.helpers.blocks_touched, "metric_tlb_flushes": run.helpers.tlb_flushes,
            "metric_pte_atomics": run.helpers.atomics, "metric_young_calls": run.helpers.young_calls,
            "metric_ptes_asked": run.helpers.ptes_asked, "metric_unmap_steps": run.unmap.steps,
            "metric_unfolds": run.unmap.unfolds, "metric_unmap_tlb_flushes": run.unmap.tlb_flushes,
            "metric_unmap_atomics": run.unmap.atomics}


@st.composite
def small_configs(draw):
    order = draw(st.integers(0, 9))
    arch = draw(st.sampled_from(["arm64", "x86_64"]))
    folio = (1 << order) * 4096
    folios = draw(st.integers(1, max(1, 4096 >> order)))
    return {
        "compound_order": order,
        "namespace_size": folio * folios,
        "mapped_size": folio * (folios + draw(st.integers(0, max(0, min(folios, 2048 >> order))))),
        "align": 1 << draw(st.integers(12, 22)),
        "arch": arch,
        "first_pte_cont": draw(st.booleans()) if arch == "arm64" else False,
        "young_fraction": draw(st.sampled_from([0.0, 0.3, 0.5, 0.77, 1.0])),
        "batching": draw(st.sampled_from(["per_pte", "batched"])),
        "lru": draw(st.sampled_from(["mglru", "classic"])),
        "unmap": draw(st.sampled_from(["per_pte", "batched"])),
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(small_configs())
def test_model_counts_agree_with_reference(params):
    """On small configurations the closed-form counts equal the reference's counts on a simulated table."""
    out = run(params)
    assume(out["status"][0] == "ok")
    want = _reference_counts(params)
    got = {k: out[k][0] for k in want}
    assert got == want
    assert out["metric_ptes"][0] == want["metric_folios"] << params["compound_order"]


@pytest.mark.parametrize("params", [
    {"compound_order": 4, "align": 2 << 20, "first_pte_cont": True},   # the figure's layout
    {"compound_order": 9, "align": 64 << 10, "first_pte_cont": False},  # PMD-split 2 MiB folios
    {"compound_order": 6, "align": 8 << 10, "first_pte_cont": False},   # misaligned: no cont, splits
    {"compound_order": 7, "align": 1 << 20, "first_pte_cont": False},   # head block unfolded
])
@pytest.mark.parametrize("batching", ["per_pte", "batched"])
def test_model_counts_agree_with_reference_on_named_layouts(params, batching):
    """The counts agree on the figure's layout and the layouts the review asked about (classic LRU, half young)."""
    full = {"namespace_size": (1 << params["compound_order"]) * 4096 * 24, "arch": "arm64",
            "young_fraction": 0.5, "batching": batching, "lru": "classic", **params}
    out = run(full)
    want = _reference_counts(full)
    assert {k: out[k][0] for k in want} == want


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(small_configs())
def test_batched_never_slower_than_per_pte(params):
    """For every feasible point the batched scan is at least as fast as the per-PTE scan."""
    out = run({**params, "batching": "batched"})
    assume(out["status"][0] == "ok")
    assert out["metric_speedup_vs_per_pte"][0] >= 1.0


def test_large_frame_is_vectorized():
    """A 200k-point frame evaluates with every point feasible or explained (no per-point failure)."""
    n = 200_000
    rng = np.random.default_rng(5)
    points = frame({}).select(pl.all().repeat_by(n).explode()).with_columns(
        pl.Series("param_compound_order", rng.integers(0, 10, n), dtype=pl.Int64),
        pl.Series("param_young_fraction", rng.random(n)),
        pl.Series("param_first_pte_cont", rng.random(n) < 0.5),
    )
    out = evaluate(MODEL, points, PROFILE)
    assert out.height == n and not (out["status"] == "error").any()
    assert out.filter(pl.col("status") == "infeasible")["reason"].null_count() == 0


LAYOUTS = [  # (order, align, arch, first_pte_cont): the kernel's, cont at other offsets, none, split, x86
    (5, 2 << 20, "arm64", True), (6, 64 << 10, "arm64", True), (4, 64 << 10, "arm64", True),
    (9, 64 << 10, "arm64", False), (6, 4 << 10, "arm64", True), (2, 8 << 10, "arm64", True),
    (7, 1 << 20, "arm64", False), (5, 2 << 20, "x86_64", False), (0, 2 << 20, "arm64", True),
]


@pytest.mark.parametrize("order, align, arch, first_cont", LAYOUTS)
def test_look_around_closed_form_is_the_reference_beyond_its_own_runs(order, align, arch, first_cont):
    """Past lookaround.DIRECT_PAGES the counts come from the layout's repeating pattern: equal to the
    reference's whole eviction for every young share around the aging's threshold (half the mapping) and
    every amount reclaimed."""
    from workers.models.young import lookaround as la

    n = 1 << order
    m = max(2, la.DIRECT_PAGES // n + 1)
    if order:
        m += 3 * max(1, 512 // n) + 1  # past a few page tables too
    young = sorted({m, m // 2 + 1, m // 2, m // 2 - 1, m // 3, 0})
    reclaim = sorted({1, m // 2, m - m // 3, m})
    cont_ok = arch == "arm64" and order >= 4 and (align % (2 << 20)) // 4096 % 16 == 0
    cpf = (n // 16 if cont_ok else 0) - (cont_ok and not first_cont)
    pattern = la.pattern(order, align, arch, first_cont)
    for y in young:
        for r in reclaim:
            got = la._closed(pattern, *(np.array([v]) for v in (m, y, r, cpf)), arch == "arm64")
            assert tuple(int(got[k][0]) for k in la.KEYS) == la._direct(order, align, arch, first_cont, m, y, r), \
                (m, y, r)


def test_look_around_counts_are_the_pattern_s_past_direct_pages_and_the_reference_s_below():
    """counts() runs the reference up to DIRECT_PAGES (no pattern made) and the pattern beyond it, and the two
    agree either side of the switch."""
    from workers.models.young import lookaround as la

    m = np.array([la.DIRECT_PAGES >> 5, (la.DIRECT_PAGES >> 5) + 1])
    args = (np.full(1, 5), np.full(1, 2 << 20), np.ones(1, bool), np.ones(1, bool))
    la.pattern.cache_clear()
    small = la.counts(*args, m[:1], m[:1], m[:1] // 2, np.full(1, 2))
    assert la.pattern.cache_info().currsize == 0
    big = la.counts(*args, m[1:], m[1:], m[1:] // 2, np.full(1, 2))
    assert la.pattern.cache_info().currsize == 1
    for out, mm in ((small, int(m[0])), (big, int(m[1]))):
        assert tuple(int(out[k][0]) for k in la.KEYS) == la._direct(5, 2 << 20, "arm64", True, mm, mm, mm // 2)


def test_the_model_counts_what_the_guests_counted_at_every_recorded_point():
    """workers/models/young/kernel_results.csv (benchmarks/young_kernel.py): at each of kernel-young's 16
    points the model's counts today are the recorded model columns, and those are the kernel's."""
    from workers.models.young import kernel as yk

    recorded = yk.results()
    rows = [{k: r[k] for k in yk.KEY} | {"arch": "arm64", "first_pte_cont": True} for r in recorded.to_dicts()]
    out = run(*rows)
    assert recorded.height == 16 and (out["status"] == "ok").all()
    for m in ("calls", "young_calls", "ptes_asked", "walks", "ptes", "folios"):
        assert out[f"metric_{m}"].to_list() == recorded[f"model_{m}"].to_list() == recorded[f"kernel_{m}"].to_list(), m


def test_every_layout_the_model_can_be_has_a_repeating_look_around():
    """Orders 0 to 9 at every power-of-two alignment up to 2 MiB, arm64 (head cont or not) and x86: each has a
    pattern (a layout without one would fail its rows), and one that takes longer to repeat than allowed is
    refused with its name."""
    from workers.models.young import lookaround as la

    for order in range(ref.MAX_PAGECACHE_ORDER + 1):
        for shift in range(12, 22):
            for arch, first_cont in (("arm64", True), ("arm64", False), ("x86_64", False)):
                p = la.pattern(order, 1 << shift, arch, first_cont)
                assert p.top >= 2 * p.period and p.walks[-1] > 0
    with pytest.MonkeyPatch.context() as mp:  # order 4 at 64 KiB starts repeating in its second page table
        mp.setattr(la, "PREFIX", 1)
        with pytest.raises(ValueError, match="order 4 at align 65536 .* does not repeat"):
            la.pattern.__wrapped__(4, 64 << 10, "arm64", True)
