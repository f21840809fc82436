"""Spec -> Ray -> Parquet -> polars on an embedded Ray: rows, statuses, resume, provenance."""

from __future__ import annotations

import json
import os
import re

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sweeps.exceptions import DatasetError
from sweeps.run.inspect import status, verify
from sweeps.run.driver import run
from sweeps.spec.load import parse_spec
from tests.conftest import memsweep, tree_state
from workers.dataset import (IDENTITY_COLUMNS, LEASE_FILE, MANIFEST, PROVENANCE_COLUMNS, REPORT_DIR, SCHEMA_VERSION,
                             SPEC_FILE)
from workers.exceptions import SweepFolderError

PROBE = 'name = "rt"\nmodels = ["probe"]\nplugins = ["tests.support.probe"]\nchunk_points = 7\n'


def rows(out, name="rt") -> pl.DataFrame:
    return pl.read_parquet(f"{out}/{name}/model=*/*.parquet", hive_partitioning=False)


def test_round_trip_one_row_per_point_with_the_spec_values(ray_local, tmp_path):
    """Every grid point comes back once, with the spec's parameter values and computed metrics."""
    spec = parse_spec(PROBE + "[axes.probe]\ni = { from = -3, to = 40, step = 1 }\ndelay_ms = [0.0, 1.5]\n")
    summary = run(spec, str(tmp_path), progress=False)
    df = rows(tmp_path)
    assert df.height == spec.total_points == 88
    assert summary.computed == summary.chunks == 13 and summary.skipped == 0
    assert sorted(df["param_i"].unique().to_list()) == list(range(-3, 41))
    assert sorted(df["param_delay_ms"].unique().to_list()) == [0.0, 1.5]
    assert df["point_id"].n_unique() == 88
    ok = df.filter(pl.col("status") == "ok")
    assert (ok["metric_i_squared"] == ok["param_i"] ** 2).all()
    assert df.filter(pl.col("status") == "infeasible")["param_i"].unique().sort().to_list() == [-3, -2, -1]
    assert df.filter(pl.col("status") == "infeasible")["reason"].str.contains("negative").all()
    assert df.columns[: len(IDENTITY_COLUMNS)] == list(IDENTITY_COLUMNS)
    assert df.columns[-len(PROVENANCE_COLUMNS):] == list(PROVENANCE_COLUMNS)
    assert (df["sweep"] == "rt").all() and (df["profile"] == "seed").all()
    assert df["env_ray_node_id"].str.len_chars().min() > 0
    assert verify(str(tmp_path / "rt")) == ([], "rt: 13 parts, 88 rows, 88 distinct points")


def test_parts_carry_schema_version_and_provenance_metadata(ray_local, tmp_path):
    """Each part's Parquet key-value metadata names the schema version, chunk and provenance; `model` is
    stored as Arrow string, the type pyarrow.dataset's hive partitioning gives the model=<name> key."""
    run(parse_spec(PROBE + "[axes.probe]\ni = [1, 2, 3]\n"), str(tmp_path), progress=False)
    part = next((tmp_path / "rt" / "model=probe").glob("part-*.parquet"))
    kv = pq.read_metadata(part).metadata
    assert kv[b"memsweep.schema_version"].decode() == SCHEMA_VERSION == "9"
    assert part.name == f"part-{kv[b'memsweep.chunk_id'].decode()}.parquet"
    assert set(json.loads(kv[b"memsweep.provenance"])) == set(PROVENANCE_COLUMNS)
    assert pq.read_schema(part).field("model").type == pa.string()
    manifest = json.loads((tmp_path / "rt" / MANIFEST).read_text())
    assert manifest["chunks_done"] == manifest["chunks_expected"] == 1 and manifest["rows"] == 3
    assert (tmp_path / "rt" / SPEC_FILE).read_text() == PROBE + "[axes.probe]\ni = [1, 2, 3]\n"


def test_model_exception_becomes_error_rows_not_a_lost_chunk(ray_local, tmp_path):
    """A chunk whose model raises is stored as status 'error' rows with the message."""
    spec = parse_spec(PROBE.replace("chunk_points = 7", "chunk_points = 1") + "[axes.probe]\ni = [1, 2]\nexplode = [false, true]\n")
    summary = run(spec, str(tmp_path), progress=False)
    df = rows(tmp_path)
    assert df.height == 4 and not summary.failed
    errors = df.filter(pl.col("status") == "error")
    assert errors.height == 2 and errors["param_explode"].all()
    assert errors["reason"].str.contains("RuntimeError: the probe model was asked to explode").all()
    assert errors["metric_i_squared"].is_null().all()
    said = status(str(tmp_path / "rt"))
    assert "error 2" in said
    assert ("2 rows are errors, not results (a model or measurement raised):\n  probe (model rows): 2 error rows: "
            "RuntimeError: the probe model was asked to explode at probe.py:") in said
    assert summary.error_lines()[1] == said.splitlines()[-1]  # run and status say it in the same words


def test_a_model_that_fails_on_its_whole_first_chunk_stops_and_a_rerun_computes_it_again(ray_local, tmp_path):
    """Every row of the model's first chunk an error: its chunks not yet started are not computed, and the
    summary says so; a rerun does not take the parts of error rows as finished but computes them again."""
    spec = parse_spec(PROBE.replace("chunk_points = 7", "chunk_points = 1")
                      + "[axes.probe]\ni = { from = 0, to = 39, step = 1 }\nexplode = [true]\n")
    said = []
    first = run(spec, str(tmp_path), progress=False, say=said.append)
    assert first.chunks == 40 and 1 <= first.computed < 40  # the pool's tasks in flight finish: 2 per CPU
    assert first.status == {"error": first.computed}
    assert first.stopped == [f"probe (model rows): every row of its first chunk is an error, so its other "
                             f"{40 - first.computed} chunks were not computed; mend the cause and rerun the same "
                             "command to compute them."]
    assert first.errors[("probe", "model")].rows == first.computed
    second = run(spec, str(tmp_path), progress=False, say=said.append)
    assert second.skipped == 0 and said[-1] == (f"memsweep: {first.computed} parts hold error rows: computing them "
                                                "again.")


def test_rerun_skips_finished_chunks_and_recomputes_a_deleted_one(ray_local, tmp_path):
    """A rerun computes only the chunks whose parts are missing or invalid."""
    spec = parse_spec(PROBE + "[axes.probe]\ni = { from = 0, to = 69, step = 1 }\n")
    first = run(spec, str(tmp_path), progress=False)
    assert (first.computed, first.skipped) == (10, 0)
    parts = sorted((tmp_path / "rt" / "model=probe").glob("part-*.parquet"))
    parts[3].unlink()
    parts[5].write_bytes(b"truncated")
    second = run(spec, str(tmp_path), progress=False)
    assert (second.computed, second.skipped) == (2, 8)
    third = run(spec, str(tmp_path), progress=False)
    assert (third.computed, third.skipped) == (0, 10)
    assert verify(str(tmp_path / "rt"))[0] == []
    assert rows(tmp_path)["point_id"].n_unique() == 70


def test_fresh_starts_over_and_a_changed_spec_is_refused(ray_local, tmp_path):
    """A different spec under the same name is refused; --fresh replaces the old dataset."""
    run(parse_spec(PROBE + "[axes.probe]\ni = [1, 2, 3]\n"), str(tmp_path), progress=False)
    other = parse_spec(PROBE + "[axes.probe]\ni = [4, 5]\n")
    with pytest.raises(DatasetError, match=r"another computation; this run differs in:\n  axes.probe.i: added 4, 5; removed 1, 2, 3\nrerun with --fresh"):
        run(other, str(tmp_path), progress=False)
    summary = run(other, str(tmp_path), fresh=True, progress=False)
    assert summary.computed == 1
    assert sorted(rows(tmp_path)["param_i"].to_list()) == [4, 5]


def test_verify_reports_a_stray_and_a_corrupt_part(ray_local, tmp_path):
    """verify lists a part the manifest does not know and a part whose bytes changed."""
    run(parse_spec(PROBE + "[axes.probe]\ni = { from = 0, to = 13, step = 1 }\n"), str(tmp_path), progress=False)
    folder = tmp_path / "rt" / "model=probe"
    first = sorted(folder.glob("part-*.parquet"))[0]
    (folder / "part-ffffffffffffffff.parquet").write_bytes(first.read_bytes())
    data = bytearray(first.read_bytes())
    data[10] ^= 0xFF
    first.write_bytes(bytes(data))
    problems, _ = verify(str(tmp_path / "rt"))
    assert any("not in the manifest" in p for p in problems)
    assert any(first.name in p and ("checksum" in p or "unreadable" in p) for p in problems)
    assert any("duplicate point_id" in p for p in problems)


@pytest.mark.parametrize("address, message", [
    ("<port>", "'--address' must be a running Ray cluster's head: nothing answers at 127.0.0.1:<port>: Connection "
               "refused."),
    ("auto", ":<port> (auto is "),  # as ray.init resolves it: this host's address for 127.0.0.1
    ("head-node", "'--address' must be auto, HOST:PORT or ray://HOST:PORT (got 'head-node')."),
])
def test_an_address_where_no_ray_answers_exits_2_and_writes_nothing(tmp_path, monkeypatch, capsys, address, message):
    """`run --address` where nothing listens (given, or `auto` resolved through RAY_ADDRESS as ray.init would),
    or that is no address: one message naming '--address', exit 2, and no sweep folder; at once, where
    ray.init would retry the address for minutes."""
    from sweeps.cli import main
    from tests.cluster_util import free_port

    port = str(free_port())  # nothing listens there: the tests' servers never take a port given before
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    spec = tmp_path / "rt.toml"
    spec.write_text(PROBE + "[axes.probe]\ni = [1, 2]\n")
    given = f"127.0.0.1:{port}" if address == "<port>" else address
    assert main(["run", str(spec), "--out", str(tmp_path / "out"), "--address", given]) == 2
    err = capsys.readouterr().err
    assert message.replace("<port>", port) in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name, is_dir", [(SPEC_FILE, False), (MANIFEST, False), (LEASE_FILE, False),
                                          ("model=probe", True), (REPORT_DIR, True)])
def test_a_symlink_out_of_the_sweep_folder_is_refused_before_anything_is_written(tmp_path, name, is_dir):
    """Each place a run writes (its spec, manifest, lease, a model's parts, the report it is asked to write):
    linked out of the sweep folder, the run is refused before its lease, naming the link and its target."""
    sweep, outside = tmp_path / "out" / "rt", tmp_path / "outside"
    sweep.mkdir(parents=True)
    outside.mkdir()
    target = outside if is_dir else outside / "theirs"
    if not is_dir:
        target.write_text("not the sweep's")
    (sweep / name).symlink_to(target)
    before = tree_state(tmp_path)
    with pytest.raises(SweepFolderError, match=re.escape(f"'{sweep / name}' must be a file or folder inside "
                                                         f"{sweep}, not a symlink out of it (got a link to '{target}')")):
        run(parse_spec(PROBE + "[axes.probe]\ni = [1, 2]\n"), str(tmp_path / "out"), progress=False,
            also_writes=(REPORT_DIR,))
    assert tree_state(tmp_path) == before and sorted(os.listdir(sweep)) == [name]


def test_memsweep_run_with_its_report_folder_linked_out_exits_2_and_computes_nothing(tmp_path):
    """`memsweep run` (which writes the report at the end) refuses a _report linked out at once, not after
    computing the sweep: one line, exit 2, nothing written."""
    spec = tmp_path / "rt.toml"
    spec.write_text(PROBE + "[axes.probe]\ni = [1, 2]\n")
    sweep, outside = tmp_path / "out" / "rt", tmp_path / "outside"
    sweep.mkdir(parents=True)
    outside.mkdir()
    (sweep / REPORT_DIR).symlink_to(outside)
    before = tree_state(tmp_path)
    r = memsweep("run", str(spec), "--out", str(tmp_path / "out"), "--quiet")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (f"memsweep run: error: '{sweep / REPORT_DIR}' must be a file or folder inside "
                                f"{sweep}, not a symlink out of it (got a link to '{outside}'); nothing is written "
                                "through it: remove the link.")
    assert tree_state(tmp_path) == before
