"""What one Ray task does with one chunk: decode, evaluate, write its own part.

Kept free of Ray so it can be read and tested alone; the runner wraps
`run_chunk` in a remote function and passes the node id.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import polars as pl

from workers import evaluate, get_model, load_plugins
from workers.profiles import Profile

from .grid import Grid, decode
from .plan import Chunk
from .provenance import host_provenance
from .store import IDENTITY_COLUMNS, PROVENANCE_COLUMNS, SCHEMA_VERSION, Location, write_part


@dataclass(frozen=True, kw_only=True)
class TaskConfig:
    """Everything a task needs besides its chunk; put once in the object store."""

    sweep: str
    grids: dict[str, Grid]
    profile: Profile
    profile_name: str
    plugins: tuple[str, ...]
    location: Location
    git_sha: str


def chunk_frame(cfg: TaskConfig, chunk: Chunk, node_id: str) -> pl.DataFrame:
    """The rows of one chunk in dataset column order (identity, params, metrics, provenance)."""
    load_plugins(cfg.plugins)
    model = get_model(chunk.model)
    points = decode(cfg.grids[chunk.model], chunk.start, chunk.stop)
    out = evaluate(model, points.drop("point_id"), cfg.profile)
    prov = {**host_provenance(), "env_git_sha": cfg.git_sha, "env_ray_node_id": node_id}
    out = out.with_columns(
        points["point_id"],
        pl.lit(cfg.sweep).alias("sweep"),
        pl.lit(model.name).alias("model"),
        pl.lit(model.version).alias("model_version"),
        pl.lit(cfg.profile_name).alias("profile"),
        pl.lit(chunk.chunk_id).alias("chunk_id"),
        *(pl.lit(v).alias(k) for k, v in prov.items()),
    )
    params = [c for c in out.columns if c.startswith("param_")]
    metrics = [c for c in out.columns if c.startswith("metric_")]
    return out.select(*IDENTITY_COLUMNS, *params, *metrics, *PROVENANCE_COLUMNS)


def run_chunk(cfg: TaskConfig, chunk: Chunk, node_id: str = "") -> dict:
    """Compute and write one chunk; return its manifest record."""
    t0 = time.perf_counter()
    frame = chunk_frame(cfg, chunk, node_id)
    compute_s = time.perf_counter() - t0
    table = frame.to_arrow()
    kv = {
        "memsweep.schema_version": SCHEMA_VERSION,
        "memsweep.chunk_id": chunk.chunk_id,
        "memsweep.model": chunk.model,
        "memsweep.range": f"{chunk.start}:{chunk.stop}",
        "memsweep.provenance": json.dumps({k: frame[k][0] for k in PROVENANCE_COLUMNS} if frame.height else {}),
    }
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), **kv})
    record = write_part(cfg.location, chunk.model, chunk.chunk_id, table)
    counts = frame["status"].value_counts()
    record.update(
        chunk_id=chunk.chunk_id, model=chunk.model, start=chunk.start, stop=chunk.stop,
        status={s: int(n) for s, n in counts.iter_rows()}, node=node_id,
        compute_s=compute_s, total_s=time.perf_counter() - t0,
    )
    return record
