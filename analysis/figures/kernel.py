"""The figure of a sweep with kernel rows: the real kernel's counts against the model's (analysis.kernel).

One panel per metric the model must equal (its KernelCheck's `exact` metrics): each configuration a guest
ran and both sides bound, the model's value across, the kernel's up, on log axes (zeros equal on both
sides are counted in the panel's corner). A configuration on the diagonal agrees; a red cross does not. The last panel counts
feasibility: what the kernel did with each configuration against what the model says of it.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import seaborn as sns
from matplotlib.ticker import NullFormatter

from analysis.kernel import checked
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
    return save(fig, outdir, fid, title, caption)


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
