"""Points of a shipped spec's grid for tests that need many of a model's real points, ok and not."""

from __future__ import annotations

import polars as pl

from sweeps.spec.grid import decode, grid_for
from sweeps.spec.load import load_spec


def sampled(model: str, about: int, spec: str = "default") -> pl.DataFrame:
    """About `about` points spread evenly over `spec`'s grid of `model` (param_* columns, no point_id)."""
    grid = grid_for(load_spec(spec), model)
    return decode(grid, 0, grid.size).gather_every(max(1, grid.size // about)).drop("point_id")
