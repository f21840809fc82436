"""`memsweep compare A B`: two sweeps side by side, B/A per point (mmtests' compare-kernels for sweeps).

The same point has the same `point_id` in every sweep, so each model's ok rows
of A and B are joined on it (lazily; nothing is collected but aggregates and a
few listed rows). A block compares one model, one metric and one pair of row
sources: like with like by default (modeled with modeled, measured with
measured), or `sources=("measured", "model")` for a measured sweep against
its modeled twin. Each point gets a verdict: better / worse, `=` (equal,
rows without a spread), or `~` (within the noise: a measured side's spread
[measure_min, median] overlaps the other side's; a modeled row's spread is its
value). Small comparisons print one row per configuration; big ones a summary,
the ratios grouped by the one or two axes that explain most of the variation
of log B/A, and the largest changes. figures_compare.py draws and writes the page.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import polars as pl

from workers.dataset import unit_of

from .exceptions import AnalysisError
from .metrics import headline_metric, higher_is_better, ok
from .overview import Table
from .read import MEASURED, MODELED, Sweep, label
from .tables import format_value, improvement, render

SOURCES = (MODELED, MEASURED)
MAX_POINTS = 40  # up to this many points: one row per configuration
MAX_GROUPS = 30  # a grouped table has at most this many rows
PAIR_GAIN = 0.05  # a second grouping axis must explain this much more of the variance of log B/A
TOP = 10  # largest changes listed for a big comparison
EXAMPLES = 5  # points of one side only listed
EQUAL_REL = 1e-9  # modeled values this close are equal (deterministic models; float summation order)
BETTER, WORSE, NOISE, EQUAL = "better", "worse", "~", "="
TIME_UNITS = ("ns", "µs", "ms", "s")
COMPARE_PREFIX = "compare-"


@dataclass(frozen=True, kw_only=True, slots=True)
class Block:
    """One model, metric and pair of sources compared: counts, the tables to print, the figure's frames."""

    model: str
    metric: str
    source_a: str
    source_b: str
    higher: bool
    unit: str
    points_a: int  # ok points with a value, each side
    points_b: int
    compared: int
    summary: dict  # median / min / max B/A and the count of each verdict
    heading: str  # what the tables show (the header line)
    tables: tuple[Table, ...]
    only: tuple[tuple[int, tuple[str, ...]], tuple[int, tuple[str, ...]]]  # (count, examples) for A, B
    hist: pl.DataFrame  # ratio, n: the histogram of B/A (bin centres)
    groups: pl.DataFrame  # group, median, q10, q90, min, max, n: B/A by the grouping axes
    group_axes: tuple[str, ...]

    @property
    def varies(self) -> bool:
        """Whether B/A takes more than one value over the compared points."""
        return bool(self.compared and self.summary.get("var"))

    @property
    def title(self) -> str:
        return (f"{self.model} {self.metric.removeprefix('metric_')}, {self.source_a} (A) vs {self.source_b} (B)"
                f" ({'higher' if self.higher else 'lower'} is better)")


@dataclass(frozen=True, kw_only=True, slots=True)
class Comparison:
    """Sweeps A and B and one Block per model and source pair compared."""

    a: Sweep
    b: Sweep
    blocks: tuple[Block, ...]


def words(block: Block) -> tuple[str, str]:
    """What a better / worse point is called: faster / slower for times, else better / worse."""
    timed = block.unit in TIME_UNITS and not block.higher
    return ("faster", "slower") if timed else (BETTER, WORSE)


def open_sweep(path: str, which: str) -> Sweep:
    """Sweep A or B, with an error that says which one is not a sweep."""
    try:
        return Sweep(path)
    except AnalysisError as e:
        raise AnalysisError(str(e).replace("'OUT/SWEEP'", f"'{which}'", 1)) from None


def parse_sources(text: str | None) -> tuple[str, str] | None:
    """`measured:model` -> ("measured", "model"): A's rows of the first source against B's of the second."""
    if text is None:
        return None
    parts = text.split(":")
    if len(parts) != 2 or any(p not in SOURCES for p in parts):
        raise AnalysisError(f"'--sources' must be A_SOURCE:B_SOURCE, each one of {list(SOURCES)} "
                            f"(e.g. measured:model) (got {text!r}).")
    return parts[0], parts[1]


def compare(a_dir: str, b_dir: str, *, metric: str | None = None, model: str | None = None,
            sources: str | tuple[str, str] | None = None) -> Comparison:
    """Compare sweep B with sweep A: one Block per model in both (or `model`) and pair of sources."""
    a, b = open_sweep(a_dir, "A"), open_sweep(b_dir, "B")
    pair = parse_sources(sources) if isinstance(sources, str) or sources is None else tuple(sources)
    common = [m for m in a.models if m in b.models]
    if not common:
        raise AnalysisError(f"'A' and 'B' must have a model in common (got A: {list(a.models)}, "
                            f"B: {list(b.models)}).")
    if model is not None:
        if model not in common:
            raise AnalysisError(f"'--model' must be one of the models both sweeps have {common} (got {model!r}).")
        common = [model]
    jobs = [(m, c, sa, sb) for m in common for c in _metrics(a, b, m, metric, common)
            for sa, sb in _source_pairs(a, b, m, pair)]
    if not jobs:
        _no_sources(a, b, common, pair)
    blocks = [_block(a, b, *job) for job in jobs]
    if not any(bl.compared for bl in blocks):
        sides = {w: "; ".join(f"{bl.model} {bl.source_a if w == 'A' else bl.source_b} "
                              f"{bl.points_a if w == 'A' else bl.points_b:,} ok points" for bl in blocks)
                 for w in ("A", "B")}
        raise AnalysisError(f"no shared points: the sweeps evaluate different grids (A: {sides['A']}; "
                            f"B: {sides['B']}); compare sweeps of the same spec's axes.")
    return Comparison(a=a, b=b, blocks=tuple(blocks))


def _metrics(a: Sweep, b: Sweep, model: str, metric: str | None, common: list[str]) -> list[str]:
    """The metric compared for `model`: `metric` if both sweeps have it, else the headline metric."""
    both = [c for c in a.metrics(model) if c in b.metrics(model)]
    if metric is None:
        found = headline_metric(a.model_object(model), both)
        return [found] if found else []
    col = metric if metric.startswith("metric_") else f"metric_{metric}"
    if col in both:
        return [col]
    if len(common) == 1 or not any(col in a.metrics(m) and col in b.metrics(m) for m in common):
        allowed = sorted({c for m in common for c in a.metrics(m) if c in b.metrics(m)})
        where = f"model {common[0]!r}" if len(common) == 1 else "a model both sweeps have"
        raise AnalysisError(f"'--metric' must be a metric of {where} in both sweeps, one of {allowed} "
                            f"(got {metric!r}).")
    return []  # another model has it


def _source_pairs(a: Sweep, b: Sweep, model: str, pair: tuple[str, str] | None) -> list[tuple[str, str]]:
    if pair is not None:
        return [pair] if pair[0] in a.sources(model) and pair[1] in b.sources(model) else []
    return [(s, s) for s in a.sources(model) if s in b.sources(model)]


def _no_sources(a: Sweep, b: Sweep, common: list[str], pair: tuple[str, str] | None) -> None:
    have = "; ".join(f"{m}: A {a.sources(m)}, B {b.sources(m)}" for m in common)
    if pair is None:
        raise AnalysisError(f"'A' and 'B' must have rows of the same source for a model in common ({have}); "
                            "give '--sources A_SOURCE:B_SOURCE' (e.g. measured:model) to compare across sources.")
    raise AnalysisError(f"'--sources' must name sources the sweeps have: A {pair[0]!r} and B {pair[1]!r} "
                        f"({have}).")


def _side(sweep: Sweep, model: str, source: str, metric: str, tag: str, params: list[str]) -> pl.LazyFrame:
    """point_id, the params, the value and its spread [lo, hi]: measured rows whose metric is the one
    measure_min / measure_median summarize span [measure_min, median]; others are a point."""
    v = pl.col(metric).cast(pl.Float64)
    schema = sweep.schema(model)
    lf = ok(sweep.scan(model, source)).filter(v.is_not_null() & v.is_finite())
    spread, low, high = pl.lit(False), v, v
    if source == MEASURED and "measure_min" in schema and "measure_median" in schema:
        spread = (pl.col("measure_min").is_not_null() & pl.col("measure_median").is_not_null()
                  & ((pl.col("measure_median") - v).abs() <= EQUAL_REL * v.abs()))
        low = pl.when(spread).then(pl.min_horizontal(pl.col("measure_min"), v)).otherwise(v)
        high = pl.when(spread).then(pl.max_horizontal(pl.col("measure_min"), v)).otherwise(v)
    return lf.select("point_id", *params, v.alias(tag), low.alias(f"{tag}_lo"), high.alias(f"{tag}_hi"),
                     spread.alias(f"{tag}_spread"))


def verdict(higher: bool) -> pl.Expr:
    """`=` equal without spreads; `~` the spreads overlap; else better / worse by the metric's direction."""
    a, b = pl.col("a"), pl.col("b")
    spread = pl.col("a_spread") | pl.col("b_spread")
    equal = (b - a).abs() <= EQUAL_REL * pl.max_horizontal(a.abs(), b.abs())
    overlap = (pl.col("a_lo") <= pl.col("b_hi")) & (pl.col("b_lo") <= pl.col("a_hi"))
    better = (b > a) if higher else (b < a)
    return (pl.when(~spread & equal).then(pl.lit(EQUAL)).when(spread & overlap).then(pl.lit(NOISE))
            .when(better).then(pl.lit(BETTER)).otherwise(pl.lit(WORSE)))


def _block(a: Sweep, b: Sweep, model: str, metric: str, src_a: str, src_b: str) -> Block:
    higher, unit = higher_is_better(a.model_object(model), metric), unit_of(metric)
    params = [c for c in a.params(model) if c in b.params(model)]
    sa = _side(a, model, src_a, metric, "a", params)
    sb = _side(b, model, src_b, metric, "b", params)
    ratio = pl.when(pl.col("a") != 0).then(pl.col("b") / pl.col("a"))
    lr = pl.when((pl.col("a") > 0) & (pl.col("b") > 0)).then((pl.col("b") / pl.col("a")).log())
    j = sa.join(sb.drop(params), on="point_id", how="inner").with_columns(
        ratio.alias("ratio"), lr.alias("lr"), verdict(higher).alias("verdict"))
    head, distinct, n_a, n_b = pl.collect_all([
        j.select(pl.len().alias("n"), pl.col("ratio").median().alias("median"), pl.col("ratio").min().alias("min"),
                 pl.col("ratio").max().alias("max"), pl.col("lr").var(ddof=0).alias("var"),
                 *((pl.col("verdict") == v).sum().alias(v) for v in (BETTER, WORSE, NOISE, EQUAL))),
        j.select(pl.col(c).n_unique().alias(c) for c in params) if params else j.select(pl.lit(0).alias("_")),
        sa.select(pl.len()), sb.select(pl.len()),
    ])
    summary = head.row(0, named=True)
    axes = [c for c in params if distinct[c][0] > 1] if params else []
    only = (_only(a, model, sa, sb), _only(b, model, sb, sa))
    base = dict(model=model, metric=metric, source_a=src_a, source_b=src_b, higher=higher, unit=unit,
                points_a=n_a.item(), points_b=n_b.item(), compared=summary["n"], summary=summary,
                only=only)
    if summary["n"] == 0:
        return Block(**base, heading="no shared points", tables=(), hist=_hist(j, 0.0), groups=pl.DataFrame(),
                     group_axes=())
    group_axes, explained = _grouping(j, axes, {c: distinct[c][0] for c in axes}, summary["var"] or 0.0)
    groups = _groups(a, model, j, group_axes)
    tables, heading = _tables(a, model, j, axes, groups, group_axes, explained, summary, higher, unit)
    return Block(**base, heading=heading, tables=tables, hist=_hist(j, summary["var"] or 0.0), groups=groups,
                 group_axes=group_axes)


def _only(sweep: Sweep, model: str, this: pl.LazyFrame, other: pl.LazyFrame) -> tuple[int, tuple[str, ...]]:
    """Points ok (with a value) on this side only: their count and the first few, with their configuration."""
    rest = this.join(other.select("point_id"), on="point_id", how="anti")
    n, first = pl.collect_all([rest.select(pl.len()), rest.bottom_k(EXAMPLES, by="point_id").sort("point_id")])
    keys = [c for c in sweep.varying(model) if c in first.columns]
    return n.item(), tuple(f"{r['point_id']}  {_config(sweep, model, keys, r)}" for r in first.iter_rows(named=True))


def _config(sweep: Sweep, model: str, keys: list[str], row: dict) -> str:
    return ", ".join(f"{c.removeprefix('param_')}={label(sweep, model, c, row[c])}" for c in keys) or "(one point)"


def _grouping(j: pl.LazyFrame, axes: list[str], distinct: dict[str, int],
              var: float) -> tuple[tuple[str, ...], float]:
    """The one or two axes whose groups explain most of the variance of log B/A (at most MAX_GROUPS
    groups), and the share they explain (between-group over total sum of squares)."""
    candidates = [c for c in axes if distinct[c] <= MAX_GROUPS]
    if not candidates:
        return (), 0.0
    if var <= 0:
        return (candidates[0],), 0.0
    single = _explained(j, [(c,) for c in candidates])
    best = max(single, key=lambda k: (single[k], -candidates.index(k[0])))
    pairs = [(best[0], c) for c in candidates if c != best[0] and distinct[best[0]] * distinct[c] <= MAX_GROUPS]
    double = _explained(j, pairs) if pairs else {}
    top = max(double, key=lambda k: double[k], default=None)
    if top is not None and double[top] >= single[best] + PAIR_GAIN:
        return top, double[top]
    return best, single[best]


def _explained(j: pl.LazyFrame, groupings: list[tuple[str, ...]]) -> dict[tuple[str, ...], float]:
    lr = j.filter(pl.col("lr").is_not_null())
    frames = pl.collect_all([lr.with_columns(pl.col("lr").mean().alias("_m")).group_by(list(g)).agg(
        (pl.len() * (pl.col("lr").mean() - pl.col("_m").first()) ** 2).alias("between"),
        ((pl.col("lr") - pl.col("_m").first()) ** 2).sum().alias("total")) for g in groupings])
    out = {}
    for g, f in zip(groupings, frames):
        total = f["total"].sum()
        out[g] = float(f["between"].sum() / total) if total and total > 0 else 0.0
    return out


def _groups(sweep: Sweep, model: str, j: pl.LazyFrame, axes: tuple[str, ...]) -> pl.DataFrame:
    """B/A by group of `axes` (one group when none): label, points, median / quantiles / extremes, verdicts."""
    keys = list(axes) or [pl.lit("all points").alias("_all")]
    r = pl.col("ratio")
    df = (j.group_by(keys).agg(
        pl.len().alias("n"), r.median().alias("median"), r.quantile(0.1).alias("q10"),
        r.quantile(0.9).alias("q90"), r.min().alias("min"), r.max().alias("max"),
        *((pl.col("verdict") == v).sum().alias(v) for v in (BETTER, WORSE, NOISE, EQUAL)))
        .sort(list(axes) or "_all", nulls_last=True).collect())
    labels = {c: [label(sweep, model, c, v) for v in df[c].to_list()] for c in axes}
    names = [", ".join(row) for row in zip(*labels.values())] if axes else ["all points"] * df.height
    return df.with_columns(pl.Series("group", names, dtype=pl.Utf8),
                           *(pl.Series(f"label_{c}", v, dtype=pl.Utf8) for c, v in labels.items()))


def _hist(j: pl.LazyFrame, var: float, bins: int = 40) -> pl.DataFrame:
    """The distribution of B/A binned on log B/A: (lo, hi) edges of each bin as ratios, its points, and how
    many of them are significant changes (better or worse, not `~` or `=`)."""
    lr = j.filter(pl.col("lr").is_not_null())
    lo, hi = lr.select(pl.col("lr").min().alias("lo"), pl.col("lr").max().alias("hi")).collect().row(0)
    schema = {"lo": pl.Float64, "hi": pl.Float64, "n": pl.UInt32, "significant": pl.UInt32}
    if lo is None:
        return pl.DataFrame(schema=schema)
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


def _tables(sweep: Sweep, model: str, j: pl.LazyFrame, axes: list[str], groups: pl.DataFrame,
            group_axes: tuple[str, ...], explained: float, summary: dict, higher: bool,
            unit: str) -> tuple[tuple[Table, ...], str]:
    """The tables of a block and the header line saying what they show."""
    n = summary["n"]
    if summary[EQUAL] == n:
        return (), f"A and B are equal at every one of the {n:,} points: no table"
    if n <= MAX_POINTS:
        rows = j.sort([*axes, "point_id"], nulls_last=True).collect()
        return (_point_table(sweep, model, rows, axes, higher, unit, f"{n} points, one row per configuration"),), \
            f"{n} points: one row per configuration"
    if not summary["var"]:
        return (), f"B/A is {summary['median']:.3f} at every one of the {n:,} points: no table"
    names = " and ".join(c.removeprefix("param_") for c in group_axes)
    heading = (f"{n:,} points: B/A grouped by {names} (together they explain {explained:.0%} of the variance of "
               f"log B/A), then the {TOP} largest changes") if group_axes else \
        f"{n:,} points: the {TOP} largest changes (no axis has at most {MAX_GROUPS} values to group by)"
    top = (j.filter(pl.col("lr").is_not_null()).with_columns(pl.col("lr").abs().alias("_abs"))
           .top_k(TOP, by=["_abs", "point_id"], reverse=[False, True])  # ties: the lowest point_ids
           .sort(["_abs", *axes], descending=[True, *[False] * len(axes)], nulls_last=True).collect())
    tables = []
    if group_axes:
        tables.append(_group_table(groups, group_axes, higher, unit, f"B/A by {names}"))
    tables.append(_point_table(sweep, model, top, axes, higher, unit, f"the {TOP} largest changes (by |log B/A|)"))
    return tuple(tables), heading


def _mark(v: str, unit: str, higher: bool) -> str:
    faster, slower = ("faster", "slower") if unit in TIME_UNITS and not higher else (BETTER, WORSE)
    return {BETTER: faster, WORSE: slower}.get(v, v)


def _point_table(sweep: Sweep, model: str, rows: pl.DataFrame, axes: list[str], higher: bool, unit: str,
                 title: str) -> Table:
    """One row per point: configuration, A, B, B/A, improvement and the verdict."""
    cols = axes or ["point_id"]
    data = {c.removeprefix("param_"): [label(sweep, model, c, v) if c != "point_id" else str(v)
                                       for v in rows[c].to_list()] for c in cols}
    data.update({"A": [format_value(v, unit) for v in rows["a"].to_list()],
                 "B": [format_value(v, unit) for v in rows["b"].to_list()],
                 "B/A": [_ratio(v) for v in rows["ratio"].to_list()],
                 "Improvement": [improvement(x, y, higher) for x, y in rows.select("a", "b").iter_rows()],
                 "Change": [_mark(v, unit, higher) for v in rows["verdict"].to_list()]})
    return Table(title=title, caption="", frame=pl.DataFrame(data, schema={k: pl.Utf8 for k in data}))


def _group_table(groups: pl.DataFrame, axes: tuple[str, ...], higher: bool, unit: str, title: str) -> Table:
    faster, slower = _mark(BETTER, unit, higher), _mark(WORSE, unit, higher)
    shown = groups.head(MAX_GROUPS)
    data = {c.removeprefix("param_"): shown[f"label_{c}"].to_list() for c in axes}
    data |= {"points": [f"{v:,}" for v in shown["n"].to_list()],
            "B/A median": [_ratio(v) for v in shown["median"].to_list()],
            "B/A min": [_ratio(v) for v in shown["min"].to_list()],
            "B/A max": [_ratio(v) for v in shown["max"].to_list()],
            "Improvement": [improvement(1.0, v, higher) for v in shown["median"].to_list()],
            faster: [f"{v:,}" for v in shown[BETTER].to_list()], slower: [f"{v:,}" for v in shown[WORSE].to_list()],
            NOISE: [f"{v:,}" for v in shown[NOISE].to_list()], EQUAL: [f"{v:,}" for v in shown[EQUAL].to_list()]}
    return Table(title=title, caption="", frame=pl.DataFrame(data, schema={k: pl.Utf8 for k in data}))


def _ratio(v: float | None) -> str:
    return "-" if v is None or v != v else f"{v:.3f}"


def summary_line(block: Block) -> str:
    """`2,488 points compared: B/A median 1.320 (min 1.000, max 2.100); 2,000 slower, 0 faster, ...`"""
    s, (faster, slower) = block.summary, words(block)
    if not block.compared:
        return (f"no shared points: A has {block.points_a:,} ok points with a value, B {block.points_b:,}")
    return (f"{block.compared:,} points compared: B/A median {_ratio(s['median'])} (min {_ratio(s['min'])}, "
            f"max {_ratio(s['max'])}); {s[BETTER]:,} {faster}, {s[WORSE]:,} {slower}, "
            f"{s[NOISE]:,} within the noise (~), {s[EQUAL]:,} equal (=)")


def only_lines(block: Block) -> list[str]:
    out = []
    for side, (n, examples) in zip("AB", block.only):
        if n:
            more = f" (first {len(examples)})" if n > len(examples) else ""
            out.append(f"ok in {side} only: {n:,} points{more}:")
            out.extend(f"  {e}" for e in examples)
    return out


def text(cmp: Comparison) -> str:
    """The comparison as mailing-list text: a header, then per block a summary line and its tables."""
    out = [f"memsweep compare: A = {cmp.a.name} (profile {cmp.a.manifest.get('profile', '?')}), "
           f"B = {cmp.b.name} (profile {cmp.b.manifest.get('profile', '?')}); B/A per point_id over ok rows"]
    for bl in cmp.blocks:
        out += ["", f"{bl.title}: {bl.heading}", summary_line(bl)]
        for t in bl.tables:
            out += ["", f"{t.title}:", render(list(t.frame.columns), [list(r) for r in t.frame.iter_rows()])]
        lines = only_lines(bl)
        if lines:
            out += ["", *lines]
    return "\n".join(out)


def default_name(cmp: Comparison) -> str:
    """`compare-<A name>.html`, the name made safe for a file."""
    return f"{COMPARE_PREFIX}{re.sub(r'[^A-Za-z0-9._-]+', '_', cmp.a.name).strip('.') or 'a'}.html"
