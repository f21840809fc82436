"""`memsweep calibrate`: every published figure with its error and leave-one-out error, within the targets."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import re
from pathlib import Path

import polars as pl
import pytest

from sweeps.calibration import run_calibration
from sweeps.cli import main
from sweeps.exceptions import FitError, UsageError
from workers.calibrate import predict
from workers.dataset import MANIFEST, part_path
from workers.dataset.parts import checksum
from tests.conftest import manifest_of
from workers.measure.fit import figures_from_measured
from workers.model import points_frame
from workers.profiles import dump_profile, load_profile
from workers.registry import shipped_models

# The shipped models (an installed plugin model, such as examples/plugin's, is not part of these counts).
MODELS = shipped_models()


@pytest.fixture(scope="module")
def calibrations(seed_calibration):
    """The calibrations `memsweep calibrate` prints (computed once per session: tests/conftest.py)."""
    return [seed_calibration(name) for name, m in MODELS.items() if m.calibration.figures]


@pytest.fixture(scope="module")
def young(tmp_path_factory) -> dict:
    """`memsweep calibrate --model young --starts 2` run twice in this process, as the text a user reads
    (with --save: the profile it writes) and as --json: each fit takes seconds, and several tests read them."""
    saved = tmp_path_factory.mktemp("young") / "fitted.toml"
    out = {"saved": saved}
    for key, extra in (("text", ["--save", str(saved)]), ("json", ["--json"])):
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            assert main(["calibrate", "--model", "young", "--starts", "2", *extra]) == 0
        out[key] = printed.getvalue()
    out["rows"] = json.loads(out["json"])
    return out


@pytest.fixture(scope="module")
def results(calibrations):
    """Every published figure's result, by figure id."""
    return {r.figure: r.to_dict() for cal in calibrations for r in cal.results}


def test_the_published_figures_identify_every_cost_they_fit(calibrations):
    """Each model's published figures carry as many independent numbers as it has free costs, and name none
    as not identified: the published fit is one --save writes."""
    for cal in calibrations:
        assert (cal.model, cal.identification.independent, cal.identification.unidentified) == (
            cal.model, len(cal.free), ())


def test_cli_json_has_the_documented_keys(young):
    """--json prints a list of objects keyed figure/published/model/error/loo_error/use: the fit figures,
    then the seed profile's validation figures (use = "validation")."""
    rows = young["rows"]
    fit = [r["figure"] for r in rows if r["use"] == "fit"]
    validation = [r["figure"] for r in rows if r["use"] == "validation"]
    assert fit == [f.id for f in MODELS["young"].calibration.figures]
    assert validation == [v["id"] for v in load_profile("seed").validation if v["model"] == "young"]
    assert all({"figure", "published", "model", "error", "loo_error", "use"} <= set(r) for r in rows)


def test_cli_prints_the_models_crosscheck_after_its_fit(young):
    """young names a cross-check (Calibration.crosscheck): its lines follow the fit's, indented, and --json
    (a list of figure rows) carries none of them."""
    text = young["text"]
    assert "  young.unmap_step_ns against the arm64 guest's instructions" in text
    assert text.index("against the arm64 guest's instructions") > text.index("validation figures")
    assert "guest's instructions" not in young["json"]


def test_cli_counts_the_costs_that_move_the_figures(young):
    """The text says how many costs move the figures (fitted and hand-set) against the independent numbers
    the figures carry; --json gives every figure row of the model the same count."""
    assert "5 costs move the figures (3 fitted, 2 hand-set); the figures carry 5 independent numbers" in young["text"]
    counts = [r["count"] for r in young["rows"]]
    assert all(c == counts[0] for c in counts)
    assert (counts[0]["fitted"], counts[0]["hand_set"], counts[0]["over"]) == (
        ["young.folio_ns", "young.pte_atomic_ns", "young.tlb_sync_ns"],
        ["young.call_ns", "young.tlb_flush_ns"], False)


@pytest.mark.parametrize("flag", ["--starts", "--loo-starts"])
def test_a_count_of_starts_below_one_exits_2_naming_it(flag, capsys):
    with pytest.raises(SystemExit) as e:
        main(["calibrate", "--model", "young", flag, "0"])
    assert e.value.code == 2 and f"argument {flag}: must be a positive integer (got '0')" in capsys.readouterr().err


def test_validation_figures_come_from_two_sources_at_least():
    """The seed profile holds at least 6 validation figures from at least 2 sources, none a fit figure."""
    seed = load_profile("seed")
    fit_ids = {f.id for m in MODELS.values() for f in m.calibration.figures}
    ids = [v["id"] for v in seed.validation]
    assert len(ids) >= 6 and not set(ids) & fit_ids
    assert len({v["source"].split(",")[0] for v in seed.validation}) >= 2


def test_cli_prints_validation_apart(young):
    """The text output lists the validation figures under 'predicted, not fit', after the fit ones."""
    text = young["text"]
    assert "validation figures: predicted, not fit" in text
    assert text.index("young/validation/classic/x86_64/improvement") > text.index("max |error|")
    assert "young.tlb_flush_ns = 50: " in text  # a hand-set cost, at -20% / +20%


def test_cli_table_and_save_write_a_loadable_profile(young):
    """The text output names free parameters and errors; --save writes a profile that loads."""
    text = young["text"]
    assert "young: 3 free parameters fit to 7 figures" in text and "LOO error" in text
    saved = load_profile(str(young["saved"]))
    assert saved.sections["young"]["folio_ns"].source == "calibrated"
    assert saved.name == "fitted" and re.match(r"Costs fit by memsweep calibrate on \d{4}-\d\d-\d\d UTC to the "
                                               r"published figures \(7 young\): young: young\.folio_ns, "
                                               r"young\.pte_atomic_ns, young\.tlb_sync_ns\. "
                                               r"Every other entry is seed's", saved.description)


def test_the_seed_profile_records_the_leave_one_out_errors_calibrate_finds(results):
    """The report quotes the leave-one-out errors seed.toml records ([leave_one_out]): they are the ones a
    fresh calibration finds, for every fitted figure. A single value is the one refit every start reaches (to
    the 4 decimals written); a range is where the other figures leave a cost free, and its ends are where the
    walk along that cost leaves the equally good fits (bisected to 1e-5 of the unit cube) or meets the cost's
    bounds: the same to the 4 decimals written, whichever start the refit took on whichever machine."""
    recorded = load_profile("seed").leave_one_out
    assert set(recorded) == set(results)
    for fid, (low, high) in recorded.items():
        found = results[fid]
        assert (low, high) == pytest.approx((found["loo_low"], found["loo_high"]), abs=6e-4), fid
        assert (low == high) == (not found["loo_free"]), fid
    assert not any(found["loo_free"] for fid, found in results.items() if fid.startswith("memmap/"))
    assert results["young/classic/x86_64/unmap_improvement"]["bound"] == ">="  # fit as a bound: it holds, error 0
    assert results["young/classic/x86_64/unmap_improvement"]["loo_error"] == 0.0


def test_save_records_the_leave_one_out_errors(young):
    """--save writes each fitted figure's leave-one-out error into the profile, outside its digest."""
    saved = load_profile(str(young["saved"]))
    assert set(saved.leave_one_out) == {f.id for f in MODELS["young"].calibration.figures}
    assert saved.digest() == dataclasses.replace(saved, leave_one_out={}).digest()


def test_every_published_figure_is_calibrated(results):
    """One result per figure of every model, ids starting with the model name; a figure's error is the model's
    relative to it, a bound's only where the model falls on its wrong side."""
    expected = {f.id for m in MODELS.values() for f in m.calibration.figures}
    assert set(results) == expected and len(expected) == 8 + 20 + 7
    for fid, r in results.items():
        assert fid.split("/")[0] in MODELS
        assert {"figure", "published", "model", "error", "loo_error"} <= set(r)
        off = (r["model"] - r["published"]) / r["published"]
        assert r["error"] == pytest.approx(off if r["bound"] == "=" else min(off, 0.0)), fid


@pytest.mark.parametrize("model,fit,loo", [("memmap", 0.10, 0.20), ("pfnmap", 0.03, 0.06), ("young/", 0.10, None),
                                           ("young/classic/", 0.12, None)])
def test_figures_are_within_the_acceptance_bounds(results, model, fit, loo):
    """Fitted errors (and leave-one-out errors where the issue bounds them) stay inside the targets: young's
    seed figures within 10%, the classic series' within 12% (its batched unmap, 249 ms, at 221 ms)."""
    prefix = model if model.endswith("/") else model + "/"
    rows = [r for f, r in results.items() if f.startswith(prefix) and (model != "young/" or "/classic/" not in f)]
    assert max(abs(r["error"]) for r in rows) < fit
    if loo is not None:
        assert max(abs(r["loo_error"]) for r in rows) < loo


def test_memmap_overall_speedups_match_the_series(results):
    """slow / template_nt_inline: 2.52x (nd_pmem) and 2.30x (dax_pmem), each within 10%."""
    for mode, published in (("fsdax", 2.52), ("devdax", 2.30)):
        speedup = results[f"memmap/{mode}/slow"]["model"] / results[f"memmap/{mode}/template_nt_inline"]["model"]
        assert speedup == pytest.approx(published, rel=0.10)


def test_pfnmap_improvements_within_two_points(results):
    """Each published improvement percentage (latency and copy) is matched within 2 points."""
    for kind in ("lat_mem_rd", "copy"):
        for size in (["64MiB", "128MiB", "256MiB", "512MiB", "1GiB", "2GiB", "4GiB"] if kind == "lat_mem_rd"
                     else ["1GiB", "2GiB", "4GiB"]):
            pte, pmd = results[f"pfnmap/{kind}/pte/{size}"], results[f"pfnmap/{kind}/pmd/{size}"]
            published = 1 - pmd["published"] / pte["published"]
            model = 1 - pmd["model"] / pte["model"]
            assert abs(model - published) < 0.02, (kind, size, model, published)


def test_shipped_seed_profile_holds_the_fitted_values(results):
    """The seed profile is already calibrated: refitting moves no figure by more than 1%."""
    from workers.calibrate import predict

    seed = load_profile("seed")
    for m in MODELS.values():
        figs = m.calibration.figures
        if figs:
            for f, value in zip(figs, predict(m, figs, seed)):
                assert value == pytest.approx(results[f.id]["model"], rel=0.01), f.id


def test_unknown_model_is_a_usage_error(capsys):
    """--model must name a model with figures; exit 2 with the list."""
    assert main(["calibrate", "--model", "copy"]) == 2
    assert "'--model' must be a model with published figures" in capsys.readouterr().err


def test_measured_host_caches_come_from_the_integer_columns_or_schema_2s_text():
    """--from takes the host's cache sizes from env_l1d/l2/l3_bytes (null: unknown); a schema-2 sweep
    has only the env_caches text, which is read instead."""
    import polars as pl

    from sweeps.calibration import _facts

    ints = pl.DataFrame({"env_caches": ["L1d 1 B, L2 2 B, L3 3 B"], "env_l1d_bytes": [49152],
                         "env_l2_bytes": [1048576], "env_l3_bytes": [None]},
                        schema_overrides={"env_l3_bytes": pl.Int64})
    assert _facts(ints) == {"l1d_bytes": 49152, "l2_bytes": 1048576, "l3_bytes": None}
    text = pl.DataFrame({"env_caches": ["L1d 49152 B, L2 unknown B, L3 33554432 B"]})
    assert _facts(text) == {"l1d_bytes": 49152, "l2_bytes": None, "l3_bytes": 33554432}
    assert _facts(pl.DataFrame({"x": [1]})) == {"l1d_bytes": None, "l2_bytes": None, "l3_bytes": None}


# Eight memmap points at P = 64, inside and beyond a 32 MiB LLC: every strategy at 1 GiB and 64 GiB.
MEMMAP_ROWS = [{"namespace_size": size, "mode": "fsdax", "map": "mem", "strategy": strategy}
               for size in ("1GiB", "64GiB") for strategy in ("slow", "template", "template_nt", "template_nt_inline")]
HOST = {"env_host": "host-a", "env_cpu_model": "AMD EPYC 7B13", "env_l1d_bytes": 32768, "env_l2_bytes": 524288,
        "env_l3_bytes": 33554432}
# Fit the two bandwidths the LLC decides between; the other memmap costs stay at the seed's values.
FIX = ["--fix", "copy.clock_ghz", "--fix", "copy.store_cycles", "--fix", "copy.call_cycles", "--fix", "copy.loop_cycles",
       "--fix", "copy.dram_write_gbs", "--fix", "memmap.exposed_fraction"]


def measured_sweep(root: Path, **costs: float) -> str:
    """A sweep folder of the eight measured memmap rows above, measured on HOST: the times the memmap
    model gives with the seed's costs, `costs` in [copy] and HOST's LLC."""
    memmap = MODELS["memmap"]
    truth = load_profile("seed").with_values({("copy", k): v for k, v in {**costs, "llc_bytes": 33554432}.items()},
                                             source="assumed")
    rows = points_frame(memmap, MEMMAP_ROWS).with_columns(status=pl.lit("ok"), source=pl.lit("measured"))
    times = predict(memmap, figures_from_measured(memmap, rows.with_columns(measure_min=pl.lit(1.0))), truth)
    part = root / "m" / part_path("memmap", "c0")
    part.parent.mkdir(parents=True)
    rows.with_columns(pl.Series("measure_min", times), *(pl.lit(v).alias(k) for k, v in HOST.items())).write_parquet(part)
    # the manifest --from checks the part against (workers.dataset.parts), recording it as a run does
    data = part.read_bytes()
    (root / "m" / MANIFEST).write_text(json.dumps(manifest_of("m", {
        "c0": {"chunk_id": "c0", "model": "memmap", "rows": rows.height, "bytes": len(data),
               "checksum": checksum(data), "status": {"ok": rows.height}}})))
    return str(root / "m")


@pytest.mark.slow
def test_too_few_points_name_the_costs_they_do_not_identify_and_are_not_saved(tmp_path, capsys):
    """Seven costs for eight points at one struct page size (the exposed fraction held): fewer independent
    numbers than costs, the copy call and loop among the costs named as not identified (calls and loop
    iterations come in one ratio at P = 64), and --save refuses (exit 2) naming each and writes nothing."""
    sweep, out = measured_sweep(tmp_path, dram_rfo_gbs=20.0, llc_gbs=60.0), tmp_path / "host.toml"
    assert main(["calibrate", "--from", sweep, "--starts", "1", "--loo-starts", "1", "--fix", "memmap.exposed_fraction",
                 "--save", str(out)]) == 2
    text, err = capsys.readouterr()
    assert re.search(r"the 8 figures carry [1-5] independent numbers \(singular values above 1% of the largest\) "
                     r"for 7 fitted costs", text)
    named = re.search(r"not identified by these points: (.*)", text).group(1).split(", ")
    assert {"call_cycles", "loop_cycles"} <= set(named)
    assert all(f"'copy.{key}' must be identified by the fitted points (got " in err for key in named)
    assert "To proceed: measure more points" in err and not out.exists()


@pytest.mark.slow
def test_an_impossible_fit_is_refused_with_save_and_warned_about_without(tmp_path, capsys):
    """Times made with a DRAM RFO bandwidth above the LLC's fit back to it: --save raises naming the cost,
    its value and the order it breaks, and leaves the file as it was; without --save it is a warning."""
    sweep, out = measured_sweep(tmp_path, dram_rfo_gbs=56.0, llc_gbs=16.0), tmp_path / "host.toml"
    out.write_text("kept")
    fixed = FIX[1::2]
    with pytest.raises(FitError, match=r"'copy\.dram_rfo_gbs' must be at most copy\.llc_gbs = 1\d\.?\d* GB/s: the LLC "
                                       r"sits between the core and DRAM.* \(got 5\d"):
        run_calibration("seed", models=None, as_json=False, save=str(out), source=sweep, starts=4, loo_starts=1,
                        fix=fixed)
    assert out.read_text() == "kept"
    capsys.readouterr()
    assert main(["calibrate", "--from", sweep, "--starts", "4", "--loo-starts", "1", *FIX]) == 0
    err = capsys.readouterr().err
    assert err.startswith("memsweep calibrate: warning: ") and "'copy.dram_rfo_gbs' must be at most copy.llc_gbs" in err


def test_save_names_the_host_and_says_what_when_and_which_costs(tmp_path, capsys):
    """A fit from host-a's rows is saved as profile "host-a", described by its CPU, the UTC date, the sweep,
    the statistic and the fitted costs; no section still claims the seed's machine, the seed's validation
    figures are gone, and the file loads back to the same text."""
    sweep, out = measured_sweep(tmp_path, dram_rfo_gbs=6.0, llc_gbs=10.0), tmp_path / "host.toml"
    assert main(["calibrate", "--from", sweep, "--starts", "2", "--loo-starts", "1", *FIX, "--save", str(out)]) == 0
    saved = load_profile(str(out))
    assert saved.name == "host-a"
    assert re.fullmatch(r"AMD EPYC 7B13 \(host host-a\): costs fit by memsweep calibrate on \d{4}-\d\d-\d\d UTC to "
                        r"the measured rows of .*m \(8 memmap points, measure_min\): memmap: copy\.dram_rfo_gbs, "
                        r"copy\.llc_gbs\. Every other entry is seed's \(.*\)\.", saved.description)
    assert all("Ice Lake" not in saved.text(section, "machine") for section in ("copy", "memmap"))
    assert saved.validation == () and dump_profile(saved) == out.read_text()
    assert saved.value("copy", "dram_rfo_gbs") == pytest.approx(6.0, rel=0.02)


def test_fix_must_name_a_cost_the_calibration_fits():
    """--fix of a cost no fitted model frees is refused with the list of those it may name."""
    with pytest.raises(UsageError, match=r"'--fix' must be one of the costs this calibration fits, "
                                         r"\['young\.folio_ns', 'young\.pte_atomic_ns', 'young\.tlb_sync_ns'\] "
                                         r"\(got 'copy\.call_ns'\)"):
        run_calibration("seed", models=["young"], as_json=False, save=None, fix=["copy.call_ns"])


def test_a_plugin_models_own_costs_are_fit_and_saved(monkeypatch, capsys, tmp_path):
    """A model outside the shipped profiles (tests/support/costed.py, as a plugin is) with a calibration part:
    `calibrate --model costed` starts from the model's own [costed] costs, fits the one it frees to its two
    figures (i x step_ns: 5000 ns at i = 1000 and 50 ns at i = 10 say step_ns = 5) and saves the section."""
    import tomllib

    from tests.support.costed import MODEL as costed
    from workers.model import Calibration, Figure, FreeParam

    figures = tuple(Figure(id=f"costed/i{i}", model="costed", metric="metric_time_ns", published=5.0 * i, unit="ns",
                           params={"i": i}, source="test-only") for i in (1000, 10))
    monkeypatch.setattr(costed, "calibration", Calibration(
        figures=figures, free_params=(FreeParam(section="costed", key="step_ns", lower=0.1, upper=100.0),)))
    saved = tmp_path / "fitted.toml"
    assert main(["calibrate", "--model", "costed", "--json", "--save", str(saved)]) == 0
    results = {r["figure"]: r for r in json.loads(capsys.readouterr().out)}
    assert sorted(results) == ["costed/i10", "costed/i1000"]
    assert results["costed/i1000"]["model"] == pytest.approx(5000.0, rel=1e-3)
    step = tomllib.loads(saved.read_text())["costed"]["step_ns"]
    assert step["value"] == pytest.approx(5.0, rel=1e-3) and step["source"] == "calibrated"


@pytest.mark.parametrize("save, why", [("", "(got '')"), (".", "(got '.': a folder)"),
                                       ("no/such/folder/p.toml", "no folder ")])
def test_a_save_path_that_cannot_be_written_is_refused_before_the_fit(tmp_path, monkeypatch, capsys, save, why):
    """`--save` that is empty, a folder or in a folder that does not exist: exit 2 naming it before any fit is
    printed (a fit takes minutes), and nothing written."""
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", "--model", "young", "--save", save]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "'--save' must be a file to write the fitted profile to" in err and why in err
    assert list(tmp_path.iterdir()) == []
