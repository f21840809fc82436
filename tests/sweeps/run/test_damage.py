"""A sweep folder damaged as a user's disk or hands damage it: one part's value changed (still readable), a
part deleted, duplicated under another name, truncated, or present but not yet recorded. Every reader
(report, table, compare, calibrate --from) refuses the folder with one message naming the part and pointing at
verify (exit 2, nothing written, no traceback); status says the folder and its manifest disagree; verify and a
rerun give the same verdict; the rerun computes damaged parts again and the answers are right again.

Real copy-model sweeps on the session's Ray; the commands run in this process (memsweep_here), as in
test_faults, and one report as a separate process."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from sweeps.run.inspect import status, verify
from sweeps.run.driver import run
from sweeps.spec.load import parse_spec
from tests.conftest import memsweep, memsweep_here, tree_state
from workers.dataset import MANIFEST

SPEC = """name = "cp"
models = ["copy"]
chunk_points = 10
[axes.copy]
struct_page_size = [64, 80]
dst_offset = [0, 8]
strategy = ["memcpy", "nt_call", "nt_inline"]
inline_sizes = ["mainline", "patched"]
"""
TABLE = ("table", "{d}", "--model", "copy", "--rows", "struct_page_size", "--cols", "strategy", "--metric", "copies")


def readers(folder: Path) -> list[tuple[str, ...]]:
    d = str(folder)
    return [tuple(a.format(d=d) for a in TABLE), ("compare", d, d), ("report", d, "--out", str(folder.parent / "r.html")),
            ("calibrate", "--from", d, "--model", "memmap")]


@pytest.fixture
def sweep(ray_local, tmp_path) -> Path:
    """A 24-point copy sweep in three parts, and its table as first computed."""
    run(parse_spec(SPEC), str(tmp_path), progress=False)
    return tmp_path / "cp"


def a_part(folder: Path) -> Path:
    return sorted((folder / "model=copy").glob("part-*.parquet"))[0]


def change_one_value(part: Path, column: str = "metric_copies", new=lambda v: v + 1) -> None:
    """Rewrite the part with the first value of `column` changed (metric_copies + 1), keeping its schema and its
    footer's every key: readable, but not the bytes the manifest's checksum records nor the rows its footer's
    digest does (a flipped bit in a value)."""
    footer = {k: v for k, v in pq.read_metadata(part).metadata.items() if k != b"ARROW:schema"}
    table = pq.read_table(part).replace_schema_metadata(footer)
    i = table.schema.get_field_index(column)
    values = table.column(i).to_pylist()
    values[0] = new(values[0])
    table = table.set_column(i, table.schema.field(i), pc.cast(values, table.schema.field(i).type))
    pq.write_table(table, part, compression="zstd")


def refused_by_every_reader(folder: Path, words: str) -> None:
    before = tree_state(folder.parent)
    for argv in readers(folder):
        r = memsweep_here(*argv)
        assert r.returncode == 2, (argv, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "does not match its manifest: part model=copy/part-" in lines[0], (argv, r.stderr)
        assert words in lines[0] and f"'memsweep verify {folder}' lists every problem" in lines[0], (argv, lines)
    assert tree_state(folder.parent) == before
    assert "the folder and its manifest disagree: part model=copy/part-" in status(str(folder))
    assert any(words in p for p in verify(str(folder))[0])


@pytest.mark.parametrize("damage, words", [
    (change_one_value, "has another checksum than the manifest records"),
    (lambda p: p.unlink(), "is in the manifest but missing"),
    (lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]), "cannot be read (not a whole Parquet file)"),
])
def test_a_damaged_part_is_refused_by_readers_and_computed_again_by_a_rerun(sweep, capsys, damage, words):
    """The table before, the damage refused everywhere, then a rerun that computes that part again (and says
    so) and gives the same table and a folder verify finds whole."""
    first = memsweep_here(*(a.format(d=sweep) for a in TABLE)).stdout
    damage(a_part(sweep))
    refused_by_every_reader(sweep, words)
    summary = run(parse_spec(SPEC), str(sweep.parent), progress=False)
    assert (summary.computed, summary.skipped) == (1, 2)
    err = capsys.readouterr().err
    if words != "is in the manifest but missing":  # a missing part is simply not done yet
        assert words in err and "computing it again" in err
    assert verify(str(sweep))[0] == [] and "disagree" not in status(str(sweep))
    assert memsweep_here(*(a.format(d=sweep) for a in TABLE)).stdout == first


def test_a_duplicated_part_gets_one_verdict_from_verify_readers_and_run(sweep):
    """A part copied under another name: readers, verify and run all call it a duplicate to delete; once it is
    deleted everything reads again."""
    original = a_part(sweep)
    copy = original.with_name("part-0000000000000000.parquet")
    shutil.copy(original, copy)
    words = f"is not in the manifest: a duplicate of part {original.stem.removeprefix('part-')} under another name"
    refused_by_every_reader(sweep, words)
    problems = verify(str(sweep))[0]
    (sweep.parent / "spec.toml").write_text(SPEC)
    r = memsweep_here("run", str(sweep.parent / "spec.toml"), "--out", str(sweep.parent), "--no-report")
    assert r.returncode == 2 and next(p for p in problems if words in p) in r.stderr
    copy.unlink()
    assert verify(str(sweep))[0] == [] and memsweep_here(*(a.format(d=sweep) for a in TABLE)).returncode == 0


def test_a_part_not_yet_recorded_is_named_so_and_recorded_by_the_rerun_verify_advises(sweep):
    """A run stopped between writing a part and its manifest: verify says rerun; the rerun records the part
    (nothing computed) and the folder is whole."""
    manifest = json.loads((sweep / MANIFEST).read_text())
    manifest["parts"].pop(a_part(sweep).stem.removeprefix("part-"))
    manifest["chunks_done"] -= 1
    (sweep / MANIFEST).write_text(json.dumps(manifest))
    problems = verify(str(sweep))[0]
    assert any("of this computation but not yet recorded" in p and "rerun the same 'memsweep run'" in p
               for p in problems)
    summary = run(parse_spec(SPEC), str(sweep.parent), progress=False)
    assert (summary.computed, summary.skipped) == (0, 3) and verify(str(sweep))[0] == []


def test_report_in_its_own_process_refuses_a_changed_part_without_a_traceback(sweep):
    """`memsweep report` as a user runs it: exit 2, one line, no _report written."""
    change_one_value(a_part(sweep))
    r = memsweep("report", str(sweep))
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "has another checksum than the manifest records" in r.stderr and not (sweep / "_report").exists()


@pytest.mark.parametrize("shape, words", [
    (lambda m: [], "the whole file: [] where an object belongs"),
    (lambda m: {**m, "parts": 5}, "at parts: 5 where an object belongs"),
    (lambda m: {**m, "parts": {**m["parts"], next(iter(m["parts"])): None}}, ": null where an object belongs"),
    (lambda m: {**m, "rows": "many"}, 'at rows: "many" where a whole number belongs'),
    (lambda m: {k: v for k, v in m.items() if k != "updated"}, "the whole file: no 'updated' entry"),
])
def test_a_manifest_of_the_wrong_shape_is_one_line_from_every_command_and_run_needs_fresh(sweep, shape, words):
    """A manifest that is JSON but not of the shape memsweep reads (a list, `parts` a number, a null record, a
    count in words, an entry every manifest has missing): every reader, status, verify and run exit 2 with one line naming the file and what is
    wrong, writing nothing; `run --fresh` starts over and the folder reads again."""
    first = memsweep_here(*(a.format(d=sweep) for a in TABLE)).stdout
    (sweep / MANIFEST).write_text(json.dumps(shape(json.loads((sweep / MANIFEST).read_text()))))
    (sweep.parent / "spec.toml").write_text(SPEC)
    before = tree_state(sweep.parent)
    rerun = ("run", str(sweep.parent / "spec.toml"), "--out", str(sweep.parent), "--no-report")
    for argv in [*readers(sweep), ("status", str(sweep)), ("verify", str(sweep)), rerun]:
        r = memsweep_here(*argv)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1, (argv, r.stdout, r.stderr)
        assert f"{sweep}/{MANIFEST} is not a manifest memsweep can read (" in lines[0] and words in lines[0], argv
        assert "rerun the sweep with --fresh to start over" in lines[0]
    assert tree_state(sweep.parent) == before
    assert memsweep_here(*rerun, "--fresh").returncode == 0
    assert verify(str(sweep))[0] == [] and memsweep_here(*(a.format(d=sweep) for a in TABLE)).stdout == first


def forget(sweep: Path, cid: str, what: str) -> None:
    """The manifest no longer vouches for part `cid`: it is gone (a kill during the first manifest write), or
    the part's record is (a disk-full stop), or the record's checksum is (a record written by hand)."""
    if what == "the manifest":
        (sweep / MANIFEST).unlink()
        return
    manifest = json.loads((sweep / MANIFEST).read_text())
    if what == "its record":
        manifest["parts"].pop(cid)
        manifest["chunks_done"] -= 1
    else:
        del manifest["parts"][cid]["checksum"]
    (sweep / MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.parametrize("what", ["the manifest", "its record", "its checksum"])
def test_a_changed_part_the_manifest_does_not_vouch_for_is_computed_again_never_adopted(sweep, capsys, what):
    """A part rewritten with one value changed, its footer kept, in a folder whose manifest no longer vouches
    for it: no reader takes it (the data pages against the digest its footer records), verify names it, and the
    rerun computes that part again instead of adopting it; the table is the first one again."""
    first = memsweep_here(*(a.format(d=sweep) for a in TABLE)).stdout
    part = a_part(sweep)
    change_one_value(part)
    forget(sweep, part.stem.removeprefix("part-"), what)
    words = "holds other rows than the digest in its footer records (changed after it was written)"
    if what != "the manifest":
        assert any(words in p for p in verify(str(sweep))[0])
        r = memsweep_here(*(a.format(d=sweep) for a in TABLE))
        assert r.returncode == 2 and words in r.stderr and "Traceback" not in r.stderr
    summary = run(parse_spec(SPEC), str(sweep.parent), progress=False)
    assert (summary.computed, summary.skipped) == (1, 2)
    assert words in capsys.readouterr().err
    assert verify(str(sweep))[0] == [] and memsweep_here(*(a.format(d=sweep) for a in TABLE)).stdout == first


MEASURED_SPEC = """name = "mc"
models = ["copy"]
source = "measured"
[measure]
repeats = 3
span_ms = 50
[axes.copy]
struct_page_size = [64]
strategy = ["memcpy", "nt_call"]
"""


def test_a_changed_measured_part_the_manifest_does_not_list_is_refused_by_run_naming_it(ray_local, tmp_path):
    """Measured rows cannot be computed the same again: a rewritten measured part the manifest no longer lists is
    not adopted and not silently measured anew; run refuses it by name (exit 2) and changes nothing. Deleted,
    it is measured again."""
    run(parse_spec(MEASURED_SPEC), str(tmp_path), progress=False)
    folder = tmp_path / "mc"
    part = sorted((folder / "model=copy").glob("part-*.parquet"))[0]
    change_one_value(part, "measure_min", lambda v: (v or 1.0) * 10)  # tenfold: what calibrate --from would fit
    forget(folder, part.stem.removeprefix("part-"), "its record")
    (tmp_path / "mc.toml").write_text(MEASURED_SPEC)
    before = tree_state(tmp_path)
    r = memsweep_here("run", str(tmp_path / "mc.toml"), "--out", str(tmp_path), "--no-report")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert f"part model=copy/{part.name} holds other rows than the digest in its footer records" in lines[0]
    assert "measured and kernel rows cannot be computed the same again" in lines[0]
    assert tree_state(tmp_path) == before
    part.unlink()
    summary = run(parse_spec(MEASURED_SPEC), str(tmp_path), progress=False)
    assert summary.computed == 1 and verify(str(folder))[0] == []


@pytest.mark.parametrize("name, kind", [
    (MANIFEST, "folder"), ("_spec.toml", "folder"), ("_lease.json", "folder"), ("_report", "file"),
    ("model=memmap", "file"),
])
def test_an_entry_of_the_wrong_kind_is_one_line_from_every_command(sweep, name, kind):
    """A folder where one of the sweep's own files belongs (its manifest, spec, lease), or a file where one of
    its folders does (the report's, a model's parts): every reader, status, verify and run (with --fresh too)
    exit 2 with one line naming it, and write nothing."""
    entry = sweep / name
    if entry.exists():
        entry.rename(sweep.parent / "aside")
    entry.mkdir() if kind == "folder" else entry.write_text("x")
    (sweep.parent / "spec.toml").write_text(SPEC)
    before = tree_state(sweep.parent)
    rerun = ("run", str(sweep.parent / "spec.toml"), "--out", str(sweep.parent), "--no-report")
    for argv in [*readers(sweep), ("status", str(sweep)), ("verify", str(sweep)), rerun, (*rerun, "--fresh")]:
        r = memsweep_here(*argv)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1, (argv, r.stdout, r.stderr)
        where = "folder where the sweep's" if kind == "folder" else "file where the sweep's folder"
        assert f"{sweep}/{name} is a {where}" in lines[0] and "move it out of the sweep folder" in lines[0], argv
    assert tree_state(sweep.parent) == before


@pytest.mark.parametrize("place, words", [
    (lambda p: shutil.copy(p, p.with_name("extra.parquet")), "file model=copy/extra.parquet is not a part this "
     "sweep records, but a Parquet reader of the folder (pyarrow, polars or duckdb over its files) would read"),
    (lambda p: (p.parent / "sub").mkdir() or shutil.copy(p, p.parent / "sub"), "file model=copy/sub/part-"),
    (lambda p: p.with_name("part-0000000000000000.parquet").write_bytes(b""),
     "part model=copy/part-0000000000000000.parquet is not in the manifest and cannot be read"),
])
def test_a_parquet_file_that_is_not_a_recorded_part_is_refused_by_readers_and_named_by_verify(sweep, place, words):
    """Rows a Parquet reader of the folder's files would count and memsweep would not (a part copied under
    another name or into a folder of its own, an empty part file): every reader refuses the folder naming it,
    verify and status name it; moved out, the folder reads again."""
    first = memsweep_here(*(a.format(d=sweep) for a in TABLE)).stdout
    before = set(sweep.rglob("*"))
    place(a_part(sweep))
    refused = memsweep_here(*(a.format(d=sweep) for a in TABLE))
    assert refused.returncode == 2 and words in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert any(words in p for p in verify(str(sweep))[0]) and words in status(str(sweep))
    for extra in sorted(set(sweep.rglob("*")) - before, reverse=True):
        extra.rmdir() if extra.is_dir() else extra.unlink()
    assert verify(str(sweep))[0] == [] and memsweep_here(*(a.format(d=sweep) for a in TABLE)).stdout == first


def test_a_file_memsweep_does_not_write_is_named_by_verify_and_status_and_readers_still_read(sweep):
    """A note left in the sweep folder: verify lists it (exit 1), status says the folder holds what memsweep does
    not write; it is not rows, so readers read the folder as before."""
    first = memsweep_here(*(a.format(d=sweep) for a in TABLE)).stdout
    (sweep / "notes.txt").write_text("binds on the test box\n")
    (sweep / "model=copy" / "old").mkdir()
    problems = verify(str(sweep))[0]
    assert problems == ["folder model=copy/old is a folder memsweep does not write: move it out of the sweep folder",
                        "file notes.txt is not a file memsweep writes: move it out of the sweep folder"]
    assert "the folder holds what memsweep does not write: " in status(str(sweep))
    assert memsweep_here("verify", str(sweep)).returncode == 1
    assert memsweep_here(*(a.format(d=sweep) for a in TABLE)).stdout == first


def test_a_part_linked_out_of_the_folder_is_refused_by_run_before_any_task(sweep):
    """A part that is a symlink out of the sweep folder, to a damaged file: run would compute it again and write
    through the link; it exits 2 naming the link (it was a Ray worker's traceback and exit 1), writing nothing."""
    part = a_part(sweep)
    outside = sweep.parent / "outside.parquet"
    outside.write_bytes(part.read_bytes()[:100])
    part.unlink()
    part.symlink_to(outside)
    (sweep.parent / "spec.toml").write_text(SPEC)
    before = tree_state(sweep.parent)
    r = memsweep_here("run", str(sweep.parent / "spec.toml"), "--out", str(sweep.parent), "--no-report")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert f"'{part}' must be a file or folder inside" in lines[0] and f"a link to '{outside}'" in lines[0]
    assert tree_state(sweep.parent) == before
