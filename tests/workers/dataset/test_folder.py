"""A sweep folder's file I/O (workers/dataset/folder.py): the part lister, the manifest reader, whole-file writes,
and the errors that name the user's field."""

from __future__ import annotations

import json
import os
import re

import pytest

from workers.dataset import folder
from workers.dataset import part_path
from workers.exceptions import SweepFolderError
from tests.conftest import manifest_of, tree_state


def test_the_part_lister_sees_parts_only(tmp_path):
    """Parts of each model, by path and by chunk id; the folder's own and temporary files are not parts."""
    loc = folder.at(str(tmp_path))
    assert folder.part_files(loc) == {} and folder.list_parts(folder.at(str(tmp_path / "absent"))) == {}
    for model, chunk in (("a", "2"), ("a", "1"), ("b", "9")):
        folder.write_bytes(loc, loc.path(part_path(model, chunk)), b"x")
    (tmp_path / "_manifest.json").write_text("{}")
    (tmp_path / "model=a" / ".tmp-0-part-3.parquet").write_bytes(b"x")
    assert folder.part_files(loc) == {"a": [loc.path(part_path("a", "1")), loc.path(part_path("a", "2"))],
                                      "b": [loc.path(part_path("b", "9"))]}
    assert folder.list_parts(loc) == {"a": {"1", "2"}, "b": {"9"}}


def test_the_manifest_reader_names_a_corrupt_file_and_reads_an_older_layout(tmp_path):
    loc = folder.at(str(tmp_path))
    assert folder.read_manifest(loc) is None
    (tmp_path / "manifest.json").write_text(json.dumps(manifest_of("old")))  # schema 1-2's name
    assert folder.read_manifest(loc) == manifest_of("old")
    (tmp_path / "_manifest.json").write_text("{not json")
    with pytest.raises(SweepFolderError, match=r"/_manifest.json is not valid JSON .*--fresh"):
        folder.read_manifest(loc)


def test_write_files_writes_each_whole_in_order_and_leaves_no_temporary_file(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    for name in ("fig.png", "page.html"):
        (work / name).write_text(name)
    out = tmp_path / "out" / "_report"
    out.mkdir(parents=True)
    (out / "page.html").write_text("the old page")
    folder.write_files(folder.at(str(tmp_path / "out")), str(out), [work / "fig.png", work / "page.html"])
    assert sorted(p.name for p in out.iterdir()) == ["fig.png", "page.html"]  # no .tmp-* left
    assert (out / "page.html").read_text() == "page.html" and (out / "fig.png").read_text() == "fig.png"


def test_filesystem_names_the_field_the_user_gave():
    """A URI no filesystem understands: the error names the caller's field ('sweep_dir' by default)."""
    with pytest.raises(SweepFolderError, match=r"^'sweep_dir' must be a local path or a filesystem URI"):
        folder.filesystem("nosuchfs://bucket/x")
    with pytest.raises(SweepFolderError, match=r"^'--from' must be a local path or a filesystem URI .*nosuchfs"):
        folder.filesystem("nosuchfs://bucket/x", field="--from")


def test_an_empty_path_is_refused_not_taken_for_the_current_folder():
    """'' would be os.path.abspath(''), the current folder: refused, naming the field."""
    with pytest.raises(SweepFolderError, match=r"^'--out' must be a local path or a filesystem URI .*\(got ''\)\.$"):
        folder.at("", field="--out")


def test_nothing_is_written_through_a_symlink_out_of_the_sweep_folder(tmp_path):
    """A model=<name>/ folder or a _manifest.json linked out of the sweep: write_bytes refuses, naming the
    link and where it resolves, and writes nothing there or in the folder."""
    sweep, outside = tmp_path / "sweep", tmp_path / "outside"
    sweep.mkdir()
    outside.mkdir()
    (outside / "theirs.json").write_text("not the sweep's")
    (sweep / "model=a").symlink_to(outside)
    (sweep / "_manifest.json").symlink_to(outside / "theirs.json")
    loc = folder.at(str(sweep))
    before = {p: tree_state(p) for p in (sweep, outside)}
    for path, link, target in ((loc.part_path("a", "1"), sweep / "model=a", outside),
                               (loc.path("_manifest.json"), sweep / "_manifest.json", outside / "theirs.json")):
        with pytest.raises(SweepFolderError, match=re.escape(
                f"'{link}' must be a file or folder inside {sweep}, not a symlink out of it (got a link to "
                f"'{target}'); nothing is written through it: remove the link.")):
            folder.write_bytes(loc, path, b"x")
    assert {p: tree_state(p) for p in (sweep, outside)} == before and sorted(os.listdir(outside)) == ["theirs.json"]


def test_links_that_stay_inside_the_folder_and_a_linked_folder_are_written_through(tmp_path):
    """A link to a folder inside the sweep, and a sweep folder that is itself a link (results -> scratch),
    are the sweep's own: written as usual."""
    real = tmp_path / "scratch" / "sweep"
    (real / "kept").mkdir(parents=True)
    (real / "_report").symlink_to(real / "kept")
    (tmp_path / "results").symlink_to(tmp_path / "scratch")
    loc = folder.at(str(tmp_path / "results" / "sweep"))
    folder.write_bytes(loc, loc.path("_report", "report.html"), b"page")
    folder.write_bytes(loc, loc.part_path("a", "1"), b"part")
    assert (real / "kept" / "report.html").read_bytes() == b"page" and (real / "model=a" / "part-1.parquet").exists()


def test_write_files_into_a_report_folder_linked_out_writes_no_file(tmp_path):
    """The report's and compare's pages and figures go through write_bytes: the first is refused, none written."""
    work, outside, sweep = tmp_path / "work", tmp_path / "outside", tmp_path / "sweep"
    for d in (work, outside, sweep):
        d.mkdir()
    for name in ("fig.png", "report.html"):
        (work / name).write_text(name)
    (sweep / "_report").symlink_to(outside)
    with pytest.raises(SweepFolderError, match=r"_report' must be a file or folder inside .* not a symlink out of it"):
        folder.write_files(folder.at(str(sweep)), str(sweep / "_report"), [work / "fig.png", work / "report.html"])
    assert list(outside.iterdir()) == []
