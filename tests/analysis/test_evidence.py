"""What the answers rest on, as tables and findings list it (analysis/evidence.py)."""

from __future__ import annotations

import polars as pl

from analysis.evidence import Evidence, _fragments, note_lines, sentence


def test_values_of_an_axis_equally_far_from_a_figure_share_a_line():
    """Three start offsets with no figure are one line naming them in order; two namespace sizes past the
    largest with a figure are one line with the farthest ratio; an assumption and a lone value stay whole."""
    notes = pl.DataFrame({"note": [
        "start_offset 4MiB: no figure (figures at 0); namespace_size 4TiB: 41x the largest with a figure (100GiB)",
        "start_offset 10MiB: no figure (figures at 0); namespace_size 1TiB: 10x the largest with a figure (100GiB)",
        "start_offset 2MiB: no figure (figures at 0); assumed: LLC-warm struct pages (copy.warm_llc)",
        "align 64KiB: between values with figures (4KiB .. 2MiB)",
    ], "n": [50, 30, 20, 5]})
    assert _fragments(notes) == (
        "start_offset 2MiB, 4MiB, 10MiB: no figure (figures at 0)",
        "namespace_size 1TiB, 4TiB: up to 41x the largest with a figure (100GiB)",
        "assumed: LLC-warm struct pages (copy.warm_llc)",
        "align 64KiB: between values with figures (4KiB .. 2MiB)",
    )
    ev = Evidence(counts=(("extrapolated", 85), ("assumed", 20)), notes=_fragments(notes))
    assert note_lines(ev, limit=2) == ["extrapolated and assumed answers rest on (the first 2 of 4, by rows):",
                                       "  start_offset 2MiB, 4MiB, 10MiB: no figure (figures at 0)",
                                       "  namespace_size 1TiB, 4TiB: up to 41x the largest with a figure (100GiB)"]
    assert "(along start_offset, namespace_size, align)" in sentence(ev)


def test_many_values_on_one_line_are_the_first_and_the_last():
    """31 start offsets (a dataset written before the notes gave bytes as sizes): in order, abbreviated."""
    offsets = [mib * 2 ** 20 for mib in range(2, 64, 2)]
    notes = pl.DataFrame({"note": [f"start_offset {b}: no figure (figures at 0)" for b in offsets], "n": [1] * 31})
    assert _fragments(notes) == ("start_offset 2097152, 4194304, 6291456, ..., 65011712 (31 values): no figure "
                                 "(figures at 0)",)


def test_a_count_reads_kernel_checked_only_where_a_guest_bound_its_point(tmp_path):
    """In a sweep, memmap_pages is `kernel-checked` at a point the recorded kernel results bound and
    `extrapolated` at 4 TiB, whatever the row's stored (headline) label: the producer's rule
    (KernelCheck.bound), read by the same expression."""
    from analysis.evidence import label_expr
    from analysis.read import Sweep
    from tests.analysis.conftest import write_sweep
    from workers import evaluate, evidence as produced, get_model
    from workers.model import points_frame
    from workers.profiles import load_profile

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


def test_the_producers_own_notes_are_the_ones_analysis_groups(tmp_path):
    """Notes as workers.evidence writes them (not hand-written): analysis reads each axis's distance and
    groups the values of one axis, so a change of the producer's wording fails here, not in a user's report."""
    from analysis.evidence import _fragments
    from workers import evaluate, evidence as produced, get_model
    from workers.model import points_frame
    from workers.profiles import load_profile

    memmap, seed = get_model("memmap"), load_profile("seed")
    base = dict(align="2MiB", mode="fsdax", map="dev", strategy="template")
    points = points_frame(memmap, [{**base, "namespace_size": "1TiB"}, {**base, "namespace_size": "4TiB"},
                                   {**base, "namespace_size": "100GiB", "start_offset": "2MiB"},
                                   {**base, "namespace_size": "100GiB", "start_offset": "4MiB"}])
    notes = produced.label(memmap, seed, evaluate(memmap, points, seed))["evidence_note"]
    got = _fragments(pl.DataFrame({"note": notes, "n": [1, 1, 1, 1]}))
    assert "namespace_size 1TiB, 4TiB: up to 41x the largest with a figure (100GiB)" in got
    assert got == ("namespace_size 1TiB, 4TiB: up to 41x the largest with a figure (100GiB)",
                   "start_offset 2MiB, 4MiB: no figure (figures at 0)")
