"""`memsweep plan`: the run's own plan and statuses, computed without Ray, writing nothing."""

from __future__ import annotations

import json
from collections import Counter

import polars as pl
import pytest

import workers.measure.source
from sweeps.run.chunks import plan
from sweeps.run.cost import makespan, plan_run
from sweeps.run.dryrun import RAY_START_SECONDS, as_dict, cluster_notes, dry_run
from sweeps.spec.load import load_spec, parse_spec
from tests.conftest import memsweep, memsweep_here, tree_state

# Two memmap chunks (chunk_points = 60 of 96 points) and one young chunk, both with infeasible points.
TINY = """name = "tiny"
models = ["memmap", "young"]
chunk_points = 60
[axes.memmap]
namespace_size = ["1GiB", "4GiB", "16GiB"]
struct_page_size = [64, 72, 80, 96]
align = ["2MiB"]
mode = ["fsdax", "devdax"]
map = ["dev", "mem"]
strategy = ["slow", "template"]
[axes.young]
namespace_size = ["1GiB"]
compound_order = [0, 4, 10]  # 10: above MAX_PAGECACHE_ORDER, infeasible
arch = ["arm64", "x86_64"]
first_pte_cont = [true, false]
batching = ["per_pte", "batched"]
"""
BAD_SPECS = {
    "unknown key": 'name = "bad"\ncolour = "red"\n',
    "bad axis value": 'name = "bad"\nmodels = ["memmap"]\n[axes.memmap]\nstruct_page_size = ["big"]\n',
    "bad toml": 'name = "bad\n',
}


def plan_json(*args: str, **kw) -> dict:
    out = memsweep_here("plan", *args, "--json", "--quiet", **kw)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_plan_default_counts_the_points_and_chunks_the_runner_plans(tmp_path):
    """`plan default` reports the spec's points and exactly the chunks the runner plans (default's grids are
    small: one chunk per model, whatever a chunk costs)."""
    spec = load_spec("default")
    chunks = plan_run(spec, str(tmp_path / "out"), cpus=2).chunks
    text = memsweep_here("plan", "default", "--out", str(tmp_path / "out"), "--quiet", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"default: {spec.total_points:,} points")
    d = plan_json("default", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert (d["points"], d["rows"], d["chunks"]) == (spec.total_points, spec.total_rows, len(chunks))
    for m in spec.models:
        mine = [c for c in chunks if c.model == m]
        assert d["models"][m]["points"] == spec.points(m)
        assert d["models"][m]["chunks"] == len(mine)
        assert d["models"][m]["chunk_points"] == max(c.points for c in mine)
        assert sum(d["models"][m][k] for k in ("feasible", "infeasible", "error")) == spec.points(m)


@pytest.mark.slow
def test_plan_counts_equal_the_statuses_and_reasons_of_a_real_run(ray_local, spec_file, tmp_path):
    """Feasible, infeasible and per-reason counts equal the rows of `run` (in this process, on the session's
    Ray)."""
    path = spec_file(TINY)
    run = memsweep_here("run", str(path), "--out", str(tmp_path / "out"), "--no-report", "--quiet")
    assert run.returncode == 0, run.stderr
    manifest = json.loads((tmp_path / "out" / "tiny" / "_manifest.json").read_text())
    d = plan_json(str(path), "--out", str(tmp_path / "elsewhere"))
    assert d["chunks"] == manifest["chunks_expected"] == 3 and d["points"] == manifest["points_expected"]
    for m in ("memmap", "young"):
        rows = pl.read_parquet(f"{tmp_path}/out/tiny/model={m}/*.parquet", hive_partitioning=False)
        status = dict(rows["status"].value_counts().iter_rows())
        assert (d["models"][m]["feasible"], d["models"][m]["infeasible"]) == (status["ok"], status["infeasible"])
        not_ok = rows.filter(pl.col("status") != "ok")
        assert d["models"][m]["reasons"] == dict(not_ok["reason"].value_counts().iter_rows())
        assert d["models"][m]["infeasible"] > 0 and d["models"][m]["error"] == 0
    young_part = next(p for p in manifest["parts"].values() if p["model"] == "young")
    # young is one chunk: its sample part is that chunk, built as the task built it (only the node id differs)
    assert d["models"]["young"]["bytes"] == pytest.approx(young_part["bytes"], rel=0.01)


@pytest.mark.parametrize("name", sorted(BAD_SPECS))
def test_bad_spec_gives_runs_message_and_exit_2(name, spec_file, tmp_path, capsys, monkeypatch):
    """A bad spec file gives `plan` the same message as `run`, exit status 2, and nothing written (the CLI
    in-process; the next test runs both as processes)."""
    from sweeps.cli import main

    path = str(spec_file(BAD_SPECS[name]))
    monkeypatch.chdir(tmp_path)
    assert main(["run", path, "--out", "a", "--no-report", "--quiet"]) == 2
    ran = capsys.readouterr()
    assert main(["plan", path, "--out", "b"]) == 2
    planned = capsys.readouterr()
    assert planned.out == "" and planned.err.startswith("memsweep plan: error: ")
    assert planned.err.removeprefix("memsweep plan: ") == ran.err.removeprefix("memsweep run: ")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_unknown_spec_name_gives_runs_message_and_exit_2(tmp_path):
    """A spec name that is neither a file nor a shipped spec fails as it does for `run`."""
    _same_error_as_run("no-such-spec", tmp_path)


def _same_error_as_run(spec: str, tmp_path) -> None:
    ran = memsweep("run", spec, "--out", str(tmp_path / "a"), "--no-report", "--quiet", cwd=tmp_path)
    planned = memsweep("plan", spec, "--out", str(tmp_path / "b"), cwd=tmp_path)
    assert ran.returncode == planned.returncode == 2 and planned.stdout == ""
    assert planned.stderr.startswith("memsweep plan: error: ")
    assert planned.stderr.removeprefix("memsweep plan: ") == ran.stderr.removeprefix("memsweep run: ")
    assert not (tmp_path / "b").exists()


def test_plan_writes_nothing(tmp_path):
    """No --out folder, no ./results, no file in the working directory after a plan."""
    (tmp_path / "keep.txt").write_text("x")
    before = tree_state(tmp_path)
    assert memsweep_here("plan", "default", "--out", str(tmp_path / "out"), "--quiet", cwd=tmp_path).returncode == 0
    assert memsweep_here("plan", "seed", "--quiet", cwd=tmp_path).returncode == 0
    assert tree_state(tmp_path) == before
    assert not (tmp_path / "out").exists() and not (tmp_path / "results").exists()


def test_json_keys_and_cpus(tmp_path):
    """--json names every number of the text output; --cpus is the CPU count the time is estimated on."""
    d = plan_json("seed", "--cpus", "3", cwd=tmp_path)
    assert set(d) == {"sweep", "dataset", "sources", "cpus", "nodes", "points", "rows", "chunks", "feasible",
                      "infeasible", "error", "bytes", "seconds", "efficiency", "chunk_seconds", "cost_basis",
                      "plan_seconds", "cluster_notes", "models", "measured", "kernel"}
    assert d["cpus"] == 3 and d["sweep"] == "seed" and d["dataset"].endswith("results/seed")
    assert set(d["models"]) == {"memmap", "pfnmap", "young"}
    assert set(d["models"]["memmap"]) == {
        "points", "chunks", "chunk_points", "feasible", "infeasible", "error", "reasons", "evaluated", "sampled",
        "points_per_second", "seconds_per_chunk", "bytes_per_row", "bytes", "measured_points", "measured_chunks"}
    assert set(d["measured"]) == {"points", "chunks", "repeats", "warmup", "cpu", "span_ms", "min_seconds_one_node",
                                "per_model"}
    assert d["kernel"] == {"points": 0, "chunks": 0, "image": "debian:6.12", "accel": "auto", "per_model": {}}
    assert d["bytes"] > 0 and d["seconds"] >= d["chunk_seconds"] > 0 and 0 < d["efficiency"] <= 1
    assert d["cost_basis"].startswith("measured on this process")


def test_measured_points_are_counted_not_measured(monkeypatch):
    """A `source = both` spec counts its measured points and chunks; no measure kernel runs."""
    calls = []
    monkeypatch.setattr(workers.measure.source, "measure", lambda *a, **k: calls.append(a))
    spec = load_spec("measure")
    d = as_dict(dry_run(spec, cpus=2, progress=False))
    measured = Counter(c.model for c in plan(spec) if c.source == "measured")
    assert calls == [] and d["sources"] == ["model", "measured"]
    assert d["measured"]["points"] == spec.total_points and d["rows"] == 2 * spec.total_points
    assert {m: v["measured_chunks"] for m, v in d["models"].items()} == dict(measured)
    assert d["measured"]["min_seconds_one_node"] == sum(measured.values()) * spec.settings["measured"].span_ms / 1000


def test_measured_only_spec_evaluates_nothing():
    """With `source = measured` there are no modeled rows to evaluate, only measured points to count."""
    spec = parse_spec('name = "m"\nmodels = ["copy"]\nsource = "measured"\n[axes.copy]\nstrategy = ["memcpy"]\n')
    d = as_dict(dry_run(spec, progress=False))
    assert d["models"]["copy"]["points"] == 0 and d["measured"]["points"] == spec.total_points
    assert d["seconds"] == 0 and d["bytes"] == 0


def test_makespan_starts_each_chunk_on_the_first_free_cpu():
    """Chunks in order on N CPUs: the wall time is the busiest CPU's, never less than the longest chunk."""
    assert makespan([1.0, 1.0, 1.0, 1.0], 2) == 2.0
    assert makespan([3.0, 1.0, 1.0, 1.0], 2) == 3.0
    assert makespan([2.0, 1.0], 8) == 2.0
    assert makespan([], 4) == 0.0


def test_plan_says_when_a_cluster_will_not_help(spec_file, tmp_path):
    """3 chunks on --nodes 4: the text says a cluster will not help, that a node would sit idle and that the
    work is shorter than Ray's start; --json lists the same notes; the time is on 4 nodes of --cpus CPUs."""
    path = str(spec_file(TINY))
    text = memsweep_here("plan", path, "--nodes", "4", "--cpus", "2", "--quiet", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "expected time on 4 nodes of 2 CPUs: " in text.stdout
    line = next(ln for ln in text.stdout.splitlines() if ln.startswith("a cluster will not help"))
    assert line.startswith("a cluster will not help: 3 chunks for 4 nodes: 1 node would sit idle; the work takes ")
    assert line.endswith(f"against ~{RAY_START_SECONDS:.0f} s to start Ray on each node.")
    d = plan_json(path, "--nodes", "4", "--cpus", "2", cwd=tmp_path)
    assert d["nodes"] == 4 and d["cpus"] == 2
    assert d["cluster_notes"][0] == "3 chunks for 4 nodes: 1 node would sit idle"
    assert d["cluster_notes"][1].startswith("the work takes ") and len(d["cluster_notes"]) == 2


def test_cluster_notes_name_idle_nodes_or_cpus_and_work_shorter_than_ray_start():
    """Fewer chunks than nodes names idle nodes, else fewer than CPUs names idle CPUs; work under Ray's start
    is said with both times; enough chunks and long work (or unknown work: measured) say nothing."""
    assert cluster_notes(chunks=1, seconds=0.23, nodes=4, cpus=8) == [
        "1 chunk for 4 nodes: 3 nodes would sit idle",
        f"the work takes 0.23 s against ~{RAY_START_SECONDS:.0f} s to start Ray on each node"]
    assert cluster_notes(chunks=5, seconds=None, nodes=4, cpus=8) == ["5 chunks for 8 CPUs: 3 CPUs would sit idle"]
    assert cluster_notes(chunks=5, seconds=None, nodes=4, cpus=None) == []
    assert cluster_notes(chunks=8, seconds=10 * RAY_START_SECONDS, nodes=4, cpus=8) == []


@pytest.mark.parametrize("models, shared, own", [
    (["memmap"], True, []),
    (["young"], False, ["young"]),
    (["memmap", "young", "pfnmap"], True, ["young", "pfnmap"]),
])
def test_the_kernel_paragraph_names_what_each_model_s_rows_boot(models, shared, own):
    """A kernel plan describes the shared guest only where a model without a guest of its own has points, and
    each model's own guest in its KernelCheck's words (young's arm64 probe, pfnmap's /dev/mem probe)."""
    from sweeps.run.dryrun import format_text
    from workers import get_model

    axes = {"memmap": '[axes.memmap]\nnamespace_size = ["1GiB"]\nmode = ["fsdax"]\nstrategy = ["slow"]\n',
            "young": '[axes.young]\nnamespace_size = ["48MiB"]\nmapped_size = ["64MiB"]\ncompound_order = [5]\n',
            "pfnmap": '[axes.pfnmap]\nnamespace_size = ["2MiB"]\ncompound_order = [9]\n'}
    spec = parse_spec(f'name = "k"\nmodels = {json.dumps(models)}\nsource = "kernel"\n'
                      + "".join(axes[m] for m in models))
    text = next(line for line in format_text(dry_run(spec, progress=False)).splitlines() if line.startswith("kernel: "))
    assert ("each chunk boots debian:6.12 once in a guest" in text) == shared
    for m in ("young", "pfnmap"):
        assert (f"{m}: {get_model(m).kernel.guest}" in text) == (m in own), text
