"""Plain-text comparison tables in the style kernel developers paste into cover letters.

    namespace_size    PTE (order 0)    PMD (order 9)    Improvement
    --------------    -------------    -------------    -----------
    64MiB             148.858 ns       100.780 ns       32.3%

One row per value of the row axis, one column per value of the column axis
(median of the metric over ok rows), and an improvement column in percent of
each column over the baseline column: `--baseline VALUE`, by default the column
axis' first value as the spec lists it (the baseline of the published
comparisons: per_pte before batched, PTE before PMD), the other columns after it
in the spec's order. A size metric gets its difference from the baseline as a
size ("+2.0GiB"), not a percentage; a count metric prints as an integer where its
median is one. `--where AXIS=VALUE` keeps some points (as compare's). A string (or boolean) metric, such as memmap's
`dominant`, is tabulated as its most common value per cell, with its share of
the cell's rows when they differ, and no improvement. Every other axis that varies in the sweep (and the
row source, when a sweep has both modeled and measured rows) splits the output
into one block per combination, named above the block.
"""

from __future__ import annotations

import math

import polars as pl

from workers import interval
from workers.dataset import unit_of
from workers.units import binary_size

from . import evidence
from .exceptions import AnalysisError
from .metrics import categorical, headline_metric, higher_is_better, ok
from .read import DEFAULT, SOURCE, ModelRows, Sweep, axis_value, parse_where, value_expr

MAX_BLOCKS = 24
GAP = "    "
# How a unit (workers.dataset.unit_of) is written after a value: ASCII for mail, a fraction bare.
UNIT_TEXT = {"µs": "us", "fraction": ""}


metric_unit = unit_of  # workers.dataset's rule, under the name the report's tables import


def format_value(v: object, unit: str) -> str:
    """A cell: '148.858 ns', '95.76 ms', '2MiB', '0.1234'; '-' when missing. `unit` as unit_of gives it."""
    if v is None or (isinstance(v, float) and v != v):
        return "-"
    if isinstance(v, str):  # a categorical cell, already written
        return v
    if unit == "bytes":
        return binary_size(float(v))
    if isinstance(v, bool) or isinstance(v, int):
        text = str(v)
    elif abs(v) >= 1000:
        text = f"{v:.1f}"
    elif abs(v) >= 1 or v == 0:
        text = f"{v:.3f}" if unit in ("ns", "µs") else f"{v:.2f}"
    else:
        text = f"{v:.4g}"
    return f"{text} {UNIT_TEXT.get(unit, unit)}".rstrip()


def bar_text(v: object, lo: object, hi: object, unit: str) -> str:
    """A value with its error bar as stored, rounded to what the bar supports (bar_parts): "236 ms -15/+18%",
    "102.84 ns ±0.34%". format_value's text where there is no bar (or a size, a count, a zero bar)."""
    parts = None if unit == "bytes" else bar_parts(v, lo, hi)
    if parts is None:
        return format_value(v, unit)
    text, bar = parts
    return f"{text} {UNIT_TEXT.get(unit, unit)}".rstrip() + f" {bar}"


SMALLEST_BAR = 0.1  # % of the value: a bar below it reads "<0.1%" (its digits would be the refits' noise)


def bar_parts(v: object, lo: object, hi: object, most: int | None = None) -> tuple[str, str] | None:
    """(the value rounded to what its bar supports, the bar): each side of the bar as stored, to two significant
    digits as a percentage of the value ("-15/+18%"; "±6.5%" where both sides read the same; "-0/+6.5%" where the
    bar lies on one side), the value to the place of the larger side's second digit ("236"), and to at most
    `most` decimals; None without a bar."""
    if lo is None or hi is None or not isinstance(v, float) or v != v or lo != lo or hi != hi:
        return None
    below, above = max(0.0, v - float(lo)), max(0.0, float(hi) - v)
    half = max(below, above)
    if not half or not v:
        return None
    # the bar's second significant digit; a bar under SMALLEST_BAR holds no more digits than one of it
    place = math.floor(math.log10(max(half, abs(v) * SMALLEST_BAR / 100))) - 1
    if most is not None:
        place = max(place, -most)
    low, high = (_percent(side / abs(v) * 100) for side in (below, above))
    bar = f"±{high}%" if low == high else f"-{low}/+{high}%"
    return f"{round(v, -place):.{max(0, -place)}f}", bar


def _percent(pct: float) -> str:
    """One side of a bar in % of the value: two significant digits, whole above 100, "<0.1" below SMALLEST_BAR."""
    if pct == 0:
        return "0"
    return f"{pct:.0f}" if pct >= 100 else f"{pct:.2g}" if pct >= SMALLEST_BAR else f"<{SMALLEST_BAR:g}"


def improvement(base: float | None, v: float | None, higher: bool) -> str:
    """Percent better than the base column: (base - v) / base, or (v - base) / base if higher is better."""
    if base is None or v is None or base == 0:
        return "-"
    return f"{((v - base) if higher else (base - v)) / abs(base):.1%}"


def difference(base: float | None, v: float | None) -> str:
    """A size's change from the base column, as a size: "+2.0GiB", "-512MiB", "0"."""
    if base is None or v is None:
        return "-"
    change = float(v) - float(base)
    return "0" if change == 0 else ("+" if change > 0 else "-") + binary_size(abs(change))


def render(header: list[str], rows: list[list[str]]) -> str:
    """Left-aligned columns, a dashed rule under the header as long as each header."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    line = lambda cells: GAP.join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * len(h) for h in header]), *(line(r) for r in rows)])


def _column(rows: ModelRows, flag: str, axis: str) -> str:
    params = rows.params()
    col = axis if axis.startswith("param_") else f"param_{axis}"
    if col not in params:
        names = [p.removeprefix("param_") for p in params]
        raise AnalysisError(f"'{flag}' must be an axis of model {rows.name!r}, one of {names} (got {axis!r}).")
    return col


def _metric(rows: ModelRows, metric: str | None) -> str:
    metrics = rows.metrics()
    if metric is None:
        found = headline_metric(rows.model, metrics)
        if found is None:
            raise AnalysisError(f"'--metric' must be given: model {rows.name!r} has no metric columns.")
        return found
    col = metric if metric.startswith("metric_") else f"metric_{metric}"
    if col not in metrics:
        raise AnalysisError(f"'--metric' must be a metric of model {rows.name!r}, one of {metrics} (got {metric!r}).")
    return col


def _sorted(values: list) -> list:
    return sorted(values, key=lambda v: (v is None, v if v is not None else 0))


def text_table(sweep_dir: str, *, model: str, rows: str, cols: str, metric: str | None = None,
               where: list[str] | tuple[str, ...] = (), baseline: str | None = None) -> str:
    """The table for `memsweep table`: rows x cols of the median metric, plus improvement in % (a size: the
    difference) of each column over the `baseline` one (default: the first as the spec lists them), over the
    points `where` keeps ("AXIS=VALUE" each)."""
    sweep = Sweep(sweep_dir)
    if model not in sweep.models:
        raise AnalysisError(f"'--model' must be one of the models in this sweep {list(sweep.models)} (got {model!r}).")
    model_rows = sweep.rows(model)
    rcol, ccol = _column(model_rows, "--rows", rows), _column(model_rows, "--cols", cols)
    if rcol == ccol:
        raise AnalysisError(f"'--cols' must be a different axis from '--rows' (got {cols!r} for both).")
    keep = _where(model_rows, where)
    base = None if baseline is None else axis_value((model_rows,), ccol, baseline, "--baseline")
    table = _table(model_rows, rcol, ccol, _metric(model_rows, metric), keep, base)
    return f"{table}\n\nprofile {sweep.profile_status()}"


def _where(rows: ModelRows, where) -> pl.Expr:
    """The --where filters (values of one axis are either, different axes all), checked against the axes."""
    chosen: dict[str, list] = {}
    for name, text in parse_where(where):
        col = _column(rows, "--where", name)
        chosen.setdefault(col, []).append(axis_value((rows,), col, text, f"--where {name.removeprefix('param_')}"))
    return pl.all_horizontal([pl.any_horizontal([value_expr(c, v) for v in vs]) for c, vs in chosen.items()]) \
        if chosen else pl.lit(True)


def _evidence(rows: ModelRows, rows_ok: pl.LazyFrame, shown: pl.LazyFrame, keys: list[str],
              mcol: str) -> tuple[pl.LazyFrame | None, list[str]]:
    """Per cell (`keys`) of the `shown` rows, the mark of the weakest label of its modeled rows; and the lines
    under the tables, over every row: the legend and what the extrapolated and assumed cells rest on."""
    label = evidence.label_expr(rows, mcol)
    if label is None:
        return None, ["evidence: not recorded in this sweep (dataset schema 4; rerun to get it)"]
    marks = shown.group_by(keys).agg(evidence.weakest(label).alias("_evidence"))
    ev = evidence.summarize(rows, rows_ok, mcol)
    if not ev.counts:
        return marks, []
    return marks, [evidence.LEGEND, f"modeled cells' rows: {ev.text()}", *evidence.note_lines(ev)]


def _table(rows: ModelRows, rcol: str, ccol: str, mcol: str, keep: pl.Expr, base: object = None) -> str:
    """rcol x ccol of `mcol` over the rows `keep` keeps, one block per combination of the other varying axes
    (and of the source); `base`: the baseline column's value (None: the spec's first)."""
    name = f"{rows.sweep.name}: {rows.name} {mcol.removeprefix('metric_')}"
    others = [c for c in rows.varying() if c not in (rcol, ccol)]
    if len(rows.sources()) > 1:  # modeled and measured rows: one block per source
        others.insert(0, SOURCE)
    rows_ok = ok(rows.scan(None if SOURCE in others else DEFAULT)).filter(pl.col(mcol).is_not_null() & keep)
    # the blocks first, and the cells of the MAX_BLOCKS shown only: the other axes can cross into a block per
    # configuration (large's memmap: 1,536), and cells of them all held the sweep's every row (2.3 GB)
    blocks = rows_ok.select(others).unique().collect().sort(others, nulls_last=True) if others else None
    shown = rows_ok.join(blocks.head(MAX_BLOCKS).lazy(), on=others, how="semi", nulls_equal=True) \
        if others else rows_ok
    cat = categorical(rows.schema()[mcol])
    if cat:
        cells = most_common(shown, [*others, rcol, ccol], mcol).collect()
        unit, higher = "", None
        title = (f"{name}, most common value over ok rows per cell "
                 "(with its share of the cell's rows when they differ)")
    else:
        bar = [c for c in interval.columns(mcol) if c in rows.schema()]
        cells = shown.group_by(*others, rcol, ccol).agg(pl.col(mcol).median(), *(pl.col(c).median() for c in bar)) \
            .collect()
        unit, higher = unit_of(mcol), higher_is_better(rows.model, mcol)
        title = f"{name}, median over ok rows per cell" + (", with its error bar" if bar else "")
    if cells.height == 0:
        return f"{title}\n(no ok rows with a value of {mcol})"
    keys = [*others, rcol, ccol]
    marks, lines = _evidence(rows, rows_ok, shown, keys, mcol)
    cells = cells.join(marks.collect(), on=keys, how="left", nulls_equal=True) if marks is not None \
        else cells.with_columns(pl.lit(None, dtype=pl.Utf8).alias("_evidence"))
    blocks = blocks.rows() if others else [()]
    out = [title + ("" if cat else " (lower is better)" if not higher else " (higher is better)")]
    for key in blocks[:MAX_BLOCKS]:
        part = cells
        for c, v in zip(others, key):
            part = part.filter(pl.col(c).is_null() if v is None else pl.col(c) == v)
        if others:
            out.append("\n" + ", ".join(f"{c.removeprefix('param_')}={rows.label(c, v)}" for c, v in zip(others, key)))
        out.append(_block(rows, part, rcol, ccol, mcol, unit, higher, base))
    if len(blocks) > MAX_BLOCKS:
        names = ", ".join(c.removeprefix("param_") for c in others)
        out.append(f"\n({len(blocks) - MAX_BLOCKS} more combinations of {names} not shown)")
    if lines:
        out.append("\n" + "\n".join(lines))
    return "\n".join(out)


def most_common(rows: pl.LazyFrame, keys: list[str], column: str) -> pl.LazyFrame:
    """Per group of `keys`: the most common value of `column` as text (ties: the first in sort order)
    written with its share of the group's rows ("memory (67%)") when the rows differ."""
    counts = rows.group_by(*keys, pl.col(column).cast(pl.Utf8)).agg(pl.len().alias("_n"))
    top = counts.group_by(keys).agg(
        pl.col(column).sort_by(["_n", column], descending=[True, False]).first(),
        (pl.col("_n").max() / pl.col("_n").sum()).alias("_share"))
    share = (pl.col("_share") * 100).round(0).cast(pl.Int64)
    return top.select(*keys, pl.when(pl.col("_share") < 1).then(pl.format("{} ({}%)", pl.col(column), share))
                      .otherwise(pl.col(column)).alias(column))


def _block(rows: ModelRows, part: pl.DataFrame, rcol: str, ccol: str, mcol: str,
           unit: str, higher: bool | None, base: object = None) -> str:
    """One table of the cells; `higher` None (a categorical metric): no improvement columns. The baseline
    column (`base`, else the spec's first) comes first, the others in the spec's order."""
    counts = rows.schema()[mcol].is_integer()
    grid = {(r, c): as_count(v) if counts else v for r, c, v in part.select(rcol, ccol, mcol).iter_rows()}
    lo, hi = interval.columns(mcol)
    bars = {(r, c): (low, high) for r, c, low, high in part.select(rcol, ccol, lo, hi).iter_rows()} \
        if lo in part.columns and hi in part.columns else {}
    marks = {(r, c): evidence.MARK.get(e, "") for r, c, e in part.select(rcol, ccol, "_evidence").iter_rows()}
    rvals = _sorted(part[rcol].unique().to_list())
    cvals = rows.spec_order(part[ccol].unique().to_list(), ccol)
    if base is not None and base in cvals:
        cvals = [base, *(c for c in cvals if c != base)]
    cheads = [rows.label(ccol, c) for c in cvals]
    sizes = unit == "bytes"
    word = "Difference" if sizes else "Improvement"
    if higher is None:
        extra = []
    elif len(cvals) == 2:
        extra = [word]
    else:
        extra = [f"{word} {h}" for h in cheads[1:]]
    header = [rcol.removeprefix("param_"), *cheads, *extra]
    body = []
    for r in rvals:
        vals = [grid.get((r, c)) for c in cvals]
        change = (lambda v: difference(vals[0], v)) if sizes else (lambda v: improvement(vals[0], v, higher))
        imps = [change(v) for v in vals[1:]] if len(cvals) > 1 and extra else []
        cells = [f"{bar_text(v, *bars.get((r, c), (None, None)), unit)} {marks.get((r, c), '')}".rstrip()
                 for v, c in zip(vals, cvals)]
        body.append([rows.label(rcol, r), *cells, *imps])
    if len(cvals) < 2:
        header = header[:2]
    return render(header, body)


def as_count(v: float | None) -> int | float | None:
    """A count's median as an integer where it is one (the median of two counts may end in .5)."""
    return int(v) if isinstance(v, float) and v.is_integer() else v
