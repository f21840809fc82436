"""The figures models contribute to the report alike, declared as data: `Lines`, the median of a metric
(`y`) against a column (`x`), one line per value of the series column (`hue`, and a second one drawn as
line styles, `style`), on a slice of the sweep where every other varying axis is held at one value. A
figure only one model draws is a function of its own package (workers.hooks: `Hook`, `Heatmap`).

The common case names its columns as plain strings, an axis by its name and a metric by its column:

    Lines(id="x_time", title="...", caption="...", x="size", y="metric_time_ms", hue="strategy")

Rarer options live in small objects that take a string's place where a figure needs them (or a dict
of their fields: `x=dict(column="cpus", scale="log")`):
`X` (scale, label, a minimum; several X are alternatives, a panel each), `Y` (scale, label, or a
metric per panel), `Series` (value order, legend title, at most n values), `Panels` (one per value
of a split column, times the facets that vary) and `Overlay` (stars where a flag is true, the
model's published figures). A plot takes `hold`, the value to hold an axis at where the sweep
has it (or POOL: not held, the median is taken over its values), and `where`, row filters.
analysis/figures/declared.py draws every declared plot of every model in a sweep with one generic
path, so a plugin model gets its figures the way a shipped one does, and workers import no plotting
library. A plot holds the object form: a string given for `x` is `(X(column),)` once constructed, and
every axis as its param_ column (`column()`).

Conditions (`Cond`, `Either`) filter rows as data: they become polars expressions in analysis and
are also tested against published figures' parameters (`Overlay.published_when`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Literal, Mapping, get_args

XScale = Literal["size", "log", "ticks", "ordinal_size", "order"]
YScale = Literal["auto", "size", "percent"]
Op = Literal["==", "!=", ">=", ">", "<=", "<", "in", "not null", "== column"]
X_SCALES, Y_SCALES, OPS = get_args(XScale), get_args(YScale), get_args(Op)
MAX_X = 2  # of several x alternatives, the first this many that vary are drawn


class Hold(enum.Enum):
    POOL = "pool"  # an axis in `hold` not held at one value: the median is taken over all its values


POOL = Hold.POOL


def column(name: object) -> object:
    """A declared column: an axis by its name ("batching") is its param_ column; a param_ or metric_ name is
    kept (anything else is left for the contract)."""
    if isinstance(name, str) and name and not name.startswith(("param_", "metric_")):
        return f"param_{name}"
    return name


@dataclass(frozen=True, slots=True)
class Cond:
    """`column op value` on rows (an axis, or a metric_ column). "not null" takes no value;
    "in" a tuple; "== column" compares with another column of the same row."""

    column: str
    op: Op
    value: object = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "column", column(self.column))
        if self.op == "== column":
            object.__setattr__(self, "value", column(self.value))


@dataclass(frozen=True, slots=True)
class Either:
    """Rows that satisfy every Cond of at least one group. Applied only while `when_varying` (a
    column) takes more than one value among the ok rows, when it is given."""

    groups: tuple[tuple[Cond, ...], ...]
    when_varying: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "when_varying", column(self.when_varying))


def _name(column: str, prefix: str) -> str:
    return column.removeprefix(prefix).replace("_", " ")


@dataclass(frozen=True, slots=True)
class X:
    """The x axis: a column and how it is drawn. `scale`: size (log2, binary byte labels), log (log10,
    plain labels), ticks (one tick per value), ordinal_size (equal spacing, byte labels) or order (log2
    pages with the folio size). Rows whose x is below `min` are left out (e.g. -1 = "not given")."""

    column: str
    scale: XScale = "size"
    label: str = ""  # default: the column's name
    min: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "column", column(self.column))

    @property
    def text(self) -> str:
        return self.label or _name(self.column, "param_")


@dataclass(frozen=True, slots=True)
class Y:
    """The metric drawn: one column, or {split value: column} for a metric per panel (the plot's panels
    then split by that column). `scale`: auto (log when the values span more than 30x, else from zero),
    size (log2, binary byte labels) or percent (a fraction drawn as 0-100). `label`: one, or one per
    split value; default the metric's name."""

    metric: str | Mapping[object, str]
    scale: YScale = "auto"
    label: str | Mapping[object, str] = ""

    @property
    def metrics(self) -> tuple[str, ...]:
        """Every metric column drawn, in declaration order."""
        return (self.metric,) if isinstance(self.metric, str) else tuple(dict.fromkeys(self.metric.values()))

    def metric_of(self, value: object) -> str:
        """The metric of the panel whose split value is `value` ("" when none is declared for it)."""
        return self.metric if isinstance(self.metric, str) else self.metric.get(value, "")

    def text(self, value: object, metric: str) -> str:
        """The y label of the panel whose split value is `value` and metric `metric`."""
        label = self.label if isinstance(self.label, str) else self.label.get(value, "")
        return label or _name(metric, "metric_")


@dataclass(frozen=True, slots=True)
class Series:
    """One line per value of `column` (a colour each as `hue`, a line style and marker each as `style`):
    the values in `order` first, the others sorted after them; the legend titled `title` (default the
    column's name); at most `most` values, evenly spread, when given."""

    column: str
    order: tuple = ()
    title: str = ""
    most: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "column", column(self.column))


@dataclass(frozen=True, slots=True)
class Panels:
    """One panel per value of `split` (those in `order` first; titled by the `title` template with
    {value}, default "split=value"), times one per combination of the `facets` that vary, taken in
    order of preference while the panels stay at most `most` (each facet at most 4 values, evenly
    spread, always with those `keep` lists for it)."""

    split: str | None = None
    order: tuple = ()
    title: str = ""
    facets: tuple[str, ...] = ()
    most: int = 12
    keep: Mapping[str, tuple] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "split", column(self.split))
        if isinstance(self.facets, tuple):
            object.__setattr__(self, "facets", tuple(column(c) for c in self.facets))
        if isinstance(self.keep, Mapping):
            object.__setattr__(self, "keep", {column(c): v for c, v in self.keep.items()})


@dataclass(frozen=True, kw_only=True, slots=True)
class Overlay:
    """Marks over the lines: a star where the boolean column `flag` is true; with `published`, a cross at
    each of the model's published figures of the panel's metric whose parameters satisfy every
    condition of `published_when` (the other axes are then held where those figures were taken)."""

    flag: str | None = None
    published: bool = False
    published_when: tuple[Cond | Either, ...] = ()


def _as(cls, value):
    """`value` as a `cls` object: a string is its first field, a dict its fields by name; anything else is
    left for the contract."""
    if isinstance(value, str):
        return cls(value)
    return cls(**value) if isinstance(value, Mapping) else value


def conditions(value):
    """Row filters as Cond / Either: a dict is {column: value} equalities, a (column, op, value) tuple one
    Cond; a Cond or Either is kept."""
    if isinstance(value, Mapping):
        return tuple(Cond(c, "==", v) for c, v in value.items())
    return tuple(Cond(*c) if type(c) is tuple else c for c in value)


def _xs(value):
    if isinstance(value, (str, X, Mapping)):
        return (_as(X, value),)
    return tuple(_as(X, v) for v in value) if isinstance(value, tuple) else value


@dataclass(frozen=True, kw_only=True, slots=True)
class Lines:
    """The median of `y` per (panel, series, x) on a slice of the sweep where every other varying axis is
    held at one value (see the module doc): a stable `id` (the anchor in report.html and the file name), a
    `title`, a `caption` (what the reader needs; analysis appends the panels and the axes held). `x`: a
    column or an X; several are alternatives, a panel each for the first MAX_X that vary. `y`: a metric or
    a Y. `hue`, `style`: a column or a Series. `panels`, `overlay`; `hold` (axis -> the value to hold it at
    where the sweep has it, or POOL) and `where` (row filters: Cond / Either, or a dict of equalities).
    Columns are axis names or metric_ columns."""

    id: str
    title: str
    caption: str
    x: str | X | tuple[str | X, ...]
    y: str | Y
    hue: str | Series
    style: str | Series | None = None
    panels: str | Panels | None = None
    overlay: Overlay | None = None
    hold: Mapping[str, object] = field(default_factory=dict)
    where: tuple[Cond | Either, ...] = ()

    def __post_init__(self) -> None:
        for name, convert in _CONVERT.items():
            object.__setattr__(self, name, convert(getattr(self, name)))
        if isinstance(self.hold, Mapping):
            object.__setattr__(self, "hold", {column(c): v for c, v in self.hold.items()})

    @property
    def prefer(self) -> dict[str, object]:
        """The axes held at a declared value: {column: value}."""
        return {c: v for c, v in self.hold.items() if v is not POOL}

    @property
    def pooled(self) -> tuple[str, ...]:
        """The axes not held fixed: the median is taken over their values."""
        return tuple(c for c, v in self.hold.items() if v is POOL)

    def columns(self) -> set[str]:
        """Every column the declaration names (the contract checks they are the model's)."""
        named = {self.panels.split, *self.panels.facets, *self.panels.keep, *self.hold, *(x.column for x in self.x),
                 *self.y.metrics, self.hue.column, self.overlay.flag, self.style.column if self.style else None}
        for c in self.conditions():
            named |= cond_columns(c)
        return {c for c in named if c}

    def conditions(self) -> tuple[Cond | Either, ...]:
        return (*self.where, *self.overlay.published_when)


_CONVERT = {"x": _xs, "where": conditions, "y": lambda v: _as(Y, v), "hue": lambda v: _as(Series, v),
            "style": lambda v: _as(Series, v), "panels": lambda v: Panels() if v is None else _as(Panels, v),
            "overlay": lambda v: Overlay() if v is None else v}


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
