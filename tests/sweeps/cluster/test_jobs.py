"""A real two-node Ray cluster on loopback (`ray start`), a sweep sent with `memsweep submit`."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

import polars as pl
import psutil
import pytest

from sweeps.run.ray_env import START_TRIES
from tests.cluster_util import free_port
from tests.conftest import memsweep

BIN = Path(sys.executable).parent
# After SIGTERM, how long the test's Ray nodes get before SIGKILL: nothing is checked after the stop, and
# with 15 s the module's teardown took all of them (a process of the nodes outlasted SIGTERM).
STOP_GRACE_S = 3.0
SPEC = """name = "cluster"
models = ["probe"]
plugins = ["tests.support.probe"]
chunk_points = 20
[axes.probe]
i = { from = 0, to = 399, step = 1 }
delay_ms = [300.0]
"""


def ray_start(args: Callable[[], list[str]], env: dict) -> int:
    """`ray start ARGS()` in a session of its own; returns the session id its daemons keep. A start that fails
    is stopped and tried again with new arguments (new ports), up to START_TRIES times: the raylet aborts
    when the node's dashboard agent has not written its ports 15 s after it started, which a busy
    machine can make it miss (sweeps.cluster.slurm_node.run_node)."""
    for _ in range(START_TRIES):
        proc = subprocess.Popen([str(BIN / "ray"), "start", *args()], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        out = proc.communicate(timeout=180)[0]
        if proc.returncode == 0:
            return proc.pid
        stop_sessions([proc.pid])
    raise RuntimeError(f"ray start failed {START_TRIES} times; the last time:\n{out}")


def stop_sessions(sids: list[int], temp: str | None = None) -> None:
    """Stop this test's Ray nodes only: every process of their sessions, or naming their temp folder (a
    log monitor of a head whose second node failed to start outlived its session's end) (not `ray stop`,
    which would also stop any other Ray on the machine, the test process's own among them)."""
    procs = []
    for p in psutil.process_iter():
        try:
            if os.getsid(p.pid) in sids or (temp and any(temp in a for a in p.cmdline())):
                procs.append(p)
        except (ProcessLookupError, PermissionError, psutil.Error):
            pass
    for p in procs:
        try:
            p.terminate()
        except psutil.NoSuchProcess:  # it ended on its own between the listing and now
            pass
    _, alive = psutil.wait_procs(procs, timeout=STOP_GRACE_S)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass


MEASURED_SPEC = """name = "measured-cluster"
models = ["memmap"]
source = "measured"
[measure]
repeats = 2
span_ms = 200
[axes.memmap]
namespace_size = ["8MiB", "16MiB", "24MiB", "32MiB", "40MiB", "48MiB", "56MiB", "64MiB"]
map = ["mem"]
strategy = ["slow", "template", "template_nt", "template_nt_inline"]
"""


@pytest.fixture(scope="module")
def cluster():
    """Head (1 CPU, Jobs API on) plus a second node (1 CPU), token-authenticated, on 127.0.0.1; each node
    with a HOME of its own, so nothing it builds under ~/.cache is shared with the other or the test."""
    env = {
        **os.environ,
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    port, dash = free_port(), free_port()
    common = ["--node-ip-address=127.0.0.1", "--num-cpus=1", f"--object-store-memory={80 * 1024 * 1024}",
              "--disable-usage-stats"]

    def own_ports() -> list[str]:
        # Ports of a node's agents: Ray's defaults (52365, 10001, ...) are taken when another Ray
        # (the test session's embedded one) runs on this machine.
        return [f"--dashboard-agent-listen-port={free_port()}", f"--dashboard-agent-grpc-port={free_port()}",
                f"--runtime-env-agent-port={free_port()}", f"--metrics-export-port={free_port()}"]
    temp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's unix socket paths are length-limited
    homes = [Path(tempfile.mkdtemp(prefix=f"home-{n}-")) for n in ("head", "second")]
    sids: list[int] = []
    try:
        sids.append(ray_start(lambda: ["--head", f"--port={port}", "--include-dashboard=true",
                                       "--dashboard-host=127.0.0.1", f"--dashboard-port={dash}", f"--temp-dir={temp}",
                                       f"--ray-client-server-port={free_port()}", *own_ports(), *common],
                              {**env, "HOME": str(homes[0])}))
        sids.append(ray_start(lambda: [f"--address=127.0.0.1:{port}", "--resources", json.dumps({"second_node": 1}),
                                       *own_ports(), *common], {**env, "HOME": str(homes[1])}))
        yield env, f"http://127.0.0.1:{dash}", homes
    finally:
        stop_sessions(sids, temp)
        shutil.rmtree(temp, ignore_errors=True)
        for home in homes:
            shutil.rmtree(home, ignore_errors=True)


def test_submitted_sweep_runs_on_both_nodes_and_verifies(cluster, spec_file, tmp_path):
    """`memsweep submit --wait` runs the sweep as a Ray job; rows come from both nodes; verify passes."""
    env, address, _ = cluster
    out = tmp_path / "out"
    job = memsweep("submit", str(spec_file(SPEC)), "--address", address, "--out", str(out), "--wait",
                   env=env, timeout=600)
    assert job.returncode == 0, job.stdout + job.stderr
    assert "SUCCEEDED" in job.stdout and "400 points in 20 chunks (20 computed" in job.stdout
    check = memsweep("verify", str(out / "cluster"), env=env)
    assert check.returncode == 0, check.stdout
    df = pl.read_parquet(out / "cluster" / "model=probe" / "*.parquet")
    assert df.height == 400 and df["point_id"].n_unique() == 400
    assert df["env_ray_node_id"].n_unique() == 2


def test_a_measured_sweep_compiles_the_kernels_on_each_node_it_measures_on(cluster, spec_file, tmp_path):
    """Nodes that got the project only as the job's working directory build the C routines on first use,
    each into its own cache, and measure there: ok measured rows from both nodes, and verify passes."""
    env, address, homes = cluster
    assert not any(list(home.rglob("libmemsweep.so")) for home in homes)
    out = tmp_path / "out"
    job = memsweep("submit", str(spec_file(MEASURED_SPEC)), "--address", address, "--out", str(out), "--wait",
                   env=env, timeout=600)
    assert job.returncode == 0, job.stdout + job.stderr
    assert "32 points in 4 chunks (4 computed" in job.stdout
    assert memsweep("verify", str(out / "measured-cluster"), env=env).returncode == 0
    df = pl.read_parquet(out / "measured-cluster" / "model=memmap" / "*.parquet")
    assert df.height == 32 and (df["source"] == "measured").all() and (df["status"] == "ok").all()
    assert (df["measure_min"] > 0).all() and df["env_ray_node_id"].n_unique() == 2
    for home in homes:
        assert len(list(home.rglob("libmemsweep.so"))) == 1, f"no routines built under {home}"


def test_submit_rejects_a_bad_spec_before_contacting_the_cluster(spec_file, capsys):
    """A bad spec is refused locally with exit 2, whatever the address."""
    from sweeps.cli import main

    bad = spec_file(SPEC.replace('models = ["probe"]', 'models = ["nope"]'))
    assert main(["submit", str(bad), "--address", "http://127.0.0.1:1"]) == 2
    assert "'models' must name models" in capsys.readouterr().err


def test_submit_needs_a_jobs_http_address(spec_file, capsys):
    """--address must be the Jobs API URL; a GCS address is explained, exit 2."""
    from sweeps.cli import main

    assert main(["submit", str(spec_file(SPEC)), "--address", "127.0.0.1:6379"]) == 2
    assert "'--address' must be the cluster's Jobs address" in capsys.readouterr().err

