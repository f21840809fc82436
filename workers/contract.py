"""The model contract, checked on every model memsweep loads (entry point or `plugins` module).

`check_model(model)` returns the first rule the object breaks, as a sentence in the one message
template ("'{field}' must be {rule} (got {value!r})"), or None. The registry wraps it in a
PluginError that names the plugin.

Two kinds of rule:
- Types. The core's attributes and every field of the optional parts (workers.model, workers.plots,
  workers.findings) are checked against their own annotations by one walk (`_typed`): a plugin
  author's wrong type is named by its path ('report.plots['hvo_alloc'].hue') whatever the field.
- Meaning, below: names and ids are identifiers and unique; every column a declaration names is the
  model's own; findings use only the placeholders their templates can fill; scales, ops and picks are
  known ones; a figure's parameters are values of the model's axes; cost orders name two costs.
What `evaluate` returns is checked per chunk by workers.evaluate; a measurement's planner is
imported only when it measures.
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import re
import types
import typing
from functools import cache

import polars as pl

from .findings import FORMATS, finding_columns, finding_templates, placeholders
from .hooks import Hook
from .model import Calibration, Model, Report

NAME_RE = re.compile(r"[a-z][a-z0-9_]*")
NAME_RULE = "a lower-case identifier matching [a-z][a-z0-9_]*"
PLANNER_RE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
CORE = ("name", "version", "description", "axes", "metrics", "headline", "points_per_second", "costs",
        "report", "calibration", "measurement", "kernel")
RESERVED_PLOTS = ("parity", "measured_vs_model")  # the report's own figures


def check_model(model: object) -> str | None:
    """The first contract rule `model` breaks, or None when it keeps them all."""
    if not isinstance(model, Model):
        return f"the object must be a workers.model.Model instance (got {_type(model)})."
    if not isinstance(model.name, str) or not NAME_RE.fullmatch(model.name):
        return f"'name' must be {NAME_RULE} (got {model.name!r})."
    return (_moved(model) or _typed(model) or _core(model) or _report(model) or _calibration(model)
            or _measurement(model) or _kernel(model))


# ----- types: one walk over the annotations -----

def _typed(model: Model) -> str | None:
    hints = _hints(Model)
    for name in CORE:
        problem = _check(getattr(model, name), hints[name], name)
        if problem:
            return problem
    if not model.version:
        return f"'version' must be a non-empty string (got {model.version!r})."
    for name in ("axes", "metrics"):
        if not getattr(model, name):
            return f"'{name}' must be a non-empty {_describe(hints[name]).removeprefix('a ')} (got ())."
    return None


def _check(value: object, hint: object, at: str) -> str | None:
    """Why `value` is not of the annotated type `hint` (recursing into dataclasses, tuples and mappings)."""
    if not _fits(value, hint):
        return f"'{at}' must be {_describe(hint)} (got {value!r})."
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        hints = _hints(type(value))
        for f in dataclasses.fields(value):
            problem = _check(getattr(value, f.name), hints[f.name], f"{at}.{f.name}")
            if problem:
                return problem
    elif isinstance(value, tuple):
        for i, v in enumerate(value):
            if dataclasses.is_dataclass(v) or isinstance(v, tuple):
                key = getattr(v, "id", None) or getattr(v, "column", None) or getattr(v, "title", None) or i
                problem = _check(v, type(v), f"{at}[{key!r}]")
                if problem:
                    return problem
    return None


def _fits(value: object, hint: object) -> bool:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in (object, typing.Any):
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if origin is typing.Literal:
        return value in args
    if origin is tuple or hint is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_fits(v, args[0]) for v in value)
        return not args or (len(args) == len(value) and all(_fits(v, a) for v, a in zip(value, args)))
    if origin in (cabc.Mapping, dict) or hint in (cabc.Mapping, dict):
        return isinstance(value, cabc.Mapping) and (not args or all(
            _fits(k, args[0]) and _fits(v, args[1]) for k, v in value.items()))
    if origin is cabc.Callable:
        return callable(value)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is type(None) or hint is None:
        return value is None
    return isinstance(value, origin or hint)


def _describe(hint: object) -> str:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in args)
    if origin is typing.Literal:
        return f"one of {list(args)}"
    if origin is tuple or hint is tuple:
        if not args:
            return "a tuple"
        if args[-1] is not Ellipsis:
            return f"a tuple ({', '.join(_describe(a) for a in args)})"
        each = _describe(args[0])
        return f"a tuple whose items are each {each}" if " or " in each else f"a tuple of {each}"
    if origin in (cabc.Mapping, dict) or hint in (cabc.Mapping, dict):
        return f"a mapping of {_describe(args[0])} to {_describe(args[1])}" if args else "a mapping"
    if origin is cabc.Callable:
        return "a function"
    if hint is type(None) or hint is None:
        return "None"
    return {str: "a string", int: "an int", float: "a number", bool: "a bool"}.get(hint, f"{hint.__module__}.{hint.__qualname__}")


@cache
def _hints(cls: type) -> dict[str, object]:
    return typing.get_type_hints(cls)


def _type(obj: object) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def _moved(model: Model) -> str | None:
    """A declaration set on the model itself that belongs in an optional part would be silently ignored."""
    for part in (Report, Calibration):
        for f in dataclasses.fields(part):
            if hasattr(type(model), f.name) or f.name in vars(model):
                where = part.__name__.lower()
                return (f"'{f.name}' must be declared in the model's '{where}' (workers.model.{part.__name__}"
                        f"({f.name}=...)), not on the model itself (got a {f.name!r} attribute of "
                        f"{type(model).__qualname__}).")
    return None


# ----- meaning -----

def _unique_names(values, at: str, noun: str, taken: tuple = ()) -> str | None:
    """Each of `values` an identifier, none repeated nor `taken`; `noun`: what one is ("an axis name")."""
    seen: set[str] = set()
    for v in values:
        if not NAME_RE.fullmatch(v) or v in taken:
            extra = f", unique and not {' or '.join(repr(t) for t in taken)}" if taken else ""
            return f"'{at}' {noun.split()[-1]}s must be {NAME_RULE}{extra} (got {v!r})."
        if v in seen:
            return f"'{at}' must not repeat {noun} (got {v!r} twice)."
        seen.add(v)
    return None


def _core(model: Model) -> str | None:
    problem = _unique_names((a.name for a in model.axes), "axes", "an axis name")
    if problem:
        return problem
    seen: set[str] = set()
    for m in model.metrics:
        col = m.column
        if not col.startswith("metric_") or col == "metric_":
            return f"'metrics' columns must start with 'metric_' and carry their unit in the name (got {col!r})."
        if col in seen:
            return f"'metrics' must not repeat a column (got {col!r} twice)."
        seen.add(col)
        if not (isinstance(m.dtype, pl.DataType) or (isinstance(m.dtype, type) and issubclass(m.dtype, pl.DataType))):
            return f"'metrics[{col!r}].dtype' must be a polars DataType such as pl.Float64 (got {m.dtype!r})."
        if not m.doc.strip():
            return f"'metrics[{col!r}].doc' must be a one-line doc of that metric (got {m.doc!r})."
    if model.headline not in seen:
        return f"'headline' must be one of the model's metric columns (got {model.headline!r})."
    return None


def _columns(model: Model) -> set[str]:
    return {a.column for a in model.axes} | {m.column for m in model.metrics}


def _named(names, allowed, at: str, what: str) -> str | None:
    """The first of `names` not in `allowed`, as a message (`what`: what they must name)."""
    for n in names:
        if n not in allowed:
            return f"'{at}' must name {what} (got {n!r})."
    return None


def _report(model: Model) -> str | None:
    r, axes = model.report, list(model.axis_names)
    comp = r.comparison
    if comp is not None:
        if comp.axis.removeprefix("param_") not in axes:
            return f"'report.comparison.axis' must be an axis of the model {axes} (got {comp.axis!r})."
        if comp.metric not in model.metric_dtypes:
            return f"'report.comparison.metric' must be one of the model's metric columns (got {comp.metric!r})."
        if not comp.label.strip():
            return f"'report.comparison.label' must be a non-empty name of a variant such as 'strategy' (got {comp.label!r})."
    problem = (_named(r.best_keys, axes, "report.best_keys", f"axes of the model {axes}")
               or _named(r.value_labels, axes, "report.value_labels", f"axes of the model {axes}"))
    if problem:
        return problem
    for axis, names in r.value_labels.items():
        if not all(isinstance(n, str) and n for n in names.values()):
            return f"'report.value_labels[{axis!r}]' must map values to non-empty display names (got {names!r})."
    return _findings(model, r) or _tables(model, r) or _plots(model, r)


def _findings(model: Model, r: Report) -> str | None:
    problem = _unique_names((f.id for f in r.findings), "report.findings", "an id")
    for f in r.findings if problem is None else ():
        at = f"report.findings[{f.id!r}]"
        if not f.figure:
            return f"'{at}.figure' must be the id of the report figure that shows it, a string (got {f.figure!r})."
        if isinstance(f, Hook):
            problem = _call(f, at)
        else:
            problem = (_named(sorted(finding_columns(f)), _columns(model), at, "the model's param_/metric_ columns")
                       or _format(f.fmt, at, required=True) or _quotes(f, at) or _templates(f, at))
        if problem:
            return problem
    return problem


def _quotes(f, at: str) -> str | None:
    for quote in (f.quote, *(c.quote for c in f.more)):
        if not quote or not all(len(q) == 2 and q[0].isidentifier() for q in quote):
            return f"'{at}.quote' must be a non-empty tuple of (name, pick) pairs, names identifiers (got {quote!r})."
    return None


def _call(h: Hook, at: str) -> str | None:
    """A hook names its function as "package.module:function" (workers.hooks)."""
    module, _, name = h.call.partition(":") if isinstance(h.call, str) else ("", "", "")
    if not (module and name.isidentifier() and all(p.isidentifier() for p in module.split("."))):
        return f"'{at}.call' must name a function as 'package.module:function' (got {h.call!r})."
    return None


def _templates(f, at: str) -> str | None:
    for name, template, allowed in finding_templates(f):
        try:
            unknown = sorted(placeholders(template) - allowed)
        except ValueError as e:
            return f"'{at}.{name}' must be a format template with named placeholders (got {template!r}: {e})."
        if unknown:
            return f"'{at}.{name}' may use only the placeholders {sorted(allowed)} (got {unknown[0]!r})."
    return None


def _format(fmt: str, at: str, required: bool = False) -> str | None:
    """'' (a table column's default), 'bytes' or a Python format spec such as '.2%'."""
    try:
        ok = (fmt or not required) and (fmt in ("", *FORMATS) or format(1.5, fmt) is not None)
    except (ValueError, TypeError):
        ok = False
    return None if ok else f"'{at}.fmt' must be 'bytes' or a format spec such as '.2f' (got {fmt!r})."


def _tables(model: Model, r: Report) -> str | None:
    for t in r.tables:
        at = f"report.tables[{getattr(t, 'id', t)!r}]"
        if not isinstance(t, Hook) or not t.title.strip():
            return f"'{at}' must be a workers.hooks.Hook with a title (got {t!r})."
        problem = _call(t, at)
        if problem:
            return problem
    return None


def _plots(model: Model, r: Report) -> str | None:
    problem = _unique_names((p.id for p in r.plots), "report.plots", "an id", RESERVED_PLOTS)
    for p in r.plots if problem is None else ():
        at = f"report.plots[{p.id!r}]"
        if not p.title.strip():
            return f"'{at}.title' must be a non-empty string (got {p.title!r})."
        if isinstance(p, Hook):
            problem = _call(p, at)
            if problem:
                return problem
            continue
        if not isinstance(p.y.metric, str) and not p.panels.split:
            return f"'{at}.y.metric' maps split values to metrics: the panels need a 'split' column (got split None)."
        problem = _named(sorted(p.columns()), _columns(model), at, "the model's param_/metric_ columns")
        if problem:
            return problem
    return problem


def _calibration(model: Model) -> str | None:
    axes = {a.name: a for a in model.axes}
    for f in model.calibration.figures:
        at = f"calibration.figures[{f.id!r}]"
        if f.model != model.name:
            return f"'{at}.model' must be {model.name!r}, the model declaring it (got {f.model!r})."
        problem = (_named([f.metric], model.metric_dtypes, f"{at}.metric", "one of the model's metrics")
                   or _named(f.params, axes, f"{at}.params", f"axes of the model {sorted(axes)}"))
        if problem:
            return problem
        for key, value in f.params.items():
            try:
                axes[key].canonical(value)
            except ValueError as e:
                return f"'{at}.params.{key}' {e}."
    for o in model.calibration.cost_orders:
        if not (NAME_RE.fullmatch(o.lower) and NAME_RE.fullmatch(o.higher)) or o.lower == o.higher:
            return (f"'calibration.cost_orders' must name two different cost keys, each {NAME_RULE} "
                    f"(got {o.lower!r}, {o.higher!r}).")
        if not o.why.strip():
            return f"'calibration.cost_orders' must say why {o.lower} <= {o.higher} (got {o.why!r})."
    for i, a in enumerate(model.calibration.assumptions):
        at = f"calibration.assumptions[{i}]"
        if not a.name.strip() or not a.text.strip():
            return f"'{at}' must have a name and a text saying what is assumed (got {a.name!r}, {a.text!r})."
        if isinstance(a.where, str) and not PLANNER_RE.fullmatch(a.where):
            return f"'{at}.where' must be a function or a 'package.module:function' reference (got {a.where!r})."
    return None


def _measurement(model: Model) -> str | None:
    """A planner (or the reason there is none), metric columns of the model, derived columns from its
    axes, figure-id axes of the model, host cache facts that exist."""
    m, axes, columns = model.measurement, list(model.axis_names), set(model.metric_dtypes)
    if m is None:
        return None
    if m.planner is None:
        return None if m.reason.strip() else \
            f"'measurement.reason' must say why the model cannot be measured when it has no planner (got {m.reason!r})."
    if isinstance(m.planner, str) and not PLANNER_RE.fullmatch(m.planner):
        return f"'measurement.planner' must be a function or a 'package.module:function' reference (got {m.planner!r})."
    if m.metric_axis and (m.metric_axis not in axes or isinstance(m.metric, str) or not m.metric):
        return (f"'measurement.metric_axis' must be an axis of the model {axes} whose values 'metric' maps to "
                f"metric columns (got {m.metric_axis!r}, {m.metric!r}).")
    if not m.metric_axis and not isinstance(m.metric, str):
        return f"'measurement.metric' must be a metric column unless 'metric_axis' selects one (got {m.metric!r})."
    return (_named(m.metric_columns or ("",), columns, "measurement.metric", "the model's metric columns")
            or _named(m.derived, columns, "measurement.derived", "the model's metric columns")
            or _named(m.derived.values(), axes, "measurement.derived", f"axes of the model {axes}")
            or _named(m.id_axes, axes, "measurement.id_axes", f"axes of the model {axes}")
            or _named(m.id_prefixes, m.id_axes, "measurement.id_prefixes", f"id axes {list(m.id_axes)}"))


def _kernel(model: Model) -> str | None:
    """References in the package.module:function form, metric columns of the model, exact ones among them."""
    k, columns = model.kernel, set(model.metric_dtypes)
    if k is None:
        return None
    for what in ("planner", "reader"):
        ref = getattr(k, what)
        if isinstance(ref, str) and not PLANNER_RE.fullmatch(ref):
            return f"'kernel.{what}' must be a function or a 'package.module:function' reference (got {ref!r})."
    return (_named(k.metrics or ("",), columns, "kernel.metrics", "the model's metric columns")
            or _named(k.exact, k.metrics, "kernel.exact", f"kernel metrics {list(k.metrics)}"))


def one_line(e: BaseException) -> str:
    """An exception's text on one line (its first line)."""
    text = str(e).strip()
    return text.splitlines()[0] if text else "(no message)"
