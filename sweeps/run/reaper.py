"""No process outlives the run: a tiny watcher that ends an embedded Ray's processes when its driver ends.

The driver marks its run: a value of its own in RUN_MARK_VAR, in the environment ray.init starts Ray's
processes with, which each of them hands down (the GCS, the raylet, its dashboard and runtime-env agents,
the log monitor, the workers). `Reaper.start(mark)` spawns `python -m sweeps.run.reaper MARK` in a session
of its own before ray.init. The watcher holds a pipe from the driver; when the pipe closes (the driver
exited, however it died, in the middle of ray.init included), it ends every process carrying the mark,
read from /proc/<pid>/environ: SIGTERM first, SIGKILL after KILL_AFTER_S, scanning again until a scan finds
none. Ray's own ties are not enough: its GCS and raylet die with the driver (kill-on-parent-death,
ray/_private/services.py start_ray_process), but the raylet's agents notice only when a GCS call times out,
15 to 40 s later. No other process carries the mark, so other Ray sessions are never touched. The driver
starts the watcher again if it dies first (Reaper._guard): without it, a killed watcher left the raylet's
agents alive for a minute or two after the driver.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import psutil

from .ray_env import RUN_MARK_VAR

KILL_AFTER_S = 1.0  # SIGTERM to SIGKILL: the driver is gone, so nothing of the run is worth waiting for
RESCAN_S = 0.2  # a process the driver forked as it died shows the mark once it has exec'd
SCANS = 25  # at most, each ending what it found; two in a row that find nothing end the watch


class Reaper:
    """The driver's end: `start` spawns the watcher, `stop` (after ray.shutdown) lets it finish. The watcher
    is watched in turn: a thread of the driver waits on it, and one that ends while the run goes on (killed, by
    hand or by an OOM killer) is started again at once with the same mark, so that the run's processes still
    have a watcher when the driver dies."""

    def __init__(self, mark: str):
        self.mark = mark
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.proc = self._spawn()
        threading.Thread(target=self._guard, name="memsweep-reaper-guard", daemon=True).start()

    @classmethod
    def start(cls, mark: str) -> Reaper:
        return cls(mark)

    def _spawn(self) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "sweeps.run.reaper", self.mark],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True,
        )

    def _guard(self) -> None:
        """Start the watcher again whenever it ends before stop()."""
        while True:
            with self.lock:
                proc = self.proc
            proc.wait()
            with self.lock:
                if self.stopping.is_set():
                    return
                self.proc = self._spawn()

    def stop(self) -> None:
        """Close the pipe: the watcher ends what is left of the run and exits."""
        with self.lock:
            self.stopping.set()
            proc = self.proc
        try:
            proc.stdin.close()
            proc.wait(timeout=KILL_AFTER_S * 2 + 5)
        except (OSError, subprocess.TimeoutExpired):
            pass


def marked(mark: str) -> list[psutil.Process]:
    """The live processes whose environment carries `mark` in RUN_MARK_VAR, this one excepted."""
    found = []
    for p in psutil.process_iter():
        try:
            if p.pid != os.getpid() and p.environ().get(RUN_MARK_VAR) == mark:
                found.append(p)
        except psutil.Error:  # gone, a zombie, or another user's
            pass
    return found


def reap(procs: list[psutil.Process]) -> None:
    """SIGTERM `procs`, SIGKILL those alive KILL_AFTER_S later."""
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


def end_run(mark: str) -> None:
    """End every process of the run, scanning until two scans in a row find none."""
    empty = 0
    for _ in range(SCANS):
        procs = marked(mark)
        empty = 0 if procs else empty + 1
        if empty == 2:
            return
        reap(procs)
        time.sleep(RESCAN_S)


def watch(mark: str) -> None:
    """Wait until stdin (the driver's pipe) closes, then end the run's processes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in the terminal is for the driver
    while os.read(sys.stdin.fileno(), 4096):
        pass
    end_run(mark)


if __name__ == "__main__":
    watch(sys.argv[1])
