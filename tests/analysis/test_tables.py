"""Mailing-list text tables: the pfnmap RFC's two tables, formatting, and bad arguments."""

from __future__ import annotations

import re

import polars as pl
import pytest

from analysis.exceptions import AnalysisError
from analysis.tables import format_value, improvement, render, text_table
from tests.analysis.conftest import write_sweep
from tests.conftest import memsweep
from workers import get_model

RFC_LATENCY = """\
working_set    PTE (order 0)    PMD (order 9)    Improvement
-----------    -------------    -------------    -----------
64MiB          148.858 ns       100.780 ns       32.3%
128MiB         164.745 ns       103.537 ns       37.2%
256MiB         169.907 ns       103.179 ns       39.3%
512MiB         171.285 ns       103.072 ns       39.8%
1GiB           173.054 ns       103.055 ns       40.4%
2GiB           172.820 ns       103.091 ns       40.3%
4GiB           172.877 ns       103.115 ns       40.4%"""

RFC_COPY = """\
working_set    PTE (order 0)    PMD (order 9)    Improvement
-----------    -------------    -------------    -----------
1GiB           95.76 ms         77.91 ms         18.6%
2GiB           190.87 ms        155.64 ms        18.5%
4GiB           380.84 ms        311.45 ms        18.2%"""


def rfc_sweep(tmp_path) -> str:
    """A hand-built pfnmap dataset holding exactly the RFC's published points (from figures())."""
    model = get_model("pfnmap")
    rows = []
    for f in model.calibration.figures:
        row = {a.column: a.canonical(f.params.get(a.name, a.default)) for a in model.axes}
        row.update({"metric_ns_per_load": None, "metric_copy_ms": None, f.metric: f.published})
        rows.append(row)
    schema = {**{a.column: a.dtype for a in model.axes}, "metric_ns_per_load": pl.Float64, "metric_copy_ms": pl.Float64}
    df = pl.DataFrame(rows, schema=schema).with_columns(pl.lit("ok").alias("status"))
    return write_sweep(tmp_path, "rfc", {"pfnmap": df})


def test_reproduces_the_rfc_latency_table(tmp_path):
    """Memory size rows, PTE / PMD columns and the improvement in percent, as in the RFC's cover letter."""
    out = text_table(rfc_sweep(tmp_path), model="pfnmap", rows="working_set", cols="compound_order",
                     metric="metric_ns_per_load")
    assert out.startswith("rfc: pfnmap ns_per_load, median over ok rows per cell (lower is better)")
    assert "access=lat_mem_rd_random\n" + RFC_LATENCY in out
    assert "memcpy_seq" not in out  # that block has no ns_per_load


def test_reproduces_the_rfc_copy_table(tmp_path):
    """The memcpy table: 1/2/4 GiB, ms, improvement 18.6 / 18.5 / 18.2 %."""
    out = text_table(rfc_sweep(tmp_path), model="pfnmap", rows="working_set", cols="compound_order",
                     metric="copy_ms")
    assert "access=memcpy_seq\n" + RFC_COPY in out


def body_rows(out: str, first_col: str = "namespace_size") -> tuple[list[str], list[str]]:
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith(first_col))
    body = []
    for line in lines[header + 2:]:
        if not line.strip():
            break
        body.append(line)
    return lines[header].split(), body


def test_seed_sweep_gives_both_rfc_tables(seed_sweep):
    """From the shipped seed sweep: 7 sizes (latency) and 3 sizes (copy) x PTE, PMD, Improvement,
    each improvement = (PTE - PMD) / PTE of its own cells."""
    lat = text_table(seed_sweep, model="pfnmap", rows="working_set", cols="compound_order")
    copy = text_table(seed_sweep, model="pfnmap", rows="working_set", cols="compound_order",
                      metric="metric_copy_ms")
    for out, unit, sizes in ((lat, "ns", ["64MiB", "128MiB", "256MiB", "512MiB", "1GiB", "2GiB", "4GiB"]),
                             (copy, "ms", ["1GiB", "2GiB", "4GiB"])):
        header, body = body_rows(out, "working_set")
        assert header == ["working_set", "PTE", "(order", "0)", "PMD", "(order", "9)", "Improvement"]
        assert [b.split()[0] for b in body] == sizes
        for b in body:
            # every cell is the point of a published figure the profile was fit to: marked F, with its error
            # bar (the spread of the leave-one-out fits) and only the digits the bar supports
            bar = r"((?:±|-)[\d.<]+(?:/\+[\d.<]+)?)%"  # as stored: "±4%" or "-7.7/+4%"
            m = re.match(rf"\S+\s+([\d.]+) {unit} {bar} F\s+([\d.]+) {unit} {bar} F\s+([\d.]+)%$", b)
            assert m, b
            pte, pmd, imp = float(m[1]), float(m[3]), float(m[5])
            for side in (m[2], m[4]):  # signed leave-one-out errors within 4%, and the refits: at most 2.5 x 4%
                assert all(0 <= float(p.lstrip("<")) < 10 for p in re.findall(r"[\d.<]+", side)), side
            assert pmd < pte and imp == pytest.approx(100 * (pte - pmd) / pte, rel=0.01)


def test_memsweep_table_prints_the_table(seed_sweep):
    """The CLI command prints the same table and exits 0."""
    r = memsweep("table", seed_sweep, "--model", "pfnmap", "--rows", "working_set", "--cols", "compound_order")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == text_table(seed_sweep, model="pfnmap", rows="working_set",
                                          cols="compound_order").strip()


def test_more_than_two_columns_get_one_improvement_column_each(tmp_path):
    """Three leaf orders: improvement of PMD and of PUD over PTE."""
    df = pl.DataFrame({"param_namespace_size": [1 << 30] * 3, "param_compound_order": [0, 9, 18],
                       "status": "ok", "metric_ns_per_load": [200.0, 100.0, 50.0]})
    out = text_table(write_sweep(tmp_path, "three", {"pfnmap": df}), model="pfnmap", rows="namespace_size",
                     cols="param_compound_order")
    assert re.split(r"\s{2,}", out.splitlines()[1]) == [
        "namespace_size", "PTE (order 0)", "PMD (order 9)", "PUD (order 18)", "Improvement PMD (order 9)",
        "Improvement PUD (order 18)"]
    assert out.splitlines()[3].split()[-2:] == ["50.0%", "75.0%"]


def test_higher_is_better_metrics_improve_upwards(tmp_path):
    """For GB/s, improvement is (new - base) / base."""
    df = pl.DataFrame({"param_struct_page_size": [64, 64], "param_strategy": ["memcpy", "nt_inline"],
                       "status": "ok", "metric_gbs": [4.0, 6.0]})
    out = text_table(write_sweep(tmp_path, "bw", {"copy": df}), model="copy", rows="struct_page_size",
                     cols="strategy", metric="gbs")
    assert "higher is better" in out and next(l for l in out.splitlines() if l.startswith("64")).split()[-1] == "50.0%"
    assert out.splitlines()[-1].startswith("profile seed: ")  # the profile and its calibration status, last


def test_modeled_and_measured_rows_get_a_block_each(tmp_path):
    """With both sources, the table splits into source=measured and source=model blocks."""
    df = pl.DataFrame({"param_namespace_size": [1 << 30] * 4, "param_compound_order": [0, 9] * 2,
                       "source": ["model", "model", "measured", "measured"], "status": "ok",
                       "metric_ns_per_load": [200.0, 100.0, 300.0, 150.0]})
    out = text_table(write_sweep(tmp_path, "src", {"pfnmap": df}), model="pfnmap", rows="namespace_size",
                     cols="compound_order")
    blocks = out.split("\n\n")
    assert blocks[1].startswith("source=measured\n") and "300.000 ns       150.000 ns       50.0%" in blocks[1]
    assert blocks[2].startswith("source=model\n") and "200.000 ns       100.000 ns       50.0%" in blocks[2]


def test_a_string_metric_is_tabulated_as_its_most_common_value(tmp_path, capsys):
    """memmap's dominant: the most common value per cell, its share when the cell's rows differ, no
    improvement column and no better direction; the CLI prints it and exits 0."""
    from sweeps.cli import main

    df = pl.DataFrame({"param_namespace_size": [1 << 30] * 5 + [2 << 30] * 2,
                       "param_strategy": ["slow", "slow", "slow", "template", "template", "slow", "template"],
                       "status": "ok", "metric_init_ms": [1.0] * 7,
                       "metric_dominant": ["memory", "latency", "memory", "compute", "compute", "memory", "memory"]})
    sweep = write_sweep(tmp_path, "dom", {"memmap": df})
    assert main(["table", sweep, "--model", "memmap", "--rows", "namespace_size", "--cols", "strategy",
                 "--metric", "metric_dominant"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("dom: memmap dominant, most common value over ok rows per cell (with its share of the "
                          "cell's rows when they differ)\n")
    assert out.splitlines()[1:5] == ["namespace_size    slow            template",
                                    "--------------    ----            --------",
                                    "1GiB              memory (67%)    compute",
                                    "2GiB              memory          memory"]


@pytest.mark.parametrize("kw, message", [
    ({"model": "nope"}, r"'--model' must be one of the models in this sweep \['pfnmap'\] \(got 'nope'\)"),
    ({"rows": "size"}, r"'--rows' must be an axis of model 'pfnmap', one of \[.*'namespace_size'.*\] \(got 'size'\)"),
    ({"cols": "namespace_size"}, r"'--cols' must be a different axis from '--rows'"),
    ({"metric": "ns"}, r"'--metric' must be a metric of model 'pfnmap', one of .* \(got 'ns'\)"),
])
def test_bad_arguments_raise_analysis_error(tmp_path, kw, message):
    """Unknown model, axis or metric, or rows == cols, say what is allowed."""
    args = {"model": "pfnmap", "rows": "namespace_size", "cols": "compound_order", "metric": None, **kw}
    with pytest.raises(AnalysisError, match=message):
        text_table(rfc_sweep(tmp_path), **args)


def test_memsweep_table_with_a_bad_argument_exits_2_with_the_message(tmp_path):
    """The CLI prints the AnalysisError's message and exits with the usage status."""
    r = memsweep("table", rfc_sweep(tmp_path), "--model", "pfnmap", "--rows", "size", "--cols", "compound_order")
    assert r.returncode == 2 and r.stdout == ""
    assert "memsweep table: error: '--rows' must be an axis of model 'pfnmap'" in r.stderr


def test_not_a_sweep_raises_analysis_error(tmp_path):
    """The folder must be a sweep."""
    with pytest.raises(AnalysisError, match=r"'OUT/SWEEP' must"):
        text_table(str(tmp_path / "x"), model="m", rows="a", cols="b")


def test_format_value_and_improvement():
    """Cells carry their unit (as workers.dataset.unit_of names it; µs written us, a fraction bare);
    sizes print binary; missing values print '-'."""
    assert format_value(148.858, "ns") == "148.858 ns"
    assert format_value(95.76, "ms") == "95.76 ms"
    assert format_value(2097152, "bytes") == "2MiB"
    assert format_value(12345.678, "ms") == "12345.7 ms"
    assert format_value(None, "ns") == "-" and format_value(float("nan"), "ns") == "-"
    assert format_value(3, "") == "3" and format_value(4.5, "GB/s") == "4.50 GB/s"
    assert format_value(1.23456, "µs") == "1.235 us" and format_value(0.25, "fraction") == "0.25"
    assert improvement(100.0, 60.0, higher=False) == "40.0%" and improvement(None, 1.0, False) == "-"
    assert render(["a", "bb"], [["xyz", "1"]]) == "a      bb\n-      --\nxyz    1"


def test_the_baseline_is_the_spec_s_first_value_so_young_s_published_gain_reads_as_published(seed_sweep):
    """young's per_pte -> batched at the seed's MGLRU arm64 figure (published 470 ms -> 180 ms, a 61.7% gain;
    modeled 466 -> 190) reads as a gain: per_pte is the spec's first value of batching, so it is the baseline,
    though 'batched' sorts first. The Improvement is 1 - batched / per_pte of the rows' own values."""
    out = text_table(seed_sweep, model="young", rows="namespace_size", cols="batching")
    block = out.split("arch=arm64, young_fraction=0.0, first_pte_cont=true, lru=mglru, unmap=batched\n")[1]
    header, row = block.splitlines()[0], block.splitlines()[2]
    assert header.split() == ["namespace_size", "per_pte", "batched", "Improvement"]
    rows = pl.read_parquet(f"{seed_sweep}/model=young/*.parquet").filter(
        (pl.col("source") == "model") & (pl.col("param_lru") == "mglru") & (pl.col("param_arch") == "arm64")
        & (pl.col("param_young_fraction") == 0.0) & pl.col("param_first_pte_cont"))
    per_pte, batched = (rows.filter(pl.col("param_batching") == b)["metric_scan_ms"].median() for b in
                        ("per_pte", "batched"))
    cells = row.split()  # a bar on every modeled answer, and the label (F: fit) of each
    assert (cells[0], cells[2], cells[4], cells[6]) == ("8GiB", "ms", "F", "ms")
    assert (float(cells[1]), float(cells[5])) == pytest.approx((per_pte, batched), rel=0.005)  # to the bar's digits
    assert cells[8:] == ["F", f"{1 - batched / per_pte:.1%}"] and 0.55 < 1 - batched / per_pte < 0.65
    assert all(re.fullmatch(r"(?:±[\d.]+|-[\d.]+/\+[\d.]+)%", cells[i]) for i in (3, 7)), cells


def test_a_named_baseline_comes_first_and_a_bad_one_names_the_values(seed_sweep):
    """--baseline batched compares per_pte with batched: -145.9% (466 ms over 190 ms), the same two cells the
    other way round."""
    out = text_table(seed_sweep, model="young", rows="namespace_size", cols="batching", baseline="batched")
    block = out.split("lru=mglru, unmap=batched\n")[1]
    assert block.splitlines()[0].split() == ["namespace_size", "batched", "per_pte", "Improvement"]
    assert block.splitlines()[2].split()[-1] == "-145.9%"
    with pytest.raises(AnalysisError, match=r"'--baseline' must be one of 'per_pte', 'batched' \(got 'none'\)"):
        text_table(seed_sweep, model="young", rows="namespace_size", cols="batching", baseline="none")


def test_where_keeps_the_points_asked_for_and_names_a_bad_axis(seed_sweep):
    """--where arch=x86_64 --where lru=mglru leaves one block; an axis the model lacks is named with the allowed."""
    out = text_table(seed_sweep, model="young", rows="namespace_size", cols="batching",
                     where=["arch=x86_64", "lru=mglru"])
    assert "arch=arm64" not in out and out.count("namespace_size    per_pte") == 1
    with pytest.raises(AnalysisError, match=r"'--where' must be an axis of model 'young', one of \[.*\] \(got 'cpu'\)"):
        text_table(seed_sweep, model="young", rows="namespace_size", cols="batching", where=["cpu=1"])


def test_counts_print_as_integers_and_sizes_change_by_a_size(tmp_path):
    """An integer metric's medians print as integers; a size metric gets its difference as a size, never a
    percentage of a byte count."""
    df = pl.DataFrame({"param_struct_page_size": [64, 64, 80, 80], "param_strategy": ["slow", "template"] * 2,
                       "status": "ok", "metric_stores": [4893184, 2060307, 5000000, 2100000],
                       "metric_memmap_dram_bytes": [0, 2 << 30, 1 << 20, (1 << 20) - 4096]},
                      schema_overrides={"metric_stores": pl.Int64, "metric_memmap_dram_bytes": pl.Int64})
    sweep = write_sweep(tmp_path, "counts", {"memmap": df})
    stores = text_table(sweep, model="memmap", rows="struct_page_size", cols="strategy", metric="stores")
    assert next(line for line in stores.splitlines() if line.startswith("64")).split() == \
        ["64", "4893184", "2060307", "57.9%"]
    dram = text_table(sweep, model="memmap", rows="struct_page_size", cols="strategy", metric="memmap_dram_bytes")
    assert "Difference" in dram and "Improvement" not in dram
    assert next(line for line in dram.splitlines() if line.startswith("64")).split()[-1] == "+2GiB"
    assert next(line for line in dram.splitlines() if line.startswith("80")).split()[-1] == "-4KiB"


def test_only_the_blocks_shown_are_tabulated_and_the_others_are_counted(default_sweep, monkeypatch):
    """With more combinations of the other axes than MAX_BLOCKS, the blocks shown are the first ones of the whole
    table, cell for cell, and the line under them counts the rest."""
    import analysis.tables as tables

    monkeypatch.setattr(tables, "MAX_BLOCKS", 10_000)
    whole = text_table(default_sweep, model="memmap", rows="namespace_size", cols="strategy").splitlines()
    heads = [i for i, line in enumerate(whole) if i and not whole[i - 1] and re.match(r"^\w+=", line)]
    assert len(heads) > 3
    monkeypatch.setattr(tables, "MAX_BLOCKS", 2)
    cut = text_table(default_sweep, model="memmap", rows="namespace_size", cols="strategy").splitlines()
    assert cut[:heads[2] - 1] == whole[:heads[2] - 1]
    assert cut[heads[2]].startswith(f"({len(heads) - 2} more combinations of ") and cut[heads[2]].endswith(
        " not shown)")
