"""Key findings (analysis/report/findings.py): each sentence's numbers, recomputed from the rows by hand."""

from __future__ import annotations

import html

import polars as pl
import pytest

from analysis.tables import bar_parts

from analysis.metrics import TIE_RTOL
from analysis.report import findings as F
from analysis.read import Sweep
from tests.analysis.conftest import write_sweep


def finding(sweep: Sweep | str, id: str) -> F.Finding:
    """The finding of that id ("memmap/best_strategy": a model's declaration, workers/findings.py)."""
    found = {f.id: f for f in F.key_findings(sweep if isinstance(sweep, Sweep) else Sweep(sweep))}
    assert id in found, sorted(found)
    return found[id]


def rows(sweep_dir: str, model: str) -> pl.DataFrame:
    """Every ok modeled row of a model, read eagerly (not through the lazy scans findings use)."""
    df = pl.read_parquet(f"{sweep_dir}/model={model}/*.parquet")
    return df.filter((pl.col("status") == "ok") & (pl.col("source") == "model"))


def test_the_default_sweep_has_at_least_six_findings_each_with_a_figure(default_sweep):
    """At least 6 findings, each with numbers, linked to a figure id."""
    found = F.key_findings(Sweep(default_sweep))
    assert len(found) >= 6
    for f in found:
        assert any(ch.isdigit() for ch in f.text) and f.figure


def test_findings_are_the_models_declarations_in_order_then_published(default_sweep):
    """Every finding comes from a declaration (workers/findings.py) on its model: models in sweep order,
    each model's declarations in order, the parity finding last; each points at its declared figure."""
    sweep = Sweep(default_sweep)
    found = F.key_findings(sweep)
    declared = {f"{m}/{d.id}": d for m in sweep.models for d in sweep.model_object(m).report.findings}
    ids = [f.id for f in found]
    assert ids[-1] == "published" and ids[:-1] == [i for i in declared if i in ids[:-1]]
    assert {"memmap/best_strategy", "memmap/inline_movnti", "memmap/medium", "memmap/dedup_lost",
            "pfnmap/huge_leaf_alignment", "young/young_batching"} <= set(ids)
    assert all(f.figure == declared[f.id].figure for f in found[:-1])
    young = next(f for f in found if f.id == "young/young_batching")
    assert "with 0 of the folios young to" in young.text and "with 1." in young.text  # {yf_low_at:g}


def test_best_strategy_counts_unique_wins_only(default_sweep):
    """The winner's count equals a by-hand count of configurations it wins outright (ties excluded)."""
    f = finding(default_sweep, "memmap/best_strategy")
    df = rows(default_sweep, "memmap")
    keys = [c for c in df.columns if c.startswith("param_") and c != "param_strategy"]
    per = df.group_by(keys).agg(pl.col("param_strategy").sort_by("metric_init_ms").alias("order"),
                                pl.col("metric_init_ms").sort().alias("t"))
    wins = sum(1 for order, t in zip(per["order"], per["t"])
               if order[0] == f.data["winner"] and (len(t) == 1 or t[1] - t[0] > TIE_RTOL * t[0]))
    assert f.data["wins"] == wins and f.data["configurations"] == per.height
    assert f"{wins:,} of {per.height:,}" in f.text


def test_dedup_lost_sizes_and_dram_per_tib(default_sweep):
    """Sizes that never get vmemmap_optimized with map=mem compounds, and their DRAM per TiB at that align."""
    f = finding(default_sweep, "memmap/dedup_lost")
    df = rows(default_sweep, "memmap").filter((pl.col("param_map") == "mem") & (pl.col("metric_compound_order") > 0))
    opt = df.group_by("param_struct_page_size").agg(pl.col("metric_vmemmap_optimized").any())
    assert f.data["lost_at"] == sorted(opt.filter(~pl.col("metric_vmemmap_optimized"))["param_struct_page_size"])
    at = df.filter((pl.col("param_align") == 2**21) & (pl.col("param_struct_page_size") == f.data["lost_per_tib_at"]))
    per_tib = (at["metric_memmap_dram_bytes"] / at["param_namespace_size"] * 2**40).median()
    assert f.data["lost_per_tib"] == pytest.approx(per_tib)
    assert f.data["lost_per_tib_at"] == max(f.data["lost_at"], key=dict(zip(f.data["lost_at"], f.data["lost"])).get)
    assert "at struct page sizes 80 B, 96 B (not a power of two)" in f.text and "align 2MiB" in f.text
    assert f.data["lost_per_tib"] > 4 * f.data["kept_per_tib"]


def test_huge_leaf_gain_split_by_coverage(default_sweep):
    """Median speedup over PTEs where more than half the mapping is huge, and where not (order >= 9)."""
    f = finding(default_sweep, "pfnmap/huge_leaf_alignment")
    df = rows(default_sweep, "pfnmap").filter((pl.col("param_compound_order") >= 9)
                                              & pl.col("metric_ns_per_load").is_not_null())
    huge = df.filter(pl.col("metric_huge_fraction") > 0.5)["metric_speedup_vs_pte"].median()
    rest = df.filter(pl.col("metric_huge_fraction") <= 0.5)["metric_speedup_vs_pte"].median()
    assert (f.data["aligned"], f.data["misaligned"]) == pytest.approx((huge, rest))
    n = df.filter(pl.col("metric_huge_fraction") > 0.5).height
    assert f.data["aligned_n"] == n and f"({n:,} points)" in f.text
    assert f.data["aligned"] > 1.2 and f.data["misaligned"] == pytest.approx(1.0, abs=0.05)


def test_young_batching_by_order(default_sweep):
    """The best and worst folio orders of the arm64 batched speedup, as medians of the rows."""
    f = finding(default_sweep, "young/young_batching")
    df = rows(default_sweep, "young").filter((pl.col("param_batching") == "batched") & (pl.col("param_arch") == "arm64"))
    med = df.group_by("param_compound_order").agg(pl.col("metric_speedup_vs_per_pte").median()).sort(
        "metric_speedup_vs_per_pte")
    assert f.data["best_at"] == med["param_compound_order"][-1]
    assert f.data["best"] == pytest.approx(med["metric_speedup_vs_per_pte"][-1])
    assert f.data["worst"] == pytest.approx(med["metric_speedup_vs_per_pte"][0])
    assert med.filter(pl.col("param_compound_order") == f.data["worst_at"])["metric_speedup_vs_per_pte"][0] == \
        pytest.approx(f.data["worst"])
    yf = df.group_by("param_young_fraction").agg(pl.col("metric_speedup_vs_per_pte").median()).sort(
        "param_young_fraction")
    assert (f.data["yf_low"], f.data["yf_high"]) == pytest.approx(
        (yf["metric_speedup_vs_per_pte"][0], yf["metric_speedup_vs_per_pte"][-1]))
    assert f"at folio order {f.data['best_at']}," in f.text and f.text.endswith(".")


def test_medium_and_inline_findings_match_the_rows(default_sweep):
    """pmem vs DRAM speedups of template_nt_inline (map=dev), and the inline-over-call gain, from the rows."""
    sweep = Sweep(default_sweep)
    df = rows(default_sweep, "memmap")
    m = finding(sweep, "memmap/medium")
    dev = df.filter((pl.col("param_map") == "dev") & (pl.col("param_strategy") == "template_nt_inline")
                    & (pl.col("param_mode") == "devdax"))
    assert (m.data["devdax_dram"], m.data["devdax_pmem"]) == pytest.approx(
        (dev.filter(pl.col("param_medium") == "dram")["metric_speedup_vs_slow"].median(),
         dev.filter(pl.col("param_medium") == "pmem")["metric_speedup_vs_slow"].median()))
    # each speedup with the median of its rows' error bars, and only the digits that bar supports
    dram = dev.filter(pl.col("param_medium") == "dram")
    value, lo, hi = (dram[c].median() for c in ("metric_speedup_vs_slow", "lo_speedup_vs_slow", "hi_speedup_vs_slow"))
    text, bar = bar_parts(value, lo, hi, 2)
    assert 0 < max(value - lo, hi - value) < value / 2 and f"devdax {text}x ({bar}) on DRAM" in m.text, m.text
    inline = finding(sweep, "memmap/inline_movnti")
    assert inline.data["max_gain"] >= inline.data["min_gain"] >= 1.0 - 1e-9
    wide = df.filter(pl.col("param_strategy").is_in(["template_nt", "template_nt_inline"])).pivot(
        "param_strategy", index=[c for c in df.columns if c.startswith("param_") and c != "param_strategy"],
        values="metric_init_ms").drop_nulls(["template_nt", "template_nt_inline"])
    size, mode = inline.data["max_gain_at"]
    at = wide.filter((pl.col("param_struct_page_size") == size) & (pl.col("param_mode") == mode))
    assert inline.data["max_gain"] == pytest.approx((at["template_nt"] / at["template_nt_inline"]).median())
    assert inline.data["max_gain_n"] == at.height and f"matters most at {size} B {mode}:" in inline.text


def test_a_sweep_without_those_models_gets_no_findings_and_says_so(tmp_path):
    """Only an unknown model: no finding, and the section says why instead of staying empty."""
    df = pl.DataFrame({"param_i": [1, 2], "status": "ok", "metric_i_squared": [1, 4]})
    sweep = Sweep(write_sweep(tmp_path, "other", {"other": df}))
    assert F.key_findings(sweep) == []
    assert "none of the rows" in F.findings_html([], set(), html.escape)


def test_findings_html_escapes_and_links_only_drawn_figures():
    """Text is escaped; a finding links to its figure only when that figure was drawn."""
    fs = [F.Finding(text="a <b> & c", figure="memmap_init"), F.Finding(text="d", figure="young_scan")]
    page = F.findings_html(fs, {"memmap_init"}, html.escape)
    assert "a &lt;b&gt; &amp; c" in page and 'href="#fig-memmap_init"' in page and "#fig-young_scan" not in page


@pytest.mark.slow
def test_the_default_report_opens_with_its_findings(default_sweep, tmp_path):
    """report.html's first section after the navigation is Key findings, one list item per finding."""
    from analysis.report.page import write_report

    page = (tmp_path / "r.html")
    write_report(default_sweep, str(page))
    text = page.read_text()
    section = text[text.index('<section id="key-findings">'):text.index('<section id="summary">')]
    assert section.count("<li ") == len(F.key_findings(Sweep(default_sweep))) >= 6
    assert text.index("Key findings") < text.index("<h2>Summary</h2>")


def test_a_ratio_whose_most_and_least_read_alike_shows_its_range(tmp_path):
    """One (struct page size, mode) group: "most at 64 B devdax: 1.25x; least at 64 B devdax: 1.25x" would hide
    that single configurations go from 1.00x to 1.51x; the finding says there is one group, and the range."""
    df = pl.DataFrame({
        "param_namespace_size": [1 << 30, 1 << 30, 4 << 40, 4 << 40], "param_struct_page_size": 64,
        "param_mode": "devdax", "param_strategy": ["template_nt", "template_nt_inline"] * 2, "status": "ok",
        "metric_init_ms": [10.0, 10.0, 15.1, 10.0]})
    found = {f.id: f for f in F.key_findings(Sweep(write_sweep(tmp_path, "one", {"memmap": df})))}
    text = found["memmap/inline_movnti"].text
    assert text == ("template_nt_inline over template_nt (memmap): median 1.25x, in the one struct page size x mode "
                    "group this sweep has (64 B devdax), over 2 configurations; single configurations range from "
                    "1.00x to 1.51x."), text
    assert "most at" not in text


def test_the_accuracy_finding_leads_with_the_figures_never_fit(seed_sweep):
    """Leave-one-out first (each fitted figure predicted by a fit without it, as the profile records it), then
    the validation figures (never fit); the residual on the fitted figures last, called in-sample."""
    from workers import get_model, interval
    from workers.profiles import load_profile

    finding = F.published(Sweep(seed_sweep))
    loo, val, in_sample, bars = finding.text.split("; ")
    assert loo.startswith("Leave-one-out (each of 35 fitted figures predicted by a fit without it), the model's "
                          "median |error| is ")
    assert val.startswith("against 6 validation figures, never fit, it is ")
    assert in_sample.startswith("on the 35 figures the profile was fit to (in-sample, not a test of accuracy) it is ")
    # then the error bars' own check: the figures inside the bar at their point, as workers.interval counts them
    models = [get_model(m) for m in ("memmap", "pfnmap", "young")]
    left = [h for m in models for h in interval.coverage(m, load_profile("seed"))]
    fit = [h for m in models for h in interval.stored(m, load_profile("seed"))]
    out, checks = [h for h in left if h.use == "fit"], [h for h in left if h.use == "validation"]
    inside = sum(h.inside for h in fit + checks)
    assert bars == (f"its error bars hold {inside} of 41 published figures at their own point (fit figures: "
                    f"{sum(h.inside for h in fit)} of 35, validation figures: {sum(h.inside for h in checks)} of 6, "
                    f"each fit figure left out of its own bar: {sum(h.inside for h in out)} of 35).")
    assert finding.data["covered_of"] == 41 and sum(h.inside for h in fit) == 35 and inside >= 0.9 * 41


def test_the_accuracy_finding_is_the_models_whatever_points_the_sweep_holds(tmp_path):
    """A sweep that holds none of memmap's figure points (one 2 GiB row) quotes memmap's accuracy over all
    its figures: the profile's leave-one-out errors, and each figure evaluated under the sweep's profile."""
    df = pl.DataFrame({"source": ["model"], "status": ["ok"], "param_namespace_size": [2 * 2 ** 30],
                       "param_mode": ["devdax"], "param_strategy": ["slow"], "metric_init_ms": [1.0]})
    alone = F.published(Sweep(write_sweep(tmp_path, "two", {"memmap": df})))
    assert alone.text.startswith("Leave-one-out (each of 8 fitted figures predicted by a fit without it)")
    assert "against 5 validation figures, never fit" in alone.text and "on the 8 figures the profile" in alone.text
    assert "(worst +14.6%, memmap/fsdax/template)" in alone.text  # the profile's own LOO record
    assert (alone.data["loo"], alone.data["validation"], alone.data["fit"]) == (8, 5, 8)
