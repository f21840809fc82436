"""Derived metrics over a sweep (polars, lazy): speedups, growth exponents, regimes, winners.

Every function takes a LazyFrame of one model's rows and returns a LazyFrame
(or, for the few that need a small numeric solve, a collected DataFrame of
already-aggregated rows), so a caller aggregates before anything is collected.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from workers.calibrate import FIT, VALIDATION, validation_figures
from workers.model import STATUS_OK, Figure, Model

from .read import MEASURED, MODELED, Sweep, value_expr


@dataclass(frozen=True, kw_only=True, slots=True)
class Comparison:
    """Which axis a model's variants live on, the baseline value, and the headline metric."""

    model: str
    axis: str  # param column
    baseline: object
    metric: str
    label: str  # what a variant is called in tables ("strategy", "leaf order", ...)


# The comparisons a kernel engineer asks of each shipped model (MODEL.md).
COMPARISONS = {
    "memmap": Comparison(model="memmap", axis="param_strategy", baseline="slow",
                         metric="metric_init_ms", label="strategy"),
    "copy": Comparison(model="copy", axis="param_strategy", baseline="memcpy",
                       metric="metric_ns_per_copy", label="copy path"),
    "pfnmap": Comparison(model="pfnmap", axis="param_compound_order", baseline=0,
                         metric="metric_ns_per_load", label="largest leaf order"),
    "young": Comparison(model="young", axis="param_batching", baseline="per_pte",
                        metric="metric_scan_ms", label="batching"),
}
HIGHER_IS_BETTER = ("_gbs", "speedup", "coverage", "_fraction_huge", "_hit")


def higher_is_better(metric: str) -> bool:
    """Whether a larger value of this metric is the better one (bandwidth, speedup, coverage)."""
    return any(tag in metric for tag in HIGHER_IS_BETTER)


def headline_metric(model: str, metrics: list[str]) -> str | None:
    """The metric a table shows by default: the model's comparison metric, else its first time."""
    comp = COMPARISONS.get(model)
    if comp is not None and comp.metric in metrics:
        return comp.metric
    for suffix in ("_ms", "_ns", "_s"):
        for m in metrics:
            if m.endswith(suffix):
                return m
    return metrics[0] if metrics else None


def ok(lf: pl.LazyFrame) -> pl.LazyFrame:
    return lf.filter(pl.col("status") == STATUS_OK)


def reason_counts(lf: pl.LazyFrame, by: list[str] = ()) -> pl.LazyFrame:
    """Infeasible and failed rows by reason (and `by`), most frequent first: (*by, status, reason, n)."""
    return (
        lf.filter(pl.col("status") != STATUS_OK)
        .group_by(*by, "status", "reason")
        .agg(pl.len().alias("n"))
        .sort(["n", "status", "reason"], descending=[True, False, False], nulls_last=True)
    )


def speedup(lf: pl.LazyFrame, axis: str, baseline: object, metric: str, keys: list[str],
            higher: bool = False) -> pl.LazyFrame:
    """Each row with `baseline_value` and `speedup` = how many times better than the baseline
    variant at the same `keys` (all other axes); null where the baseline is missing."""
    base = ok(lf).filter(pl.col(axis) == baseline).select(*keys, pl.col(metric).alias("baseline_value"))
    joined = ok(lf).join(base, on=keys, how="left", nulls_equal=True) if keys else \
        ok(lf).join(base, how="cross")
    ratio = pl.col(metric) / pl.col("baseline_value") if higher else pl.col("baseline_value") / pl.col(metric)
    return joined.with_columns(pl.when(pl.col(metric) > 0).then(ratio).alias("speedup"))


def series_medians(lf: pl.LazyFrame, x: str, y: str, by: list[str]) -> pl.LazyFrame:
    """Median of `y` per (series, x), sorted: what a figure plots instead of raw rows."""
    return (
        ok(lf).filter(pl.col(y).is_not_null() & pl.col(y).is_finite())
        .group_by(*by, x).agg(pl.col(y).median(), pl.len().alias("n"))
        .sort([*by, x], nulls_last=True)
    )


def loglog_exponent(lf: pl.LazyFrame, x: str, y: str, by: list[str]) -> pl.LazyFrame:
    """Per series: the slope of log(y) on log(x) (1 = linear growth), with points and x range."""
    lx, ly = pl.col(x).cast(pl.Float64).log(), pl.col(y).cast(pl.Float64).log()
    keys = by or [pl.lit(0).alias("_all")]
    out = (
        ok(lf).filter((pl.col(x) > 0) & (pl.col(y) > 0))
        .group_by(keys)
        .agg(
            (pl.cov(lx, ly) / lx.var()).alias("exponent"),
            pl.len().alias("points"),
            pl.col(x).min().alias("x_min"),
            pl.col(x).max().alias("x_max"),
        )
        .filter(pl.col("points") >= 2)
    )
    return out if by else out.drop("_all")


def regime_changes(df: pl.DataFrame, x: str, y: str, by: list[str], tol: float = 0.15) -> pl.DataFrame:
    """Per series of (x, y) points: the best single break of a continuous two-slope log-log fit.

    Returns by..., break_x (the x where the slope changes; null when it does not), slope_before,
    slope_after and `changes` (the slopes differ by more than `tol`). Series with fewer than 4 points are left out.
    Vectorized over series: one least-squares solve per candidate break, batched.
    """
    key = by or ["_all"]
    d = df.filter((pl.col(x) > 0) & (pl.col(y) > 0)).select(
        *(by or [pl.lit(0).alias("_all")]),
        pl.col(x).cast(pl.Float64).log().alias("_lx"),
        pl.col(y).cast(pl.Float64).log().alias("_ly"),
        pl.col(x).alias("_x"),
    )
    d = d.with_columns(pl.len().over(key).alias("_n")).filter(pl.col("_n") >= 4)
    empty = pl.DataFrame(schema={**{k: d.schema[k] for k in by}, "break_x": df.schema.get(x, pl.Float64),
                                 "slope_before": pl.Float64, "slope_after": pl.Float64, "changes": pl.Boolean})
    if d.height == 0:
        return empty
    groups = d.select(key).unique(maintain_order=True).with_row_index("_g")
    d = d.join(groups, on=key, how="left", nulls_equal=True)
    candidates = d.select("_x", "_lx").unique().sort("_x")
    best_sse = np.full(groups.height, np.inf)
    best = np.full((groups.height, 3), np.nan)
    best_x = np.full(groups.height, np.nan)
    for cx, clx in candidates.iter_rows():
        h = (pl.col("_lx") - clx).clip(0.0, None)
        inside = pl.col("_x") > cx
        sums = d.group_by("_g").agg(
            pl.len().alias("n"), pl.col("_lx").sum().alias("sx"), h.sum().alias("sh"),
            (pl.col("_lx") ** 2).sum().alias("sxx"), (pl.col("_lx") * h).sum().alias("sxh"),
            (h * h).sum().alias("shh"), pl.col("_ly").sum().alias("sy"),
            (pl.col("_lx") * pl.col("_ly")).sum().alias("sxy"), (h * pl.col("_ly")).sum().alias("shy"),
            (pl.col("_ly") ** 2).sum().alias("syy"),
            (~inside).sum().alias("left"), inside.sum().alias("right"),
        ).sort("_g")
        s = {c: sums[c].to_numpy().astype(float) for c in sums.columns}
        g = sums["_g"].to_numpy()
        a = np.stack([np.stack([s["n"], s["sx"], s["sh"]], -1), np.stack([s["sx"], s["sxx"], s["sxh"]], -1),
                      np.stack([s["sh"], s["sxh"], s["shh"]], -1)], 1)
        b = np.stack([s["sy"], s["sxy"], s["shy"]], -1)
        usable = (s["left"] >= 2) & (s["right"] >= 2) & (np.abs(np.linalg.det(a)) > 1e-12)
        if not usable.any():
            continue
        coef = np.linalg.solve(a[usable], b[usable][..., None])[..., 0]
        sse = s["syy"][usable] - np.einsum("ij,ij->i", coef, b[usable])
        gi = g[usable]
        better = sse < best_sse[gi] - 1e-12
        best_sse[gi[better]] = sse[better]
        best[gi[better]] = coef[better]
        best_x[gi[better]] = cx
    found = ~np.isnan(best_x)
    if not found.any():
        return empty
    out = groups.filter(pl.Series(found)).drop("_g").with_columns(
        pl.Series("break_x", best_x[found]).cast(df.schema.get(x, pl.Float64)),
        pl.Series("slope_before", best[found, 1]),
        pl.Series("slope_after", best[found, 1] + best[found, 2]),
    ).with_columns(((pl.col("slope_after") - pl.col("slope_before")).abs() > tol).alias("changes"))
    out = out.with_columns(pl.when(pl.col("changes")).then(pl.col("break_x")).alias("break_x"))
    return out.drop("_all") if not by else out


def best_by(lf: pl.LazyFrame, axis: str, metric: str, keys: list[str], minimize: bool = True) -> pl.LazyFrame:
    """Per configuration (`keys`): the `axis` value with the best metric, its value, and the
    runner-up's value (null when only one variant is feasible)."""
    order = pl.col(metric).sort(descending=not minimize)
    return (
        ok(lf).filter(pl.col(metric).is_not_null() & pl.col(metric).is_finite())
        .group_by(keys or [pl.lit(0).alias("_all")])
        .agg(
            pl.col(axis).sort_by(metric, descending=not minimize).first().alias("best"),
            order.first().alias("best_value"),
            order.get(1, null_on_oob=True).alias("runner_up_value"),
            pl.len().alias("variants"),
        )
        .sort(keys or "_all", nulls_last=True)
        .drop([] if keys else ["_all"])
    )


def win_counts(best: pl.LazyFrame) -> pl.LazyFrame:
    """How many configurations each variant wins, and its share: (best, configurations, share)."""
    return (
        best.group_by("best").agg(pl.len().alias("configurations"))
        .with_columns((pl.col("configurations") / pl.col("configurations").sum()).alias("share"))
        .sort("configurations", descending=True)
    )


def speedup_summary(sp: pl.LazyFrame, axis: str) -> pl.LazyFrame:
    """Per variant: configurations compared and the min / median / max speedup over the baseline."""
    return (
        sp.filter(pl.col("speedup").is_not_null() & pl.col("speedup").is_finite())
        .group_by(axis)
        .agg(pl.len().alias("configurations"), pl.col("speedup").min().alias("min"),
             pl.col("speedup").median().alias("median"), pl.col("speedup").max().alias("max"))
        .sort(axis, nulls_last=True)
    )


def group_medians(lf: pl.LazyFrame, by: list[str], metrics: list[str], flags: tuple[str, ...] = ()) -> pl.LazyFrame:
    """Median of each metric, and whether any row has each boolean flag, per group of `by` over ok
    rows (e.g. memmap overhead by map location, struct page size and compound order)."""
    return (ok(lf).group_by(by).agg(*(pl.col(m).median() for m in metrics), *(pl.col(f).any() for f in flags))
            .sort(by, nulls_last=True))


def figure_filter(model: Model, figure: Figure, columns: list[str]) -> pl.Expr | None:
    """Rows of the dataset that are this published figure's point: every axis of the model at
    the figure's value (or the axis default); None if a value cannot be matched."""
    expr = pl.col("status") == STATUS_OK
    for axis in model.axes:
        if axis.column not in columns:
            return None
        try:
            value = axis.canonical(figure.params.get(axis.name, axis.default))
        except ValueError:
            return None
        expr = expr & value_expr(axis.column, value)
    return expr


def published_comparison(sweep: Sweep) -> pl.DataFrame:
    """Every published figure of every model in the sweep (`use` "fit": the models' calibration figures;
    "validation": the profile's validation figures, never fit): published value, the sweep's modeled value
    at the same point (and its measured value, when the sweep measured that point), relative error
    of the model, and whether the point is in the sweep at all."""
    rows, queries = [], {MODELED: [], MEASURED: []}
    profile = sweep.profile_object()
    for name in sweep.models:
        model = sweep.model_object(name)
        if model is None:
            continue
        columns = list(sweep.schema(name))
        figures = [(f, FIT) for f in model.figures()]
        figures += [(f, VALIDATION) for f in (validation_figures(model, profile) if profile else ())]
        for f, use in figures:
            expr = figure_filter(model, f, columns) if f.metric in columns else None
            rows.append({"id": f.id, "model": name, "metric": f.metric, "unit": f.unit,
                         "published": float(f.published), "source": f.source, "use": use})
            for src, qs in queries.items():
                if expr is not None and src in sweep.sources(name):
                    qs.append(sweep.scan(name, src).filter(expr).select(
                        pl.lit(f.id).alias("id"), pl.col(f.metric).cast(pl.Float64).median().alias(f"{src}_value"),
                        pl.len().alias(f"{src}_rows")))
    schema = {"id": pl.Utf8, "model": pl.Utf8, "metric": pl.Utf8, "unit": pl.Utf8, "published": pl.Float64,
              "source": pl.Utf8, "use": pl.Utf8}
    out = pl.DataFrame(rows, schema=schema)
    for src, qs in queries.items():
        found = pl.concat(pl.collect_all(qs)) if qs else pl.DataFrame(
            schema={"id": pl.Utf8, f"{src}_value": pl.Float64, f"{src}_rows": pl.UInt32})
        out = out.join(found, on="id", how="left").with_columns(pl.col(f"{src}_rows").fill_null(0))
    return out.rename({"model_rows": "rows"}).with_columns(
        ((pl.col("model_value") - pl.col("published")) / pl.col("published")).alias("error"),
        (pl.col("rows") > 0).alias("in_sweep"),
        ((pl.col("measured_value") - pl.col("published")) / pl.col("published")).alias("measured_error"),
    )


def measured_vs_model(model_rows: pl.LazyFrame, measured_rows: pl.LazyFrame, metric: str,
                      keys: list[str]) -> pl.LazyFrame:
    """Per point measured on both sides: `keys`, the measured and modeled metric, and measured / model."""
    meas = ok(measured_rows).filter(pl.col(metric).is_not_null()).select(
        "point_id", *keys, pl.col(metric).alias("measured"))
    mod = ok(model_rows).filter(pl.col(metric).is_not_null()).select("point_id", pl.col(metric).alias("model"))
    return meas.join(mod, on="point_id", how="inner").with_columns(
        (pl.col("measured") / pl.col("model")).alias("ratio"))
