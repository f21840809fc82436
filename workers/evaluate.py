"""Run a model on a frame of points and hold it to its contract.

This is the one entry point the sweep runner calls on a worker. A model that
raises does not lose the chunk: every row comes back with status "error" and
the exception text in `reason`. Metrics of rows that are not ok are nulled
here, so a model may compute them for every row.
"""

from __future__ import annotations

import traceback

import polars as pl

from .exceptions import ModelError
from .model import STATUS_ERROR, STATUS_OK, STATUSES, Model
from .profiles import Profile


def evaluate(model: Model, points: pl.DataFrame, profile: Profile) -> pl.DataFrame:
    """`points` with the model's status, reason and metric columns appended."""
    try:
        out = null_unless_ok(model, model.evaluate(points, profile))
        _check_contract(model, points, out)
    except Exception as e:  # noqa: BLE001 - any model failure becomes error rows
        out = error_rows(model, points.height, e)
    return pl.concat([points, out], how="horizontal")


def null_unless_ok(model: Model, out: pl.DataFrame) -> pl.DataFrame:
    """A point that cannot exist has no metrics: null them on every row whose status is not ok."""
    if "status" not in out.columns or (out["status"] == STATUS_OK).all():
        return out
    ok = pl.col("status") == STATUS_OK
    return out.with_columns(pl.when(ok).then(pl.col(m)).otherwise(None).alias(m)
                            for m in model.metric_dtypes if m in out.columns)


def error_rows(model: Model, height: int, exc: BaseException, extra: dict | None = None) -> pl.DataFrame:
    """`height` rows of status "error" naming the exception and where it was raised; null metrics."""
    last = traceback.extract_tb(exc.__traceback__)[-1:] or [None]
    where = f" at {last[0].filename.rsplit('/', 1)[-1]}:{last[0].lineno}" if last[0] else ""
    msg = f"{type(exc).__name__}: {exc}{where}"
    return pl.DataFrame(
        {"status": [STATUS_ERROR] * height, "reason": [msg] * height},
        schema={"status": pl.Utf8, "reason": pl.Utf8},
    ).with_columns(pl.lit(None, dtype=dt).alias(c) for c, dt in {**model.metric_dtypes, **(extra or {})}.items())


def _check_contract(model: Model, points: pl.DataFrame, out: pl.DataFrame) -> None:
    if out.height != points.height:
        raise ModelError(f"model {model.name!r} returned {out.height} rows for {points.height} points")
    missing = {"status", "reason"} - set(out.columns)
    if missing:
        raise ModelError(f"model {model.name!r} did not return the columns {sorted(missing)}")
    expected = ["status", "reason", *model.metric_dtypes]
    if out.columns != expected:
        raise ModelError(f"model {model.name!r} returned columns {out.columns}, declared {expected}")
    schema = out.schema  # polars builds the schema anew on each access
    wrong = {c: str(schema[c]) for c, dt in model.metric_dtypes.items() if schema[c] != dt}
    if wrong:
        raise ModelError(f"model {model.name!r} returned metric dtypes {wrong}, declared otherwise")
    bad = set(out["status"].unique().to_list()) - set(STATUSES)
    if bad:
        raise ModelError(f"model {model.name!r} returned unknown statuses {sorted(bad)}")
