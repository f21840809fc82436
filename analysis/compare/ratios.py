"""A numeric metric in `memsweep compare`: B/A per point, its verdicts, and what a block prints.

Each point is better / worse, `=` (equal), `~` (not a change by the rule) or `n<3` (too few samples for a
verdict). RULE, after LKP's (lib/changed_stat.rb, and its `compare` report): where a side's value rests
on samples (measured rows: the runs; kernel rows: the boots, [kernel] boots), a point is better or
worse only when each side has at least MIN_SAMPLES samples, their ranges [min, max] do not overlap, and
B/A is more than MIN_CHANGE from 1 (LKP's threshold for the performance metrics it knows; 5% for
others); such a point is a significant change. A modeled row with an error bar (workers.interval: the
answer moved by the most over- and under-predicted held-out figure, the answers of the fits that left a
figure out, and wider where no figure checked the point) rests on its bar the same way (BAR_RULE): a point
is better or worse only when the two sides' intervals are apart (a sample range, or a bar), and B/A is more
than MIN_CHANGE from 1; a change inside them is `~`. Two modeled values are two computations, not samples: a point whose bars are
apart is "outside both error bars", never a significant change in the sampled rule's sense (mail.py
marks it `apart`, not `**`). Rows with neither (a count, a schema-6 sweep's answers) differ or not:
every difference between them is the computation's, and is a change but not a sampled one. Up to
MAX_POINTS distinct rows print one row each; more print B/A grouped by the one or two axes that explain
most of the variance of log B/A (or the `--by` axes) and the TOP largest changes, each distinct row once
(axes.View). The histogram of B/A is for the page's figure.
"""

from __future__ import annotations

import math

import polars as pl

from analysis import evidence
from analysis.read import ModelRows
from analysis.report.overview import Table
from analysis.read import EQUAL_REL
from analysis.tables import as_count, bar_text, format_value, improvement

from .axes import MAX_ROWS, View, cells, merged

MAX_POINTS = 40  # up to this many points: one row per configuration
MAX_GROUPS = 30  # a grouped table has at most this many rows
MAX_BY_GROUPS = 60  # ... and at most this many when --by chose its axes
PAIR_GAIN = 0.05  # a second grouping axis must explain this much more of the variance of log B/A
TOP = 10  # largest changes listed for a big comparison
BETTER, WORSE, NOISE, EQUAL, FEW = "better", "worse", "~", "=", "n<3"
# a modeled count of a build's work (memmap's instructions) against a kernel its costs were not fit to: no
# verdict, the model's costs are another build's (compare.py, _unfit)
UNFIT = "not fit"
VERDICTS = (BETTER, WORSE, NOISE, EQUAL, FEW, UNFIT)
MIN_SAMPLES = 3  # LKP and mmtests: no verdict on fewer samples a side
MIN_CHANGE = 0.01  # LKP: changes of 1% or less of a known performance metric are dropped
RULE = (f"a sampled point changes when each side has at least {MIN_SAMPLES} samples (runs; a kernel row's "
        f"boots), their ranges [min, max] are apart and B/A is more than {MIN_CHANGE:.0%} from 1 (LKP's rule)")
BAR_RULE = (f"a modeled point changes when the two sides' error bars (or a bar and a sample range) are apart "
            f"and B/A is more than {MIN_CHANGE:.0%} from 1")
HIST_SCHEMA = {"lo": pl.Float64, "hi": pl.Float64, "n": pl.UInt32, "significant": pl.UInt32}


def verdict(higher: bool) -> pl.Expr:
    """`=` equal; where a side rests on samples or an error bar (RULE, BAR_RULE): `n<3` with fewer than
    MIN_SAMPLES on a sampled side, `~` when the intervals overlap or the change is MIN_CHANGE or less; else
    better / worse by the metric's direction."""
    a, b = pl.col("a"), pl.col("b")
    spread = pl.col("a_spread") | pl.col("b_spread")
    equal = (b - a).abs() <= EQUAL_REL * pl.max_horizontal(a.abs(), b.abs())
    few = pl.any_horizontal([pl.col(f"{t}_spread") & ~pl.col(f"{t}_bar") & (pl.col(f"{t}_n").fill_null(0) < MIN_SAMPLES)
                             for t in "ab"])
    overlap = (pl.col("a_lo") <= pl.col("b_hi")) & (pl.col("b_lo") <= pl.col("a_hi"))
    small = (b - a).abs() <= MIN_CHANGE * a.abs()
    better = (b > a) if higher else (b < a)
    return (pl.when(equal).then(pl.lit(EQUAL)).when(few).then(pl.lit(FEW))
            .when(spread & (overlap | small)).then(pl.lit(NOISE))
            .when(better).then(pl.lit(BETTER)).otherwise(pl.lit(WORSE)))


def significant() -> pl.Expr:
    """A change by RULE or BAR_RULE: better or worse where a side rests on samples or an error bar."""
    return (pl.col("a_spread") | pl.col("b_spread")) & pl.col("verdict").is_in([BETTER, WORSE])


def stats() -> list[pl.Expr]:
    return [pl.len().alias("n"), pl.col("ratio").median().alias("median"), pl.col("ratio").min().alias("min"),
            pl.col("ratio").max().alias("max"), pl.col("lr").var(ddof=0).alias("var"),
            *((pl.col("verdict") == v).sum().alias(v) for v in VERDICTS),
            significant().sum().alias("significant"),
            (pl.col("a_spread") | pl.col("b_spread")).sum().alias("sampled"),
            pl.col("a_n").max().alias("a_samples"), pl.col("b_n").max().alias("b_samples"),
            (pl.col("a_bar") | pl.col("b_bar")).sum().alias("barred")]


def limit(by: tuple[str, ...] | None) -> int:
    """Rows of a grouped table: more when --by chose the axes."""
    return MAX_GROUPS if by is None else MAX_BY_GROUPS


def grouping(j: pl.LazyFrame, axes: list[str], distinct: dict[str, int],
              var: float) -> tuple[tuple[str, ...], float]:
    """The one or two axes whose groups explain most of the variance of log B/A (at most MAX_GROUPS
    groups), and the share they explain (between-group over total sum of squares)."""
    candidates = [c for c in axes if distinct[c] <= MAX_GROUPS]
    if not candidates:
        return (), 0.0
    if var <= 0:
        return (candidates[0],), 0.0
    single = explained(j, [(c,) for c in candidates])
    best = max(single, key=lambda k: (single[k], -candidates.index(k[0])))
    pairs = [(best[0], c) for c in candidates if c != best[0] and distinct[best[0]] * distinct[c] <= MAX_GROUPS]
    double = explained(j, pairs) if pairs else {}
    top = max(double, key=lambda k: double[k], default=None)
    if top is not None and double[top] >= single[best] + PAIR_GAIN:
        return top, double[top]
    return best, single[best]


def explained(j: pl.LazyFrame, groupings: list[tuple[str, ...]]) -> dict[tuple[str, ...], float]:
    lr = j.filter(pl.col("lr").is_not_null())
    frames = pl.collect_all([lr.with_columns(pl.col("lr").mean().alias("_m")).group_by(list(g)).agg(
        (pl.len() * (pl.col("lr").mean() - pl.col("_m").first()) ** 2).alias("between"),
        ((pl.col("lr") - pl.col("_m").first()) ** 2).sum().alias("total")) for g in groupings])
    out = {}
    for g, f in zip(groupings, frames):
        total = f["total"].sum()
        out[g] = float(f["between"].sum() / total) if total and total > 0 else 0.0
    return out


def groups(rows: ModelRows, j: pl.LazyFrame, axes: tuple[str, ...]) -> pl.DataFrame:
    """B/A by group of `axes` (one group when none): label, points, median / quantiles / extremes, verdicts."""
    keys = list(axes) or [pl.lit("all points").alias("_all")]
    r = pl.col("ratio")
    df = (j.group_by(keys).agg(
        pl.len().alias("n"), r.median().alias("median"), r.quantile(0.1).alias("q10"),
        r.quantile(0.9).alias("q90"), r.min().alias("min"), r.max().alias("max"),
        *((pl.col("verdict") == v).sum().alias(v) for v in VERDICTS))
        .sort(list(axes) or "_all", nulls_last=True).collect())
    labels = {c: [rows.label(c, v) for v in df[c].to_list()] for c in axes}
    names = [", ".join(row) for row in zip(*labels.values())] if axes else ["all points"] * df.height
    return df.with_columns(pl.Series("group", names, dtype=pl.Utf8),
                           *(pl.Series(f"label_{c}", v, dtype=pl.Utf8) for c, v in labels.items()))


def no_hist() -> pl.DataFrame:
    return pl.DataFrame(schema=HIST_SCHEMA)


def hist(j: pl.LazyFrame, var: float, bins: int = 40) -> pl.DataFrame:
    """The distribution of B/A binned on log B/A: (lo, hi) edges of each bin as ratios, its points, and how
    many of them are significant changes (better or worse, not `~` or `=`)."""
    lr = j.filter(pl.col("lr").is_not_null())
    lo, hi = lr.select(pl.col("lr").min().alias("lo"), pl.col("lr").max().alias("hi")).collect().row(0)
    schema = HIST_SCHEMA
    if lo is None:
        return no_hist()
    one = var <= 0 or hi <= lo  # one value: one narrow bar
    width = 1.0 if one else (hi - lo) / bins
    idx = pl.lit(0.0) if one else ((pl.col("lr") - lo) / width).floor().clip(0, bins - 1)
    counts = lr.group_by(idx.alias("bin")).agg(
        pl.len().alias("n"), pl.col("verdict").is_in([BETTER, WORSE]).sum().alias("significant")).sort("bin").collect()
    if one:
        return counts.select(pl.lit(math.exp(lo) / 1.01).alias("lo"), pl.lit(math.exp(lo) * 1.01).alias("hi"),
                             "n", "significant").cast(schema)
    return counts.select((lo + pl.col("bin") * width).exp().alias("lo"),
                         (lo + (pl.col("bin") + 1) * width).exp().alias("hi"), "n", "significant").cast(schema)


def tables(rows: ModelRows, j: pl.LazyFrame, view: View, groups: pl.DataFrame,
           grouping: tuple[tuple[str, ...], float, bool], summary: dict,
           style: tuple[bool, str, tuple[str, str]]) -> tuple[tuple[Table, ...], str]:
    """The tables of a block and the header line saying what they show. `grouping`: the grouping axes,
    the share of the variance of log B/A they explain, whether --by chose them; `style`: higher is
    better, the unit, the words for better / worse."""
    n, (group_axes, explained, asked) = summary["n"], grouping
    if summary[EQUAL] == n:
        return (), f"A and B are equal at every one of the {n:,} points: no table"
    names = " and ".join(c.removeprefix("param_") for c in group_axes)
    most = limit(group_axes if asked else None)
    more = f" (the first {most} of {groups.height})" if groups.height > most else ""
    grouped = [_group_table(groups.head(most), group_axes, style, f"B/A by {names}{more}")] if group_axes else []
    each = each_configuration(j, view, n)
    if each is not None:
        what = f"{n} points" if each.height == n else f"{n:,} points, {each.height} distinct rows"
        table = _point_table(rows, each, view, style, f"{what}, one row per configuration")
        if asked:
            return (*grouped, table), f"{what}: B/A by {names}, then one row per configuration"
        return (table,), f"{what}: one row per configuration"
    if not summary["var"]:
        return (), f"B/A is {summary['median']:.3f} at every one of the {n:,} points: no table"
    why = "as asked; they explain" if asked else "together they explain"
    heading = (f"{n:,} points: B/A grouped by {names} ({why} {explained:.0%} of the variance of "
               f"log B/A), then the {TOP} largest changes") if group_axes else \
        f"{n:,} points: the {TOP} largest changes (no axis has at most {MAX_GROUPS} values to group by)"
    top = largest(j, view)
    return (*grouped, _point_table(rows, top, view, style, f"the {TOP} largest changes (by |log B/A|)")), \
        heading


def each_configuration(j: pl.LazyFrame, view: View, n: int, most: int = MAX_POINTS) -> pl.DataFrame | None:
    """One row per distinct row (axes.merged), when there are at most `most` of them; else None."""
    if n > min(most * view.mult, MAX_ROWS):
        return None
    rows = merged(j, view).sort([*view.shown, "point_id"], nulls_last=True).head(most + 1).collect()
    return rows if rows.height <= most else None


def largest(j: pl.LazyFrame, view: View) -> pl.DataFrame:
    """The TOP largest changes by |log B/A|, each distinct row once (ties: the lowest point_ids)."""
    shown = list(view.shown)
    return (merged(j, view).filter(pl.col("lr").is_not_null()).with_columns(pl.col("lr").abs().alias("_abs"))
            .top_k(TOP, by=["_abs", "point_id"], reverse=[False, True])
            .sort(["_abs", *shown], descending=[True, *[False] * len(shown)], nulls_last=True).collect())


def _point_table(rows: ModelRows, listed: pl.DataFrame, view: View,
                 style: tuple[bool, str, tuple[str, str]], title: str) -> Table:
    """One row per point listed: configuration, A, B, B/A, improvement and the verdict."""
    higher, unit, marks = style
    data = cells(rows, listed, view)
    a, b = listed["a"].to_list(), listed["b"].to_list()
    if not unit and all(v is not None and float(v).is_integer() for v in a + b):  # counts print as integers
        a, b = [as_count(v) for v in a], [as_count(v) for v in b]
    def shown(values: list, side: str) -> list[str]:  # a value with its interval, where it has one
        ends = listed.select(f"{side}_lo", f"{side}_hi", f"{side}_spread").rows()
        return [bar_text(v, lo, hi, unit) if spread else format_value(v, unit) for v, (lo, hi, spread) in zip(values, ends)]

    data.update({"A": shown(a, "a"),
                 "B": shown(b, "b"),
                 "B/A": [ratio(v) for v in listed["ratio"].to_list()],
                 "Improvement": [improvement(x, y, higher) for x, y in listed.select("a", "b").iter_rows()],
                 "Change": [{BETTER: marks[0], WORSE: marks[1]}.get(v, v) for v in listed["verdict"].to_list()],
                 **evidence.pair_marks(listed)})
    return Table(title=title, caption="", frame=pl.DataFrame(data, schema={k: pl.Utf8 for k in data}))


def _group_table(groups: pl.DataFrame, axes: tuple[str, ...], style: tuple[bool, str, tuple[str, str]],
                 title: str) -> Table:
    higher, _, (better, worse) = style
    data = {c.removeprefix("param_"): groups[f"label_{c}"].to_list() for c in axes}
    data |= {"points": [f"{v:,}" for v in groups["n"].to_list()],
             "B/A median": [ratio(v) for v in groups["median"].to_list()],
             "B/A min": [ratio(v) for v in groups["min"].to_list()],
             "B/A max": [ratio(v) for v in groups["max"].to_list()],
             "Improvement": [improvement(1.0, v, higher) for v in groups["median"].to_list()],
             better: [f"{v:,}" for v in groups[BETTER].to_list()], worse: [f"{v:,}" for v in groups[WORSE].to_list()],
             NOISE: [f"{v:,}" for v in groups[NOISE].to_list()], EQUAL: [f"{v:,}" for v in groups[EQUAL].to_list()]}
    for rare in (FEW, UNFIT):
        if groups[rare].sum():
            data[rare] = [f"{v:,}" for v in groups[rare].to_list()]
    return Table(title=title, caption="", frame=pl.DataFrame(data, schema={k: pl.Utf8 for k in data}))


def ratio(v: float | None) -> str:
    return "-" if v is None or v != v else f"{v:.3f}"
