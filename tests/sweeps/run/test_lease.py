"""One driver per sweep: the lease refuses a second driver, is taken over when stale, can be
waited for, and is released at the end and on SIGTERM."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from sweeps.exceptions import LeaseError
from sweeps.run.inspect import verify
from sweeps.run.lease import Holder, Lease
from sweeps.run.driver import run
from sweeps.spec.load import parse_spec
from sweeps.run.store import locate
from workers.dataset import LEASE_FILE
from tests.conftest import ROOT
from tests.support.probe import SPEC

SLOW = SPEC.replace("{name}", "leased")  # format with last= and delay=


def driver(spec, out, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "sweeps.cli", "run", str(spec), "--out", str(out), "--no-report", "--quiet", *extra],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def fake_lease(folder, **fields) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    now = time.time()
    d = {"host": "elsewhere", "boot_id": "b", "pid": 4242, "pid_start": 1.0, "token": "t" * 32,
         "started": now - 7200, "heartbeat": now, **fields}
    (folder / LEASE_FILE).write_text(json.dumps(d))


@pytest.mark.slow
def test_two_drivers_on_one_sweep_one_computes_the_other_exits_2_naming_it(spec_file, tmp_path):
    """Started together, one driver runs the sweep; the other exits 2 with one line naming the holder."""
    spec = spec_file(SLOW.format(last=59, delay=300.0))
    first, second = driver(spec, tmp_path), driver(spec, tmp_path)
    outs = {p.pid: (p.wait(timeout=300), *p.communicate()) for p in (first, second)}
    codes = sorted(rc for rc, _, _ in outs.values())
    assert codes == [0, 2], outs
    winner = next(pid for pid, (rc, _, _) in outs.items() if rc == 0)
    _, _, err = next(v for v in outs.values() if v[0] == 2)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert re.search(rf"is being run by another driver \(host {re.escape(socket.gethostname())} pid {winner}, "
                     r"running since \S+Z, last heartbeat \S+Z \(\d+ s ago\)\); .*--wait-lease", lines[0]), lines[0]
    assert not any("Token authentication" in o + e for _, o, e in outs.values())  # quiet by default
    assert verify(str(tmp_path / "leased"))[0] == []
    assert not (tmp_path / "leased" / LEASE_FILE).exists()  # released at the end


@pytest.mark.slow
def test_a_stale_lease_is_taken_over_with_a_message(ray_local, tmp_path):
    """A lease whose heartbeat is older than three heartbeats is taken over, and the run says so."""
    fake_lease(tmp_path / "leased", heartbeat=time.time() - 3600)
    said: list[str] = []
    summary = run(parse_spec(SLOW.format(last=9, delay=0.0)), str(tmp_path), progress=False, say=said.append)
    assert summary.computed == 1
    assert len(said) == 1 and re.match(
        r"taking over the lease on .*leased from host elsewhere pid 4242, .*: its heartbeat is 3600 s old "
        r"\(stale after 30 s\)\.", said[0]), said
    assert not (tmp_path / "leased" / LEASE_FILE).exists()


def test_a_lease_of_a_dead_process_on_this_host_is_taken_over_at_once(ray_local, tmp_path):
    """A fresh lease whose holder ran here and is gone (a SIGKILLed driver) needs no timeout."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    me = Holder.me()
    fake_lease(tmp_path / "leased", host=me.host, boot_id=me.boot_id, pid=int(gone.stdout), pid_start=me.pid_start)
    said: list[str] = []
    run(parse_spec(SLOW.format(last=9, delay=0.0)), str(tmp_path), progress=False, say=said.append)
    assert len(said) == 1 and said[0].endswith("its process is gone."), said


def test_a_live_lease_is_refused_or_waited_for(ray_local, tmp_path):
    """A held lease raises LeaseError naming the holder; with wait_lease the run waits, then runs."""
    spec = parse_spec(SLOW.format(last=9, delay=0.0))
    holder = Lease(locate(str(tmp_path), "leased"), say=lambda m: None)
    holder.acquire()
    try:
        with pytest.raises(LeaseError, match=rf"is being run by another driver \(host \S+ pid {os.getpid()}, "):
            run(spec, str(tmp_path), progress=False)
        said: list[str] = []
        result: list = []
        waiter = threading.Thread(target=lambda: result.append(
            run(spec, str(tmp_path), progress=False, wait_lease=True, say=said.append)))
        waiter.start()
        deadline = time.monotonic() + 60
        while not said and time.monotonic() < deadline:
            time.sleep(0.1)
        assert said and said[0].startswith("waiting for the lease on ") and f"pid {os.getpid()}" in said[0]
        assert not result
    finally:
        holder.release()
    waiter.join(timeout=120)
    assert result and result[0].computed == 1


@pytest.mark.slow
def test_sigterm_releases_the_lease(spec_file, tmp_path):
    """SIGTERM stops a run like Ctrl-C: exit 130, the lease is gone, a rerun resumes."""
    spec = spec_file(SLOW.format(last=299, delay=400.0))
    proc = driver(spec, tmp_path)
    folder = tmp_path / "leased" / "model=probe"
    deadline = time.monotonic() + 120
    while not list(folder.glob("part-*.parquet")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert proc.poll() is None and (tmp_path / "leased" / LEASE_FILE).exists()
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=60)
    _, err = proc.communicate()
    assert rc == 130 and "interrupted; rerun the same command to resume" in err
    assert not (tmp_path / "leased" / LEASE_FILE).exists()


def wait_for(proc: subprocess.Popen, when: str, tmp_path) -> None:
    """Until the run `proc` is at `when`: "ray starting" (its first child, the reaper, is up) or "tasks running"
    (a part is written); it must still run then."""
    import psutil

    me, folder = psutil.Process(proc.pid), tmp_path / "leased" / "model=probe"
    ready = (lambda: me.children()) if when == "ray starting" else (lambda: list(folder.glob("part-*.parquet")))
    deadline = time.monotonic() + 120
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before it could be interrupted"


@pytest.mark.slow
@pytest.mark.parametrize("when", ["ray starting", "tasks running"])
def test_ctrl_c_to_the_process_group_prints_one_line_and_releases_the_lease(spec_file, tmp_path, when):
    """Ctrl-C from a terminal (SIGINT to the whole process group, Ray's processes too), while Ray starts or
    while tasks run: exit 130, the one 'interrupted' line on stderr and nothing of Ray's, no lease left."""
    spec = spec_file(SLOW.format(last=299, delay=400.0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "sweeps.cli", "run", str(spec), "--out", str(tmp_path), "--no-report", "--quiet"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    wait_for(proc, when, tmp_path)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (130, "memsweep run: interrupted; rerun the same command to resume.\n")
    assert not (tmp_path / "leased" / LEASE_FILE).exists()


@pytest.mark.slow
@pytest.mark.parametrize("signum, when, rc", [(signal.SIGTERM, "ray starting", 130),
                                              (signal.SIGHUP, "ray starting", 129),
                                              (signal.SIGHUP, "tasks running", 129)])
def test_sigterm_or_sighup_at_any_phase_ends_the_run_with_the_resume_line_and_no_lease(spec_file, tmp_path, signum,
                                                                                      when, rc):
    """SIGTERM while Ray starts (ray.init puts its own handler in part-way, which exited 15 without a word), and
    SIGHUP (a closed terminal) while Ray starts or tasks run: the 'interrupted' line, exit 130 (129 for SIGHUP),
    no lease left."""
    proc = driver(spec_file(SLOW.format(last=299, delay=400.0)), tmp_path)
    wait_for(proc, when, tmp_path)
    if when == "ray starting":
        time.sleep(1.0)  # into ray.init, past the reaper's start
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (rc, "memsweep run: interrupted; rerun the same command to resume.\n")
    assert not (tmp_path / "leased" / LEASE_FILE).exists()


def test_the_holders_cleanup_leaves_another_drivers_attempt_at_the_lease(tmp_path):
    """The holder removes the temporary files of killed writes, but not a .tmp-lease-* file another driver
    has just made to link as the lease (it failed with an I/O error, exit 3, where it must exit 2 naming the
    holder): only one older than LEASE_TEMP_STALE_S, which a killed driver left."""
    from sweeps.run.store import LEASE_TEMP_STALE_S, remove_temp_files
    from workers.dataset import LEASE_TEMP_PREFIX, TEMP_PREFIX

    folder = tmp_path / "leased"
    (folder / "model=probe").mkdir(parents=True)
    fresh, old = folder / f"{LEASE_TEMP_PREFIX}{'a' * 32}", folder / f"{LEASE_TEMP_PREFIX}{'b' * 32}"
    killed_write = folder / "model=probe" / f"{TEMP_PREFIX}c-part-1.parquet"
    for f in (fresh, old, killed_write):
        f.write_text("x")
    os.utime(old, (time.time() - LEASE_TEMP_STALE_S - 5,) * 2)
    assert remove_temp_files(locate(str(tmp_path), "leased")) == 2
    assert fresh.exists() and not old.exists() and not killed_write.exists()


def test_a_lease_file_linked_out_of_the_sweep_folder_is_refused(tmp_path):
    """_lease.json is linked into place, not written by write_bytes: a symlink of that name leading out of
    the folder is refused as well (exit 2), the file it points to untouched."""
    from workers.exceptions import SweepFolderError

    folder, theirs = tmp_path / "leased", tmp_path / "theirs.json"
    folder.mkdir()
    theirs.write_text("not a lease")
    (folder / LEASE_FILE).symlink_to(theirs)
    with pytest.raises(SweepFolderError, match=rf"'{folder / LEASE_FILE}' must be a file or folder inside .* not a "
                                               rf"symlink out of it \(got a link to '{theirs}'\)"):
        Lease(locate(str(tmp_path), "leased")).acquire()
    assert theirs.read_text() == "not a lease" and sorted(os.listdir(folder)) == [LEASE_FILE]
