"""The backend table (sweeps/run/sources.py): one entry per row source, and plan, task and runner read it."""

from __future__ import annotations

import dataclasses

import pytest

import sweeps.run.sources
from sweeps.run import driver as runner
from sweeps.run.sources import BACKENDS, MEASURED_CHUNK_POINTS, SourceSettings, measured_rows, model_rows
from sweeps.spec.grid import decode, grid_for
from sweeps.run.chunks import plan
from sweeps.run.cost import estimate, plan_run
from sweeps.run.dryrun import as_dict, dry_run
from sweeps.spec.load import SOURCES, parse_spec
from sweeps.run.store import locate
from sweeps.run.task import TaskConfig, chunk_frame
from workers import get_model
from workers.dataset import EVIDENCE_COLUMNS, GUEST_COLUMNS
from workers.dataset import MEASURE_COLUMNS
from workers.measure.settings import MeasureSettings

# 20 probe points, modeled and measured.
BOTH = """name = "both"
models = ["probe"]
plugins = ["tests.support.probe"]
source = "both"
[axes.probe]
i = { from = 0, to = 19, step = 1 }
"""


def sizes(chunks, source: str) -> list[int]:
    return [c.points for c in chunks if c.source == source]


def test_the_table_has_a_backend_per_source_model_first():
    """BACKENDS holds "model", "measured" then "kernel", each under its own name, and covers every spec source."""
    assert list(BACKENDS) == ["model", "measured", "kernel"]
    assert all(b.name == name for name, b in BACKENDS.items())
    assert {s for sources in SOURCES.values() for s in sources} == set(BACKENDS)


def test_each_backend_names_its_runner_pool():
    """Model chunks run as plain tasks, measured ones on the one-per-node measuring actors."""
    assert runner.POOLS[BACKENDS["model"].placement] is runner.TaskPool
    assert runner.POOLS[BACKENDS["measured"].placement] is runner.MeasurePool


def test_plan_takes_each_sources_chunk_size_from_its_backend(monkeypatch):
    """A source = both spec: modeled chunks sized by the model backend, measured ones by the measured backend."""
    spec = parse_spec(BOTH)
    default = plan(spec)
    assert sizes(default, "model") == [20]  # the probe's 1e6 points/s x 0.25 s, cut to its 20 points
    assert sizes(default, "measured") == [MEASURED_CHUNK_POINTS, MEASURED_CHUNK_POINTS, 4]
    for name, n in (("model", 7), ("measured", 3)):
        monkeypatch.setitem(BACKENDS, name, dataclasses.replace(BACKENDS[name], chunk_points=lambda s, m, n=n: n))
    chunks = plan(spec)
    assert sizes(chunks, "model") == [7, 7, 6]
    assert sizes(chunks, "measured") == [3] * 6 + [2]
    assert [c.source for c in chunks] == ["model"] * 3 + ["measured"] * 7


def test_the_specs_chunk_points_override_every_backend():
    """`chunk_points` in the spec sizes the chunks of both sources."""
    chunks = plan(parse_spec(BOTH.replace('source = "both"\n', 'source = "both"\nchunk_points = 6\n')))
    assert sizes(chunks, "model") == sizes(chunks, "measured") == [6, 6, 6, 2]


def test_only_measured_chunk_ids_hash_the_measure_settings():
    """Other [measure] settings give new measured chunk ids and keep the modeled ones (their inputs are {})."""
    spec = parse_spec(BOTH)
    assert BACKENDS["model"].digest_inputs(spec) == {}
    assert BACKENDS["measured"].digest_inputs(spec) == {
        "source": "measured", "measure": {"repeats": 5, "warmup": 1, "cpu": 0, "span_ms": 2000}}
    a, b = plan(spec), plan(parse_spec(BOTH + "[measure]\nrepeats = 3\n"))
    ids = {s: ([c.chunk_id for c in a if c.source == s], [c.chunk_id for c in b if c.source == s])
           for s in BACKENDS}
    assert ids["model"][0] == ids["model"][1]
    assert not set(ids["measured"][0]) & set(ids["measured"][1])


def test_the_dry_run_computes_the_statuses_of_backends_planned_here_and_counts_the_others(monkeypatch):
    """`plan` computes a point's status with its backend's `statuses` when the backend is planned here, and sizes
    its chunks by sample parts built with its `rows`; a backend with no `statuses` is only counted."""
    spec = parse_spec(BOTH)
    rows_calls, status_calls = [], []
    model = BACKENDS["model"]

    def rows(*args):
        rows_calls.append(args[1].height)
        return model_rows(*args)

    def statuses(*args):
        status_calls.append(args[1].height)
        return model.statuses(*args)

    assert (model.planned_here, BACKENDS["measured"].planned_here) == (True, False)
    monkeypatch.setitem(BACKENDS, "model", dataclasses.replace(model, rows=rows, statuses=statuses))
    d = as_dict(dry_run(spec, progress=False))
    assert status_calls == [20] and (d["feasible"], d["measured"]["points"]) == (20, 20)
    assert rows_calls == [20, 20, 20]  # the cost's samples: warm, then two sizes (the whole grid is 20 points)
    assert estimate(plan_run(spec, "out"), 1) is None  # measured chunks: their time is unknown here


def test_the_task_computes_rows_with_its_chunks_backend(monkeypatch, tmp_path):
    """chunk_frame hands a measured chunk's points, the profile and the settings to the measured backend."""
    spec = parse_spec(BOTH + "[measure]\nrepeats = 2\n")
    calls = []

    def rows(model, params, profile, settings):
        calls.append((model.name, params.height, profile, settings))
        return model_rows(model, params, profile, settings)

    monkeypatch.setitem(BACKENDS, "measured", dataclasses.replace(BACKENDS["measured"], rows=rows))
    cfg = TaskConfig.for_spec(spec, locate(str(tmp_path), "both"))
    chunk = next(c for c in plan(spec) if c.source == "measured")
    frame = chunk_frame(cfg, chunk, "node")
    assert calls == [("probe", chunk.points, spec.profile, SourceSettings(measure=MeasureSettings(repeats=2)))]
    assert frame["source"].unique().to_list() == ["measured"] and frame.height == chunk.points


def test_a_model_exception_becomes_error_rows():
    """The model backend keeps a chunk whose model raises: every row "error" with the exception's text."""
    spec = parse_spec(BOTH.replace("i = {", "explode = [true]\ni = {"))
    params = decode(grid_for(spec, "probe"), 0, 4).drop("point_id")
    out = model_rows(get_model("probe"), params, spec.profile, SourceSettings())
    assert out["status"].to_list() == ["error"] * 4 and "asked to explode" in out["reason"][0]
    assert out.select(list(MEASURE_COLUMNS)).null_count().row(0) == (4,) * len(MEASURE_COLUMNS)


def test_a_measure_exception_becomes_error_rows(monkeypatch):
    """The measured backend keeps a chunk whose measurement raises: the points, status "error", the reason."""
    def broken(*args):
        raise OSError("the routines went away")

    monkeypatch.setattr(sweeps.run.sources, "measure", broken)
    spec = parse_spec(BOTH)
    params = decode(grid_for(spec, "probe"), 0, 3).drop("point_id")
    out = measured_rows(get_model("probe"), params, spec.profile, SourceSettings(measure=spec.measure))
    assert out["param_i"].to_list() == [0, 1, 2]
    assert out["status"].to_list() == ["error"] * 3 and "OSError: the routines went away" in out["reason"][0]
    assert set(MEASURE_COLUMNS) <= set(out.columns)


@pytest.mark.parametrize("source", list(BACKENDS))
def test_every_backend_gives_the_same_columns(source):
    """Modeled, measured and kernel rows share one schema: params, status, reason, metrics, MEASURE_COLUMNS,
    the evidence columns, GUEST_COLUMNS (the probe declares no kernel check: its kernel rows are infeasible, without a boot)."""
    spec = parse_spec(BOTH)
    params = decode(grid_for(spec, "probe"), 0, 2).drop("point_id")
    model = get_model("probe")
    settings = SourceSettings(measure=MeasureSettings(repeats=1, warmup=0, span_ms=0))
    out = BACKENDS[source].rows(model, params, spec.profile, settings)
    assert set(out.columns) == {*params.columns, "status", "reason", *model.metric_dtypes, *MEASURE_COLUMNS,
                                *EVIDENCE_COLUMNS, *GUEST_COLUMNS}
    assert out.height == 2
    # what an answer rests on is the model's to say; measured and kernel rows are observations
    assert out["evidence"].null_count() == (0 if source == "model" else 2)
