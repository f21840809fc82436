"""memsweep's lat_mem_rd -t chase at lmbench's (MAXLEN, row) pairs, optionally beside lmbench's own output.

    .venv/bin/python benchmarks/lmbench_side_by_side.py --mapping 1GiB [--working-sets 64MiB,128MiB,...]
        [--pages 4k|2m] [--repeats 5] [--cpu 0] [--clock thread|wall] [--lmbench FILE] [--save FILE.json]

`lat_mem_rd -t MAXLEN 64` allocates one MAXLEN buffer, shuffles all of its
pages and, for each row of size R, chases the first R / 4 KiB pages of that
shuffle. The same here: pfnmap points with namespace_size = MAXLEN (the
mapping) and working_set = R (the row), compound_order 0 (4 KiB pages,
MADV_NOHUGEPAGE; what a malloc'ed buffer gets under THP `madvise`) or 9,
measured by workers.measure.measure() exactly as a sweep's measured chunks
are (pinned, warm-up, round-robin, slices of 2^16 loads; `min` is
measure_min, the fastest slice). This script does not build or run lmbench:
give its output (the `size-in-MB ns` lines lat_mem_rd writes to stderr) with
--lmbench to print both figures and their ratio per row.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import polars as pl

from workers.measure.source import CHUNK_POINTS as MEASURED_CHUNK_POINTS
from workers.measure.host import machine_arch
from workers.measure.measure import measure
from workers.measure.settings import SPAN_MS, MeasureSettings
from workers.models.pfnmap import MODEL as PFNMAP
from workers.profiles import load_profile
from workers.units import MiB, format_size, parse_size

DEFAULT_WORKING_SETS = ("1MiB", "8MiB", "16MiB", "64MiB", "128MiB", "256MiB", "512MiB", "1GiB", "2GiB", "4GiB")


def frame(rows: list[dict]) -> pl.DataFrame:
    defaults = {a.name: a.default for a in PFNMAP.axes}
    return pl.DataFrame({a.column: pl.Series(a.column, [a.canonical({**defaults, **r}[a.name]) for r in rows],
                                             dtype=a.dtype) for a in PFNMAP.axes})


def read_lmbench(path: Path) -> dict[int, float]:
    """lat_mem_rd's rows {bytes: ns/load} from its output (lines `size-in-MB ns`; other lines skipped)."""
    rows = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) != 2:
            continue
        try:
            mb, ns = float(parts[0]), float(parts[1])
        except ValueError:
            continue
        rows[round(mb * MiB)] = ns
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mapping", required=True, help="lat_mem_rd's MAXLEN: the mapping chased in (e.g. 1GiB)")
    ap.add_argument("--working-sets", default=None,
                    help="comma-separated rows (default: those of 1MiB, 8MiB, 16MiB, 64MiB .. 4GiB up to MAXLEN)")
    ap.add_argument("--pages", choices=("4k", "2m"), default="4k")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--clock", choices=("thread", "wall"), default="thread")
    ap.add_argument("--span-ms", type=int, default=SPAN_MS)
    ap.add_argument("--per-call", type=int, default=MEASURED_CHUNK_POINTS,
                    help=f"points per measure() call, sampled round-robin (default {MEASURED_CHUNK_POINTS}, "
                         "a sweep's measured chunk); each holds its own mapping, so memory is per-call x MAXLEN")
    ap.add_argument("--lmbench", type=Path, default=None, help="lat_mem_rd -t output to print beside ours")
    ap.add_argument("--save", type=Path, default=None, help="write our rows as JSON here")
    a = ap.parse_args()
    mapping = parse_size(a.mapping)
    sets = a.working_sets.split(",") if a.working_sets else [s for s in DEFAULT_WORKING_SETS
                                                             if parse_size(s) <= mapping]
    sizes = [parse_size(s) for s in sets]
    rows = [{"namespace_size": mapping, "working_set": ws, "compound_order": 0 if a.pages == "4k" else 9,
             "arch": machine_arch(), "align": "1GiB", "access": "lat_mem_rd_random"} for ws in sizes]
    points = frame(rows)
    t0 = time.perf_counter()
    profile = load_profile("seed")  # pfnmap's feasibility rules, as in a sweep with profile = "seed"
    settings = MeasureSettings(repeats=a.repeats, cpu=a.cpu, span_ms=a.span_ms)
    parts = [measure(PFNMAP, points[i:i + a.per_call], profile, settings, clock=a.clock)
             for i in range(0, len(rows), a.per_call)]
    got = pl.concat(parts)
    wall = time.perf_counter() - t0
    lmb = read_lmbench(a.lmbench) if a.lmbench else {}
    print(f"<!-- memsweep chase, mapping {format_size(mapping)}, {a.pages} pages, {a.repeats} repeats, "
          f"{a.clock} clock, CPU {a.cpu}: {wall:.1f} s, load {' / '.join(f'{x:.2f}' for x in os.getloadavg())} -->")
    head = "| working set | memsweep min ns | memsweep median ns |"
    print(head + (" lmbench ns | min / lmbench | median / lmbench |" if lmb else " huge pages | status |"))
    print("|---" * (6 if lmb else 5) + "|")
    out = []
    for ws, r in zip(sizes, got.iter_rows(named=True)):
        lo, med = r["measure_min"], r["measure_median"]
        out.append({"mapping": mapping, "working_set": ws, "pages": a.pages, "min": lo, "median": med,
                    "status": r["status"], "reason": r["reason"], "lmbench": lmb.get(ws)})
        cells = f"| {format_size(ws)} | {lo or float('nan'):.1f} | {med or float('nan'):.1f} |"
        if lmb:
            ref = lmb.get(ws)
            cells += (f" {ref:.1f} | {lo / ref:.3f} | {med / ref:.3f} |" if ref and lo else " - | - | - |")
        else:
            cells += f" {r['measure_huge_pages']} | {r['status']}{': ' + r['reason'] if r['reason'] else ''} |"
        print(cells)
    if a.save:
        a.save.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
