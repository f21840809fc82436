"""The model contract, checked on every model memsweep loads (entry point or `plugins` module).

`check_model(model)` returns the first rule the object breaks, as a sentence in the one message
template ("'{field}' must be {rule} (got {value!r})"), or None. The registry wraps it in a
PluginError that names the plugin. Checked here: what the registry, the grid, the dataset schema
and the report rely on before a model ever evaluates a point (what `evaluate` returns is checked
per chunk by workers.evaluate).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import polars as pl

from .axes import Axis
from .model import Figure, Model

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
    return _axes(model) or _metrics(model) or _figures(model)


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
    metrics, docs = model.metrics, model.metric_docs
    if not isinstance(metrics, Mapping) or not metrics:
        return f"'metrics' must be a non-empty mapping of metric column to polars dtype (got {metrics!r})."
    if not isinstance(docs, Mapping):
        return f"'metric_docs' must be a mapping of metric column to its doc line (got {docs!r})."
    for col, dt in metrics.items():
        if not isinstance(col, str) or not col.startswith("metric_") or col == "metric_":
            return f"'metrics' columns must start with 'metric_' and carry their unit in the name (got {col!r})."
        if not _is_dtype(dt):
            return f"'metrics[{col!r}]' must be a polars DataType such as pl.Float64 (got {dt!r})."
        doc = docs.get(col)
        if not isinstance(doc, str) or not doc.strip():
            return f"'metric_docs[{col!r}]' must be a one-line doc of that metric (got {doc!r})."
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
        if f.metric not in model.metrics:
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
