"""No process outlives the sweep: after SIGKILL of a driver with an embedded Ray, at any moment of its
Ray's start or later, every process of its run is gone within 5 s (the acceptance criterion itself)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import psutil
import pytest

from sweeps.run.ray_env import RUN_MARK_VAR
from tests.conftest import ROOT, planted
from tests.sweeps.run.test_lease import SLOW

SESSION = re.compile(r"/session_[0-9_-]+_(\d+)")


def cmdline(p: psutil.Process) -> str:
    try:
        return " ".join(p.cmdline())
    except psutil.Error:
        return ""


def remaining(noted: dict[int, float], session_dir: str, pgid: int) -> list[str]:
    """Processes of the session still alive: noted ones (same start time), any naming the session
    directory, any in the driver's process group."""
    left = []
    for p in psutil.process_iter():
        try:
            if p.status() == psutil.STATUS_ZOMBIE:
                continue
            ours = (noted.get(p.pid) == p.create_time() or session_dir in cmdline(p)
                    or os.getpgid(p.pid) == pgid)
        except (psutil.Error, ProcessLookupError):
            continue
        if ours:
            left.append(f"{p.pid} {cmdline(p)[:80]}")
    return left


def reaper_of(driver: psutil.Process) -> psutil.Process | None:
    return next((p for p in driver.children() if "sweeps.run.reaper" in cmdline(p)), None)


@pytest.mark.slow
@pytest.mark.parametrize("reaper_killed_first", [False, True])
def test_sigkilled_driver_leaves_no_ray_process_after_5_s(spec_file, tmp_path, reaper_killed_first):
    """SIGKILL `memsweep run` (embedded Ray) while tasks run: its whole Ray session is gone within 5 s; also when
    its reaper was SIGKILLed first (the driver starts another)."""
    spec = spec_file(SLOW.format(last=299, delay=400.0))
    log = tmp_path / "driver.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sweeps.cli", "run", str(spec), "--out", str(tmp_path), "--no-report", "--quiet"],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    driver = psutil.Process(proc.pid)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        tree = driver.children(recursive=True)
        if any(cmdline(p).startswith("ray::_chunk_task") for p in tree):
            break
        time.sleep(0.2)
    assert proc.poll() is None, log.read_text()
    if reaper_killed_first:
        first = reaper_of(driver)
        first.kill()
        psutil.wait_procs([first], timeout=5)
        deadline = time.monotonic() + 10
        while (reaper_of(driver) is None or reaper_of(driver).pid == first.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert reaper_of(driver) is not None and reaper_of(driver).pid != first.pid, "no reaper started again"
    noted = {}
    for p in driver.children(recursive=True):
        try:
            noted[p.pid] = p.create_time()
        except psutil.Error:
            pass
    found = {m.group(0) for p in driver.children(recursive=True) for m in [SESSION.search(cmdline(p))] if m}
    assert len(found) == 1
    session_dir = found.pop()
    assert session_dir.endswith(f"_{proc.pid}")  # the session this driver started

    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 5.0
    left = remaining(noted, session_dir, proc.pid)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = remaining(noted, session_dir, proc.pid)
    try:
        assert left == [], f"still running 5 s after the driver's SIGKILL: {left}"
    finally:
        for line in left:  # never leave them to the next test
            try:
                psutil.Process(int(line.split()[0])).kill()
            except psutil.Error:
                pass
    assert "Token authentication" not in log.read_text()


# The embedded Ray's first dashboard agent starts in 20 s, where Ray's raylet waits 15 s for its ports and aborts.
SLOW_FIRST_AGENT = """if b"dashboard/agent.py" in CMD:
    try:
        os.close(os.open(os.path.join(os.path.dirname(__file__), "slowed"), os.O_CREAT | os.O_EXCL))
        time.sleep(20)
    except FileExistsError:
        pass
"""


@pytest.mark.slow
def test_an_embedded_ray_whose_raylet_aborts_is_started_again_and_leaves_nothing(spec_file, tmp_path):
    """A raylet that aborts while the embedded Ray starts (planted: its dashboard agent is slowed past the 15 s
    the raylet waits for it, as a busy host once did): `memsweep run` says so, starts Ray again and completes;
    no process of either attempt outlives the command."""
    tag = f"memsweep-test-{os.getpid()}-{time.monotonic_ns()}"
    env = planted({**os.environ, "MEMSWEEP_TEST_TAG": tag}, tmp_path / "slowed", SLOW_FIRST_AGENT)
    r = subprocess.run([sys.executable, "-m", "sweeps.cli", "run", str(spec_file(SLOW.format(last=9, delay=0.0))),
                        "--out", str(tmp_path / "out"), "--no-report", "--quiet"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "slowed" / "slowed").exists()
    assert "memsweep: the embedded Ray did not start (try 1 of 3: Exception: The current node timed out" in r.stderr
    assert "10 points in" in r.stdout and "0 failed" in r.stdout
    deadline = time.monotonic() + 10  # the reaper ends the second attempt's session after the driver exits
    while (left := tagged(tag)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not left, left


def tagged(tag: str, var: str = "MEMSWEEP_TEST_TAG") -> list[str]:
    """Live processes whose environment carries `tag` in `var`."""
    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get(var) == tag and p.status() != psutil.STATUS_ZOMBIE:
                found.append(cmdline(p)[:160])
        except psutil.Error:
            pass
    return found


# Moments of the embedded Ray's start, in order, each the first sight of a process below the driver: its
# reaper (before ray.init), the GCS, the raylet, and the raylet's two agents (ray.init is still waiting).
START_MOMENTS = ("sweeps.run.reaper", "gcs_server", "raylet", "dashboard/agent.py", "runtime_env/agent/main.py")


def started(p: psutil.Process, what: str) -> bool:
    """`p` runs `what`: its executable, script or module (the first three words of its command line)."""
    try:
        return any(a == what or a.endswith("/" + what) for a in p.cmdline()[:3])
    except psutil.Error:
        return False


@pytest.mark.slow
@pytest.mark.parametrize("moment", START_MOMENTS)
def test_a_driver_sigkilled_while_its_ray_starts_leaves_no_process_after_5_s(moment, spec_file, tmp_path):
    """SIGKILL `memsweep run` as soon as `moment` appears below it: 5 s later no process of the run is alive,
    neither one seen below the driver (same pid and start time) nor one carrying the run's mark (its reaper's
    argument) or the test's own variable in its environment."""
    tag = f"memsweep-test-{os.getpid()}-{time.monotonic_ns()}"
    spec = spec_file(SLOW.format(last=299, delay=400.0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "sweeps.cli", "run", str(spec), "--out", str(tmp_path), "--no-report", "--quiet"],
        cwd=ROOT, env={**os.environ, "MEMSWEEP_TEST_TAG": tag}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )
    driver, seen, found, mark = psutil.Process(proc.pid), {}, False, None
    deadline = time.monotonic() + 120
    while not found and proc.poll() is None and time.monotonic() < deadline:
        for p in driver.children(recursive=True):
            try:
                seen[p.pid] = p.create_time()
                mark = mark or (p.cmdline()[3] if started(p, "sweeps.run.reaper") else None)
            except (psutil.Error, IndexError):
                continue
            found = found or started(p, moment)
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert found and mark, f"{moment} (or the reaper) never appeared below the driver"
    deadline = time.monotonic() + 5.0
    while (left := sorted({*alive(seen), *tagged(tag), *tagged(mark, RUN_MARK_VAR)})) and time.monotonic() < deadline:
        time.sleep(0.2)
    try:
        assert not left, f"still running 5 s after the driver's SIGKILL at {moment}: {left}"
    finally:
        end(seen, tag)


def alive(seen: dict[int, float]) -> list[str]:
    """The processes of `seen` (pid -> start time) still running."""
    left = []
    for pid, start in seen.items():
        try:
            p = psutil.Process(pid)
            if p.create_time() == start and p.status() != psutil.STATUS_ZOMBIE:
                left.append(cmdline(p)[:160])
        except psutil.Error:
            pass
    return left


def end(seen: dict[int, float], tag: str) -> None:
    """Kill what a failed test left (never to the next test): `seen` processes and those carrying `tag`."""
    for p in psutil.process_iter():
        try:
            if seen.get(p.pid) == p.create_time() or p.environ().get("MEMSWEEP_TEST_TAG") == tag:
                p.kill()
        except psutil.Error:
            pass
