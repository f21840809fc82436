"""Failures mid-sweep: a killed driver resumes, a killed Ray worker is retried; every point once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import polars as pl
import psutil
import pyarrow.parquet as pq
import pytest

from sweeps.run.inspect import verify
from sweeps.run.driver import run
from sweeps.spec.load import parse_spec
from tests.conftest import ROOT
from tests.support.probe import SPEC

SLOW = SPEC.replace("{name}", "slow")  # format with last= and delay=


def valid_parts(folder) -> int:
    n = 0
    for p in folder.glob("part-*.parquet"):
        try:
            pq.read_metadata(p)
            n += 1
        except Exception:  # noqa: BLE001 - an unreadable part is simply not valid
            pass
    return n


def kill_tree(proc: psutil.Process) -> None:
    for p in [proc, *proc.children(recursive=True)]:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass


@pytest.mark.slow
def test_killed_driver_resumes_with_only_the_missing_chunks(ray_local, spec_file, tmp_path):
    """SIGKILL the driver mid-sweep; the rerun (on this session's Ray) computes only missing chunks; every
    point once."""
    spec = spec_file(SLOW.format(last=299, delay=400.0))
    out = tmp_path / "out"
    driver = subprocess.Popen(
        [sys.executable, "-m", "sweeps.cli", "run", str(spec), "--out", str(out), "--no-report", "--quiet"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    folder = out / "slow" / "model=probe"
    deadline = time.monotonic() + 120
    while valid_parts(folder) < 4 and driver.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert driver.poll() is None, "the driver finished before it could be interrupted"
    tree = psutil.Process(driver.pid)
    children = tree.children(recursive=True)
    os.kill(driver.pid, signal.SIGKILL)  # the driver dies first, with no chance to clean up
    driver.wait()
    for p in children:  # then whatever of its embedded Ray is left
        kill_tree(p)
    time.sleep(1.0)
    before = valid_parts(folder)
    assert 4 <= before < 30

    rerun = run(parse_spec(spec.read_text()), str(out), progress=False)
    assert not rerun.failed and (rerun.computed, rerun.skipped) == (30 - before, before)
    problems, _ = verify(str(out / "slow"))
    assert problems == []
    df = pl.read_parquet(folder / "*.parquet")
    assert df.height == 300 and df["param_i"].sort().to_list() == list(range(300))


@pytest.mark.slow
def test_sigkilled_ray_worker_is_retried_and_no_point_is_lost(ray_local, spec_file, tmp_path):
    """SIGKILL a Ray worker while it runs a chunk; the sweep still completes, every point once."""
    killed: list[int] = []

    def assassin() -> None:
        deadline = time.monotonic() + 60
        while not killed and time.monotonic() < deadline:
            for p in psutil.Process().children(recursive=True):  # this session's Ray, no other on the machine
                try:
                    running = (p.cmdline() or [""])[0].startswith("ray::_chunk_task")
                except psutil.Error:
                    continue
                if running:
                    p.send_signal(signal.SIGKILL)
                    killed.append(p.pid)
                    return
            time.sleep(0.05)

    thread = threading.Thread(target=assassin, daemon=True)
    thread.start()
    summary = run(parse_spec(SLOW.format(last=119, delay=700.0)), str(tmp_path), progress=False)
    thread.join()
    assert killed, "no Ray worker was found running a chunk"
    assert not summary.failed and summary.computed == 12
    assert verify(str(tmp_path / "slow"))[0] == []
    df = pl.read_parquet(tmp_path / "slow" / "model=probe" / "*.parquet")
    assert df["param_i"].sort().to_list() == list(range(120))
