"""The grid: a mixed-radix index space over a model's axes.

Point i of a model's grid is decoded from i alone (the last axis varies
fastest), so a task holds only the axes' value lists and two integers, and no
one ever materializes a whole grid. `point_id` is a 64-bit hash of the model
name and the canonical (axis, value) pairs, sorted by axis name: the same point
has the same id in every spec that contains it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import polars as pl

from workers import get_model
from workers.axes import Axis

_MIX = np.uint64(0x9E3779B97F4A7C15)  # golden-ratio odd constant: spreads bits on multiply


def stable_hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


@dataclass(frozen=True, kw_only=True)
class Grid:
    """One model's grid: its axes (in model order) and the values of each."""

    model: str
    axes: tuple[Axis, ...]
    values: tuple[tuple, ...]

    @property
    def size(self) -> int:
        n = 1
        for v in self.values:
            n *= len(v)
        return n

    @property
    def radices(self) -> tuple[int, ...]:
        return tuple(len(v) for v in self.values)


def grid_for(spec, model: str) -> Grid:
    """The grid of `model` in a SweepSpec."""
    m = get_model(model)
    by_name = dict(spec.grid_axes(model))
    return Grid(model=model, axes=m.axes, values=tuple(by_name[a.name] for a in m.axes))


def digits(grid: Grid, start: int, stop: int) -> list[np.ndarray]:
    """For each axis, the value index of every point in [start, stop)."""
    if not 0 <= start <= stop <= grid.size:
        raise ValueError(f"index range [{start}, {stop}) is outside the grid of {grid.size} points")
    idx = np.arange(start, stop, dtype=np.int64)
    out = []
    for radix in reversed(grid.radices):
        out.append(idx % radix)
        idx = idx // radix
    return out[::-1]


def decode(grid: Grid, start: int, stop: int) -> pl.DataFrame:
    """The points [start, stop) of a grid: `point_id` and one `param_<axis>` column per axis."""
    digs = digits(grid, start, stop)
    cols = {}
    pid = np.full(stop - start, np.uint64(stable_hash64(f"model={grid.model}")), dtype=np.uint64)
    order = sorted(range(len(grid.axes)), key=lambda i: grid.axes[i].name)
    for i in order:
        axis, values, d = grid.axes[i], grid.values[i], digs[i]
        hashes = np.array([stable_hash64(f"{axis.name}={axis.label(v)}") for v in values], dtype=np.uint64)
        pid = (pid ^ hashes[d]) * _MIX
        pid ^= pid >> np.uint64(29)
    for axis, values, d in zip(grid.axes, grid.values, digs):
        cols[axis.column] = pl.Series(axis.column, list(values), dtype=axis.dtype).gather(d)
    return pl.DataFrame({"point_id": pl.Series("point_id", pid, dtype=pl.UInt64), **cols})


def point_name(grid: Grid, row: dict) -> str:
    """A readable canonical name of a decoded point: model[axis=value,...] sorted by axis."""
    parts = [f"{a.name}={a.label(row[a.column])}" for a in sorted(grid.axes, key=lambda a: a.name)]
    return f"{grid.model}[{','.join(parts)}]"
