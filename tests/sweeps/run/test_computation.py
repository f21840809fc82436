"""A sweep folder holds rows of one computation: spec meaning, profile digest, model and plugin versions."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from sweeps.cli import main
from sweeps.run.computation import differences, identity
from sweeps.exceptions import DatasetError
from sweeps.run.inspect import verify
from sweeps.run.driver import run
from sweeps.spec.load import load_spec, parse_spec
from tests.conftest import tree_state
from workers.dataset import COMPUTATION, MANIFEST, SPEC_FILE
from workers.profiles import PROFILE_DIR

PROBE = 'name = "rt"\nmodels = ["probe"]\nplugins = ["tests.support.probe"]\nchunk_points = 2\n'


def _profile_file(folder, value: float):
    """A copy of the seed profile with young.call_ns changed (the file a user edits between two runs)."""
    text = (PROFILE_DIR / "seed.toml").read_text()
    key = "call_ns = { value = "
    start = text.index(key) + len(key)
    end = text.index(",", start)
    (folder / "host.toml").write_text(text[:start] + repr(value) + text[end:])
    return folder / "host.toml"


def test_an_edited_profile_is_refused_with_its_diff_and_fresh_leaves_one_computation(ray_local, tmp_path, capsys):
    """Edit the spec's profile file and rerun: exit 2 naming the profile change, nothing written; --fresh
    then leaves one computation and verify is ok."""
    _profile_file(tmp_path, 5.0)
    spec = tmp_path / "spec.toml"
    spec.write_text(PROBE + 'profile = "host.toml"\n[axes.probe]\ni = [1, 2, 3, 4]\n')
    out = tmp_path / "out"
    assert main(["run", str(spec), "--out", str(out), "--quiet", "--no-report"]) == 0
    _profile_file(tmp_path, 6.0)
    before = tree_state(out)
    assert main(["run", str(spec), "--out", str(out), "--quiet", "--no-report"]) == 2
    err = capsys.readouterr().err
    assert "holds rows of another computation" in err
    assert "profile: host.toml (" in err and "(the same name: the file's values changed)" in err
    assert "--fresh" in err and "another 'name'" in err
    assert tree_state(out) == before
    assert main(["run", str(spec), "--out", str(out), "--quiet", "--no-report", "--fresh"]) == 0
    assert verify(str(out / "rt"))[0] == []
    assert len(list((out / "rt" / "model=probe").glob("part-*.parquet"))) == 2


def test_reordered_values_and_a_new_description_resume_the_same_chunks(ray_local, tmp_path):
    """Values listed in another order, with another description, are the same computation: every chunk is
    skipped, the folder keeps its spec and order, and verify stays ok."""
    first = PROBE + "[axes.probe]\ni = [1, 2, 3, 4, 5]\n"
    run(parse_spec(first), str(tmp_path), progress=False)
    said = []
    again = parse_spec('description = "the same, reworded"\n' + PROBE + "[axes.probe]\ni = [5, 3, 1, 4, 2]\n")
    summary = run(again, str(tmp_path), progress=False, say=said.append)
    assert (summary.computed, summary.skipped) == (0, 3)
    assert any("only in its description or the order of values" in s for s in said)
    assert (tmp_path / "rt" / SPEC_FILE).read_text() == first
    assert verify(str(tmp_path / "rt"))[0] == []


def test_changed_values_are_refused_with_what_was_added_and_removed(ray_local, tmp_path):
    """A rerun with other axis values names the axis and the values added and removed."""
    run(parse_spec(PROBE + "[axes.probe]\ni = [1, 2, 3]\n"), str(tmp_path), progress=False)
    with pytest.raises(DatasetError, match=r"axes\.probe\.i: added 4; removed 1"):
        run(parse_spec(PROBE + "[axes.probe]\ni = [2, 3, 4]\n"), str(tmp_path), progress=False)


def test_model_and_plugin_versions_are_part_of_the_computation():
    """A model's version and its plugin package's version each show as a difference."""
    old = identity(parse_spec(PROBE + "[axes.probe]\ni = [1]\n"))
    new = json.loads(json.dumps(old))
    new["models"]["probe"] = {"version": "2", "package": "probe-models 1.1"}
    assert differences(old, new) == ["model probe: version 1 -> 2", "model probe: package None -> probe-models 1.1"]
    assert differences(old, old) == []


def _mixed_folder(tmp_path):
    """A sweep folder with a part of another computation copied in (what older memsweep left behind)."""
    run(parse_spec(PROBE + "[axes.probe]\ni = [1, 2]\n"), str(tmp_path / "a"), progress=False)
    run(parse_spec(PROBE + "[axes.probe]\ni = [7, 8]\n"), str(tmp_path / "b"), progress=False)
    stray = next((tmp_path / "b" / "rt" / "model=probe").glob("part-*.parquet"))
    shutil.copy(stray, tmp_path / "a" / "rt" / "model=probe" / stray.name)
    return tmp_path / "a" / "rt"


@pytest.mark.parametrize("argv", [
    ["report", "{d}"], ["table", "{d}", "--model", "probe", "--rows", "i", "--cols", "delay_ms"],
    ["compare", "{d}", "{d}"], ["run", "{spec}", "--out", "{out}", "--quiet", "--no-report"],
])
def test_every_reader_and_run_refuse_a_mixed_folder(ray_local, tmp_path, capsys, argv):
    """report, table, compare and run refuse a folder mixing two computations with exit 2, writing nothing."""
    folder = _mixed_folder(tmp_path)
    (tmp_path / "spec.toml").write_text(PROBE + "[axes.probe]\ni = [1, 2]\n")
    before = tree_state(folder)
    args = [a.format(d=folder, spec=tmp_path / "spec.toml", out=tmp_path / "a") for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "does not match its manifest: part model=probe/part-" in err
    assert "is not in the manifest: computed with another spec, profile or model version" in err
    assert tree_state(folder) == before


def test_verify_tells_a_foreign_part_from_one_not_yet_recorded(ray_local, tmp_path):
    """verify calls a part of another computation foreign, and one of this computation merely unrecorded; the
    rerun it advises records that one and refuses the other with the words verify used."""
    folder = _mixed_folder(tmp_path)
    manifest = json.loads((folder / MANIFEST).read_text())
    dropped = sorted(manifest["parts"])[0]
    del manifest["parts"][dropped]
    (folder / MANIFEST).write_text(json.dumps(manifest))
    problems, _ = verify(str(folder))
    assert any(dropped in p and "not yet recorded" in p and "rerun the same 'memsweep run'" in p for p in problems)
    foreign = [p for p in problems if "another spec, profile or model version" in p]
    assert len(foreign) == 1 and dropped not in foreign[0]
    with pytest.raises(DatasetError, match=re.escape(foreign[0])):
        run(parse_spec(PROBE + "[axes.probe]\ni = [1, 2]\n"), str(folder.parent), progress=False)
    (folder / foreign[0].split()[1]).unlink()  # "part model=probe/part-<id>.parquet is not ..."
    assert run(parse_spec(PROBE + "[axes.probe]\ni = [1, 2]\n"), str(folder.parent), progress=False).computed == 0
    assert verify(str(folder))[0] == []


def test_a_folder_written_before_computations_were_recorded_keeps_working(ray_local, tmp_path, capsys):
    """An older manifest without a computation record resumes with the same spec and reads as before."""
    text = PROBE + "[axes.probe]\ni = [1, 2, 3]\n"
    run(parse_spec(text), str(tmp_path), progress=False)
    path = tmp_path / "rt" / MANIFEST

    def forget_computation() -> None:
        manifest = json.loads(path.read_text())
        manifest.pop(COMPUTATION), manifest.pop("profile_data")
        path.write_text(json.dumps(manifest))

    forget_computation()
    assert run(parse_spec(text), str(tmp_path), progress=False).computed == 0
    forget_computation()
    with pytest.raises(DatasetError, match=r"(?s)another computation.*\+i = \[1, 2, 4\]"):
        run(parse_spec(PROBE + "[axes.probe]\ni = [1, 2, 4]\n"), str(tmp_path), progress=False)
    assert main(["table", str(tmp_path / "rt"), "--model", "probe", "--rows", "i", "--cols", "delay_ms"]) == 0


def test_a_relative_profile_path_is_read_from_the_spec_files_folder(tmp_path, monkeypatch):
    """profile = "host.toml" is found beside the spec from any directory; a missing one names the path tried."""
    (tmp_path / "specs").mkdir()
    _profile_file(tmp_path / "specs", 5.0)
    (tmp_path / "specs" / "s.toml").write_text(PROBE + 'profile = "host.toml"\n')
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert load_spec("../specs/s.toml").profile.value("young", "call_ns") == 5.0
    (tmp_path / "specs" / "host.toml").unlink()
    with pytest.raises(Exception, match=r"'profile' must be .*\(got 'host.toml': no file at .*specs/host.toml\)"):
        load_spec("../specs/s.toml")


def test_parts_of_another_computation_without_a_manifest_are_refused(ray_local, tmp_path):
    """A run stopped before its first manifest leaves parts only; a rerun with an edited profile (same spec
    text) is refused rather than writing its rows beside them."""
    _profile_file(tmp_path, 5.0)
    text = PROBE + 'profile = "host.toml"\n[axes.probe]\ni = [1, 2, 3]\n'
    run(parse_spec(text, base_dir=tmp_path), str(tmp_path / "out"), progress=False)
    (tmp_path / "out" / "rt" / MANIFEST).unlink()
    assert run(parse_spec(text, base_dir=tmp_path), str(tmp_path / "out"), progress=False).computed == 0
    (tmp_path / "out" / "rt" / MANIFEST).unlink()
    _profile_file(tmp_path, 6.0)
    with pytest.raises(DatasetError, match=r"does not match its manifest: part model=probe/part-\w+\.parquet is not in "
                                           r"the manifest: computed with another spec, profile or model version.* "
                                           r"\(and 1 more\).*Nothing was run\."):
        run(parse_spec(text, base_dir=tmp_path), str(tmp_path / "out"), progress=False)


@pytest.mark.parametrize("chunking", ["chunk_points = 2\n", ""], ids=["fixed", "sized-by-cost"])
def test_a_run_works_its_computation_out_once(ray_local, tmp_path, monkeypatch, chunking):
    """The digest, and the identity it hashes, are worked out once per run, in its plan: the folder check, the
    foreign-part check, the chunks' sizing by cost, the tasks' config and every manifest save reuse it; the
    parts' footers and the manifest hold that one digest."""
    from collections import Counter

    from sweeps.run import computation, driver
    import pyarrow.fs as pafs

    from workers.dataset.parts import read_footer

    calls = Counter()
    real_digest, real_identity = computation.digest, computation.identity

    def counted_identity(spec):
        calls["identity"] += 1
        return real_identity(spec)

    def counted_digest(ident):
        calls["digest"] += 1
        return real_digest(ident)

    monkeypatch.setattr(computation, "digest", counted_digest)
    monkeypatch.setattr(computation, "identity", counted_identity)
    monkeypatch.setattr(driver, "identity", counted_identity)
    spec = parse_spec(PROBE.replace("chunk_points = 2\n", chunking) + "[axes.probe]\ni = [1, 2, 3, 4, 5]\n")
    run(spec, str(tmp_path), progress=False)  # a new folder
    assert calls == {"digest": 1, "identity": 1}
    run(spec, str(tmp_path), progress=False)  # the same folder again: checked against its record, then resumed
    assert calls == {"digest": 2, "identity": 2}
    manifest = json.loads((tmp_path / "rt" / MANIFEST).read_text())
    parts = sorted((tmp_path / "rt" / "model=probe").glob("part-*.parquet"))
    footers = {read_footer(pafs.LocalFileSystem(), str(p)).computation for p in parts}
    assert parts and footers == {manifest[COMPUTATION]["digest"]}
    assert manifest[COMPUTATION]["digest"] == real_digest(real_identity(spec))
