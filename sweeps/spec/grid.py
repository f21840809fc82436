"""The grid: a mixed-radix index space over a model's axes.

Point i of a model's grid is decoded from i alone (the last axis varies
fastest; a grid of several blocks is their products one after another), so a task holds only the axes' value lists and two integers, and no
one ever materializes a whole grid. `point_id` is a 64-bit hash of the model
name and the canonical (axis, value) pairs, sorted by axis name: the same point
has the same id in every spec that contains it.
"""

from __future__ import annotations

import hashlib
import math
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
    """One model's grid: its axes (in model order) and one or more blocks of values.

    A block gives the values of every axis; the grid is the blocks' products
    one after another (a spec's `[[axes.<model>]]` tables), so a spec can hold
    exactly the configurations it needs rather than their whole product.
    """

    model: str
    axes: tuple[Axis, ...]
    blocks: tuple[tuple[tuple, ...], ...]

    @classmethod
    def single(cls, model: str, axes: tuple[Axis, ...], values: tuple[tuple, ...]) -> Grid:
        return cls(model=model, axes=axes, blocks=(values,))

    @property
    def block_sizes(self) -> tuple[int, ...]:
        return tuple(math.prod(len(v) for v in values) for values in self.blocks)

    @property
    def size(self) -> int:
        return sum(self.block_sizes)


def grid_for(spec, model: str) -> Grid:
    """The grid of `model` in a SweepSpec."""
    m = get_model(model)
    blocks = tuple(tuple(dict(block)[a.name] for a in m.axes) for block in spec.blocks(model))
    return Grid(model=model, axes=m.axes, blocks=blocks)


def digits(radices: tuple[int, ...], start: int, stop: int) -> list[np.ndarray]:
    """For each axis, the value index of every point in [start, stop) of one block."""
    idx = np.arange(start, stop, dtype=np.int64)
    out = []
    for radix in reversed(radices):
        out.append(idx % radix)
        idx = idx // radix
    return out[::-1]


def decode(grid: Grid, start: int, stop: int) -> pl.DataFrame:
    """The points [start, stop) of a grid: `point_id` and one `param_<axis>` column per axis."""
    if not 0 <= start <= stop <= grid.size:
        raise ValueError(f"index range [{start}, {stop}) is outside the grid of {grid.size} points")
    frames, offset = [], 0
    for values, size in zip(grid.blocks, grid.block_sizes):
        lo, hi = max(start, offset), min(stop, offset + size)
        if lo < hi:
            frames.append(_decode_block(grid, values, lo - offset, hi - offset))
        offset += size
    if not frames:  # an empty range: no rows, the same columns
        frames.append(_decode_block(grid, grid.blocks[0], 0, 0))
    return pl.concat(frames) if len(frames) > 1 else frames[0]


def _decode_block(grid: Grid, values: tuple[tuple, ...], start: int, stop: int) -> pl.DataFrame:
    digs = digits(tuple(len(v) for v in values), start, stop)
    pid = np.full(stop - start, np.uint64(stable_hash64(f"model={grid.model}")), dtype=np.uint64)
    for i in sorted(range(len(grid.axes)), key=lambda i: grid.axes[i].name):
        axis = grid.axes[i]
        hashes = np.array([stable_hash64(f"{axis.name}={axis.label(v)}") for v in values[i]], dtype=np.uint64)
        pid = (pid ^ hashes[digs[i]]) * _MIX
        pid ^= pid >> np.uint64(29)
    cols = {
        axis.column: pl.Series(axis.column, list(vals), dtype=axis.dtype).gather(d)
        for axis, vals, d in zip(grid.axes, values, digs)
    }
    return pl.DataFrame({"point_id": pl.Series("point_id", pid, dtype=pl.UInt64), **cols})
