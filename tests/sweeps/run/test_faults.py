"""Faults end in one clear message (exit 3) and leave nothing half-written: a full disk while a
sweep or a report is written, an object store that fails PUTs for a while or for good.

The commands run in this process (memsweep_here), the sweeps on the session's Ray: each memsweep process
would start a Ray of its own, and what is checked here is what the command prints, returns and leaves."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from sweeps.run.inspect import verify
from sweeps.run.driver import run
from sweeps.spec.load import parse_spec
from tests.conftest import memsweep_here
from tests.support.faulty_proxy import FaultyProxy
from tests.sweeps.run.test_object_store import SPEC as S3_SPEC
from tests.sweeps.run.test_object_store import s3  # noqa: F401 - the moto server fixture
from workers.dataset import LEASE_FILE

EXIT_IO = 3
MANY = """name = "many"
models = ["probe"]
plugins = ["tests.support.probe"]
chunk_points = 10
[axes.probe]
i = { from = 0, to = 999, step = 1 }
"""


@pytest.fixture
def tmpfs(tmp_path):
    """mount_tmpfs(size) -> a fresh tmpfs folder of that size (root only), unmounted at the end."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        folder = tmp_path / f"tmpfs{len(mounted)}"
        folder.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(folder)
        return folder

    yield mount
    for folder in reversed(mounted):
        subprocess.run(["umount", "-l", str(folder)], check=False)


def leftovers(folder: Path) -> list[str]:
    """Temporary files and the lease: what a failed command must not leave behind."""
    return [str(p) for p in folder.rglob("*") if p.name.startswith(".tmp") or p.name == LEASE_FILE]


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.slow
def test_run_into_a_full_disk_stops_with_exit_3_and_resumes_with_space(ray_local, spec_file, tmpfs, tmp_path):
    """No space while parts are written: exit 3, one line, no temp files; with space, the rerun computes
    only the chunks not written, and the sweep verifies."""
    spec = spec_file(MANY)
    small = tmpfs("400k")
    full = memsweep_here("run", str(spec), "--out", str(small), "--quiet", "--no-report")
    assert full.returncode == EXIT_IO, full.stdout + full.stderr
    line = one_line(full.stderr)
    assert line.startswith("memsweep run: I/O failure: writing ") and str(small / "many") in line
    assert "no space left on device" in line and "finished chunks are kept" in line
    assert leftovers(small) == []
    # the folder stays readable. The final manifest cannot be written on a full disk: status reads the one a
    # periodic write saved before the disk filled ("chunks: N of 100 done") or, when none came (the disk
    # fills in less than 5 s on a quiet machine), the parts it finds ("probe: N parts, M rows")
    status = memsweep_here("status", str(small / "many"))
    assert status.returncode == 0 and re.search(r"^(chunks: \d+ of 100 done|  probe: \d+ parts, \d+ rows)$",
                                                status.stdout, re.M), status.stdout

    roomy = tmp_path / "roomy"
    shutil.copytree(small, roomy)  # the same files, on a disk with space
    kept = len(list((roomy / "many" / "model=probe").glob("*.parquet")))
    again = run(parse_spec(MANY), str(roomy), progress=False)
    assert kept > 0 and not again.failed and (again.skipped, again.computed) == (kept, 100 - kept)
    problems, summary = verify(str(roomy / "many"))
    assert problems == [] and "100 parts, 1000 rows, 1000 distinct points" in summary, summary


@pytest.mark.slow
def test_report_into_a_full_disk_exits_3_and_leaves_no_half_written_files(ray_local, tmpfs, tmp_path):
    """No space while the report is written: exit 3, one line, no temp files, no partial report."""
    run(parse_spec(S3_SPEC), str(tmp_path), progress=False)
    small = tmpfs("400k")
    shutil.copytree(tmp_path / "s3sweep", small / "s3sweep")
    free = shutil.disk_usage(small).free
    (small / "filler").write_bytes(b"\0" * max(0, free - 16 * 1024))  # leave 16 KiB
    failed = memsweep_here("report", str(small / "s3sweep"))
    assert failed.returncode == EXIT_IO, failed.stdout + failed.stderr
    line = one_line(failed.stderr)
    assert line.startswith("memsweep report: I/O failure: writing ") and "no space left on device" in line
    assert leftovers(small) == []
    assert not (small / "s3sweep" / "_report").exists() or not any((small / "s3sweep" / "_report").iterdir())
    (small / "filler").unlink()
    ok = memsweep_here("report", str(small / "s3sweep"), "--out", str(tmp_path / "elsewhere") + "/")
    assert ok.returncode == 0 and (tmp_path / "elsewhere" / "report.html").stat().st_size > 0, ok.stderr


@pytest.fixture
def s3_proxy(s3):  # noqa: F811 - the fixture imported above
    """The moto server behind a fault-injecting proxy: (env, proxy, query through the proxy, fs)."""
    env, query, fs = s3
    upstream = int(query.split("endpoint_override=127.0.0.1:")[1].split("&")[0])
    proxy = FaultyProxy(upstream)
    try:
        yield env, proxy, query.replace(f"127.0.0.1:{upstream}", f"127.0.0.1:{proxy.port}"), fs
    finally:
        proxy.close()


def test_object_store_put_failures_are_retried_and_the_sweep_completes(ray_local, s3_proxy, spec_file):
    """SlowDown on the first PUTs, beyond the AWS SDK's own retries: memsweep retries, the sweep completes."""
    _, proxy, query, _ = s3_proxy
    proxy.fail_puts = 7
    done = memsweep_here("run", str(spec_file(S3_SPEC)), "--out", f"s3://sweeps/team?{query}", "--quiet",
                         "--no-report")
    assert done.returncode == 0, done.stderr
    assert proxy.failed == 7
    check = memsweep_here("verify", f"s3://sweeps/team/s3sweep?{query}")
    assert check.returncode == 0, check.stdout


def test_persistent_object_store_failure_stops_with_one_message_and_keeps_what_was_written(ray_local, s3_proxy,
                                                                                            spec_file):
    """Every PUT of young's part fails: exit 3 with one line; memmap's part and the manifest are intact."""
    _, proxy, query, fs = s3_proxy
    spec = str(spec_file(S3_SPEC))
    proxy.fail_puts_matching = "young"
    failed = memsweep_here("run", spec, "--out", f"s3://sweeps/team?{query}", "--quiet", "--no-report")
    assert failed.returncode == EXIT_IO, failed.stdout + failed.stderr
    line = one_line(failed.stderr)
    assert line.startswith("memsweep run: I/O failure: writing s3://sweeps/team/s3sweep/model=young/part-")
    assert "failed after 5 tries" in line and "SLOW_DOWN" in line and "the 1 finished chunks are kept" in line
    names = {i.path for i in fs.get_file_info(pafs.FileSelector("sweeps/team/s3sweep", recursive=True))}
    [memmap_part] = [n for n in names if "model=memmap/part-" in n]
    with fs.open_input_file(memmap_part) as f:
        assert pq.read_table(f).num_rows == 8
    assert "sweeps/team/s3sweep/_manifest.json" in names and "sweeps/team/s3sweep/_lease.json" not in names

    proxy.fail_puts_matching = None
    again = memsweep_here("run", spec, "--out", f"s3://sweeps/team?{query}", "--quiet", "--no-report")
    assert again.returncode == 0 and "(1 computed, 1 skipped, 0 failed)" in again.stdout, again.stderr
    assert memsweep_here("verify", f"s3://sweeps/team/s3sweep?{query}").returncode == 0
