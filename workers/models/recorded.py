"""Where a model's recorded kernel results checked a count (KernelCheck.bound and .differs).

A model whose kernel rows are exact counts records a guest's runs with its own rows beside them (a CSV its
benchmark writes: per point the key axes, then kernel_<name> and model_<name> per counted metric). A count
is `kernel-checked` at the points a recorded run counted it equal to the model, and differs where it did
not: `recorded_points` turns those rows into a polars expression over a frame's param_* columns.
"""

from __future__ import annotations

import polars as pl


def recorded_points(results: pl.DataFrame, metric: str, key: dict[str, pl.Expr], *, where: pl.Expr,
                    equal: bool) -> pl.Expr:
    """True on the points (`where`, and `key`'s expressions equal to a recorded row's key columns) where a
    recorded run's `metric` equals the model's (`equal`) or does not; false for a metric never recorded."""
    name = metric.removeprefix("metric_")
    if f"kernel_{name}" not in results.columns:
        return pl.lit(False)
    same = pl.col(f"kernel_{name}") == pl.col(f"model_{name}")
    return at_rows(results.filter(same if equal else ~same), key, where=where)


def at_rows(rows: pl.DataFrame, key: dict[str, pl.Expr], *, where: pl.Expr) -> pl.Expr:
    """True on the points (`where`) whose `key` expressions equal one of `rows`' key columns."""
    at = pl.lit(False)
    for row in rows.select(list(key)).iter_rows(named=True):
        at = at | pl.all_horizontal([key[k] == v for k, v in row.items()])
    return where & at
