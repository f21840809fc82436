"""Planning: split each model's grid into chunks with content-addressed ids.

A chunk is an index range [start, stop) of one model's grid for one row
source (workers.source), so the driver holds a list of small records, never
points. Modeled chunks are sized by what they cost (sweeps.run.cost: about 1-2 s
of one CPU, at least ~4 per CPU of the run); measured and kernel chunks by their
backend; a spec's `chunk_points` fixes them all. Its id hashes everything that
determines its rows: model, model version, profile content, the model's axes and
values, what the backend adds (measured rows: the [measure] settings), and the
range; a changed model or profile never reuses a part. A folder's chunks are
kept as they are when a rerun chunks otherwise (another machine, other CPUs):
only the ranges no part holds are chunked anew.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass

from sweeps.spec.grid import Grid, grid_for
from sweeps.spec.load import SweepSpec
from workers import get_model
from workers.source import backends
from workers.dataset import MODELED, parse_part_path
from workers.dataset.folder import Location, part_infos
from workers.dataset.parts import read_footer



@dataclass(frozen=True, kw_only=True, slots=True)
class Chunk:
    model: str
    start: int
    stop: int
    chunk_id: str
    source: str = MODELED  # the source whose backend computes its rows (workers.source.backends)

    @property
    def points(self) -> int:
        return self.stop - self.start


def chunk_points(spec: SweepSpec, model: str, source: str = MODELED) -> int:
    """Points per chunk: the spec's `chunk_points`, else what the source's backend chooses for the model."""
    return spec.chunk_points or backends()[source].chunk_points(get_model(model))


def grid_digest(spec: SweepSpec, grid: Grid, source: str = MODELED) -> str:
    """Hash of what fixes a model's rows apart from the range: model, version, profile, grid, and the
    inputs of the source's backend (measured rows: the [measure] settings; modeled rows: none)."""
    m = get_model(grid.model)
    blob = json.dumps(
        {
            **backends()[source].chunk_inputs(spec.settings.get(source), m), "model": m.name, "version": m.version,
            "profile": spec.profile.digest(),
            "blocks": [[[a.name, [a.label(v) for v in vals]] for a, vals in zip(grid.axes, block)]
                       for block in grid.blocks],
        },
        sort_keys=True,
    ).encode()
    return hashlib.blake2b(blob, digest_size=16).hexdigest()


def chunk_id(digest: str, start: int, stop: int) -> str:
    return hashlib.blake2b(f"{digest}:{start}:{stop}".encode(), digest_size=8).hexdigest()


def plan(spec: SweepSpec, sizes: dict[tuple[str, str], int] | None = None,
         existing: Iterable[Chunk] = ()) -> list[Chunk]:
    """Every chunk of every model and source in the spec, in source, model, then index order.

    `sizes`: points per chunk of (model, source) pairs (sweeps.run.cost.sizes), else chunk_points(). `existing`:
    chunks a folder holds (their ids as its parts name them): each one whose id is this spec's for its range is
    kept, and only the rest of the grid is chunked, so a rerun that sizes chunks otherwise resumes."""
    held: dict[tuple[str, str], list[Chunk]] = {}
    for c in existing:
        held.setdefault((c.model, c.source), []).append(c)
    chunks = []
    for source in spec.sources:
        for model in spec.models:
            grid = grid_for(spec, model)
            digest = grid_digest(spec, grid, source)
            step = (sizes or {}).get((model, source)) or chunk_points(spec, model, source)
            kept, end = [], 0
            for c in sorted(held.get((model, source), ()), key=lambda c: (c.start, c.stop)):
                if end <= c.start < c.stop <= grid.size and chunk_id(digest, c.start, c.stop) == c.chunk_id:
                    kept.append(c)
                    end = c.stop
            pos = 0
            for k in [*kept, None]:
                gap_end = grid.size if k is None else k.start
                for start in range(pos, gap_end, step):
                    stop = min(start + step, gap_end)
                    chunks.append(Chunk(model=model, start=start, stop=stop, chunk_id=chunk_id(digest, start, stop),
                                        source=source))
                if k is not None:
                    chunks.append(k)
                    pos = k.stop
    return chunks


def folder_chunks(loc: Location, spec: SweepSpec, manifest: dict | None) -> list[Chunk]:
    """The chunks a folder's parts hold, as its manifest records them and, for a part it does not list yet
    (a run stopped before its manifest caught up), as the part's footer names its model and range (once per
    source of the spec: the plan keeps the one whose id it is). Unchecked: the plan keeps those that are this
    computation's, the run checks each part before it skips its chunk (_finished)."""
    listed = (manifest or {}).get("parts", {})
    out = [Chunk(model=r["model"], start=r["start"], stop=r["stop"], chunk_id=cid, source=r.get("source", MODELED))
           for cid, r in listed.items() if {"model", "start", "stop"} <= r.keys()]
    prefix = loc.root.rstrip("/") + "/"
    for infos in part_infos(loc).values():
        for info in infos:
            model, cid = parse_part_path(info.path.removeprefix(prefix))
            if cid in listed:
                continue
            footer = read_footer(loc.fs, info.path)
            if footer is not None and footer.range is not None and footer.model == model:
                out += [Chunk(model=model, start=footer.range[0], stop=footer.range[1], chunk_id=cid, source=s)
                        for s in spec.sources]
    return out


@dataclass(frozen=True, kw_only=True, slots=True)
class RunPlan:
    """A run of one spec into one OUT, planned once at its start and handed down: the spec (in the order
    of values the folder keeps, once computation.check_spec has settled it), where it writes, its chunks, and
    what sized them (sweeps.run.cost.Costs; None where nothing was sized by cost)."""

    spec: SweepSpec
    loc: Location
    chunks: tuple[Chunk, ...]
    # what the manifest keeps under workers.dataset.COMPUTATION (sweeps.run.computation.record): worked out once
    # here, and from here in every task's config and every manifest save
    computation: dict
    costs: object = None

    @property
    def chunk_ids(self) -> set[str]:
        return {c.chunk_id for c in self.chunks}
