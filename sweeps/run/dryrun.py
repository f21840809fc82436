"""`memsweep plan`: a dry run of `memsweep run`, computed on this process, writing nothing.

Every modeled point is evaluated here, in the runner's own chunks (sweeps.run.chunks), one chunk at a time so
memory stays bounded: the feasible and infeasible counts are the ones the run's dataset will hold, and
the CPU time of each chunk is the models' throughput on this machine. One sample chunk per model is built
into a part by the task's own code (sweeps.run.task.run_chunk) on an in-memory filesystem: its bytes per row
scale to the dataset's size, and its CPU time beyond the evaluation is the cost of building and writing
parts. Measured points are counted, never measured: their time depends on the node and on `[measure]`.
"""

from __future__ import annotations

import heapq
import io
import os
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field

import pyarrow as pa
import pyarrow.fs as pafs
from tqdm import tqdm

from sweeps.spec.grid import decode
from sweeps.spec.load import SweepSpec
from workers import get_model
from workers.dataset.folder import Location
from workers.units import bytes_text

from .chunks import Chunk, plan_run
from .sources import BACKENDS
from .task import TaskConfig, run_chunk

TOP_REASONS = 5  # per model in the text output; --json lists every reason
# Starting Ray before any chunk runs: 2.6-3.7 s for the embedded Ray on the project's 2-core development VM
# (benchmarks/RESULTS.md, "Ray overhead": RunSummary.ray_start_seconds), before ~1 s to boot its first worker
# processes. A cluster node pays it too (`ray start`, then joining the head), so work shorter than this
# gains nothing from more nodes.
RAY_START_SECONDS = 3.0
SAMPLE_NODE_ID = "0" * 56  # a Ray node id is 56 hex digits; the sample part's column is as long


@dataclass
class ModelPlan:
    """One model's share of the run: its chunks, statuses, throughput and part size."""

    model: str
    points: int = 0
    chunks: int = 0
    chunk_points: int = 0
    status: Counter = field(default_factory=Counter)
    reasons: Counter = field(default_factory=Counter)  # reason -> rows, over rows that are not ok
    eval_cpu_s: float = 0.0  # decode + evaluate, every chunk, CPU time of this process
    sample_rows: int = 0
    sample_bytes: int = 0
    write_cpu_s_per_row: float = 0.0  # building and writing the sample part, beyond its evaluation
    unplanned: dict = field(default_factory=dict)  # source -> [points, chunks] counted, never computed here

    @property
    def measured_points(self) -> int:
        return self.unplanned.get("measured", [0, 0])[0]

    @property
    def measured_chunks(self) -> int:
        return self.unplanned.get("measured", [0, 0])[1]

    @property
    def points_per_second(self) -> float:
        return self.points / self.eval_cpu_s if self.eval_cpu_s else 0.0

    @property
    def bytes_per_row(self) -> float:
        return self.sample_bytes / self.sample_rows if self.sample_rows else 0.0

    @property
    def bytes(self) -> int:
        return round(self.bytes_per_row * self.points)


@dataclass
class DryRun:
    """What `memsweep run SPEC` would plan, compute and write."""

    spec: SweepSpec
    dataset: str  # OUT/<sweep> as run would write it
    cpus: int  # per node
    nodes: int
    models: dict[str, ModelPlan]
    chunks: int  # every chunk run would plan, modeled and measured
    model_seconds: float = 0.0  # modeled chunks on nodes * cpus CPUs: evaluation only
    task_seconds: float = 0.0  # ... and building and writing their parts
    wall_seconds: float = 0.0  # this dry run


class _MemoryHandler(pafs.FileSystemHandler):
    """A write-only pyarrow filesystem in a dict: the sample part goes through the store's own code."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def get_type_name(self) -> str:
        return "memsweep-dry-run"

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
        raise PermissionError("the dry run's in-memory filesystem only takes new files")

    delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = _refuse
    move = copy_file = open_input_stream = open_input_file = open_append_stream = _refuse


def dry_run(spec: SweepSpec, out: str = "results", *, cpus: int | None = None, nodes: int = 1,
            progress: bool = True) -> DryRun:
    """Plan the spec as `run` does, evaluate every modeled point here, and estimate size and time on
    `nodes` nodes of `cpus` CPUs each (default: this machine's)."""
    t0 = time.perf_counter()
    planned = plan_run(spec, out)  # as `run` plans it (reading nothing: no folder's order applies)
    dataset, chunks = planned.loc.uri, list(planned.chunks)
    models = {m: ModelPlan(model=m) for m in spec.models}
    modeled = [c for c in chunks if BACKENDS[c.source].planned_here]
    for c in chunks:
        if not BACKENDS[c.source].planned_here:  # counted, never computed here
            counts = models[c.model].unplanned.setdefault(c.source, [0, 0])
            counts[0] += c.points
            counts[1] += 1
    cfg = _sample_config(spec)
    chunk_cpu = _evaluate(spec, cfg, modeled, models, progress)
    cpus = cpus or os.cpu_count() or 1
    return DryRun(
        spec=spec, dataset=dataset, cpus=cpus, nodes=nodes, models=models, chunks=len(chunks),
        model_seconds=makespan(chunk_cpu, nodes * cpus),
        task_seconds=makespan([s + c.points * models[c.model].write_cpu_s_per_row
                               for s, c in zip(chunk_cpu, modeled)], nodes * cpus),
        wall_seconds=time.perf_counter() - t0,
    )


def _sample_config(spec: SweepSpec) -> TaskConfig:
    """The runner's TaskConfig, with an in-memory filesystem for the sample parts."""
    loc = Location(fs=pafs.PyFileSystem(_MemoryHandler()), root="dry-run", uri="memory://dry-run")
    return TaskConfig.for_spec(spec, loc)


def _evaluate(spec: SweepSpec, cfg: TaskConfig, modeled: list[Chunk], models: dict[str, ModelPlan],
              progress: bool) -> list[float]:
    """Evaluate each modeled chunk (status counts, CPU seconds); build one sample part per model."""
    samples = {}
    for m in spec.models:  # the middle chunk: the first one holds only the first values of the slow axes
        mine = [c for c in modeled if c.model == m]
        if mine:
            samples[m] = mine[len(mine) // 2]
    chunk_cpu = []
    bar = tqdm(total=sum(c.points for c in modeled), unit="pt", unit_scale=True, disable=not progress,
               desc=f"plan {spec.name}", file=sys.stderr, mininterval=0.5, delay=1.0)
    try:
        for c in modeled:
            mp = models[c.model]
            chunk_cpu.append(_count(cfg, c, mp))
            if samples.get(c.model) is c:
                _sample_part(cfg, c, mp, chunk_cpu[-1])
            bar.update(c.points)
    finally:
        bar.close()
    return chunk_cpu


def _count(cfg: TaskConfig, c: Chunk, mp: ModelPlan) -> float:
    """Compute chunk c's rows with its backend as a task does and add them by status and reason to mp; its
    CPU seconds."""
    c0 = time.process_time()
    points = decode(cfg.grids[c.model], c.start, c.stop).drop("point_id")
    out = BACKENDS[c.source].rows(get_model(c.model), points, cfg.profile, cfg.settings)
    cpu_s = time.process_time() - c0
    for status, reason, n in out.group_by("status", "reason").len().iter_rows():
        mp.status[status] += n
        if status != "ok":
            mp.reasons[reason or status] += n
    mp.points += c.points
    mp.chunks += 1
    mp.chunk_points = max(mp.chunk_points, c.points)
    mp.eval_cpu_s += cpu_s
    return cpu_s


def _sample_part(cfg: TaskConfig, c: Chunk, mp: ModelPlan, eval_cpu_s: float) -> None:
    """Build and write chunk c's part exactly as a task does, in memory: bytes per row, write cost."""
    c0 = time.process_time()
    record = run_chunk(cfg, c, SAMPLE_NODE_ID)
    mp.write_cpu_s_per_row = max(0.0, time.process_time() - c0 - eval_cpu_s) / c.points
    mp.sample_rows, mp.sample_bytes = record["rows"], record["bytes"]
    cfg.location.fs.handler.files.clear()  # a sample part is measured, not kept


def makespan(seconds: list[float], cpus: int) -> float:
    """Wall time of these tasks on `cpus` CPUs, each started in order on the first CPU that is free."""
    free = [0.0] * min(cpus, len(seconds))
    for s in seconds:
        heapq.heappush(free, heapq.heappop(free) + s)
    return max(free, default=0.0)


def declared_seconds(chunks: list[Chunk], cpus: int) -> float | None:
    """The modeled chunks' wall time on `cpus` CPUs at each model's declared points_per_second (no point is
    evaluated: `submit` estimates with it); None when measured chunks make the time unknown."""
    if not all(BACKENDS[c.source].planned_here for c in chunks):
        return None
    return makespan([c.points / get_model(c.model).points_per_second for c in chunks], cpus)


def cluster_notes(*, chunks: int, seconds: float | None, nodes: int, cpus: int | None) -> list[str]:
    """Why `nodes` nodes (`cpus` CPUs in all, None when not known) would not make the run faster: fewer
    chunks than nodes or CPUs, or work (`seconds` on those CPUs, None when not known) shorter than
    starting Ray on each node. Empty when a cluster may help."""
    notes = []
    if chunks < nodes:
        notes.append(f"{_count_of(chunks, 'chunk')} for {nodes} nodes: {_count_of(nodes - chunks, 'node')} "
                     "would sit idle")
    elif cpus and chunks < cpus:
        notes.append(f"{_count_of(chunks, 'chunk')} for {cpus} CPUs: {_count_of(cpus - chunks, 'CPU')} would sit idle")
    if seconds is not None and seconds < RAY_START_SECONDS:
        notes.append(f"the work takes {_secs(seconds)} against ~{RAY_START_SECONDS:.0f} s to start Ray on each node")
    return notes


def cluster_line(notes: list[str]) -> str:
    """The one line `plan` and `submit` print when a cluster will not help."""
    return f"a cluster will not help: {'; '.join(notes)}"


def _count_of(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def as_dict(dr: DryRun) -> dict:
    """The dry run's numbers, for `memsweep plan --json` (statuses count modeled rows only)."""
    models = {m: {
        "points": mp.points, "chunks": mp.chunks, "chunk_points": mp.chunk_points,
        "feasible": mp.status["ok"], "infeasible": mp.status["infeasible"], "error": mp.status["error"],
        "reasons": dict(mp.reasons.most_common()), "points_per_second": mp.points_per_second,
        "bytes_per_row": mp.bytes_per_row, "bytes": mp.bytes,
        "measured_points": mp.measured_points, "measured_chunks": mp.measured_chunks,
    } for m, mp in dr.models.items()}
    total = {k: sum(v[k] for v in models.values()) for k in ("feasible", "infeasible", "error", "bytes")}
    measured_chunks = sum(mp.measured_chunks for mp in dr.models.values())
    unplanned = sum(n for mp in dr.models.values() for _, n in mp.unplanned.values())  # their time is unknown here
    notes = cluster_notes(chunks=dr.chunks, seconds=None if unplanned else dr.task_seconds, nodes=dr.nodes,
                          cpus=dr.nodes * dr.cpus)
    return {
        "sweep": dr.spec.name, "dataset": dr.dataset, "sources": list(dr.spec.sources), "cpus": dr.cpus,
        "nodes": dr.nodes, "points": dr.spec.total_points, "rows": dr.spec.total_rows, "chunks": dr.chunks, **total,
        "seconds": dr.task_seconds, "model_seconds": dr.model_seconds, "plan_seconds": dr.wall_seconds,
        "cluster_notes": notes, "models": models,
        "measured": {"points": sum(mp.measured_points for mp in dr.models.values()), "chunks": measured_chunks,
                     **asdict(dr.spec.measure),
                     "min_seconds_one_node": measured_chunks * dr.spec.measure.span_ms / 1000},
        "kernel": {"points": sum(mp.unplanned.get("kernel", [0, 0])[0] for mp in dr.models.values()),
                   "chunks": sum(mp.unplanned.get("kernel", [0, 0])[1] for mp in dr.models.values()),
                   "image": dr.spec.kernel.image, "accel": dr.spec.kernel.accel},
    }


def format_text(dr: DryRun) -> str:
    """The dry run as a user reads it: a table per model, top infeasible reasons, size and time."""
    d = as_dict(dr)
    lines = [f"{d['sweep']}: {d['points']:,} points, {d['rows']:,} rows in {d['chunks']:,} chunks; "
             f"run would write {d['dataset']} (plan writes nothing)", ""]
    modeled = {m: v for m, v in d["models"].items() if v["points"]}
    if modeled:
        lines += _table(modeled, d)
        reasons = [(m, r, n) for m, v in modeled.items() for r, n in list(v["reasons"].items())[:TOP_REASONS]]
        if reasons:
            lines += ["", "rows not ok, top reasons per model:"]
            width = max(len(f"{n:,}") for _, _, n in reasons)
            lines += [f"  {m:<8} {n:>{width},}  {r}" for m, r, n in reasons]
        lines += ["", f"expected time on {_where(d)}: {_secs(d['seconds'])} "
                      f"(model evaluation {_secs(d['model_seconds'])}, the rest building and writing parts, "
                      "as measured on one sample part per model; Ray start not included)"]
    m = d["measured"]
    if m["points"]:
        per = ", ".join(f"{k} {v['measured_points']:,}" for k, v in d["models"].items() if v["measured_points"])
        lines += ["", f"measured: {m['points']:,} points ({per}) in {m['chunks']:,} chunks, not measured here: "
                      f"their time depends on repeats ({m['repeats']}), warmup ({m['warmup']}) and span_ms "
                      f"({m['span_ms']}) and on each point's own run time. A chunk's sampling rounds last at least "
                      f"span_ms, one chunk at a time per node: at least {_secs(m['min_seconds_one_node'])} on one "
                      "node. Each node decides which points it can measure (the rest are infeasible rows); their parts "
                      "are not in the dataset size above."]
    k = d["kernel"]
    if k["points"]:
        lines += ["", f"kernel: {k['points']:,} points in {k['chunks']:,} chunks, not booted here: each chunk boots "
                      f"{k['image']} once in a guest (accel {k['accel']}; 6-18 s under TCG on 2 cores), then binds its "
                      "points one by one, about a second per 2 GiB of namespace under TCG; the points the kernel "
                      "under test cannot hold are infeasible rows at once."]
    if d["cluster_notes"]:
        lines += ["", cluster_line(d["cluster_notes"]) + "."]
    lines.append(f"plan: {_secs(d['plan_seconds'])} on this process")
    return "\n".join(lines)


def _where(d: dict) -> str:
    cpus = _count_of(d["cpus"], "CPU")
    return f"{d['nodes']} nodes of {cpus}" if d["nodes"] > 1 else cpus


def _table(models: dict, d: dict) -> list[str]:
    head = ("model", "points", "chunks", "per chunk", "feasible", "infeasible", "error", "points/s/CPU",
            "bytes/row", "dataset")
    rows = [(m, f"{v['points']:,}", f"{v['chunks']:,}", f"{v['chunk_points']:,}", f"{v['feasible']:,}",
             f"{v['infeasible']:,} ({v['infeasible'] / v['points']:.1%})", f"{v['error']:,}",
             f"{v['points_per_second']:,.0f}", f"{v['bytes_per_row']:.1f}", bytes_text(v["bytes"]))
            for m, v in models.items()]
    pts = sum(v["points"] for v in models.values())
    rows.append(("total", f"{pts:,}", f"{sum(v['chunks'] for v in models.values()):,}", "",
                 f"{d['feasible']:,}", f"{d['infeasible']:,} ({d['infeasible'] / pts:.1%})", f"{d['error']:,}", "",
                 "", bytes_text(d["bytes"])))
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head))]
    return ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
            for r in (head, *rows)]


def _secs(s: float) -> str:
    if 0 < s < 0.001:
        return f"{s * 1000:.2g} ms"
    return f"{s:.2g} s" if s < 1 else f"{s:.1f} s" if s < 120 else f"{s / 60:.1f} min"


