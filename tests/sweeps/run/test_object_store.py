"""A sweep on an object store: parts PUT whole through pyarrow's S3 filesystem, to an
S3-compatible server (moto's) on loopback; verify, resume and report work on the URI."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.fs as pafs
import pytest

import analysis
from tests.cluster_util import free_port
from tests.conftest import S3_CREDS as CREDS
from tests.conftest import memsweep, memsweep_here

SPEC = """name = "s3sweep"
models = ["memmap", "young"]
chunk_points = 8
[axes]
namespace_size = ["1GiB", "100GiB"]
[axes.memmap]
strategy = ["slow", "template", "template_nt", "template_nt_inline"]
"""


@pytest.fixture
def s3(monkeypatch):
    """An S3-compatible server on 127.0.0.1 with one bucket; yields (env, options query, its filesystem). The
    credentials are in `env` for a memsweep process, and in this process's environment for one run here (the
    session's Ray workers have them: tests/conftest.py)."""
    for k, v in CREDS.items():
        monkeypatch.setenv(k, v)
    port = free_port()
    server = subprocess.Popen([str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"127.0.0.1:{port}"
    fs = pafs.S3FileSystem(endpoint_override=endpoint, scheme="http", region="us-east-1", allow_bucket_creation=True,
                           access_key=CREDS["AWS_ACCESS_KEY_ID"], secret_key=CREDS["AWS_SECRET_ACCESS_KEY"])
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                fs.create_dir("sweeps")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield {**os.environ, **CREDS}, f"endpoint_override={endpoint}&scheme=http&region=us-east-1", fs
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_sweep_verify_resume_and_report_on_s3(s3, ray_local, spec_file):
    """run (a memsweep process) -> verify -> rerun (all skipped; on this session's Ray) -> report, all against
    an s3:// URI; analysis.scan reads it."""
    env, query, fs = s3
    spec = str(spec_file(SPEC))
    out = f"s3://sweeps/team?{query}"
    first = memsweep("run", spec, "--out", out, "--quiet", env=env)
    assert first.returncode == 0, first.stderr
    assert "report: s3://sweeps/team/s3sweep/_report/report.html?" in first.stdout
    sweep = f"s3://sweeps/team/s3sweep?{query}"
    check = memsweep_here("verify", sweep)
    assert check.returncode == 0 and "s3sweep: 2 parts, 10 rows, 10 distinct points" in check.stdout, check.stdout
    again = memsweep_here("run", spec, "--out", out, "--quiet", "--no-report")
    assert "(0 computed, 2 skipped, 0 failed)" in again.stdout, again.stdout + again.stderr
    names = {i.base_name for i in fs.get_file_info(pafs.FileSelector("sweeps/team/s3sweep", recursive=True))}
    assert {"_manifest.json", "_spec.toml", "report.html"} <= names
    assert not any(n.startswith(".tmp-") for n in names)  # object stores get one PUT, no temp names
    rows = analysis.scan(sweep).collect()
    assert rows.height == 10 and set(rows["model"]) == {"memmap", "young"}
    assert analysis.scan(sweep, model="young").collect().height == 2
