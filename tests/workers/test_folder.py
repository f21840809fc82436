"""A sweep folder's file I/O (workers/folder.py): the part lister, the manifest reader, whole-file writes,
`scan`, and the errors that name the user's field."""

from __future__ import annotations

import polars as pl
import pytest

from workers import folder
from workers.dataset import part_path
from workers.exceptions import SweepFolderError


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
    (tmp_path / "manifest.json").write_text('{"sweep": "old"}')  # schema 1-2's name
    assert folder.read_manifest(loc) == {"sweep": "old"}
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


def test_scan_of_a_missing_model_or_an_empty_folder_names_what_is_there(tmp_path):
    """SweepFolderError names the models with parts, or says there are none."""
    with pytest.raises(SweepFolderError, match=r"'sweep_dir' must be a sweep folder with parts"):
        folder.scan(str(tmp_path))
    (tmp_path / "model=a").mkdir()
    pl.DataFrame({"model": ["a"], "x": [1]}).write_parquet(tmp_path / part_path("a", "1"))
    with pytest.raises(SweepFolderError, match=r"'model' must be a model with parts in .*\['a'\] \(got 'b'\)"):
        folder.scan(str(tmp_path), model="b")
    assert folder.scan(str(tmp_path)).collect().rows() == [("a", 1)]
