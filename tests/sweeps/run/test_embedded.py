"""The embedded Ray as `memsweep run` starts it: every process of it listens on loopback only, and the token
file it lets Ray create is private."""

from __future__ import annotations

import ipaddress
import os
import re
import stat
import subprocess
import sys
import time

import psutil
import pytest

from sweeps.run.ray_env import RUN_MARK_VAR
from tests.conftest import ROOT
from tests.sweeps.run.test_lease import SLOW

# What must be listening once a task runs (the metrics servers may come later): by the first word of each
# process's command line (the agents and workers rename themselves, the driver is `python`).
MUST_LISTEN = {"gcs_server", "raylet", "ray::DashboardAgent", "ray::RuntimeEnvAgent", "ray::_chunk_task"}


def run_processes(driver: psutil.Process) -> list[psutil.Process]:
    """The driver and every process carrying its run's mark (its reaper's argument)."""
    reaper = next(p for p in driver.children() if p.cmdline()[1:3] == ["-m", "sweeps.run.reaper"])
    mark = reaper.cmdline()[3]
    found = [driver]
    for p in psutil.process_iter():
        try:
            if p.environ().get(RUN_MARK_VAR) == mark:
                found.append(p)
        except psutil.Error:
            pass
    return found


def listening(procs: list[psutil.Process]) -> list[tuple[str, str, int]]:
    """(first word of the command line, address, port) of every listening inet socket of `procs`."""
    out = []
    for p in procs:
        try:
            name = os.path.basename(p.cmdline()[0])
            out += [(name, c.laddr.ip, c.laddr.port) for c in p.net_connections(kind="inet")
                    if c.status == psutil.CONN_LISTEN]
        except psutil.Error:
            pass
    return out


def loopback(ip: str) -> bool:
    """127.0.0.0/8 or ::1, or 127.x as an IPv4-mapped IPv6 address (gRPC's bind of 127.0.0.1)."""
    a = ipaddress.ip_address(ip)
    return a.is_loopback or bool(getattr(a, "ipv4_mapped", None) and a.ipv4_mapped.is_loopback)


@pytest.mark.slow
def test_every_process_of_an_embedded_run_listens_on_loopback_only(spec_file, tmp_path):
    """While `memsweep run`'s tasks run, each listening socket of the driver and of every process of its Ray
    (the GCS, the raylet, the agents, the workers, any metrics server) is bound to loopback."""
    spec = spec_file(SLOW.format(last=19, delay=1500.0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "sweeps.cli", "run", str(spec), "--out", str(tmp_path), "--no-report", "--quiet"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    driver = psutil.Process(proc.pid)
    socks: list[tuple[str, str, int]] = []
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            socks = listening(run_processes(driver))
        except (StopIteration, psutil.Error, IndexError):  # the reaper not started yet
            socks = []
        if MUST_LISTEN <= {name for name, _, _ in socks}:
            break
        time.sleep(0.2)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    assert MUST_LISTEN <= {name for name, _, _ in socks}, socks
    assert [s for s in socks if not loopback(s[1])] == []


@pytest.mark.slow
def test_the_token_file_a_run_lets_ray_create_is_private(spec_file, tmp_path):
    """A `memsweep run` whose Ray finds no token (a fresh HOME, none in the environment) completes with token
    authentication on, its token in HOME/.ray/auth_token, readable and writable by its user only."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")}
    r = subprocess.run([sys.executable, "-m", "sweeps.cli", "run", str(spec_file(SLOW.format(last=9, delay=0.0))),
                        "--out", str(tmp_path / "out"), "--no-report", "--quiet"], cwd=ROOT, env={**env, "HOME": str(home)},
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    token = home / ".ray" / "auth_token"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert stat.S_IMODE(token.parent.stat().st_mode) == 0o700
    assert re.fullmatch(r"[0-9a-f]{64}", token.read_text())


def test_a_token_file_others_can_read_is_made_private_and_kept(tmp_path, monkeypatch):
    """Before ray.init: no token file, one is made 0600 (Ray's own 64 hex digits); one of this user's that is
    0644 (Ray's own mode, from before memsweep made it private) keeps its token and becomes 0600."""
    from sweeps.run import embedded

    for var in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    embedded._private_token_file()
    token = tmp_path / ".ray" / "auth_token"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600 and re.fullmatch(r"[0-9a-f]{64}", token.read_text())
    token.write_text("f" * 64)
    token.chmod(0o644)
    embedded._private_token_file()
    assert stat.S_IMODE(token.stat().st_mode) == 0o600 and token.read_text() == "f" * 64
