"""The store and older sweep folders: a schema-2 folder (manifest.json, spec.toml, report/ beside the
model folders, no integer host columns) is still read by status, verify and report, and `run` refuses
to add to it (exit 2, nothing touched) until --fresh replaces it."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from analysis.read import Sweep
from analysis.report.page import write_report
from sweeps.exceptions import DatasetError
from sweeps.run.inspect import status, verify
from sweeps.run.driver import run
from sweeps.spec.load import parse_spec
from sweeps.run.store import check_schema, checksum, locate, parquet_bytes, remove_temp_files
from tests.conftest import manifest_of, memsweep_here, tree_state
from tests.support.probe import SPEC
from workers.dataset import LEGACY_LAYOUT, MANIFEST, REPORT_DIR, SPEC_FILE, TEMP_PREFIX, part_path

OLD = SPEC.format(name="old", last=29, delay=0.0)
HOST_COLUMNS = ["env_l1d_bytes", "env_l2_bytes", "env_l3_bytes", "env_tlb_4k_entries"]


def as_schema_2(folder: Path) -> None:
    """Rewrite a schema-3 sweep folder as schema 2 wrote it: plain file names, schema_version "2",
    parts without the integer host columns (and the manifest's checksums of those parts)."""
    manifest = json.loads((folder / MANIFEST).read_text())
    for cid, rec in manifest["parts"].items():
        path = folder / part_path(rec["model"], cid)
        table = pq.read_table(path).drop_columns(HOST_COLUMNS)
        table = table.replace_schema_metadata({**table.schema.metadata, b"memsweep.schema_version": b"2"})
        data = parquet_bytes(table)
        path.write_bytes(data)
        rec.update(bytes=len(data), checksum=checksum(data))
    manifest["schema_version"] = "2"
    (folder / LEGACY_LAYOUT.manifest).write_text(json.dumps(manifest, indent=1))
    (folder / MANIFEST).unlink()
    (folder / SPEC_FILE).rename(folder / LEGACY_LAYOUT.spec)


@pytest.fixture
def old_sweep(ray_local, tmp_path) -> Path:
    run(parse_spec(OLD), str(tmp_path / "out"), progress=False)
    folder = tmp_path / "out" / "old"
    as_schema_2(folder)
    return folder


def test_a_schema_2_folder_is_still_read_by_status_verify_and_report(old_sweep):
    """status and verify read manifest.json and spec.toml; the report goes to the folder's own report/;
    the integer host columns it lacks are simply absent."""
    assert "chunks: 3 of 3 done" in status(str(old_sweep))
    assert verify(str(old_sweep)) == ([], "old: 3 parts, 30 rows, 30 distinct points")
    page = write_report(str(old_sweep))
    assert page == str(old_sweep / LEGACY_LAYOUT.report / "report.html") and Path(page).stat().st_size > 0
    assert not (old_sweep / REPORT_DIR).exists() and not (old_sweep / MANIFEST).exists()
    sweep = Sweep(str(old_sweep))
    assert sweep.spec_text == OLD and sweep.provenance()["env_l3_bytes"] == set()
    assert sweep.provenance()["env_host"]


def test_run_into_a_schema_2_folder_exits_2_and_touches_nothing(old_sweep, tmp_path):
    """`memsweep run` names the folder and its schema and says what to do; --fresh then replaces it
    with a schema-3 folder that pyarrow.dataset opens."""
    spec = tmp_path / "old.toml"
    spec.write_text(OLD)
    before = tree_state(old_sweep)
    r = memsweep_here("run", str(spec), "--out", str(old_sweep.parent), "--quiet", "--no-report")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == [
        f"memsweep run: error: {old_sweep} holds a sweep written with dataset schema 2; this memsweep writes "
        "schema 9 and does not mix the two in one folder: rerun with --fresh to replace it, or give another --out."]
    assert tree_state(old_sweep) == before
    run(parse_spec(OLD), str(old_sweep.parent), fresh=True, progress=False)
    assert sorted(p.name for p in old_sweep.iterdir()) == [MANIFEST, SPEC_FILE, "model=probe"]
    assert ds.dataset(str(old_sweep)).count_rows() == 30


def test_check_schema_refuses_older_and_newer_folders(tmp_path):
    """A folder with only schema 1-2's spec, or a manifest of another version, is refused; a new or a
    schema-9 folder passes."""
    folder = tmp_path / "s"
    check_schema(locate(str(folder)))
    folder.mkdir()
    (folder / MANIFEST).write_text(json.dumps(manifest_of("s", schema_version="9")))
    check_schema(locate(str(folder)))
    for other in ("8", "10"):
        (folder / MANIFEST).write_text(json.dumps(manifest_of("s", schema_version=other)))
        with pytest.raises(DatasetError, match=rf"holds a sweep written with dataset schema {other}; .*--fresh"):
            check_schema(locate(str(folder)))
    (folder / MANIFEST).unlink()
    (folder / LEGACY_LAYOUT.spec).write_text("")
    with pytest.raises(DatasetError, match=r"s holds a sweep written with dataset schema 1-2; .*another --out"):
        check_schema(locate(str(folder)))


def test_removing_temporary_files_stays_inside_the_sweep_folder(tmp_path):
    """The folder's listing follows symlinks: a .tmp-* file reached through a link out of the folder is
    not the sweep's, and is left; the sweep's own is removed."""
    sweep, outside = tmp_path / "out" / "s", tmp_path / "outside"
    (sweep / "model=a").mkdir(parents=True)
    outside.mkdir()
    (sweep / "elsewhere").symlink_to(outside)
    theirs, mine = outside / f"{TEMP_PREFIX}theirs", sweep / "model=a" / f"{TEMP_PREFIX}mine"
    theirs.write_text("x")
    mine.write_text("x")
    assert remove_temp_files(locate(str(tmp_path / "out"), "s")) == 1
    assert theirs.exists() and not mine.exists()


# memmap and copy, the two models whose columns of one name had two dtypes until schema 6
TWO_MODELS = """name = "five"
models = ["memmap", "copy"]
[axes.memmap]
namespace_size = ["1GiB", "16GiB"]
strategy = ["slow", "template"]
[axes.copy]
struct_page_size = [64, 80]
"""
SCHEMA_5_NAMES = {f"metric_{n}_per_copy": f"metric_{n}" for n in ("lines_partial", "rfo_bytes", "serial_misses")}


def as_schema_5(folder: Path) -> None:
    """Rewrite a schema-6 sweep folder of memmap and copy as schema 5 wrote it: copy (version 1) named its
    per-copy means as memmap names its Int64 counts, `model` was polars' large_string, schema_version "5"
    (and the manifest's checksums)."""
    manifest = json.loads((folder / MANIFEST).read_text())
    for cid, rec in manifest["parts"].items():
        path = folder / part_path(rec["model"], cid)
        table = pq.read_table(path)
        kv = table.schema.metadata  # renaming a column drops it
        if rec["model"] == "copy":
            table = table.rename_columns([SCHEMA_5_NAMES.get(c, c) for c in table.column_names])
            table = table.set_column(table.column_names.index("model_version"), "model_version",
                                     pa.array(["1"] * table.num_rows, table.schema.field("model_version").type))
        i = table.column_names.index("model")
        table = table.set_column(i, pa.field("model", pa.large_string()), table.column(i).cast(pa.large_string()))
        table = table.replace_schema_metadata({**kv, b"memsweep.schema_version": b"5"})
        data = parquet_bytes(table)
        path.write_bytes(data)
        rec.update(bytes=len(data), checksum=checksum(data))
    manifest["schema_version"] = "5"
    manifest["models"]["copy"]["version"] = "1"
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))


def test_a_schema_5_folder_is_still_read_and_never_added_to(ray_local, tmp_path):
    """A folder whose copy and memmap parts hold one column name with two dtypes (schema 5) still opens in
    verify, report and table; a rerun into it is refused, exit 2, the folder untouched."""
    spec = tmp_path / "five.toml"
    spec.write_text(TWO_MODELS)
    run(parse_spec(TWO_MODELS), str(tmp_path / "out"), progress=False)
    folder = tmp_path / "out" / "five"
    as_schema_5(folder)
    types = {m: pq.read_schema(next((folder / f"model={m}").glob("*.parquet"))).field("metric_lines_partial").type
             for m in ("memmap", "copy")}
    assert types == {"memmap": pa.int64(), "copy": pa.float64()}
    assert verify(str(folder)) == ([], "five: 2 parts, 6 rows, 6 distinct points")
    r = memsweep_here("table", str(folder), "--model", "memmap", "--rows", "namespace_size", "--cols", "strategy")
    assert r.returncode == 0 and "16GiB" in r.stdout, r.stderr
    r = memsweep_here("report", str(folder))
    assert r.returncode == 0 and r.stdout.strip() == f"report: {folder / REPORT_DIR / 'report.html'}", r.stderr
    before = tree_state(folder)
    r = memsweep_here("run", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--no-report")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (f"memsweep run: error: {folder} holds a sweep written with dataset schema 5; this "
                                "memsweep writes schema 9 and does not mix the two in one folder: rerun with --fresh "
                                "to replace it, or give another --out.")
    assert tree_state(folder) == before


def test_a_part_keeps_statistics_where_readers_filter_and_dictionaries_off_the_floats():
    """workers.dataset.parquet_options: min/max of the source, the status and the axes (what a scan skips parts
    on) and of the provenance (read from the footers), none of a metric; dictionary pages for strings and counts,
    plain pages for the floats and point_id."""
    table = pa.table({"source": ["model"] * 3, "status": ["ok"] * 3, "point_id": pa.array([7, 8, 9], pa.uint64()),
                      "env_host": ["h"] * 3,
                      "param_align": [4096, 4096, 8192], "metric_stores": [1, 2, 2], "metric_ns": [0.5, 0.25, 0.125]})
    meta = pq.ParquetFile(pa.BufferReader(parquet_bytes(table))).metadata.row_group(0)
    cols = {meta.column(i).path_in_schema: meta.column(i) for i in range(meta.num_columns)}
    assert {n for n, c in cols.items() if c.is_stats_set} == {"source", "status", "env_host", "param_align"}
    assert cols["param_align"].statistics.min == 4096 and cols["param_align"].statistics.max == 8192
    dictionary = {n for n, c in cols.items() if any("DICTIONARY" in e for e in c.encodings)}
    assert dictionary == {"source", "status", "env_host", "param_align", "metric_stores"}
