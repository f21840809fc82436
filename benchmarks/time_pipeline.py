"""End-to-end pipeline benchmark: spec -> verified Parquet on an embedded Ray.

    .venv/bin/python benchmarks/time_pipeline.py [--spec large] [--cpus 1 2]

For each CPU count it runs `memsweep run SPEC --fresh --no-report --cpus N` in a
fresh interpreter, samples the driver's resident memory (psutil, 20 Hz), then
`memsweep verify`, then a rerun with nothing left to do. It prints a Markdown
table for benchmarks/RESULTS.md. Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent


def run_measured(args: list[str]) -> tuple[float, int, str]:
    """(wall seconds, driver peak RSS bytes, stdout) of one CLI run."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "sweeps.cli", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0

    def sample() -> None:
        nonlocal peak
        p = psutil.Process(proc.pid)
        while proc.poll() is None:
            try:
                peak = max(peak, p.memory_info().rss)
            except psutil.NoSuchProcess:
                return
            time.sleep(0.05)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    out, err = proc.communicate()
    t.join()
    if proc.returncode != 0:
        raise SystemExit(f"memsweep {' '.join(args)} failed:\n{out}\n{err}")
    return time.perf_counter() - t0, peak, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="large")
    ap.add_argument("--cpus", type=int, nargs="+", default=[1, 2])
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="memsweep-bench-") as tmp:
        for cpus in a.cpus:
            wall, rss, out = run_measured(["run", a.spec, "--out", tmp, "--fresh", "--no-report", "--quiet",
                                           "--cpus", str(cpus)])
            name = re.search(r"^(\S+): (\d+) points", out, re.M)
            sweep_dir = f"{tmp}/{name.group(1)}"
            t0 = time.perf_counter()
            verified = subprocess.run([sys.executable, "-m", "sweeps.cli", "verify", sweep_dir], cwd=ROOT,
                                      capture_output=True, text=True)
            verify_s = time.perf_counter() - t0
            rerun_s, _, rerun_out = run_measured(["run", a.spec, "--out", tmp, "--no-report", "--quiet"])
            stats = re.search(r"in ([\d.]+) s \(Ray start ([\d.]+) s, tasks ([\d.]+) s", out)
            rows.append((cpus, int(name.group(2)), wall, float(stats.group(1)), float(stats.group(3)), rss,
                         verify_s, verified.returncode, rerun_s, "0 computed" in rerun_out))
            print(out.strip(), file=sys.stderr)
    print("| CPUs | points | wall s (process) | sweep s | task phase s | driver peak RSS MiB | verify s | verify ok "
          "| no-op rerun s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for cpus, pts, wall, sweep_s, task_s, rss, vs, vrc, rerun, noop in rows:
        print(f"| {cpus} | {pts:,} | {wall:.1f} | {sweep_s:.1f} | {task_s:.1f} | {rss / 2**20:.0f} | {vs:.1f} | "
              f"{'yes' if vrc == 0 else 'NO'} | {rerun:.1f}{'' if noop else ' (recomputed!)'} |")
    if len(rows) >= 2:
        print(f"\nspeedup {rows[0][0]} -> {rows[-1][0]} CPUs: {rows[0][4] / rows[-1][4]:.2f}x (task phase), "
              f"{rows[0][3] / rows[-1][3]:.2f}x (whole sweep, Ray start included)")


if __name__ == "__main__":
    main()
