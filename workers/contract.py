"""The model contract, checked on every model memsweep loads (entry point or `plugins` module).

`check_model(model)` returns the first rule the object breaks, as a sentence in the one message
template ("'{field}' must be {rule} (got {value!r})"), or None. The registry wraps it in a
PluginError that names the plugin. Checked here: the core the registry, the grid and the dataset
schema rely on before a model ever evaluates a point (name, version, axes, metrics, headline; what
`evaluate` returns is checked per chunk by workers.evaluate), and each optional part it gives: its
`report` (workers.model.Report) names its own axes and columns, its findings a figure id and only the
placeholders their templates can fill; its `calibration` its own metrics, axes and costs; its
`measurement` its own metrics and axes (its planner is imported only when it measures). A declaration
left on the model that belongs in a part (`plots`, `free_params`, ...) is named with its part.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import polars as pl

from .axes import Axis
from .findings import (FINDING_KINDS, FORMATS, PICKS, Column, Medians, MedianTable, Pick, Ratio, Winner,
                       finding_columns, finding_templates, placeholders)
from .model import BETTER, HOST_CACHES, Calibration, Comparison, CostOrder, Figure, Measurement, Metric, Model, Report
from .plots import OPS, X_SCALES, Y_SCALES, BestHeatmap, Cond, Either, Lines, Overlay, Panels, Series, X, Y
from .profiles import Quantity

NAME_RE = re.compile(r"[a-z][a-z0-9_]*")
NAME_RULE = "a lower-case identifier matching [a-z][a-z0-9_]*"
PLANNER_RE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
# Declarations that belong in an optional part, and the part.
MOVED = {**dict.fromkeys(("comparison", "best_keys", "value_labels", "plots", "findings", "tables"), Report),
         **dict.fromkeys(("figures", "free_params", "measured_free_params", "cost_orders", "costs"), Calibration)}


def check_model(model: object) -> str | None:
    """The first contract rule `model` breaks, or None when it keeps them all."""
    if not isinstance(model, Model):
        return f"the object must be a workers.model.Model instance (got {_type(model)})."
    name = model.name
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        return f"'name' must be {NAME_RULE} (got {name!r})."
    if not isinstance(model.version, str) or not model.version:
        return f"'version' must be a non-empty string (got {model.version!r})."
    return (_moved(model) or _axes(model) or _metrics(model) or _report(model) or _calibration(model)
            or _measurement(model))


def _moved(model: Model) -> str | None:
    """A declaration set on the model itself that belongs in an optional part."""
    for name, part in MOVED.items():
        if getattr(type(model), name, None) is not getattr(Model, name, None) or name in vars(model):
            where = part.__name__.lower()
            return (f"'{name}' must be declared in the model's '{where}' (workers.model.{part.__name__}({name}=...)), "
                    f"not on the model itself (got a {name!r} attribute of {type(model).__qualname__}).")
    return None


def _type(obj: object) -> str:
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}"


def _tuple_of(value: object, kinds, field: str, what: str, nonempty: bool = False) -> str | None:
    """Why `value` is not a (non-empty) tuple of `kinds` objects (`what` names them), or None."""
    if not isinstance(value, tuple) or (nonempty and not value):
        return f"'{field}' must be a {'non-empty ' if nonempty else ''}tuple of {what} (got {value!r})."
    for v in value:
        if not isinstance(v, kinds):
            return f"'{field}' must hold only {what} objects (got {_type(v)})."
    return None


def _axes(model: Model) -> str | None:
    problem = _tuple_of(model.axes, Axis, "axes", "workers.axes.Axis", nonempty=True)
    if problem:
        return problem
    seen: set[str] = set()
    for a in model.axes:
        if not isinstance(a.name, str) or not NAME_RE.fullmatch(a.name):
            return f"'axes' names must be {NAME_RULE} (got {a.name!r})."
        if a.name in seen:
            return f"'axes' must not repeat an axis name (got {a.name!r} twice)."
        seen.add(a.name)
    return None


def _is_dtype(dt: object) -> bool:
    """A polars data type, as an instance (pl.Int64()) or as the class (pl.Int64) the models use."""
    return isinstance(dt, pl.DataType) or (isinstance(dt, type) and issubclass(dt, pl.DataType))


def _metrics(model: Model) -> str | None:
    problem = _tuple_of(model.metrics, Metric, "metrics", "workers.model.Metric", nonempty=True)
    if problem:
        return problem
    seen: set[str] = set()
    for m in model.metrics:
        col = m.column
        if not isinstance(col, str) or not col.startswith("metric_") or col == "metric_":
            return f"'metrics' columns must start with 'metric_' and carry their unit in the name (got {col!r})."
        if col in seen:
            return f"'metrics' must not repeat a column (got {col!r} twice)."
        seen.add(col)
        if not _is_dtype(m.dtype):
            return f"'metrics[{col!r}].dtype' must be a polars DataType such as pl.Float64 (got {m.dtype!r})."
        if not isinstance(m.doc, str) or not m.doc.strip():
            return f"'metrics[{col!r}].doc' must be a one-line doc of that metric (got {m.doc!r})."
        if m.better not in BETTER:
            return f"'metrics[{col!r}].better' must be one of {list(BETTER)} (got {m.better!r})."
    if not isinstance(model.headline, str) or model.headline not in seen:
        return f"'headline' must be one of the model's metric columns (got {model.headline!r})."
    return None


def _report(model: Model) -> str | None:
    """The report part: its comparison, best-table keys and value labels; its findings, tables and plots."""
    report = model.report
    if report is None:
        return None
    if not isinstance(report, Report):
        return f"'report' must be a workers.model.Report or None (got {_type(report)})."
    axes = model.axis_names
    columns = {m.column for m in model.metrics}
    comp = report.comparison
    if comp is not None:
        if not isinstance(comp, Comparison):
            return f"'report.comparison' must be a workers.model.Comparison or None (got {_type(comp)})."
        if not isinstance(comp.axis, str) or comp.axis.removeprefix("param_") not in axes:
            return f"'report.comparison.axis' must be an axis of the model {list(axes)} (got {comp.axis!r})."
        if comp.metric not in columns:
            return f"'report.comparison.metric' must be one of the model's metric columns (got {comp.metric!r})."
        if not isinstance(comp.label, str) or not comp.label.strip():
            return (f"'report.comparison.label' must be a non-empty name of a variant such as 'strategy' "
                    f"(got {comp.label!r}).")
    keys = report.best_keys
    if not isinstance(keys, tuple):
        return f"'report.best_keys' must be a tuple of axis names (got {keys!r})."
    for k in keys:
        if k not in axes:
            return f"'report.best_keys' must name axes of the model {list(axes)} (got {k!r})."
    labels = report.value_labels
    if not isinstance(labels, Mapping):
        return f"'report.value_labels' must be a mapping of axis name to {{value: display name}} (got {labels!r})."
    for axis, names in labels.items():
        if axis not in axes:
            return f"'report.value_labels' must name axes of the model {list(axes)} (got {axis!r})."
        if not isinstance(names, Mapping) or not all(isinstance(n, str) and n for n in names.values()):
            return f"'report.value_labels[{axis!r}]' must map values to non-empty display names (got {names!r})."
    return _findings(model, report) or _tables(model, report) or _plots(model, report)


def _calibration(model: Model) -> str | None:
    """The calibration part: published figures of the model's own metrics at its own axes' values, the
    costs of its own profile section and the orders they keep."""
    cal = model.calibration
    if cal is None:
        return None
    if not isinstance(cal, Calibration):
        return f"'calibration' must be a workers.model.Calibration or None (got {_type(cal)})."
    return _figures(model, cal) or _costs(cal) or _cost_orders(cal)


def _figures(model: Model, cal: Calibration) -> str | None:
    problem = _tuple_of(cal.figures, Figure, "calibration.figures", "workers.model.Figure")
    if problem:
        return problem
    axes = {a.name: a for a in model.axes}
    for f in cal.figures:
        at = f"calibration.figures[{f.id!r}]"
        if f.model != model.name:
            return f"'{at}.model' must be {model.name!r}, the model declaring it (got {f.model!r})."
        if f.metric not in model.metric_dtypes:
            return f"'{at}.metric' must be one of the model's metrics (got {f.metric!r})."
        for key, value in f.params.items():
            if key not in axes:
                return f"'{at}.params' must name axes of the model {sorted(axes)} (got {key!r})."
            try:
                axes[key].canonical(value)
            except ValueError as e:
                return f"'{at}.params.{key}' {e}."
    return None


def _measurement(model: Model) -> str | None:
    """The measurement declaration: a planner (or the reason there is none), metric columns of the model,
    derived columns from its axes, figure-id axes of the model, host cache facts that exist."""
    m = model.measurement
    if m is None:
        return None
    if not isinstance(m, Measurement):
        return f"'measurement' must be a workers.model.Measurement or None (got {_type(m)})."
    axes = model.axis_names
    columns = {c.column for c in model.metrics}
    if m.planner is None:
        if not isinstance(m.reason, str) or not m.reason.strip():
            return ("'measurement.reason' must say why the model cannot be measured when it has no planner "
                    f"(got {m.reason!r}).")
        return None
    if not (callable(m.planner) or (isinstance(m.planner, str) and PLANNER_RE.fullmatch(m.planner))):
        return f"'measurement.planner' must be a function or a 'package.module:function' reference (got {m.planner!r})."
    if m.metric_axis:
        if m.metric_axis not in axes:
            return f"'measurement.metric_axis' must be an axis of the model {list(axes)} (got {m.metric_axis!r})."
        if not isinstance(m.metric, Mapping) or not m.metric:
            return f"'measurement.metric' must map values of {m.metric_axis!r} to metric columns (got {m.metric!r})."
    elif not isinstance(m.metric, str):
        return f"'measurement.metric' must be a metric column unless 'metric_axis' selects one (got {m.metric!r})."
    for field in ("derived", "id_prefixes", "host_caches"):
        if not isinstance(getattr(m, field), Mapping):
            return f"'measurement.{field}' must be a mapping (got {getattr(m, field)!r})."
    for col in m.metric_columns or ("",):
        if col not in columns:
            return f"'measurement.metric' must name the model's metric columns (got {col!r})."
    for col, axis in m.derived.items():
        if col not in columns:
            return f"'measurement.derived' must name the model's metric columns (got {col!r})."
        if axis not in axes:
            return f"'measurement.derived[{col!r}]' must be an axis of the model {list(axes)} (got {axis!r})."
    if not isinstance(m.id_axes, tuple):
        return f"'measurement.id_axes' must be a tuple of axis names (got {m.id_axes!r})."
    for name in m.id_axes:
        if name not in axes:
            return f"'measurement.id_axes' must name axes of the model {list(axes)} (got {name!r})."
    for name in m.id_prefixes:
        if name not in m.id_axes:
            return f"'measurement.id_prefixes' must name id axes {list(m.id_axes)} (got {name!r})."
    for entry, cache in m.host_caches.items():
        if not (isinstance(entry, tuple) and len(entry) == 2 and all(isinstance(k, str) for k in entry)):
            return f"'measurement.host_caches' keys must be (section, key) profile entries (got {entry!r})."
        if cache not in HOST_CACHES:
            return f"'measurement.host_caches[{entry!r}]' must be one of {list(HOST_CACHES)} (got {cache!r})."
    return None


def _findings(model: Model, report: Report) -> str | None:
    """The key findings the report part declares (workers.findings): their kinds, ids and figure ids, the
    columns they name (the model's param_ / metric_ columns), their picks, conditions and number formats,
    and the placeholders their sentence templates use."""
    columns = {a.column for a in model.axes} | {m.column for m in model.metrics}
    problem = _tuple_of(report.findings, FINDING_KINDS, "report.findings", "workers.findings.Winner, Ratio or Medians")
    if problem:
        return problem
    ids: set[str] = set()
    for f in report.findings:
        if not isinstance(f.id, str) or not NAME_RE.fullmatch(f.id):
            return f"'report.findings' ids must be {NAME_RULE} (got {f.id!r})."
        if f.id in ids:
            return f"'report.findings' must not repeat an id (got {f.id!r} twice)."
        ids.add(f.id)
        at = f"report.findings[{f.id!r}]"
        if not isinstance(f.figure, str) or not f.figure:
            return f"'{at}.figure' must be the id of the report figure that shows it, a string (got {f.figure!r})."
        if isinstance(f, (Winner, Ratio)) and report.comparison is None:
            return f"'{at}' must belong to a report that declares a 'comparison' (got comparison None)."
        problem = _finding_fields(f, at, columns, _booleans(model))
        if problem:
            return problem
    return None


def _tables(model: Model, report: Report) -> str | None:
    """The tables the report part declares (workers.findings.MedianTable): the model's own columns."""
    columns = {a.column for a in model.axes} | {m.column for m in model.metrics}
    problem = _tuple_of(report.tables, MedianTable, "report.tables", "workers.findings.MedianTable")
    if problem:
        return problem
    axes = {a.column for a in model.axes}
    for t in report.tables:
        if not isinstance(t.title, str) or not t.title.strip():
            return f"'report.tables' titles must be non-empty strings (got {t.title!r})."
        at = f"report.tables[{t.title!r}]"
        if not t.by or not t.medians:
            return f"'{at}' must group by at least one column and take the median of at least one (got {t!r})."
        for c in (*t.by, *t.medians, *t.flags):
            if not isinstance(c, Column):
                return f"'{at}' columns must be workers.findings.Column objects (got {_type(c)})."
            if c.column not in columns:
                return f"'{at}' must name the model's param_/metric_ columns (got {c.column!r})."
            if _bad_format(c.fmt):
                return f"'{at}' column formats must be '', 'bytes' or a format spec such as '.2%' (got {c.fmt!r})."
        for c in t.flags:
            if c.column not in _booleans(model):
                return f"'{at}.flags' must name boolean columns of the model (got {c.column!r})."
        for c in (*t.over, *t.prefer):
            if c not in axes:
                return f"'{at}.over' and '.prefer' must name the model's param_ columns (got {c!r})."
    return None


def _booleans(model: Model) -> set[str]:
    """The model's boolean columns: bool axes and Boolean metrics (what a flag may name)."""
    return ({a.column for a in model.axes if a.kind == "bool"}
            | {m.column for m in model.metrics if m.dtype == pl.Boolean or isinstance(m.dtype, pl.Boolean)})


def _finding_fields(f, at: str, columns: set[str], booleans: set[str]) -> str | None:
    for col in sorted(finding_columns(f)):
        if col not in columns:
            return f"'{at}' must name the model's param_/metric_ columns (got {col!r})."
    if _bad_format(f.fmt) or not f.fmt:
        return f"'{at}.fmt' must be 'bytes' or a format spec such as '.2f' (got {f.fmt!r})."
    if isinstance(f, Medians):
        if f.each and not f.clause:
            return f"'{at}.clause' must be the template written per value of 'each' (got {f.clause!r})."
        for c in f.where:
            if not _cond_ok(c):
                return f"'{at}.where' must hold workers.plots Cond / Either with an op of {list(OPS)} (got {c!r})."
    quotes = [] if isinstance(f, Winner) else [f.quote, *(c.quote for c in getattr(f, "more", ()))]
    for quote in quotes:
        if not isinstance(quote, tuple) or not quote or not all(
                isinstance(q, tuple) and len(q) == 2 and isinstance(q[0], str) and q[0].isidentifier() for q in quote):
            return f"'{at}.quote' must be a non-empty tuple of (name, pick) pairs, names identifiers (got {quote!r})."
        for _, pick in quote:
            if isinstance(pick, Pick) and pick.which not in PICKS:
                return f"'{at}.quote' picks must be one of {list(PICKS)} (got {pick.which!r})."
            for flag in (pick.only, pick.unless) if isinstance(pick, Pick) else ():
                if flag and flag not in booleans:
                    return f"'{at}.quote' picks' only / unless must name boolean columns of the model (got {flag!r})."
    for name, template, allowed in finding_templates(f):
        if not isinstance(template, str):
            return f"'{at}.{name}' must be a sentence template, a string (got {template!r})."
        try:
            used = placeholders(template)
        except ValueError as e:
            return f"'{at}.{name}' must be a format template with named placeholders (got {template!r}: {e})."
        unknown = sorted(used - allowed)
        if unknown:
            return f"'{at}.{name}' may use only the placeholders {sorted(allowed)} (got {unknown[0]!r})."
    return None


def _bad_format(fmt: object) -> bool:
    if not isinstance(fmt, str):
        return True
    if not fmt or fmt in FORMATS:
        return False
    try:
        format(1.5, fmt)
    except (ValueError, TypeError):
        return True
    return False


def _cond_ok(c: object) -> bool:
    if isinstance(c, Either):
        return all(_cond_ok(k) for g in c.groups for k in g)
    return isinstance(c, Cond) and c.op in OPS


def _plots(model: Model, report: Report) -> str | None:
    """The figures the model declares (workers.plots: Lines, BestHeatmap): unique ids that are not the
    report's own (parity, measured_vs_model), parts of the right kinds, known scales, the model's own
    columns and valid conditions; a metric per panel needs a split, a heatmap a comparison and grid axes."""
    problem = _tuple_of(report.plots, (Lines, BestHeatmap), "report.plots", "workers.plots.Lines or BestHeatmap")
    if problem:
        return problem
    columns = {a.column for a in model.axes} | {m.column for m in model.metrics}
    ids: set[str] = {"parity", "measured_vs_model"}
    for p in report.plots:
        if not isinstance(p.id, str) or not NAME_RE.fullmatch(p.id) or p.id in ids:
            return (f"'report.plots' ids must be {NAME_RULE}, unique and not 'parity' or 'measured_vs_model' "
                    f"(got {p.id!r}).")
        ids.add(p.id)
        at = f"report.plots[{p.id!r}]"
        problem = _plot_parts(p, at) or _plot_rules(report, p, at)
        if problem:
            return problem
        unknown = sorted(c for c in p.columns() if c not in columns)
        if unknown:
            return f"'{at}' must name the model's param_/metric_ columns (got {unknown[0]!r})."
    return None


# A plot's parts: (field, the kinds it may be, what to write there); a string given for one is already
# its object (workers.plots).
_PARTS = (("x", None, "a column, a workers.plots.X or a non-empty tuple of them"),
          ("y", Y, "a metric column or a workers.plots.Y"),
          ("hue", Series, "a column or a workers.plots.Series"),
          ("style", (Series, type(None)), "a column, a workers.plots.Series or None"),
          ("panels", Panels, "a split column, a workers.plots.Panels or None"),
          ("overlay", Overlay, "a workers.plots.Overlay or None"))


def _plot_parts(p, at: str) -> str | None:
    if not isinstance(p.title, str) or not p.title.strip() or not isinstance(p.caption, str):
        return f"'{at}.title' and '.caption' must be strings, the title not empty (got {p.title!r})."
    for name, kinds, what in _PARTS:
        if not hasattr(p, name):
            continue
        value = getattr(p, name)
        ok = (isinstance(value, tuple) and value and all(isinstance(x, X) for x in value)) if kinds is None \
            else isinstance(value, kinds)
        if not ok:
            return f"'{at}.{name}' must be {what} (got {value!r})."
    if not isinstance(p.hold, Mapping):
        return f"'{at}.hold' must map param columns to the value to hold them at, or POOL (got {p.hold!r})."
    for c in p.conditions():
        if not _cond_ok(c):
            return f"'{at}.where' must hold workers.plots.Cond/Either with an op in {list(OPS)} (got {c!r})."
    return None


def _plot_rules(report: Report, p, at: str) -> str | None:
    """Scales, a metric per panel with its split; a heatmap's comparison, grid and panels."""
    if isinstance(p, BestHeatmap):
        if report.comparison is None or not isinstance(p.grid, tuple) or not p.grid:
            return f"'{at}' must belong to a report with a 'comparison' and name its 'grid' axes (got {p.grid!r})."
        if p.panels.split is not None:
            return f"'{at}.panels' of a BestHeatmap takes facets, not a split (got split {p.panels.split!r})."
        return None
    for x in p.x:
        if x.scale not in X_SCALES:
            return f"'{at}.x.scale' must be one of {list(X_SCALES)} (got {x.scale!r})."
    if p.y.scale not in Y_SCALES:
        return f"'{at}.y.scale' must be one of {list(Y_SCALES)} (got {p.y.scale!r})."
    if not isinstance(p.y.metric, str) and not p.panels.split:
        return f"'{at}.y.metric' maps split values to metrics: the panels need a 'split' column (got split None)."
    return None


def _costs(cal: Calibration) -> str | None:
    """The model's own profile-section costs: a mapping of key to workers.profiles.Quantity."""
    costs = cal.costs
    if not isinstance(costs, Mapping):
        return f"'calibration.costs' must be a mapping of cost name to workers.profiles.Quantity (got {costs!r})."
    for key, q in costs.items():
        if not isinstance(key, str) or not isinstance(q, Quantity):
            return f"'calibration.costs' must map cost names to workers.profiles.Quantity (got {key!r}: {_type(q)})."
    return None


def _cost_orders(cal: Calibration) -> str | None:
    """Each declared order names two different costs of the model's own section and says why."""
    problem = _tuple_of(cal.cost_orders, CostOrder, "calibration.cost_orders", "workers.model.CostOrder")
    if problem:
        return problem
    for o in cal.cost_orders:
        if not all(isinstance(k, str) and NAME_RE.fullmatch(k) for k in (o.lower, o.higher)) or o.lower == o.higher:
            return (f"'calibration.cost_orders' must name two different cost keys, each {NAME_RULE} "
                    f"(got {o.lower!r}, {o.higher!r}).")
        if not isinstance(o.why, str) or not o.why.strip():
            return f"'calibration.cost_orders' must say why {o.lower} <= {o.higher} (got {o.why!r})."
    return None


def one_line(e: BaseException) -> str:
    """An exception's text on one line (its first line)."""
    text = str(e).strip()
    return text.splitlines()[0] if text else "(no message)"
