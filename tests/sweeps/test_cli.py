"""The command line: errors map to exit statuses with one line that says what to do; a bad sweep folder or
output argument is refused before anything is read or written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import polars as pl
import pytest

import workers.registry as registry
from sweeps.cli import PAGE_RULE, SWEEP_RULE, main
from sweeps.exceptions import OUT_RULE
from tests.analysis.conftest import write_sweep
from tests.conftest import ROOT, memsweep, memsweep_here, tree_state
from workers.registry import GROUP, MODELS


@pytest.fixture
def broken_plugin(monkeypatch):
    """The installed entry points plus one whose model has an undocumented metric; the registry
    discovers again before and after (other tests see the real plugins)."""
    real = registry.entry_points()
    broken = EntryPoint(name="broken", value="tests.support.bad_models:UNDOCUMENTED_METRIC", group=GROUP)
    monkeypatch.setattr(registry, "entry_points", lambda: (*real, broken))
    MODELS.reload()
    yield broken
    monkeypatch.undo()
    MODELS.reload()


@pytest.mark.parametrize("argv", [["plan", "default"], ["run", "default", "--quiet"], ["calibrate"]])
def test_a_broken_plugin_is_exit_2_with_one_line_naming_it(broken_plugin, capsys, tmp_path, argv):
    """A command that reads the models stops before any work: exit 2, one line naming the plugin and rule."""
    out = tmp_path / "out"
    assert main([*argv, "--out", str(out)] if argv[0] in ("plan", "run") else argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"memsweep {argv[0]}: error: {GROUP} entry point 'broken' = "
                          "'tests.support.bad_models:UNDOCUMENTED_METRIC': 'metrics['metric_y'].doc' must be a "
                          "one-line doc of that metric (got ' '). To go on: fix the plugin or uninstall")
    assert not out.exists()


def test_commands_that_read_no_model_ignore_a_broken_plugin(broken_plugin, capsys, tmp_path):
    """`status` reads only the sweep folder: a broken plugin does not stop it (its own error does)."""
    assert main(["status", str(tmp_path / "nothing")]) == 2
    assert "entry point 'broken'" not in capsys.readouterr().err


# Each command's sweep folder or output argument, with the bad value in place of X: (argv, field, rule).
X = object()
FOLDER_ARGUMENTS = [
    (["plan", "default", "--quiet", "--out", X], "--out", OUT_RULE),
    (["status", X], "OUT/SWEEP", SWEEP_RULE),
    (["verify", X], "OUT/SWEEP", SWEEP_RULE),
    (["report", X], "OUT/SWEEP", SWEEP_RULE),
    (["table", X, "--model", "memmap", "--rows", "namespace_size", "--cols", "strategy"], "OUT/SWEEP", SWEEP_RULE),
    (["compare", X, "nosuch"], "A", SWEEP_RULE),
    (["compare", "nosuch", X], "B", SWEEP_RULE),
    (["calibrate", "--from", X], "--from", SWEEP_RULE),
]
OUTPUT_ARGUMENTS = [  # may name a file (or a path as the cluster sees it), never be empty
    (["report", "nosuch", "--out", X], "--out", PAGE_RULE),
    (["compare", "nosuch", "nosuch", "--out", X], "--out", PAGE_RULE),
    (["submit", "default", "--address", "http://127.0.0.1:9", "--out", X], "--out", OUT_RULE),
    (["submit", "default", "--slurm", "--dry-run", "--out", X], "--out", OUT_RULE),
]


def everything_below(path: Path) -> dict[str, tuple[int, int] | None]:
    """tree_state, and every folder below path (None): an empty folder made is something written too."""
    return {**{str(p.relative_to(path)): None for p in path.rglob("*") if p.is_dir()}, **tree_state(path)}


def refused(tmp_path: Path, argv: list, value: str, run) -> str:
    """Run argv with `value` for X in tmp_path (holding a file 'afile'); assert exit 2 and nothing written
    below tmp_path; return its one line of stderr."""
    (tmp_path / "afile").write_text("not a folder")
    before = everything_below(tmp_path)
    r = run(*[value if a is X else a for a in argv], cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert everything_below(tmp_path) == before
    assert r.stderr.count("\n") == 1, r.stderr
    return r.stderr.strip()


@pytest.mark.parametrize("argv, field, rule", FOLDER_ARGUMENTS + OUTPUT_ARGUMENTS)
def test_an_empty_folder_or_output_argument_exits_2_and_writes_nothing(tmp_path, argv, field, rule):
    """'' as a sweep folder or an output is refused, naming the argument and what it may be."""
    assert refused(tmp_path, argv, "", memsweep_here) == f"memsweep {argv[0]}: error: '{field}' must be {rule} (got '')."


@pytest.mark.parametrize("argv, field, rule", FOLDER_ARGUMENTS)
def test_a_file_where_a_folder_is_needed_exits_2_and_writes_nothing(tmp_path, argv, field, rule):
    """An existing file given as a sweep folder or as --out is bad input (not an I/O failure, exit 3)."""
    assert refused(tmp_path, argv, "afile", memsweep_here) == (
        f"memsweep {argv[0]}: error: '{field}' must be {rule} (got 'afile': a file).")


@pytest.mark.parametrize("argv, field, rule", FOLDER_ARGUMENTS)
def test_a_dangling_link_or_an_overlong_name_where_a_folder_is_needed_exits_2_and_writes_nothing(tmp_path, argv,
                                                                                                  field, rule):
    """A link to nothing given as a sweep folder or --out, or a path with a name longer than a filesystem
    holds: bad input, one line naming the argument (they were I/O failures, exit 3, once written to)."""
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    assert refused(tmp_path, argv, "dangling", memsweep_here) == (
        f"memsweep {argv[0]}: error: '{field}' must be {rule} (got 'dangling': a link to '{tmp_path}/gone', which "
        "does not exist).")
    assert refused(tmp_path, argv, "x" * 300, memsweep_here) == (
        f"memsweep {argv[0]}: error: '{field}' must be {rule} (got a name of 300 bytes in it, {'x' * 20}...: a "
        "filesystem takes at most 255).")


@pytest.mark.parametrize("value, why", [("", ""), ("afile", ": a file"), ("afile/x", ": {tmp}/afile is a file")])
def test_run_refuses_an_empty_out_or_a_file_in_its_way(tmp_path, value, why):
    """`memsweep run --out ''` no longer writes ./default in the current folder; an --out that is, or lies
    under, a file is refused before the lease or _spec.toml is written."""
    line = refused(tmp_path, ["run", "default", "--quiet", "--no-report", "--out", X], value, memsweep)
    assert line == f"memsweep run: error: '--out' must be {OUT_RULE} (got {value!r}{why.format(tmp=tmp_path)})."


def test_run_refuses_an_out_whose_sweep_folder_is_a_file(tmp_path):
    """OUT/<sweep> a file: exit 2 naming '--out' and that file, OUT untouched."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "default").write_text("not a folder")
    line = refused(tmp_path, ["run", "default", "--quiet", "--no-report", "--out", X], "out", memsweep)
    assert line == f"memsweep run: error: '--out' must be {OUT_RULE} (got 'out': {tmp_path}/out/default is a file)."


def test_verify_of_a_file_exits_2_in_a_real_process(tmp_path):
    """`memsweep verify FILE`, as the user ran it: bad input (2), not an I/O failure (3)."""
    line = refused(tmp_path, ["verify", X], "afile", memsweep)
    assert line == f"memsweep verify: error: 'OUT/SWEEP' must be {SWEEP_RULE} (got 'afile': a file)."


def test_a_run_with_error_rows_exits_1_naming_each_reason_once_and_the_report_opens_with_them(tmp_path):
    """`memsweep run` of a sweep where the model raises on half the points (not on its first chunk): its report is written, then the
    count of error rows per model and the reason, once, and exit status 1; the report's first key finding
    says the same."""
    spec = tmp_path / "boom.toml"
    spec.write_text('name = "boom"\nmodels = ["probe"]\nplugins = ["tests.support.probe"]\nchunk_points = 1\n'
                    "[axes.probe]\ni = [1, 2, 3, 4]\nexplode = [false, true]\n")
    run = memsweep("run", str(spec), "--out", str(tmp_path / "out"), "--cpus", "2", "--quiet")
    assert run.returncode == 1, run.stderr
    err = run.stderr.splitlines()
    assert err[-3:] == [
        "memsweep run: 4 rows are errors, not results (a model or measurement raised):",
        err[-2], "mend the cause and rerun the same command: parts holding error rows are computed again."]
    assert re.fullmatch(r"  probe \(model rows\): 4 error rows: RuntimeError: the probe model was asked to explode "
                        r"at probe\.py:\d+", err[-2]), err[-2]
    assert "report: " in run.stdout
    html = (tmp_path / "out" / "boom" / "_report" / "report.html").read_text()
    first = re.search(r'<ul class="findings"><li data-figure="">([^<]*)</li>', html)
    assert first and first[1].startswith("4 rows are errors, not results (a model or measurement raised): probe "
                                         "(model rows): 4 error rows: RuntimeError: the probe model was asked to "
                                         "explode at probe.py:"), html[:3000]


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path):
    """`memsweep table ... | head -1`: the pipe's reader is gone before the table is written. The command ends
    as a Unix tool does on SIGPIPE, status 141 and nothing on stderr (it was an 'I/O failure', exit 3)."""
    df = pl.DataFrame({"param_namespace_size": [1 << 30] * 3, "param_compound_order": [0, 9, 18],
                       "status": "ok", "metric_ns_per_load": [200.0, 100.0, 50.0]})
    sweep = write_sweep(tmp_path, "piped", {"pfnmap": df})
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command writes a line
    proc = subprocess.run([sys.executable, "-m", "sweeps.cli", "table", sweep, "--model", "pfnmap", "--rows",
                           "namespace_size", "--cols", "compound_order"], stdout=write, stderr=subprocess.PIPE,
                          text=True, cwd=ROOT, timeout=300)
    os.close(write)
    assert (proc.returncode, proc.stderr) == (141, "")
