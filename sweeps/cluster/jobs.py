"""`memsweep submit`: run a sweep on a Ray cluster as a batch job (Ray Jobs SDK).

The job's working directory is a staging copy of the project's three packages
plus the spec, so a node needs only Python with the dependencies installed.
The job runs `python -m sweeps.cli run spec.toml --address auto --out OUT`.
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
import time
from pathlib import Path

from sweeps.exceptions import UsageError
from sweeps.run.provenance import PROJECT_ROOT
from sweeps.run.ray_env import RUNTIME_ENV
from sweeps.spec.load import load_spec, portable_spec

PACKAGES = ("sweeps", "workers", "analysis")
TERMINAL = {"SUCCEEDED", "FAILED", "STOPPED"}
AGENT_WAIT_S = 60.0


def stage(spec: str, dest: Path, plugins: tuple[str, ...]) -> None:
    """Copy the packages, the spec (with the profile file it names) and any plugin packages into `dest`."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for pkg in PACKAGES:
        shutil.copytree(PROJECT_ROOT / pkg, dest / pkg, ignore=ignore)
    for plugin in plugins:
        top = plugin.split(".")[0]
        if top not in PACKAGES and (PROJECT_ROOT / top).is_dir() and not (dest / top).exists():
            shutil.copytree(PROJECT_ROOT / top, dest / top, ignore=ignore)
    text, files = portable_spec(spec)
    (dest / "spec.toml").write_text(text)
    for name, data in files.items():
        (dest / name).write_bytes(data)


def submit(spec: str, address: str, out: str, *, wait: bool) -> int:
    """Submit; with wait, follow the job to its end and return 0 only if it succeeded."""
    from ray.job_submission import JobSubmissionClient

    if not address.startswith(("http://", "https://")):
        raise UsageError(f"'--address' must be the cluster's Jobs address, http://HEAD:8265 (got {address!r}).")
    parsed = load_spec(spec)  # validate here: a bad spec never reaches the cluster
    try:
        client = JobSubmissionClient(address)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise UsageError(f"'--address' must reach a Ray cluster's Jobs API (got {address!r}: {e}).") from None
    with tempfile.TemporaryDirectory(prefix="memsweep-job-") as tmp:
        stage(spec, Path(tmp), parsed.plugins)
        entrypoint = (
            "python -m sweeps.cli run spec.toml "
            f"--address auto --out {shlex.quote(out)} --quiet"
        )
        job_id = _submit_when_ready(client, entrypoint=entrypoint, runtime_env={"working_dir": tmp, **RUNTIME_ENV},
                                    metadata={"memsweep_sweep": parsed.name})
    print(f"submitted {parsed.name} as job {job_id} to {address}")
    if not wait:
        print(f"follow it with: ray job logs --address {address} --follow {job_id}")
        return 0
    status = _wait(client, job_id)
    print(client.get_job_logs(job_id), end="")
    print(f"job {job_id}: {status}")
    return 0 if status == "SUCCEEDED" else 1


def _submit_when_ready(client, **job) -> str:
    """submit_job, retried while the head's job agent is still starting (a cluster just started
    answers "No available agent to submit job, please try again later")."""
    deadline = time.monotonic() + AGENT_WAIT_S
    while True:
        try:
            return client.submit_job(**job)
        except RuntimeError as e:
            if "No available agent" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(1.0)


def _wait(client, job_id: str) -> str:
    while True:
        status = str(client.get_job_status(job_id)).rsplit(".", 1)[-1]
        if status in TERMINAL:
            return status
        time.sleep(1.0)
