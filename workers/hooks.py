"""What one model alone says in the report: a function in its own package that returns data.

What two or more models use is declared (workers.plots: `Lines`; workers.findings: `Medians`). A finding
or table only one model has is a function named by a `Hook` in the model's `Report` (a
"package.module:function" reference, imported on first use). It takes the model's rows in the sweep (the
host's view of them: `scan()` and `modeled(*columns)` give polars frames; `schema()`, `varying()`,
`label()`, `label_with_unit()` and `pin()` say what the rows hold and how a value is written) and returns
numbers, or None where the sweep lacks its rows:

- a finding: a `Sentence`, its template and the values it quotes: a number, a string, a `Group` (a median
  with its group's value, label, rows and error bar) or a list of groups; the host fills the template
  exactly as for a `Medians` (workers.findings: {name}, {name_at}, {name_n}, {name_bar}), rounding each
  median to the digits its bar supports, and says what the rows rest on;
- a table: `Cells`, one row per group with the rows' own param_ / metric_ column names, so the host
  writes each cell by what its column is: an axis value as its label, a metric with its unit, a boolean
  as yes / no, text as it is;
- a figure: a `Heatmap`, a ratio per cell of one or two axes and a panel per combination of some others,
  which the host draws, titles and captions with the axes held; or a string, why the sweep cannot show it.

`medians()` and `groups()` are the polars steps a `Medians` takes, for a hook to reuse.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable, Literal, Mapping

import numpy as np
import polars as pl

from .dataset import STATUS_OK

Which = Literal["max", "min", "first", "last", "all"]
TIE_RTOL = 1e-9  # relative: variants this close to the best share the win (`ties_best`)


@dataclass(frozen=True, kw_only=True, slots=True)
class Hook:
    """A one-model finding, table or figure: `call` names the function ("package.module:function") that
    takes the model's rows and returns a `Sentence` (a finding), `Cells` (a table) or a `Heatmap` (a
    figure), or None (a figure: the reason it is not drawn). A finding has an `id` and the `figure` that
    shows it; a table and a figure a `title` (a figure's `id` is its anchor and file name)."""

    id: str
    call: str
    figure: str = ""
    title: str = ""


@dataclass(frozen=True, slots=True)
class Group:
    """One group of rows: its value `at` (a tuple when grouped by several columns) and `text` (its label),
    the median `value`, the rows or configurations in it (`n`), the medians of their error bars (`bar`,
    workers.interval; None where they have none) and {flag column: whether a row of it has the flag}."""

    at: object
    text: str
    value: float
    n: int
    bar: tuple[float, float] | None = None
    flags: Mapping[str, bool] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True, slots=True)
class Sentence:
    """A finding: the `text` template, the `values` it quotes (see the module doc), the `rows` its
    numbers rest on with the `metric` they are of (the evidence line; None: none said) and how a median is
    written, `fmt` (a format spec such as ".2f", or "bytes")."""

    text: str
    values: Mapping[str, object]
    rows: pl.LazyFrame | None = None
    metric: str = ""
    fmt: str = ".2f"


@dataclass(frozen=True, kw_only=True, slots=True)
class Cells:
    """A table: one row per group (columns named as the rows' columns; a text column is written as it is),
    the `headers` to show the columns under ({column: header}, in order), the `caption` and the axes held
    fixed to get it (`held`, {param column: value})."""

    frame: pl.DataFrame
    headers: Mapping[str, str]
    caption: str
    held: Mapping[str, object]


@dataclass(frozen=True, kw_only=True, slots=True)
class Heatmap:
    """A figure: a ratio per cell of the `grid` axes (the first down the rows when there are two, the last
    across), one panel per combination of the `facets` that has rows. `frame` holds the facet and grid
    columns and `value`, coloured from 1 (no change) up; `colorbar` names the value; `caption`; the axes held
    fixed to get it (`held`). Its title is the Hook's, "across" the grid's axes."""

    frame: pl.DataFrame
    grid: tuple[str, ...]
    facets: tuple[str, ...]
    colorbar: str
    caption: str
    held: Mapping[str, object]


def resolve(ref):
    """A "package.module:function" reference imported, or the function itself."""
    if isinstance(ref, str):
        module, _, attr = ref.partition(":")
        return getattr(importlib.import_module(module), attr)
    return ref


def medians(lf: pl.LazyFrame, metric: str, by: list[pl.Expr], *, bar: tuple[str, str] | None = None,
            scale: Callable[[pl.Expr], pl.Expr] | None = None, flags: tuple[str, ...] = ()) -> pl.DataFrame:
    """Per group of `by`: the median of `metric` (`scale`d, when given) as `_v`, the medians of the ends
    of its error bar (`bar`: the two columns, workers.interval.columns(), where the rows carry them) as `_lo`
    / `_hi`, the rows as `_n` and whether any row has each flag."""
    schema = lf.collect_schema()
    ends = [c for c in bar or () if c in schema]

    def scaled(column: str) -> pl.Expr:
        value = pl.col(column).cast(pl.Float64)
        return scale(value) if scale is not None else value

    bars = [scaled(c).median().alias(f"_{end}") for c, end in zip(ends, ("lo", "hi"))] if len(ends) == 2 else []
    return (lf.group_by(*by).agg(scaled(metric).median().alias("_v"), *bars, pl.len().alias("_n"),
                                 *(pl.col(f).any() for f in flags))
            .collect(engine="streaming"))


def _order(v: object) -> tuple:
    if isinstance(v, tuple):
        return tuple(_order(x) for x in v)
    return (v is None, v if isinstance(v, (int, float)) else str(v))


def groups(df: pl.DataFrame, at: Callable[[dict], tuple[object, str]], flags: tuple[str, ...] = ()) -> list[Group]:
    """The groups of a `medians()` frame, sorted by value; `at`: a row -> (its group value, label). Groups
    without a median are left out."""
    out = []
    for r in df.iter_rows(named=True):
        v = r["_v"]
        if v is None or v != v:
            continue
        value, text = at(r)
        bar = (r["_lo"], r["_hi"]) if r.get("_lo") is not None and r.get("_hi") is not None else None
        out.append(Group(at=value, text=text, value=float(v), n=int(r["_n"]), bar=bar,
                         flags={f: bool(r[f]) for f in flags}))
    return sorted(out, key=lambda g: _order(g.at))


def pick(gs: list[Group], which: Which) -> Group | list[Group] | None:
    """The group with the largest / smallest median (ties: the lowest group value), the first / last group,
    or all of them; None when there is none."""
    if not gs:
        return None
    if which == "all":
        return gs
    if which in ("first", "last"):
        return gs[0] if which == "first" else gs[-1]
    sign = -1 if which == "max" else 1
    return min(gs, key=lambda g: sign * g.value)


def ties_best(value, best):
    """Whether `value` ties `best` for the win: |value - best| <= TIE_RTOL * |best| (so only an equal
    value ties a best of 0). A tie is no variant's win. The one tie rule of the winner tables and the
    Key findings; `value` and `best` are numbers, numpy arrays or polars expressions alike."""
    return abs(value - best) <= TIE_RTOL * abs(best)


def tied_best(wide: pl.DataFrame, columns: list[str], minimize: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Who wins each configuration of a `per_variant` frame (`columns`: its variant columns, null where
    not ok): the index in `columns` of the best variant (the first of equal bests), its metric (inf, or
    -inf when maximizing, where no variant is ok) and which variants tie for it (`ties_best`: a bool per
    column; none where no variant is ok)."""
    x = wide.select(columns).to_numpy().astype(float)
    x = np.where(np.isnan(x), np.inf if minimize else -np.inf, x)
    pick = x.argmin(axis=1) if minimize else x.argmax(axis=1)
    best = np.take_along_axis(x, pick[:, None], axis=1)[:, 0]
    with np.errstate(invalid="ignore"):  # inf - inf where no variant is ok: no tie
        near = ties_best(x, best[:, None])
    return pick, best, near


def speedup(lf: pl.LazyFrame, axis: str, baseline: object, metric: str, keys: list[str],
            higher: bool = False) -> pl.LazyFrame:
    """Each row with `baseline_value` and `speedup` = how many times better than the baseline
    variant at the same `keys` (all other axes); null where the baseline is missing."""
    base = lf.filter(pl.col("status") == STATUS_OK).filter(pl.col(axis) == baseline).select(*keys, pl.col(metric).alias("baseline_value"))
    joined = lf.filter(pl.col("status") == STATUS_OK).join(base, on=keys, how="left", nulls_equal=True) if keys else \
        lf.filter(pl.col("status") == STATUS_OK).join(base, how="cross")
    ratio = pl.col(metric) / pl.col("baseline_value") if higher else pl.col("baseline_value") / pl.col(metric)
    return joined.with_columns(pl.when(pl.col(metric) > 0).then(ratio).alias("speedup"))


def is_in(column: str, values: list) -> pl.Expr:
    """Rows whose `column` is one of `values`, null ("auto") included when it is one of them."""
    chosen = pl.col(column).is_in([v for v in values if v is not None])
    return (chosen | pl.col(column).is_null()) if None in values else chosen
