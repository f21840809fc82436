"""The model contract, checked on every model memsweep loads (entry point or `plugins` module).

`check_model(model)` returns the first rule the object breaks, as a sentence in the one message
template ("'{field}' must be {rule} (got {value!r})"), or None. The registry wraps it in a
PluginError that names the plugin. Checked here: what the registry, the grid, the dataset schema
and the report (metrics, headline, comparison, best_keys, value_labels) rely on before a model ever
evaluates a point (what `evaluate` returns is checked per chunk by workers.evaluate).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import polars as pl

from .axes import Axis
from .model import BETTER, Comparison, Figure, Metric, Model

NAME_RE = re.compile(r"[a-z][a-z0-9_]*")
NAME_RULE = "a lower-case identifier matching [a-z][a-z0-9_]*"


def check_model(model: object) -> str | None:
    """The first contract rule `model` breaks, or None when it keeps them all."""
    if not isinstance(model, Model):
        return f"the object must be a workers.model.Model instance (got {_type(model)})."
    name = model.name
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        return f"'name' must be {NAME_RULE} (got {name!r})."
    if not isinstance(model.version, str) or not model.version:
        return f"'version' must be a non-empty string (got {model.version!r})."
    return _axes(model) or _metrics(model) or _report(model) or _figures(model)


def _type(obj: object) -> str:
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}"


def _axes(model: Model) -> str | None:
    axes = model.axes
    if not isinstance(axes, tuple) or not axes:
        return f"'axes' must be a non-empty tuple of workers.axes.Axis (got {axes!r})."
    seen: set[str] = set()
    for a in axes:
        if not isinstance(a, Axis):
            return f"'axes' must hold only workers.axes.Axis objects (got {_type(a)})."
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
    metrics = model.metrics
    if not isinstance(metrics, tuple) or not metrics:
        return f"'metrics' must be a non-empty tuple of workers.model.Metric (got {metrics!r})."
    seen: set[str] = set()
    for m in metrics:
        if not isinstance(m, Metric):
            return f"'metrics' must hold only workers.model.Metric objects (got {_type(m)})."
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
    """What the report reads: the comparison, the best-table keys and the value labels."""
    axes = model.axis_names
    columns = {m.column for m in model.metrics}
    comp = model.comparison
    if comp is not None:
        if not isinstance(comp, Comparison):
            return f"'comparison' must be a workers.model.Comparison or None (got {_type(comp)})."
        if not isinstance(comp.axis, str) or comp.axis.removeprefix("param_") not in axes:
            return f"'comparison.axis' must be an axis of the model {list(axes)} (got {comp.axis!r})."
        if comp.metric not in columns:
            return f"'comparison.metric' must be one of the model's metric columns (got {comp.metric!r})."
        if not isinstance(comp.label, str) or not comp.label.strip():
            return f"'comparison.label' must be a non-empty name of a variant such as 'strategy' (got {comp.label!r})."
    keys = model.best_keys
    if not isinstance(keys, tuple):
        return f"'best_keys' must be a tuple of axis names (got {keys!r})."
    for k in keys:
        if k not in axes:
            return f"'best_keys' must name axes of the model {list(axes)} (got {k!r})."
    labels = model.value_labels
    if not isinstance(labels, Mapping):
        return f"'value_labels' must be a mapping of axis name to {{value: display name}} (got {labels!r})."
    for axis, names in labels.items():
        if axis not in axes:
            return f"'value_labels' must name axes of the model {list(axes)} (got {axis!r})."
        if not isinstance(names, Mapping) or not all(isinstance(n, str) and n for n in names.values()):
            return f"'value_labels[{axis!r}]' must map values to non-empty display names (got {names!r})."
    return None


def _figures(model: Model) -> str | None:
    try:
        figures = tuple(model.figures())
    except Exception as e:  # noqa: BLE001 - any failure of a plugin's figures() is that plugin's fault
        return f"'figures()' must return the model's published figures (it raised {type(e).__name__}: {one_line(e)})."
    axes = {a.name: a for a in model.axes}
    for f in figures:
        if not isinstance(f, Figure):
            return f"'figures()' must return workers.model.Figure objects (got {_type(f)})."
        if f.model != model.name:
            return f"figure {f.id!r}: 'model' must be {model.name!r}, the model declaring it (got {f.model!r})."
        if f.metric not in model.metric_dtypes:
            return f"figure {f.id!r}: 'metric' must be one of the model's metrics (got {f.metric!r})."
        for key, value in f.params.items():
            if key not in axes:
                return f"figure {f.id!r}: 'params' must name axes of the model {sorted(axes)} (got {key!r})."
            try:
                axes[key].canonical(value)
            except ValueError as e:
                return f"figure {f.id!r}: 'params.{key}' {e}."
    return None


def one_line(e: BaseException) -> str:
    """An exception's text on one line (its first line)."""
    text = str(e).strip()
    return text.splitlines()[0] if text else "(no message)"
