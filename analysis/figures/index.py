"""The report's figures: which exist for a sweep, and the parity plot.

The figures of a model are the ones it declares (workers.plots.Lines, or a workers.hooks.Hook), drawn by
figures.declared; parity, measured_vs_model, model_vs_kernel and kernel_gains span every model. Every figure
function takes a Sweep and an output folder and returns Rendered (PNG + SVG
written) or Skipped (a column it needs is absent, or nothing it plots varies in
this sweep). Data are aggregated with polars (median per series and x) before
seaborn sees them; seaborn never gets raw rows.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Callable

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import seaborn as sns

from analysis.exceptions import AnalysisWarning
from analysis.metrics import published_comparison
from analysis.read import Sweep

from .plotting import Rendered, Skipped, save, square_log_axes, theme

FigureFn = Callable[[Sweep, Path], "Rendered | Skipped"]


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
    loo = [(i, v * 100) for i, v in enumerate(err["loo_error"].to_list()) if v is not None]
    if loo:  # each fitted figure's error when a fit did not see it
        bx.scatter([v for _, v in loo], [i for i, _ in loo], marker="D", s=14, color="0.1", zorder=3,
                   label="leave-one-out error")
        ranges = [(i, lo * 100, hi * 100) for i, (lo, hi) in enumerate(zip(err["loo_low"], err["loo_high"]))
                  if lo is not None and lo != hi]
        if ranges:  # the other figures leave a cost free: every equally good fit predicts somewhere in the range
            bx.hlines([i for i, _, _ in ranges], [lo for _, lo, _ in ranges], [hi for _, _, hi in ranges],
                      color="0.1", lw=2.2, zorder=3, label="leave-one-out range (a cost left free)")
        bx.legend(loc="lower right", fontsize=7)
    bx.set_yticks(range(err.height), err["id"].to_list(), fontsize=7)
    bx.invert_yaxis()
    bx.axvline(0, color="0.3", lw=1)
    for lim in (-10, 10):
        bx.axvline(lim, color="0.6", lw=0.8, ls="--")
    bx.set_xlabel("model error vs published (%)")
    bx.set_title("signed error per figure (dashed: ±10%)", fontsize=10)
    fig.suptitle(f"{title}: {df.height} of {table.height} figures in this sweep")
    fig.tight_layout()
    val, fit = (df.filter(pl.col("use") == u) for u in ("validation", "fit"))
    n_val = val.height
    caption = (f"Each point is one published figure at its own parameters: circles are the figures the profile was "
               f"fit to, crosses (hatched bars, listed last) the {n_val} validation figures of the profile, predicted "
               f"and never fit; "
               f"the parity panel's grey bands are ±10% and ±25%; open circles, if any, are this sweep's own "
               f"measurements at that point; black diamonds are each fitted figure's leave-one-out error (predicted by "
               f"a fit without it; a black bar where the other figures leave a cost free and the equally good fits "
               f"to them predict anywhere along it, the diamond at its end farther from 0). {_errors(fit, 'Leave-one-out (fitted figures, each left out of its fit)', 'loo_error')} "
               f"{_errors(val, 'Validation figures (never fit)')} "
               f"{_errors(fit, 'Fitted figures (in-sample, not a test of accuracy)')} "
               f"Profile: {sweep.manifest.get('profile', '?')}.")
    return save(fig, outdir, fid, title, caption)


def _errors(df: pl.DataFrame, what: str, column: str = "error") -> str:
    """"<what>: median |error| x%, largest y% (id)." for one group of figures, or "" when it has none."""
    df = df.filter(pl.col(column).is_not_null())
    if df.height == 0:
        return ""
    worst = df.sort(pl.col(column).abs(), descending=True).row(0, named=True)
    return (f"{what}: median |error| {float(df[column].abs().median()):.1%}, largest {worst[column]:+.1%} "
            f"({worst['id']}).")


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


def registry(sweep: Sweep) -> list[tuple[str, str, FigureFn]]:
    """(id, title, function) of every figure of this sweep, in report order: the figures each model of
    the sweep declares (Report.plots, drawn by declared.draw), then the parity plot, the
    measured-vs-model plot and the model-vs-kernel plot."""
    from .declared import declared, draw
    from .kernel import kernel_gains, model_vs_kernel
    from .measured import measured_vs_model

    out: list[tuple[str, str, FigureFn]] = [
        (p.id, p.title, lambda sw, outdir, m=m, p=p: draw(sw.rows(m), p, outdir)) for m, p in declared(sweep)]
    return out + [("parity", "Model vs published figures", parity),
                  ("measured_vs_model", "Measured on this hardware vs the model", measured_vs_model),
                  ("model_vs_kernel", "The model against the real kernel", model_vs_kernel),
                  ("kernel_gains", "Each variant's gain in the real kernel against the model's", kernel_gains)]


def render_all(sweep: Sweep, outdir: Path) -> list[Rendered | Skipped]:
    """Every figure of the registry, rendered or skipped with its reason.

    A figure that fails unexpectedly is reported as skipped and raises an AnalysisWarning, so
    one bad figure never costs the whole report (and tests, which turn warnings into errors, see it).
    An OSError (the folder is full or not writable) is raised: that report cannot be written."""
    theme()
    out: list[Rendered | Skipped] = []
    for fid, title, fn in registry(sweep):
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
