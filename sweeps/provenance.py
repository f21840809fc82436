"""Where rows were computed: host, CPU, memsweep version, git commit (one function each)."""

from __future__ import annotations

import functools
import platform
import socket
import subprocess
from importlib import metadata
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (platform.processor() as a fallback)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "cpu model", "hardware")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@functools.cache
def memsweep_version() -> str:
    try:
        return metadata.version("memsweep")
    except metadata.PackageNotFoundError:
        return "unknown"


@functools.cache
def git_sha() -> str:
    """The project's commit, or "" outside a git checkout (e.g. a Ray job's working dir)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=5, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def host_provenance() -> dict[str, str]:
    """The env_* values of the machine this runs on (node id is added by the Ray task)."""
    return {
        "env_host": socket.gethostname(),
        "env_cpu_model": cpu_model(),
        "env_memsweep_version": memsweep_version(),
    }
