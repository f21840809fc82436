"""examples/plugin: a model package installed with pip is found through its entry point and swept end
to end by the real CLI on an embedded Ray (run, verify, report, table, plan, compare)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import polars as pl
import pytest

from tests.conftest import ROOT, memsweep

pytestmark = pytest.mark.slow  # pip installs the plugin, then sweeps it with every command
PLUGIN = ROOT / "examples" / "plugin"
SPEC = PLUGIN / "spec.toml"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """examples/plugin pip-installed, offline (--no-build-isolation builds with the setuptools already
    installed; its dependencies, numpy and polars, are memsweep's own), into a folder of its own that the
    environment returned puts first on PYTHONPATH: the plugin is found through its entry point there, and
    the environment this suite runs in is left as it was (other tests, maybe running at the same time,
    never see a half-installed plugin)."""
    root = tmp_path_factory.mktemp("plugin-install")
    source, site = root / "source", root / "site"
    shutil.copytree(PLUGIN, source)  # the build's egg-info and build/ go there, not into the checkout
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                    "--target", str(site), str(source)], check=True, capture_output=True, text=True, timeout=300)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ["PYTHONPATH"]])}
    out = subprocess.run([sys.executable, "-c", "from workers import MODELS; print(MODELS.plugin('hvo'))"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("memsweep.models entry point 'hvo' = 'memsweep_example.hvo:MODEL' "
                                  "of package 'memsweep-example'")
    return env


@pytest.fixture(scope="module")
def sweep(installed, tmp_path_factory):
    """The example spec run once by `memsweep run` on a small embedded Ray; its folder."""
    out = tmp_path_factory.mktemp("plugin") / "out"
    run = memsweep("run", str(SPEC), "--out", str(out), "--cpus", "2", "--quiet", env=installed)
    assert run.returncode == 0, run.stderr
    assert "hvo-example: 480 points in 5 chunks" in run.stdout
    return out / "hvo-example"


def row(df: pl.DataFrame, **params) -> dict:
    """The one row of the sweep at these axis values."""
    found = df.filter(*(pl.col(f"param_{k}") == v for k, v in params.items()))
    assert found.height == 1, params
    return found.row(0, named=True)


def test_rows_equal_the_arithmetic_by_hand(sweep):
    """Counts and times of three rows, from the defaults in memsweep_example/hvo.py, written out."""
    df = pl.read_parquet(sweep / "model=hvo" / "*.parquet", hive_partitioning=False)
    assert df.height == 480 and set(df["status"]) == {"ok"}
    base = {"nr_hugepages": 1000, "struct_page_size": 64, "hvo": True}

    # 1000 folios, P = 64: 8 vmemmap pages each; per folio, then a flush to 64 CPUs on bare metal.
    r = row(df, **base, batching="per_folio", cpus=64, virtualized=False)
    splits = -(-1000 * 512 * 64 // (2 * 1024 * 1024))  # 32,768,000 B of struct pages / 2 MiB = 15.625 -> 16
    assert splits == 16
    assert (r["metric_folios"], r["metric_struct_pages_init"]) == (1000, 1000 * 512)
    assert (r["metric_vmemmap_ptes_remapped"], r["metric_vmemmap_pages_freed"]) == (8000, 8000)
    assert r["metric_vmemmap_saved_bytes"] == 1000 * 7 * 4096 == 28_672_000
    assert (r["metric_pmd_splits"], r["metric_tlb_flushes"]) == (16, 1000 + 16)
    alloc_ns = 1000 * (5166 + 512 * 6)  # folio_alloc_ns + 512 x struct_page_ns = 8,238,000
    hvo_ns = (1000 * (400 + 250 + 250)  # walk, new head page, copy_page
              + 8000 * 5 + 8000 * 400  # PTEs set, old pages freed
              + 16 * (250 + 512 * 5))  # PMD splits: a PTE page and 512 PTEs each = 4,184,960
    flush_ns = 1016 * (1000 + 63 * 150)  # 1016 flushes of 10,450 ns = 10,617,200
    assert r["metric_hvo_ms"] == pytest.approx(4.18496)
    assert r["metric_flush_ms"] == pytest.approx(10.6172)
    assert r["metric_alloc_ms"] == pytest.approx((alloc_ns + hvo_ns + flush_ns) / 1e6) == pytest.approx(23.04016)
    assert r["metric_slowdown_vs_no_hvo"] == pytest.approx(23_040_160 / 8_238_000)

    # Batched in a guest with 288 vCPUs: 2 flush_tlb_all() of 1000 + 287 x 1000 ns each.
    r = row(df, **base, batching="batched", cpus=288, virtualized=True)
    assert r["metric_tlb_flushes"] == 2 and r["metric_pmd_splits"] == 16
    assert r["metric_alloc_ms"] == pytest.approx((8_238_000 + 4_184_960 + 2 * 288_000) / 1e6)  # 12.99896
    assert r["metric_slowdown_vs_no_hvo"] == pytest.approx(12_998_960 / (8_238_000 + 576_000))

    # An 80-byte struct page is not a power of two: HVO does nothing, the write costs what it does without.
    r = row(df, **{**base, "struct_page_size": 80}, batching="per_folio", cpus=8, virtualized=False)
    assert (r["metric_vmemmap_pages_freed"], r["metric_pmd_splits"], r["metric_tlb_flushes"]) == (0, 0, 0)
    assert r["metric_alloc_ms"] == pytest.approx(8.238) and r["metric_slowdown_vs_no_hvo"] == 1.0


def test_verify_report_table_and_plan(sweep, installed):
    """verify finds no problem; the report names the model and has the best and speedup tables of the
    comparison it declares; table and plan work on the plugin's axes."""
    verify = memsweep("verify", str(sweep), env=installed)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    report = memsweep("report", str(sweep), env=installed)
    assert report.returncode == 0 and report.stderr == "", report.stderr
    html = (sweep / "_report" / "report.html").read_text()
    assert "hvo" in html and "hvo/e7-8895" not in html  # no calibration part: no published figures
    assert "could not be imported" not in html and "Traceback" not in html
    assert "hvo: best batching per configuration" in html and "hvo: speedup over per_folio" in html
    # The figure the plugin declares (PLOTS in hvo.py) is drawn by the generic path, one panel per
    # (virtualized, cpus) combination, none empty; the shipped models' figures are not listed at all.
    fig = re.search(r'<figure id="fig-hvo_alloc" class="memsweep-figure" data-panels="(\d+)" '
                    r'data-empty-panels="(\d+)"', html)
    assert fig and (int(fig[1]), int(fig[2])) == (8, 0), fig
    assert (sweep / "_report" / "hvo_alloc.png").stat().st_size > 10_000
    assert "memmap_init" not in html and "model absent" not in html
    assert '<a href="#fig-hvo_alloc">(figure)</a>' in html  # the finding links to the figure it declares
    # The finding the plugin declares (FINDINGS in hvo.py) is among the key findings, its numbers the rows' medians.
    on = pl.read_parquet(sweep / "model=hvo" / "*.parquet", hive_partitioning=False).filter(
        pl.col("param_hvo") & (pl.col("status") == "ok"))
    med = {b: on.filter(pl.col("param_batching") == b)["metric_slowdown_vs_no_hvo"] for b in ("per_folio", "batched")}
    findings = html[html.index('<section id="key-findings">'):html.index('<section id="summary">')]
    assert med["per_folio"].len() == med["batched"].len() == 120
    assert (f"With HVO on, a write to nr_hugepages takes a median {med['per_folio'].median():.2f}x as long as with HVO "
            f"off when each folio is optimized and flushed on its own (120 points), and "
            f"{med['batched'].median():.2f}x batched (120 points).") in findings
    table = memsweep("table", str(sweep), "--model", "hvo", "--rows", "cpus", "--cols", "batching", env=installed)
    assert table.returncode == 0, table.stderr
    assert "hvo alloc_ms" in table.stdout and "per_folio" in table.stdout and "1024" in table.stdout
    plan = memsweep("plan", str(SPEC), "--out", str(sweep.parent), "--json", "--quiet", env=installed)
    assert plan.returncode == 0, plan.stderr
    d = json.loads(plan.stdout)
    assert d["points"] == 480 and d["models"]["hvo"]["feasible"] == 480
    compare = memsweep("compare", str(sweep), str(sweep), env=installed)
    assert compare.returncode == 0, compare.stderr
    assert "hvo alloc_ms, model (A) vs model (B) (lower is better): A and B are equal at every one of the 480" \
        in compare.stdout
