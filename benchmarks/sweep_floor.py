"""The least a sweep of SPEC can cost as memsweep runs it, against the yardstick of benchmarks/yardstick.py.

    .venv/bin/python benchmarks/sweep_floor.py [--spec large]

In this process, every chunk of the spec as the driver chunks it for this machine's CPUs (sweeps.run.cost),
one after another (warm: the first chunk of each model is done twice, the second time timed), in two ways:

- the model's own rows: the chunk's points decoded (sweeps.spec.grid.decode), the model evaluated
  (workers.evaluate) and those columns alone, with point_id, made Arrow and Parquet with the parts' options
  (workers.dataset.parquet_options): no evidence, no error bars, no identity or provenance;
- the whole part, as a task writes it (sweeps.run.task.chunk_frame, part_table, evidence_entries, Parquet).

Before them the yardstick (three times: the ratios use its median) and the embedded Ray's start
(sweeps.run.driver.init_ray, then shut down). The floor is Ray's start plus the model's own rows' CPU time
spread evenly over this machine's CPUs: what a sweep that stored nothing but the model's answers would take
at the least, with no scheduling cost. Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import time

import pyarrow.parquet as pq
import ray

from sweeps.run.cost import plan_run
from sweeps.run.driver import init_ray
from sweeps.run.store import locate, parquet_bytes
from sweeps.run.task import TaskConfig, chunk_frame, evidence_entries
from sweeps.spec.grid import decode
from sweeps.spec.load import load_spec
from workers import evaluate, get_model
from workers.dataset import parquet_options, part_table
from yardstick import yardstick  # benchmarks/, beside this script


def own_rows(cfg: TaskConfig, chunk) -> None:
    """The model's answers of one chunk, encoded as a part would be: nothing the model did not compute."""
    points = decode(cfg.grids[chunk.model], chunk.start, chunk.stop)
    rows = evaluate(get_model(chunk.model), points.drop("point_id"), cfg.profile)
    table = rows.with_columns(points["point_id"]).to_arrow()
    pq.write_table(table, io.BytesIO(), **parquet_options(table.schema))


def whole_part(cfg: TaskConfig, chunk) -> None:
    """One chunk's part as sweeps.run.task.run_chunk encodes it (not written to disk)."""
    frame = chunk_frame(cfg, chunk, "node")
    evidence_entries(frame)
    parquet_bytes(part_table(frame))


def cpu_seconds(fn, cfg: TaskConfig, chunks) -> float:
    """Seconds of `fn` over every chunk, each model's first chunk run once before to warm its caches."""
    for model in dict.fromkeys(c.model for c in chunks):
        fn(cfg, next(c for c in chunks if c.model == model))
    t0 = time.perf_counter()
    for c in chunks:
        fn(cfg, c)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="large")
    a = ap.parse_args()
    spec = load_spec(a.spec)
    cpus = os.cpu_count() or 1
    chunks = plan_run(spec, tempfile.gettempdir(), cpus=cpus).chunks  # as the driver chunks it here
    print(f"{a.spec}: {spec.total_points:,} points in {len(chunks)} chunks; {cpus} CPUs; "
          f"load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="memsweep-floor-") as tmp:
        # first: after the chunks' work it measured 8.7 and 9.6 s on large, 5.2-6.2 s first; three times, as it varies
        sticks = []
        for _ in range(3):
            sticks.append(yardstick(spec.total_points, tmp))
            os.remove(os.path.join(tmp, "yardstick.parquet"))
        stick = statistics.median(sticks)
        t0 = time.perf_counter()
        init_ray(None, cpus)
        start = time.perf_counter() - t0
        ray.shutdown()
        cfg = TaskConfig.for_spec(spec, locate(tmp, spec.name))
        own = cpu_seconds(own_rows, cfg, chunks)
        whole = cpu_seconds(whole_part, cfg, chunks)
    floor = start + own / cpus
    print("| yardstick s (median of 3: least-most) | Ray start s | model's own rows CPU s | whole parts CPU s "
          "| floor s | floor / yardstick | whole parts / CPUs + Ray start, / yardstick |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {stick:.1f} ({min(sticks):.1f}-{max(sticks):.1f}) | {start:.1f} | {own:.1f} | {whole:.1f} "
          f"| {floor:.1f} | {floor / stick:.2f} | {(start + whole / cpus) / stick:.2f} |")


if __name__ == "__main__":
    main()
