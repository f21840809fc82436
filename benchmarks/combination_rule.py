"""memmap's combination rule, max(compute, memory) or partial overlap, checked against data.

    .venv/bin/python benchmarks/combination_rule.py [OUT/SWEEP ...]

memmap prices an init as combined(compute, memory, exposed_fraction) (workers.models.memmap):
the longer side plus `exposed_fraction` of the shorter. The seed profile holds the fraction at 0
(max). This script fits the memmap costs twice, with the fraction held at 0 and with it free:

1. to the eight published figures (the seed profile's free costs, neutral starts), printing each
   fit's worst error, its leave-one-out errors and the fsdax / devdax `template` times (published
   215.55 and 244.37 ms);
2. to the measured rows of each sweep given (a `measure`-like sweep with source = "both": its
   analog times over struct page size, mode and compound order), with the costs a fit to measured
   rows frees, printing the median and worst in-sample and leave-one-out errors and the devdax /
   fsdax ratio per strategy, measured and modeled.

Neither fit is saved; the numbers go to benchmarks/RESULTS.md with the command.
"""

from __future__ import annotations

import argparse
import statistics

from sweeps.calibration import measured_jobs
from workers.calibrate import calibrate
from workers.model import FreeParam
from workers.models.memmap import MODEL as MEMMAP
from workers.profiles import load_profile

EXPOSED = FreeParam(section="memmap", key="exposed_fraction", lower=0.0, upper=1.0)


def fits(profile, figures, free, starts: int) -> dict:
    """The fit with the fraction held (at the profile's value) and the one with it free."""
    return {label: calibrate(MEMMAP, profile, figures=tuple(figures), free=tuple(f), starts=starts, loo_starts=1)
            for label, f in (("held at 0 (max)", free), ("free", (*free, EXPOSED)))}


def line(label: str, cal) -> str:
    errors = [abs(r.error) for r in cal.results]
    loo = [max(abs(lo), abs(hi)) for lo, hi in (r.loo_range for r in cal.results)]
    fraction = cal.fitted.get(("memmap", "exposed_fraction"), 0.0)
    return (f"| {label} | {fraction:.2f} | {statistics.median(errors):.1%} | {max(errors):.1%} | "
            f"{statistics.median(loo):.1%} | {max(loo):.1%} |")


def mode_ratios(figures, cal) -> list[str]:
    """devdax / fsdax per (size, P, align, strategy), measured and modeled."""
    by: dict = {}
    for f, r in zip(figures, cal.results):
        key = (f.params["namespace_size"], f.params["struct_page_size"], f.params["align"], f.params["strategy"])
        by.setdefault(key, {})[f.params["mode"]] = (f.published, r.model)
    return [f"| {size / 2**30:g} GiB | {p} | {align / 2**20:g} MiB | {strategy} | "
            f"{v['devdax'][0] / v['fsdax'][0]:.3f} | {v['devdax'][1] / v['fsdax'][1]:.3f} |"
            for (size, p, align, strategy), v in sorted(by.items()) if len(v) == 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="*", help="sweep folders with measured memmap rows")
    parser.add_argument("--starts", type=int, default=6, help="neutral starts of each fit (default 6)")
    args = parser.parse_args()
    seed = load_profile("seed")
    head = "| fraction | fitted | median error | worst error | median LOO | worst LOO |\n|---|---|---|---|---|---|"
    print("Published figures (8):\n" + head)
    published = fits(seed, MEMMAP.calibration.figures, MEMMAP.calibration.free_params, args.starts)
    for label, cal in published.items():
        print(line(label, cal))
    for label, cal in published.items():
        times = {r.figure: r.model for r in cal.results}
        print(f"  {label}: template fsdax {times['memmap/fsdax/template']:.2f} ms, "
              f"devdax {times['memmap/devdax/template']:.2f} ms (published 215.55, 244.37)")
    for sweep in args.sweeps:
        measured = measured_jobs(sweep, seed, ["memmap"], [])
        [(_, figures, free)] = measured.jobs
        print(f"\n{sweep}: {len(figures)} measured points ({measured.statistic}; hosts "
              f"{', '.join(cpu or host for host, cpu in measured.hosts)})\n" + head)
        cals = fits(measured.profile, figures, free, args.starts)
        for label, cal in cals.items():
            print(line(label, cal))
        for label, cal in cals.items():
            print(f"\ndevdax / fsdax, fraction {label}:\n| size | P | align | strategy | measured | model |\n"
                  "|---|---|---|---|---|---|")
            print("\n".join(mode_ratios(figures, cal)))


if __name__ == "__main__":
    main()
