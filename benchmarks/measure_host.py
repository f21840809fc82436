"""Measured backend on this host: the acceptance numbers of issue 7, printed as Markdown.

    .venv/bin/python benchmarks/measure_host.py [--repeats 5] [--cpu 0] [--clock thread|wall] [--span-ms 2000] [--save DIR]

1. Inline-MOVNTI memmap analog bandwidth (100 GiB fsdax namespace, map=dev) vs
   the host's streaming non-temporal write bandwidth measured by the same
   library (MOVNTI and MOVNTDQ streams over the same number of bytes).
   Target: >= 80%.
2. lat_mem_rd -t ns/load with 4 KiB and 2 MiB pages, 64 MiB .. 1 GiB, run
   twice; the 2M/4K ratio and the spread between the runs. Target: < 10%.
3. Hold-out: memmap analog times at 1..100 GiB (P = 64/80/96, both modes, all
   strategies); the memmap free costs are fit (calibrate, from neutral starts) on some
   sizes and predict the others. Target: within 15%.
The machine is shared: the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np
import polars as pl

from workers.measure.source import CHUNK_POINTS as MEASURED_CHUNK_POINTS
from workers.calibrate import calibrate, predict
from workers.measure.fit import figures_from_measured, host_profile
from workers.measure.host import host_facts, machine_arch
from workers.measure.native import Mapping, load
from workers.measure.measure import measure, pinned
from workers.measure.settings import SPAN_MS, MeasureSettings
from workers.models.memmap import MODEL as MEMMAP
from workers.models.pfnmap import MODEL as PFNMAP
from workers.profiles import load_profile
from workers.units import GiB

STRATEGIES = ("slow", "template", "template_nt", "template_nt_inline")
HOLDOUT_SIZES = (1, 2, 4, 8, 16, 32, 64, 100)  # GiB
TRAIN_SIZES = (2, 8, 32, 100)
LAT_SIZES = ("64MiB", "128MiB", "256MiB", "512MiB", "1GiB")


def frame(model, rows: list[dict]) -> pl.DataFrame:
    defaults = {a.name: a.default for a in model.axes}
    return pl.DataFrame({a.column: pl.Series(a.column, [a.canonical({**defaults, **r}[a.name]) for r in rows],
                                             dtype=a.dtype) for a in model.axes})


HOW = {"clock": "thread", "span_ms": SPAN_MS}  # set from --clock / --span-ms in main()
PROFILE = load_profile("seed")  # the models' feasibility rules, as in a sweep with profile = "seed"


def run(model, rows, repeats, cpu) -> pl.DataFrame:
    """Measure rows as a sweep's measured chunks do: MEASURED_CHUNK_POINTS points per measure() call."""
    points = frame(model, rows)
    step = MEASURED_CHUNK_POINTS
    settings = MeasureSettings(repeats=repeats, cpu=cpu, span_ms=HOW["span_ms"])
    out = [measure(model, points[i:i + step], PROFILE, settings, clock=HOW["clock"])
           for i in range(0, len(rows), step)]
    return pl.concat([points, pl.concat(out)], how="horizontal")


def load_line() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def nt_bandwidth(repeats: int, cpu: int, nbytes: int) -> dict[str, tuple[float, float]]:
    """(best, median) GB/s of the MOVNTI and MOVNTDQ streams over nbytes of pre-faulted THP memory."""
    k = load()
    k.set_clock(HOW["clock"])
    out = {}
    with pinned(cpu), Mapping(k, nbytes) as m:
        m.advise(0, nbytes, True)
        m.prefault()
        for name, vector in (("MOVNTI stream", False), ("MOVNTDQ stream", True)):
            k.nt_stream(m.addr, nbytes, vector=vector)
            gbs = [nbytes / k.nt_stream(m.addr, nbytes, vector=vector) for _ in range(repeats)]
            out[name] = (max(gbs), statistics.median(gbs))
    return out


def section_bandwidth(repeats: int, cpu: int) -> None:
    rows = [{"namespace_size": "100GiB", "mode": "fsdax", "struct_page_size": p, "nvdimm_kmsan": True, "strategy": s}
            for p in (64, 80, 96) for s in STRATEGIES]
    data = run(MEMMAP, rows, repeats, cpu)
    plans = MEMMAP.measurement.plan(data)
    nbytes = max(p.heads * p.per_compound * p.psize for p in plans)
    nt = nt_bandwidth(repeats, cpu, nbytes)
    ref_name, (_, ref) = max(nt.items(), key=lambda kv: kv[1][1])
    print("## 1. Inline-MOVNTI memmap analog vs streaming NT writes\n")
    print(f"NT write bandwidth over {nbytes / GiB:.2f} GiB (best / median of {repeats}):")
    for name, (best, med) in nt.items():
        print(f"- {name}: {best:.2f} / {med:.2f} GB/s")
    print(f"\nReference: {ref_name}, median {ref:.2f} GB/s.\n")
    print("| P | strategy | struct pages | median ms | min ms | GB/s (median) | % of reference |")
    print("|---|---|---|---|---|---|---|")
    for row, plan in zip(data.iter_rows(named=True), plans):
        written = plan.heads * plan.per_compound * plan.psize
        gbs = written / (row["measure_median"] * 1e6)
        print(f"| {plan.psize} | {row['param_strategy']} | {plan.heads * plan.per_compound:,} | "
              f"{row['measure_median']:.2f} | {row['measure_min']:.2f} | {gbs:.2f} | {100 * gbs / ref:.0f}% |")
    print()


def section_latency(repeats: int, cpu: int, save: Path | None) -> None:
    here = machine_arch()
    rows = [{"namespace_size": s, "compound_order": o, "arch": here, "align": "1GiB"}
            for s in LAT_SIZES for o in (0, 9)]
    rows += [{"namespace_size": "1GiB", "compound_order": o, "arch": here, "align": "1GiB", "access": "memcpy_seq"}
             for o in (0, 9)]
    runs = []
    for i in range(2):
        t0 = time.perf_counter()
        runs.append(run(PFNMAP, rows, repeats, cpu))
        print(f"<!-- pfnmap run {i + 1}: {time.perf_counter() - t0:.1f} s, load {load_line()} -->")
        if save:
            runs[-1].write_parquet(save / f"pfnmap_run{i + 1}.parquet")
    a, b = ([r.row(j, named=True) for j in range(len(rows))] for r in runs)
    print("## 2. lat_mem_rd -t (stride 64) ns/load, 4 KiB vs 2 MiB pages, two runs\n")
    for stat, col in (("median", "measure_median"), ("min", "measure_min")):
        print(f"{stat} of {repeats} samples per run:\n")
        print("| size | 4K run 1 | 4K run 2 | 4K spread | 2M run 1 | 2M run 2 | 2M spread | 2M/4K run 1 "
              "| 2M/4K run 2 | ratio spread | THP obtained |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        spreads = []
        for j in range(0, 2 * len(LAT_SIZES), 2):
            k4, k2 = (a[j][col], b[j][col]), (a[j + 1][col], b[j + 1][col])
            ratio = (k2[0] / k4[0], k2[1] / k4[1])
            sp = [spread(*k4), spread(*k2), spread(*ratio)]
            spreads += sp
            huge = f"{a[j + 1]['measure_huge_pages']} / {b[j + 1]['measure_huge_pages']}"
            print(f"| {rows[j]['namespace_size']} | {k4[0]:.1f} | {k4[1]:.1f} | {sp[0]:.1%} | {k2[0]:.1f} | "
                  f"{k2[1]:.1f} | {sp[1]:.1%} | {ratio[0]:.3f} | {ratio[1]:.3f} | {sp[2]:.1%} | {huge} |")
        print(f"\nLargest spread between the runs ({stat}s): {max(spreads):.1%} (target < 10%).\n")
    j = 2 * len(LAT_SIZES)
    c4, c2 = (a[j]["metric_copy_ms"], b[j]["metric_copy_ms"]), (a[j + 1]["metric_copy_ms"], b[j + 1]["metric_copy_ms"])
    print(f"memcpy_seq of 1 GiB (glibc memcpy): 4K {c4[0]:.1f} / {c4[1]:.1f} ms, 2M {c2[0]:.1f} / {c2[1]:.1f} ms "
          f"(2M/4K {c2[0] / c4[0]:.3f} / {c2[1] / c4[1]:.3f}).\n")


def spread(x: float, y: float) -> float:
    return abs(x - y) / ((x + y) / 2)


def section_holdout(repeats: int, cpu: int, save: Path | None, reuse: Path | None) -> None:
    rows = [{"namespace_size": f"{s}GiB", "mode": m, "struct_page_size": p, "nvdimm_kmsan": True, "strategy": st}
            for s in HOLDOUT_SIZES for m in ("fsdax", "devdax") for p in (64, 80, 96) for st in STRATEGIES]
    if reuse:
        data = pl.read_parquet(reuse / "memmap_holdout.parquet")
        print(f"<!-- memmap hold-out measurement reused from {reuse} -->")
    else:
        t0 = time.perf_counter()
        data = run(MEMMAP, rows, repeats, cpu)
        print(f"<!-- memmap hold-out measurement: {len(rows)} points, {time.perf_counter() - t0:.1f} s, "
              f"load {load_line()} -->")
    if save:
        data.write_parquet(save / "memmap_holdout.parquet")
    print("## 3. Hold-out: a profile fit on some sizes predicts the others\n")
    for statistic in ("median", "min"):
        holdout(data, statistic)


def holdout(data: pl.DataFrame, statistic: str) -> None:
    figs = figures_from_measured(MEMMAP, data, statistic=statistic)
    train = [f for f in figs if f.params["namespace_size"] // GiB in TRAIN_SIZES]
    test = [f for f in figs if f.params["namespace_size"] // GiB not in TRAIN_SIZES]
    base = host_profile(load_profile("seed"), host_facts())
    t0 = time.perf_counter()
    cal = calibrate(MEMMAP, base, figures=train, free=MEMMAP.calibration.free_for_measured)
    fit_s = time.perf_counter() - t0
    pred = predict(MEMMAP, test, cal.profile)
    err = np.array([(p - f.published) / f.published for p, f in zip(pred, test)])
    print(f"### Figures = the {statistic} of each point's repeats\n")
    print(f"Fit on {len(train)} measured points at {', '.join(f'{s} GiB' for s in TRAIN_SIZES)} "
          f"(calibrate from neutral starts, {fit_s:.0f} s): " + ", ".join(f"{k[1]} = {v:.3g}" for k, v in cal.fitted.items())
          + f"; max error on the fitted points {cal.max_error:.1%}, max leave-one-out {cal.max_loo_error:.1%}.\n")
    print(f"Predicted {len(test)} points at the other sizes: max |error| {np.abs(err).max():.1%}, "
          f"median {np.median(np.abs(err)):.1%}, within 15%: {np.mean(np.abs(err) <= 0.15):.0%}; "
          "without the 1 GiB points (memmap <= 24 MiB, inside the 32 MiB L3): max |error| "
          f"{max(abs(e) for f, e in zip(test, err) if f.params['namespace_size'] > GiB):.1%}.\n")
    print("| mode | P | strategy | " + " | ".join(f"{s} GiB" for s in HOLDOUT_SIZES if s not in TRAIN_SIZES) + " |")
    print("|---|---|---|" + "---|" * (len(HOLDOUT_SIZES) - len(TRAIN_SIZES)))
    cells: dict[tuple, list[str]] = {}
    for f, p, e in zip(test, pred, err):
        key = (f.params["mode"], f.params["struct_page_size"], f.params["strategy"])
        cells.setdefault(key, []).append(f"{f.published:.2f} / {p:.2f} ({e:+.0%})")
    for (mode, psize, strategy), values in cells.items():
        print(f"| {mode} | {psize} | {strategy} | " + " | ".join(values) + " |")
    print("\n(cells: measured ms / predicted ms (error))\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--clock", choices=("thread", "wall"), default="thread",
                    help="time by the measuring thread's CPU time (default) or by wall clock")
    ap.add_argument("--span-ms", type=int, default=SPAN_MS,
                    help=f"least time the round-robin of each 8-point chunk lasts (default {SPAN_MS}, as specs)")
    ap.add_argument("--save", type=Path, default=None, help="write the measured frames as Parquet here")
    ap.add_argument("--only", choices=("bandwidth", "latency", "holdout"), default=None)
    ap.add_argument("--reuse", type=Path, default=None,
                    help="refit the hold-out from DIR/memmap_holdout.parquet (a --save of an earlier run)")
    a = ap.parse_args()
    HOW.update(clock=a.clock, span_ms=a.span_ms)
    if a.save:
        a.save.mkdir(parents=True, exist_ok=True)
    facts = host_facts()
    t0 = time.perf_counter()
    print("# memsweep measure backend on this host\n")
    print(", ".join(f"{k} = {v}" for k, v in facts.items()) + f"; {os.cpu_count()} CPUs; pinned to CPU {a.cpu}; "
          f"{a.repeats} repeats after 1 warm-up, rounds spanning at least {a.span_ms} ms; {a.clock} clock.\n")
    print(f"Load average (1/5/15 min) at start: {load_line()}\n")
    if a.only in (None, "bandwidth"):
        section_bandwidth(a.repeats, a.cpu)
    if a.only in (None, "latency"):
        section_latency(a.repeats, a.cpu, a.save)
    if a.only in (None, "holdout"):
        section_holdout(a.repeats, a.cpu, a.save, a.reuse)
    print(f"Load average at end: {load_line()}; wall time {time.perf_counter() - t0:.0f} s.")


if __name__ == "__main__":
    main()
