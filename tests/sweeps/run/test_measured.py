"""Measured rows through the pipeline: source = "both", verify, and calibrate --from a measured sweep."""

from __future__ import annotations

import json

import polars as pl
import pytest

from sweeps.cli import main
from sweeps.run.inspect import verify
from sweeps.run.driver import run
from sweeps.spec.load import parse_spec

SPEC = """name = "measured"
models = ["memmap", "young"]
source = "both"
[measure]
repeats = 3
span_ms = 200
[axes.memmap]
namespace_size = ["256MiB", "512MiB", "1GiB", "2GiB"]
map = ["mem"]
strategy = ["slow", "template", "template_nt", "template_nt_inline"]
[axes.young]
namespace_size = ["1GiB"]
"""


@pytest.fixture(scope="module")
def sweep(ray_local, tmp_path_factory):
    """The spec run for real, its memmap points timed by the C routines on this host: an end-to-end run of 7 s
    on a quiet machine, 28 s in a loaded `make test`; its tests are `slow`, so `make check` leaves them."""
    out = tmp_path_factory.mktemp("measured")
    summary = run(parse_spec(SPEC), str(out), progress=False)
    return out / "measured", summary


@pytest.mark.slow
def test_every_point_has_a_model_row_and_a_measured_row(sweep):
    """source = both: each point twice, once per source, with measured medians and host provenance."""
    folder, summary = sweep
    assert not summary.failed
    df = pl.read_parquet(folder / "model=memmap" / "*.parquet")
    assert df.group_by("source").len().sort("source").rows() == [("measured", 16), ("model", 16)]
    measured = df.filter(pl.col("source") == "measured")
    assert (measured["status"] == "ok").all()
    assert (measured["metric_init_ms"] == measured["measure_median"]).all()
    assert (measured["measure_min"] <= measured["measure_median"]).all()
    # at least the spec's 3 repeats, at most 20 x 3; the points of a chunk are sampled round-robin, so all
    # of them take the same rounds, and a round past the third starts only while the rounds so far span
    # less than span_ms (200): each took at least its point's fastest sample (measure.interleaved)
    assert measured["measure_repeats"].is_between(3, 60).all()
    rounds = measured.group_by("chunk_id").agg(pl.col("measure_repeats").n_unique().alias("counts"),
                                               pl.col("measure_repeats").first().alias("r"),
                                               pl.col("measure_min").sum().alias("round_ms"))
    assert (rounds["counts"] == 1).all()
    assert rounds.filter(pl.col("r") > 3).select(((pl.col("r") - 1) * pl.col("round_ms") < 200).all()).item()
    assert measured["env_kernel_release"].str.len_chars().min() > 0
    model = df.filter(pl.col("source") == "model")
    assert model["measure_median"].is_null().all() and model["metric_init_ms"].is_not_null().all()
    assert set(measured["point_id"]) == set(model["point_id"])


@pytest.mark.slow
def test_unmeasurable_model_gives_infeasible_measured_rows(sweep):
    """young has no user-space analog: its measured row is infeasible with the reason."""
    folder, _ = sweep
    young = pl.read_parquet(folder / "model=young" / "*.parquet").filter(pl.col("source") == "measured")
    assert young["status"].to_list() == ["infeasible"] and "no user-space analog" in young["reason"][0]


@pytest.mark.slow
def test_verify_accepts_one_row_per_point_and_source(sweep):
    """The same point_id once per source is not a duplicate."""
    folder, _ = sweep
    problems, summary = verify(str(folder))
    assert problems == [] and "34 rows, 17 distinct points" in summary


@pytest.mark.slow
def test_calibrate_from_measured_rows_reports_fit_and_held_out_sizes(sweep, capsys):
    """--from fits the memmap costs to the measured times; --holdout sizes are predicted, not fit (few
    neutral starts: the test reads which figures were fit and which held out, not the optimum)."""
    folder, _ = sweep
    assert main(["calibrate", "--from", str(folder), "--holdout", "2GiB", "--json", "--starts", "2",
                 "--loo-starts", "1"]) == 0
    rows = json.loads(capsys.readouterr().out)
    held = [r for r in rows if r["held_out"]]
    fit = [r for r in rows if not r["held_out"]]
    assert len(held) == 4 and all("/2GiB/" in r["figure"] for r in held)
    assert len(fit) == 12 and all(r["figure"].startswith("memmap/measured/") for r in fit)


def test_calibrate_from_a_sweep_without_measurements_is_refused(ray_local, tmp_path, capsys):
    """A purely modeled sweep has nothing to fit: exit 2 saying so."""
    run(parse_spec('name = "m"\nmodels = ["young"]\n'), str(tmp_path), progress=False)
    assert main(["calibrate", "--from", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "'--from' must be a sweep with measured rows of a model that declares a measurement" in err


def test_calibrate_from_a_bad_uri_names_from(capsys):
    """An --from URI no filesystem understands: exit 2 naming --from."""
    assert main(["calibrate", "--from", "nosuchfs://bucket/x"]) == 2
    assert "'--from' must be a local path or a filesystem URI" in capsys.readouterr().err
