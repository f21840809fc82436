"""Running a sweep on Ray: plan, skip finished chunks, keep tasks in flight, record.

With no address, an embedded local Ray is started (dashboard off, a small
object store) and shut down at the end; with an address, the sweep joins that
cluster. Each task writes its own part; the driver sees only small records.
A rerun of the same command resumes: a chunk whose part exists and is valid is
skipped. Tasks are retried when their worker dies.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field

import pyarrow.compute as pc
import pyarrow.parquet as pq
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
from tqdm import tqdm

from workers import get_model

from .exceptions import DatasetError
from .grid import grid_for
from .plan import Chunk, plan
from .provenance import git_sha, host_provenance
from .spec import SweepSpec
from .store import (
    SCHEMA_VERSION, SPEC_FILE, Location, delete_sweep, exists, list_parts, locate, part_checksum,
    part_rows, read_manifest, read_text, write_bytes, write_manifest,
)
from .task import TaskConfig, run_chunk

OBJECT_STORE_BYTES = 128 * 1024 * 1024  # plenty: tasks carry a spec and two integers
MAX_RETRIES = 3
MANIFEST_EVERY_S = 5.0
# One task, one core: polars and numpy would otherwise spread each task over
# every core and a 1-CPU Ray would use the whole machine.
TASK_ENV = {"POLARS_MAX_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
# Workers import the task code (polars, pyarrow, the models) as they start, not on their first task.
RUNTIME_ENV = {"env_vars": TASK_ENV, "worker_process_setup_hook": "sweeps.task.warm_up"}
JOB_DRIVER_VAR = "RAY_JOB_CONFIG_JSON_ENV_VAR"  # set by Ray for the entrypoint of a submitted job


@dataclass
class RunSummary:
    location: Location
    chunks: int = 0
    skipped: int = 0
    computed: int = 0
    failed: list[str] = field(default_factory=list)
    points: int = 0
    seconds: float = 0.0
    task_seconds: float = 0.0  # whole tasks (decode, evaluate, write), summed
    exec_seconds: float = 0.0  # wall time from the first task submitted to the last one done
    ray_start_seconds: float = 0.0  # starting (or joining) Ray
    cpus: int = 0
    status: dict[str, int] = field(default_factory=dict)


@ray.remote(max_retries=MAX_RETRIES, retry_exceptions=False)
def _chunk_task(cfg: TaskConfig, chunk: Chunk) -> dict:
    return run_chunk(cfg, chunk, ray.get_runtime_context().get_node_id())


def prepare(spec: SweepSpec, out: str, fresh: bool) -> Location:
    """Check OUT/<sweep> can take this spec; clear it with --fresh; write spec.toml."""
    loc = locate(out, spec.name)
    spec_path = loc.path(SPEC_FILE)
    if fresh:
        delete_sweep(loc)
    elif exists(loc, spec_path) and read_text(loc, spec_path) != spec.text:
        raise DatasetError(
            f"{loc.uri} holds a sweep run from a different spec; rerun with --fresh to replace it, "
            "or give the spec another 'name'."
        )
    write_bytes(loc, spec_path, spec.text.encode())
    return loc


def init_ray(address: str | None, cpus: int | None = None) -> bool:
    """Connect to `address`, or start an embedded Ray with `cpus` CPUs; True if we started it."""
    if ray.is_initialized():
        return False
    # TASK_ENV as the job's runtime env lets Ray hand tasks its prestarted workers; a Ray Job
    # driver (memsweep submit) already has it from the job's own runtime env.
    job_env = {} if JOB_DRIVER_VAR in os.environ else {"runtime_env": RUNTIME_ENV}
    if address:
        ray.init(address=address, logging_level="WARNING", log_to_driver=True, **job_env)
        return False
    ray.init(
        num_cpus=cpus or os.cpu_count(), include_dashboard=False, object_store_memory=OBJECT_STORE_BYTES,
        logging_level="WARNING", configure_logging=True, **job_env,
    )
    return True


def run(spec: SweepSpec, out: str, *, address: str | None = None, fresh: bool = False,
        progress: bool = True, cpus: int | None = None) -> RunSummary:
    """Evaluate every point of the spec into OUT/<sweep>; resume what exists."""
    loc = prepare(spec, out, fresh)
    chunks = plan(spec)
    old = read_manifest(loc) or {}
    records = _finished(loc, chunks, old.get("parts", {}))
    todo = [c for c in chunks if c.chunk_id not in records]
    summary = RunSummary(location=loc, chunks=len(chunks), skipped=len(records), points=spec.total_points)
    t0 = time.perf_counter()
    started = init_ray(address, cpus) if todo else False
    summary.ray_start_seconds = time.perf_counter() - t0
    try:
        if todo:
            _execute(spec, loc, chunks, todo, records, summary, progress)
    finally:
        write_manifest(loc, _manifest(spec, chunks, records))
        if started:
            ray.shutdown()
    summary.seconds = time.perf_counter() - t0
    for r in records.values():
        for s, n in r["status"].items():
            summary.status[s] = summary.status.get(s, 0) + n
    return summary


def _finished(loc: Location, chunks: list[Chunk], old_parts: dict) -> dict[str, dict]:
    """Records of chunks whose part already exists and is valid (the resume set)."""
    present = list_parts(loc)
    out = {}
    for c in chunks:
        if c.chunk_id not in present.get(c.model, ()):
            continue
        rows = part_rows(loc, c.model, c.chunk_id)
        if rows != c.points:
            continue
        rec = old_parts.get(c.chunk_id)
        if rec is None or rec.get("rows") != rows:
            rec = {"chunk_id": c.chunk_id, "model": c.model, "source": c.source, "start": c.start, "stop": c.stop,
                   "rows": rows, "status": _status_counts(loc, c), **part_checksum(loc, c.model, c.chunk_id)}
        out[c.chunk_id] = rec
    return out


def _status_counts(loc: Location, c: Chunk) -> dict[str, int]:
    with loc.fs.open_input_file(loc.part_path(c.model, c.chunk_id)) as f:
        counts = pc.value_counts(pq.read_table(f, columns=["status"]).column("status"))
    return {d["values"]: d["counts"] for d in counts.to_pylist()}


class _TaskPool:
    """Model chunks as Ray tasks, two per CPU in flight (a task is one core's work)."""

    def __init__(self, cfg_ref):
        self.cfg_ref = cfg_ref
        self.task = _chunk_task
        self.capacity = 2 * max(1, int(ray.cluster_resources().get("CPU", 1)))

    def submit(self, chunk: Chunk):
        return self.task.remote(self.cfg_ref, chunk)

    def release(self, ref) -> None:
        pass


class _MeasurePool:
    """Measured chunks on one actor per node, one at a time: a measurement owns its node's CPU."""

    def __init__(self, cfg_ref):
        self.cfg_ref = cfg_ref
        nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) >= 1]
        self.idle = [
            _Measurer.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=n, soft=False),
            ).remote()
            for n in nodes
        ]
        self.capacity = len(self.idle)
        self.busy: dict = {}

    def submit(self, chunk: Chunk):
        actor = self.idle.pop()
        ref = actor.run.remote(self.cfg_ref, chunk)
        self.busy[ref] = actor
        return ref

    def release(self, ref) -> None:
        self.idle.append(self.busy.pop(ref))


@ray.remote(num_cpus=1, max_restarts=2, max_task_retries=2)
class _Measurer:
    def run(self, cfg: TaskConfig, chunk: Chunk) -> dict:
        return run_chunk(cfg, chunk, ray.get_runtime_context().get_node_id())


def _execute(spec, loc, chunks, todo, records, summary, progress) -> None:
    """Model chunks first, then measured ones (so nothing of ours runs beside a measurement)."""
    cfg = TaskConfig(
        sweep=spec.name, grids={m: grid_for(spec, m) for m in spec.models}, profile=spec.profile,
        profile_name=spec.profile_name, plugins=spec.plugins, location=loc, git_sha=git_sha(),
        measure=spec.measure,
    )
    cfg_ref = ray.put(cfg)
    summary.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    t_exec = time.perf_counter()
    bar = tqdm(total=sum(c.points for c in todo), unit="pt", unit_scale=True, disable=not progress,
               desc=f"{spec.name}", file=sys.stderr, mininterval=0.5, smoothing=0.1)
    try:
        for source, pool in (("model", _TaskPool), ("measured", _MeasurePool)):
            mine = [c for c in todo if c.source == source]
            if mine:
                _drain(pool(cfg_ref), mine, spec, loc, chunks, records, summary, bar)
    finally:
        bar.close()
        summary.exec_seconds = time.perf_counter() - t_exec


def _drain(pool, todo, spec, loc, chunks, records, summary, bar) -> None:
    """Run every chunk of `todo` on `pool`, keeping it full; record results; save the manifest now and then."""
    pending = list(reversed(todo))
    in_flight: dict = {}
    last_manifest = time.monotonic()
    while pending or in_flight:
        while pending and len(in_flight) < pool.capacity:
            c = pending.pop()
            in_flight[pool.submit(c)] = c
        done, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0)
        for ref in done:
            c = in_flight.pop(ref)
            pool.release(ref)
            try:
                rec = ray.get(ref)
            except (ray.exceptions.RayError, OSError) as e:
                summary.failed.append(f"{c.model} {c.source} chunk {c.chunk_id} [{c.start}, {c.stop}): {e}")
                continue
            records[c.chunk_id] = rec
            summary.computed += 1
            summary.task_seconds += rec.get("total_s", 0.0)
            bar.update(c.points)
        if time.monotonic() - last_manifest > MANIFEST_EVERY_S:
            write_manifest(loc, _manifest(spec, chunks, records))
            last_manifest = time.monotonic()


def _manifest(spec: SweepSpec, chunks: list[Chunk], records: dict) -> dict:
    """What manifest.json records: what the spec expects, what is done, and each part's checksum."""
    return {
        "schema_version": SCHEMA_VERSION,
        "sweep": spec.name,
        "profile": spec.profile_name,
        "profile_digest": spec.profile.digest(),
        "models": {m: {"version": get_model(m).version, "points": spec.points(m)} for m in spec.models},
        "chunks_expected": len(chunks),
        "chunks_done": sum(1 for c in chunks if c.chunk_id in records),
        "rows": sum(r["rows"] for r in records.values()),
        "points_expected": spec.total_points,
        "rows_expected": spec.total_rows,
        "sources": list(spec.sources),
        "parts": {cid: {k: v for k, v in r.items() if k != "total_s"} for cid, r in records.items()},
        "spec": spec.text,
        "driver": {**host_provenance(), "env_git_sha": git_sha()},
        "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
