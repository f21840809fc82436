"""The model contract: a name, a version, axes, and one vectorized evaluate().

A model turns a polars frame of points (one `param_<axis>` column per axis it
declares) into a frame of the same height and order with `status`
("ok" | "infeasible"), `reason` (null when ok) and `metric_<name>_<unit>`
columns. No Ray, no I/O, nothing read from the environment: everything a model
needs comes in the points and the profile.

What the report needs to read a model's rows is declared here too: each metric once (`Metric`:
column, dtype, doc, which direction is better), the `headline` metric, the `comparison` a kernel
engineer asks of the model (variants on one axis against a baseline), the `best_keys` axes of its
best-variant table and display names of axis values (`value_labels`).

A model that can be calibrated also lists the published figures it must
reproduce (`figures()`) and the profile entries calibration may move
(`free_params`).
"""

from __future__ import annotations

import abc

from dataclasses import dataclass
from typing import Mapping

import polars as pl

from .axes import Axis
from .dataset import unit_of
from .profiles import Profile

STATUS_OK = "ok"
STATUS_INFEASIBLE = "infeasible"
STATUS_ERROR = "error"
STATUSES = (STATUS_OK, STATUS_INFEASIBLE, STATUS_ERROR)


@dataclass(frozen=True, kw_only=True, slots=True)
class Figure:
    """One published number a model must reproduce, and the point that produces it.

    `id` is stable and starts with the model name ("memmap/fsdax/template").
    `params` gives a value for every axis of the model (canonical values).
    """

    id: str
    model: str
    metric: str
    published: float
    unit: str
    params: Mapping[str, object]
    source: str
    section: str = ""  # profile section the figure is calibrated into (default: the model name)


LOWER = "lower"
HIGHER = "higher"
BETTER = (LOWER, HIGHER, None)  # None: a count or a flag, no better direction


@dataclass(frozen=True, kw_only=True, slots=True)
class Metric:
    """One metric column a model returns: `metric_<name>_<unit>`, its polars dtype, a one-line doc
    (the README schema table) and which direction is better ("lower", "higher", None)."""

    column: str
    dtype: object  # a polars DataType (class or instance)
    doc: str
    better: str | None = None

    @property
    def unit(self) -> str:
        return unit_of(self.column)

    @property
    def higher_is_better(self) -> bool:
        return self.better == HIGHER


@dataclass(frozen=True, kw_only=True, slots=True)
class Comparison:
    """The variants of a model a report compares: the values of `axis` (an axis name, or its param
    column) against `baseline`, by `metric`; `label` names a variant in tables ("strategy")."""

    axis: str
    baseline: object
    metric: str
    label: str

    @property
    def column(self) -> str:
        return self.axis if self.axis.startswith("param_") else f"param_{self.axis}"


@dataclass(frozen=True, kw_only=True, slots=True)
class FreeParam:
    """A profile entry that calibration may move, within [lower, upper]."""

    section: str
    key: str
    lower: float
    upper: float


class Model(abc.ABC):
    """Base class of the models; subclasses set the class attributes and `evaluate`."""

    name: str = ""
    version: str = "1"
    description: str = ""
    axes: tuple[Axis, ...] = ()
    # Every metric column the model returns, in order: the dataset schema and the README table.
    metrics: tuple[Metric, ...] = ()
    # The metric column the report leads with (growth tables, default of `memsweep table`).
    headline: str = ""
    # Variants against a baseline (the report's best and speedup tables); None: no such tables.
    comparison: Comparison | None = None
    # Axis names the "best ... per configuration" table lists (other axes held fixed).
    best_keys: tuple[str, ...] = ()
    # Axis name -> value -> display name in tables and figures (e.g. pfnmap's "PMD (order 9)").
    value_labels: Mapping[str, Mapping[object, str]] = {}
    # Rough points evaluated per second on one core, used only to size chunks.
    points_per_second: float = 1e6
    free_params: tuple[FreeParam, ...] = ()
    # What a fit to measured rows frees: those span sizes and shapes the published figures do not, so
    # they can pin costs the published figures leave at assumed values. Default: free_params.
    measured_free_params: tuple[FreeParam, ...] | None = None

    @property
    def metric_dtypes(self) -> dict[str, pl.DataType]:
        """Metric column -> polars dtype, in declaration order (the frame `evaluate` returns)."""
        return {m.column: m.dtype for m in self.metrics}

    def metric(self, column: str) -> Metric:
        for m in self.metrics:
            if m.column == column:
                return m
        raise KeyError(column)

    def value_label(self, axis: str, value: object) -> str | None:
        """The declared display name of `value` on `axis` (an axis name or param column), or None."""
        names = self.value_labels.get(axis.removeprefix("param_"))
        if not names:
            return None
        try:
            return names.get(value)
        except TypeError:  # an unhashable value (a list) has no declared name
            return None

    @property
    def free_for_measured(self) -> tuple[FreeParam, ...]:
        return self.free_params if self.measured_free_params is None else self.measured_free_params

    @abc.abstractmethod
    def evaluate(self, points: pl.DataFrame, profile: Profile) -> pl.DataFrame:
        """Metrics for every row of `points`: same height, same order (see module doc)."""

    def figures(self) -> tuple[Figure, ...]:
        return ()

    def axis(self, name: str) -> Axis:
        for a in self.axes:
            if a.name == name:
                return a
        raise KeyError(name)

    @property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes)


def points_frame(model: Model, rows) -> pl.DataFrame:
    """A points frame for `model` from partial rows (dicts of axis -> value as a spec would give it;
    missing axes take their defaults), every value canonicalized by its axis."""
    rows = list(rows)
    return pl.DataFrame({
        a.column: pl.Series(a.column, [a.canonical(r.get(a.name, a.default)) for r in rows], dtype=a.dtype)
        for a in model.axes
    })


def status_columns(infeasible_reason: pl.Expr) -> list[pl.Expr]:
    """`status` and `reason` from one string expression that is null where the point is feasible."""
    return [
        pl.when(infeasible_reason.is_null())
        .then(pl.lit(STATUS_OK))
        .otherwise(pl.lit(STATUS_INFEASIBLE))
        .alias("status"),
        infeasible_reason.alias("reason"),
    ]


class Reasons:
    """Builds the `reason` expression from (condition, message) pairs; first match wins."""

    def __init__(self) -> None:
        self.rules: list[tuple[pl.Expr, str]] = []

    def add(self, condition: pl.Expr, message: str) -> Reasons:
        self.rules.append((condition, message))
        return self

    def expr(self) -> pl.Expr:
        if not self.rules:
            return pl.lit(None, dtype=pl.Utf8)
        cond, msg = self.rules[0]
        out = pl.when(cond).then(pl.lit(msg))
        for cond, msg in self.rules[1:]:
            out = out.when(cond).then(pl.lit(msg))
        return out.otherwise(pl.lit(None, dtype=pl.Utf8))
