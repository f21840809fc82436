"""The model contract: a name, a version, axes, and one vectorized evaluate().

A model turns a polars frame of points (one `param_<axis>` column per axis it
declares) into a frame of the same height and order with `status`
("ok" | "infeasible"), `reason` (null when ok) and `metric_<name>_<unit>`
columns. No Ray, no I/O, nothing read from the environment: everything a model
needs comes in the points and the profile.

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
    # Every metric column the model returns and its dtype: the dataset schema.
    metrics: Mapping[str, pl.DataType] = {}
    # One line per metric column: what it counts or times (the README schema table).
    metric_docs: Mapping[str, str] = {}
    # Rough points evaluated per second on one core, used only to size chunks.
    points_per_second: float = 1e6
    free_params: tuple[FreeParam, ...] = ()
    # What a fit to measured rows frees: those span sizes and shapes the published figures do not, so
    # they can pin costs the published figures leave at assumed values. Default: free_params.
    measured_free_params: tuple[FreeParam, ...] | None = None

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
