"""The task's config (sweeps/run/task.py): one constructor from a spec, for the runner and the dry run."""

from __future__ import annotations

from sweeps.run.computation import record
from sweeps.run.store import locate
from sweeps.run.task import TaskConfig
from sweeps.spec.grid import grid_for
from sweeps.spec.load import parse_spec

SPEC = """name = "cfg"
models = ["probe"]
plugins = ["tests.support.probe"]
source = "both"
[measure]
repeats = 3
[axes.probe]
i = [1, 2, 3]
"""


def test_for_spec_carries_what_the_spec_fixes_and_the_location(tmp_path):
    """for_spec gives the spec's name, grids, profile, plugins, [measure] settings and computation digest."""
    spec = parse_spec(SPEC)
    loc = locate(str(tmp_path), spec.name)
    cfg = TaskConfig.for_spec(spec, loc)
    assert (cfg.sweep, cfg.grids, cfg.location) == (spec.name, {"probe": grid_for(spec, "probe")}, loc)
    assert (cfg.profile, cfg.profile_name, cfg.plugins) == (spec.profile, spec.profile_name, spec.plugins)
    assert cfg.settings["measured"] == spec.settings["measured"] and cfg.settings["measured"].repeats == 3
    assert cfg.computation == record(spec)["digest"]
