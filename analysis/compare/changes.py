"""A string (or boolean) metric in `memsweep compare`: same or changed per point.

Such a metric has no ratio: memmap's `dominant` says what sets the time (compute, memory bandwidth or
miss latency). What a kernel engineer wants from two sweeps is where that answer changed and to what
(the bottleneck moving from compute to memory on another machine says which cost to attack next), so
the metric is compared rather than refused: each point is `=` (same value) or `changed`, and a block
counts each change (A value -> B value, grouped by `--by` axes if given) and lists the first changed
rows with their configuration.
"""

from __future__ import annotations

import polars as pl

from analysis import evidence
from analysis.metrics import ok
from analysis.read import ModelRows
from analysis.report.overview import Table

from .axes import View, cells, merged

CHANGED, SAME = "changed", "="
FIRST = 10  # changed rows listed


def side(rows: ModelRows, source: str, metric: str, tag: str, params: list[str]) -> pl.LazyFrame:
    """point_id, the params and the value as text (booleans as true / false)."""
    v = pl.col(metric).cast(pl.Utf8)
    return ok(rows.scan(source)).filter(v.is_not_null()).select(
        "point_id", *params, v.alias(tag), evidence.row_label(rows, source, metric).alias(f"{tag}_evidence"))


def verdict() -> pl.Expr:
    return pl.when(pl.col("a") == pl.col("b")).then(pl.lit(SAME)).otherwise(pl.lit(CHANGED))


def stats() -> list[pl.Expr]:
    """The summary of a block: points compared, changed and the same."""
    return [pl.len().alias("n"), (pl.col("verdict") == CHANGED).sum().alias(CHANGED),
            (pl.col("verdict") == SAME).sum().alias(SAME)]


def summary_line(summary: dict) -> str:
    """`3,008 points compared: the value changed at 120, the same at 2,888`"""
    return (f"{summary['n']:,} points compared: the value changed at {summary[CHANGED]:,}, "
            f"the same at {summary[SAME]:,}")


def tables(rows: ModelRows, j: pl.LazyFrame, view: View, by: tuple[str, ...] | None,
           summary: dict) -> tuple[tuple[Table, ...], str]:
    """The changes (A -> B, with how many points) and the first changed rows; the header line."""
    n, changed = summary["n"], summary[CHANGED]
    if not changed:
        return (), f"the value is the same at every one of the {n:,} points: no table"
    keys, changed_rows = list(by or ()), j.filter(pl.col("verdict") == CHANGED)
    moves, first = pl.collect_all([
        changed_rows.group_by(*keys, "a", "b").agg(pl.len().alias("n"))
        .sort([*keys, "n", "a", "b"], descending=[*[False] * len(keys), True, False, False], nulls_last=True),
        merged(changed_rows, view).sort([*view.shown, "point_id"], nulls_last=True).head(FIRST)])
    data = {c.removeprefix("param_"): [rows.label(c, v) for v in moves[c].to_list()] for c in keys}
    data |= {"A": moves["a"].to_list(), "B": moves["b"].to_list(), "points": [f"{v:,}" for v in moves["n"]]}
    listed = cells(rows, first, view) | {"A": first["a"].to_list(), "B": first["b"].to_list(),
                                         **evidence.pair_marks(first)}
    grouped = f" by {', '.join(c.removeprefix('param_') for c in keys)}" if keys else ""
    shown = (Table(title=f"the changes (A -> B){grouped}", caption="", frame=_text(data)),
             Table(title=f"the first {first.height} changed rows", caption="", frame=_text(listed)))
    return shown, f"{n:,} points: the value changed at {changed:,}; the changes, then the first changed rows"


def _text(data: dict) -> pl.DataFrame:
    return pl.DataFrame(data, schema={k: pl.Utf8 for k in data})
