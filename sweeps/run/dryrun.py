"""`memsweep plan`: a dry run of `memsweep run`, computed on this process, writing nothing.

The chunks are the ones `run` would plan on `--nodes` x `--cpus` CPUs (sweeps.run.cost.plan_run: sized by the
models' cost, measured here on a sample part per model). Each modeled point's status and reason come from the
model's own evaluation (a backend's `statuses`), for every point of a model with up to EXACT_POINTS, else for
SLICES slices spread over its grid and scaled to its points (said: "about"). The time is the chunks' measured
cost scheduled longest first on the CPUs, as the driver submits them; the size is the sample part's bytes per
row. Measured and kernel points are counted, never computed: their time depends on the node and on their
settings.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

from tqdm import tqdm

from sweeps.spec.grid import decode, grid_for
from sweeps.spec.load import SweepSpec
from workers import get_model
from workers.dataset import MEASURED
from workers.source import backends, not_computed
from workers.units import bytes_text

from .cost import Cost, efficiency, measured, modeled, plan_run

TOP_REASONS = 5  # per model in the text output; --json lists every reason
# Starting Ray before any chunk runs: 2.6-3.7 s for the embedded Ray on the project's 2-core development VM
# (benchmarks/RESULTS.md, "Ray overhead": RunSummary.ray_start_seconds), before ~1 s to boot its first worker
# processes. A cluster node pays it too (`ray start`, then joining the head), so work shorter than this
# gains nothing from more nodes.
RAY_START_SECONDS = 3.0
EXACT_POINTS = 1_000_000  # a model with more points has its statuses counted on a sample of it
SLICES, SLICE_POINTS = 64, 4_096  # the sample: this many slices of this many points, evenly over the grid


@dataclass
class ModelPlan:
    """One model's share of the run: its chunks, statuses, cost and part size."""

    model: str
    points: int = 0
    chunks: int = 0
    chunk_points: int = 0
    status: Counter = field(default_factory=Counter)
    reasons: Counter = field(default_factory=Counter)  # reason -> rows, over rows that are not ok
    evaluated: int = 0  # points whose status was computed: all of them, or a sample (then the counts are scaled)
    cost: Cost | None = None  # of its modeled chunks (sweeps.run.cost)
    unplanned: dict = field(default_factory=dict)  # source -> [points, chunks] counted, never computed here

    @property
    def sampled(self) -> bool:
        return 0 < self.evaluated < self.points

    @property
    def measured_points(self) -> int:
        return self.unplanned.get(MEASURED, [0, 0])[0]

    @property
    def measured_chunks(self) -> int:
        return self.unplanned.get(MEASURED, [0, 0])[1]

    @property
    def points_per_second(self) -> float:
        return 1.0 / self.cost.per_point if self.cost and self.cost.per_point else 0.0

    @property
    def bytes_per_row(self) -> float:
        return self.cost.bytes_per_row if self.cost else 0.0

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
    seconds: float = 0.0  # modeled chunks on nodes * cpus CPUs, longest first
    efficiency: float = 1.0  # their CPU time over nodes * cpus * seconds
    chunk_seconds: float = 0.0  # the longest modeled chunk
    basis: str = ""  # what the costs rest on (Costs.basis)
    wall_seconds: float = 0.0  # this dry run


def dry_run(spec: SweepSpec, out: str = "results", *, cpus: int | None = None, nodes: int = 1,
            progress: bool = True) -> DryRun:
    """Plan the spec as `run` does on `nodes` nodes of `cpus` CPUs each (default: this machine's), count its
    modeled points' statuses here, and estimate size and time."""
    t0 = time.perf_counter()
    cpus = cpus or os.cpu_count() or 1
    planned = plan_run(spec, out, cpus=nodes * cpus)  # as `run` plans it (reading nothing: no folder's order applies)
    chunks, costs = list(planned.chunks), planned.costs
    if costs is None and modeled(spec):  # chunks the spec's `chunk_points` fixed: their cost, for the estimate
        costs = measured(spec, modeled(spec))
    models = {m: ModelPlan(model=m) for m in spec.models}
    for c in chunks:
        mp = models[c.model]
        if backends()[c.source].planned_here:
            mp.points += c.points
            mp.chunks += 1
            mp.chunk_points = max(mp.chunk_points, c.points)
        else:  # counted, never computed here
            counts = mp.unplanned.setdefault(c.source, [0, 0])
            counts[0] += c.points
            counts[1] += 1
    _statuses(spec, models, progress)
    seconds = [costs.seconds(c) for c in chunks if backends()[c.source].planned_here] if costs else []
    for (m, _), cost in (costs.of.items() if costs else ()):
        models[m].cost = cost
    span, busy = efficiency(seconds, nodes * cpus)
    return DryRun(spec=spec, dataset=planned.loc.uri, cpus=cpus, nodes=nodes, models=models, chunks=len(chunks),
                  seconds=span, efficiency=busy, chunk_seconds=max(seconds, default=0.0),
                  basis=costs.basis if costs else "", wall_seconds=time.perf_counter() - t0)


def _statuses(spec: SweepSpec, models: dict[str, ModelPlan], progress: bool) -> None:
    """Each model's statuses and reasons, over all its modeled points or a sample of them (module doc)."""
    sources = [s for s in spec.sources if backends()[s].planned_here]
    total = sum(min(mp.points, SLICES * SLICE_POINTS) if mp.points > EXACT_POINTS else mp.points
                for mp in models.values())
    bar = tqdm(total=total, unit="pt", unit_scale=True, disable=not progress, desc=f"plan {spec.name}",
               file=sys.stderr, mininterval=0.5, delay=1.0)
    try:
        for m, mp in models.items():
            if not mp.points or not sources:
                continue
            grid, model, each = grid_for(spec, m), get_model(m), backends()[sources[0]].statuses
            size = grid.size
            if size <= EXACT_POINTS:
                ranges = [(s, min(s + SLICE_POINTS * 64, size)) for s in range(0, size, SLICE_POINTS * 64)]
            else:
                ranges = [(i * size // SLICES, i * size // SLICES + SLICE_POINTS) for i in range(SLICES)]
            seen, status, reasons = 0, Counter(), Counter()
            for start, stop in ranges:
                out = each(model, decode(grid, start, stop).drop("point_id"), spec.profile)
                for st, reason, n in out.group_by("status", "reason").len().iter_rows():
                    status[st] += n
                    if st != "ok":
                        reasons[reason or st] += n
                seen += stop - start
                bar.update(stop - start)
            scale = mp.points / (seen * len(sources))  # every planned-here source's rows are the model's own
            mp.evaluated = seen * len(sources)
            mp.status = Counter({k: round(v * len(sources) * scale) for k, v in status.items()})
            mp.reasons = Counter({k: round(v * len(sources) * scale) for k, v in reasons.items()})
    finally:
        bar.close()


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
        "reasons": dict(mp.reasons.most_common()), "evaluated": mp.evaluated, "sampled": mp.sampled,
        "points_per_second": mp.points_per_second, "seconds_per_chunk": mp.cost.per_chunk if mp.cost else 0.0,
        "bytes_per_row": mp.bytes_per_row, "bytes": mp.bytes,
        "measured_points": mp.measured_points, "measured_chunks": mp.measured_chunks,
    } for m, mp in dr.models.items()}
    total = {k: sum(v[k] for v in models.values()) for k in ("feasible", "infeasible", "error", "bytes")}
    unplanned = sum(n for mp in dr.models.values() for _, n in mp.unplanned.values())  # their time is unknown here
    notes = cluster_notes(chunks=dr.chunks, seconds=None if unplanned else dr.seconds, nodes=dr.nodes,
                          cpus=dr.nodes * dr.cpus)
    return {
        "sweep": dr.spec.name, "dataset": dr.dataset, "sources": list(dr.spec.sources), "cpus": dr.cpus,
        "nodes": dr.nodes, "points": dr.spec.total_points, "rows": dr.spec.total_rows, "chunks": dr.chunks, **total,
        "seconds": dr.seconds, "efficiency": dr.efficiency, "chunk_seconds": dr.chunk_seconds, "cost_basis": dr.basis,
        "plan_seconds": dr.wall_seconds,
        "cluster_notes": notes, "models": models, **{name: _unplanned(dr, name) for name, b in backends().items()
                                                     if not b.planned_here},
    }


def _unplanned(dr: DryRun, source: str) -> dict:
    """A source plan only counts: its points and chunks, and what its backend says of its settings."""
    points, chunks = (sum(mp.unplanned.get(source, [0, 0])[i] for mp in dr.models.values()) for i in (0, 1))
    backend = backends()[source]
    facts = backend.settings.plan(dr.spec.settings[source], chunks) if backend.settings is not None else {}
    per = {m: mp.unplanned[source][0] for m, mp in dr.models.items() if mp.unplanned.get(source, [0])[0]}
    return {"points": points, "chunks": chunks, **facts, "per_model": per}


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
        if any(v["sampled"] for v in modeled.values()):
            lines += ["", "statuses of a model with over " f"{EXACT_POINTS:,} points are about: counted on {SLICES} "
                          "slices of its grid and scaled to its points"]
        lines += ["", f"expected time on {_where(d)}: {_secs(d['seconds'])}, Ray's start not included: chunks of up "
                      f"to {_secs(d['chunk_seconds'])} of one CPU, longest first, {d['efficiency']:.0%} of the CPUs "
                      f"busy; each model's cost per point {d['cost_basis']}"]
    for name, b in backends().items():
        if not b.planned_here and d[name]["points"]:
            lines += ["", f"{name}: " + (b.settings.plan_text if b.settings else not_computed)(d[name], _secs)]
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
    about = {m: "~" if v["sampled"] else "" for m, v in models.items()}
    rows = [(m, f"{v['points']:,}", f"{v['chunks']:,}", f"{v['chunk_points']:,}", f"{about[m]}{v['feasible']:,}",
             f"{about[m]}{v['infeasible']:,} ({v['infeasible'] / v['points']:.1%})", f"{about[m]}{v['error']:,}",
             f"{v['points_per_second']:,.0f}", f"{v['bytes_per_row']:.1f}", bytes_text(v["bytes"]))
            for m, v in models.items()]
    pts = sum(v["points"] for v in models.values())
    total = "~" if any(about.values()) else ""
    rows.append(("total", f"{pts:,}", f"{sum(v['chunks'] for v in models.values()):,}", "", f"{total}{d['feasible']:,}",
                 f"{total}{d['infeasible']:,} ({d['infeasible'] / pts:.1%})", f"{total}{d['error']:,}", "",
                 "", bytes_text(d["bytes"])))
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head))]
    return ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
            for r in (head, *rows)]


def _secs(s: float) -> str:
    if 0 < s < 0.001:
        return f"{s * 1000:.2g} ms"
    return f"{s:.2g} s" if s < 1 else f"{s:.1f} s" if s < 120 else f"{s / 60:.1f} min"


