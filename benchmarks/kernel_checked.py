"""The kernel results memmap's evidence labels rest on: every configuration a guest ran in the given kernel
sweeps, whether its exact counts equalled the model's (analysis/kernel.py's rule), and its instruction
count beside the model's.

    memsweep run kernel --out results/series                                     # the series' build
    memsweep run kernel --kernel debian:6.12 --out results/deb612
    memsweep run kernel --kernel debian:6.1 --out results/deb61
    memsweep run benchmarks/kernel_instructions.toml --kernel series:6.12 --out results/ki-series
    memsweep run benchmarks/kernel_instructions.toml --kernel debian:6.12 --out results/ki-deb612
    memsweep run benchmarks/kernel_instructions.toml --kernel debian:6.1 --out results/ki-deb61
    .venv/bin/python benchmarks/kernel_checked.py --fit results/ki-series/kernel_instructions \\
        series:6.12=results/series/kernel series:6.12=results/ki-series/kernel_instructions \\
        debian:6.12=results/deb612/kernel debian:6.12=results/ki-deb612/kernel_instructions \\
        debian:6.1=results/deb61/kernel debian:6.1=results/ki-deb61/kernel_instructions --record

Each argument is BUILD=SWEEP: the build's name as instructions.toml and `--kernel` spell it, and a sweep
folder (OUT/<sweep>) of its kernel rows and the model's. `--fit` names the sweep whose rows the priced
build's instruction costs were fit to (benchmarks/instructions.py --record): its configurations are the
count's `fit` points; every other configuration of that build is a check of the count, which agrees when
the model is within the fit's leave-one-out error (instructions.toml's loo_error). `--record` writes
workers/models/memmap/kernel_results.csv, which KernelCheck.bound and .fitted read
(workers/models/memmap/kernel.py). A configuration two sweeps ran is recorded once, a fit row first.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.kernel import exact_metrics, pairs  # noqa: E402
from analysis.read import KERNEL, MODELED, Sweep  # noqa: E402
from workers.models.memmap import kernel as mk  # noqa: E402
from workers.models.memmap.work import PRICED, recorded_costs  # noqa: E402

OUT = ROOT / "workers" / "models" / "memmap" / mk.RESULTS
INSTRUCTIONS = mk.INSTRUCTIONS
AXES = [f"param_{k}" for k in mk.KEY] + ["param_struct_page_size"]


def results(build: str, folder: Path, use: str) -> pl.DataFrame:
    """One row per configuration a guest ran in the sweep at `folder`: its point, whether it agrees, the
    exact metrics compared, and the kernel's and the model's instruction counts."""
    rows = Sweep(folder).rows("memmap")
    ran = pairs(rows).select("point_id", "agrees", "status", "status_model",
                             *(pl.col(m).is_not_null() & (pl.col("status") == "ok") & (pl.col("status_model") == "ok")
                               for m in exact_metrics(rows)))
    checked = pl.concat_str([pl.when(pl.col(m)).then(pl.lit(m.removeprefix("metric_"))) for m in exact_metrics(rows)],
                            separator=" ", ignore_nulls=True)
    kernel = rows.scan(KERNEL).filter(pl.col("env_guest_kernel").is_not_null()).select(
        "point_id", *AXES, pl.col(INSTRUCTIONS).alias("instructions")).collect()
    model = rows.scan(MODELED).select("point_id", pl.col(INSTRUCTIONS).alias("instructions_model")).collect()
    out = ran.join(kernel, on="point_id").join(model, on="point_id", how="left")
    return out.select(
        pl.lit(build).alias("build"), *(pl.col(f"param_{k}").alias(k) for k in mk.KEY),
        pl.col("param_struct_page_size").alias("struct_page_size"),
        pl.when(pl.col("status") == "ok").then(pl.lit("ok")).otherwise(pl.lit("refused")).alias("status"),
        "agrees", checked.alias("checked"), "instructions", "instructions_model",
        (pl.col("instructions_model") / pl.col("instructions") - 1.0).round(6).alias("error"),
        pl.lit(use).alias("use"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", metavar="BUILD=SWEEP", help="a build's name and a kernel sweep's folder")
    p.add_argument("--fit", type=Path, required=True, metavar="SWEEP",
                   help=f"the sweep of {PRICED}'s rows instructions.toml's costs were fit to")
    p.add_argument("--record", action="store_true", help=f"write {OUT.relative_to(ROOT)}")
    args = p.parse_args()
    frames = []
    for run in args.runs:
        build, sep, folder = run.partition("=")
        if not sep or not folder:
            p.error(f"{run!r}: expected BUILD=SWEEP")
        fit = Path(folder).resolve() == args.fit.resolve()
        if fit and build != PRICED:
            p.error(f"--fit names a sweep of {build!r}; the instruction costs priced are {PRICED!r}'s")
        frames.append(results(build, Path(folder), mk.FIT if fit else mk.CHECK))
    out = pl.concat(frames).sort("use", descending=True)  # fit rows first, then kept on a repeat
    out = out.unique(subset=["build", *mk.KEY, "struct_page_size"], keep="first").sort(["build", *mk.KEY])
    tolerance = recorded_costs(PRICED).loo_error
    for (build,), g in out.group_by("build", maintain_order=True):
        ok = g.filter(pl.col("status") == "ok")
        checks = ok.filter((pl.col("use") == mk.CHECK) & pl.col("error").is_not_null())
        line = (f"{build}: {g.height} configurations, {g['agrees'].sum()} agree on their exact counts "
                f"({ok.height} bound, {g.height - ok.height} refused)")
        if build == PRICED:
            within = (checks["error"].abs() <= tolerance).sum()
            worst = checks["error"].abs().max() if checks.height else float("nan")
            line += (f"; instructions: {ok.filter(pl.col('use') == mk.FIT).height} fit, {checks.height} checks, "
                     f"{within} within the fit's leave-one-out {tolerance:.2%} (worst {worst:.2%})")
        print(line)
    if args.record:
        OUT.write_text(out.write_csv())
        print(f"recorded {out.height} configurations in {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
