"""The young model's counts beside a real arm64 reclaim's, at every point of the shipped `kernel-young` spec.

    .venv/bin/python benchmarks/young_kernel.py [--write]

Each point the spec's kernel rows can be (workers/models/young/kernel.py: Debian's arm64 6.12 for per-PTE
clearing and unmapping, 7.3 for batched; MGLRU or the classic LRU; every folio old or every folio young)
is one boot of workers/guest/arm64.py's probe, exactly as `memsweep run kernel-young` boots it. Printed as a
markdown table for benchmarks/RESULTS.md: per point the kernel's counts (young-bit calls, those that found
young, PTEs asked, folio_referenced_one() visits, folios reclaimed) and the reclaim's instructions (the
unprobed pass's, and the counted pass's with its probes), each count with the model's beside it where they
differ. `--write` records them in workers/models/young/kernel_results.csv,
which the model's KernelCheck.bound reads: a count is `kernel-checked` at the points where they are equal.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workers.guest import arm64  # noqa: E402
from workers.models.young import KERNEL_METRICS  # noqa: E402
from workers.models.young import kernel as yk  # noqa: E402
from own_guest import arguments, cells, recorded_rows, write  # noqa: E402  (beside this file)

SPEC = "kernel-young"
OUT = ROOT / "workers" / "models" / "young" / yk.RESULTS
SHORT = {"metric_calls": "calls", "metric_young_calls": "found young", "metric_ptes_asked": "PTEs asked",
         "metric_walks": "visits", "metric_ptes": "pages", "metric_folios": "folios"}


def main() -> None:
    args = arguments(__doc__, OUT, ROOT)
    rows, wall = recorded_rows(SPEC, "young", arm64.run_reclaims, yk.KEY, KERNEL_METRICS,
                               lambda run: {"instructions": run.instructions,
                                            "probed_instructions": run.probed_instructions})
    print(f"{len(rows)} boots in {wall:.0f} s ({wall / len(rows):.1f} s a boot)\n")
    head = " | ".join(SHORT[c] for c in KERNEL_METRICS)
    print(f"| kernel | LRU | young | {head} | instructions | per folio | with the probes |")
    print("|---|---|---|" + "---|" * len(KERNEL_METRICS) + "---|---|---|")
    for r in rows:
        print(f"| {r['release']} | {r['lru']} | {r['young_fraction']:g} | {' | '.join(cells(r, KERNEL_METRICS))} | "
              f"{r['instructions']:,} | {r['instructions'] / r['kernel_folios']:,.0f} | "
              f"{r['probed_instructions']:,} |")
    if args.write:
        write(rows, OUT, ROOT)


if __name__ == "__main__":
    main()
