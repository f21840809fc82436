"""The figure of a sweep with kernel rows: the real kernel's counts against the model's (analysis.kernel).

One panel per metric the model must equal (its KernelCheck's `exact` metrics): each configuration a guest
ran and both sides bound, the model's value across, the kernel's up, on log axes (zeros equal on both
sides are counted in the panel's corner). A configuration on the diagonal agrees; a red cross does not. The last panel counts
feasibility: what the kernel did with each configuration against what the model says of it.

`kernel_gains`: where kernel rows hold several variants of the model's comparison (memmap's strategies),
each variant's gain over the baseline in the kernel's own count, set against the model's gain on the same
count (left) and against its gain in time under the sweep's profile (right).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import seaborn as sns
from matplotlib.ticker import NullFormatter

from analysis.kernel import checked
from analysis.kernel import gains
from analysis.read import Sweep
from workers.dataset import unit_of

from .plotting import Rendered, Skipped, save, square_log_axes


def model_vs_kernel(sweep: Sweep, outdir: Path) -> Rendered | Skipped:
    fid, title = "model_vs_kernel", "The model against the real kernel"
    found = next(checked(sweep), None)  # one model declares a kernel check today (memmap)
    if found is None:
        return Skipped(id=fid, title=title, reason="no model in this sweep has kernel rows a guest ran beside its "
                                                   "modeled ones (a spec with source = [\"model\", \"kernel\"] "
                                                   "makes them)")
    rows, df, a = found
    exact = [c.removesuffix("_model") for c in df.columns if c.endswith("_model") and c != "status_model"]
    # a count at 0 on both sides of every configuration (a leaf size a machine lacks) gets no panel, only a
    # line in the caption
    zeros = [m for m in exact if _all_zero(df, m)]
    exact = [m for m in exact if m not in zeros]
    cols = 3
    n = len(exact) + 1
    fig, axes = plt.subplots(-(-n // cols), cols, figsize=(4.6 * cols, 4.3 * -(-n // cols)), squeeze=False)
    # colour by the first axis of a few values (memmap: fsdax / devdax)
    hue = next((c for c in df.columns if c.startswith("param_") and 2 <= df[c].n_unique() <= 4), None)
    labels = {v: rows.label(hue, v) for v in df[hue].unique().to_list()} if hue else {}
    for ax, metric in zip(axes.ravel(), exact):
        _panel(ax, df, metric, hue, labels)
    _feasibility(axes.ravel()[len(exact)], df)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    fig.suptitle(f"{title}: {rows.name}, {a.agree} of {a.configurations} configurations agree "
                 f"({', '.join(a.kernels)}; {', '.join(a.accels)})")
    fig.tight_layout()
    caption = (f"Each marker is one configuration a guest ran ({', '.join(a.kernels)}, accelerator "
               f"{', '.join(a.accels)}) and both the kernel and the model bound: the model's value across, the "
               "kernel's up; on the line they are equal; a red cross differs; equal zeros are counted in a corner. "
               "Last panel: what the kernel did with each configuration against what the model says. Times are "
               "not compared: a guest's time under TCG is proportional to the work, not a machine's.")
    if zeros:
        names = ", ".join(m.removeprefix("metric_").replace("_", " ") for m in zeros)
        caption += f" No panel for {names}: 0 on both sides of all {a.ok} configurations both bound."
    return save(fig, outdir, fid, title, caption)


def _all_zero(df: pl.DataFrame, metric: str) -> bool:
    both = df.filter((pl.col("status") == "ok") & (pl.col("status_model") == "ok"))
    return both.height > 0 and bool(((both[metric] == 0) & (both[f"{metric}_model"] == 0)).all())


def _panel(ax, df: pl.DataFrame, metric: str, hue: str | None, labels: dict) -> None:
    both = df.filter((pl.col("status") == "ok") & (pl.col("status_model") == "ok")
                     & pl.col(metric).is_not_null() & pl.col(f"{metric}_model").is_not_null())
    x, y = both[f"{metric}_model"].to_numpy().astype(float), both[metric].to_numpy().astype(float)
    bad = both[metric].ne_missing(both[f"{metric}_model"]).to_numpy()
    zero = (x == 0) & (y == 0)  # equal at 0: no place on log axes, counted in the corner instead
    positive = np.concatenate([x[x > 0], y[y > 0]])
    lo, hi = (positive.min() / 2, positive.max() * 2) if positive.size else (0.5, 2.0)
    line = np.geomspace(lo, hi, 20)
    ax.plot(line, line, color="0.4", lw=1)
    groups = sorted(both[hue].unique().to_list()) if hue else [None]
    palette = dict(zip(groups, sns.color_palette("colorblind", len(groups))))
    for g in groups:
        keep = ((both[hue] == g).to_numpy() if hue else np.ones(both.height, bool)) & ~bad & ~zero
        if keep.any():
            ax.scatter(x[keep], y[keep], s=36, color=palette[g], edgecolor="black", linewidth=0.4,
                       label=labels.get(g))
    if bad.any():
        ax.scatter(np.clip(x[bad], lo, None), np.clip(y[bad], lo, None), marker="X", s=70, color="#c0392b",
                   label="differs")
    square_log_axes(ax, lo, hi)
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    if zero.any():
        ax.text(0.97, 0.04, f"{int(zero.sum())} at 0 on both sides", transform=ax.transAxes, ha="right",
                va="bottom", fontsize=8, color="0.3")
    unit = unit_of(metric)
    name = metric.removeprefix("metric_").replace("_", " ")
    ax.set_xlabel(f"model ({unit})" if unit else "model")
    ax.set_ylabel(f"kernel ({unit})" if unit else "kernel")
    ax.set_title(f"{name}: {both.height - int(bad.sum())} of {both.height} equal", fontsize=10)
    if hue and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper left", title=hue.removeprefix("param_").replace("_", " "), title_fontsize=7)


def _feasibility(ax, df: pl.DataFrame) -> None:
    sides = ["ok", "refused"]
    side = lambda s: pl.when(pl.col(s) == "ok").then(pl.lit("ok")).otherwise(pl.lit("refused"))  # noqa: E731
    counts = df.select(side("status").alias("kernel"), side("status_model").alias("model")).group_by(
        "kernel", "model").len()
    grid = np.zeros((2, 2), dtype=int)
    for k, m, n in counts.iter_rows():
        grid[sides.index(k), sides.index(m)] = n
    sns.heatmap(grid, annot=True, fmt="d", cbar=False, cmap="Greens", xticklabels=sides, yticklabels=sides, ax=ax,
                linewidths=0.5, linecolor="white")
    ax.set_xlabel("model")
    ax.set_ylabel("kernel")
    ax.set_title(f"feasibility: {grid[0, 0] + grid[1, 1]} of {grid.sum()} alike", fontsize=10)


GAIN_TICKS = (0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 7, 10)


def kernel_gains(sweep: Sweep, outdir: Path) -> Rendered | Skipped:
    fid, title = "kernel_gains", "Each variant's gain in the real kernel against the model's"
    found = next(((rows, df) for rows in map(sweep.rows, sweep.models) if not (df := gains(rows)).is_empty()), None)
    if found is None:
        return Skipped(id=fid, title=title, reason="no model in this sweep has kernel rows of several variants of "
                                                   "its comparison (the series' kernel runs every strategy)")
    rows, df = found
    cmp, metric = rows.model.report.comparison, rows.model.kernel.sampled.removeprefix("metric_").replace("_", " ")
    variants = df["variant"].unique(maintain_order=True).to_list()
    palette = dict(zip(variants, sns.color_palette("colorblind", len(variants))))
    fig, axes = plt.subplots(1, 2, figsize=(11, 5))
    for ax, col, label in ((axes[0], "model_gain", f"model gain, same work ({metric})"),
                           (axes[1], "model_time_gain", f"model gain, time ({cmp.metric.removeprefix('metric_')}, profile)")):
        both = df.filter(pl.col(col).is_not_null() & (pl.col(col) > 0))
        values = np.concatenate([both[col].to_numpy(), both["kernel_gain"].to_numpy()])
        lo, hi = (values.min() / 1.3, values.max() * 1.3) if values.size else (0.5, 2.0)
        line = np.geomspace(lo, hi, 20)
        ax.plot(line, line, color="0.4", lw=1)
        ax.axhline(1.0, color="0.75", lw=0.8, ls="--")
        for v in variants:
            part = both.filter(pl.col("variant") == v)
            ax.scatter(part[col], part["kernel_gain"], s=36, color=palette[v], edgecolor="black", linewidth=0.4,
                       label=f"{v} ({part.height})")
        square_log_axes(ax, lo, hi)
        ticks = [t for t in GAIN_TICKS if lo <= t <= hi]
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_minor_formatter(NullFormatter())
            axis.set_ticks(ticks, labels=[f"{t:g}x" for t in ticks])
        ax.set_xlabel(label)
        ax.set_ylabel(f"kernel gain ({metric} of {cmp.baseline} / variant's)")
        ax.legend(fontsize=8, loc="upper left", title=cmp.label, title_fontsize=8)
    axes[0].set_title("the same work: on the line, the model counts what the kernel does", fontsize=10)
    axes[1].set_title(f"{cmp.metric.removeprefix('metric_').replace('_', ' ')}: what the profile makes of it",
                      fontsize=10)
    kernels = ", ".join(sorted(set(df["env_guest_kernel"])))
    fig.suptitle(f"{title}: {rows.name} ({kernels})")
    fig.tight_layout()
    caption = (f"Each marker is one configuration a guest ran under one {cmp.label} ({kernels}): up, the kernel's "
               f"{metric} of {cmp.label} {cmp.baseline} over this {cmp.label}'s (above 1: fewer instructions "
               "than the baseline). Left, across: the model's gain on the same count, its operation counts "
               "priced with the instructions per operation it records for the build. Right, across: the "
               f"model's gain in what the report compares ({cmp.metric.removeprefix('metric_').replace('_', ' ')}) "
               "under the sweep's profile, which a count of instructions does not give (a non-temporal store "
               "costs the same instruction and far less memory traffic; a huge leaf saves TLB misses long after "
               "the instructions that made it).")
    return save(fig, outdir, fid, title, caption)
