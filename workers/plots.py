"""The figures a model contributes to the report, declared as data.

A `Plot` says what is plotted against what: the x axis and the metric, the
series (colour, line style), the panels (facets), the scales, the filters and
the axes held fixed or pooled. analysis/figures/declared.py draws every
declared Plot of every model in a sweep with one generic path, so a plugin
model gets its figures the way a shipped one does, and workers import no
plotting library.

Two kinds exist:
- "lines": the median of `y` per (panel, series, x) on a slice of the sweep
  where every other varying axis is held at one value (or pooled, `pool`);
- "best_heatmap": on a grid of the first two `grid` axes that vary, the largest
  speedup of any variant of the model's `comparison` over its baseline.

Conditions (`Cond`, `Either`) filter rows as data: they become polars
expressions in analysis and are also tested against published figures'
parameters (`published_when`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

KINDS = ("lines", "best_heatmap")
X_SCALES = ("size", "log", "ticks", "ordinal_size", "order")
Y_SCALES = ("auto", "size", "percent")
OPS = ("==", "!=", ">=", ">", "<=", "<", "in", "not null", "== column")


@dataclass(frozen=True, slots=True)
class Cond:
    """`column op value` on rows (a param_ or metric_ column). "not null" takes no value;
    "in" a tuple; "== column" compares with another column of the same row."""

    column: str
    op: str
    value: object = None


@dataclass(frozen=True, slots=True)
class Either:
    """Rows that satisfy every Cond of at least one group. Applied only while `when_varying` (a
    column) takes more than one value among the ok rows, when it is given."""

    groups: tuple[tuple[Cond, ...], ...]
    when_varying: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Plot:
    """One figure of a model's report (see the module doc). Columns are param_/metric_ names."""

    id: str  # stable, the anchor in report.html and the file name
    title: str
    caption: str  # what the reader needs to read it; analysis appends the panels and held axes
    kind: str = "lines"
    x: str | tuple[str, ...] = ""  # one column, or alternatives: one panel per alternative that varies
    max_x: int = 2  # at most this many alternatives
    x_min: float | None = None  # x values below this are left out (e.g. -1 = "not given")
    y: str = ""  # the metric (lines)
    split: str | None = None  # one panel per value of this column ...
    y_by: Mapping[object, str] = field(default_factory=dict)  # ... each with its own metric
    split_order: tuple = ()  # panel values first in this order
    hue: str | None = None
    hue_order: tuple = ()  # series values first in this order
    hue_title: str = ""
    style: str | None = None  # a second series axis (line style)
    facets: tuple[str, ...] = ()  # panel axes in order of preference, taken while they vary
    grid: tuple[str, ...] = ()  # best_heatmap: row and column axes in order of preference
    max_panels: int = 12
    most: Mapping[str, int] = field(default_factory=dict)  # at most n values (evenly spread) of a column
    keep: Mapping[str, tuple] = field(default_factory=dict)  # values always kept when picking
    where: tuple[Cond | Either, ...] = ()
    prefer: Mapping[str, object] = field(default_factory=dict)  # value to hold an axis at, when present
    pool: tuple[str, ...] = ()  # axes not held fixed: the median is taken over them
    flag: str | None = None  # a boolean column: a star where it is true
    published: bool = False  # overlay the model's published figures of the panel's metric ...
    published_when: tuple[Cond | Either, ...] = ()  # ... whose parameters satisfy these
    # size: log2 with binary byte labels; log: log10, plain labels; ticks: one tick per value;
    # ordinal_size: equal spacing, byte labels; order: log2 pages with the folio size. One, or per x column.
    x_scale: str | Mapping[str, str] = "size"
    y_scale: str = "auto"  # auto: log when the values span more than 30x, else from zero
    xlabel: str | Mapping[str, str] = ""  # one label, or per x column
    ylabel: str | Mapping[object, str] = ""  # one label, or per split value
    panel_title: str = ""  # a panel's title with {value} (the split value's label); default "split=value"

    @property
    def xs(self) -> tuple[str, ...]:
        return (self.x,) if isinstance(self.x, str) else tuple(self.x)

    def metric_of(self, value: object) -> str:
        return self.y_by.get(value, self.y) if self.y_by else self.y

    def columns(self) -> set[str]:
        """Every column the declaration names (the contract checks they are the model's)."""
        named = {*self.xs, self.y, *self.y_by.values(), self.split, self.hue, self.style, self.flag,
                 *self.facets, *self.grid, *self.most, *self.keep, *self.prefer, *self.pool}
        for c in (*self.where, *self.published_when):
            named |= cond_columns(c)
        return {c for c in named if c}

    def scale_of(self, x: str) -> str:
        return self.x_scale if isinstance(self.x_scale, str) else self.x_scale.get(x, "size")

    def xlabel_of(self, x: str) -> str:
        if isinstance(self.xlabel, str):
            return self.xlabel or x.removeprefix("param_").replace("_", " ")
        return self.xlabel.get(x, x.removeprefix("param_").replace("_", " "))

    def ylabel_of(self, value: object, metric: str) -> str:
        if isinstance(self.ylabel, str):
            return self.ylabel or metric.removeprefix("metric_").replace("_", " ")
        return self.ylabel.get(value, metric.removeprefix("metric_").replace("_", " "))


def cond_columns(c: Cond | Either) -> set[str]:
    if isinstance(c, Cond):
        return {c.column} | ({c.value} if c.op == "== column" else set())
    return {col for g in c.groups for cond in g for col in cond_columns(cond)} | (
        {c.when_varying} if c.when_varying else set())


def holds(c: Cond | Either, values: Mapping[str, object]) -> bool:
    """Whether a row given as {column: value} satisfies `c` (a column it lacks: False)."""
    if isinstance(c, Either):
        return any(all(holds(k, values) for k in g) for g in c.groups)
    if c.column not in values:
        return False
    v = values[c.column]
    if c.op == "not null":
        return v is not None
    if c.op == "in":
        return v in c.value
    if c.op == "== column":
        return c.value in values and v == values[c.value]
    if c.op in ("==", "!="):
        return (v == c.value) == (c.op == "==")
    if v is None or c.value is None:
        return False
    return {">=": v >= c.value, ">": v > c.value, "<=": v <= c.value, "<": v < c.value}[c.op]
