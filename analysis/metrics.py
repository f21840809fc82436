"""Derived metrics over a sweep (polars, lazy): speedups, growth exponents, regimes, winners.

Most functions take a LazyFrame of one model's rows and return a LazyFrame, so a
caller aggregates before anything is collected; those that need a small numeric
solve, and the winners and speedups over `per_variant`'s one row per
configuration, return collected DataFrames of already-aggregated rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np
import polars as pl

from workers.calibrate import FIT, VALIDATION, validation_figures
from workers.hooks import TIE_RTOL, resolve, speedup, tied_best, ties_best  # noqa: F401 (shared with the models' hooks)
from workers.model import STATUS_OK, Figure, Model

from .read import MEASURED, MODELED, ModelRows, Sweep, value_expr


def higher_is_better(model: Model | None, metric: str) -> bool:
    """Whether a larger value of this metric is the better one, as its model declares (`Metric.better`);
    False for a metric the model does not declare or a model no longer registered."""
    if model is None:
        return False
    try:
        return model.metric(metric).higher_is_better
    except KeyError:
        return False


def categorical(dtype: pl.DataType) -> bool:
    """Whether a metric column holds categories (a string such as memmap's `dominant`, or a boolean):
    tabulated by its most common value and compared as same / changed, never by median or ratio."""
    return dtype == pl.Utf8 or dtype == pl.Boolean or isinstance(dtype, (pl.Categorical, pl.Enum))


def headline_metric(model: Model | None, metrics: list[str]) -> str | None:
    """The metric a table shows by default: the model's `headline`, else (a model no longer registered,
    or a sweep without that column) its first time."""
    if model is not None and model.headline in metrics:
        return model.headline
    for suffix in ("_ms", "_ns", "_s"):
        for m in metrics:
            if m.endswith(suffix):
                return m
    return metrics[0] if metrics else None


def ok(lf: pl.LazyFrame) -> pl.LazyFrame:
    return lf.filter(pl.col("status") == STATUS_OK)


def reduce_batches(frames: list[pl.LazyFrame], by: list, aggs: list[pl.Expr], merge: list[pl.Expr]) -> pl.DataFrame:
    """`group_by(by).agg(aggs)` over the rows of all `frames`, one frame at a time.

    Each frame (a batch of a model's parts, `Sweep.scan_batches`) is reduced on the streaming engine and
    folded into the running result by `merge`, which combines two partial results per group (the
    minimum of minimums, the sum of sums): so only decomposable aggregations go here. Polars' streaming
    group_by keeps more state the more rows it reads even when the groups are the same (691,200 memmap
    configurations: 757 MiB over 5 M rows, 1.6 GB over 22 M); a batch at a time bounds the peak by one
    batch's state plus the result."""
    out: pl.DataFrame | None = None
    keys: list[str] = []
    for lf in frames:
        part = lf.group_by(*by).agg(*aggs).collect(engine="streaming")
        if out is None:
            out, keys = part, part.columns[:len(by)]
        elif part.height:
            out = pl.concat([out, part], how="vertical_relaxed").group_by(keys).agg(*merge)
    if out is None:
        raise ValueError("reduce_batches() needs at least one frame")
    return out


def per_variant(rows: ModelRows, axis: str, metric: str, keys: list[str]) -> tuple[list, pl.DataFrame]:
    """Every configuration (`keys`) as one row with one column per value of `axis` ("v0", "v1", ...:
    its metric over ok rows of the default source, null where that variant is not ok), and the values.

    Plain minimums per group, batch by batch (reduce_batches), so one row per configuration whatever
    the number of rows (a point repeated in several parts counts once). Grouping by the key columns
    themselves: a computed combination code costs twice the memory here. Kept on the sweep: the best
    and speedup tables and the Key findings ask for the same frame."""
    def compute() -> tuple[list, pl.DataFrame]:
        values = sorted(rows.axis_values()[axis]["value"].to_list(), key=lambda v: (v is None, v))
        m = pl.col(metric)
        pick = lambda v: pl.col(axis).is_null() if v is None else pl.col(axis) == v  # noqa: E731
        cols = [f"v{i}" for i in range(len(values))]
        group = keys or [pl.lit(0).alias("_config")]
        frames = [ok(lf).filter(m.is_not_null() & m.is_finite())
                  .select(*group, *(pl.when(pick(v)).then(m).alias(c) for c, v in zip(cols, values)))
                  for lf in rows.scan_batches()]
        mins = [pl.col(c).min() for c in cols]
        return values, reduce_batches(frames, keys or ["_config"], mins, mins)

    return rows.sweep.memo((PER_VARIANT, rows.name, axis, metric, tuple(keys)), compute)


@dataclass(frozen=True, slots=True)
class HookRows(ModelRows):
    """A model's rows as its own report functions (workers.hooks) are given them: what ModelRows reads, and
    the steps the report's own tables and figures take: `variants()`, the frame the best tables share;
    `choose()` and `not_varying()`, the axes a figure can show."""

    def choose(self, order: tuple[str, ...], limit: int, exclude: set, most_values: int = 4,
               keep: Mapping[str, tuple] | None = None) -> dict[str, list]:
        return choose(self, order, limit, exclude, most_values, keep)

    def not_varying(self, columns: list[str]) -> str | None:
        return not_varying(self, columns)

    def call(self, hook, *returns: type):
        """What the function a workers.hooks.Hook names returns on these rows: one of `returns`, or None
        (also when the sweep has no rows of the model); anything else is the function's error."""
        if self.name not in self.sweep.models:
            return None
        got = resolve(hook.call)(self)
        if got is not None and not isinstance(got, returns):
            names = " or ".join(f"workers.hooks.{t.__name__}" for t in returns)
            raise TypeError(f"{hook.call} must return a {names} or None (got {type(got).__name__})")
        return got

    def variants(self, axis: str, metric: str, keys: list[str]) -> tuple[pl.DataFrame, dict]:
        """One row per configuration (`keys`), one column per value of `axis`, named str(value), holding its
        `metric` (null where that variant is not ok): per_variant's frame. Also column name -> value."""
        values, wide = per_variant(self, axis, metric, keys)
        names = {str(v): v for v in values if v is not None}
        return wide.rename({f"v{i}": str(v) for i, v in enumerate(values) if v is not None}).drop(
            [f"v{i}" for i, v in enumerate(values) if v is None]), names


def pick(values: list, limit: int, keep: tuple = ()) -> list:
    """At most `limit` of the sorted values, evenly spread, always keeping those in `keep`."""
    if len(values) <= limit:
        return list(values)
    chosen = [v for v in values if v in keep][:limit]
    rest = [v for v in values if v not in chosen]
    need = limit - len(chosen)
    if need > 0:
        idx = sorted({round(i * (len(rest) - 1) / max(need - 1, 1)) for i in range(need)})
        chosen += [rest[i] for i in idx]
    return [v for v in values if v in chosen]


def value_order(v) -> tuple:
    """Sort key of axis values: numbers in order, null (auto) last."""
    return (v is None, v if v is not None and not isinstance(v, (list, tuple)) else 0, str(v))


def shown_values(rows: ModelRows, column: str, most: int | None = None, keep: tuple = ()) -> list | None:
    """The ok values of an axis, sorted, picked down to `most` keeping `keep`; None if not an axis."""
    counts = rows.axis_values().get(column)
    if counts is None:
        return None
    values = sorted(counts["value"].to_list(), key=value_order)
    return pick(values, most, tuple(keep)) if most else values


def choose(rows: ModelRows, order: tuple[str, ...], limit: int, exclude: set, most_values: int = 4,
           keep: Mapping[str, tuple] | None = None) -> dict[str, list]:
    """The axes of `order` that vary among the ok rows (not in `exclude`), in that order, each with
    its values (at most `most_values`, spread by `pick`, keeping those `keep` lists for it), taken
    while their combinations stay within `limit`: {column: values}."""
    chosen: dict[str, list] = {}
    varying = set(rows.varying())
    for c in order:
        if c not in varying or c in exclude:
            continue
        values = (shown_values(rows, c, most_values, (keep or {}).get(c, ())) or [])[:most_values]
        if math.prod(len(v) for v in chosen.values()) * len(values) <= limit:
            chosen[c] = values
    return chosen


def not_varying(rows: ModelRows, columns: list[str]) -> str | None:
    """Why a figure over `columns` cannot be drawn: the model has no ok rows, or one of them takes a single
    value among them; None when each varies."""
    values = rows.axis_values()
    if any(values.get(c) is not None and values[c].height == 0 for c in columns):
        return f"no ok {rows.name} rows in this sweep (see the reasons table)"
    flat = [c for c in columns if values.get(c) is not None and values[c].height < 2]
    if flat:
        return f"{', '.join(c.removeprefix('param_').removeprefix('metric_') for c in flat)} takes a single value among the {rows.name} ok rows of this sweep"
    return None


def reason_counts(lf: pl.LazyFrame, by: list[str] = ()) -> pl.LazyFrame:
    """Infeasible and failed rows by reason (and `by`), most frequent first: (*by, status, reason, n)."""
    return (
        lf.filter(pl.col("status") != STATUS_OK)
        .group_by(*by, "status", "reason")
        .agg(pl.len().alias("n"))
        .sort(["n", "status", "reason"], descending=[True, False, False], nulls_last=True)
    )


def series_points(frames: pl.LazyFrame | pl.DataFrame | list[pl.LazyFrame], x: str, y: str, by: list[str],
                  values: dict[str, list] | None = None) -> pl.DataFrame:
    """Per series (one per combination of `by`; one series when `by` is empty): its distinct x > 0,
    sorted, with the rows (`_w`), the sum (`_y`) and the sum of squares (`_yy`) of log y at each, as
    lists: one collected row per series, sorted by `by`. Rows with y <= 0 are left out. `frames`: one
    frame, or the batches of one (Sweep.scan_batches), folded one at a time.

    The growth fits (`growth_exponents`, `regimes_of`) read only these sums, so the rows are reduced
    once, streaming, to the distinct (series, x) pairs: each series is first coded as one integer
    from the position of its values in `values` (column -> every value it takes; found with one
    streaming pass per column when not given), which keeps the grouping state small."""
    frames = [f.lazy().filter((pl.col(x) > 0) & (pl.col(y) > 0))
              for f in (frames if isinstance(frames, list) else [frames])]
    schema = frames[0].collect_schema()
    if values is None:
        values = {c: pl.concat(frames).group_by(c).len().collect(engine="streaming")[c].to_list() for c in by}
    values = {c: sorted(values[c], key=lambda v: (v is None, v if v is not None else 0)) for c in by}
    code, radix = combination_code(by, values)
    ly = pl.col(y).cast(pl.Float64).log()
    aggs = [pl.len().alias("_w"), ly.sum().alias("_y"), (ly ** 2).sum().alias("_yy")]
    merge = [pl.col("_w", "_y", "_yy").sum()]
    if code is None:  # too many combinations for one integer: group by the columns (more memory)
        return (reduce_batches(frames, [*by, pl.col(x).alias("_x")], aggs, merge)
                .group_by(by).agg(pl.col("_x", "_w", "_y", "_yy").sort_by("_x")).sort(by, nulls_last=True))
    # The sums are one row per (series, x): millions for a sweep with many series and sizes, and polars'
    # group_by takes ~300 B per group. Series are summed a share at a time (disjoint filters on the
    # leading `by` columns), at most MAX_SERIES_PER_PASS combinations each.
    sums = pl.concat([reduce_batches([f.filter(share) for f in frames], [code.alias("_s"), pl.col(x).alias("_x")],
                                     aggs, merge) for share in _shares(by, values, MAX_SERIES_PER_PASS)])
    series = sums.group_by("_s").agg(pl.col("_x", "_w", "_y", "_yy").sort_by("_x")).sort("_s")
    codes = series["_s"].to_numpy()
    keys = {}
    for c, r in reversed(list(zip(by, radix))):
        known = pl.Series(c, [*values[c], None], dtype=schema[c])
        keys[c] = known.gather(codes % r)
        codes = codes // r
    out = series.drop("_s").with_columns(*(keys[c] for c in by)) if by else \
        series.drop("_s").with_columns(pl.lit(0).alias("_all"))
    return out.select(*(by or ["_all"]), "_x", "_w", "_y", "_yy")


def _shares(by: list[str], values: dict[str, list], most: int) -> list[pl.Expr]:
    """Disjoint filters covering every row, one per combination of the leading `by` columns' values, with
    as few leading columns as leave at most `most` combinations of the remaining ones."""
    lead, rest = 0, math.prod(len(values[c]) for c in by)
    while rest > most and lead < len(by):
        rest //= max(1, len(values[by[lead]]))
        lead += 1
    shares = [pl.lit(True)]
    for c in by[:lead]:
        shares = [s & value_expr(c, v) for s in shares for v in values[c]]
    return shares


def combination_code(columns: list[str], values: dict[str, list]) -> tuple[pl.Expr | None, list[int]]:
    """One UInt64 per row that numbers its combination of `columns` (mixed radix over the position of
    each value in `values[column]`, sorted as given), and the radixes; (None, radixes) when the
    combinations do not fit in 63 bits. Grouping by it instead of by the columns keeps a grouping
    over millions of rows small."""
    radix = [len(values[c]) + 1 for c in columns]  # + 1: a value not listed (none, when `values` is right)
    if math.prod(radix) >= 1 << 63:
        return None, radix
    code = pl.lit(0, dtype=pl.UInt64)
    for c, r in zip(columns, radix):
        code = code * r + _position(c, values[c])
    return code, radix


def _position(column: str, values: list) -> pl.Expr:
    """Each row's position in `values` of its value of `column` (len(values) when absent): a chain of
    comparisons for a few values (elementwise, so the streaming engine runs it as it reads), a
    lookup for many."""
    fallback = pl.lit(len(values), dtype=pl.UInt64)
    if len(values) > 16:
        listed = [v for v in values if v is not None]
        found = pl.col(column).replace_strict(listed, list(range(len(listed))), default=None,
                                              return_dtype=pl.UInt64)
        if None in values:
            found = pl.when(pl.col(column).is_null()).then(pl.lit(values.index(None), dtype=pl.UInt64)) \
                .otherwise(found)
        return found.fill_null(fallback)
    expr = None
    for i, v in enumerate(values):
        hit = pl.col(column).is_null() if v is None else pl.col(column) == v
        expr = (pl.when(hit) if expr is None else expr.when(hit)).then(pl.lit(i, dtype=pl.UInt64))
    return fallback if expr is None else expr.otherwise(fallback)


def growth_exponents(points: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Per series of `series_points`: the slope of log(y) on log(x) over its rows (1 = linear
    growth), its rows (`points`) and x range; series with fewer than 2 rows are left out."""
    key = by or ["_all"]
    lx = pl.col("_x").cast(pl.Float64).log()
    n, sx, sy = pl.col("_w").sum(), (pl.col("_w") * lx).sum(), pl.col("_y").sum()
    out = (
        points.explode("_x", "_w", "_y", "_yy").group_by(key, maintain_order=True)
        .agg(((lx * pl.col("_y")).sum() - sx * sy / n) / ((pl.col("_w") * lx * lx).sum() - sx * sx / n),
             n.alias("points"), pl.col("_x").min().alias("x_min"), pl.col("_x").max().alias("x_max"))
        .rename({"_x": "exponent"}).filter(pl.col("points") >= 2)
    )
    return out if by else out.drop("_all")


def regimes_of(series: pl.DataFrame, by: list[str], tol: float = 0.15) -> pl.DataFrame:
    """Per series of `series_points`: the best single break of a continuous two-slope log-log fit.

    Returns by..., break_x (the x where the slope changes; null when it does not), slope_before,
    slope_after and `changes` (the slopes differ by more than `tol`). Series with fewer than 4 rows
    are left out. Every candidate break (each x of the data) is scored for all series at once, so
    the cost grows with the distinct (series, x) pairs times the candidates, not with the rows."""
    key = by or ["_all"]
    x_type = series.schema["_x"].inner
    empty = pl.DataFrame(schema={**{k: series.schema[k] for k in by}, "break_x": x_type,
                                 "slope_before": pl.Float64, "slope_after": pl.Float64, "changes": pl.Boolean})
    series = series.filter(pl.col("_w").list.sum() >= 4).with_row_index("_g")
    if series.height == 0:
        return empty
    groups = series.select("_g", *key)
    pts = series.select("_g", "_x", "_w", "_y", "_yy").explode("_x", "_w", "_y", "_yy")
    cand = pts["_x"].unique().sort()
    slopes, pick = _hinge_fits(pts, cand.cast(pl.Float64).to_numpy(), groups.height)
    found = pick >= 0
    if not found.any():
        return empty
    out = groups.filter(pl.Series(found)).drop("_g").with_columns(
        cand.gather(pick[found]).cast(x_type).alias("break_x"),
        pl.Series("slope_before", slopes[found, 0]),
        pl.Series("slope_after", slopes[found, 0] + slopes[found, 1]),
    ).with_columns(((pl.col("slope_after") - pl.col("slope_before")).abs() > tol).alias("changes"))
    out = out.with_columns(pl.when(pl.col("changes")).then(pl.col("break_x")).alias("break_x"))
    return out.drop("_all") if not by else out


def _hinge_fits(pts: pl.DataFrame, cand: np.ndarray, n_groups: int, block: int = 1 << 19):
    """Least squares of log y on (1, log x, max(log x - log c, 0)) for every series and candidate c.

    `pts`: (_g, _x, _w rows, _y sum of log y, _yy sum of its squares), sorted by (_g, _x). A break
    needs at least 2 rows on each side. Returns each series' slope and change of slope at its best
    break, and the index in `cand` of that break (-1: none usable); among breaks whose residuals are equal within 1e-12, the smallest x. Sums are taken
    around each series' means (so the intercept drops out and they stay well conditioned), and
    the normal equations are solved in closed form, for every (series, candidate) at once."""
    g = pts["_g"].to_numpy()
    w = pts["_w"].to_numpy().astype(float)
    xv = pts["_x"].cast(pl.Float64).to_numpy()
    lx, ys, yys = np.log(xv), pts["_y"].to_numpy(), pts["_yy"].to_numpy()
    starts = np.searchsorted(g, np.arange(n_groups))
    tot_w = np.add.reduceat(w, starts)
    mx, my = np.add.reduceat(w * lx, starts) / tot_w, np.add.reduceat(ys, starts) / tot_w
    xc, yc = lx - mx[g], ys - w * my[g]
    sxx = np.add.reduceat(w * xc * xc, starts)
    sxy = np.add.reduceat(xc * yc, starts)
    syy = np.add.reduceat(yys - 2 * my[g] * ys + w * my[g] ** 2, starts)
    n_c = len(cand)
    rank = np.searchsorted(cand, xv)
    clx = np.log(cand)
    best = np.full((n_groups, 2), np.nan)
    best_pick = np.full(n_groups, -1)
    step = max(1, block // max(n_c, 1))
    for g0 in range(0, n_groups, step):
        g1 = min(g0 + step, n_groups)
        lo, hi = starts[g0], (starts[g1] if g1 < n_groups else len(g))
        cell = (g[lo:hi] - g0) * n_c + rank[lo:hi]
        size = (g1 - g0) * n_c

        def upto(v):  # per (series, candidate): sum of v over the series' rows with x <= candidate
            return np.cumsum(np.bincount(cell, weights=v, minlength=size).reshape(g1 - g0, n_c), axis=1)

        part = slice(lo, hi)
        left_w = upto(w[part])
        rw = tot_w[g0:g1, None] - left_w
        rx = -upto(w[part] * xc[part])  # the centred sums total 0: right = -left
        rxx = sxx[g0:g1, None] - upto(w[part] * xc[part] ** 2)
        ry = -upto(yc[part])
        rxy = sxy[g0:g1, None] - upto(xc[part] * yc[part])
        c = clx[None, :] - mx[g0:g1, None]
        n = tot_w[g0:g1, None]
        sh, sxh, shh, shy = rx - c * rw, rxx - c * rx, rxx - 2 * c * rx + c * c * rw, rxy - c * ry
        shh_c, shy_c = shh - sh * sh / n, shy  # h centred (the y sums are centred already)
        det = sxx[g0:g1, None] * shh_c - sxh * sxh
        usable = (left_w >= 2) & (rw >= 2) & (np.abs(n * det) > 1e-12)
        with np.errstate(divide="ignore", invalid="ignore"):
            b1 = (shh_c * sxy[g0:g1, None] - sxh * shy_c) / det
            b2 = (sxx[g0:g1, None] * shy_c - sxh * sxy[g0:g1, None]) / det
        sse = np.where(usable, syy[g0:g1, None] - b1 * sxy[g0:g1, None] - b2 * shy_c, np.inf)
        low = sse.min(axis=1)
        rows = np.flatnonzero(np.isfinite(low))
        first = np.argmax(sse <= (low + 1e-12)[:, None], axis=1)[rows]
        best_pick[g0 + rows] = first
        best[g0 + rows, 0] = b1[rows, first]
        best[g0 + rows, 1] = b2[rows, first]
    return best, best_pick


PER_VARIANT = "per_variant"  # the memo key of per_variant's frames (Sweep.memo, Sweep.forget)
MAX_SERIES_PER_PASS = 512  # series_points: series combinations summed per pass (x ~1,000 sizes: ~150 MB)


def best_by(lf: pl.LazyFrame, axis: str, metric: str, keys: list[str], minimize: bool = True) -> pl.LazyFrame:
    """Per configuration (`keys`): the `axis` values with the best metric and its value, ties kept.

    `tied`: every value that ties the best (`ties_best`), sorted; `best`: the first of them;
    `runner_up_value`: the best metric among the values that do not tie (null when none); `variants`:
    feasible values compared. Where every variant takes the same time (e.g. no huge leaf is possible,
    so the leaf orders do the same work) all of them tie."""
    m = pl.col(metric)
    top = m.min() if minimize else m.max()
    near = ties_best(m, top)
    return (
        ok(lf).filter(m.is_not_null() & m.is_finite())
        .group_by(keys or [pl.lit(0).alias("_all")])
        .agg(
            pl.col(axis).filter(near).sort(nulls_last=True).alias("tied"),
            top.alias("best_value"),
            (m.filter(~near).min() if minimize else m.filter(~near).max()).alias("runner_up_value"),
            pl.len().alias("variants"),
        )
        .with_columns(pl.col("tied").list.first().alias("best"), pl.col("tied").list.len().alias("n_tied"))
        .sort(keys or "_all", nulls_last=True)
        .drop([] if keys else ["_all"])
    )


def win_counts(values: list, wide: pl.DataFrame, minimize: bool) -> pl.DataFrame:
    """How many configurations of a `per_variant` frame (`values`: its variants) each outcome wins, and
    its share: (tied, configurations, tie, best, share), most first.

    An outcome is one variant winning alone (`tie` false) or a set of variants tying (`tie` true,
    counted apart from the wins of each of them)."""
    _, best, near = tied_best(wide, [f"v{i}" for i in range(len(values))], minimize)
    near = near[np.isfinite(best)]
    bits = near.astype(np.int64) @ (1 << np.arange(len(values), dtype=np.int64))
    codes, counts = np.unique(bits, return_counts=True)
    tied = [[v for i, v in enumerate(values) if code >> i & 1] for code in codes]
    total = max(int(counts.sum()), 1)
    return (pl.DataFrame({"tied": tied, "configurations": counts.astype(np.int64)},
                         schema_overrides={"configurations": pl.Int64})
            .with_columns((pl.col("tied").list.len() > 1).alias("tie"), pl.col("tied").list.first().alias("best"),
                          (pl.col("configurations") / total).alias("share"))
            .sort(["configurations", "tie"], descending=[True, False]))


def speedup_summary(values: list, wide: pl.DataFrame, axis: str, baseline: object, higher: bool) -> pl.DataFrame:
    """From a `per_variant` frame (`values`: its variants): per variant, the configurations where it and
    the baseline are both ok, and the min / median / max of baseline / variant (variant / baseline
    when higher is better)."""
    if baseline not in values:
        return pl.DataFrame(schema={axis: pl.Object, "configurations": pl.Int64, "min": pl.Float64,
                                    "median": pl.Float64, "max": pl.Float64})
    base = pl.col(f"v{values.index(baseline)}")
    rows = []
    for i, v in enumerate(values):
        var = pl.col(f"v{i}")
        ratio = (var / base) if higher else (base / var)
        r = (wide.filter(base.is_not_null() & var.is_not_null() & (var > 0) & (base > 0))
             .select(pl.len().alias("configurations"), ratio.min().alias("min"), ratio.median().alias("median"),
                     ratio.max().alias("max")).row(0, named=True))
        if r["configurations"]:
            rows.append({axis: v, **r})
    return pl.DataFrame(rows) if rows else pl.DataFrame({axis: [], "configurations": []})


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
    of the model, the leave-one-out error the profile records for a fit figure (`loo_low` .. `loo_high`, a range
where the other figures leave a cost free; `loo_error` the end farther from 0), and whether
    the point is in the sweep at all."""
    rows, queries = [], {MODELED: [], MEASURED: []}
    profile = sweep.profile_object()
    for name in sweep.models:
        model = sweep.model_object(name)
        if model is None:
            continue
        columns = list(sweep.schema(name))
        figures = [(f, FIT) for f in model.calibration.figures]
        figures += [(f, VALIDATION) for f in (validation_figures(model, profile) if profile else ())]
        for f, use in figures:
            expr = figure_filter(model, f, columns) if f.metric in columns else None
            low, high = (profile.leave_one_out.get(f.id) if profile is not None and use == FIT else None) or (None,) * 2
            farther = None if low is None else (high if abs(high) > abs(low) else low)
            rows.append({"id": f.id, "model": name, "metric": f.metric, "unit": f.unit, "bound": f.bound,
                         "published": float(f.published), "source": f.source, "use": use, "loo_error": farther,
                         "loo_low": low, "loo_high": high})
            for src, qs in queries.items():
                if expr is not None and src in sweep.sources(name):
                    qs.append(sweep.scan(name, src).filter(expr).select(
                        pl.lit(f.id).alias("id"), pl.col(f.metric).cast(pl.Float64).median().alias(f"{src}_value"),
                        pl.len().alias(f"{src}_rows")))
    schema = {"id": pl.Utf8, "model": pl.Utf8, "metric": pl.Utf8, "unit": pl.Utf8, "bound": pl.Utf8,
              "published": pl.Float64,
              "source": pl.Utf8, "use": pl.Utf8, "loo_error": pl.Float64, "loo_low": pl.Float64,
              "loo_high": pl.Float64}
    out = pl.DataFrame(rows, schema=schema)
    for src, qs in queries.items():
        found = pl.concat(pl.collect_all(qs)) if qs else pl.DataFrame(
            schema={"id": pl.Utf8, f"{src}_value": pl.Float64, f"{src}_rows": pl.UInt32})
        out = out.join(found, on="id", how="left").with_columns(pl.col(f"{src}_rows").fill_null(0))
    return out.rename({"model_rows": "rows"}).with_columns(
        figure_error("model_value").alias("error"),
        (pl.col("rows") > 0).alias("in_sweep"),
        figure_error("measured_value").alias("measured_error"),
    )


def figure_error(value: str) -> pl.Expr:
    """A value's relative error against its figure's published number (workers.model.Figure.error): a bound's
    ("50%+") only where the value falls on its wrong side."""
    e = (pl.col(value) - pl.col("published")) / pl.col("published")
    return pl.when(pl.col("bound") == ">=").then(pl.min_horizontal(e, 0.0)) \
        .when(pl.col("bound") == "<=").then(pl.max_horizontal(e, 0.0)).otherwise(e)


def measured_vs_model(model_rows: pl.LazyFrame, measured_rows: pl.LazyFrame, metric: str,
                      keys: list[str]) -> pl.LazyFrame:
    """Per point measured on both sides: `keys`, the measured and modeled metric, and measured / model."""
    meas = ok(measured_rows).filter(pl.col(metric).is_not_null()).select(
        "point_id", *keys, pl.col(metric).alias("measured"))
    mod = ok(model_rows).filter(pl.col(metric).is_not_null()).select("point_id", pl.col(metric).alias("model"))
    return meas.join(mod, on="point_id", how="inner").with_columns(
        (pl.col("measured") / pl.col("model")).alias("ratio"))
