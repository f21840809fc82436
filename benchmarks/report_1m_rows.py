"""Report generation on a dataset of >= 1,000,000 rows (acceptance: well under a minute on 2 cores).

    .venv/bin/python benchmarks/report_1m_rows.py [--out DIR] [--keep]

Runs the real sweep benchmarks/report_1m_rows.toml with `memsweep run --no-report`
(embedded Ray; skipped when DIR already holds it, since a rerun resumes), then
times `analysis.report.page.write_report` on it in this process and prints a
Markdown row: rows, parts, wall seconds of the report, figures drawn.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "benchmarks" / "report_1m_rows.toml"
SWEEP = "report-1m-rows"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="dataset folder to create or reuse (default: a temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary dataset")
    a = ap.parse_args()
    out = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="memsweep-report-bench-"))
    try:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "sweeps.cli", "run", str(SPEC), "--out", str(out), "--no-report",
                        "--quiet"], check=True, cwd=ROOT)
        sweep_s = time.perf_counter() - t0
        sweep_dir = out / SWEEP
        files = sorted(sweep_dir.glob("model=*/part-*.parquet"))
        rows, parts = sum(pq.read_metadata(f).num_rows for f in files), len(files)

        from analysis.report.page import write_report

        t1 = time.perf_counter()
        page = write_report(str(sweep_dir))
        report_s = time.perf_counter() - t1
        figures = page and Path(page).read_text().count('class="memsweep-figure"')
        print(f"sweep (memsweep run, not part of the figure): {sweep_s:.1f} s; report: {page}")
        print("| rows | parts | CPUs | report s | figures |")
        print("|---|---|---|---|---|")
        print(f"| {rows:,} | {parts} | {os.cpu_count()} | {report_s:.1f} | {figures} |")
    finally:
        if not a.out and not a.keep:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
