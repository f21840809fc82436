"""What the answers rest on, as tables and findings list it (analysis/evidence.py)."""

from __future__ import annotations

import json

import polars as pl
import pyarrow.parquet as pq

import analysis.evidence as ev_module
from analysis.evidence import note_lines, sentence, summarize
from analysis.read import ModelRows, Sweep
from sweeps.run.driver import run
from sweeps.spec.load import parse_spec
from tests.analysis.conftest import write_sweep
from workers import evaluate, evidence as produced, get_model
from workers.dataset import PART_EVIDENCE_AXES
from workers.model import points_frame
from workers.profiles import load_profile


MEMMAP, SEED = get_model("memmap"), load_profile("seed")
BASE = dict(align="2MiB", mode="fsdax", map="dev", strategy="template", namespace_size="100GiB")


def produced_sweep(tmp_path, points: list[dict], name: str = "ev") -> ModelRows:
    """A sweep folder of memmap rows labelled by workers.evidence itself (never hand-written evidence)."""
    rows = evaluate(MEMMAP, points_frame(MEMMAP, points), SEED)
    stored = pl.concat([rows, produced.label(MEMMAP, SEED, rows)], how="horizontal").with_columns(
        pl.lit("model").alias("source"))
    return Sweep(write_sweep(tmp_path, name, {"memmap": stored})).rows("memmap")


def test_values_of_an_axis_equally_far_from_a_figure_share_a_line(tmp_path):
    """Three start offsets with no figure are one line naming them in order; two namespace sizes past the
    largest with a figure are one line with the farthest ratio; an assumption is its own line, and the
    sentence names the axes and the assumption. All read from the producer's data, not its words."""
    rows = produced_sweep(tmp_path, [
        {**BASE, "start_offset": "4MiB", "namespace_size": "4TiB"},
        {**BASE, "start_offset": "10MiB", "namespace_size": "1TiB"},
        {**BASE, "start_offset": "2MiB", "namespace_size": "16GiB"}])
    ev = summarize(rows, rows.scan(), "metric_init_ms")
    assert ev.counts == (("extrapolated", 2), ("assumed", 1))
    assert ev.notes == (
        "start_offset 2MiB, 4MiB, 10MiB: no figure (figures at 0)",
        "namespace_size 1TiB, 4TiB: up to 41x the largest with a figure (100GiB)",
        "assumed: LLC-warm struct pages (copy.warm_llc)",
        "namespace_size 16GiB: 1/6.2 of the smallest with a figure (100GiB)",
    )
    assert note_lines(ev, limit=2) == ["extrapolated and assumed answers rest on (the first 2 of 4, by rows):",
                                       "  start_offset 2MiB, 4MiB, 10MiB: no figure (figures at 0)",
                                       "  namespace_size 1TiB, 4TiB: up to 41x the largest with a figure (100GiB)"]
    assert sentence(ev) == ("Evidence: its 3 rows are 1 assumed (LLC-warm struct pages (copy.warm_llc)) and "
                            "2 extrapolated (along namespace_size, start_offset).")
    # the count rests on the kernel's arithmetic: the cost assumption is no part of it
    assert summarize(rows, rows.scan(), "metric_memmap_pages").notes == ()


def test_many_values_on_one_line_are_the_first_and_the_last(tmp_path):
    """31 start offsets: in order, abbreviated."""
    rows = produced_sweep(tmp_path, [{**BASE, "start_offset": f"{mib}MiB"} for mib in range(2, 64, 2)])
    assert summarize(rows, rows.scan(), "metric_init_ms").notes == (
        "start_offset 2MiB, 4MiB, 6MiB, ..., 62MiB (31 values): no figure (figures at 0)",)


def test_a_sweep_of_schema_6_lists_its_notes_as_written(tmp_path):
    """Before schema 7 the evidence was the label and the note alone: the labels are read as stored and the
    notes listed whole, most rows first, nothing parsed out of them."""
    rows = produced_sweep(tmp_path, [{**BASE, "namespace_size": "4TiB"}, {**BASE, "namespace_size": "4TiB"},
                                     {**BASE, "namespace_size": "1TiB"}])
    old = rows.scan().drop("evidence_figure", "evidence_error", "evidence_axes", "evidence_assumptions").collect()
    six = Sweep(write_sweep(tmp_path, "six", {"memmap": old})).rows("memmap")
    ev = summarize(six, six.scan(), "metric_init_ms")
    assert ev.counts == (("extrapolated", 3),) and ev.notes == (
        "namespace_size 4TiB: 41x the largest with a figure (100GiB)",
        "namespace_size 1TiB: 10x the largest with a figure (100GiB)")


def test_a_count_reads_kernel_checked_only_where_a_guest_bound_its_point(tmp_path):
    """In a sweep, memmap_pages is `kernel-checked` at a point the recorded kernel results bound and
    `extrapolated` at 4 TiB, whatever the row's stored (headline) label: the producer's rule
    (KernelCheck.bound), read by the same expression."""
    from analysis.evidence import label_expr

    memmap, seed = get_model("memmap"), load_profile("seed")
    points = points_frame(memmap, [dict(namespace_size="2GiB", align="2MiB", mode="devdax", map="mem"),
                                   dict(namespace_size="4TiB", align="2MiB", mode="devdax", map="mem")])
    rows = evaluate(memmap, points, seed)
    stored = pl.concat([rows, produced.label(memmap, seed, rows)], how="horizontal").with_columns(
        pl.lit("model").alias("source"))
    sw = Sweep(write_sweep(tmp_path, "k", {"memmap": stored}))
    got = sw.rows("memmap").scan().select(label_expr(sw.rows("memmap"), "metric_memmap_pages")).collect()
    assert got.to_series().to_list() == ["kernel-checked", "extrapolated"]
    assert got.to_series().to_list() == produced.label(memmap, seed, rows, "metric_memmap_pages")["evidence"].to_list()


def test_counting_by_axis_value_agrees_with_reading_each_rows_entries(tmp_path, monkeypatch):
    """summarize counts far rows by their axis values (far_values, the distinct entries read once); a model
    whose axes are not known counts each row's evidence_axes entries. Both give the same Evidence, for the
    whole sweep and for a filtered part of it."""
    rows = produced_sweep(tmp_path, [
        {**BASE, "namespace_size": size, "start_offset": offset, "align": align, "strategy": strategy}
        for size in ("16GiB", "100GiB", "1TiB", "4TiB") for offset in ("0", "4MiB", "10MiB")
        for align in ("2MiB", "1GiB") for strategy in ("template", "slow")])
    parts = [rows.scan(), rows.scan().filter(pl.col("param_strategy") == "slow")]
    by_value = [summarize(rows, lf, m) for lf in parts for m in ("metric_init_ms", "metric_memmap_pages")]
    assert ev_module.far_values(rows)  # the by-value count ran
    monkeypatch.setattr(ev_module, "far_values", lambda rows: None)
    assert [summarize(rows, lf, m) for lf in parts for m in ("metric_init_ms", "metric_memmap_pages")] == by_value
    assert by_value[0].notes and by_value[0].rows == 48


def test_a_parts_footer_lists_its_rows_distinct_entries_and_the_count_reads_them(ray_local, tmp_path, monkeypatch):
    """`memsweep run` writes each part's distinct evidence_axes entries into its footer; summarize counts by
    them what it counts row by row."""
    spec = parse_spec('name = "far"\nmodels = ["memmap"]\nchunk_points = 16\n[axes.memmap]\n'
                      'namespace_size = ["16GiB", "100GiB", "1TiB"]\nstart_offset = ["0", "4MiB"]\n'
                      'align = ["2MiB", "1GiB"]\nstrategy = ["slow", "template"]\nstruct_page_size = [64, 80]\n')
    run(spec, str(tmp_path), progress=False)
    parts = sorted((tmp_path / "far" / "model=memmap").glob("part-*.parquet"))
    assert len(parts) == 3
    for part in parts:
        listed = json.loads(pq.read_metadata(part).metadata[PART_EVIDENCE_AXES.encode()])
        stored = pl.read_parquet(part).select(pl.col("evidence_axes").explode().struct.unnest()).drop_nulls("axis")
        assert listed and pl.DataFrame(listed, schema=stored.schema).sort("axis", "value").equals(
            stored.unique().sort("axis", "value"))
    rows = Sweep(str(tmp_path / "far")).rows("memmap")
    by_footer = [summarize(rows, rows.scan(), m) for m in ("metric_init_ms", "metric_memmap_pages")]
    assert by_footer[0].notes and by_footer[0].axes == ("namespace_size", "align", "start_offset")
    monkeypatch.setattr(ev_module, "far_values", lambda rows: None)
    assert [summarize(rows, rows.scan(), m) for m in ("metric_init_ms", "metric_memmap_pages")] == by_footer


def test_each_metric_reads_its_own_figures_label(tmp_path):
    """Rows store the headline's label; a metric reads its own (workers.evidence.only()). At 100 GiB fsdax
    map=dev the init time is `fit` (a fit figure's point) while the speedup there is `validated` (v1's and
    v3's figures, within the stated error), while at devdax, where v1's and v3's speedups miss by more than
    the stated error, it is not validated. The compute time has no figure: the fit points check nothing of
    it; the instructions are fit at 16 GiB, among the kernel rows their costs were fit to.
    The sweep's read-time label and the producer's label for the metric agree row by row."""
    from analysis.evidence import label_expr

    at = [dict(BASE, mode=mode, strategy=s) for mode in ("fsdax", "devdax") for s in ("template_nt_inline", "template")]
    rows = produced_sweep(tmp_path, at + [dict(BASE, namespace_size="16GiB")])
    stored = rows.scan().select("evidence").collect().to_series().to_list()
    assert stored == ["fit"] * 4 + ["assumed"]  # the headline's
    q = produced.domain(MEMMAP, SEED).stated["metric_speedup_vs_slow"]
    speedups = rows.scan().select("metric_speedup_vs_slow").collect().to_series().to_list()
    published = [2.615, 1.109, 2.681, 1.304]
    within = [abs(v / p - 1) <= q for v, p in zip(speedups, published)]
    assert within == [True, True, False, False]  # what the labels and notes below rest on, at this profile
    fresh = evaluate(MEMMAP, points_frame(MEMMAP, at + [dict(BASE, namespace_size="16GiB")]), SEED)
    for metric in ("metric_init_ms", "metric_speedup_vs_slow", "metric_init_instructions", "metric_compute_ms"):
        got = rows.scan().select(label_expr(rows, metric)).collect().to_series().to_list()
        assert got == produced.label(MEMMAP, SEED, fresh, metric)["evidence"].to_list(), metric
        if metric == "metric_speedup_vs_slow":
            assert got == ["validated" if w else "extrapolated" for w in within] + ["assumed"]
        elif metric == "metric_init_ms":
            assert got == stored
        elif metric == "metric_init_instructions":  # no guest counted 100 GiB; 16 GiB is among the fit's rows
            assert got == ["extrapolated"] * 4 + ["fit"]
        else:  # no figure of its own: the fit points check nothing of it; at 16 GiB LLC warmth is assumed
            assert got == ["extrapolated"] * 4 + ["assumed"], metric
    note = produced.label(MEMMAP, SEED, fresh, "metric_speedup_vs_slow")["evidence_note"].to_list()
    assert note[0].startswith("validated by memmap/validation/v1/fsdax/template_nt_inline, ")
    # a speedup that misses its validation figure says by how much, not "fit to ..."
    notes = summarize(rows, rows.scan(), "metric_speedup_vs_slow").notes
    assert (f"memmap/validation/v1/devdax/template_nt_inline: {100 * (speedups[2] / 2.681 - 1):+.1f}% from it, "
            f"beyond the model's stated {q:.1%}") in notes
    assert not any(n.startswith("fit to") for n in notes)
