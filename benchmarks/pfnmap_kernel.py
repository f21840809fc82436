"""The pfnmap model's leaves and page tables beside a real kernel's, at every point of the shipped
`kernel-pfnmap` spec, and the instructions of mmap() and munmap() fit to what the leaves count.

    .venv/bin/python benchmarks/pfnmap_kernel.py [--write]

Every point the spec's kernel rows can be (workers/models/pfnmap/kernel.py: x86_64, the RFC's switch off
or on) is one mapping of /dev/mem in the huge-pfnmap build, all in one boot, exactly as `memsweep run
kernel-pfnmap` maps them. Printed as markdown for benchmarks/RESULTS.md: per point the kernel's leaves and
page-table pages (bold, with the model's, where they differ) and the instructions of its mmap() and
munmap(). Then a least-squares fit of each call's instructions to the point's counts (a call, PTEs, PMD
leaves, page-table pages): on the 2 MiB-aligned points, predicted on the others (a physical start 4 KiB
past a block: PTE heads and tails), and leave-one-out over all. `--write` records the rows in
workers/models/pfnmap/kernel_results.csv, which the model's KernelCheck.bound reads: a count is
`kernel-checked` at the points where kernel and model are equal.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import polars as pl  # noqa: E402

from workers.guest import devmem  # noqa: E402
from workers.models.pfnmap import KERNEL_METRICS  # noqa: E402
from workers.models.pfnmap import kernel as pk  # noqa: E402
from workers.models.pfnmap.instructions import RESULTS, TRAIN_ALIGN, fit  # noqa: E402
from own_guest import arguments, cells, recorded_rows, write  # noqa: E402  (beside this file)

SPEC = "kernel-pfnmap"
OUT = ROOT / "workers" / "models" / "pfnmap" / RESULTS
SHORT = {"metric_pte_leaves": "PTEs", "metric_pmd_leaves": "PMDs", "metric_pud_leaves": "PUDs",
         "metric_pt_pages": "tables"}


def main() -> None:
    args = arguments(__doc__, OUT, ROOT)
    rows, wall = recorded_rows(SPEC, "pfnmap", devmem.run_maps, pk.KEY, KERNEL_METRICS, lambda run: {
        "mmap_instructions": run.mmap_instructions, "munmap_instructions": run.munmap_instructions})
    df = pl.DataFrame(rows)
    print(f"{len(rows)} mappings in one boot, {wall:.0f} s\n")
    head = " | ".join(SHORT.values())
    print(f"| size | pa | va - pa | RFC | {head} | mmap | munmap |")
    print("|---|---|---|---|" + "---|" * len(SHORT) + "---|---|")
    for r in rows:
        pa = pk.pa_of(r["align"], r["pa_offset"])
        print(f"| {r['namespace_size'] >> 20} MiB | {pa >> 10} KiB | {r['va_offset'] >> 10} KiB | "
              f"{'on' if r['compound_order'] == 9 else 'off'} | {' | '.join(cells(r, SHORT))} | "
              f"{r['mmap_instructions']:,} | {r['munmap_instructions']:,} |")
    print("\n| call | fit on | call | per PTE | per PMD | per table | held-out worst | leave-one-out worst |")
    print("|---|---|---|---|---|---|---|---|")
    for call in ("mmap", "munmap"):
        f = fit(df, f"{call}_instructions", df["align"] == TRAIN_ALIGN)
        c = f.costs
        print(f"| {call} | {f.train} aligned | {c['call']:,.0f} | {c['pte_leaves']:.1f} | {c['pmd_leaves']:.1f} | "
              f"{c['pt_pages']:.1f} | {f.held_out_error:.2%} ({f.held_out} points) | {f.loo_error:.2%} |")
    if args.write:
        write(rows, OUT, ROOT)


if __name__ == "__main__":
    main()
