"""The row sources: one entry each in workers.dataset.SOURCES, their backends (workers.source.backends) in their
own packages, and plan, task and runner read them."""

from __future__ import annotations

import dataclasses

import pytest

import workers.measure.source
from sweeps.run import driver as runner
from sweeps.spec.grid import decode, grid_for
from sweeps.run.chunks import plan
from sweeps.run.cost import estimate, plan_run
from sweeps.run.dryrun import as_dict, dry_run
from sweeps.spec.load import SOURCES as SPEC_SOURCES, parse_spec
from sweeps.run.store import locate
from sweeps.run.task import TaskConfig, chunk_frame
from workers import get_model, interval
from workers.dataset import (GUEST_COLUMNS, HOST_COLUMNS, IDENTITY_COLUMNS, MEASURE_COLUMNS, REFERENCE_COLUMNS, SOURCE,
                             SOURCES, lay_out, row_schema)
from workers.measure.settings import MeasureSettings
from workers.measure.source import CHUNK_POINTS as MEASURED_CHUNK_POINTS
from workers.modeled import rows as model_rows
from workers.measure.source import rows as measured_rows
from workers.source import backends

BACKENDS = backends()

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
    """backends() holds "model", "measured" then "kernel", each under its own name, in workers.dataset.SOURCES'
    order, and covers every spec source."""
    assert list(BACKENDS) == ["model", "measured", "kernel"] == [s.name for s in SOURCES]
    assert all(b.name == name for name, b in BACKENDS.items())
    assert {s for names in SPEC_SOURCES.values() for s in names} == set(BACKENDS)


def test_every_column_a_source_fills_is_in_the_row_layout_and_no_two_sources_disagree():
    """Each source's declared columns are registry columns of every model's row layout; the host's provenance is
    every row's; a column two sources fill (measure_* of measured and kernel rows) is one column."""
    model = get_model("memmap")
    schema = row_schema({"param_i": int}, model.metric_dtypes, interval.dtypes(model))
    for s in SOURCES:
        assert set(s.columns) <= set(schema) and not set(s.columns) & {*IDENTITY_COLUMNS, *HOST_COLUMNS}
    assert SOURCE["kernel"].columns == (*MEASURE_COLUMNS, *REFERENCE_COLUMNS, "kernel_build", *GUEST_COLUMNS)
    assert SOURCE["model"].columns[0] == "kernel_build"  # the build whose instruction costs priced a count


def test_a_backend_that_gives_a_column_its_source_does_not_declare_is_refused():
    """lay_out refuses a measured row with an evidence column: two sources would write it."""
    import polars as pl
    model = get_model("memmap")
    schema = row_schema({"param_i": pl.Int64}, model.metric_dtypes, interval.dtypes(model))
    frame = pl.DataFrame({"param_i": [1], "status": ["ok"], "evidence": ["fit"]})
    with pytest.raises(ValueError, match=r"'measured' gave columns it does not declare: \['evidence'\]"):
        lay_out(frame, schema, SOURCE["measured"], ["param_i", "status", "reason"])
    out = lay_out(frame.drop("evidence"), schema, SOURCE["measured"], ["param_i", "status", "reason"])
    assert list(out.schema.items()) == list(schema.items()) and out["measure_min"].to_list() == [None]


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
        monkeypatch.setitem(BACKENDS, name, dataclasses.replace(BACKENDS[name], chunk_points=lambda m, n=n: n))
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
    probe = get_model("probe")
    assert BACKENDS["model"].chunk_inputs(None, probe) == {}
    assert BACKENDS["measured"].chunk_inputs(spec.settings["measured"], probe) == {
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
        return model_rows(model, params, profile).select(*params.columns, "status", "reason", *model.metric_dtypes)

    monkeypatch.setitem(BACKENDS, "measured", dataclasses.replace(BACKENDS["measured"], rows=rows))
    cfg = TaskConfig.for_spec(spec, locate(str(tmp_path), "both"))
    chunk = next(c for c in plan(spec) if c.source == "measured")
    frame = chunk_frame(cfg, chunk, "node")
    assert calls == [("probe", chunk.points, spec.profile, MeasureSettings(repeats=2))]
    assert frame["source"].unique().to_list() == ["measured"] and frame.height == chunk.points


def test_a_model_exception_becomes_error_rows():
    """The model backend keeps a chunk whose model raises: every row "error" with the exception's text."""
    spec = parse_spec(BOTH.replace("i = {", "explode = [true]\ni = {"))
    params = decode(grid_for(spec, "probe"), 0, 4).drop("point_id")
    out = model_rows(get_model("probe"), params, spec.profile)
    assert out["status"].to_list() == ["error"] * 4 and "asked to explode" in out["reason"][0]
    assert not set(MEASURE_COLUMNS) & set(out.columns)  # the host lays them out, null (test_task)


def test_a_measure_exception_becomes_error_rows(monkeypatch):
    """The measured backend keeps a chunk whose measurement raises: the points, status "error", the reason."""
    def broken(*args):
        raise OSError("the routines went away")

    monkeypatch.setattr(workers.measure.source, "measure", broken)
    spec = parse_spec(BOTH)
    params = decode(grid_for(spec, "probe"), 0, 3).drop("point_id")
    out = measured_rows(get_model("probe"), params, spec.profile, spec.settings["measured"])
    assert out["param_i"].to_list() == [0, 1, 2]
    assert out["status"].to_list() == ["error"] * 3 and "OSError: the routines went away" in out["reason"][0]


@pytest.mark.parametrize("source", list(BACKENDS))
def test_every_backend_gives_its_own_columns_and_the_host_one_layout(source, tmp_path):
    """Each backend gives the points' params, status, reason, metrics and its source's own columns (the error bars
    with the model's); chunk_frame lays every source's rows out in one schema (the probe declares no kernel check:
    its kernel rows are infeasible, without a boot)."""
    spec = parse_spec(BOTH.replace('source = "both"', 'source = ["model", "measured", "kernel"]')
                      + "[measure]\nrepeats = 1\nwarmup = 0\nspan_ms = 0\n")
    params = decode(grid_for(spec, "probe"), 0, 2).drop("point_id")
    model = get_model("probe")
    out = BACKENDS[source].rows(model, params, spec.profile, spec.settings.get(source))
    bars = list(interval.dtypes(model)) if SOURCE[source].bars else []
    assert set(out.columns) == {*params.columns, "status", "reason", *model.metric_dtypes, *bars,
                                *SOURCE[source].columns}
    assert out.height == 2
    cfg = TaskConfig.for_spec(spec, locate(str(tmp_path), "both"))
    frames = {s: chunk_frame(cfg, next(c for c in plan(spec) if c.source == s), "node") for s in BACKENDS}
    assert len({tuple(f.schema.items()) for f in frames.values()}) == 1
    out = frames[source]
    # what an answer rests on is the model's to say; measured and kernel rows are observations
    assert out["evidence"].null_count() == (0 if source == "model" else out.height)


# 30 probe points, modeled and measured, sampled three times
PINNED = BOTH.replace('"both"\nmodels', '"pinned"\nmodels').replace("to = 19", "to = 29") + "[measure]\nrepeats = 3\n"


def test_model_and_measured_chunk_ids_and_digests_are_the_ones_folders_already_hold():
    """Ids and digests as the row sources wrote them before each became one registry entry: a folder of either
    keeps resuming (kernel ones hash the Debian image's bytes, which move with its point releases). Each also
    hashes the seed profile: a change to it (a note too) is a new computation, and these pins move with it."""
    from sweeps.run.computation import digest, identity

    spec = parse_spec(PINNED)
    assert [(c.source, c.chunk_id) for c in plan(spec)][:2] == [("model", "1c5653569949e685"),
                                                               ("measured", "1140e89cef8ad66b")]
    assert digest(identity(spec)) == "6b9ea7d5ac4f9c677254d670341484ec"
    assert digest(identity(parse_spec(PINNED.replace('source = "both"', 'source = "model"')))) == \
        "88aa30358762ce31792ddb16d9697276"
