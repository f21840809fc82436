"""The `large` sweep and its report against one Parquet write of as many rows: the yardstick and two ratios.

    .venv/bin/python benchmarks/yardstick.py [--spec large] [--runs 1]

The yardstick is pyarrow writing N rows x 16 float64 columns (random, so zstd has work to do) to one
Parquet file with zstd, N the spec's point count: what writing the sweep's rows costs at the least. Then,
per run, `memsweep run SPEC --fresh --no-report` and `memsweep report` on it, each in a fresh interpreter
(wall time, peak resident memory of the process). It prints one Markdown row per run for
benchmarks/RESULTS.md, with the load average before the run. Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sweeps.spec.load import load_spec
from time_pipeline import run_measured  # benchmarks/, beside this script

COLUMNS = 16


def yardstick(rows: int, folder: str) -> float:
    """Seconds pyarrow takes to write `rows` x COLUMNS float64 with zstd (the data made beforehand)."""
    rng = np.random.default_rng(35)
    table = pa.table({f"c{i}": rng.random(rows) for i in range(COLUMNS)})
    t0 = time.perf_counter()
    pq.write_table(table, os.path.join(folder, "yardstick.parquet"), compression="zstd")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="large")
    ap.add_argument("--runs", type=int, default=1)
    a = ap.parse_args()
    spec = load_spec(a.spec)
    print(f"{a.spec}: {spec.total_points:,} points; {os.cpu_count()} CPUs", file=sys.stderr)
    print("| run | load (1 min) | yardstick s | sweep s | sweep / yardstick | report s | report / yardstick "
          "| report peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for run in range(1, a.runs + 1):
        with tempfile.TemporaryDirectory(prefix="memsweep-yardstick-") as tmp:
            load = os.getloadavg()[0]
            stick = yardstick(spec.total_points, tmp)
            os.remove(os.path.join(tmp, "yardstick.parquet"))
            sweep_s, _, out = run_measured(["run", a.spec, "--out", tmp, "--fresh", "--no-report", "--quiet"])
            name = re.search(r"^(\S+): \d+ points", out, re.M).group(1)
            report_s, report_rss, _ = run_measured(["report", f"{tmp}/{name}"])
        print(f"| {run} | {load:.2f} | {stick:.1f} | {sweep_s:.1f} | {sweep_s / stick:.2f} | {report_s:.1f} | "
              f"{report_s / stick:.2f} | {report_rss / 2**20:.0f} |", flush=True)


if __name__ == "__main__":
    main()
