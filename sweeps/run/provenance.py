"""Where rows were computed: host, CPU, caches, TLB, THP mode, kernel, memsweep version, git commit."""

from __future__ import annotations

import functools
import socket
import subprocess
from importlib import metadata
from pathlib import Path

from workers.measure.host import host_facts

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # sweeps/run/provenance.py -> the project


@functools.cache
def memsweep_version() -> str:
    try:
        return metadata.version("memsweep")
    except metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def git_sha() -> str:
    """The project's commit, or "" when memsweep does not run from its own git checkout (installed from a wheel,
    a Ray job's working dir): a site-packages inside some other repository is not that repository's code."""
    try:
        out = subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), "rev-parse", "--show-toplevel", "HEAD"],
            capture_output=True, text=True, timeout=5, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    lines = out.stdout.split()
    if out.returncode != 0 or len(lines) != 2 or Path(lines[0]).resolve() != PROJECT_ROOT:
        return ""
    return lines[1]


@functools.cache
def host_provenance() -> dict[str, str | int | None]:
    """The env_* values of the machine this runs on (node id and git sha are added by the Ray task):
    text, and the cache sizes and TLB size as integers (None when the host does not say)."""
    facts = host_facts()
    return {
        "env_host": socket.gethostname(),
        "env_cpu_model": facts["cpu_model"],
        "env_caches": f"L1d {facts['l1d_bytes']} B, L2 {facts['l2_bytes']} B, L3 {facts['l3_bytes']} B",
        **{f"env_{k}": _count(facts[k]) for k in ("l1d_bytes", "l2_bytes", "l3_bytes", "tlb_4k_entries")},
        "env_thp_mode": facts["thp_mode"],
        "env_kernel_release": facts["kernel_release"],
        "env_memsweep_version": memsweep_version(),
    }


def _count(fact: str) -> int | None:
    """A host fact as an integer column value: None for "unknown"."""
    return int(fact) if fact.isdigit() else None
