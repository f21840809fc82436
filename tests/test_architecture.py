"""The layout is a checked contract (pyproject.toml [tool.importlinter]): layers import downward, no import
circle, Ray only in the run and cluster code, drawing only in analysis."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

LINT = Path(sys.executable).with_name("lint-imports")


def lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT), "--config", str(root / "pyproject.toml"), "--no-cache"], cwd=root,
                          env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True, timeout=300)


def test_the_project_keeps_every_contract():
    """lint-imports on the project: every contract kept."""
    r = lint(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


@pytest.fixture
def copy(tmp_path):
    """The three packages and pyproject.toml in a scratch folder, to plant a bad import in."""
    for pkg in ("sweeps", "workers", "analysis"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.o"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


@pytest.mark.parametrize("planted, broken", [
    ({"workers/planted.py": "import sweeps.cli\n"}, "sweeps and analysis use workers, never the reverse BROKEN"),
    ({"sweeps/spec/planted.py": "import sweeps.run.driver\n"}, "the stages of a sweep import downward BROKEN"),
    ({"analysis/planted_a.py": "import analysis.planted_b\n", "analysis/planted_b.py": "import analysis.planted_a\n"},
     "no import circle among the modules and folders of a package BROKEN"),
    ({"sweeps/run/store.py": "import ray\n"}, "only the run and cluster code imports Ray BROKEN"),
    ({"workers/planted.py": "import seaborn\n"}, "only analysis draws BROKEN"),
])
def test_a_planted_upward_import_or_circle_breaks_a_contract(copy, planted, broken):
    """An upward import, an import circle, Ray in the run's store (what writes the dataset) or seaborn in
    workers each break their contract by name."""
    for path, text in planted.items():
        (copy / path).write_text(text)
    r = lint(copy)
    assert r.returncode == 1 and broken in r.stdout, r.stdout + r.stderr


def test_every_error_memsweep_raises_has_one_root_the_command_line_catches(tmp_path, capsys):
    """Each class of the five exceptions.py modules derives from MemsweepError (warnings aside), with the exit
    status its kind of failure has; the CLI prints one line for any of them."""
    import importlib
    import inspect

    from sweeps import cli
    from workers.exceptions import MemsweepError

    modules = ["workers.exceptions", "sweeps.exceptions", "analysis.exceptions", "workers.guest.exceptions",
               "workers.measure.exceptions"]
    assert sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("**/exceptions.py") if ".venv" not in p.parts) == \
        sorted(m.replace(".", "/") + ".py" for m in modules)
    classes = {c for m in modules for _, c in inspect.getmembers(importlib.import_module(m), inspect.isclass)
               if c.__module__ == m and not issubclass(c, Warning)}
    assert MemsweepError in classes and len(classes) == 21 and all(issubclass(c, MemsweepError) for c in classes)
    status = {c.__name__: c.exit_status for c in classes}
    assert {n for n, s in status.items() if s == 1} == {"RayStartError", "GuestSetupError", "MeasureError",
                                                        "CompilerNotFound", "BuildError"}
    assert {n for n, s in status.items() if s == 3} == {"StoreIOError"}

    from workers.guest.exceptions import GuestSetupError

    def broken(args):
        raise GuestSetupError("qemu-system-x86_64 is not installed: run scripts/setup-guest")

    cli.COMMANDS["verify"], saved = broken, cli.COMMANDS["verify"]
    try:
        assert cli.main(["verify", str(tmp_path)]) == 1
    finally:
        cli.COMMANDS["verify"] = saved
    assert capsys.readouterr().err.strip() == \
        "memsweep verify: error: qemu-system-x86_64 is not installed: run scripts/setup-guest"
