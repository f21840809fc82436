"""Backend: what a run needs of one row source, declared in the source's own package.

workers.dataset.SOURCES names each source, the columns only it fills and where its Backend is
("workers.measure.source:BACKEND"); backends() imports them into one table in that order. A backend
says all that differs between sources: its compute step, how many points make a chunk, where its chunks run,
its spec table and what of it fixes the rows (hashed into chunk ids and the computation's digest), and whether
`memsweep plan` computes its rows. The run (sweeps.run) looks a backend up by a chunk's `source` and never
branches on it; the writer lays every source's rows out against the model's one row layout
(workers.dataset.row_schema), so a backend gives only its own columns.
"""

from __future__ import annotations

import functools
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import polars as pl

from .dataset import SOURCES
from .model import Model
from .profiles import Profile

SHARED, NODE_ALONE = "shared", "node-alone"  # a Backend's placement


def not_computed(entry: dict, secs: Callable[[float], str] | None = None) -> str:
    """`memsweep plan`'s paragraph on a source it counts but does not compute, where its backend says no more."""
    return f"{entry['points']:,} points in {entry['chunks']:,} chunks, not computed here."


@dataclass(frozen=True, kw_only=True, slots=True)
class Settings:
    """A row source's spec table ([measure], [kernel]) as a value: `load(table, base_dir)` reads one (keys it
    leaves out keep their defaults; relative paths from the spec file's folder) and raises
    workers.exceptions.SettingsError naming what is wrong; `load({}, None)` gives the defaults."""

    table: str  # the spec's table name
    load: Callable[[dict, Path | None], Any]
    # What of the settings fixes the rows: hashed into the ids of the source's chunks (with the source's name)
    # and recorded in the computation's identity (sweeps.run.computation) under `table`.
    identity: Callable[[Any], dict]
    # Whether the computation's identity records them when the spec asks for no rows of the source too. True
    # for [measure] only: it entered every digest before the kernel source existed, and existing folders keep
    # their digests.
    in_every_identity: bool = False
    # What `memsweep plan --json` says of the source besides its points and chunks (its image, its least time),
    # given its settings and its chunks' count
    plan: Callable[[Any, int], dict] = lambda settings, chunks: {}
    # `memsweep plan`'s paragraph on the source's points, which it counts but does not compute: given the
    # source's entry of `plan --json` (points, chunks, per_model, and `plan`'s facts) and how to print seconds
    plan_text: Callable[[dict, Callable[[float], str]], str] = not_computed


@dataclass(frozen=True, kw_only=True, slots=True)
class Backend:
    """One row source's compute step and what a run needs of it."""

    name: str  # the `source` of its chunks and rows (workers.dataset.SOURCE_NAMES)
    # Points (param_* columns) in; per point, in order: the points' columns, status, reason, the model's metrics
    # and the source's own columns (workers.dataset.SOURCES); a failure becomes rows with status "error".
    rows: Callable[[Model, pl.DataFrame, Profile, Any], pl.DataFrame]
    chunk_points: Callable[[Model], int]  # points per chunk of a model, unless the spec or a measured cost says
    # Where its chunks run (the driver maps it to a pool of Ray tasks or actors): SHARED, any free CPU; or
    # NODE_ALONE, one chunk at a time on each node, nothing else of ours beside it.
    placement: str
    settings: Settings | None = None  # its spec table; None: it has none (its rows depend on nothing more)
    # What `memsweep plan` computes of its points here: each point's status and reason (the model's own
    # evaluation, without bars, evidence or a part); None when plan only counts them (measured rows: their values
    # and time depend on the node; kernel rows: a guest's). Its chunks are sized by their cost where it is
    # computed here (sweeps.run.cost).
    statuses: Callable[[Model, pl.DataFrame, Profile], pl.DataFrame] | None = None
    # What else fixes a model's rows of this source (the kernel source: a model's own guest), hashed with the rest
    model_inputs: Callable[[Model], dict] = lambda model: {}

    @property
    def planned_here(self) -> bool:
        return self.statuses is not None

    def chunk_inputs(self, settings: Any, model: Model) -> dict:
        """What fixes its rows of `model` besides model, profile and grid: hashed into its chunks' ids (none for a
        source without settings, as modeled chunks have always been)."""
        if self.settings is None:
            return {}
        return {"source": self.name, self.settings.table: self.settings.identity(settings),
                **({"guest": extra} if (extra := self.model_inputs(model)) else {})}


@functools.cache
def backends() -> dict[str, Backend]:
    """Every row source's Backend by name, in workers.dataset.SOURCES order: the run computes model chunks
    first, then measured ones (so nothing of ours runs beside a measurement), then kernel ones. Imported on
    first use: the backends import this module."""
    out = {}
    for s in SOURCES:
        backend = pkgutil.resolve_name(s.backend)
        if not isinstance(backend, Backend) or backend.name != s.name:
            raise TypeError(f"{s.backend} is not the Backend of row source {s.name!r}")
        out[s.name] = backend
    return out


def default_settings() -> dict[str, Any]:
    """Every source's settings as a spec without its table gives them, by source name."""
    return {name: b.settings.load({}, None) for name, b in backends().items() if b.settings is not None}
