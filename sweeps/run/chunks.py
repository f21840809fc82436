"""Planning: split each model's grid into chunks with content-addressed ids.

A chunk is an index range [start, stop) of one model's grid for one row
source (sweeps.run.sources), sized by that backend (modeled chunks: about a
quarter second of model work, as Ray's per-task overhead is ~1 ms), so the
driver holds a list of small records, never points. Its id hashes everything
that determines its rows: model, model version, profile content, the model's
axes and values, what the backend adds (measured rows: the [measure]
settings), and the range; a changed model or profile never reuses a part.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from sweeps.run.store import locate
from sweeps.spec.grid import Grid, grid_for
from sweeps.spec.load import SweepSpec
from workers import get_model
from workers.dataset.folder import Location

from .sources import BACKENDS


@dataclass(frozen=True, kw_only=True, slots=True)
class Chunk:
    model: str
    start: int
    stop: int
    chunk_id: str
    source: str = "model"  # the backend that computes its rows (sweeps.run.sources.BACKENDS)

    @property
    def points(self) -> int:
        return self.stop - self.start


def chunk_points(spec: SweepSpec, model: str, source: str = "model") -> int:
    """Points per chunk: the spec's `chunk_points`, else what the source's backend chooses for the model."""
    return spec.chunk_points or BACKENDS[source].chunk_points(spec, model)


def grid_digest(spec: SweepSpec, grid: Grid, source: str = "model") -> str:
    """Hash of what fixes a model's rows apart from the range: model, version, profile, grid, and the
    inputs of the source's backend (measured rows: the [measure] settings; modeled rows: none)."""
    m = get_model(grid.model)
    blob = json.dumps(
        {
            **BACKENDS[source].digest_inputs(spec), "model": m.name, "version": m.version,
            "profile": spec.profile.digest(),
            "blocks": [[[a.name, [a.label(v) for v in vals]] for a, vals in zip(grid.axes, block)]
                       for block in grid.blocks],
        },
        sort_keys=True,
    ).encode()
    return hashlib.blake2b(blob, digest_size=16).hexdigest()


def plan(spec: SweepSpec) -> list[Chunk]:
    """Every chunk of every model and source in the spec, in source, model, then index order."""
    chunks = []
    for source in spec.sources:
        for model in spec.models:
            grid = grid_for(spec, model)
            digest = grid_digest(spec, grid, source)
            step = chunk_points(spec, model, source)
            for start in range(0, grid.size, step):
                stop = min(start + step, grid.size)
                cid = hashlib.blake2b(f"{digest}:{start}:{stop}".encode(), digest_size=8).hexdigest()
                chunks.append(Chunk(model=model, start=start, stop=stop, chunk_id=cid, source=source))
    return chunks


@dataclass(frozen=True, kw_only=True, slots=True)
class RunPlan:
    """A run of one spec into one OUT, planned once at its start and handed down: the spec (in the order
    of values the folder keeps, once computation.check_spec has settled it), where it writes, its chunks."""

    spec: SweepSpec
    loc: Location
    chunks: tuple[Chunk, ...]

    @property
    def chunk_ids(self) -> set[str]:
        return {c.chunk_id for c in self.chunks}


def plan_run(spec: SweepSpec, out: str, loc: Location | None = None) -> RunPlan:
    """The run of `spec` into OUT/<sweep> (`loc` when the caller has located it already)."""
    return RunPlan(spec=spec, loc=loc or locate(out, spec.name), chunks=tuple(plan(spec)))
