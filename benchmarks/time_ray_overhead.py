"""Ray overhead of a sweep: how much of the execution is not spent inside tasks.

    .venv/bin/python benchmarks/time_ray_overhead.py [--spec default]

Runs the spec on an embedded Ray in this process (fresh output folder, no
report) and splits its wall time into Ray start-up, the execution phase, and
within that the tasks' own time (decode + evaluate + write, summed over tasks
and divided by the CPUs). Overhead = execution wall - task time / CPUs: task
scheduling, object transfer, result collection, and idle CPUs at the tail.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import ray

from sweeps.runner import init_ray, run
from sweeps.spec import load_spec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="default")
    a = ap.parse_args()
    spec = load_spec(a.spec)
    t0 = time.perf_counter()
    init_ray(None)
    init_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="memsweep-bench-") as tmp:
        s = run(spec, tmp, fresh=True, progress=False)
    ray.shutdown()
    total = init_s + s.seconds
    ideal = s.task_seconds / s.cpus
    overhead = s.exec_seconds - ideal
    print(f"| spec | points | chunks | CPUs | Ray start s | execution s | task time / CPUs s | overhead s | "
          f"overhead % of wall |")
    print("|---|---|---|---|---|---|---|---|---|")
    print(f"| {spec.name} | {s.points:,} | {s.chunks} | {s.cpus} | {init_s:.2f} | {s.exec_seconds:.2f} | "
          f"{ideal:.2f} | {overhead:.2f} | {100 * overhead / total:.1f}% |")


if __name__ == "__main__":
    main()
