"""What a chunk costs, and the chunk sizes and the time that follow from it: one set of numbers for `plan`,
`submit` and `run`.

A modeled chunk's cost is the CPU seconds of its whole part: the model's rows, their error bars and evidence,
encoding and writing. It grows with the chunk's points, plus a little that every part pays once (a footer, a
file), so a model's cost is two numbers, `per_point` and `per_chunk`, found one of two ways:

- measured(): a sample of each model's grid built into a part by the task's own code (sweeps.run.task.run_chunk)
  on an in-memory filesystem, twice, at SMALL and SAMPLE points from the middle of the grid (the first chunk
  holds only the first values of the slow axes), after a run that warms the process's caches as a worker's
  first chunk does. CPU seconds of this process: a task runs polars on one thread (sweeps.run.ray_env), here
  its threads' time is summed. A second or two per model.
- recorded(): the `seconds` a folder's manifest keeps for each part (the task's own clock on its node), over
  its rows: what a rerun knows better than a sample.

sizes() turns them into points per chunk: about TARGET_SECONDS of one CPU, fewer when the work would give
less than CHUNKS_PER_CPU chunks per CPU the run has (so that the last chunks to finish never leave most
CPUs idle), never under MIN_PART_ROWS rows where the grid has them (a folder of tiny files is slow to read
and list), never over MAX_CHUNK_POINTS (a worker's memory). makespan() is their time on N CPUs, each chunk
started on the first free CPU, longest first, as the driver submits them.
"""

from __future__ import annotations

import heapq
import io
import time
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from sweeps.spec.load import SweepSpec
from workers.dataset import LAYOUT, MODELED
from workers.dataset.folder import Location, read_manifest
from workers.modeled import MAX_CHUNK_POINTS
from workers.source import backends

from .chunks import Chunk, RunPlan, folder_chunks, plan
from .computation import record
from .store import locate

TARGET_SECONDS = 1.5  # a chunk: about 1-2 s of one CPU, so Ray's ~1 ms per task is nothing
CHUNKS_PER_CPU = 4  # at least, where the work allows: the longest-first schedule then keeps >= 80% busy
MIN_PART_ROWS = 50_000  # no part smaller, where the grid allows
SMALL, SAMPLE = 5_000, 40_000  # the points of the two measured samples (per_chunk and per_point from them)
QUANTUM = 1_000  # points per chunk are a multiple of this: sizes read plainly, and change only past noise


@dataclass(frozen=True, slots=True)
class Cost:
    """CPU seconds of one modeled chunk of one model and source: per_chunk + per_point x points."""

    per_point: float
    per_chunk: float = 0.0
    bytes_per_row: float = 0.0  # of the parts: what the dataset's size follows from

    def seconds(self, points: int) -> float:
        return self.per_chunk + self.per_point * points


@dataclass(frozen=True, slots=True)
class Costs:
    """Each (model, source)'s Cost, and what they rest on in words ("measured on this process: ...")."""

    of: dict[tuple[str, str], Cost]
    basis: str

    def seconds(self, c: Chunk) -> float:
        cost = self.of.get((c.model, c.source))
        return cost.seconds(c.points) if cost else 0.0


class MemoryHandler(pafs.FileSystemHandler):
    """A write-only pyarrow filesystem in a dict: a sample part goes through the store's own code."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def get_type_name(self) -> str:
        return "memsweep-sample"

    def normalize_path(self, path):
        return path

    def get_file_info(self, paths):
        return [pafs.FileInfo(p, pafs.FileType.File if p in self.files else pafs.FileType.NotFound) for p in paths]

    def get_file_info_selector(self, selector):
        return []

    def create_dir(self, path, recursive):
        pass

    def open_output_stream(self, path, metadata):
        files = self.files

        class Sink(io.BytesIO):
            def close(self) -> None:
                files[path] = self.getvalue()
                super().close()

        return pa.PythonFile(Sink(), mode="w")

    def _refuse(self, *args, **kwargs):
        raise PermissionError("the in-memory filesystem of sample parts only takes new files")

    delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = _refuse
    move = copy_file = open_input_stream = open_input_file = open_append_stream = _refuse


def memory_location() -> Location:
    """A Location whose parts are kept in memory (MemoryHandler), for sample parts that are measured, not kept."""
    return Location(fs=pafs.PyFileSystem(MemoryHandler()), root="sample", uri="memory://sample")


SAMPLE_NODE_ID = "0" * 56  # a Ray node id is 56 hex digits; a sample part's column is as long


def modeled(spec: SweepSpec) -> list[tuple[str, str]]:
    """The (model, source) pairs whose cost can be measured here: the rows of a backend `plan` computes."""
    return [(m, s) for s in spec.sources if backends()[s].planned_here for m in spec.models]


def sized(spec: SweepSpec) -> list[tuple[str, str]]:
    """The pairs whose chunks are sized by cost: modeled(), unless the spec fixes `chunk_points`. Measured and
    kernel chunks keep their backend's count."""
    return [] if spec.chunk_points else modeled(spec)


def measured(spec: SweepSpec, pairs: list[tuple[str, str]] | None = None, cfg=None,
             computation: dict | None = None) -> Costs:
    """Each pair's Cost (default: sized(spec)), measured on this process (module doc), with the task config
    `cfg` (default: the run's, from its `computation` record, writing to memory)."""
    from .task import TaskConfig, run_chunk  # the task's code, imported only where a sample is built

    pairs = sized(spec) if pairs is None else pairs
    cfg = cfg or TaskConfig.for_spec(spec, memory_location(), computation)
    files = cfg.location.fs.handler.files
    out = {}
    for model, source in pairs:
        size = cfg.grids[model].size

        def seconds(n: int) -> tuple[float, float]:
            """CPU seconds and bytes per row of a sample part of n points."""
            start = max(0, min(size // 2, size - n))
            c = Chunk(model=model, start=start, stop=min(size, start + n), chunk_id="0" * 16, source=source)
            c0 = time.process_time()
            rec = run_chunk(cfg, c, SAMPLE_NODE_ID)
            files.clear()
            return time.process_time() - c0, rec.get("bytes", 0) / max(1, c.points)

        small, sample = min(SMALL, size), min(SAMPLE, size)
        seconds(small)  # warm: what a worker pays once, on its first chunk of the model
        (t_small, _), (t_sample, per_row) = seconds(small), seconds(sample)
        per_point = t_sample / max(1, sample)
        if sample > small:  # what grows with the points, at least half the mean (a noisy pair of samples)
            per_point = max((t_sample - t_small) / (sample - small), 0.5 * per_point)
        out[(model, source)] = Cost(per_point=per_point, per_chunk=max(0.0, t_sample - per_point * sample),
                                    bytes_per_row=per_row)
    return Costs(of=out, basis=f"measured on this process ({SMALL:,} and {SAMPLE:,} points of each model)")


def recorded(manifest: dict | None, pairs: list[tuple[str, str]]) -> Costs | None:
    """Each pair's Cost from the `seconds` the folder's manifest records of its parts (None when a pair has
    no part with seconds: an older folder, or one that ran none of it)."""
    parts = (manifest or {}).get("parts", {}).values()
    out = {}
    for pair in pairs:
        mine = [p for p in parts if (p.get("model"), p.get("source", MODELED)) == pair and p.get("seconds")
                and p.get("rows")]
        if not mine:
            return None
        rows = sum(p["rows"] for p in mine)
        out[pair] = Cost(per_point=sum(p["seconds"] for p in mine) / rows,
                         bytes_per_row=sum(p.get("bytes", 0) for p in mine) / rows)
    return Costs(of=out, basis=f"recorded: the seconds of the folder's {sum(1 for _ in parts):,} parts")


def sizes(spec: SweepSpec, costs: Costs, cpus: int) -> dict[tuple[str, str], int]:
    """Points per chunk of each pair in `costs` for a run on `cpus` CPUs (module doc)."""
    grid = {pair: spec.points(pair[0]) for pair in costs.of}
    total = sum(cost.seconds(grid[pair]) for pair, cost in costs.of.items())
    target = min(TARGET_SECONDS, total / (CHUNKS_PER_CPU * max(1, cpus)))
    out = {}
    for pair, cost in costs.of.items():
        n = (target - cost.per_chunk) / cost.per_point if cost.per_point > 0 else MAX_CHUNK_POINTS
        n = min(max(n, MIN_PART_ROWS), MAX_CHUNK_POINTS)
        n = max(QUANTUM, int(n) // QUANTUM * QUANTUM)
        # chunks of one size over the grid (the last one no runt beside the others), none under MIN_PART_ROWS
        pieces = -(-grid[pair] // n)
        if grid[pair] / pieces < MIN_PART_ROWS:
            pieces = grid[pair] // MIN_PART_ROWS
        out[pair] = -(-grid[pair] // max(1, pieces))
    return out


def longest_first(chunks: list[Chunk], costs: Costs | None) -> list[Chunk]:
    """The chunks in the order to submit them: each source's in turn (workers.source.backends order), longest
    first within it (ties in plan order), so the last to finish are short ones."""
    if costs is None:
        return list(chunks)
    order = {name: i for i, name in enumerate(backends())}
    return sorted(chunks, key=lambda c: (order[c.source], -costs.seconds(c)))


def makespan(seconds: list[float], cpus: int) -> float:
    """Wall time of these tasks on `cpus` CPUs, each started in the order given on the first CPU that is free."""
    free = [0.0] * min(cpus, len(seconds))
    for s in seconds:
        heapq.heappush(free, heapq.heappop(free) + s)
    return max(free, default=0.0)


def efficiency(seconds: list[float], cpus: int) -> tuple[float, float]:
    """(makespan, efficiency) of these tasks scheduled longest first on `cpus` CPUs: efficiency is the work
    (their sum) over cpus x makespan, 1.0 when no CPU waits."""
    span = makespan(sorted(seconds, reverse=True), cpus)
    return span, (sum(seconds) / (cpus * span) if span else 1.0)


def estimate(planned: RunPlan, cpus: int) -> float | None:
    """The modeled chunks' wall seconds on `cpus` CPUs, longest first (efficiency()); None when other chunks
    (measured, kernel) make the time unknown, 0.0 when nothing was sized by cost (the chunks are the spec's)."""
    if not all(backends()[c.source].planned_here for c in planned.chunks):
        return None
    costs = planned.costs
    return efficiency([costs.seconds(c) for c in planned.chunks], cpus)[0] if costs else 0.0


def plan_run(spec: SweepSpec, out: str, loc: Location | None = None, *, cpus: int = 1,
             existing: list[Chunk] | tuple = (), manifest: dict | None = None, ident: dict | None = None) -> RunPlan:
    """The run of `spec` into OUT/<sweep> (`loc` when the caller has located it already) on `cpus` CPUs: the
    folder's `existing` chunks kept, the rest sized by cost, recorded in its `manifest` where it has them
    for every model, else measured here (only when something is left to chunk). Its computation record is
    worked out here, once, from `ident` (computation.identity(spec)) where the caller checked the folder with it."""
    loc = loc or locate(out, spec.name)
    computation = record(spec, ident)
    pairs = sized(spec)
    chunks, held = plan(spec, existing=existing), {c.chunk_id for c in existing}
    if not pairs or all(c.chunk_id in held for c in chunks if (c.model, c.source) in pairs):
        return RunPlan(spec=spec, loc=loc, chunks=tuple(chunks), computation=computation)
    costs = recorded(manifest, pairs) or measured(spec, pairs, computation=computation)
    return RunPlan(spec=spec, loc=loc, chunks=tuple(plan(spec, sizes(spec, costs, cpus), existing)),
                   computation=computation, costs=costs)


def plan_folder(spec: SweepSpec, loc: Location, *, cpus: int, ident: dict | None = None) -> RunPlan:
    """plan_run() into a folder that may hold parts already: its manifest's recorded seconds and its chunks."""
    manifest = read_manifest(loc, LAYOUT)
    return plan_run(spec, loc.uri, loc, cpus=cpus, existing=folder_chunks(loc, spec, manifest), manifest=manifest,
                    ident=ident)
