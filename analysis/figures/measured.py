"""The figure of a sweep with source = "both": each measured point against its modeled value.

See figures.py for the contract. One panel per model and metric the measure
backend fills (the model's Measurement declares them); a point is one measured point (same point_id as its modeled
row), at its median, with a line down to its least disturbed time
(measure_min), so the reader sees both how far the profile is from this host
and how noisy the host was.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import seaborn as sns

from analysis.metrics import ok
from analysis.read import MEASURED, MODELED, ModelRows, Sweep
from workers.dataset import unit_of

from .plotting import Rendered, Skipped, save, square_log_axes


def panels(rows: ModelRows) -> list[tuple[str, str, str]]:
    """(metric, colour by, panel title) for every metric a measured row of the model can fill: the
    metrics its Measurement declares, coloured by the axis of its comparison (strategy, leaf order)."""
    obj = rows.model
    if obj is None or obj.measurement is None or obj.report.comparison is None:
        return []
    return [(metric, obj.report.comparison.column, f"{rows.name}: {metric.removeprefix('metric_').replace('_', ' ')}")
            for metric in obj.measurement.metric_columns]


def pairs(rows: ModelRows, metric: str, hue: str) -> pl.DataFrame:
    """Per point measured and modeled: the hue axis (as a label), measured median and min, modeled value."""
    meas = ok(rows.scan(MEASURED)).filter(pl.col(metric).is_not_null() & (pl.col(metric) > 0)).select(
        "point_id", hue, pl.col(metric).alias("measured"), pl.col("measure_min").alias("least"))
    mod = ok(rows.scan(MODELED)).filter(pl.col(metric) > 0).select("point_id", pl.col(metric).alias("model"))
    df = meas.join(mod, on="point_id", how="inner").collect(engine="streaming")
    return df.with_columns(pl.Series("group", [rows.label(hue, v) for v in df[hue].to_list()],
                                     dtype=pl.Utf8))


def measured_vs_model(sweep: Sweep, outdir: Path) -> Rendered | Skipped:
    """Measured (median, and a line to measure_min) vs modeled, log-log, one panel per model and metric."""
    fid, title = "measured_vs_model", "Measured on this hardware vs the model"
    both = [m for m in sweep.models if {MEASURED, MODELED} <= set(sweep.sources(m))]
    if not both:
        return Skipped(id=fid, title=title, reason="no model in this sweep has both measured and modeled rows "
                                                   "(a spec with source = \"both\" makes them)")
    jobs = []
    for rows in map(sweep.rows, both):
        for metric, hue, name in panels(rows):
            if all(c in rows.schema() for c in (metric, hue, "measure_min")):
                df = pairs(rows, metric, hue)
                if df.height:
                    jobs.append((metric, name, df))
    if not jobs:
        return Skipped(id=fid, title=title, reason="no measured point of this sweep is ok with a modeled twin")
    cols = min(2, len(jobs))
    rows = -(-len(jobs) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.6 * cols, 4.8 * rows), squeeze=False)
    ratios = []
    for ax, (metric, name, df) in zip(axes.ravel(), jobs):
        _panel(ax, df, unit_of(metric), name)
        ratios.append((name, float((df["measured"] / df["model"]).median()), df.height))
    for ax in axes.ravel()[len(jobs):]:
        ax.set_visible(False)
    fig.suptitle(f"{title} (profile {sweep.manifest.get('profile', '?')})")
    fig.tight_layout()
    said = "; ".join(f"{name}: median measured / model {r:.2f} over {n} points" for name, r, n in ratios)
    caption = ("Each marker is one measured point at its median, the thin line below it reaching its least "
               "disturbed time (measure_min); x is the modeled value at the same point with the sweep's profile, "
               "which was not fit to this hardware (memsweep calibrate --from fits one). Grey band: ±25%. "
               f"{said}.")
    return save(fig, outdir, fid, title, caption)


def _panel(ax, df: pl.DataFrame, unit: str, name: str) -> None:
    values = [v for c in ("measured", "least", "model") for v in df[c].to_list() if v and v > 0]
    lo, hi = min(values) / 1.3, max(values) * 1.3
    line = np.geomspace(lo, hi, 50)
    ax.fill_between(line, line / 1.25, line * 1.25, color="0.9")
    ax.plot(line, line, color="0.3", lw=1)
    groups = sorted(df["group"].unique().to_list())
    palette = dict(zip(groups, sns.color_palette("colorblind", len(groups))))
    for g in groups:
        part = df.filter(pl.col("group") == g)
        ax.vlines(part["model"], part["least"], part["measured"], color=palette[g], lw=1.0)
        ax.scatter(part["model"], part["measured"], color=palette[g], edgecolor="black", linewidth=0.4, s=28,
                   label=g)
    square_log_axes(ax, lo, hi)
    ax.set_xlabel(f"modeled ({unit})")
    ax.set_ylabel(f"measured ({unit})")
    ax.set_title(name, fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
