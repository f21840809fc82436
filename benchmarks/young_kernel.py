"""The young model's counts beside a real arm64 reclaim's: the four runs of workers/guest/arm64.py (Debian's
6.12 and 7.3 kernels, MGLRU and the classic LRU) and the model at the same point.

    .venv/bin/python benchmarks/young_kernel.py [--readahead-kb 128]

The point: arm64, every folio of the mapped file young (the probe touches every page), folio order from the
readahead size, `mapped_size` the file, `namespace_size` the amount reclaimed, per-PTE clearing for 6.12 and
batched for 7.3 (the seed series). Printed as a markdown table for benchmarks/RESULTS.md: per run, the young-bit
function's calls, the PTEs they ask about (one a call before the series, `nr` a call after), folio visits
(folio_referenced_one()), the reclaim's instructions; and the model's calls, PTEs asked (calls x folio pages
when batched) and walks.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workers import get_model  # noqa: E402
from workers.guest import arm64  # noqa: E402
from workers.model import points_frame  # noqa: E402
from workers.profiles import load_profile  # noqa: E402

FILE_MIB, RECLAIM_MIB = 64, 48
BATCHING = {"6.12": "per_pte", "7.3": "batched"}  # before and after the seed series


def model_counts(lru: str, batching: str, order: int) -> dict:
    """The young model's calls, PTEs asked and walks at the probe's point."""
    model = get_model("young")
    point = dict(arch="arm64", lru=lru, batching=batching, compound_order=order, young_fraction=1.0,
                 namespace_size=RECLAIM_MIB << 20, mapped_size=FILE_MIB << 20)
    out = model.evaluate(points_frame(model, [point]), load_profile("seed"))
    calls, walks = int(out["metric_calls"][0]), int(out["metric_walks"][0])
    return {"calls": calls, "ptes": calls * (1 << order if batching == "batched" else 1), "walks": walks}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--readahead-kb", type=int, default=128, help="the file's folio size (default 128 KiB)")
    args = p.parse_args()
    order = (args.readahead_kb // 4).bit_length() - 1
    print(f"{FILE_MIB} MiB mapped, {RECLAIM_MIB} MiB reclaimed, readahead {args.readahead_kb} KiB "
          f"(folio order {order})")
    print()
    print("| kernel | LRU | calls | PTEs asked | visits | reclaimed pages | instructions | model calls | model PTEs "
          "asked | model walks |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for series in sorted(arm64.KERNELS):
        kernel = arm64.fetch(series)
        for lru in arm64.LRUS:
            run = arm64.reclaim(kernel, lru=lru, file_mib=FILE_MIB, reclaim_mib=RECLAIM_MIB,
                                readahead_kb=args.readahead_kb)
            asked = sum(n * c for n, c in run.pages.items()) if run.pages else run.calls
            m = model_counts(lru, BATCHING[series], order)
            print(f"| {run.release} | {lru} | {run.calls:,} | {asked:,} | {run.visits:,} | {run.reclaimed:,} | "
                  f"{run.instructions:,} | {m['calls']:,} | {m['ptes']:,} | {m['walks']:,} |")


if __name__ == "__main__":
    main()
