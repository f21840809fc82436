"""What the readers' check of a sweep folder against its manifest costs (workers/dataset/parts.py), beside what reading
the folder costs anyway.

    .venv/bin/python benchmarks/time_part_check.py OUT/SWEEP [--repeat N]

Prints, per run, the wall and CPU seconds of: check_parts with checksums (what every reader does on a local
folder: every byte read and hashed, every footer parsed), check_parts without them (sizes and footers: what it
does on an object store), and, as a yardstick, pyarrow reading every part whole (what a report reads at least
once). The page cache is warm after the first run; the first run's numbers are the cold ones where the folder
was not read since it was written.
"""

from __future__ import annotations

import argparse
import time

import pyarrow.parquet as pq

from workers.dataset import folder, parts


def timed(fn) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    loc = folder.at(args.sweep)
    manifest = folder.read_manifest(loc)
    paths = [p for found in folder.part_files(loc).values() for p in found]
    size = sum(loc.fs.get_file_info(p).size for p in paths)
    print(f"{args.sweep}: {len(paths)} parts, {size / 1e6:.0f} MB, {manifest.get('rows')} rows")
    print("| run | check, checksums (s wall / CPU) | check, sizes and footers | pyarrow reads every part |")
    print("|---|---|---|---|")
    for run in range(1, args.repeat + 1):
        found: list = []
        full = timed(lambda: found.extend(parts.check_parts(loc, manifest, checksums=True)))
        light = timed(lambda: parts.check_parts(loc, manifest, checksums=False))
        read = timed(lambda: [pq.read_table(p) for p in paths])
        if found:
            raise SystemExit(f"the folder does not match its manifest: {found[0]}")
        print(f"| {run} | {full[0]:.2f} / {full[1]:.2f} | {light[0]:.3f} / {light[1]:.3f} | {read[0]:.2f} / {read[1]:.2f} |")


if __name__ == "__main__":
    main()
