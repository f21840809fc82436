"""Run a model on a frame of points and hold it to its contract.

`evaluate` is the one entry point the sweep runner calls on a worker. The host builds the row frame
from what a model returns (`frame`): status and reason from the model's `infeasible` rules (or the
"reason" it returns), then its metrics in the declared dtypes. A model that raises does not lose the
chunk: every row comes back with status "error" and the exception text in `reason`. Metrics of rows
that are not ok are nulled here, so a model may compute them for every row.
"""

from __future__ import annotations

import functools
import traceback

import numpy as np
import polars as pl

from .exceptions import ModelError
from .model import STATUS_ERROR, STATUS_OK, LastPoints, Model, Reasons, status_columns
from .profiles import Profile


def evaluate(model: Model, points: pl.DataFrame, profile: Profile) -> pl.DataFrame:
    """`points` with the model's status, reason and metric columns appended."""
    try:
        out = null_unless_ok(model, frame(model, points, profile))
    except Exception as e:  # noqa: BLE001 - any model failure becomes error rows
        out = error_rows(model, points.height, e)
    return pl.concat([points, out], how="horizontal")


def frame(model: Model, points: pl.DataFrame, profile: Profile) -> pl.DataFrame:
    """status, reason and the metric columns, built from what `model.evaluate` returns (see workers.model)."""
    got = model.evaluate(points, profile)
    dtypes = model.metric_dtypes
    names = got.columns if isinstance(got, pl.DataFrame) else list(got)
    if sorted(names) != sorted([*dtypes, *(["reason"] if "reason" in names else [])]):
        raise ModelError(f"model {model.name!r} returned columns {names}, declared {list(dtypes)}")
    try:
        if isinstance(got, pl.DataFrame):
            metrics = got.select(pl.col(c).cast(dt) for c, dt in dtypes.items())
        else:
            metrics = pl.DataFrame({c: got[c] for c in dtypes}, schema=dtypes)
    except (pl.exceptions.PolarsError, TypeError, ValueError) as e:
        raise ModelError(f"model {model.name!r} returned metric values its declared dtypes cannot hold: {e}") from e
    if metrics.height != points.height:
        raise ModelError(f"model {model.name!r} returned {metrics.height} rows for {points.height} points")
    if "reason" in names:
        reason = pl.Series("reason", got["reason"], dtype=pl.Utf8)
        status = reason.to_frame().select(*status_columns(pl.col("reason")))
    else:  # what depends on the points alone, derived once for a fit's many evaluations of its figures
        last = _STATUS.setdefault(model, LastPoints())
        status = last.get(points, lambda p: p.with_columns(_reasons(model).alias("reason"))  # a literal, broadcast
                          .select(*status_columns(pl.col("reason"))))
    return pl.concat([status, metrics], how="horizontal")


def priced(model: Model, points: pl.DataFrame, profile: Profile) -> dict[str, np.ndarray]:
    """The model's priced metrics (Model.priced) at `points` under `profile`, float64 arrays with NaN where a
    value is missing: what an error bar's refit needs of an evaluation. No row frame (`frame`: status from
    the infeasible rules, every metric in its dtype): the rows' own evaluation built and checked that, and
    the points given here are ones it found ok."""
    got = model.evaluate(points, profile)
    out = {}
    for m in model.priced:  # Float64 metrics (Model.priced)
        v = got[m]
        a = v if isinstance(v, np.ndarray) and v.dtype.kind in "fiu" else pl.Series(m, v, dtype=pl.Float64).to_numpy()
        if len(a) != points.height:
            raise ModelError(f"model {model.name!r} returned {len(a)} rows of {m} for {points.height} points")
        out[m] = a.astype(np.float64, copy=False)
    return out


_STATUS: dict[Model, LastPoints] = {}


@functools.cache
def _reasons(model: Model) -> pl.Expr:
    """The model's `infeasible` rules as one expression, built once: a fit evaluates thousands of times."""
    rules = Reasons()
    for condition, message in model.infeasible:
        rules.add(condition, message)
    return rules.expr()


def null_unless_ok(model: Model, out: pl.DataFrame) -> pl.DataFrame:
    """A point that cannot exist has no metrics: null them on every row whose status is not ok."""
    if (out["status"] == STATUS_OK).all():
        return out
    ok = pl.col("status") == STATUS_OK
    return out.with_columns(pl.when(ok).then(pl.col(m)).otherwise(None).alias(m)
                            for m in model.metric_dtypes if m in out.columns)


def error_rows(model: Model, height: int, exc: BaseException) -> pl.DataFrame:
    """`height` rows of status "error" naming the exception and where it was raised; null metrics."""
    last = traceback.extract_tb(exc.__traceback__)[-1:] or [None]
    where = f" at {last[0].filename.rsplit('/', 1)[-1]}:{last[0].lineno}" if last[0] else ""
    msg = f"{type(exc).__name__}: {exc}{where}"
    return pl.DataFrame(
        {"status": [STATUS_ERROR] * height, "reason": [msg] * height},
        schema={"status": pl.Utf8, "reason": pl.Utf8},
    ).with_columns(pl.lit(None, dtype=dt).alias(c) for c, dt in model.metric_dtypes.items())
