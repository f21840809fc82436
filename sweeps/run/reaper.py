"""No process outlives the sweep: a tiny watcher that ends an embedded Ray when its driver ends.

Ray ties its raylet and GCS to the driver that started them, but the raylet's
agents (ray::DashboardAgent, ray::RuntimeEnvAgent) notice a dead raylet only
after a GCS call times out, about a minute later. `start(session_dir)` spawns
`python -m sweeps.run.reaper` in a session of its own. It holds a pipe from the
driver and, while the driver lives, notes every process below the driver (pid
and start time; the agents rename themselves, so their command lines do not
name the session). When the pipe closes (the driver exited, however it died),
it ends exactly the processes of that Ray session: the ones it noted, any whose
command line names the session directory, and Ray workers whose RAY_RAYLET_PID
is the session's raylet. SIGTERM first, SIGKILL after KILL_AFTER_S. Other Ray
sessions on the machine are never touched.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys

import psutil

SCAN_S = 0.5  # how often the tree below the driver is noted
KILL_AFTER_S = 2.0


class Reaper:
    """The driver's end: `start` spawns the watcher, `stop` (after ray.shutdown) lets it finish."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc

    @classmethod
    def start(cls, session_dir: str | None) -> Reaper:
        proc = subprocess.Popen(
            [sys.executable, "-m", "sweeps.run.reaper", str(os.getpid()), session_dir or ""],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True,
        )
        return cls(proc)

    def stop(self) -> None:
        """Close the pipe: the watcher ends what is left of the session and exits."""
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=KILL_AFTER_S + 5)
        except (OSError, subprocess.TimeoutExpired):
            pass


def _tree(driver: psutil.Process) -> dict[int, tuple[float, str]]:
    """pid -> (start time, executable name) of every process below the driver."""
    out = {}
    try:
        kids = driver.children(recursive=True)
    except psutil.Error:
        return out
    for p in kids:
        try:
            out[p.pid] = (p.create_time(), os.path.basename((p.cmdline() or [""])[0]))
        except psutil.Error:
            pass
    return out


def session_processes(noted: dict[int, tuple[float, str]], session_dir: str) -> list[psutil.Process]:
    """The processes of the session: noted ones still alive (same start time), those whose command
    line names session_dir, and workers whose RAY_RAYLET_PID is a noted raylet."""
    found: dict[int, psutil.Process] = {}
    raylets = {str(pid): start for pid, (start, name) in noted.items() if name == "raylet"}
    me = os.getpid()
    for pid, (start, _) in noted.items():
        if pid == me:
            continue
        try:
            p = psutil.Process(pid)
            if abs(p.create_time() - start) < 0.01:
                found[pid] = p
        except psutil.Error:
            pass
    for p in psutil.process_iter(["cmdline"]):
        if p.pid in found or p.pid == me:
            continue
        try:
            cmd = p.info["cmdline"] or []
            if session_dir and any(session_dir in a for a in cmd):
                found[p.pid] = p
            elif raylets and p.environ().get("RAY_RAYLET_PID") in raylets \
                    and p.create_time() >= raylets[p.environ()["RAY_RAYLET_PID"]]:
                found[p.pid] = p  # a worker of our raylet (started after it; not a reused pid)
        except psutil.Error:
            pass
    return list(found.values())


def reap(procs: list[psutil.Process]) -> None:
    for p in procs:
        try:
            p.send_signal(signal.SIGTERM)
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=KILL_AFTER_S)
    for p in alive:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=KILL_AFTER_S)


def watch(driver_pid: int, session_dir: str) -> None:
    """Note the driver's tree until stdin (the driver's pipe) closes, then end the session."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in the terminal is for the driver
    try:
        driver = psutil.Process(driver_pid)
    except psutil.Error:
        return
    noted = _tree(driver)
    while True:
        ready, _, _ = select.select([sys.stdin], [], [], SCAN_S)
        if ready and not os.read(sys.stdin.fileno(), 4096):
            break
        noted.update(_tree(driver))
    reap(session_processes(noted, session_dir))


if __name__ == "__main__":
    watch(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "")
