"""Model throughput: points evaluated per second on one core, per model.

    .venv/bin/python benchmarks/time_models.py [--points 1000000] [--repeat 3]

Decodes a grid slice of N points for each shipped model (from the `large`
spec's grid, so the points are realistic), then times `workers.evaluate` on it
in this one process (one core). Prints a Markdown table for RESULTS.md.
"""

from __future__ import annotations

import argparse
import time

from sweeps.spec.grid import decode, grid_for
from sweeps.spec.load import load_spec
from workers import evaluate, get_model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--spec", default="large")
    a = ap.parse_args()
    spec = load_spec(a.spec)
    print("| model | points | best s | points/s/core | ok | infeasible | error |")
    print("|---|---|---|---|---|---|---|")
    for m in spec.models:
        grid = grid_for(spec, m)
        n = min(a.points, grid.size)
        points = decode(grid, 0, n).drop("point_id")
        best = float("inf")
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            out = evaluate(get_model(m), points, spec.profile)
            best = min(best, time.perf_counter() - t0)
        counts = dict(out["status"].value_counts().iter_rows())
        print(f"| {m} | {n:,} | {best:.3f} | {n / best:,.0f} | {counts.get('ok', 0):,} | "
              f"{counts.get('infeasible', 0):,} | {counts.get('error', 0):,} |")


if __name__ == "__main__":
    main()
