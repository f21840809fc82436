"""`memsweep submit --slurm`: a sweep as one Slurm batch job that brings its own Ray cluster.

The batch script (written here, given to `sbatch` on its stdin) starts a Ray head on the first
node of the allocation and a Ray node on each other one (srun steps of `sweeps.cluster.slurm_node`,
the pattern of Ray's Slurm deployment guide), runs `memsweep run SPEC --address HEAD --out OUT`
on the first node, and stops every Ray process of the job when it ends or is cancelled.

Ray's token authentication is on: a fresh token per job travels only in sbatch's environment
(`--export=ALL`), never in the script, a file, a command line or the output. The spec travels in the
script (a heredoc the job writes to a file of its own), so the job reads no file of the submitting
host but the Python environment (sweeps.spec.load.portable_spec); `submit` warns when that environment, the project or OUT lies on a
file system the other nodes may not see (sweeps.cluster.mounts), and refuses an OUT it cannot write or
create before anything is submitted. Each submission
(job id, script, options) is appended to OUT/<sweep>/_slurm.json, which every manifest the job
writes carries as "slurm"; `memsweep status` shows the job's Slurm state.
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable

from sweeps.run.computation import check_spec, identity, refuse_foreign
from sweeps.run.store import add_submission, delete_sweep, locate, read_submissions
from sweeps.exceptions import UsageError
from sweeps.run.chunks import RunPlan
from sweeps.run.cost import estimate, plan_folder
from sweeps.run.dryrun import cluster_line, cluster_notes
from sweeps.run.provenance import PROJECT_ROOT
from sweeps.spec.load import SweepSpec, load_spec, portable_spec
from workers.dataset import SLURM_LOG
from workers.dataset.folder import Location, exists

from .mounts import mount_table, placement

TERMINAL = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
            "BOOT_FAIL", "DEADLINE"}
POLL_S = 2.0
LOST_AFTER_S = 60.0  # --wait gives up when neither squeue nor sacct knows the job for this long
TOKEN_PLACEHOLDER = "<generated per job at submission; in the job's environment only>"
MEM = re.compile(r"[0-9]+[KMGT]?")  # sbatch --mem: megabytes, or a K, M, G or T suffix
SPEC_EOF = "MEMSWEEP_SPEC"
JOB_SPEC = "memsweep-job-spec.toml"  # the spec's name in the job's own folder, beside its profile file

SCRIPT = """\
#!/bin/bash
{directives}
# memsweep submit --slurm: a Ray head on the allocation's first node and a Ray node on each other
# one (srun steps), then `memsweep run` against that cluster on the first node; every Ray process
# of the job is stopped when the script ends or the job is cancelled (scancel: SIGTERM).
# RAY_AUTH_MODE=token, RAY_AUTH_TOKEN={token}
set -u
: "${{RAY_AUTH_TOKEN:?must come in the job environment: submit with memsweep submit --slurm}}"
export RAY_AUTH_MODE=token RAY_USAGE_STATS_ENABLED=0
python={python}
mapfile -t nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
head_ip=$("$python" -m sweeps.cluster.slurm_node address "${{nodes[0]}}") || exit 1
port=$("$python" -m sweeps.cluster.slurm_node free-port "$head_ip") || exit 1
address="$head_ip:$port"
children=() steps=() files=
stop_ray() {{
  trap - EXIT TERM INT
  rm -rf ${{files:+"$files"}}
  kill -TERM "${{children[@]}}" 2>/dev/null
  # SIGTERM to the Ray steps' tasks (not to this batch step): each stops its node and exits. A SIGTERM
  # to srun itself would make it kill its step one second later.
  scancel --signal=TERM "$SLURM_JOB_ID" 2>/dev/null || kill -TERM "${{steps[@]}}" 2>/dev/null
  wait
}}
trap 'rc=$?; stop_ray; exit $rc' EXIT
trap 'exit 143' TERM INT
# in the background, so that a SIGTERM is handled at once, not when the command ends
run() {{ "$@" & children+=($!); wait $!; }}
# the spec (and the profile file it names, beside it), in this script: the job reads no file of the
# submitting host but the Python environment; run keeps the spec as OUT/<sweep>/_spec.toml
files=$(mktemp -d -t memsweep-job.XXXXXX) || exit 1
{files}spec="$files"/{spec_path}
echo "memsweep: Ray head on ${{nodes[0]}} at $address; $((${{#nodes[@]}} - 1)) more node(s)"
# --whole: each Ray node's step holds every CPU the job has on its node ({cpus_note})
srun --nodes=1 --ntasks=1 --whole --nodelist="${{nodes[0]}}" "$python" -m sweeps.cluster.slurm_node head --address "$address"{cpus} &
steps+=($!)
for ((i = 1; i < ${{#nodes[@]}}; i++)); do
  srun --nodes=1 --ntasks=1 --whole --nodelist="${{nodes[i]}}" \\
    "$python" -m sweeps.cluster.slurm_node worker --address "$address" --index $i{cpus} &
  steps+=($!)
done
# until every Ray node has joined; at once when a node's step ends before that (its node will never join)
"$python" -m sweeps.cluster.slurm_node wait --address "$address" --nodes "${{#nodes[@]}}"{cpus} & children+=($!)
while kill -0 "${{children[-1]}}" 2>/dev/null; do
  for step in "${{steps[@]}}"; do
    kill -0 "$step" 2>/dev/null && continue
    echo "memsweep slurm: a Ray node's step ended before every node joined" >&2
    exit 1
  done
  sleep 1
done
wait "${{children[-1]}}" || exit 1
run "$python" -m sweeps.cli run "$spec" --address "$address" --out {out} --quiet --wait-lease
"""


@dataclass(frozen=True, kw_only=True)
class SlurmOptions:
    """What the job asks Slurm for; validated on construction."""

    nodes: int = 1
    cpus_per_node: int | None = None  # None: the whole node (--exclusive)
    mem: str | None = None  # per node, as sbatch --mem takes it
    partition: str | None = None
    time: str | None = None
    account: str | None = None
    sbatch_args: tuple[str, ...] = ()

    def __post_init__(self):
        for name in ("nodes", "cpus_per_node"):
            value = getattr(self, name)
            if (value is not None or name == "nodes") and (not isinstance(value, int) or value < 1):
                raise UsageError(f"'--{name.replace('_', '-')}' must be a positive integer (got {value!r}).")
        if self.mem is not None and not MEM.fullmatch(self.mem):
            raise UsageError(f"'--mem' must be a size per node such as 4G or 500M: a whole number with an optional "
                             f"K, M, G or T (got {self.mem!r}).")
        for name in ("partition", "time", "account"):
            value = getattr(self, name)
            if value is not None and (not value.strip() or any(c.isspace() for c in value)):
                raise UsageError(f"'--{name}' must be one word (got {value!r}).")
        for arg in self.sbatch_args:
            if not arg.startswith("-") or "\n" in arg:
                raise UsageError(f"'--sbatch-arg' must be one sbatch option such as --sbatch-arg=--exclusive (got {arg!r}).")

    def directives(self, sweep: str, log: str | None) -> list[str]:
        lines = [f"--job-name=memsweep-{sweep}", f"--nodes={self.nodes}", "--ntasks-per-node=1"]
        lines.append(f"--cpus-per-task={self.cpus_per_node}" if self.cpus_per_node else "--exclusive")
        lines += [f"--mem={self.mem}"] if self.mem else []
        lines += [f"--{n}={v}" for n in ("partition", "time", "account") if (v := getattr(self, n)) is not None]
        lines += list(self.sbatch_args)
        if log:
            lines.append(f"--output={log}")
        lines.append("--export=ALL")
        return [f"#SBATCH {line}" for line in lines]


def render_script(*, files: dict[str, str], spec_path: str, sweep: str, out: str, options: SlurmOptions,
                  log: str | None, python: str | None = None, token: str = TOKEN_PLACEHOLDER) -> str:
    """The batch script, with `files` (path in the job's own folder -> text; `spec_path` is the spec's) in it
    as quoted heredocs; the token line is only a note (the token itself is in the environment)."""
    eof = SPEC_EOF
    while any(eof in text.splitlines() for text in files.values()):
        eof += "_"
    cpus = options.cpus_per_node
    return SCRIPT.format(
        directives="\n".join(options.directives(sweep, log)), token=token, python=shlex.quote(python or sys.executable),
        out=shlex.quote(out), files="".join(_heredoc(path, text, eof) for path, text in files.items()),
        spec_path=shlex.quote(spec_path), cpus=f" --cpus {cpus}" if cpus else "",
        cpus_note=f"--cpus-per-node {cpus}: {cpus} each" if cpus else "the whole node: --exclusive",
    )


def _heredoc(path: str, text: str, eof: str) -> str:
    """Lines that write `text` byte for byte to $files/path (a last line without its newline is trimmed after)."""
    target = f'"$files"/{shlex.quote(path)}'
    folder = os.path.dirname(path)
    lines = f'mkdir -p "$files"/{shlex.quote(folder)}\n' if folder else ""
    lines += f"cat > {target} <<'{eof}'\n{text if text.endswith(chr(10)) else text + chr(10)}{eof}\n"
    return lines + ("" if text.endswith("\n") else f"truncate -s -1 {target}\n")


@dataclass(frozen=True, kw_only=True)
class Job:
    """A submission checked and ready for sbatch: its spec, where it writes, its log and its script."""

    planned: RunPlan  # the spec (checked against the folder), where it writes, its chunks: planned once
    out: str
    log: str | None
    script: str

    @property
    def spec(self) -> SweepSpec:
        return self.planned.spec

    @property
    def loc(self) -> Location:
        return self.planned.loc


def submit_slurm(spec: str, out: str | None, options: SlurmOptions, *, wait: bool, dry_run: bool) -> int:
    """Check, then sbatch the batch script (or print it); with wait, follow the job to its end."""
    job = prepare(spec, out, options)
    if dry_run:
        print(job.script, end="")
        return 0
    sbatch = shutil.which("sbatch")
    if sbatch is None:
        raise UsageError("'--slurm' needs Slurm's sbatch on PATH (not found): submit from a Slurm login node, "
                         "or see the script with --dry-run.")
    # another computation is refused now, not in the job
    refuse_foreign(job.loc, job.planned.computation["digest"], job.planned.chunk_ids)
    undo = make_out_folder(job)  # Slurm opens the job's log there as the job starts
    try:
        job_id = _sbatch(sbatch, job)
    except UsageError:
        undo()
        raise
    add_submission(job.loc, {
        "job_id": job_id, "submitted": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "nodes": options.nodes, "cpus_per_node": options.cpus_per_node, "mem": options.mem,
        "partition": options.partition, "time": options.time, "account": options.account,
        "sbatch_args": list(options.sbatch_args), "log": job.log.replace("%j", job_id) if job.log else None,
        "script": job.script,
    })
    print(f"submitted {job.spec.name} as Slurm job {job_id} ({options.nodes} node(s)); output: {job.out}")
    if not wait:
        print(f"follow it with: memsweep status {job.loc.uri}")
        return 0
    state = follow(job_id)
    where = f"; its log: {job.log.replace('%j', job_id)}" if job.log else ""
    if state == "COMPLETED":
        print(f"Slurm job {job_id}: COMPLETED{where}")
        return 0
    print(f"memsweep submit: Slurm job {job_id} ended {state}{where}; submit again to resume.", file=sys.stderr)
    return 1


def prepare(spec: str, out: str | None, options: SlurmOptions) -> Job:
    """Validate the spec and OUT (writing nothing), warn what the job's nodes may not see and when a cluster
    will not help, and render the script."""
    if not out:
        raise UsageError("'--out' must be given with '--slurm': a folder every node of the allocation can "
                         "write (a shared file system) or an object-store URI such as s3://bucket/prefix.")
    parsed = load_spec(spec)  # a bad spec never reaches the queue
    out = out if "://" in out else os.path.abspath(out)
    if "://" not in out:  # before locate, which refuses a file in the way without saying what was tried
        check_out_folder(out, os.path.join(out, parsed.name))
    loc = locate(out, parsed.name)
    cpus = options.nodes * (options.cpus_per_node or os.cpu_count() or 1)  # a node taken whole: this host's count
    # as `plan --nodes N --cpus C` plans it (check_spec reads only; it may reorder the values): the same estimate
    ident = identity(parsed)
    planned = plan_folder(check_spec(loc, parsed, ident=ident), loc, cpus=cpus, ident=ident)
    log = os.path.join(loc.root, SLURM_LOG) if loc.is_local else None
    for line in placement_warnings(out if loc.is_local else None) + cluster_warnings(planned, options):
        print(f"memsweep submit: warning: {line}", file=sys.stderr)
    text, beside = portable_spec(spec)  # the spec, and the profile file it names (then named beside it)
    files = {JOB_SPEC: text, **{name: data.decode() for name, data in beside.items()}}
    script = render_script(files=files, spec_path=JOB_SPEC, sweep=parsed.name, out=out, options=options, log=log)
    return Job(planned=planned, out=out, log=log, script=script)


def check_out_folder(out: str, root: str) -> None:
    """Refuse (exit 2) a local OUT/<sweep> that is neither a folder this user can write nor one it can create
    (its nearest existing ancestor is not a writable folder); writes nothing."""
    top = _outermost_missing(root)
    existing = os.path.dirname(top) if top else root
    if not os.path.isdir(existing):
        raise UsageError(f"'--out' must be a folder that exists or can be created (got {out!r}: tried {root}, "
                         f"but {existing} is not a folder).")
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "write in it" if existing == root else f"create {root} in it"
        raise UsageError(f"'--out' must be a folder you can write (got {out!r}: {existing} does not let this "
                         f"user {what}).")


def make_out_folder(job: Job) -> Callable[[], None]:
    """Create a local OUT/<sweep> and write (and remove) a file in it; a failure is bad input (exit 2) naming
    what was tried, and leaves nothing created. Returns what removes the folders it created."""
    if not job.loc.is_local:
        return (lambda: delete_sweep(job.loc)) if not exists(job.loc, job.loc.root) else (lambda: None)
    root = job.loc.root
    top = _outermost_missing(root)
    undo = (lambda: shutil.rmtree(top, ignore_errors=True)) if top else (lambda: None)
    try:
        os.makedirs(root, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".memsweep-write-check-"):
            pass
    except OSError as e:
        undo()
        raise UsageError(f"'--out' must be a folder you can write (got {job.out!r}: creating or writing in "
                         f"{root} failed: {e.strerror or e}).") from None
    return undo


def _outermost_missing(path: str) -> str | None:
    """The outermost folder of `path` that does not exist yet (creating it creates the rest); None if it exists."""
    top = None
    while not os.path.lexists(path):
        top, path = path, os.path.dirname(path)
    return top


def _sbatch(sbatch: str, job: Job) -> str:
    """Give sbatch the script, the job's token only in its environment; the job id."""
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    r = subprocess.run([sbatch, "--parsable", "--export=ALL"], input=job.script, env=env, capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        said = " / ".join(line for line in (r.stderr or r.stdout).splitlines() if line.strip())
        raise UsageError(f"sbatch refused the job (exit {r.returncode}): {said}")
    return r.stdout.strip().split(";")[0]


def placement_warnings(out: str | None) -> list[str]:
    """A line for each of the interpreter, the project and a local OUT that the other nodes may not see."""
    table = mount_table()
    paths = {"the Python interpreter": (sys.executable, os.path.dirname(sys.executable)),
             "the memsweep project": (str(PROJECT_ROOT), str(PROJECT_ROOT))}
    if out:
        paths["'--out'"] = (out, out)
    lines = []
    for what, (shown, checked) in paths.items():
        p = placement(checked, table)
        if p.kind == "node-local":
            lines.append(f"{what} {shown} is on a node-local file system ({p.why}): the other nodes of the "
                         "allocation cannot see it; put it on a shared file system (nfs, lustre, gpfs, ...).")
        elif p.kind == "host":
            lines.append(f"{what} {shown} is on a file system of this host ({p.why}), not a shared one "
                         "(nfs, lustre, gpfs, ...): each node must have the same files at this path.")
    return lines


def cluster_warnings(planned: RunPlan, options: SlurmOptions) -> list[str]:
    """The line of `plan` when this many nodes will not make the sweep faster: its chunks and their cost as
    `plan` measures it, on the allocation's CPUs (this host's count per node when a node is taken whole)."""
    cpus = options.nodes * (options.cpus_per_node or os.cpu_count() or 1)
    notes = cluster_notes(chunks=len(planned.chunks), seconds=estimate(planned, cpus), nodes=options.nodes,
                          cpus=cpus if options.cpus_per_node else None)
    return [f"{cluster_line(notes)} (`memsweep plan SPEC --nodes {options.nodes}` gives the same estimate)."] \
        if notes else []


def job_state(job_id: str) -> str | None:
    """PENDING, RUNNING, COMPLETED, CANCELLED, FAILED, ... from squeue (which keeps ended jobs for
    MinJobAge), else from sacct; None when neither knows the job or neither is installed."""
    for cmd in (["squeue", "-h", "-j", job_id, "-t", "all", "-o", "%T"],
                ["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State"]):
        exe = shutil.which(cmd[0])
        if exe is None:
            continue
        try:
            r = subprocess.run([exe, *cmd[1:]], capture_output=True, text=True, timeout=30)
        except subprocess.TimeoutExpired:
            continue
        if r.returncode == 0 and r.stdout.split():
            return r.stdout.split()[0]  # sacct says "CANCELLED by 0"
    return None


def follow(job_id: str) -> str:
    """Poll the job's state until it is terminal; print each change."""
    last, lost_since = None, None
    while True:
        state = job_state(job_id)
        if state is None:
            lost_since = lost_since or time.monotonic()
            if time.monotonic() - lost_since > LOST_AFTER_S:
                return "UNKNOWN (neither squeue nor sacct knows it)"
        else:
            lost_since = None
            if state != last:
                print(f"Slurm job {job_id}: {state}", flush=True)
                last = state
            if state in TERMINAL:
                return state
        time.sleep(POLL_S)


def status_lines(loc: Location) -> list[str]:
    """The latest Slurm job of the sweep and its state, or nothing when it was never submitted to Slurm."""
    jobs = (read_submissions(loc) or {}).get("jobs", [])
    if not jobs:
        return []
    job = jobs[-1]
    state = job_state(job["job_id"]) or "state unknown (not in squeue or sacct)"
    log = f"; log {job['log']}" if job.get("log") else ""
    return [f"Slurm job {job['job_id']}: {state} (submitted {job['submitted']}, {job['nodes']} node(s){log})"]
