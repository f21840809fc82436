"""A profile says what it is wherever its numbers appear: its description and how far it is calibrated, in
`table`, `compare` and the report; an uncalibrated one is marked (epyc_genoa: datasheet sizes, assumed
costs, what-if only)."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from analysis.compare.compare import compare, text
from analysis.read import Sweep
from analysis.report.page import render_html
from analysis.tables import text_table
from tests.analysis.conftest import write_sweep
from workers import get_model
from workers.profiles import calibration_status, load_profile

# copy declares no fit of its own: memmap's published figures fit the copy costs
COPY_FREE = [(p.section, p.key) for p in get_model("memmap").calibration.free_params if p.section == "copy"]


def copy_rows() -> pl.DataFrame:
    return pl.DataFrame({"param_struct_page_size": [64, 80, 64, 80], "param_strategy": ["memcpy"] * 2 + ["nt_call"] * 2,
                         "status": "ok", "metric_ns_per_copy": [10.0, 12.0, 8.0, 9.0]})


def test_the_status_counts_the_fitted_costs():
    n = len(COPY_FREE)
    assert calibration_status(load_profile("seed"), COPY_FREE) == f"calibrated ({n} of {n} fitted costs)"
    assert calibration_status(load_profile("epyc_genoa"), COPY_FREE) == (
        f"NOT calibrated (0 of {n} costs a fit sets: assumed values, what-if only)")
    assert calibration_status(load_profile("seed"), []) == "no fitted costs (the models in question declare none)"


def test_table_compare_and_report_say_an_uncalibrated_profile_is_one(tmp_path):
    seed = write_sweep(tmp_path, "a", {"copy": copy_rows()}, profile="seed")
    genoa = write_sweep(tmp_path, "b", {"copy": copy_rows()}, profile="epyc_genoa")
    table = text_table(genoa, model="copy", rows="struct_page_size", cols="strategy")
    assert table.splitlines()[-1].startswith("profile epyc_genoa: AMD EPYC 9654") and "NOT calibrated (0 of" in table
    lines = text(compare(seed, genoa)).splitlines()
    n = len(COPY_FREE)
    assert lines[3].startswith("profile of A seed: ") and lines[3].endswith(f"; calibrated ({n} of {n} fitted costs)")
    assert lines[4].startswith("profile of B epyc_genoa: ") and "NOT calibrated" in lines[4]
    page = render_html(Sweep(genoa), [])
    assert '<p class="note">Profile epyc_genoa: ' in page and "every number of this report rests on its assumed" in page
    assert "every number of this report" not in render_html(Sweep(seed), [])


def memmap_rows(profile: str, **held) -> pl.DataFrame:
    """memmap at the seed's own points and at 4 TiB, evaluated with `profile`, with the evidence columns the
    model backend writes (workers.modeled.rows)."""
    from workers.modeled import rows as model_rows
    from workers.model import points_frame

    model = get_model("memmap")
    points = points_frame(model, [{**dict(namespace_size=size, align="2MiB", mode="fsdax", map="dev", strategy=s),
                                   **held} for size in ("100GiB", "4TiB") for s in ("slow", "template")])
    return model_rows(model, points, load_profile(profile))


def test_table_and_compare_give_the_evidence_an_uncalibrated_profile_rests_on(tmp_path):
    """On seed the seed's points are fit (F) and 4 TiB extrapolated (E); on epyc_genoa every cell is assumed
    (A), and the lines under the table and compare's evidence lines say why."""
    seed = write_sweep(tmp_path, "a", {"memmap": memmap_rows("seed")}, profile="seed")
    genoa = write_sweep(tmp_path, "b", {"memmap": memmap_rows("epyc_genoa")}, profile="epyc_genoa")
    table = text_table(seed, model="memmap", rows="namespace_size", cols="strategy")
    assert [re.findall(r" ms(?: (?:±[\d.]+|-[\d.]+/\+[\d.]+)%)? ([FVKEA])\b", line) for line in table.splitlines() if line.startswith(("100GiB", "4TiB"))] == [
        ["F", "F"], ["E", "E"]]
    assert "modeled cells' rows: 2 fit, 2 extrapolated" in table
    assert "  namespace_size 4TiB: 41x the largest with a figure (100GiB)" in table
    table = text_table(genoa, model="memmap", rows="namespace_size", cols="strategy")
    assert [re.findall(r" ms(?: (?:±[\d.]+|-[\d.]+/\+[\d.]+)%)? ([FVKEA])\b", line) for line in table.splitlines() if line.startswith(("100GiB", "4TiB"))] == [
        ["A", "A"], ["A", "A"]]
    assert "modeled cells' rows: 4 assumed" in table
    assert "  assumed: profile epyc_genoa not calibrated (what-if)" in table
    out = text(compare(seed, genoa))
    assert "evidence of A's answers: 2 fit, 2 extrapolated" in out and "evidence of B's answers: 4 assumed" in out
    assert "  assumed: profile epyc_genoa not calibrated (what-if)" in out


def test_a_count_read_from_the_stored_labels_leaves_out_the_cost_assumptions(tmp_path):
    """The stored label is the headline's: a devdax map=mem memmap at 1 GiB align is a few MiB of struct pages,
    assumed LLC-warm for init_ms; read for its DRAM bytes, the same rows are extrapolated and the LLC assumption
    is not listed."""
    sweep = write_sweep(tmp_path, "m", {"memmap": memmap_rows("seed", map="mem", mode="devdax", align="1GiB")},
                        profile="seed")
    times = text_table(sweep, model="memmap", rows="namespace_size", cols="strategy")
    dram = text_table(sweep, model="memmap", rows="namespace_size", cols="strategy", metric="memmap_dram_bytes")
    assert "assumed: LLC-warm struct pages (copy.warm_llc)" in times
    assert "LLC" not in dram and "modeled cells' rows: 4 extrapolated" in dram


def test_a_header_says_once_how_far_a_profile_is_calibrated_and_where_inherited_fits_come_from():
    """epyc_genoa's description no longer says NOT calibrated beside a status that says partly: for every
    model's fitted costs, the status says once that those fitted are seed's, inherited (its [young] and
    [pfnmap] describe seed's machines)."""
    genoa = load_profile("epyc_genoa")
    keys = [(p.section, p.key) for m in ("memmap", "pfnmap", "young") for p in get_model(m).calibration.free_params]
    status = f"{genoa.description}; {calibration_status(genoa, keys)}"
    assert status.count("calibrated") == 1
    assert re.search(r"partly calibrated \(8 of 12 fitted costs, 8 of them inherited from seed's fits of its own "
                     r"machines; the others assumed\)", status), status


def test_the_report_says_when_the_profile_file_changed_after_the_run(tmp_path):
    """A profile file (named by its absolute path) edited after the run: the report says so, and that its
    numbers are the run's; unchanged, or named by a relative path it cannot place, it says nothing."""
    text = (Path(__file__).resolve().parents[2] / "workers" / "profiles" / "seed.toml").read_text()
    path = tmp_path / "host.toml"
    path.write_text(text.replace('name = "seed"', 'name = "host"'))
    digest = load_profile(str(path)).digest()
    sweep = write_sweep(tmp_path, "s", {"copy": copy_rows()}, profile=str(path), profile_digest=digest)
    assert "has changed since this sweep ran" not in render_html(Sweep(sweep), [])
    path.write_text(path.read_text().replace("llc_gbs = { value = 30.0", "llc_gbs = { value = 31.0"))
    page = render_html(Sweep(sweep), [])
    assert f"The profile {path} has changed since this sweep ran (digest {digest} then, " in page
    relative = write_sweep(tmp_path, "r", {"copy": copy_rows()}, profile="host.toml", profile_digest=digest)
    assert Sweep(relative).profile_change() is None
