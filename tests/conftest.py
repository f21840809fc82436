"""Shared fixtures: an embedded Ray for the session, spec files, a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Ray workers import test-only models (tests.support.probe) from the project root.
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
ARTIFACTS = ROOT / "test-artifacts"
# What a test needs beyond this machine's Python and Ray, as a marker (pyproject.toml registers them;
# `make check` leaves them out): given to every test that uses the fixture providing it. The browser
# tests' modules set their marker themselves; `guest` is for tests that boot a kernel in QEMU.
NEEDS = {"slurm": "slurm", "cluster": "cluster", "s3": "object_store"}
# Fixtures that make a test `slow` (`make check` leaves it to `make test`): the seed fits of every model,
# with their leave-one-out refits, take 45 s of CPU; the shipped default sweep (about 30,000 points, all four
# models) is computed whole before its findings are read; the seed sweep and the small sweep's whole report
# are each a Ray start and a run, 14-18 s on a busy 2-core machine (the hand-built sweeps of the same
# modules' other tests stay in `make check`).
SLOW_FIXTURES = ("seed_calibration", "default_sweep", "seed_sweep", "small_report")


# The modules that take longest, started first: `make test` hands whole modules to its pytest-xdist workers
# in collection order (--no-loadscope-reorder), and a long module begun last keeps one worker busy while
# the others have nothing left (queued by their number of tests, the object-store modules came last and
# were still running when the rest had finished). Seconds per module: --durations summed per module in one
# run of the whole suite on a fresh clone (benchmarks/RESULTS.md, "Fewer Ray starts").
LONGEST_FIRST = (
    "sweeps/cluster/test_slurm.py",  # the cancel-and-resubmit test alone 132-170 s: two two-node Slurm jobs, a
    # worker's raylet aborted and started again; then a job whose worker's step ends at once
    "workers/guest/test_arm64.py",  # 160-190 s: the kernel-young spec, 16 boots of arm64 kernels, and a rerun
    "sweeps/cluster/test_jobs.py",  # 118 s: a two-node Ray cluster and two Jobs API submissions
    "sweeps/run/test_lease.py",  # 105 s: drivers signalled and killed, each with its Ray
    "sweeps/run/test_reaper.py",  # 86-98 s: a SIGKILLed driver's Ray reaped (29-31 s); a raylet abort (56-67 s);
    # since then, drivers SIGKILLed at five moments of Ray's start (the module 102 s alone on a busy 2-core host)
    "workers/guest/test_devmem.py",  # 60-90 s: two boots of the huge-pfnmap build and kernel-pfnmap's three
    "sweeps/run/test_kernel.py",  # 70 s: a guest sweep binding 16 namespaces in Debian's 6.12
    "sweeps/run/test_faults.py",  # 68 s: a full disk, an object store that fails, its retries
    "sweeps/run/test_failures.py",  # 53 s: a killed driver and its Ray
    "test_example_plugin.py",  # 42 s: pip installs the example plugin and runs its sweep
    "workers/models/test_pfnmap.py",  # 42 s: the seed fits of every model (once per run)
    "workers/guest/test_guest.py",  # 32 s: two boots of 6.12 (one panics before /init) and a timeout
    "sweeps/run/test_object_store.py",  # 29 s: a sweep, a resume and a report on S3
)


def pytest_collection_modifyitems(items):
    first = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: first.get(item.path.relative_to(ROOT / "tests").as_posix(), len(first)))
    for item in items:
        for fixture, marker in NEEDS.items():
            if fixture in item.fixturenames:
                item.add_marker(marker)
        if any(f in item.fixturenames for f in SLOW_FIXTURES):
            item.add_marker("slow")


# The test object store's credentials (moto's server takes any). The session's Ray workers are given them
# when it starts (ray_local), so that a sweep run in this process can write its parts there.
S3_CREDS = {"AWS_ACCESS_KEY_ID": "memsweep-test", "AWS_SECRET_ACCESS_KEY": "memsweep-test",
            "AWS_EC2_METADATA_DISABLED": "true"}


@pytest.fixture(scope="session")
def ray_local():
    """One small embedded Ray for all in-process sweeps (2 CPUs, 100 MB object store), started by the function
    that starts `memsweep run`'s (sweeps.run.embedded.start): tried again when its raylet aborts, listening on
    loopback only, with a private token file, and reaped if this process dies. Its workers' output stays in
    Ray's log files, as a `memsweep run` keeps it unless --verbose: a command run in this process
    (memsweep_here) prints what the command prints, and nothing of Ray's workers."""
    import ray

    from sweeps.run.embedded import start

    embedded = start(2, runtime_env={"env_vars": S3_CREDS}, object_store_bytes=100 * 1024 * 1024)
    yield ray
    embedded.shutdown()


def once_per_run(tmp_path_factory, key: str, make):
    """make(folder) computed once per test run, for every process of it: with pytest-xdist (`make test`),
    each worker is a process of its own; the first to ask makes the value (in `folder`, in the run's
    temporary folder that the workers share) while the others wait on a file lock, then read it
    (pickled). Without xdist, the session's own temporary folder."""
    import fcntl
    import pickle

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    value_file = shared / f"{key}.pickle"
    with open(shared / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not value_file.exists():
            folder = shared / key
            folder.mkdir(exist_ok=True)
            value_file.write_bytes(pickle.dumps(make(folder)))
        return pickle.loads(value_file.read_bytes())


@pytest.fixture(scope="session")
def seed_calibration(tmp_path_factory):
    """calibrate(model, the seed profile) of a shipped model by name, computed once per test run: each
    fit of the published figures (neutral starts, leave-one-out refits) takes seconds to a minute, and
    several modules check the same fits (with xdist, maybe on two workers at once: once_per_run)."""
    from workers import get_model
    from workers.calibrate import calibrate
    from workers.profiles import load_profile

    done = {}

    def get(name: str):
        if name not in done:
            done[name] = once_per_run(tmp_path_factory, f"seed-calibration-{name}",
                                      lambda _: calibrate(get_model(name), load_profile("seed")))
        return done[name]

    return get


@pytest.fixture
def spec_file(tmp_path):
    """Write spec text to a file and return its path."""

    def write(text: str, name: str = "spec.toml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


def memsweep(*args: str, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    """Run the memsweep CLI in a fresh interpreter (as a user would)."""
    return subprocess.run(
        [sys.executable, "-m", "sweeps.cli", *args], capture_output=True, text=True,
        timeout=timeout, cwd=kw.pop("cwd", ROOT), **kw,
    )


def memsweep_here(*args: str, cwd: Path | str | None = None) -> subprocess.CompletedProcess:
    """The memsweep CLI run in this process (sweeps.cli.main, its output captured): for commands that start
    no Ray (plan, table, compare), as memsweep() gives it, without an interpreter's start per call."""
    import contextlib
    import io

    from sweeps.cli import main

    out, err, before = io.StringIO(), io.StringIO(), os.getcwd()
    try:
        os.chdir(cwd or ROOT)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        os.chdir(before)
    return subprocess.CompletedProcess(["memsweep", *args], code, out.getvalue(), err.getvalue())


def planted(env: dict, folder: Path, code: str) -> dict:
    """`env` in which every Python process started with it first runs `code` (a sitecustomize.py on PYTHONPATH):
    a fault planted in the processes of a command, a job or a Ray node; the real ones otherwise."""
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(f"import os, time\nCMD = open('/proc/self/cmdline', 'rb').read()\n{code}")
    return {**env, "PYTHONPATH": os.pathsep.join((str(folder), env["PYTHONPATH"]))}


def manifest_of(sweep: str, parts: dict | None = None, models: dict | None = None, **more) -> dict:
    """The least manifest a hand-built sweep folder can hold (workers.dataset.manifest's required entries):
    `parts` its records (each with model, rows and status), `models` name -> {version, points}, `more` any
    other entry."""
    parts = parts or {}
    rows = sum(r["rows"] for r in parts.values())
    return {"sweep": sweep, "profile": "seed", "models": models or {}, "chunks_expected": len(parts),
            "chunks_done": len(parts), "rows": rows, "points_expected": rows, "parts": parts,
            "updated": "2026-01-01T00:00:00Z", **more}


def tree_state(path: Path) -> dict[str, tuple[int, int]]:
    """Every file below path with its size and mtime: to show a command wrote nothing."""
    return {
        str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(path.rglob("*")) if p.is_file()
    }
