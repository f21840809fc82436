"""The check of a sweep folder's parts against its manifest (workers/dataset/parts.py): one verdict per damaged or
stray part, the message every reader gives, and `scan`, which reads only checked parts. Real Parquet files,
written as a run writes them (footer key-value metadata, manifest records with bytes and checksum)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from sweeps.run.store import parquet_bytes
from tests.conftest import manifest_of
from workers.dataset import folder, parts
from workers.dataset import COMPUTATION, MANIFEST, PART_CHUNK_ID, PART_COMPUTATION, part_path
from workers.exceptions import SweepFolderError

DIGEST = "d" * 32


def part_bytes(chunk_id: str, values: list[int], digest: str = DIGEST) -> bytes:
    table = pa.table({"model": pa.array(["m"] * len(values)), "x": pa.array(values, pa.int64())})
    return parquet_bytes(table.replace_schema_metadata({PART_CHUNK_ID: chunk_id, PART_COMPUTATION: digest}))


@pytest.fixture
def sweep(tmp_path) -> Path:
    """A sweep folder of model m with three parts, c1 .. c3, and the manifest that records them."""
    root = tmp_path / "s"
    (root / "model=m").mkdir(parents=True)
    records = {}
    for i, cid in enumerate(("c1", "c2", "c3")):
        data = part_bytes(cid, [10 * i, 10 * i + 1])
        (root / part_path("m", cid)).write_bytes(data)
        records[cid] = {"chunk_id": cid, "model": "m", "rows": 2, "bytes": len(data), "checksum": parts.checksum(data),
                        "status": {"ok": 2}}
    computation = {"digest": DIGEST, "identity": {}, "order": {}}
    (root / MANIFEST).write_text(json.dumps(manifest_of("s", records, **{COMPUTATION: computation})))
    return root


def problems(root: Path) -> list[str]:
    loc = folder.at(str(root))
    return [str(p) for p in parts.check_parts(loc, folder.read_manifest(loc))]


def test_a_whole_folder_has_no_problem_and_scans(sweep):
    assert problems(sweep) == []
    assert sorted(parts.scan(str(sweep)).collect()["x"]) == [0, 1, 10, 11, 20, 21]


@pytest.mark.parametrize("damage, verdict", [
    # a readable part whose bytes changed: one value rewritten, the footer as before
    (lambda p: p.write_bytes(part_bytes("c2", [10, 12])), "part model=m/part-c2.parquet has another checksum than "
     "the manifest records (its bytes changed)"),
    (lambda p: p.unlink(), "part model=m/part-c2.parquet is in the manifest but missing"),
    (lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
     "part model=m/part-c2.parquet cannot be read (not a whole Parquet file)"),
    (lambda p: shutil.copy(p, p.with_name("part-c9.parquet")), "part model=m/part-c9.parquet is not in the "
     "manifest: a duplicate of part c2 under another name (its footer names that chunk): delete it"),
    (lambda p: p.with_name("part-c9.parquet").write_bytes(part_bytes("c9", [5], digest="e" * 32)),
     "part model=m/part-c9.parquet is not in the manifest: computed with another spec, profile or model version"),
    (lambda p: p.with_name("part-c9.parquet").write_bytes(part_bytes("c9", [5])), "part model=m/part-c9.parquet is "
     "not in the manifest: of this computation but not yet recorded (a run in progress or stopped): rerun the "
     "same 'memsweep run' command to record it"),
    (lambda p: p.with_name("part-c9.parquet").write_bytes(b"PAR1 not really"), "part model=m/part-c9.parquet is not "
     "in the manifest and cannot be read"),
])
def test_each_damage_gets_one_verdict_and_scan_refuses_the_folder(sweep, damage, verdict):
    """A changed, deleted, truncated, duplicated or stray part: one problem naming it, and scan (every reader)
    refuses the folder with it, pointing at verify."""
    damage(sweep / part_path("m", "c2"))
    found = problems(sweep)
    assert len(found) == 1 and found[0].startswith(verdict), found
    with pytest.raises(SweepFolderError, match=r"does not match its manifest: part model=m/part-c\d\.parquet .*; "
                                               r"'memsweep verify .*/s' lists every problem\. Nothing was read"):
        parts.scan(str(sweep))


def test_without_checksums_a_changed_size_or_row_count_is_still_found(sweep):
    """On an object store the check compares sizes and footers only: a rewritten part of another size is found."""
    (sweep / part_path("m", "c2")).write_bytes(part_bytes("c2", [10, 11, 12]))
    loc = folder.at(str(sweep))
    found = [str(p) for p in parts.check_parts(loc, folder.read_manifest(loc), checksums=False)]
    assert len(found) == 1 and found[0].startswith("part model=m/part-c2.parquet is ") and "bytes" in found[0]


def test_several_problems_are_counted_in_the_message(sweep):
    (sweep / part_path("m", "c1")).unlink()
    (sweep / part_path("m", "c3")).unlink()
    with pytest.raises(SweepFolderError, match=r"part model=m/part-c1\.parquet is in the manifest but missing "
                                               r"\(and 1 more\)"):
        parts.scan(str(sweep))


def test_scan_of_a_missing_model_or_a_folder_without_manifest_or_parts_names_what_is_there(sweep, tmp_path):
    with pytest.raises(SweepFolderError, match=r"'model' must be a model with parts in .*\['m'\] \(got 'b'\)"):
        parts.scan(str(sweep), model="b")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SweepFolderError, match=r"'sweep_dir' must be a sweep folder written by 'memsweep run' "
                                               r"\(got .*: no manifest there\)"):
        parts.scan(str(tmp_path / "empty"))
    (tmp_path / "empty" / MANIFEST).write_text(json.dumps(manifest_of("e")))
    with pytest.raises(SweepFolderError, match=r"'sweep_dir' must be a sweep folder with parts"):
        parts.scan(str(tmp_path / "empty"))
    assert parts.scan(str(sweep), model="m").collect().height == 6
