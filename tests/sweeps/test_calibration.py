"""`memsweep calibrate`: every published figure with its error and leave-one-out error, within the targets."""

from __future__ import annotations

import json

import pytest

from sweeps.cli import main
from workers.calibrate import calibrate
from workers.profiles import load_profile
from workers.registry import shipped_models

# The shipped models (an installed plugin model, such as examples/plugin's, is not part of these counts).
MODELS = shipped_models()


@pytest.fixture(scope="module")
def results():
    """The calibration `memsweep calibrate` prints, computed once for this module."""
    seed = load_profile("seed")
    return {r.figure: r.to_dict() for m in MODELS.values() if m.figures() for r in calibrate(m, seed).results}


def test_cli_json_has_the_documented_keys(capsys):
    """--json prints a list of objects keyed figure/published/model/error/loo_error/use: the fit figures,
    then the seed profile's validation figures (use = "validation")."""
    assert main(["calibrate", "--model", "young", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    fit = [r["figure"] for r in rows if r["use"] == "fit"]
    validation = [r["figure"] for r in rows if r["use"] == "validation"]
    assert fit == [f.id for f in MODELS["young"].figures()]
    assert validation == [v["id"] for v in load_profile("seed").validation if v["model"] == "young"]
    assert all({"figure", "published", "model", "error", "loo_error", "use"} <= set(r) for r in rows)


def test_validation_figures_come_from_two_sources_at_least():
    """The seed profile holds at least 6 validation figures from at least 2 sources, none a fit figure."""
    seed = load_profile("seed")
    fit_ids = {f.id for m in MODELS.values() for f in m.figures()}
    ids = [v["id"] for v in seed.validation]
    assert len(ids) >= 6 and not set(ids) & fit_ids
    assert len({v["source"].split(",")[0] for v in seed.validation}) >= 2


def test_cli_prints_validation_apart(capsys):
    """The text output lists the validation figures under 'predicted, not fit', after the fit ones."""
    assert main(["calibrate", "--model", "young", "--starts", "2"]) == 0
    text = capsys.readouterr().out
    assert "validation figures: predicted, not fit" in text
    assert text.index("young/validation/classic/arm64/per_pte") > text.index("max |error|")
    assert "young.call_ns = 15: " in text  # the hand-set cost, at -20% / +20%


def test_cli_table_and_save_write_a_loadable_profile(tmp_path, capsys):
    """The text output names free parameters and errors; --save writes a profile that loads."""
    out = tmp_path / "fitted.toml"
    assert main(["calibrate", "--model", "young", "--save", str(out)]) == 0
    text = capsys.readouterr().out
    assert "young: 2 free parameters fit to 3 figures" in text and "LOO error" in text
    assert load_profile(str(out)).sections["young"]["folio_ns"].source == "calibrated"


def test_every_published_figure_is_calibrated(results):
    """One result per figure of every model, ids starting with the model name."""
    expected = {f.id for m in MODELS.values() for f in m.figures()}
    assert set(results) == expected and len(expected) == 8 + 20 + 3
    for fid, r in results.items():
        assert fid.split("/")[0] in MODELS
        assert {"figure", "published", "model", "error", "loo_error"} <= set(r)
        assert r["error"] == pytest.approx((r["model"] - r["published"]) / r["published"])


@pytest.mark.parametrize("model,fit,loo", [("memmap", 0.10, 0.25), ("pfnmap", 0.03, 0.06), ("young", 0.10, None)])
def test_figures_are_within_the_acceptance_bounds(results, model, fit, loo):
    """Fitted errors (and leave-one-out errors where the issue bounds them) stay inside the targets."""
    rows = [r for f, r in results.items() if f.startswith(model + "/")]
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
        figs = m.figures()
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
