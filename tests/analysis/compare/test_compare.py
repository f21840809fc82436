"""`memsweep compare A B`: B/A per point_id, `~` not a change by the rule, aggregation, one-side points, errors, the page."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from analysis.compare.compare import MAX_POINTS, TOP, compare, default_name, parse_sources, text, vocabulary
from analysis.compare.page import write
from analysis.exceptions import AnalysisError
from tests.analysis.conftest import write_sweep
from sweeps.cli import main
from sweeps.run.driver import run
from sweeps.spec.load import load_spec
from tests.conftest import memsweep, memsweep_here, tree_state

# The RFC's lat_mem_rd rows (7 working sets x PTE / PMD) on the seed machine, and again in a guest whose
# host backs memory with 4 KiB pages (profile guest_4k_host): the same 14 point_ids.
PFNMAP_SPEC = """
name = "{name}"
description = "pfnmap lat_mem_rd rows, profile {profile}"
models = ["pfnmap"]
profile = "{profile}"

[axes.pfnmap]
namespace_size = ["4GiB"]
working_set = {{ from = "64MiB", to = "4GiB", scale = "log2" }}
align = ["1GiB"]
compound_order = [0, 9]
arch = ["arm64"]
access = ["lat_mem_rd_random"]
"""
GiB = 1 << 30


@pytest.fixture(scope="module")
def profile_pair(tmp_path_factory, ray_local) -> tuple[str, str]:
    """The small pfnmap spec run for real twice, on the session's Ray: profile seed (A), guest_4k_host (B)."""
    root = tmp_path_factory.mktemp("profiles")
    out = []
    for name, profile in (("pfn-seed", "seed"), ("pfn-guest", "guest_4k_host")):
        spec = root / f"{name}.toml"
        spec.write_text(PFNMAP_SPEC.format(name=name, profile=profile))
        summary = run(load_spec(str(spec)), str(root), progress=False)
        assert not summary.failed, summary.failed
        out.append(str(root / name))
    return out[0], out[1]


def table_rows(out: str, first_col: str) -> tuple[list[str], list[list[str]]]:
    """The header and body cells (split on the 4-space gaps) of the first table whose header starts so."""
    lines = out.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith(first_col))
    body = []
    for line in lines[i + 2:]:
        if not line.strip():
            break
        body.append(re.split(r"\s{4,}", line.strip()))
    return re.split(r"\s{4,}", lines[i].strip()), body


@pytest.mark.slow
def test_seed_against_guest_4k_host_gives_a_ratio_table(profile_pair):
    """14 shared points, one row each: leaf order x working set, A, B, B/A = B / A and improvement (A - B) / A;
    a guest on 4 KiB host pages is 1.4-2x slower at every point (two-dimensional walks), PMD still beats PTE."""
    a, b = profile_pair
    r = memsweep("compare", a, b)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("memsweep compare: B/A per point_id over ok rows\nsweep A = pfn-seed: profile seed; host ")
    assert "\nsweep B = pfn-guest: profile guest_4k_host; host " in r.stdout
    assert "pfnmap ns_per_load, model (A) vs model (B) (lower is better): 14 points: one row per configuration" \
        in r.stdout
    header, body = table_rows(r.stdout, "compound_order")
    assert header == ["compound_order", "working_set", "A", "B", "B/A", "Improvement", "Change", "Evidence"]
    sizes = ["64MiB", "128MiB", "256MiB", "512MiB", "1GiB", "2GiB", "4GiB"]
    assert [(row[0], row[1]) for row in body] == [(o, ws) for o in ("PTE (order 0)", "PMD (order 9)") for ws in sizes]
    # A's answers are the seed's fit points; B's profile changes a fitted cost of seed (a what-if)
    assert {row[-1] for row in body} == {"F/A"}
    assert "evidence of A's answers: 14 fit" in r.stdout and "evidence of B's answers: 14 assumed" in r.stdout
    assert "  assumed: profile guest_4k_host: sets pfnmap.virtualized apart from the costs fit in seed (what-if)" \
        in r.stdout
    guest = {}
    for order, ws, va, vb, ratio, imp, change, _ in body:
        # each value with its error bar as stored, to the digits the bar supports ("149 ns -7.7/+4%")
        assert re.fullmatch(BAR_TEXT, va) and re.fullmatch(BAR_TEXT, vb), (va, vb)
        x, y = float(va.split()[0]), float(vb.split()[0])
        assert float(ratio) == pytest.approx(y / x, rel=5e-3)
        assert float(imp.removesuffix("%")) == pytest.approx(100 * (1 - float(ratio)), abs=0.06)
        assert change == "slower" and 1.4 < y / x < 2.0
        guest[(order, ws)] = y
    assert all(guest[("PMD (order 9)", ws)] < guest[("PTE (order 0)", ws)] for ws in sizes)  # PMD still helps
    assert "14 points compared" in r.stdout and "14 slower" in r.stdout and "only" not in r.stdout
    page = Path(b) / "_report" / "compare-pfn-seed.html"
    assert r.stdout.rstrip().endswith(f"comparison: {page}") and page.is_file()
    assert {"compare-pfn-seed.png", "compare-pfn-seed.svg"} <= {p.name for p in page.parent.iterdir()}


def memmap_rows(source: str, values: list[float], least: list[float | None] | None = None) -> pl.DataFrame:
    """memmap rows at namespace sizes 1..n GiB (point_id = index), with measure_min / measure_median if measured."""
    n = len(values)
    measured = source == "measured"
    return pl.DataFrame({
        "point_id": pl.Series(range(n), dtype=pl.UInt64),
        "param_namespace_size": [(i + 1) * GiB for i in range(n)], "param_strategy": "template", "source": source,
        "status": "ok", "metric_init_ms": values,
        "measure_min": pl.Series(least if measured else [None] * n, dtype=pl.Float64),
        "measure_median": pl.Series(values if measured else [None] * n, dtype=pl.Float64),
        "measure_repeats": pl.Series([3 if measured else None] * n, dtype=pl.Int64),
    })


# (modeled value, measured median, measured min, the mark): `~` exactly where the model lies in [min, median]
# (`=` where it is the median itself)
UNDER, OVER = "model under-predicts", "model over-predicts"
TWINS = [(1.0, 1.2, 0.9, "~"), (2.0, 3.0, 2.5, UNDER), (3.0, 3.0, 2.8, "="), (4.0, 3.5, 3.0, OVER),
         (5.0, 5.5, 5.0, "~"), (6.0, 6.6, None, UNDER)]


def test_measured_sweep_against_its_modeled_twin_marks_the_noise(tmp_path):
    """--sources measured:model on one sweep: a point is `~` when its modeled value lies inside the measured
    spread [measure_min, median]; outside it (or with no measure_min) the model over- or under-predicts."""
    model, median, least, marks = zip(*TWINS)
    df = pl.concat([memmap_rows("model", list(model)), memmap_rows("measured", list(median), list(least))])
    sweep = write_sweep(tmp_path, "twin", {"memmap": df})
    r = memsweep_here("compare", sweep, sweep, "--sources", "measured:model")
    assert r.returncode == 0, r.stderr
    assert "memmap init_ms, measured (A) vs model (B) (lower is better): 6 points" in r.stdout
    header, body = table_rows(r.stdout, "namespace_size")
    assert header == ["namespace_size", "A", "B", "B/A", "Improvement", "Change"]
    assert [row[0] for row in body] == [f"{i}GiB" for i in range(1, 7)]
    assert [row[-1] for row in body] == list(marks)
    assert f"2 {UNDER}, 1 {OVER}, 2 not a change (~), 1 equal (=); on samples, 2 significant changes" in r.stdout
    assert "faster" not in r.stdout and "slower" not in r.stdout


def test_like_with_like_by_default_measured_spreads_on_both_sides(tmp_path):
    """Two sweeps with modeled and measured rows: one block per source; measured rows are `~` when the
    two spreads overlap, modeled rows `=` when equal."""
    a = pl.concat([memmap_rows("model", [1.0, 2.0, 3.0]), memmap_rows("measured", [1.0, 1.1, 2.0], [0.9, 1.0, 1.9])])
    b = pl.concat([memmap_rows("model", [1.0, 2.0, 2.0]), memmap_rows("measured", [1.05, 1.3, 1.0], [0.95, 1.2, 0.9])])
    cmp = compare(write_sweep(tmp_path, "a", {"memmap": a}), write_sweep(tmp_path, "b", {"memmap": b}))
    assert [(bl.source_a, bl.source_b) for bl in cmp.blocks] == [("model", "model"), ("measured", "measured")]
    out = text(cmp)
    first, second = out.split("memmap init_ms, measured (A)")
    assert [row[-1] for row in table_rows(first, "namespace_size")[1]] == ["=", "=", "faster"]
    assert [row[-1] for row in table_rows(second, "namespace_size")[1]] == ["~", "slower", "faster"]


def grid(factor: dict[int, float], sizes: int = 10, offset: int = 0) -> pl.DataFrame:
    """pfnmap rows over sizes x leaf orders 0/9/18 x two archs: ns_per_load = 100 x factor[order]."""
    rows = [(s, o, arch) for s in range(sizes) for o in (0, 9, 18) for arch in ("arm64", "x86_64")]
    return pl.DataFrame({
        "point_id": pl.Series([offset + i for i in range(len(rows))], dtype=pl.UInt64),
        "param_namespace_size": [(s + 1) * GiB for s, _, _ in rows],
        "param_compound_order": [o for _, o, _ in rows], "param_arch": [a for _, _, a in rows],
        "source": "model", "status": "ok",
        "metric_ns_per_load": [100.0 * (1 + s / 100) * factor[o] for s, o, _ in rows],
    })


def test_a_big_comparison_is_aggregated_by_the_axis_that_matters(tmp_path):
    """120 points, 60 distinct rows (over MAX_POINTS): a summary, B/A grouped by compound_order (it explains
    all the variation), and the TOP largest changes, not one row per point."""
    a = write_sweep(tmp_path, "a", {"pfnmap": grid({0: 1.0, 9: 1.0, 18: 1.0}, sizes=20)})
    b = write_sweep(tmp_path, "b", {"pfnmap": grid({0: 1.0, 9: 1.5, 18: 0.5}, sizes=20)})
    out = text(compare(a, b))
    assert 60 > MAX_POINTS
    assert ("120 points: B/A grouped by compound_order (together they explain 100% of the variance of log B/A), "
            f"then the {TOP} largest changes") in out
    assert "120 points compared: B/A median 1.000 (min 0.500, max 1.500); 40 faster, 40 slower, 0 not a " \
           "change (~), 40 equal (=)" in out
    header, body = table_rows(out, "compound_order")
    assert header[:5] == ["compound_order", "points", "B/A median", "B/A min", "B/A max"]
    assert [row[:3] for row in body] == [["PTE (order 0)", "40", "1.000"], ["PMD (order 9)", "40", "1.500"],
                                         ["PUD (order 18)", "40", "0.500"]]
    assert [row[5] for row in body] == ["0.0%", "-50.0%", "50.0%"]
    _, top = table_rows(out, "namespace_size")
    assert len(top) == TOP and all(row[-1] in ("faster", "slower") for row in top)
    assert len(out.splitlines()) < 40


def test_points_on_one_side_only_are_counted_and_listed(tmp_path):
    """A has 60 points, B 54 of them and 4 of its own: both counts, and the first ids with their configuration."""
    a = grid({0: 1.0, 9: 1.0, 18: 1.0})
    b = pl.concat([grid({0: 1.0, 9: 1.0, 18: 1.0}).head(54), grid({0: 1.0, 9: 1.0, 18: 1.0}, offset=1000).head(4)])
    out = text(compare(write_sweep(tmp_path, "a", {"pfnmap": a}), write_sweep(tmp_path, "b", {"pfnmap": b})))
    assert "54 points compared" in out
    assert "equal at every one of the 54 points: no table" in out
    assert "ok in A only: 6 points (first 5):\n  54  namespace_size=10GiB, compound_order=PTE (order 0), arch=arm64" \
        in out and "  59  " not in out
    assert "ok in B only: 4 points:\n  1000  namespace_size=1GiB, compound_order=PTE (order 0), arch=arm64" in out


def test_higher_is_better_metrics_improve_upwards(tmp_path):
    """GB/s: B twice A is `better` by +100%."""
    df = lambda v: pl.DataFrame({"param_struct_page_size": [64, 80], "status": "ok", "metric_gbs": v})  # noqa: E731
    out = text(compare(write_sweep(tmp_path, "a", {"copy": df([4.0, 4.0])}),
                       write_sweep(tmp_path, "b", {"copy": df([8.0, 4.0])}), metric="gbs"))
    assert "(higher is better)" in out
    _, body = table_rows(out, "struct_page_size")
    assert body[0][-3:] == ["2.000", "100.0%", "better"] and body[1][-1] == "="


def test_a_metric_zero_on_both_sides_is_equal_and_its_page_is_drawn(tmp_path):
    """memmap's end_trunc_bytes is 0 at every point of most sweeps: each point is equal (B/A 1), nothing is
    better or worse, and the page is written (its B/A axis around 1), where a 0/0 ratio was a traceback."""
    df = lambda v: pl.DataFrame({"param_struct_page_size": [64, 80], "status": "ok",  # noqa: E731
                                 "metric_end_trunc_bytes": v}, schema_overrides={"metric_end_trunc_bytes": pl.Int64})
    cmp = compare(write_sweep(tmp_path, "a", {"memmap": df([0, 0])}), write_sweep(tmp_path, "b", {"memmap": df([0, 0])}),
                  metric="end_trunc_bytes")
    out = text(cmp)
    assert "A and B are equal at every one of the 2 points" in out and "0 better, 0 worse" in out
    page = write(cmp, str(tmp_path / "cmp.html"))
    assert Path(page).exists()


def pfnmap(n: int = 3, offset: int = 0) -> pl.DataFrame:
    return grid({0: 1.0, 9: 1.0, 18: 1.0}, offset=offset).head(n)


@pytest.mark.parametrize("make, args, message", [
    (lambda t: (str(t / "nope"), write_sweep(t, "b", {"pfnmap": pfnmap()})), [],
     r"'A' must be a sweep folder written by 'memsweep run' \(got '.*nope': no such folder\)"),
    (lambda t: (write_sweep(t, "a", {"pfnmap": pfnmap()}), str(t)), [],
     r"'B' must hold a _manifest.json written by 'memsweep run'"),
    (lambda t: (write_sweep(t, "a", {"memmap": memmap_rows("model", [1.0])}),
                write_sweep(t, "b", {"pfnmap": pfnmap()})), [], r"'A' and 'B' must have a model in common \(got A: \['memmap'\], B: \['pfnmap'\]\)"),
    (lambda t: (write_sweep(t, "a", {"pfnmap": pfnmap()}), write_sweep(t, "b", {"pfnmap": pfnmap(4, offset=100)})), [],
     r"no shared points \(A: pfnmap model 3 ok points; B: pfnmap model 4 ok points\): the sweeps evaluate different "
     r"grids; compare sweeps of the same spec's axes, or give '--pair AXIS=A_VALUE:B_VALUE'"),
    (lambda t: (write_sweep(t, "a", {"pfnmap": pfnmap()}), write_sweep(t, "b", {"pfnmap": pfnmap()})),
     ["--model", "copy"], r"'--model' must be one of the models both sweeps have \['pfnmap'\] \(got 'copy'\)"),
    (lambda t: (write_sweep(t, "a", {"pfnmap": pfnmap()}), write_sweep(t, "b", {"pfnmap": pfnmap()})),
     ["--metric", "ms"], r"'--metric' must be a metric of model 'pfnmap' in both sweeps, one of "
                         r"\['metric_ns_per_load'\] \(got 'ms'\)"),
    (lambda t: (write_sweep(t, "a", {"pfnmap": pfnmap()}), write_sweep(t, "b", {"pfnmap": pfnmap()})),
     ["--sources", "measured"], r"'--sources' must be A_SOURCE:B_SOURCE, each one of \['model', 'measured', "
                              r"'kernel'\]"),
    (lambda t: (write_sweep(t, "a", {"pfnmap": pfnmap()}), write_sweep(t, "b", {"pfnmap": pfnmap()})),
     ["--sources", "measured:model"], r"'--sources' must name sources the sweeps have: A 'measured' and B 'model' "
                                      r"\(pfnmap: A \['model'\], B \['model'\]\)"),
])
def test_mismatched_sweeps_and_bad_arguments_exit_2_with_one_message(tmp_path, capsys, make, args, message):
    """Not a sweep, no model in common, no shared points, unknown model / metric, bad sources: one message
    on stderr, exit 2, nothing written (the CLI in-process; the next test runs it as a process)."""
    a, b = make(tmp_path)
    before = tree_state(tmp_path)
    code, out, err = run_cli(capsys, a, b, *args)
    assert code == 2 and out == "", err
    assert re.fullmatch(rf"memsweep compare: error: {message}.*\n", err, re.S), err
    assert tree_state(tmp_path) == before


def test_a_bad_argument_exits_2_from_the_command_itself(tmp_path):
    """The same as a process: exit status 2, the message on stderr, nothing on stdout."""
    a, b = write_sweep(tmp_path, "a", {"pfnmap": pfnmap()}), write_sweep(tmp_path, "b", {"pfnmap": pfnmap()})
    r = memsweep("compare", a, b, "--model", "copy")
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert r.stderr.startswith("memsweep compare: error: '--model' must be one of the models both sweeps have")


def test_errors_are_analysis_errors(tmp_path):
    """The API raises AnalysisError (the CLI turns it into exit 2); a source pair parses."""
    with pytest.raises(AnalysisError, match=r"'A' must be a sweep folder"):
        compare(str(tmp_path / "x"), str(tmp_path / "y"))
    assert parse_sources("measured:model") == ("measured", "model") and parse_sources(None) is None


def test_the_page_is_self_contained_escaped_and_written_atomically(tmp_path):
    """--out FILE: the page (figure embedded, figure files beside it), markup from the data escaped, no
    temporary file left; the default name is compare-<A name>.html made safe for a path."""
    a = write_sweep(tmp_path, "a<b>x", {"pfnmap": grid({0: 1.0, 9: 1.0, 18: 1.0})})
    b = write_sweep(tmp_path, "b", {"pfnmap": grid({0: 1.0, 9: 1.5, 18: 0.5})})
    cmp = compare(a, b)
    assert default_name(cmp) == "compare-a_b_x.html"
    out = Path(write(cmp, str(tmp_path / "pages" / "cmp.html")))
    assert out == tmp_path / "pages" / "cmp.html"
    assert sorted(p.name for p in out.parent.iterdir()) == ["cmp.html", "cmp.png", "cmp.svg"]
    page = out.read_text()
    assert "a<b>x" not in page and "a&lt;b&gt;x" in page
    assert len(re.findall(r'<img src="data:image/png;base64,[A-Za-z0-9+/=]+"', page)) == 1
    assert re.findall(r'\bsrc="(?!data:)', page) == [] and re.findall(r'\bhref="(?!#)', page) == []
    assert "<script" not in page and 'data-figure-count="1"' in page
    assert "<th>compound_order</th>" in page and "PUD (order 18)" in page
    default = Path(write(cmp))
    assert default == Path(b) / "_report" / "compare-a_b_x.html" and default.is_file()


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    """`memsweep compare ...` in-process: the exit status, stdout and stderr."""
    code = main(["compare", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def media(factor: float, sizes: int = 12) -> pl.DataFrame:
    """memmap rows over sizes x map x medium: map=dev takes 1.5 times as long on dram, twice on pmem;
    map=mem ignores the medium (its memmap is in DRAM); B's times grow by `factor` per GiB. dominant:
    memory, or compute where B's factor lifts map=dev above 4 GiB."""
    rows = [(s, m, d) for s in range(1, sizes + 1) for m in ("dev", "mem") for d in ("dram", "pmem")]
    return pl.DataFrame({
        "point_id": pl.Series(range(len(rows)), dtype=pl.UInt64),
        "param_namespace_size": [s * GiB for s, _, _ in rows], "param_map": [m for _, m, _ in rows],
        "param_medium": [d for _, _, d in rows], "source": "model", "status": "ok",
        "metric_init_ms": [s * {"dram": 1.5, "pmem": 2.0}[d] ** (m == "dev") * (1 + factor * s) for s, m, d in rows],
        "metric_dominant": ["compute" if factor and m == "dev" and s > 4 else "memory" for s, m, _ in rows],
    })


def test_string_metric_is_compared_as_same_or_changed(tmp_path, capsys):
    """--metric dominant (a string): exit 0, the count of points whose value changed, each change A -> B
    with its count, and the first changed rows (an axis the value ignores collapsed); the page says the
    figure has no ratio to draw."""
    a = write_sweep(tmp_path, "a", {"memmap": media(0.0)})
    b = write_sweep(tmp_path, "b", {"memmap": media(0.1)})
    code, out, err = run_cli(capsys, a, b, "--metric", "dominant")
    assert code == 0, err
    assert "memmap dominant, model (A) vs model (B) (same or changed): 48 points: the value changed at 16" in out
    assert "48 points compared: the value changed at 16, the same at 32" in out
    header, body = table_rows(out, "A ")
    assert header == ["A", "B", "points"] and body == [["memory", "compute", "16"]]
    assert "collapsed, no value of A or B changes along them (by more than 0.01%): medium" in out  # dominant ignores the medium here
    header, first = table_rows(out, "namespace_size")
    assert header == ["namespace_size", "map", "points", "A", "B"] and len(first) == 8
    assert first[0] == ["5GiB", "dev", "2", "memory", "compute"] and first[-1][0] == "12GiB"
    assert "the metrics compared are strings" in (Path(b) / "_report" / "compare-a.html").read_text()


def test_axes_that_change_no_value_are_collapsed(tmp_path):
    """arch changes no value of A or B (grid): the largest changes are ten distinct rows without an arch
    column, not five rows twice, and the output says arch was collapsed."""
    a = write_sweep(tmp_path, "a", {"pfnmap": grid({0: 1.0, 9: 1.0, 18: 1.0}, sizes=20)})
    b = write_sweep(tmp_path, "b", {"pfnmap": grid({0: 1.0, 9: 1.5, 18: 0.5}, sizes=20)})
    out = text(compare(a, b))
    assert "collapsed, no value of A or B changes along them (by more than 0.01%): arch" in out
    header, top = table_rows(out, "namespace_size")
    assert header[:2] == ["namespace_size", "compound_order"] and "arch" not in header
    assert len(top) == TOP and len({tuple(r[:2]) for r in top}) == TOP


def test_an_axis_that_changes_no_value_at_some_rows_is_merged_there(tmp_path):
    """medium changes nothing under map=mem: each size's two map=mem points are one row (medium '*', 2
    points), 36 rows for 48 points; with --where map=mem the whole axis is collapsed."""
    a = write_sweep(tmp_path, "a", {"memmap": media(0.0)})
    b = write_sweep(tmp_path, "b", {"memmap": media(0.1)})
    out = text(compare(a, b))
    assert "48 points, 36 distinct rows: one row per configuration" in out
    header, body = table_rows(out, "namespace_size")
    assert header[:4] == ["namespace_size", "map", "medium", "points"] and len(body) == 36
    assert [r[:4] for r in body[:3]] == [["1GiB", "dev", "dram", "1"], ["1GiB", "dev", "pmem", "1"],
                                         ["1GiB", "mem", "*", "2"]]
    assert "each row is shown once: '*' where a row's points (same A and B) differ in the axis (medium: they " \
           "change no value by more than 0.01% at some values of the others)" in out
    only_mem = text(compare(a, b, where=["map=mem"]))
    assert "only the points where map=mem" in only_mem
    assert "collapsed, no value of A or B changes along them (by more than 0.01%): medium" in only_mem
    header, body = table_rows(only_mem, "namespace_size")
    assert header[:3] == ["namespace_size", "points", "A"] and len(body) == 12 and body[0][1] == "2"


@pytest.mark.parametrize("value", ["4GiB", "4096MiB", str(4 * GiB)])
def test_where_reads_a_value_as_the_axis_does(tmp_path, capsys, value):
    """--where namespace_size=4GiB, 4096MiB or the bytes: the 6 points at 4 GiB (3 distinct rows: arch
    changes nothing), named in the header."""
    a = write_sweep(tmp_path, "a", {"pfnmap": grid({0: 1.0, 9: 1.0, 18: 1.0})})
    b = write_sweep(tmp_path, "b", {"pfnmap": grid({0: 1.0, 9: 1.5, 18: 0.5})})
    code, out, err = run_cli(capsys, a, b, "--where", f"namespace_size={value}")
    assert code == 0, err
    assert f"only the points where namespace_size={value}" in out
    assert "6 points, 3 distinct rows: one row per configuration" in out
    header, body = table_rows(out, "compound_order")
    assert [r[0] for r in body] == ["PTE (order 0)", "PMD (order 9)", "PUD (order 18)"]


def test_by_groups_the_summary_by_the_axes_given(tmp_path, capsys):
    """--by namespace_size: B/A by namespace_size (as asked) instead of the default compound_order;
    several values of one --where axis are either."""
    a = write_sweep(tmp_path, "a", {"pfnmap": grid({0: 1.0, 9: 1.0, 18: 1.0})})
    b = write_sweep(tmp_path, "b", {"pfnmap": grid({0: 1.0, 9: 1.5, 18: 0.5})})
    code, out, err = run_cli(capsys, a, b, "--by", "namespace_size", "--where", "compound_order=9",
                             "--where", "compound_order=PUD (order 18)")
    assert code == 0, err
    assert "40 points, 20 distinct rows: B/A by namespace_size, then one row per configuration" in out
    header, body = table_rows(out, "namespace_size    points")
    assert len(body) == 10 and all(r[1] == "4" for r in body)
    assert "only the points where compound_order=9 or PUD (order 18)" in out


@pytest.mark.parametrize("args, message", [
    (["--where", "size=4GiB"], r"'--where' must name an axis of model 'pfnmap', one of \['arch', 'compound_order', "
                               r"'namespace_size'\] \(got 'size=4GiB'\)\."),
    (["--where", "namespace_size=4TB"], r"'--where namespace_size' must be a size \(integer bytes or '4KiB', .*\), "
                                        r"a multiple of 4KiB \(got '4TB'\)\."),
    (["--where", "namespace_size=64GiB"], r"'--where namespace_size' must be one of the values the sweeps have, "
                                          r"\['1GiB', '2GiB', '3GiB'.*'10GiB'\] \(got '64GiB'\)\."),
    (["--where", "compound_order=20"], r"'--where compound_order' must be an integer order 0\.\.18 or 'auto' "
                                       r"\(got '20'\)\."),
    (["--where", "arch"], r"'--where' must be AXIS=VALUE, e\.g\. arch=arm64 \(got 'arch'\)\."),
    (["--by", "arch,"], r"'--by' must be AXIS\[,AXIS\] \(got 'arch,'\)\."),
    (["--by", "nope"], r"'--by' must name an axis of model 'pfnmap', one of \[.*\] \(got 'nope'\)\."),
])
def test_bad_where_or_by_exits_2_naming_what_is_allowed(tmp_path, capsys, args, message):
    """An unknown axis, a value the axis cannot read or the sweeps do not have, a malformed filter: one
    message naming the field and what is allowed, exit 2, nothing written."""
    a = write_sweep(tmp_path, "a", {"pfnmap": grid({0: 1.0, 9: 1.0, 18: 1.0})})
    b = write_sweep(tmp_path, "b", {"pfnmap": grid({0: 1.0, 9: 1.5, 18: 0.5})})
    before = tree_state(tmp_path)
    code, out, err = run_cli(capsys, a, b, *args)
    assert code == 2 and out == "", err
    assert re.fullmatch(rf"memsweep compare: error: {message}\n", err), err
    assert tree_state(tmp_path) == before
    with pytest.raises(AnalysisError, match=message):
        compare(a, b, by=args[1] if args[0] == "--by" else None, where=[args[1]] if args[0] == "--where" else ())


@pytest.mark.parametrize("unit, higher, sources, words", [
    ("ms", False, ("measured", "model"), ("model under-predicts", "model over-predicts")),
    ("ms", False, ("model", "measured"), ("model over-predicts", "model under-predicts")),
    ("GB/s", True, ("measured", "model"), ("model over-predicts", "model under-predicts")),
    ("ms", False, ("model", "model"), ("faster", "slower")),
    ("", True, ("measured", "measured"), ("better", "worse")),
])
def test_across_sources_a_change_says_what_the_model_does(unit, higher, sources, words):
    """(better, worse) read "model over-predicts" exactly when the modeled value is above the measured one,
    whichever side the model is and whichever direction is better."""
    assert vocabulary(unit, higher, *sources) == words


def test_the_default_comparison_page_is_not_written_through_a_report_folder_linked_out(tmp_path):
    """compare's page goes to B/_report by default: linked out of B, exit 2 naming the link, nothing written."""
    df = pl.concat([memmap_rows("model", [1.0, 2.0]), memmap_rows("measured", [1.1, 2.1], [1.0, 2.0])])
    sweep, outside = Path(write_sweep(tmp_path, "twin", {"memmap": df})), tmp_path / "outside"
    outside.mkdir()
    (sweep / "_report").symlink_to(outside)
    before = tree_state(tmp_path)
    r = memsweep_here("compare", str(sweep), str(sweep), "--sources", "measured:model")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (f"memsweep compare: error: '{sweep}/_report' must be a file or folder inside "
                                f"{sweep}, not a symlink out of it (got a link to '{outside}'); nothing is written "
                                "through it: remove the link.")
    assert tree_state(tmp_path) == before


def test_an_out_page_linked_out_of_its_folder_leaves_no_figure_beside_it(tmp_path):
    """`--out` a page whose name is a link out of its folder: exit 2 naming the link, and its figures (PNG and
    SVG, written before the page) are not left beside it either."""
    df = pl.concat([memmap_rows("model", [1.0, 2.0]), memmap_rows("measured", [1.1, 2.1], [1.0, 2.0])])
    sweep, outside = Path(write_sweep(tmp_path, "twin", {"memmap": df})), tmp_path / "outside"
    outside.mkdir()
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "cmp.html").symlink_to(outside / "cmp.html")
    before = tree_state(tmp_path)
    r = memsweep_here("compare", str(sweep), str(sweep), "--sources", "measured:model", "--out",
                      str(pages / "cmp.html"))
    assert r.returncode == 2 and "not a symlink out of it" in r.stderr and "cmp.html" in r.stderr, r.stderr
    assert tree_state(tmp_path) == before and sorted(p.name for p in pages.iterdir()) == ["cmp.html"]


def kernel_rows(counts: list[float], least: list[float], boots: int = 3, release: str = "6.12.118") -> pl.DataFrame:
    """memmap kernel rows at namespace sizes 1..n GiB: a guest's instruction counts, the median, least and
    largest (the median) of `boots` boots."""
    n = len(counts)
    return pl.DataFrame({
        "point_id": pl.Series(range(n), dtype=pl.UInt64),
        "param_namespace_size": [(i + 1) * GiB for i in range(n)], "param_strategy": "slow", "source": "kernel",
        "status": "ok", "metric_init_instructions": pl.Series(counts, dtype=pl.Int64),
        "measure_min": pl.Series(least, dtype=pl.Float64), "measure_median": pl.Series(counts, dtype=pl.Float64),
        "measure_max": pl.Series(counts, dtype=pl.Float64), "measure_repeats": pl.Series([boots] * n, dtype=pl.Int64),
        "env_guest_kernel": release, "env_accel": "tcg", "env_host": "host-a",
    })


def kernel_compare(tmp_path, a: pl.DataFrame, b: pl.DataFrame, *args: str):
    sa = write_sweep(tmp_path, "a", {"memmap": a})
    sb = write_sweep(tmp_path, "b", {"memmap": b})
    return memsweep_here("compare", sa, sb, "--metric", "init_instructions", *args)


def test_kernel_rows_change_only_by_the_rule_and_the_header_names_each_kernel(tmp_path):
    """Per point: equal counts `=`; spans apart but a change of 1% or less `~`; spans overlapping `~`; spans
    apart by more than 1% with 3 boots a side a significant change; a side of one boot `n<3`, no verdict.
    The header says which kernel and accelerator each side ran, and the rule."""
    a = kernel_rows([1000, 1000, 1000, 1000], [999, 999, 990, 999])
    b = kernel_rows([1000, 1005, 1008, 1300], [999, 1004, 995, 1299], release="6.1.0")
    r = kernel_compare(tmp_path, a, b)
    assert r.returncode == 0, r.stderr
    assert "\nsweep A = a: profile seed; kernel 6.12.118 (tcg); host host-a\n" in r.stdout
    assert "\nsweep B = b: profile seed; kernel 6.1.0 (tcg); host host-a\n" in r.stdout
    assert [row[-1] for row in table_rows(r.stdout, "namespace_size")[1]] == ["=", "~", "~", "worse"]
    assert "on samples, 1 significant changes" in r.stdout
    assert "rule: a sampled point changes when each side has at least 3 samples" in r.stdout
    one = kernel_rows([1000, 1000, 1000, 1300], [1000, 1000, 1000, 1300], boots=1, release="6.1.0")
    r = kernel_compare(tmp_path / "one", a, one)
    assert [row[-1] for row in table_rows(r.stdout, "namespace_size")[1]] == ["=", "=", "=", "n<3"]
    assert "0 significant changes and 1 with too few samples for a verdict (n<3)" in r.stdout


def test_a_kernel_sweep_against_a_rerun_of_itself_changes_nowhere(tmp_path):
    a = kernel_rows([1000, 2000, 4000], [999, 1998, 3999])
    r = kernel_compare(tmp_path, a, a)
    assert "3 points compared: B/A median 1.000 (min 1.000, max 1.000); 0 better, 0 worse, 0 not a change (~), " \
           "3 equal (=); on samples, 0 significant changes" in r.stdout


def test_the_mail_block_is_plain_text_under_80_columns_with_each_sides_spread_and_the_mark(tmp_path):
    """--format mail: the header names both sides and the rule; a row per configuration under its named axis,
    each side's value rounded to its samples' spread with that spread as -a/+b%, the change in brackets and
    `**` on a significant change by the sampled rule (said below the table); nothing wider than 79."""
    a = kernel_rows([1000, 2000, 4000], [990, 1998, 3999])
    b = kernel_rows([1000, 2005, 5200], [990, 2004, 5199], release="6.1.0-57-amd64-with-a-long-release-name")
    r = kernel_compare(tmp_path, a, b, "--format", "mail")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "memsweep compare, B against A (B/A per point)"
    assert lines[1] == "A: a: profile seed; kernel 6.12.118 (tcg); host host-a"
    assert lines[2].startswith("B: b: profile seed; kernel 6.1.0-57-amd64-with-a-long-release-name (tcg);")
    assert "memmap init_instructions: kernel rows, lower is better" in lines
    head = next(i for i, line in enumerate(lines) if line.startswith("namespace_size"))
    assert lines[head].split() == ["namespace_size", "A", "-/+", "B", "-/+", "change"]
    rows = [line.split() for line in lines[head + 1:head + 4]]
    # each side's [least, median] below and above its median, in % of it; the value to the spread's digits
    assert rows[0] == ["1GiB", "1,000", "-1/+0%", "1,000", "-1/+0%", "(+0.0%)"]  # equal: no mark
    assert rows[1] == ["2GiB", "2,000", "-0.1/+0%", "2,005", "-<0.1/+0%", "(+0.2%)"]  # within 1%: no mark
    assert rows[2] == ["3GiB", "4,000", "-<0.1/+0%", "5,200", "-<0.1/+0%", "(+30.0%)", "**"]
    assert "**: a change by the sampled rule above" in lines
    assert max(map(len, lines)) < 80, max(lines, key=len)
    assert "comparison:" not in r.stdout  # the page's path goes to stderr: the block pastes as it is


def test_a_big_mail_gives_the_grouped_summary_then_the_largest_changes_without_marks(tmp_path):
    """120 modeled points without bars, 80 changed: the mail gives B/A by the axis that explains it
    (compound_order) first, then ratios.TOP largest changes by |log B/A| under named axes, and how many
    distinct rows it left out; no `**` (no samples: the computation's difference)."""
    from analysis.compare.ratios import TOP

    a = write_sweep(tmp_path, "a", {"pfnmap": grid({0: 1.0, 9: 1.0, 18: 1.0}, sizes=20)})
    b = write_sweep(tmp_path, "b", {"pfnmap": grid({0: 1.0, 9: 1.5, 18: 0.5}, sizes=20)})
    r = memsweep_here("compare", a, b, "--format", "mail")
    lines = r.stdout.splitlines()
    g = lines.index("B/A by compound_order:")
    assert lines[g + 1].split() == ["compound_order", "points", "median", "min", "max", "faster", "slower"]
    assert [line.split()[:3] for line in lines[g + 2:g + 5]] == [["PTE", "(order", "0)"], ["PMD", "(order", "9)"],
                                                                 ["PUD", "(order", "18)"]]
    assert [line.split()[-5] for line in lines[g + 2:g + 5]] == ["1.000", "1.500", "0.500"]
    head = next(i for i, line in enumerate(lines) if line.startswith("the ") and "largest changes" in line)
    assert lines[head] == f"the {TOP} largest changes (by |log B/A|; 50 more distinct rows), in ns:"
    assert lines[head + 1] == "every row: compound_order=PUD (order 18)"  # the one value of the listed rows
    listed = lines[head + 3:head + 3 + TOP]
    assert lines[head + 2].split() == ["namespace_size", "points", "A", "B", "change"]
    assert "points: how many points a row stands for, alike in A and B (they differ in arch, which changes no value)" \
        in " ".join(line.strip() for line in lines[head + 3 + TOP:])
    assert all("(-50.0%)" in line and "**" not in line for line in listed), listed
    assert max(map(len, lines)) < 80


def test_modeled_rows_never_get_the_sampled_mark_they_say_outside_both_bars(tmp_path):
    """Rows with error bars whose bars are apart: the row says `apart` and the legend says it is outside
    both bars, two computations; never `**`, which is the sampled rule's."""
    rows = grid({0: 1.0, 9: 1.0, 18: 1.0}, sizes=2)
    bars = {"lo_ns_per_load": (pl.col("metric_ns_per_load") * 0.95).cast(pl.Float32),
            "hi_ns_per_load": (pl.col("metric_ns_per_load") * 1.05).cast(pl.Float32)}
    a = write_sweep(tmp_path, "a", {"pfnmap": rows.with_columns(**bars)})
    slower = rows.with_columns(pl.col("metric_ns_per_load") * 1.5)
    b = write_sweep(tmp_path, "b", {"pfnmap": slower.with_columns(**bars)})
    r = memsweep_here("compare", a, b, "--format", "mail")
    assert r.returncode == 0, r.stderr
    assert "**" not in r.stdout and "apart" in r.stdout
    assert "apart: outside both error bars" in r.stdout
    assert "12 points compared" in r.stdout and "12 outside both error bars" in r.stdout.replace("\n  ", " ")


def test_counts_print_as_integers_in_the_listing(tmp_path):
    a = kernel_rows([13235880, 3425924], [13235000, 3425900])
    b = kernel_rows([17340840, 4465613], [17340000, 4465600], release="6.1.0")
    r = kernel_compare(tmp_path, a, b)
    body = table_rows(r.stdout, "namespace_size")[1]
    assert [row[1:3] for row in body] == [["13235880", "17340840"], ["3425924", "4465613"]]


BAR = r"(?:±[\d.<]+|-[\d.<]+/\+[\d.<]+)%"  # a bar as tables print it (analysis.tables.bar_parts)
BAR_TEXT = r"[\d.]+ ns " + BAR
MEMMAP_SPEC = """
name = "{name}"
models = ["memmap"]
profile = "{profile}"

[axes.memmap]
namespace_size = ["16GiB", "100GiB", "1TiB"]
strategy = ["slow", "template", "template_nt", "template_nt_inline"]
"""
WHAT_IF = """
name = "{name}"
base = "seed"
description = "seed with another DRAM write bandwidth (what-if)"
[copy]
dram_write_gbs = {{ value = {gbs}, unit = "GB/s", source = "assumed", note = "what-if" }}
"""


def test_a_what_if_inside_the_error_bars_is_no_change_and_one_beyond_them_is(tmp_path, ray_local):
    """seed against a profile that moves DRAM write bandwidth by 3% (template's time by ~1%): every
    modeled answer's error bar holds the other side's, so no point is faster, and the rule says why. Halved,
    it doubles template_nt_inline's time, beyond both bars at every size (at 1 TiB, extrapolated, the bars
    are wider and still apart): significant by the bar rule; slow's time, whose write-backs share the
    stream with its reads for ownership, moves less and stays within them."""
    sweeps = {}
    for name, gbs in (("seed", None), ("fast", 16.75), ("half", 8.13)):
        profile = "seed"
        if gbs is not None:
            (tmp_path / f"{name}.toml").write_text(WHAT_IF.format(name=name, gbs=gbs))
            profile = str(tmp_path / f"{name}.toml")
        spec = tmp_path / f"s-{name}.toml"
        spec.write_text(MEMMAP_SPEC.format(name=f"s-{name}", profile=profile))
        assert not run(load_spec(str(spec)), str(tmp_path / "out"), progress=False).failed
        sweeps[name] = str(tmp_path / "out" / f"s-{name}")
    r = memsweep_here("compare", sweeps["seed"], sweeps["fast"])
    assert r.returncode == 0, r.stderr
    assert "0 faster, 0 slower" in r.stdout and "; 0 outside both error bars" in r.stdout
    assert "rule: a modeled point changes when the two sides' error bars" in r.stdout
    header, body = table_rows(r.stdout, "namespace_size")
    changed = [row for row in body if row[header.index("Change")] != "="]
    assert changed and all(row[header.index("Change")] == "~" for row in changed)
    assert all(re.search(BAR, row[header.index("A")]) and re.search(BAR, row[header.index("B")]) for row in body)
    r = memsweep_here("compare", sweeps["seed"], sweeps["half"])
    assert r.returncode == 0, r.stderr
    header, body = table_rows(r.stdout, "namespace_size")
    slower = {(row[0], row[1]) for row in body if row[header.index("Change")] == "slower"}
    assert {(size, "template_nt_inline") for size in ("16GiB", "100GiB", "1TiB")} <= slower
    assert not any(strategy == "slow" for _, strategy in slower)
    found = re.search(r"; (\d+) outside both error bars", r.stdout)
    assert found and int(found.group(1)) == len(slower)
    mail = memsweep_here("compare", sweeps["seed"], sweeps["half"], "--format", "mail").stdout
    assert "apart" in mail and "**" not in mail and max(len(line) for line in mail.splitlines()) < 80


def strategy_rows(times: dict[str, list[float]], sizes: list[int]) -> pl.DataFrame:
    """memmap model rows: init_ms per strategy at namespace sizes of `sizes` GiB (point ids as a sweep's:
    one per (size, strategy))."""
    rows = [(n, s, t) for s, ts in times.items() for n, t in zip(sizes, ts)]
    return pl.DataFrame({
        "point_id": pl.Series([hash((n, s)) % 2**63 for n, s, _ in rows], dtype=pl.UInt64),
        "param_namespace_size": [n * GiB for n, _, _ in rows], "param_strategy": [s for _, s, _ in rows],
        "source": "model", "status": "ok", "metric_init_ms": [t for _, _, t in rows]})


def test_pair_compares_one_value_of_an_axis_in_a_with_another_in_b_on_every_other_axis(tmp_path):
    """--pair strategy=slow:template: A's slow rows against B's template rows of the same size, as a polars
    join on the other axes gives them; the header says the pairing; a size only B has is B's only."""
    a = strategy_rows({"slow": [10.0, 20.0], "template": [8.0, 16.0]}, [1, 2])
    b = strategy_rows({"slow": [10.0, 20.0, 40.0], "template": [5.0, 12.0, 30.0]}, [1, 2, 4])
    sa, sb = write_sweep(tmp_path, "a", {"memmap": a}), write_sweep(tmp_path, "b", {"memmap": b})
    r = memsweep_here("compare", sa, sb, "--pair", "strategy=slow:template")
    assert r.returncode == 0, r.stderr
    assert "\npaired, every other axis alike: A at strategy=slow, B at strategy=template\n" in r.stdout
    joined = a.filter(pl.col("param_strategy") == "slow").join(
        b.filter(pl.col("param_strategy") == "template"), on="param_namespace_size", suffix="_b").sort(
        "param_namespace_size")
    header, body = table_rows(r.stdout, "namespace_size")
    assert [row[header.index("B/A")] for row in body] == \
        [f"{x:.3f}" for x in (joined["metric_init_ms_b"] / joined["metric_init_ms"])]  # 0.500, 0.600
    assert "ok in B only: 1 points" in r.stdout and "namespace_size=4GiB, strategy=template" in r.stdout
    mail = memsweep_here("compare", sa, sb, "--pair", "strategy=slow:template", "--format", "mail").stdout
    assert "paired: A at strategy=slow, B at strategy=template" in mail.splitlines()
    assert [line.split()[-1] for line in mail.splitlines() if line.startswith(("1GiB", "2GiB"))] == \
        ["(-50.0%)", "(-40.0%)"]


@pytest.mark.parametrize("args, message", [
    (("--pair", "strategy=slow"), r"'--pair' must be AXIS=A_VALUE:B_VALUE, e.g. strategy=slow:template_nt_inline "
                                  r"\(got 'strategy=slow'\)"),
    (("--pair", "strategy=slow:fast"), r"'--pair strategy \(B's value\)' must be one of 'slow', 'template', "
                                       r"'template_nt', 'template_nt_inline' \(got 'fast'\)"),
    (("--pair", "colour=red:blue"), r"'--pair' must name an axis of model 'memmap', one of "
                                    r"\['namespace_size', 'strategy'\] \(got 'colour=red:blue'\)"),
    (("--pair", "strategy=slow:template", "--where", "strategy=slow"),
     r"'--where' and '--pair' must name different axes"),
])
def test_a_bad_pair_is_refused_naming_what_is_allowed(tmp_path, args, message):
    a = strategy_rows({"slow": [10.0], "template": [8.0]}, [1])
    sa = write_sweep(tmp_path, "a", {"memmap": a})
    r = memsweep_here("compare", sa, sa, *args)
    assert r.returncode == 2 and re.search(message, r.stderr), r.stderr
    assert not (tmp_path / "a" / "_report").exists()  # refused before anything is written


def test_sweeps_that_share_no_point_are_refused_with_the_pair_that_compares_them(tmp_path):
    """Two specs that differ in one axis value: no shared point, and the refusal gives the --pair to ask."""
    sa = write_sweep(tmp_path, "a", {"memmap": strategy_rows({"slow": [10.0, 20.0]}, [1, 2])})
    sb = write_sweep(tmp_path, "b", {"memmap": strategy_rows({"template": [8.0, 16.0]}, [1, 2])})
    r = memsweep_here("compare", sa, sb)
    assert r.returncode == 2, r.stderr
    assert r.stderr == ("memsweep compare: error: no shared points (A: memmap model 2 ok points; B: memmap model 2 "
                        "ok points): their model rows share no value of strategy; give '--pair strategy=slow:template' "
                        "to read A at one value and B at another\n")
    assert memsweep_here("compare", sa, sb, "--pair", "strategy=slow:template").returncode == 0


def test_a_side_names_the_kernel_image_only_where_its_rows_ran_that_kernel():
    """The header names the [kernel] image beside the releases the kernel rows ran, unless none of them is
    its release (rows of a model whose guest boots kernels of its own)."""
    from analysis.compare.compare import what

    class Side:
        manifest = {"profile": "seed", "computation": {"identity": {"spec": {"kernel": {
            "image": "debian:6.12", "image_sha256": "a3a6fa50" * 8, "release": "6.12.118+deb12-amd64"}}}}}

        def __init__(self, releases):
            self.releases = releases

        def provenance(self):
            return {"env_guest_kernel": set(self.releases), "env_accel": {"tcg"}}

    x86 = what(Side(["6.12.118+deb12-amd64"]))
    arm = what(Side(["6.12.118+deb12-arm64", "7.3.4+deb13-cloud-arm64"]))
    assert x86 == "profile seed; kernel debian:6.12, image a3a6fa50, 6.12.118+deb12-amd64 (tcg)"
    assert arm == "profile seed; kernel 6.12.118+deb12-arm64, 7.3.4+deb13-cloud-arm64 (tcg)"
