"""report.html: where it goes, what it holds, that it is self-contained and escapes all text."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import polars as pl
import pytest

from analysis.exceptions import AnalysisError
from analysis.report.page import esc, html_table, render_html, write_report
from analysis.report.overview import Table
from analysis.read import Sweep
from tests.analysis.conftest import SMALL_SPEC, write_sweep
from tests.conftest import manifest_of, memsweep, tree_state


def test_report_holds_summary_provenance_figures_tables_and_spec(small_report):
    """Name, description, the sections, 8 embedded figures (measured vs model, model vs kernel and the
    kernel's gains skipped: nothing measured, no guest) and the spec as run."""
    page = small_report.read_text()
    assert "<h1>memsweep report: small</h1>" in page
    for section in ("summary", "provenance", "figures", "tables", "spec"):
        assert f'<section id="{section}">' in page
    imgs = re.findall(r'<img src="data:image/png;base64,[A-Za-z0-9+/=]+"', page)
    assert len(imgs) == 8 and 'data-figure-count="8"' in page and "8 figures; 3 skipped." in page
    assert f"<pre>{html.escape(SMALL_SPEC, quote=True)}</pre>" in page
    for title in ("Points", "Infeasible and failed points by reason", "Model vs published figures",
                  "memmap: best strategy per configuration", "memmap: speedup over slow",
                  "memmap: growth with namespace size", "memmap overhead by map location"):
        assert f"<h3>{title}" in page


def test_report_is_self_contained(small_report):
    """No external URL: every src is a data URI, every href an in-page anchor; no stylesheets or fonts fetched."""
    page = small_report.read_text()
    assert re.findall(r'\bsrc="(?!data:)', page) == []
    assert re.findall(r'\bhref="(?!#)', page) == []
    assert "<link" not in page and "@import" not in page and "url(" not in page and "<script" not in page


def test_report_escapes_the_description_and_reasons(small_report):
    """Markup in the description and in reason strings is shown as text, never interpreted."""
    page = small_report.read_text()
    assert "<script>alert" not in page and "<b>bold</b>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in page
    assert "map=dev with sizeof(struct page) &gt; 64 needs CONFIG_NVDIMM_KMSAN" in page


def test_figures_are_written_beside_the_report_as_png_and_svg(small_report):
    """Each embedded figure also exists as <id>.png and <id>.svg next to report.html."""
    names = {p.name for p in small_report.parent.iterdir()}
    for fid in ("memmap_init", "pfnmap_latency", "parity"):
        assert {f"{fid}.png", f"{fid}.svg"} <= names


def test_default_location_and_out_folder(tmp_path):
    """Default OUT/SWEEP/_report/report.html; an --out folder gets report.html inside."""
    df = pl.DataFrame({"param_i": [1], "status": "ok", "metric_i_squared": [1]})
    sweep = write_sweep(tmp_path, "tiny", {"probe": df})
    assert write_report(sweep) == str(Path(sweep) / "_report" / "report.html")
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    assert write_report(sweep, str(folder)) == str(folder / "report.html")
    assert (folder / "report.html").read_text().count("<img") == 0


def test_hand_built_markup_in_names_hosts_and_reasons_is_escaped(tmp_path):
    """A sweep name, a CPU model and a reason containing markup are escaped everywhere."""
    df = pl.DataFrame({"param_i": [1, -1], "status": ["ok", "infeasible"],
                       "reason": [None, "i is <em>negative</em> & odd"], "metric_i_squared": [1, None]})
    sweep = Sweep(write_sweep(tmp_path, "a&b<i>", {"probe": df}, spec='name = "<x>"'))
    page = render_html(sweep, [])
    assert "<i>" not in page and "<em>negative" not in page and "<X>" not in page and "<x>" not in page
    assert "memsweep report: a&amp;b&lt;i&gt;" in page and "i is &lt;em&gt;negative&lt;/em&gt; &amp; odd" in page
    assert "CPU &lt;X&gt;" in page and 'data-figure-count="0"' in page


def test_html_table_escapes_cells_and_right_aligns_numbers():
    """Cells are escaped; numeric-looking cells get the num class."""
    t = Table(title="T<1>", caption="c&d", frame=pl.DataFrame({"a": ["<b>", "1,234"], "b": ["12.5 ms", "x"]}))
    out = html_table(t)
    assert "<h3>T&lt;1&gt;</h3>" in out and "c&amp;d" in out
    assert '<td class="txt">&lt;b&gt;</td>' in out and '<td class="num">1,234</td>' in out
    assert '<td class="num">12.5 ms</td>' in out and esc(None) == ""


def test_a_sweep_without_parts_or_ok_rows_still_gets_a_report(tmp_path):
    """No parts at all, or only error rows: a page with every figure skipped and the reasons listed."""
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "_manifest.json").write_text(json.dumps(manifest_of("empty", models={"memmap": {"version": "1",
                                                                                              "points": 4}})))
    page = Path(write_report(str(empty))).read_text()
    assert 'data-figure-count="0"' in page and "model absent: this sweep has no memmap rows" in page
    df = pl.DataFrame({"param_namespace_size": [1 << 30, 2 << 30], "param_strategy": ["slow", "template"],
                       "status": "error", "reason": "RuntimeError: <boom>", "metric_init_ms": [None, None]},
                      schema_overrides={"metric_init_ms": pl.Float64})
    page = Path(write_report(write_sweep(tmp_path, "errors", {"memmap": df}))).read_text()
    assert "RuntimeError: &lt;boom&gt;" in page and 'data-figure-count="0"' in page


def test_not_a_sweep_is_an_analysis_error(tmp_path):
    """write_report on a folder without a manifest raises AnalysisError and writes nothing."""
    with pytest.raises(AnalysisError, match=r"'OUT/SWEEP' must hold a _manifest.json"):
        write_report(str(tmp_path))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_memsweep_report_command_writes_the_page(seed_sweep, tmp_path):
    """`memsweep report OUT/SWEEP --out FILE` prints the path and writes a page with the seed figures."""
    out = tmp_path / "seed.html"
    r = memsweep("report", seed_sweep, "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"report: {out}"
    page = out.read_text()
    assert "memsweep report: seed" in page and "Model vs published figures" in page


def test_every_figure_says_how_many_panels_it_has_and_none_is_empty(small_report):
    """Each <figure> carries data-panels and data-empty-panels; the small (default-like) sweep has no
    empty panel in any figure."""
    page = small_report.read_text()
    figures = re.findall(r'<figure id="fig-([^"]+)" class="memsweep-figure" data-panels="(\d+)" '
                         r'data-empty-panels="(\d+)">', page)
    assert len(figures) == 8
    assert all(int(panels) >= 1 for _, panels, _ in figures)
    assert [(fid, empty) for fid, _, empty in figures if empty != "0"] == []


def test_memsweep_report_refuses_a_report_folder_linked_out_of_the_sweep(tmp_path):
    """`memsweep report OUT/SWEEP` whose _report is a symlink out of the sweep folder: one line naming the
    link and where it points, exit 2, nothing written there or in the sweep."""
    df = pl.DataFrame({"param_i": [1], "status": "ok", "metric_i_squared": [1]})
    sweep, outside = Path(write_sweep(tmp_path, "tiny", {"probe": df})), tmp_path / "outside"
    outside.mkdir()
    (sweep / "_report").symlink_to(outside)
    before = tree_state(tmp_path)
    r = memsweep("report", str(sweep))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (f"memsweep report: error: '{sweep}/_report' must be a file or folder inside {sweep}, "
                                f"not a symlink out of it (got a link to '{outside}'); nothing is written through "
                                "it: remove the link.")
    assert tree_state(tmp_path) == before and list(outside.iterdir()) == []
