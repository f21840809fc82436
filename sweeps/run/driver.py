"""Running a sweep on Ray: plan, skip finished chunks, keep tasks in flight, record.

With no address, an embedded local Ray is started (dashboard off, a small
object store) and shut down at the end; with an address, the sweep joins that
cluster. Each task writes its own part; the driver sees only small records.
A rerun of the same command resumes: a chunk whose part exists and is valid is
skipped. Tasks are retried when their worker dies.

One driver per sweep: `run` holds the sweep's lease (sweeps.run.lease) from before
it writes anything until it is done. A write that fails (no space, permission,
I/O error, an object store that keeps failing) stops the sweep: the tasks in
flight finish, the manifest records the finished chunks, temporary files are
removed, and StoreIOError carries one line saying what failed where.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field

import pyarrow.compute as pc
import pyarrow.parquet as pq
import ray
import ray._private.services
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
from tqdm import tqdm

from sweeps.run.computation import check_spec, identity, refuse_foreign
from sweeps.run.lease import Lease
from sweeps.run.store import delete_sweep, locate, part_checksum, remove_temp_files, write_manifest
from sweeps.exceptions import DatasetError, UsageError
from sweeps.spec.load import SweepSpec
from workers import get_model
from workers.dataset import (COMPUTATION, LAYOUT, LEASE_FILE, MANIFEST, MODELED, SCHEMA_VERSION, SPEC_FILE, errors,
                             model_dir, parse_part_path)
from workers.dataset.errors import Failed
from workers.exceptions import StoreIOError
from workers.dataset.folder import (Location, check_inside, check_kinds, exists, part_infos, read_manifest,
                                    write_bytes)
from workers.dataset.parts import PartProblem, mismatch_message, part_problem
from workers.source import NODE_ALONE, SHARED, backends

from .chunks import Chunk, RunPlan
from .cost import longest_first, plan_folder, plan_run
from .provenance import git_sha, host_provenance
from .embedded import EmbeddedRay, logs
from .embedded import start as start_embedded
from .ray_env import JOB_DRIVER_VAR, RUNTIME_ENV
from .task import TaskConfig, run_chunk

MAX_RETRIES = 3
MANIFEST_EVERY_S = 5.0
IN_FLIGHT_WAIT_S = 120.0  # after an I/O failure: how long the tasks in flight may take to finish
ADDRESS_WAIT_S = 5.0  # how long --address HOST:PORT may take to accept a connection


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
    errors: dict[tuple[str, str], Failed] = field(default_factory=dict)  # (model, source) -> its error rows
    stopped: list[str] = field(default_factory=list)  # models whose chunks stopped early, and why

    def error_lines(self) -> list[str]:
        """What the run's error rows were and why (workers.dataset.errors), and the models stopped early."""
        return [*errors.lines(self.errors), *self.stopped]


@dataclass
class _RunState:
    """A run under way: what it computes (`planned`: the spec's chunks, into its folder, with its computation
    record; holding `lease`) and what a finishing chunk changes, by `finished` and `failed`: `records` (chunk
    id -> its part's record, the manifest's parts), the `summary`'s counts and the progress `bar` (set while
    chunks run)."""

    planned: RunPlan
    lease: Lease
    records: dict[str, dict]
    summary: RunSummary
    bar: tqdm | None = None

    def finished(self, c: Chunk, rec: dict) -> bool:
        """Chunk `c` wrote its part (`rec`, its record): keep the record, count it, move the bar. False when `c`
        is its model's first chunk (of its source) and every row of it is an error: the model fails as a
        whole (an install without its data files, a broken plugin), and its other chunks would only compute
        the same error again."""
        self.records[c.chunk_id] = rec
        self.summary.computed += 1
        self.summary.task_seconds += rec.get("seconds", 0.0)
        self.bar.update(c.points)
        first = c.start == min(k.start for k in self.planned.chunks if (k.model, k.source) == (c.model, c.source))
        return not (first and rec["status"].get(errors.ERROR, 0) == rec["rows"])

    def failed(self, c: Chunk, e: Exception) -> None:
        """Chunk `c`'s task failed (its retries too): named in the summary, no part."""
        self.summary.failed.append(f"{c.model} {c.source} chunk {c.chunk_id} [{c.start}, {c.stop}): {e}")

    def save(self) -> None:
        """Write the manifest of the chunks finished so far."""
        write_manifest(self.planned.loc, _manifest(self.planned, self.records))


@ray.remote(max_retries=MAX_RETRIES, retry_exceptions=False)
def _chunk_task(cfg: TaskConfig, chunk: Chunk) -> dict:
    return run_chunk(cfg, chunk, ray.get_runtime_context().get_node_id())


def prepare(p: RunPlan, fresh: bool) -> None:
    """Clear OUT/<sweep> with --fresh (keeping the lease); write _spec.toml where there is none (a folder
    of the same computation keeps the spec it was run with: computation.check_spec)."""
    spec_path = p.loc.path(SPEC_FILE)
    if fresh:
        delete_sweep(p.loc, keep=(LEASE_FILE,))
    if fresh or not exists(p.loc, spec_path):
        write_bytes(p.loc, spec_path, p.spec.text.encode())


def refuse_links_out(loc: Location, spec: SweepSpec, also: tuple[str, ...] = ()) -> None:
    """Refuse (SweepFolderError) a run whose writes a symlink would take out of the sweep folder: its
    _spec.toml, _manifest.json, _lease.json, each model's model=<name>/ folder of parts, each part it may have
    to compute again (in a task, the refusal was a Ray traceback), and `also` (the report's folder), all checked
    before anything is written (write_bytes checks each write again)."""
    names = (SPEC_FILE, MANIFEST, LEASE_FILE, *(model_dir(m) for m in spec.models), *also)
    for name in names:
        check_inside(loc, loc.path(name))
    if loc.is_local:  # an object store has no links
        for infos in part_infos(loc).values():
            for info in infos:
                check_inside(loc, info.path)


@contextlib.contextmanager
def _signals_held():
    """Ctrl-C, SIGTERM and SIGHUP held while Ray starts, then the caller's handlers back (SIGTERM's only if it
    had its own: ray.init installs one). A signal that arrives while ray.init forks its processes is raised
    inside a fork hook, where Python prints and drops it, and the run went on; held, it is kept: the list
    yielded is non-empty when one came."""
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    came: list[int] = []
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}

    def held(signum, frame):
        came.append(signum)

    for s in before:
        signal.signal(s, held)
    # ray.init installs its SIGTERM handler (sys.exit) part-way through its start, through this function of
    # ray/_private/utils.py: set aside until the start is over, the SIGTERM held again in its place (its core
    # worker's start resets the process's own disposition just before), so that a SIGTERM in a fork hook is
    # kept rather than raised where Python drops it (the run then went on and exited 0)
    utils = getattr(getattr(ray, "_private", None), "utils", None)
    install = getattr(utils, "set_sigterm_handler", None)
    rays: list = []
    if install is not None:
        def aside(handler) -> None:
            rays.append(handler)
            signal.signal(signal.SIGTERM, held)

        utils.set_sigterm_handler = aside
    try:
        yield came
    finally:
        if install is not None:
            utils.set_sigterm_handler = install
        for s, handler in before.items():
            if s == signal.SIGTERM and not callable(handler) and rays:
                install(rays[-1])  # the caller had none of its own: Ray's, as ray.init would have left it
            else:
                signal.signal(s, handler if handler is not None else signal.default_int_handler)


def init_ray(address: str | None, cpus: int | None = None, verbose: bool = False) -> EmbeddedRay:
    """Connect to `address`, or start an embedded Ray with `cpus` CPUs (true if we started it: embedded.start).

    Quiet unless verbose (embedded.logs). A Ctrl-C while Ray starts stops it once started (KeyboardInterrupt)."""
    if ray.is_initialized():
        return EmbeddedRay()
    # TASK_ENV as the job's runtime env lets Ray hand tasks its prestarted workers; a Ray Job
    # driver (memsweep submit) already has it from the job's own runtime env.
    runtime_env = None if JOB_DRIVER_VAR in os.environ else RUNTIME_ENV
    with _signals_held() as came:
        try:
            if address:
                try:
                    ray.init(address=address, **logs(verbose),
                             **({"runtime_env": runtime_env} if runtime_env else {}))
                except ConnectionError as e:  # something answers there (check_address), but not Ray's GCS
                    raise UsageError(f"'--address' must be a running Ray cluster's head: {address} answers, but not "
                                     f"as Ray ({e}). A head takes clients at HOST:6379 unless `ray start --port` "
                                     "said otherwise; http://HOST:8265 is its Jobs address, for `memsweep "
                                     "submit`.") from None
                embedded = EmbeddedRay()
            else:
                embedded = start_embedded(cpus, runtime_env=runtime_env, verbose=verbose)  # reaps what it began
        except SystemExit as e:
            # a Ray whose start installs its SIGTERM handler (sys.exit(SIGTERM), ray/_private/worker.py) by other
            # means than _signals_held() takes aside: a SIGTERM then is the run's interruption, not an exit
            if e.code != signal.SIGTERM:
                raise
            ray.shutdown()
            raise KeyboardInterrupt from None
    if came:
        embedded.shutdown()
        handler = signal.getsignal(came[0])
        if callable(handler):
            # Ray's shutdown leaves the process's own SIGTERM disposition at the default (Python still names the
            # handler): installed again, the caller's own handler says what it means (the CLI: 129 on SIGHUP)
            signal.signal(came[0], handler)
            signal.raise_signal(came[0])
        raise KeyboardInterrupt
    return embedded


def check_address(address: str | None) -> None:
    """Refuse an --address where no Ray cluster answers, before the sweep folder is touched: ray.init
    retries an unreachable GCS for minutes, and `auto` without a cluster failed only once the folder was
    made. `auto` is resolved as ray.init resolves it (RAY_ADDRESS, else the cluster last started with
    `ray start` on this host: ray._private.services.canonicalize_bootstrap_address)."""
    if address is None:
        return
    target = address
    if address == "auto":
        try:
            target = ray._private.services.canonicalize_bootstrap_address(address) or ""
        except ConnectionError:
            raise UsageError("'--address' auto found no Ray cluster: RAY_ADDRESS is unset and no `ray start` runs "
                             "on this host; give the head's HOST:PORT, or leave '--address' out for an embedded "
                             "Ray.") from None
    host, sep, port = target.removeprefix("ray://").rpartition(":")
    if not (sep and host and port.isdigit()):
        raise UsageError(f"'--address' must be auto, HOST:PORT or ray://HOST:PORT (got {address!r}).")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=ADDRESS_WAIT_S).close()
    except OSError as e:
        reason = e.strerror or str(e) or type(e).__name__
        where = "" if target == address else f" ({address} is {target})"
        raise UsageError(f"'--address' must be a running Ray cluster's head: nothing answers at {host}:{port}"
                         f"{where}: {reason}.") from None


def run(spec: SweepSpec, out: str, *, address: str | None = None, fresh: bool = False,
        progress: bool = True, cpus: int | None = None, wait_lease: bool = False, verbose: bool = False,
        say=None, also_writes: tuple[str, ...] = ()) -> RunSummary:
    """Evaluate every point of the spec into OUT/<sweep>; resume what exists.

    Holds the sweep's lease throughout (LeaseError if another driver has it and not wait_lease);
    `say` prints the lease's messages (default: stderr). A cluster (`address`) is joined first, so that an
    address where no Ray cluster answers is refused before the sweep folder is touched; the embedded Ray
    starts only when there is work. `also_writes`: names in the sweep folder the caller writes after the run
    (the report's folder), refused with the run's own when a symlink leads out of it."""
    check_address(address)
    t0 = time.perf_counter()
    cluster = init_ray(address, cpus, verbose) if address else EmbeddedRay()
    joined = time.perf_counter() - t0  # joining the cluster (the embedded Ray's start is timed in _run_leased)
    try:
        loc = locate(out, spec.name)
        refuse_links_out(loc, spec, also_writes)  # before the lease: a refusal writes nothing
        check_kinds(loc, LAYOUT)  # --fresh too: a folder where the lease belongs would fail its write
        say = say or (lambda m: print(m, file=sys.stderr))
        ident = identity(spec)  # the computation's, worked out once: its order of values does not change it
        if not fresh:
            spec = check_spec(loc, spec, say, ident)  # a refusal writes nothing, not even a lease
        offered = int(ray.cluster_resources().get("CPU", 1)) if address else (cpus or os.cpu_count() or 1)
        # the one plan of this run, after the spec's order is settled: the folder's chunks kept, the rest sized
        planned = (plan_run(spec, out, loc, cpus=offered, ident=ident) if fresh
                   else plan_folder(spec, loc, cpus=offered, ident=ident))
        if not fresh:
            refuse_foreign(loc, planned.computation["digest"], planned.chunk_ids)
        lease = Lease(loc, say=say)
        lease.acquire(wait=wait_lease)
        try:
            remove_temp_files(loc)  # left by a driver or worker that was killed mid-write
            summary = _run_leased(planned, lease, say, address=address, fresh=fresh, progress=progress, cpus=cpus,
                                  verbose=verbose)
        finally:
            lease.release()
    finally:
        cluster.shutdown()
    summary.ray_start_seconds += joined
    summary.seconds += joined
    return summary


def _run_leased(planned: RunPlan, lease, say, *, address, fresh, progress, cpus, verbose) -> RunSummary:
    prepare(planned, fresh)
    spec, loc, chunks = planned.spec, planned.loc, list(planned.chunks)
    old = read_manifest(loc, LAYOUT) or {}
    records = _finished(loc, chunks, old.get("parts", {}), say)
    todo = longest_first([c for c in chunks if c.chunk_id not in records], planned.costs)
    summary = RunSummary(location=loc, chunks=len(chunks), skipped=len(records), points=spec.total_points)
    state = _RunState(planned=planned, lease=lease, records=records, summary=summary)
    t0 = time.perf_counter()
    embedded = init_ray(None, cpus, verbose) if todo and not address else EmbeddedRay()  # run() joined a cluster
    summary.ray_start_seconds = time.perf_counter() - t0
    failure: StoreIOError | None = None
    try:
        if todo:
            _execute(state, todo, progress)
    except StoreIOError as e:
        failure = e
    finally:
        try:
            state.save()
        except StoreIOError as e:
            failure = failure or e
        finally:
            embedded.shutdown()
            remove_temp_files(loc)
    if failure is not None:
        raise StoreIOError(failure.errno, f"{failure}; the {len(records)} finished chunks are kept: "
                           "fix the cause and rerun the same command to resume.")
    summary.seconds = time.perf_counter() - t0
    for r in records.values():
        for s, n in r["status"].items():
            summary.status[s] = summary.status.get(s, 0) + n
    summary.errors = errors.from_records(records.values())
    return summary


def _finished(loc: Location, chunks: list[Chunk], old_parts: dict, say) -> dict[str, dict]:
    """Records of chunks whose part already exists and is whole (the resume set). A part keeps its manifest
    record while it matches it (workers.dataset.parts.part_problem: checksum on a local folder, size and footer on an
    object store); a part the manifest does not list yet (a run stopped before its manifest caught up) is taken
    when its footer names its chunk and it holds the chunk's rows. A part holding error rows is not a result:
    it is computed again (the cause may be mended since). Any other part is computed again, said once."""
    prefix = loc.root.rstrip("/") + "/"
    present = {parse_part_path(i.path.removeprefix(prefix))[1]: i for infos in part_infos(loc).values() for i in infos}
    out, damaged, failed, refused = {}, [], [], []
    for c in chunks:
        info = present.get(c.chunk_id)
        if info is None:
            continue
        rec = old_parts.get(c.chunk_id)
        problem, footer = part_problem(loc, {**(rec or {}), "rows": c.points}, info, loc.is_local)
        if problem is not None and c.source != MODELED and (rec or {}).get("checksum") is None:
            refused.append(PartProblem(info.path.removeprefix(prefix), problem))  # cannot be computed the same
            continue
        if problem is not None or (rec is not None and rec.get("rows") != c.points):
            damaged.append(f"part {info.path.removeprefix(prefix)} {problem or 'does not hold its chunk'}")
            continue
        if rec is None:
            rec = {"chunk_id": c.chunk_id, "model": c.model, "source": c.source, "start": c.start, "stop": c.stop,
                   "rows": footer.rows, "status": _status_counts(loc, c), **part_checksum(loc, c.model, c.chunk_id)}
        if rec["status"].get(errors.ERROR):
            failed.append(c.chunk_id)
            continue
        out[c.chunk_id] = rec
    if refused:
        raise DatasetError(mismatch_message(loc.uri, refused, "Nothing was run: measured and kernel rows cannot be "
                                            "computed the same again; delete the part to measure its chunk anew."))
    if damaged:
        more = f" (and {len(damaged) - 1} more)" if len(damaged) > 1 else ""
        say(f"memsweep: {damaged[0]}{more}: computing {'it' if len(damaged) == 1 else 'them'} again.")
    if failed:
        one = len(failed) == 1
        say(f"memsweep: {len(failed)} part{'' if one else 's'} hold{'s' if one else ''} error rows: computing "
            f"{'it' if one else 'them'} again.")
    return out


def _status_counts(loc: Location, c: Chunk) -> dict[str, int]:
    with loc.fs.open_input_file(loc.part_path(c.model, c.chunk_id)) as f:
        counts = pc.value_counts(pq.read_table(f, columns=["status"]).column("status"))
    return {d["values"]: d["counts"] for d in counts.to_pylist()}


class TaskPool:
    """Chunks as Ray tasks, two per CPU in flight (a task is one core's work)."""

    def __init__(self, cfg_ref):
        self.cfg_ref = cfg_ref
        self.task = _chunk_task
        self.capacity = 2 * max(1, int(ray.cluster_resources().get("CPU", 1)))

    def submit(self, chunk: Chunk):
        return self.task.remote(self.cfg_ref, chunk)

    def release(self, ref) -> None:
        pass


class MeasurePool:
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


POOLS = {SHARED: TaskPool, NODE_ALONE: MeasurePool}  # a row source's placement -> the pool that runs its chunks


def _execute(state: _RunState, todo: list[Chunk], progress: bool) -> None:
    """Each backend's chunks on its own pool, in workers.source.backends() order: model chunks first, then measured ones
    (so nothing of ours runs beside a measurement); a progress bar meanwhile, shown if `progress`."""
    cfg_ref = ray.put(TaskConfig.for_plan(state.planned))
    state.summary.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    t_exec = time.perf_counter()
    state.bar = tqdm(total=sum(c.points for c in todo), unit="pt", unit_scale=True, disable=not progress,
                     desc=f"{state.planned.spec.name}", file=sys.stderr, mininterval=0.5, smoothing=0.1)
    try:
        for backend in backends().values():  # table order: model chunks first
            mine = [c for c in todo if c.source == backend.name]
            if mine:
                _drain(POOLS[backend.placement](cfg_ref), mine, state)
    finally:
        state.bar.close()
        state.summary.exec_seconds = time.perf_counter() - t_exec


def _drain(pool, todo: list[Chunk], state: _RunState) -> None:
    """Run every chunk of `todo` on `pool`, keeping it full; record results in `state`; save the manifest now
    and then.

    A chunk whose part could not be written stops the submitting: the chunks in flight finish (so no
    worker is left writing), then StoreIOError with the first failure's message."""
    pending = list(reversed(todo))
    in_flight: dict = {}
    last_manifest = time.monotonic()
    io_error: str | None = None
    deadline = None
    while (pending and io_error is None) or in_flight:
        state.lease.check()
        if io_error is not None and deadline is None:
            deadline = time.monotonic() + IN_FLIGHT_WAIT_S
        if deadline is not None and time.monotonic() > deadline:
            break
        while pending and io_error is None and len(in_flight) < pool.capacity:
            c = pending.pop()
            in_flight[pool.submit(c)] = c
        done, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0)
        for ref in done:
            c = in_flight.pop(ref)
            pool.release(ref)
            try:
                rec = ray.get(ref)
            except (ray.exceptions.RayError, OSError) as e:
                state.failed(c, e)
                continue
            if "io_error" in rec:
                io_error = io_error or rec["io_error"]
                continue
            if not state.finished(c, rec):
                _stop_model(state, c, pending)
        if io_error is None and time.monotonic() - last_manifest > MANIFEST_EVERY_S:
            state.save()
            last_manifest = time.monotonic()
    if io_error is not None:
        raise StoreIOError(None, io_error)


def _stop_model(state: _RunState, c: Chunk, pending: list[Chunk]) -> None:
    """Take the chunks of `c`'s model and source that have not started off `pending`, and say why."""
    dropped = [p for p in pending if (p.model, p.source) == (c.model, c.source)]
    pending[:] = [p for p in pending if (p.model, p.source) != (c.model, c.source)]
    if dropped:
        state.bar.total -= sum(p.points for p in dropped)  # the bar ends full at what the run computes
        state.bar.refresh()
        state.summary.stopped.append(
            f"{c.model} ({c.source} rows): every row of its first chunk is an error, so its other "
            f"{len(dropped)} chunk{'s were' if len(dropped) != 1 else ' was'} not computed; mend the cause and rerun "
            "the same command to compute them.")


def _manifest(planned: RunPlan, records: dict) -> dict:
    """What _manifest.json records: what the spec expects, what is done, and each part's checksum."""
    spec, chunks = planned.spec, planned.chunks
    return {
        "schema_version": SCHEMA_VERSION,
        "sweep": spec.name,
        "profile": spec.profile_name,
        "profile_digest": spec.profile.digest(),
        "profile_data": spec.profile.to_dict(),  # readers need not find the profile's file again
        "models": {m: {"version": get_model(m).version, "points": spec.points(m)} for m in spec.models},
        "chunks_expected": len(chunks),
        "chunks_done": sum(1 for c in chunks if c.chunk_id in records),
        "rows": sum(r["rows"] for r in records.values()),
        "points_expected": spec.total_points,
        "rows_expected": spec.total_rows,
        "sources": list(spec.sources),
        "parts": records,  # each with the `seconds` its task took (sweeps.run.cost.recorded)
        "spec": spec.text,
        COMPUTATION: planned.computation,
        "driver": {**host_provenance(), "env_git_sha": git_sha()},
        "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
