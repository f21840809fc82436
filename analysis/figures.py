"""The report's figures: which exist, how each gets its (small, aggregated) data, and the parity plot.

Every figure function takes a Sweep and an output folder and returns Rendered
(PNG + SVG written) or Skipped (the model or a column it needs is absent, or
nothing it plots varies in this sweep). Data are aggregated with polars (median
per series and x) before seaborn sees them; seaborn never gets raw rows.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Callable

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import seaborn as sns

from .exceptions import AnalysisWarning
from .metrics import published_comparison, series_medians
from .plotting import Rendered, Skipped, save, square_log_axes, theme
from .read import Sweep, describe, pin

FigureFn = Callable[[Sweep, Path], "Rendered | Skipped"]


def missing(sweep: Sweep, model: str, columns: list[str]) -> str | None:
    """Why a figure of `model` needing `columns` cannot be drawn from this sweep, or None."""
    if model not in sweep.models:
        return f"model absent: this sweep has no {model} rows"
    have = sweep.schema(model)
    lacking = [c for c in columns if c not in have]
    if lacking:
        return f"the {model} rows lack the columns {lacking} (written by another model version)"
    return None


def not_varying(sweep: Sweep, model: str, columns: list[str]) -> str | None:
    """Why a figure whose axes are `columns` has nothing to show (an axis takes one value)."""
    values = sweep.axis_values(model)
    if any(values.get(c) is not None and values[c].height == 0 for c in columns):
        return f"no ok {model} rows in this sweep (see the reasons table)"
    flat = [c for c in columns if values.get(c) is not None and values[c].height < 2]
    if flat:
        names = ", ".join(c.removeprefix("param_") for c in flat)
        return f"{names} takes a single value among the {model} ok rows of this sweep"
    return None


def medians(sweep: Sweep, model: str, x: str, y: str, series: list[str], *,
            where: pl.Expr | None = None, fixed: tuple[str, ...] = (),
            prefer: dict | None = None) -> tuple[pl.DataFrame, str]:
    """Median y per (series, x) on a slice with every other varying axis held at one value.

    `where` filters further on axes listed in `fixed`. Returns the small frame and the text
    naming what was held fixed (for the caption)."""
    expr, held = pin(sweep, model, [x, *series, *fixed], prefer)
    lf = sweep.scan(model).filter(expr)
    if where is not None:
        lf = lf.filter(where)
    return series_medians(lf, x, y, series).collect(engine="streaming"), describe(sweep, model, held)


def no_rows(model: str, metric: str, held: str) -> str:
    """The skip reason of a figure whose slice has no value to plot (e.g. measured rows, which fill
    only a model's headline metric)."""
    return f"no ok {model} rows with a value of {metric} in the slice shown" + (f" ({held})" if held else "")


def held_text(held: str) -> str:
    return f" Other axes held at: {held}." if held else ""


def parity(sweep: Sweep, outdir: Path) -> Rendered | Skipped:
    """Model vs published for every published figure whose point is in the sweep: a log-log parity
    plot, and beside it each figure's signed error in percent."""
    fid, title = "parity", "Model vs published figures"
    table = published_comparison(sweep)
    df = table.filter(pl.col("model_value").is_not_null() & (pl.col("model_value") > 0)
                      & (pl.col("published") > 0)).sort("model", "id")
    if df.height == 0:
        why = "no published figure's point is in this sweep (see the comparison table)" if table.height \
            else "no model in this sweep lists published figures"
        return Skipped(id=fid, title=title, reason=why)
    models = sorted(df["model"].unique().to_list())
    palette = dict(zip(models, sns.color_palette("colorblind", len(models))))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13.0, max(5.6, 0.2 * df.height + 1.6)),
                                 gridspec_kw={"width_ratios": [1.0, 1.1]})
    _parity_panel(ax, df, models, palette)
    err = df.sort("use", "model", "id").with_columns((pl.col("error") * 100).alias("error_pct"))
    bx.barh(range(err.height), err["error_pct"], color=[palette[m] for m in err["model"]],
            hatch=["//" if u == "validation" else "" for u in err["use"]], edgecolor="0.2", linewidth=0.3)
    bx.set_yticks(range(err.height), err["id"].to_list(), fontsize=7)
    bx.invert_yaxis()
    bx.axvline(0, color="0.3", lw=1)
    for lim in (-10, 10):
        bx.axvline(lim, color="0.6", lw=0.8, ls="--")
    bx.set_xlabel("model error vs published (%)")
    bx.set_title("signed error per figure (dashed: ±10%)", fontsize=10)
    fig.suptitle(f"{title}: {df.height} of {table.height} figures in this sweep")
    fig.tight_layout()
    median = float(df["error"].abs().median())
    worst = df.sort(pl.col("error").abs(), descending=True).row(0, named=True)
    n_val = err.filter(pl.col("use") == "validation").height
    caption = (f"Each point is one published figure at its own parameters: circles are the figures the profile was "
               f"fit to, crosses (hatched bars, listed last) the {n_val} validation figures of the profile, predicted "
               f"and never fit; "
               f"the parity panel's grey bands are ±10% and ±25%; open circles, if any, are this sweep's own "
               f"measurements at that point. Median absolute error {median:.1%}; largest "
               f"{worst['error']:+.1%} ({worst['id']}). Profile: {sweep.manifest.get('profile', '?')}.")
    return save(fig, outdir, fid, title, caption)


def _parity_panel(ax, df: pl.DataFrame, models: list[str], palette: dict) -> None:
    values = [v for c in ("published", "model_value", "measured_value") for v in df[c].to_list() if v and v > 0]
    lo, hi = min(values) / 1.5, max(values) * 1.5
    line = np.geomspace(lo, hi, 50)
    ax.fill_between(line, line / 1.25, line * 1.25, color="0.88", label="±25%")
    ax.fill_between(line, line / 1.1, line * 1.1, color="0.75", label="±10%")
    ax.plot(line, line, color="0.3", lw=1, label="model = published")
    sns.scatterplot(data=df.to_pandas(), x="published", y="model_value", hue="model", hue_order=models,
                    palette=palette, style="use", style_order=["fit", "validation"], markers={"fit": "o", "validation": "X"},
                    s=60, ax=ax, edgecolor="black", linewidth=0.5)
    meas = df.filter(pl.col("measured_value").is_not_null() & (pl.col("measured_value") > 0))
    if meas.height:  # this sweep's own hardware: context, not a check of the model
        ax.scatter(meas["published"], meas["measured_value"], s=80, facecolors="none", edgecolors="black",
                   linewidths=1.0, label="measured here (other hardware)")
    square_log_axes(ax, lo, hi)
    ax.set_xlabel("published value (the figure's unit: ms, ns, fraction)")
    ax.set_ylabel("model value in this sweep (same unit)")
    ax.set_title("parity (log-log)", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")


def registry() -> list[tuple[str, str, FigureFn]]:
    """(id, title, function) of every figure, in report order."""
    from .figures_measured import measured_vs_model
    from .figures_memmap import memmap_heatmap, memmap_init, memmap_overhead
    from .figures_models import copy_cost, pfnmap_coverage, pfnmap_latency, young_scan

    return [
        ("memmap_init", "memmap init time vs namespace size", memmap_init),
        ("memmap_speedup_heatmap", "Best memmap speedup over align x compound order", memmap_heatmap),
        ("memmap_overhead", "memmap overhead on device and in DRAM", memmap_overhead),
        ("pfnmap_latency", "pfnmap ns/load and copy time vs mapping size", pfnmap_latency),
        ("pfnmap_coverage", "Huge-leaf coverage vs misalignment", pfnmap_coverage),
        ("copy_cost", "Copy cost per size: memcpy, nt call, nt inline", copy_cost),
        ("young_scan", "young scan time per batching and folio order", young_scan),
        ("parity", "Model vs published figures", parity),
        ("measured_vs_model", "Measured on this hardware vs the model", measured_vs_model),
    ]


def render_all(sweep: Sweep, outdir: Path) -> list[Rendered | Skipped]:
    """Every figure of the registry, rendered or skipped with its reason.

    A figure that fails unexpectedly is reported as skipped and raises an AnalysisWarning, so
    one bad figure never costs the whole report (and tests, which turn warnings into errors, see it).
    An OSError (the folder is full or not writable) is raised: that report cannot be written."""
    theme()
    out: list[Rendered | Skipped] = []
    for fid, title, fn in registry():
        try:
            out.append(fn(sweep, outdir))
        except OSError:
            raise  # no space, no permission: the report cannot be written, not a broken figure
        except Exception as e:  # noqa: BLE001 - a report survives one broken figure
            plt.close("all")
            msg = f"could not be drawn: {type(e).__name__}: {e}"
            warnings.warn(f"figure {fid!r} {msg}", AnalysisWarning, stacklevel=2)
            out.append(Skipped(id=fid, title=title, reason=msg))
    return out
