"""The report's tables: counts, reasons, provenance, winners, speedups, growth, overhead, published."""

from __future__ import annotations

from dataclasses import replace

import polars as pl
import pytest

from analysis.report import overview as O
from analysis.read import Sweep
from tests.analysis.conftest import write_sweep


def young_frame() -> pl.DataFrame:
    """batched is 4x faster than per_pte; time grows linearly with size, except one knee series."""
    rows = []
    for arch in ("arm64", "x86_64"):
        for size_gib in (1, 2, 4, 8, 16, 32):
            knee = arch == "x86_64" and size_gib > 4
            t = float(size_gib) * (size_gib / 4 if knee else 1.0)
            rows += [{"param_namespace_size": size_gib << 30, "param_arch": arch, "param_batching": "per_pte",
                      "metric_scan_ms": 4 * t},
                     {"param_namespace_size": size_gib << 30, "param_arch": arch, "param_batching": "batched",
                      "metric_scan_ms": t}]
    ok = pl.DataFrame(rows).with_columns(pl.lit("ok").alias("status"), pl.lit(None, dtype=pl.Utf8).alias("reason"))
    bad = pl.DataFrame({"param_namespace_size": [1 << 30] * 3, "param_arch": ["arm64"] * 3,
                        "param_batching": ["batched"] * 3, "metric_scan_ms": [None] * 3,
                        "status": ["infeasible", "infeasible", "error"],
                        "reason": ["folio <too> small", "folio <too> small", "ZeroDivisionError: boom"]},
                       schema_overrides={"metric_scan_ms": pl.Float64})
    return pl.concat([ok, bad])


@pytest.fixture
def sweep(tmp_path) -> Sweep:
    return Sweep(write_sweep(tmp_path, "ov", {"young": young_frame()}))


def test_status_summary_counts_rows_by_status(sweep):
    """ok / infeasible / error per model, against the manifest's expected points."""
    t = O.status_summary(sweep)
    assert t.frame.row(0, named=True) == {"model": "young", "source": "model", "version": "1",
                                          "points expected": "27", "rows": "27",
                                          "ok": "24", "infeasible": "2", "error": "1"}
    assert "27 rows of 27 expected (27 points)" in t.caption


def test_reasons_are_counted_most_frequent_first(sweep):
    """Reasons keep their text (escaping is the HTML layer's job) and are sorted by count."""
    f = O.reasons(sweep).frame
    assert f.rows() == [("young", "model", "infeasible", "2", "folio <too> small"),
                        ("young", "model", "error", "1", "ZeroDivisionError: boom")]


def test_provenance_lists_hosts_cpus_versions_commits_and_nodes(sweep):
    """One line each, from the env_* columns of every model's rows."""
    items = dict(O.provenance(sweep).frame.rows())
    assert items["hosts"] == "host-a" and items["CPU models"] == "CPU <X>"
    assert items["git commits"] == "abc123" and items["Ray nodes"] == "1"
    assert items["memsweep versions"] == "0.1.0"


def test_best_tables_count_wins_and_list_winners(sweep):
    """batched wins every configuration; the per-configuration table shows it 4x over per_pte."""
    wins, per_config = O.best_tables(sweep)
    assert wins.frame.rows() == [("batched", "12", "100.0%")]
    rows = per_config.frame.to_dicts()
    assert {r["arch"] for r in rows} == {"arm64", "x86_64"}
    assert all(r["best batching"] == "batched" and r["speedup over per_pte"] == "4.00x" for r in rows)


def test_best_and_speedup_tables_follow_the_models_declared_comparison(sweep, monkeypatch):
    """The tables follow the model object: young's best_keys give the columns; without a comparison, none."""
    young = sweep.model_object("young")
    assert list(O.best_tables(sweep)[1].frame.columns[:1]) == ["arch"]  # young.best_keys: compound_order, arch
    plain = type("Plain", (type(young),), {"report": replace(young.report, comparison=None)})()
    monkeypatch.setattr(sweep, "model_object", lambda m: plain if m == "young" else None)
    assert O.best_tables(sweep) == [] and O.speedup_tables(sweep) == []


def test_speedup_table_gives_min_median_max_per_variant(sweep):
    """Speedup over per_pte: exactly 4x for batched, 1x for per_pte itself."""
    (t,) = O.speedup_tables(sweep)
    assert t.frame.rows() == [("batched", "12", "4.00x", "4.00x", "4.00x"), ("per_pte", "12", "1.00x", "1.00x",
                                                                                "1.00x")]


def test_growth_table_finds_linear_series_and_the_knee(sweep):
    """Exponents 1 for the linear series; the x86 series changes from slope 1 to 2 after 4GiB."""
    summary, regimes = O.growth_tables(sweep)
    row = summary.frame.row(0, named=True)
    assert row["series"] == "4" and row["exponent min"] == "1.000" and row["series changing regime"] == "2 of 4"
    assert regimes.frame.rows() == [("2", "4GiB", "1.00", "2.00", "arch=x86_64, batching=batched")]  # first by axes


def test_memmap_overhead_table_shows_where_the_vmemmap_optimization_applies(small_sweep):
    """map=mem, P = 64, order 9: optimized; P = 80 and 96 lose it; map=dev never has it."""
    (t,) = O.declared_tables(Sweep(small_sweep))  # memmap's one table (workers/models/memmap/report.py)
    assert t.title == "memmap overhead by map location, struct page size and compound order"
    assert t.caption.startswith("Medians over mode and align. Held fixed: ") and "nvdimm_kmsan=true" in t.caption
    assert t.frame.columns == ["map", "struct page", "compound order", "device bytes", "DRAM bytes", "overhead",
                               "vmemmap optimized"]
    rows = {(r["map"], r["struct page"], r["compound order"]): r for r in t.frame.to_dicts()}
    assert rows[("mem", "64 B", "9")]["vmemmap optimized"] == "yes"
    assert rows[("mem", "80 B", "9")]["vmemmap optimized"] == "no"
    assert rows[("mem", "96 B", "9")]["vmemmap optimized"] == "no"
    assert {r["vmemmap optimized"] for k, r in rows.items() if k[0] == "dev"} == {"no"}
    # map=dev keeps only the vmemmap's page tables in DRAM: 2 tables of 4 KiB for this small namespace
    assert rows[("dev", "64 B", "0")]["DRAM bytes"] == "8KiB"


def test_published_table_compares_every_figure(small_sweep):
    """Every published figure is listed; those whose point is in the sweep get a model value and error."""
    t = O.published_table(Sweep(small_sweep))
    rows = {r["figure"]: r for r in t.frame.to_dicts()}
    assert rows["memmap/fsdax/slow"]["model"].endswith(" ms") and rows["memmap/fsdax/slow"]["error"] != "-"
    assert rows["pfnmap/lat_mem_rd/pmd/64MiB"]["published"] == "100.780 ns"
    assert "of" in t.caption and "median |error|" in t.caption


def test_tables_for_a_sweep_without_comparisons_are_empty(tmp_path):
    """An unknown model gets a status line but no winner, speedup or overhead tables."""
    df = pl.DataFrame({"param_i": [1, 2], "status": "ok", "metric_i_squared": [1, 4]})
    s = Sweep(write_sweep(tmp_path, "probe", {"probe": df}))
    assert O.best_tables(s) == [] and O.speedup_tables(s) == [] and O.declared_tables(s) == []
    assert O.status_summary(s).frame["ok"].to_list() == ["2"]


def both_sources(tmp_path) -> Sweep:
    """young_frame modeled, and its ok rows measured at 1.5x the modeled time."""
    model = young_frame().with_columns(pl.lit("model").alias("source"),
                                       pl.int_range(pl.len(), dtype=pl.UInt64).alias("point_id"))
    measured = model.filter(pl.col("status") == "ok").with_columns(pl.lit("measured").alias("source"),
                                                                   pl.col("metric_scan_ms") * 1.5)
    return Sweep(write_sweep(tmp_path, "both", {"young": pl.concat([model, measured])}))


def test_status_summary_has_one_line_per_source(tmp_path):
    """Modeled and measured rows are counted apart."""
    rows = {r["source"]: r for r in O.status_summary(both_sources(tmp_path)).frame.to_dicts()}
    assert (rows["model"]["rows"], rows["model"]["error"]) == ("27", "1")
    assert (rows["measured"]["rows"], rows["measured"]["ok"]) == ("24", "24")


def test_measured_tables_give_measured_over_model_per_metric_and_point(tmp_path):
    """Every measured point is 1.5x its modeled value; the points table lists them."""
    summary, points = O.measured_tables(both_sources(tmp_path))
    assert summary.frame.rows() == [("metric_scan_ms", "24", "1.50", "1.50", "1.50")]
    assert points.frame.height == 24 and set(points.frame["measured / model"]) == {"1.50"}
    assert points.frame["point"][0] == "namespace_size=1GiB, arch=arm64, batching=batched"


def test_tables_of_modeled_metrics_use_modeled_rows_only(tmp_path):
    """Speedups come from the modeled rows alone (the measured ones would double the configurations)."""
    (t,) = O.speedup_tables(both_sources(tmp_path))
    assert t.frame.rows()[0] == ("batched", "12", "4.00x", "4.00x", "4.00x")


def test_best_tables_show_ties_as_ties(tmp_path):
    """Where two copy paths take the same time, the win table has a 'tie: ...' line counted apart, and the
    per-configuration table lists both."""
    rows = [{"param_struct_page_size": p, "param_inline_sizes": "mainline", "param_strategy": st,
             "metric_ns_per_copy": t, "status": "ok"}
            for p, times in ((16, (5.0, 3.0, 3.0)), (64, (8.0, 6.0, 4.0)))
            for st, t in zip(("memcpy", "nt_call", "nt_inline"), times)]
    s = Sweep(write_sweep(tmp_path, "ties", {"copy": pl.DataFrame(rows)}))
    wins, per_config = O.best_tables(s)
    assert sorted(wins.frame.rows()) == [("nt_inline", "1", "50.0%"), ("tie: nt_call = nt_inline", "1", "50.0%")]
    assert "tie" in wins.caption
    best = dict(zip(per_config.frame["struct_page_size"], per_config.frame["best copy path"]))
    assert best == {"16": "tie: nt_call = nt_inline", "64": "nt_inline"}
