"""The suite's shared Ray (tests/conftest.py's ray_local) is as robust as the product's: it is started as
`memsweep run` starts its embedded Ray, and a start whose raylet aborts is tried again."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

from sweeps.run.ray_env import RUN_MARK_VAR
from tests.conftest import ROOT, planted
from tests.sweeps.run.test_embedded import listening, loopback
from tests.sweeps.run.test_reaper import SLOW_FIRST_AGENT

ONE_SWEEP = "tests/sweeps/run/test_driver.py::test_round_trip_one_row_per_point_with_the_spec_values"


def test_the_shared_ray_listens_on_loopback_and_carries_a_run_mark(ray_local):
    """Every process of the session's Ray (those ray.init started: the GCS, the raylet, the log monitor...;
    the raylet's: its agents, the workers) carries one run mark, so that its reaper finds it, and listens on
    loopback only."""
    started = [i.process.pid for infos in ray_local._private.worker._global_node.all_processes.values()
               for i in infos]
    procs = [psutil.Process(pid) for pid in started]
    raylet = next(p for p in procs if os.path.basename(p.cmdline()[0]) == "raylet")
    procs += raylet.children(recursive=True)
    marks = set()
    for p in procs:
        try:
            marks.add(p.environ().get(RUN_MARK_VAR))
        except psutil.Error:
            pass
    socks = listening(procs)
    assert len(marks) == 1 and None not in marks, marks
    assert {"gcs_server", "raylet", "ray::DashboardAgent", "ray::RuntimeEnvAgent"} <= {n for n, _, _ in socks}, socks
    assert [s for s in socks if not loopback(s[1])] == []


@pytest.mark.slow
def test_the_shared_ray_is_started_again_when_its_raylet_aborts(tmp_path):
    """A test run in pytest whose shared Ray's first raylet aborts (planted: its dashboard agent slowed past the
    raylet's 15 s) passes: the fixture says so and starts Ray again, as `memsweep run` does."""
    env = planted(dict(os.environ), tmp_path / "slowed", SLOW_FIRST_AGENT)
    env.pop("PYTEST_XDIST_WORKER", None)
    r = subprocess.run([sys.executable, "-m", "pytest", ONE_SWEEP, "-q", "-s", "-p", "no:cacheprovider",
                        f"--basetemp={tmp_path / 'inner'}"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "slowed" / "slowed").exists()
    assert "memsweep: the embedded Ray did not start (try 1 of 3: Exception: The current node timed out" in r.stderr
