"""Wall time and peak RSS of `memsweep report` on a sweep, and synthetic sweeps of N million rows.

    .venv/bin/python benchmarks/time_report.py OUT/SWEEP [OUT/SWEEP ...] [--repeat N]
    .venv/bin/python benchmarks/time_report.py --synthesize 50 --from OUT/large --to DIR

The first form runs `memsweep report OUT/SWEEP --out <temporary folder>` in a subprocess per run
(so each run pays its own imports and starts with nothing cached) and prints a Markdown row per
run: rows, parts, wall seconds of the whole command, peak RSS of the process (ru_maxrss from
wait4), figures drawn. The second writes a sweep of at least N million rows by copying the parts
of an existing sweep, model by model in turn, with `point_id` shifted by a copy number times
2^40 (so no id repeats) and a new chunk id per copy (in its rows, its footer and its name); the
manifest records every copy as a run records its parts (bytes, checksum, rows), so the readers' part
check passes, and the spec is copied. Copies repeat points, so the report shows the same figures with more
rows behind every median: what grows is the reading and the aggregation, as with a longer sweep.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sweeps.run.store import locate, write_part
from workers.dataset import MANIFEST, PART_CHUNK_ID, SPEC_FILE, layout_of

ROOT = Path(__file__).resolve().parent.parent
SHIFT = 1 << 40  # point_id offset per copy: larger than any sweep's index space here


def parts(sweep: Path) -> list[Path]:
    return sorted(sweep.glob("model=*/part-*.parquet"))


def rows_of(files: list[Path]) -> int:
    return sum(pq.read_metadata(f).num_rows for f in files)


def time_report(sweep: Path) -> dict:
    """One `memsweep report` in a child process: wall s, peak RSS MiB (the child's ru_maxrss)."""
    with tempfile.TemporaryDirectory(prefix="memsweep-time-report-") as tmp:
        page = Path(tmp) / "report.html"
        cmd = [sys.executable, "-m", "sweeps.cli", "report", str(sweep), "--out", str(page)]
        t0 = time.perf_counter()
        child = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        err = child.stderr.read().decode(errors="replace") if child.stderr else ""
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            raise SystemExit(f"memsweep report failed ({child.returncode}): {err[-2000:]}")
        text = page.read_text()
        return {"wall_s": wall, "peak_rss_mib": usage.ru_maxrss / 1024,
                "figures": text.count('class="memsweep-figure"'),
                "empty_panels": sum(int(v) for v in _attr_values(text, "data-empty-panels"))}


def _attr_values(text: str, name: str) -> list[str]:
    out, key = [], f'{name}="'
    i = text.find(key)
    while i >= 0:
        j = text.index('"', i + len(key))
        out.append(text[i + len(key):j])
        i = text.find(key, j)
    return out


def synthesize(src: Path, dest: Path, million: float) -> int:
    """Copy src's parts (with shifted point_ids) into dest until it holds >= million * 1e6 rows, each copy a
    part of its own that the manifest records (chunk id <id>-c<copy> in its rows, its footer and its name)."""
    target = int(million * 1_000_000)
    files = parts(src)
    if not files:
        raise SystemExit(f"{src} holds no parts (model=*/part-*.parquet)")
    names = layout_of(p.name for p in src.iterdir())  # the source may be of an older schema
    manifest = json.loads((src / names.manifest).read_text())
    records = {rec["chunk_id"]: rec for rec in manifest.get("parts", {}).values()}
    if dest.exists():
        shutil.rmtree(dest)
    loc = locate(str(dest))
    total, copy, listed = 0, 0, {}
    while total < target:
        for f in files:
            if total >= target:
                break
            table = pq.read_table(f)  # its footer's key-value metadata with it
            kv = table.schema.metadata or {}
            cid = f"{kv[PART_CHUNK_ID.encode()].decode()}-c{copy}"
            shifted = pc.add(table["point_id"], pa.scalar(copy * SHIFT, table["point_id"].type))
            table = table.set_column(table.schema.get_field_index("point_id"), "point_id", shifted)
            table = table.set_column(table.schema.get_field_index("chunk_id"), table.schema.field("chunk_id"),
                                     pa.array([cid] * table.num_rows, table.schema.field("chunk_id").type))
            table = table.replace_schema_metadata({**kv, PART_CHUNK_ID.encode(): cid.encode()})
            model = f.parent.name.removeprefix("model=")
            record = write_part(loc, model, cid, table)
            listed[cid] = {**records.get(cid.rsplit("-c", 1)[0], {}), **record, "chunk_id": cid, "model": model}
            total += table.num_rows
        copy += 1
    manifest.update(rows=total, rows_expected=total, points_expected=total, parts=listed,
                    chunks_done=len(listed), chunks_expected=len(listed),
                    synthetic=f"{copy} copies of the parts of {src.name}, point_id shifted by copy * 2^40")
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1))
    if (src / names.spec).is_file():
        shutil.copy(src / names.spec, dest / SPEC_FILE)
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweeps", nargs="*", type=Path, help="sweep folders to time the report of")
    ap.add_argument("--repeat", type=int, default=1, help="runs per sweep (default 1)")
    ap.add_argument("--synthesize", type=float, metavar="MILLION_ROWS",
                    help="write a sweep of at least this many million rows (with --from, --to)")
    ap.add_argument("--from", dest="src", type=Path, help="the sweep whose parts are copied")
    ap.add_argument("--to", type=Path, help="the synthetic sweep folder to write (replaced)")
    a = ap.parse_args()
    if a.synthesize:
        if not (a.src and a.to):
            ap.error("--synthesize needs --from SWEEP and --to DIR")
        t0 = time.perf_counter()
        n = synthesize(a.src, a.to, a.synthesize)
        print(f"{a.to}: {n:,} rows in {len(parts(a.to))} parts ({time.perf_counter() - t0:.1f} s)")
    if not a.sweeps:
        return
    print("| sweep | rows | parts | wall s | peak RSS MiB | figures | empty panels |")
    print("|---|---|---|---|---|---|---|")
    for sweep in a.sweeps:
        files = parts(sweep)
        for _ in range(a.repeat):
            r = time_report(sweep)
            print(f"| {sweep.name} | {rows_of(files):,} | {len(files)} | {r['wall_s']:.1f} | {r['peak_rss_mib']:.0f} "
                  f"| {r['figures']} | {r['empty_panels']} |", flush=True)


if __name__ == "__main__":
    main()
