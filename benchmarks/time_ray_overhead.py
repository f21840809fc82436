"""Ray overhead of a sweep: how much of the execution is not spent inside tasks.

    .venv/bin/python benchmarks/time_ray_overhead.py [--spec default] [--cpus N]

Runs the spec on an embedded Ray in this process (fresh output folder, no
report) and splits its wall time into Ray start-up, worker start-up (the first
task on each CPU waits ~1 s for its worker process to boot; measured with
no-op tasks before the sweep), the execution phase, and within that the tasks'
own time (decode + evaluate + write, summed over tasks and divided by the
CPUs). Overhead = execution wall - task time / CPUs: task scheduling, object
transfer, result collection, and idle CPUs at the tail.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import ray

from sweeps.run.driver import init_ray, run
from sweeps.spec.load import load_spec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="default")
    ap.add_argument("--cpus", type=int, default=None, help="CPUs of the embedded Ray (default: all)")
    a = ap.parse_args()
    spec = load_spec(a.spec)
    t0 = time.perf_counter()
    init_ray(None, a.cpus)
    init_s = time.perf_counter() - t0
    cpus = int(ray.cluster_resources()["CPU"])
    t1 = time.perf_counter()
    ray.get([_noop.remote() for _ in range(cpus)])
    workers_s = time.perf_counter() - t1
    with tempfile.TemporaryDirectory(prefix="memsweep-bench-") as tmp:
        s = run(spec, tmp, fresh=True, progress=False)
    ray.shutdown()
    total = init_s + workers_s + s.seconds
    ideal = s.task_seconds / s.cpus
    overhead = s.exec_seconds - ideal
    print("| spec | points | chunks | CPUs | Ray start s | worker start s | execution s | task time / CPUs s "
          "| overhead s | overhead % of sweep wall |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {spec.name} | {s.points:,} | {s.chunks} | {s.cpus} | {init_s:.2f} | {workers_s:.2f} | "
          f"{s.exec_seconds:.2f} | {ideal:.2f} | {overhead:.2f} | {100 * overhead / total:.1f}% |")


@ray.remote
def _noop() -> None:
    """Nothing: its first call on each CPU measures the worker's start-up."""


if __name__ == "__main__":
    main()
