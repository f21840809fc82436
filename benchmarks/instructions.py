"""The model's work against the kernel's: memmap_init_zone_device() instructions of a kernel sweep's rows
beside the model's operation counts times per-operation instruction costs (workers/models/memmap/work.py).

    .venv/bin/python benchmarks/instructions.py results/kernel [--build RELEASE] [--record NAME]

For the kernel rows of one build (env_guest_kernel names it; --build picks one when the sweep holds
several images) it fits the costs to every row, then prints, per configuration (strategy x mode x align
x map): the kernel's instructions per walked pfn at each size, the model's when fit to every other
configuration, and the model's error at those rows (1) leave-one-out: fit to every other configuration, (2) never fit: fit to the 1-4 GiB rows only and
predicted at 8 and 16 GiB, (3) in-sample, last. --record writes the all-rows fit into
workers/models/memmap/instructions.toml under the build's name (what modeled rows price, for PRICED).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workers.models.memmap import work, work_counts  # noqa: E402
from workers.units import GiB, format_size  # noqa: E402

CELL = ("param_strategy", "param_mode", "param_align", "param_map")
FIT_SIZES = 4 * GiB  # "never fit": the fit sees 1-4 GiB, the table predicts 8 and 16 GiB


def kernel_rows(folder: Path, build: str | None) -> pl.DataFrame:
    """The ok kernel rows with an instruction count, of one guest kernel."""
    rows = pl.read_parquet(folder / "model=memmap" / "*.parquet").filter(
        (pl.col("source") == "kernel") & (pl.col("status") == "ok")
        & pl.col("metric_init_instructions").is_not_null() & (pl.col("param_struct_page_size") == 64))
    kernels = sorted(rows["env_guest_kernel"].unique().to_list())
    if not kernels:
        raise SystemExit("memsweep: no counted kernel rows in this sweep (run a kernel spec under TCG first)")
    if build is None and len(kernels) > 1:
        raise SystemExit(f"memsweep: the sweep holds several kernels {kernels}: pick one with --build")
    return rows.filter(pl.col("env_guest_kernel") == (build or kernels[0]))


def report(rows: pl.DataFrame) -> tuple[str, np.ndarray, float]:
    """The markdown tables, the all-rows coefficients and the largest |leave-one-out error|."""
    strategy, n = work_counts(rows.select(pl.col("^param_.*$")))
    x, y = work.design(strategy, n), rows["metric_init_instructions"].to_numpy().astype(float)
    cells = list(rows.select(CELL).iter_rows())
    coef = work.fit(x, y)
    loo = work.leave_one_out(x, y, cells)
    small = rows["param_namespace_size"].to_numpy() <= FIT_SIZES
    held = work.predict(work.fit(x[small], y[small]), x)
    inside = work.predict(coef, x)
    walked = n["head_slow"] + n["head_copy"] + n["tail_slow"] + n["tail_copy"]
    frame = rows.select(*CELL, "param_namespace_size").with_columns(
        per_pfn=y / np.maximum(walked, 1), model_per_pfn=loo / np.maximum(walked, 1), loo=pl.Series(loo / y - 1), never=pl.Series(np.where(small, np.nan, held / y - 1)),
        inside=pl.Series(inside / y - 1))
    lines = ["| strategy | mode | align | map | kernel instructions per pfn (1, 2, 4, 8, 16 GiB) | model, "
             "leave-one-out | leave-one-out error, max | never fit (8, 16 GiB) | in-sample, max |",
             "|---|---|---|---|---|---|---|---|---|"]
    for key, g in frame.sort("param_namespace_size").group_by(CELL, maintain_order=True):
        s, mode, align, map_ = key
        per = ", ".join(f"{v:.2f}" for v in g["per_pfn"])
        model = ", ".join(f"{v:.2f}" for v in g["model_per_pfn"])
        lines.append(f"| {s} | {mode} | {format_size(align)} | {map_} | {per} | {model} | {_pct(g['loo'])} | "
                     f"{_pct(g['never'].drop_nans())} | {_pct(g['inside'])} |")
    costs = ", ".join(f"{c} {v:.1f}" for c, v in zip(work.COLUMNS, coef) if not np.isnan(v))
    lines += ["", f"Instructions per operation (all rows): {costs}.",
              f"Worst: leave-one-out {_pct(frame['loo'])}, never fit {_pct(frame['never'].drop_nans())}, "
              f"in-sample {_pct(frame['inside'])} over {rows.height} rows."]
    worst = np.abs(frame["loo"].to_numpy())
    return "\n".join(lines), coef, float(np.nanmax(worst)) if not np.isnan(worst).all() else float("nan")


def _pct(s: pl.Series) -> str:
    """The largest |error| of a column of relative errors, signed, in % (NaN: not identifiable)."""
    v = s.to_numpy()
    if len(v) == 0:
        return "-"
    if np.isnan(v).any():
        return "not identified"
    worst = v[np.argmax(np.abs(v))]
    return f"{worst * 100:+.2f}%"


def record(build: str, coef: np.ndarray, loo: float, rows: pl.DataFrame) -> Path:
    """instructions.toml with the build's table replaced by the all-rows fit."""
    path = ROOT / "workers" / "models" / "memmap" / "instructions.toml"
    kernel = rows["env_guest_kernel"][0]
    fit_text = (f"nnls over {rows.height} kernel rows of {kernel} (1-16 GiB; fsdax/devdax, 2 MiB/1 GiB, map=dev/mem; "
                f"strategies {sorted(rows['param_strategy'].unique())}), benchmarks/instructions.py")
    table = work.costs_of(coef, build=build, fit_text=fit_text, loo_error=loo).toml()
    text = path.read_text() if path.exists() else ""
    text = re.sub(rf'\n?\["{re.escape(build)}"\]\n(?:[^\[\n][^\n]*\n)*', "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).rstrip("\n")
    path.write_text(f"{text}\n\n[\"{build}\"]\n{table}".lstrip("\n"))
    return path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sweep", type=Path, help="a kernel sweep's folder (OUT/<sweep>)")
    p.add_argument("--build", help="the env_guest_kernel release to fit, when the sweep holds several")
    p.add_argument("--record", metavar="NAME", help="record the fit in instructions.toml as build NAME")
    args = p.parse_args()
    rows = kernel_rows(args.sweep, args.build)
    text, coef, loo = report(rows)
    print(text)
    if args.record:
        print(f"recorded in {record(args.record, coef, loo, rows).relative_to(ROOT)}")


if __name__ == "__main__":
    main()
