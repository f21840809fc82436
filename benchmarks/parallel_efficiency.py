"""How well a finished sweep's chunks would fill N CPUs, from the seconds each part's task recorded.

    .venv/bin/python benchmarks/parallel_efficiency.py results/large [--cpus 2 8 16 32]

Reads the folder's manifest (every part's `seconds`, the task's own clock on its node: sweeps.run.task) and
schedules those chunks longest first on each CPU count, as the driver submits them (sweeps.run.cost.efficiency):
the makespan, and the work over CPUs x makespan, the share of the CPUs kept busy. Scheduling only: Ray's start,
the driver's own work between tasks and the contention of N workers for memory bandwidth are not in it, so it
is what N CPUs could do with these chunks at best. Also the seconds of each model's chunks (least, median,
most), what chunk sizing aimed at 1-2 s (sweeps.run.cost.TARGET_SECONDS).
Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict

from sweeps.run.cost import efficiency
from sweeps.run.store import locate
from workers.dataset.folder import read_manifest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", help="a sweep's folder (OUT/<sweep>) that a run finished")
    ap.add_argument("--cpus", type=int, nargs="+", default=[2, 8, 16, 32])
    a = ap.parse_args()
    manifest = read_manifest(locate(a.folder))
    parts = [p for p in (manifest or {}).get("parts", {}).values() if "seconds" in p]
    if not parts:
        print(f"{a.folder}: no manifest with per-part seconds (a run of this version writes them)", file=sys.stderr)
        sys.exit(2)
    by_model = defaultdict(list)
    for p in parts:
        by_model[p["model"]].append(p["seconds"])
    print("| model | chunks | rows per chunk (median) | chunk s: least / median / most |")
    print("|---|---|---|---|")
    for model, secs in by_model.items():
        rows = statistics.median(p["rows"] for p in parts if p["model"] == model)
        print(f"| {model} | {len(secs)} | {rows:,.0f} | {min(secs):.2f} / {statistics.median(secs):.2f} / "
              f"{max(secs):.2f} |")
    seconds = [p["seconds"] for p in parts]
    print(f"\n{len(seconds)} chunks, {sum(seconds):.1f} s of task time in all\n")
    print("| CPUs | longest-first makespan s | work / (CPUs x makespan) |")
    print("|---|---|---|")
    for n in a.cpus:
        span, busy = efficiency(seconds, n)
        print(f"| {n} | {span:.1f} | {busy:.0%} |")


if __name__ == "__main__":
    main()
