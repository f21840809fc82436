"""The model contract: a small core every model gives, and optional parts it may add.

A plugin imports what it needs from this one module (workers/model.py):

    from workers.model import Axis, Lines, Medians, Metric, Model, Quantity

The core (a `Model` subclass sets these class attributes and defines `evaluate`):
- `name`, `axes` (an `Axis` each, or the name of a shared axis: "struct_page_size"), `metrics`
  (`Metric`: column, dtype, doc, which direction is better), `headline` (the metric the report leads
  with) and `evaluate(points, profile)`;
- `version`, `description`, `points_per_second` (used only to size chunks), `costs` (the default
  costs of its own profile section, `Quantity` each, for a model no shipped profile knows) and
  `infeasible` (why a point cannot exist: (polars expression over the points, message) pairs, the
  first that holds wins) have defaults.

`evaluate` turns a polars frame of points (one `param_<axis>` column per axis the model declares)
into its metric columns: a mapping of each declared `metric_<name>_<unit>` column to its values
(numpy arrays, polars Series or lists, one per point, in order) or a polars frame of them. It may
add "reason" (null where the point is feasible) when a point's feasibility needs more than
`infeasible` can say. The host (workers.evaluate) builds the row frame: `status` ("ok" |
"infeasible") and `reason`, then the metrics in the declared dtypes, nulled where a point is not
ok. No Ray, no I/O, nothing read from the environment: everything a model needs comes in the
points and the profile.

Optional parts, each one frozen object on the model (empty when absent; no `measurement` or `kernel`: None):
- `report` (`Report`, or a dict of its fields): what the report says about the model beyond its
  metrics: the `comparison` a kernel engineer asks of it (variants on one axis against a baseline:
  a dict of axis and baseline is enough), the `best_keys` axes of its best-variant table, display
  names of axis values (`value_labels`), and the figures, key findings and tables it adds (`plots`:
  `Lines` and the rest of workers.plots; `findings`, `tables`: `Medians` and the rest of
  workers.findings);
- `calibration` (`Calibration`): the published figures it must reproduce, the profile entries
  calibration may move (`free_params`, and `measured_free_params` for a fit to measured rows), the
  orders its costs keep on any machine (`cost_orders`), and what its answers rest on unchecked
  (`assumptions`; with the figures' points and the kernel's exact metrics, its evidence domain:
  workers.evidence);
- `measurement` (`Measurement`): the user-space analog the measure backend runs (the planner that
  turns points into runs, the metric a measured row fills, how measured figures are named, which
  profile entries take the host's cache sizes); workers.measure reads only that declaration;
- `kernel` (`KernelCheck`): what a real kernel booted in a guest checks of it (the `kernel` row
  source, workers.guest): how a point becomes a namespace to bind, or why the kernel under test cannot
  hold it, and which metric columns a kernel row fills from what the guest measured.

workers.contract checks all of it when a model is loaded.
"""

from __future__ import annotations

import abc

from dataclasses import dataclass, field, replace
from typing import Callable, Literal, Mapping, get_args

import numpy as np
import polars as pl

from .axes import SHARED_AXES, Axis
from .dataset import STATUS_ERROR, STATUS_INFEASIBLE, STATUS_OK, unit_of  # noqa: F401 - a model's names for them
from .findings import Medians
from .hooks import Hook
from .hooks import resolve as _resolve
from .plots import Lines
from .profiles import BOUNDS, Profile, Quantity


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
    # "=": the figure is a value; ">=": a lower bound ("50%+": the model errs only below it); "<=": an upper one
    bound: str = "="

    def __post_init__(self) -> None:
        if self.bound not in BOUNDS:
            raise ValueError(f"'bound' must be one of {list(BOUNDS)} (got {self.bound!r}).")

    def error(self, value):
        """The relative error of `value` (a number or an array) against this figure: (value - published) /
        published, and for a bound only how far it falls on the wrong side of it (0 where it holds)."""
        e = (np.asarray(value, dtype=float) - self.published) / self.published
        return e if self.bound == "=" else np.minimum(e, 0.0) if self.bound == ">=" else np.maximum(e, 0.0)




Better = Literal["lower", "higher"]  # a Metric's better direction; None: a count or a flag, none
LOWER, HIGHER = get_args(Better)
BETTER = (LOWER, HIGHER, None)


@dataclass(frozen=True, kw_only=True, slots=True)
class Metric:
    """One metric column a model returns: `metric_<name>_<unit>`, its polars dtype, a one-line doc
    (the README schema table) and which direction is better ("lower", "higher", None)."""

    column: str
    dtype: object  # a polars DataType (class or instance)
    doc: str
    better: Better | None = None

    @property
    def unit(self) -> str:
        return unit_of(self.column)

    @property
    def higher_is_better(self) -> bool:
        return self.better == HIGHER


@dataclass(frozen=True, kw_only=True, slots=True)
class Comparison:
    """The variants of a model a report compares: the values of `axis` (an axis name, or its param
    column) against `baseline`, by `metric` (default: the model's headline); `label` names a variant
    in tables ("strategy"; default: the axis name)."""

    axis: str
    baseline: object
    metric: str = ""
    label: str = ""

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


@dataclass(frozen=True, kw_only=True, slots=True)
class CostOrder:
    """An order two costs of the model's own profile section must keep on any machine: `lower` <= `higher`
    (a DRAM bandwidth is no higher than the LLC's of the same kind); `why` says so. Calibration refuses
    to save a fit that breaks one (workers.fitcheck)."""

    lower: str
    higher: str
    why: str


# The host cache facts a profile entry can take before a fit to measured rows (Measurement.host_caches):
# the L1 data cache, the L2, and the last level (the L3, else the L2).
HostCache = Literal["l1d_bytes", "l2_bytes", "last_level"]
HOST_CACHES = L1D_BYTES, L2_BYTES, LAST_LEVEL = get_args(HostCache)


@dataclass(frozen=True, kw_only=True, slots=True)
class Measurement:
    """How the measure backend (workers.measure) runs a model's points on this host, and how
    calibration (workers.measure.fit) reads the measured rows.

    `planner`: a "package.module:function" reference (imported on first use, so a model module does not
    import workers.measure) or the function itself: a points frame -> per row, a plan (an object with
    `memory` bytes and `open(kernels)`, a context manager yielding a workers.measure.plans.Run) or the
    reason string why this node cannot measure that point. None: the model cannot be measured at all,
    and `reason` says why (every measured row is infeasible with it).
    `metric`: the metric column a measured row fills with the median of its samples; or, when
    `metric_axis` names an axis, a mapping of that axis's value to the column (pfnmap: by access).
    `derived`: metric column -> axis, filled with the axis value / that median (copy: metric_gbs =
    struct_page_size bytes / ns per copy).
    `id_axes`: the axes naming a measured figure, in order ("memmap/measured/fsdax/P64/template_nt/1GiB"),
    each value's label prefixed by `id_prefixes[axis]` ("P"); other axes off their default follow as
    name=value.
    `host_caches`: (section, key) of a profile entry -> the host cache fact it takes before a fit
    (L1D_BYTES, L2_BYTES or LAST_LEVEL).
    """

    planner: str | Callable[[pl.DataFrame], list] | None = None
    reason: str = ""
    metric: str | Mapping[object, str] = ""
    metric_axis: str = ""
    derived: Mapping[str, str] = field(default_factory=dict)
    id_axes: tuple[str, ...] = ()
    id_prefixes: Mapping[str, str] = field(default_factory=dict)
    host_caches: Mapping[tuple[str, str], HostCache] = field(default_factory=dict)

    @property
    def measurable(self) -> bool:
        return self.planner is not None

    def plan(self, points: pl.DataFrame) -> list:
        """The planner's plans (or reasons) for `points`, one per row."""
        return _resolve(self.planner)(points)

    @property
    def metric_columns(self) -> tuple[str, ...]:
        """Every metric column a measured row may fill with its median."""
        if isinstance(self.metric, str):
            return (self.metric,) if self.metric else ()
        return tuple(dict.fromkeys(self.metric.values()))

    def metric_of(self, value: object = None) -> str | None:
        """The metric column a point measures: `metric`, or the one its `metric_axis` value selects."""
        if isinstance(self.metric, str):
            return self.metric or None
        try:
            return self.metric.get(value)
        except TypeError:  # an unhashable value selects nothing
            return None

    def metrics_of(self, points: pl.DataFrame) -> list[str | None]:
        """metric_of() for every row of `points`."""
        if not self.metric_axis:
            return [self.metric_of()] * points.height
        return [self.metric_of(v) for v in points[f"param_{self.metric_axis}"].to_list()]


@dataclass(frozen=True, kw_only=True, slots=True)
class KernelCheck:
    """What the `kernel` row source (workers.guest) checks of a model in a real kernel booted in a guest
    (optional part `Model.kernel`).

    `planner`: a "package.module:function" reference (imported on first use) or the function itself:
    (points frame, workers.guest.KernelSettings) -> per row, a workers.guest.GuestConfig to bind, or the
    reason string why the kernel under test cannot hold that point (its row is infeasible with it).
    `reader`: the same kind of reference: (point row as a dict, workers.guest.ConfigResult) -> {metric
    column: value} of an ok result (one boot's), or, for a guest of the model's own, the reason the kernel was not
    that point; `sampled`: the metric whose value in each boot fills the
    row's measure_* columns (the samples compare's rule reads: [kernel] boots). `metrics`: the metric
    columns a kernel row fills (the others stay null); `exact`: those of them the model must equal (counts, bytes), as against a guest's times.
    `work`: the metrics of `metrics` the model prices from a build's per-operation costs fit to kernel rows
    (counts of work, such as instructions, not times). `bound`: the same kind of reference, (metric) -> a
    polars expression over a frame's param_* columns, true on the points where the kernel results the
    project records checked that metric and agreed (an exact metric equal, a work count within its fit's
    leave-one-out error): there it is `kernel-checked`; elsewhere an exact one is the kernel's arithmetic,
    extrapolated. `fitted`: (metric) -> (the build, an expression true on the points its costs were fit
    to) for a `work` metric, else None. None: nowhere. `build`: (profile) -> the build whose per-operation
    costs the profile prices the `work` metrics with (the modeled rows' kernel_build); `fitter`: (a frame of
    one build's ok kernel rows) -> a fit of that build's costs (`memsweep calibrate --from` on a kernel
    sweep): an object with `build`, `section` and `entries` (the profile table it writes), `loo_error` and
    `lines` (what it rests on, in words), and `problem` ("" when its costs are identified). `inputs`: () ->
    what fixes the model's kernel rows besides the point and the [kernel] settings (a guest of its own: its
    kernels' packages, its probe's source), hashed into its kernel chunks' ids; None: nothing more.
    `differs`: the same kind of reference as `bound`, true where the recorded kernel results counted that
    metric otherwise than the model (an exact metric's evidence says so there); None: nowhere. `prepare`: () ->
    None, run by `memsweep run` before it writes anything, that readies this node for a guest of the model's
    own (builds or fetches its kernels, progress on stderr; GuestSetupError when it cannot); None: nothing.
    `guest`: a guest of the model's own in words, for `plan` (what it boots, how often, how long a boot takes
    on 2 cores); "": the kernel source's shared guest binds its points."""

    planner: str | Callable[..., list]
    reader: str | Callable[..., dict]
    metrics: tuple[str, ...]
    exact: tuple[str, ...] = ()
    sampled: str | None = None
    work: tuple[str, ...] = ()
    bound: str | Callable[[str], pl.Expr] | None = None
    fitted: str | Callable[[str], tuple[str, pl.Expr] | None] | None = None
    build: str | Callable[..., str] | None = None
    fitter: str | Callable[[pl.DataFrame], object] | None = None
    inputs: str | Callable[[], dict] | None = None
    prepare: str | Callable[[], None] | None = None
    differs: str | Callable[[str], pl.Expr] | None = None
    guest: str = ""

    def plan(self, points: pl.DataFrame, settings) -> list:
        """The planner's configurations (or reasons) for `points`, one per row."""
        return _resolve(self.planner)(points, settings)

    def read(self, point: dict, result) -> dict:
        """The reader's metric values of one ok result."""
        return _resolve(self.reader)(point, result)

    def bound_points(self, metric: str) -> pl.Expr:
        """True on the points a guest bound and agreed on `metric` (`bound`); false everywhere without one."""
        return pl.lit(False) if self.bound is None else _resolve(self.bound)(metric)

    def differing_points(self, metric: str) -> pl.Expr:
        """True on the points a guest counted `metric` otherwise than the model (`differs`); false without one."""
        return pl.lit(False) if self.differs is None else _resolve(self.differs)(metric)

    def fit_points(self, metric: str) -> tuple[str, pl.Expr] | None:
        """The build a work metric's costs were fit to and its points (`fitted`), or None."""
        return None if self.fitted is None else _resolve(self.fitted)(metric)

    def priced_build(self, profile) -> str | None:
        """The build whose costs the profile prices the work metrics with (`build`), or None."""
        return None if self.build is None or not self.work else _resolve(self.build)(profile)

    def guest_inputs(self) -> dict:
        """What else fixes the model's kernel rows (`inputs`); {} without."""
        return {} if self.inputs is None else _resolve(self.inputs)()

    def prepare_guest(self) -> None:
        """Ready this node for the model's own guest (`prepare`), before a run writes anything; nothing without."""
        if self.prepare is not None:
            _resolve(self.prepare)()

    def fit_build(self, rows: pl.DataFrame):
        """The fitter's fit of one build's costs to its kernel rows (`fitter`); None without one."""
        return None if self.fitter is None else _resolve(self.fitter)(rows)


@dataclass(frozen=True, kw_only=True, slots=True)
class Report:
    """What the report says about a model beyond its metrics (optional part `Model.report`).

    `comparison`: variants against a baseline (the report's best and speedup tables; None: no such
    tables). `best_keys`: axis names the "best ... per configuration" table lists (other axes held
    fixed). `value_labels`: axis name -> value -> display name in tables and figures (pfnmap's "PMD
    (order 9)"). `plots`: the figures it adds (workers.plots: Lines; its own: a workers.hooks.Hook). `findings`, `tables`:
    the key findings and model-specific tables it adds (workers.findings: Medians; a finding or table of
    its own: a workers.hooks.Hook, a function that returns the numbers). Analysis draws, words
    and writes them all with one generic path."""

    comparison: Comparison | None = None
    best_keys: tuple[str, ...] = ()
    value_labels: Mapping[str, Mapping[object, str]] = field(default_factory=dict)
    plots: tuple[Lines | Hook, ...] = ()
    findings: tuple[Medians | Hook, ...] = ()
    tables: tuple[Hook, ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.comparison, Mapping):
            object.__setattr__(self, "comparison", Comparison(**self.comparison))


@dataclass(frozen=True, kw_only=True, slots=True)
class Assumption:
    """Something a model's answers rest on that no figure checks (workers.evidence): a hand-set cost, a
    cache state, costs taken from another machine. `name` is what a label quotes ("LLC-warm"), `text` one
    sentence of what is assumed, `where` a "package.module:function" reference (or the function itself):
    (rows: param_* and metric columns, profile) -> per row, whether the answer depends on it. `metrics`: the
    metric columns it bears on (a cost assumption moves times, not counts); empty: all of them."""

    name: str
    text: str
    where: str | Callable[..., object]
    metrics: tuple[str, ...] = ()

    def bears_on(self, metric: str) -> bool:
        return not self.metrics or metric in self.metrics

    def applies(self, rows: pl.DataFrame, profile: Profile):
        """Per row, whether the assumption applies (a boolean Series or array)."""
        return _resolve(self.where)(rows, profile)


@dataclass(frozen=True, kw_only=True, slots=True)
class WorkCheck:
    """Where a model's time should follow the kernel's own work (Calibration.work): `point` (axis values), the
    metric of that work (`work`: the kernel's instructions), the in-core part of the time (`compute`) and,
    optionally, the metric saying what sets the time (`binds`)."""

    point: Mapping[str, object]
    work: str
    compute: str
    binds: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class Calibration:
    """What calibration (workers.calibrate, `memsweep calibrate`) reads of a model (optional part
    `Model.calibration`).

    `figures`: the published numbers the model must reproduce, with the points that produce them.
    `free_params`: the profile entries calibration may move (fewer than the figures).
    `measured_free_params`: what a fit to measured rows frees (those span sizes and shapes the published
    figures do not, so they can pin costs the figures leave at assumed values); None: `free_params`.
    `cost_orders`: orders the model's own section's costs keep on any machine; a fit that breaks one is
    not saved. `assumptions`: what its answers may rest on unchecked, and where (workers.evidence).
    `work`: a point where compute binds and the metrics of the kernel's own work there (WorkCheck):
    calibrate prints each variant of the report's comparison against its baseline there, the modeled time
    beside the kernel's work (memmap: 1 GiB fsdax map=mem against the series build's instructions).
    `crosscheck`: "package.module:function", (fitted profile) -> lines calibrate prints after the fit: what
    other evidence says of a cost no figure pins (young: unmap_step_ns against a guest's instructions)."""

    figures: tuple[Figure, ...] = ()
    free_params: tuple[FreeParam, ...] = ()
    measured_free_params: tuple[FreeParam, ...] | None = None
    cost_orders: tuple[CostOrder, ...] = ()
    assumptions: tuple[Assumption, ...] = ()
    work: WorkCheck | None = None
    crosscheck: str = ""

    @property
    def free_for_measured(self) -> tuple[FreeParam, ...]:
        return self.free_params if self.measured_free_params is None else self.measured_free_params


class Model(abc.ABC):
    """Base class of the models: subclasses set the core class attributes and `evaluate`, and the
    optional parts they have (see the module doc)."""

    name: str = ""
    version: str = "1"
    description: str = ""
    axes: tuple[Axis, ...] = ()
    # Every metric column the model returns, in order: the dataset schema and the README table.
    metrics: tuple[Metric, ...] = ()
    # The metric column the report leads with (growth tables, default of `memsweep table`).
    headline: str = ""
    # The metric columns computed from kernel facts alone, with no cost of the profile (counts, sizes): no fit
    # bears on them, so their evidence is the kernel's arithmetic (workers.evidence), not the headline's.
    arithmetic: tuple[str, ...] = ()
    # Rough points evaluated per second on one core, used only to size chunks.
    points_per_second: float = 1e6
    # The default costs of its own profile section (key -> Quantity), for a model whose section no shipped
    # profile holds (a plugin): a spec's profile takes those it lacks (with_costs), so its rows, chunk ids
    # and digests see them; a profile's own entries win.
    costs: Mapping[str, Quantity] = {}
    # Why a point cannot exist: (polars expression over the points' param_* columns, message), first match wins.
    infeasible: tuple[tuple[pl.Expr, str], ...] = ()
    # The optional parts: an empty part (or no measurement) when the model has none.
    report: Report = Report()
    calibration: Calibration = Calibration()
    measurement: Measurement | None = None
    kernel: KernelCheck | None = None

    def __init_subclass__(cls, **kwargs) -> None:
        """The short forms a subclass may declare, made whole: a shared axis by name, the report as a dict,
        the comparison's metric and label by default."""
        super().__init_subclass__(**kwargs)
        if any(isinstance(a, str) for a in cls.__dict__.get("axes", ())):
            unknown = [a for a in cls.axes if isinstance(a, str) and a not in SHARED_AXES]
            if unknown:
                raise ValueError(f"{cls.__name__}.axes names {unknown[0]!r}, which is no shared axis; a name must be "
                                 f"one of {sorted(SHARED_AXES)}, else give an Axis")
            cls.axes = tuple(SHARED_AXES[a] if isinstance(a, str) else a for a in cls.axes)
        report = cls.__dict__.get("report")
        if isinstance(report, Mapping):
            report = cls.report = Report(**report)
        c = report.comparison if isinstance(report, Report) else None
        if c is not None and not (c.metric and c.label):
            cls.report = replace(report, comparison=replace(c, metric=c.metric or cls.headline,
                                                            label=c.label or c.column.removeprefix("param_")))

    @abc.abstractmethod
    def evaluate(self, points: pl.DataFrame, profile: Profile) -> Mapping[str, object] | pl.DataFrame:
        """The metric columns for every row of `points`: same height, same order (see module doc)."""

    @property
    def metric_dtypes(self) -> dict[str, pl.DataType]:
        """Metric column -> polars dtype, in declaration order (the frame `evaluate` returns)."""
        return {m.column: m.dtype for m in self.metrics}

    @property
    def priced(self) -> tuple[str, ...]:
        """The metric columns that rest on the profile's costs and so carry an error bar (workers.interval):
        the float answers with a better direction, less the kernel's arithmetic."""
        return tuple(m.column for m in self.metrics
                     if m.dtype == pl.Float64 and m.better is not None and m.column not in self.arithmetic)

    def metric(self, column: str) -> Metric:
        for m in self.metrics:
            if m.column == column:
                return m
        raise KeyError(column)

    def axis(self, name: str) -> Axis:
        for a in self.axes:
            if a.name == name:
                return a
        raise KeyError(name)

    @property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes)

    def value_label(self, axis: str, value: object) -> str | None:
        """The declared display name of `value` on `axis` (an axis name or param column), or None."""
        names = self.report.value_labels.get(axis.removeprefix("param_"))
        if not names:
            return None
        try:
            return names.get(value)
        except TypeError:  # an unhashable value (a list) has no declared name
            return None



def with_costs(profile: Profile, models) -> Profile:
    """`profile` with each model's declared `costs` added to its own section where the profile lacks them
    (a plugin's defaults): the one place a model's default costs join a profile."""
    for model in models:
        profile = profile.with_defaults(model.name, model.costs)
    return profile


def points_frame(model: Model, rows) -> pl.DataFrame:
    """A points frame for `model` from partial rows (dicts of axis -> value as a spec would give it;
    missing axes take their defaults), every value canonicalized by its axis."""
    rows = list(rows)
    return pl.DataFrame({
        a.column: pl.Series(a.column, [a.canonical(r.get(a.name, a.default)) for r in rows], dtype=a.dtype)
        for a in model.axes
    })


def figure_frame(model: Model, figures) -> pl.DataFrame:
    """The figures' points as a points frame the model can evaluate."""
    return points_frame(model, (f.params for f in figures))


def validation_figures(model: Model, profile: Profile) -> tuple[Figure, ...]:
    """The profile's `[[validation]]` figures of this model, as Figures."""
    return tuple(
        Figure(id=v["id"], model=model.name, metric=v["metric"], published=float(v["published"]), unit=v["unit"],
               params=v["params"], source=v["source"] + (f" ({v['note']})" if v.get("note") else ""),
               bound=v.get("bound", "="))
        for v in profile.validation if v["model"] == model.name
    )


def status_columns(infeasible_reason: pl.Expr) -> list[pl.Expr]:
    """`status` and `reason` from one string expression that is null where the point is feasible."""
    return [
        pl.when(infeasible_reason.is_null())
        .then(pl.lit(STATUS_OK))
        .otherwise(pl.lit(STATUS_INFEASIBLE))
        .alias("status"),
        infeasible_reason.alias("reason"),
    ]


class LastPoints:
    """What a model derives from its points alone, kept for the last frame it was given.

    A fit evaluates its figures' frame thousands of times, each time with other costs, and a chunk's error
    bars (workers.interval) evaluate its points again under every refit; what depends on the points only
    (status, inputs, counts) need not be derived again. `get(points, derive)` gives derive(points), or what it
    gave for the last frame equal to `points` (DataFrame.equals compares every value) if that frame had at
    most `rows` rows: a chunk's worth (chunks are sized to seconds of work, at most 1,000,000 points in the
    shipped specs), so what is kept is at most one chunk's. The numpy arrays in what derive gives (in tuples
    and dicts) are made read-only, so no evaluation can change what the next one is given."""

    def __init__(self, rows: int = 1_000_000) -> None:
        self.rows = rows
        self._last: tuple[pl.DataFrame, object] | None = None

    def get(self, points: pl.DataFrame, derive: Callable[[pl.DataFrame], object]):
        last = self._last
        if last is not None and (last[0] is points or last[0].equals(points)):
            return last[1]
        value = derive(points)
        _read_only(value)
        if points.height <= self.rows:
            self._last = (points, value)
        return value


def _read_only(value) -> None:
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif isinstance(value, (tuple, list, dict)):
        for v in value.values() if isinstance(value, dict) else value:
            _read_only(v)


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
