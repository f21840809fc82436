"""The command line: errors map to exit statuses with one line that says what to do."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

import workers.registry as registry
from sweeps.cli import main
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
