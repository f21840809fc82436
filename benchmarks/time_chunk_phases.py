"""Where a modeled chunk's time goes, phase by phase, for one chunk of each model of a spec.

    .venv/bin/python benchmarks/time_chunk_phases.py [--spec large] [--repeat 3]

In this process, no Ray: a chunk's points decoded (sweeps.spec.grid.decode), the model evaluated
(workers.evaluate), its evidence labels (workers.evidence.label), its error bars (workers.interval.bars:
the model again under every refit), the three put side by side (as workers.modeled.rows does),
then the task's whole frame (sweeps.run.task.chunk_frame, untimed: it repeats the phases above) made an
Arrow table (workers.dataset.part_table) and encoded as Parquet (sweeps.run.store.parquet_bytes, zstd).
It prints one Markdown row per model, with the spec's chunk count of that model, so that count x the row's
total estimates the sweep's CPU time.
Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import polars as pl

from sweeps.run.cost import plan_run
from sweeps.run.store import locate, parquet_bytes
from sweeps.run.task import TaskConfig, chunk_frame
from sweeps.spec.grid import decode
from sweeps.spec.load import load_spec
from workers import evaluate, evidence, get_model, interval
from workers.dataset import part_table


REPEAT = 1  # --repeat: the encoding phases' least time over that many runs (a shared machine's noise is one-sided)


def timed(fn, *args, repeat: int = 1):
    """fn(*args) and its least time over `repeat` runs (more than one only for what keeps no cache: the
    model, its labels and its bars remember a chunk's points, workers.keys.LastPoints)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t0)
    return out, best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="large")
    ap.add_argument("--repeat", type=int, default=1,
                    help="time the Arrow and Parquet phases this many times, keep the least")
    a = ap.parse_args()
    global REPEAT
    REPEAT = a.repeat
    spec = load_spec(a.spec)
    chunks = plan_run(spec, tempfile.gettempdir(), cpus=os.cpu_count() or 1).chunks  # as the driver would
    first = {}
    for c in chunks:
        first.setdefault(c.model, c)
    cfg = TaskConfig.for_spec(spec, locate(tempfile.mkdtemp(prefix="memsweep-phases-"), spec.name))
    print(f"{a.spec}: {spec.total_points:,} points in {len(chunks)} chunks; load {os.getloadavg()[0]:.2f}")
    print("| model | chunks | points | evaluate s | labels s | bars s (refits) | frame s | arrow s | parquet s "
          "| chunk s | points/s | bytes/row |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    total = 0.0
    for name, c in first.items():
        model = get_model(name)
        points, _ = timed(decode, cfg.grids[name], c.start, c.stop)
        params = points.drop("point_id")
        rows, t_eval = timed(evaluate, model, params, cfg.profile)
        labels, t_labels = timed(evidence.label, model, cfg.profile, rows)
        bars, t_bars = timed(interval.bars, model, cfg.profile, rows, labels["evidence"])
        _, t_frame = timed(lambda: pl.concat([rows, bars, labels], how="horizontal"))
        frame = chunk_frame(cfg, c, "node")
        table, t_arrow = timed(part_table, frame, repeat=REPEAT)
        _, t_parquet = timed(parquet_bytes, table, repeat=REPEAT)
        whole = t_eval + t_labels + t_bars + t_frame + t_arrow + t_parquet
        n_chunks = sum(1 for k in chunks if k.model == name)
        refits = len(interval.stated(model, cfg.profile).refits)
        total += whole * n_chunks
        print(f"| {name} | {n_chunks} | {frame.height:,} | {t_eval:.2f} | {t_labels:.2f} | {t_bars:.2f} ({refits}) "
              f"| {t_frame:.2f} | {t_arrow:.2f} | {t_parquet:.2f} | {whole:.2f} | {frame.height / whole:,.0f} "
              f"| {frame.estimated_size() / max(frame.height, 1):.0f} |", flush=True)
    print(f"\nestimated CPU time of the sweep's chunks: {total:.0f} s ({total / 2:.0f} s on 2 CPUs)")


if __name__ == "__main__":
    main()
