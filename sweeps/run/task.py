"""What one Ray task does with one chunk: decode, compute its rows (its source's backend), write its own part.

Kept free of Ray so it can be read and tested alone; the runner wraps
`run_chunk` in a remote function and passes the node id.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import polars as pl

from sweeps.run.computation import record
from sweeps.run.store import write_part
from sweeps.spec.grid import Grid, decode, grid_for
from sweeps.spec.load import SweepSpec
from workers import get_model, interval, load_plugins
from workers.dataset import (DTYPES, PART_CHUNK_ID, PART_COMPUTATION, PART_EVIDENCE_AXES, PART_MODEL, PART_RANGE,
                             PROVENANCE_COLUMNS, SCHEMA_VERSION, SOURCE, lay_out, part_table, row_schema)
from workers.exceptions import StoreIOError
from workers.dataset.errors import ERROR, chunk_reasons
from workers.dataset.folder import Location
from workers.profiles import Profile
from workers.source import backends, default_settings

from .chunks import Chunk, RunPlan
from .provenance import git_sha, host_provenance


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
    # source name -> its settings (SweepSpec.settings): how measured chunks sample, which kernel kernel chunks boot
    settings: dict = field(default_factory=default_settings)
    computation: str = ""  # the digest of what the rows are computed with (sweeps.run.computation), in each footer

    @classmethod
    def for_spec(cls, spec: SweepSpec, location: Location, computation: dict | None = None) -> TaskConfig:
        """The config of a run of `spec` writing its parts to `location`, whose `computation` record
        (sweeps.run.computation.record) is the run's plan's; worked out here where none is given (a sample)."""
        computation = record(spec) if computation is None else computation
        return cls(
            sweep=spec.name, grids={m: grid_for(spec, m) for m in spec.models}, profile=spec.profile,
            profile_name=spec.profile_name, plugins=spec.plugins, location=location, git_sha=git_sha(),
            settings=spec.settings, computation=computation["digest"],
        )

    @classmethod
    def for_plan(cls, planned: RunPlan) -> TaskConfig:
        """The config of the run `planned` (the runner's): its spec, its folder, its computation record."""
        return cls.for_spec(planned.spec, planned.loc, planned.computation)


def chunk_frame(cfg: TaskConfig, chunk: Chunk, node_id: str) -> pl.DataFrame:
    """The rows of one chunk in the model's row layout (workers.dataset.row_schema: identity, params, metrics,
    their error bars, measure_*, evidence, provenance), every column its source does not fill null."""
    load_plugins(cfg.plugins)
    model = get_model(chunk.model)
    points = decode(cfg.grids[chunk.model], chunk.start, chunk.stop)
    params = points.drop("point_id")
    out = backends()[chunk.source].rows(model, params, cfg.profile, cfg.settings.get(chunk.source))
    # the host's provenance; the guest's columns are the backend's own (null but on kernel rows)
    prov = {**host_provenance(), "env_git_sha": cfg.git_sha, "env_ray_node_id": node_id}
    out = out.with_columns(
        points["point_id"],
        pl.lit(cfg.sweep).alias("sweep"),
        pl.lit(model.name).alias("model"),
        pl.lit(model.version).alias("model_version"),
        pl.lit(cfg.profile_name).alias("profile"),
        pl.lit(chunk.source).alias("source"),
        pl.lit(chunk.chunk_id).alias("chunk_id"),
        *(pl.lit(v, dtype=DTYPES[k]).alias(k) for k, v in prov.items()),
    )
    source, bars = SOURCE[chunk.source], interval.dtypes(model)
    given = [*params.columns, "status", "reason", *model.metric_dtypes, *(bars if source.bars else ())]
    return lay_out(out, row_schema(params.schema, model.metric_dtypes, bars), source, given)


def evidence_entries(frame: pl.DataFrame) -> list[dict]:
    """The distinct evidence_axes entries of a chunk's rows, in order (its footer's PART_EVIDENCE_AXES): a few
    hundred at most, the far values of the chunk's axes, read from the rows as they are stored."""
    entries = frame.select(pl.col("evidence_axes").explode().struct.unnest()).drop_nulls("axis").unique()
    return entries.sort(entries.columns).to_dicts()


def run_chunk(cfg: TaskConfig, chunk: Chunk, node_id: str = "") -> dict:
    """Compute and write one chunk; return its manifest record, or {"io_error": message} when the
    part could not be written (the message reaches the driver as it is, not as a Ray traceback)."""
    t0 = time.perf_counter()
    frame = chunk_frame(cfg, chunk, node_id)
    table = part_table(frame)
    kv = {
        "memsweep.schema_version": SCHEMA_VERSION,
        PART_CHUNK_ID: chunk.chunk_id,
        PART_MODEL: chunk.model,
        PART_RANGE: f"{chunk.start}:{chunk.stop}",
        PART_COMPUTATION: cfg.computation,
        "memsweep.provenance": json.dumps({k: frame[k][0] for k in PROVENANCE_COLUMNS} if frame.height else {}),
        PART_EVIDENCE_AXES: json.dumps(evidence_entries(frame)),
    }
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), **kv})
    try:
        record = write_part(cfg.location, chunk.model, chunk.chunk_id, table)
    except StoreIOError as e:
        return {"io_error": str(e), "chunk_id": chunk.chunk_id}
    status = {s: int(n) for s, n in frame["status"].value_counts().iter_rows()}
    record.update(
        chunk_id=chunk.chunk_id, model=chunk.model, source=chunk.source, start=chunk.start, stop=chunk.stop,
        status=status, node=node_id, **({"errors": chunk_reasons(frame)} if status.get(ERROR) else {}),
        seconds=round(time.perf_counter() - t0, 3),
    )
    return record


def warm_up() -> None:
    """Ray's worker_process_setup_hook: importing this module is the work (models, polars, pyarrow)."""
