"""`memsweep submit --slurm` against a real Slurm on this machine: munged, slurmctld and two slurmd
(n1, n2, 2 CPUs each; tests/slurm_cluster.py). Each job starts its own Ray head on n1 and a Ray node on n2."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pyarrow.dataset as ds
import pytest

import sweeps.cluster.slurm
from sweeps.cluster.mounts import Mount
from sweeps.cluster.slurm import job_state
from tests import slurm_cluster
from tests.conftest import ROOT, memsweep, memsweep_here, planted, tree_state
from workers.dataset import MANIFEST, SUBMISSIONS

BIN = Path(sys.executable).parent
SPEC = """name = "slurm"
models = ["probe"]
plugins = ["tests.support.probe"]
chunk_points = 20
[axes.probe]
i = { from = 0, to = 239, step = 1 }
delay_ms = [300.0]
"""
# 40 chunks of half a second on 2 CPUs: long enough to be cancelled mid-run
LONG_SPEC = SPEC.replace('"slurm"', '"slurm-long"').replace("to = 239", "to = 799").replace("300.0", "500.0")
# secrets.token_hex(32); not a Ray ID of the same length, which a job's log can print ("Lease ID: 1800000002000000
# ffff..." of a worker killed with its job): Ray pads its IDs with 0xff bytes, and a random token holds eight f
# in a row about once in 10^8.
TOKEN = re.compile(r"\b(?![0-9a-f]*f{8})[0-9a-f]{64}\b")
RAY_CPUS = re.compile(r"^memsweep slurm: Ray cluster at \S+ with 2 nodes; CPUs per node: (.*)$", re.M)
CANCEL_WAIT_S = 15.0


@pytest.fixture(scope="module")
def slurm():
    cluster = slurm_cluster.start({**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
                                   "RAY_USAGE_STATS_ENABLED": "0"})
    try:
        yield cluster
    finally:
        slurm_cluster.stop(cluster)


def submissions(sweep_dir: Path) -> list[dict]:
    return json.loads((sweep_dir / SUBMISSIONS).read_text())["jobs"]


def job_processes(job_id: str) -> list[str]:
    """Processes of this Slurm job still alive: its environment names the job, or its command line
    names the Ray temp folders the job's nodes were given (msray-<job>-<node>)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state != b"Z" and (f"SLURM_JOB_ID={job_id}\0".encode() in env or f"msray-{job_id}-".encode() in cmd):
            found.append(f"{pid}: " + cmd.replace(b"\0", b" ").decode(errors="replace")[:200])
    return found


# The first dashboard agent of n2 starts in 20 s, where Ray's raylet waits 15 s for its ports and aborts.
SLOW_AGENT = """if os.environ.get("SLURMD_NODENAME") == "n2" and b"dashboard/agent.py" in CMD:
    try:
        os.close(os.open(os.path.join(os.path.dirname(__file__), "slowed"), os.O_CREAT | os.O_EXCL))
        time.sleep(20)
    except FileExistsError:
        pass
"""


def test_a_cancelled_job_leaves_no_ray_process_and_a_resubmission_completes_on_both_nodes(slurm, spec_file, tmp_path,
                                                                                         monkeypatch):
    """Two two-node jobs on one sweep, each checking what the other does not ask for.

    The first asks for 1 CPU of each node's 2 and 500 MB (--cpus-per-node, --mem): sbatch gets both, and each
    Ray node of the job reports 1 CPU (the job's `wait` step lists every node's CPUs, and fails on a mismatch).
    It is cancelled mid-run (scancel): within 15 s no process of it is left, and status says CANCELLED.
    The second, submitted again with --wait and whole nodes (--exclusive, 2 CPUs each), resumes: COMPLETED,
    every row once (verify), its rows from the head on n1 and the worker on n2, each job's id and script in
    the manifest, and the token nowhere. Its worker's first dashboard agent is slowed past the 15 s its raylet
    waits (planted; a busy host once made a node miss it so): the raylet aborts, the node prints Ray's error
    lines and starts again."""
    monkeypatch.setenv("SLURM_CONF", slurm.env["SLURM_CONF"])  # for squeue, run from this process
    spec, out = str(spec_file(LONG_SPEC)), tmp_path / "out"
    sweep = out / "slurm-long"
    first = memsweep("submit", spec, "--slurm", "--nodes", "2", "--cpus-per-node", "1", "--mem", "500M",
                     "--out", str(out), env=slurm.env)
    assert first.returncode == 0, first.stdout + first.stderr
    job_id = submissions(sweep)[-1]["job_id"]
    deadline = time.monotonic() + 300
    while len(list(sweep.glob("model=probe/part-*.parquet"))) < 4:
        assert time.monotonic() < deadline, "".join(p.read_text() for p in sweep.glob("_slurm-*.out")) + slurm.log()
        time.sleep(0.5)
    running = memsweep("status", str(sweep), env=slurm.env)
    assert f"Slurm job {job_id}: RUNNING" in running.stdout, running.stdout + running.stderr
    assert job_processes(job_id)
    subprocess.run(["scancel", job_id], env=slurm.env, check=True)
    deadline = time.monotonic() + CANCEL_WAIT_S
    while (left := job_processes(job_id)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not left, "\n".join(left)
    while (state := job_state(job_id)) != "CANCELLED" and time.monotonic() < deadline:
        time.sleep(0.5)  # COMPLETING until slurmd reports every step gone
    assert state == "CANCELLED"
    assert f"Slurm job {job_id}: CANCELLED" in memsweep("status", str(sweep), env=slurm.env).stdout
    done = len(list(sweep.glob("model=probe/part-*.parquet")))
    assert 4 <= done < 40
    [record] = submissions(sweep)
    assert RAY_CPUS.search((sweep / f"_slurm-{job_id}.out").read_text()).group(1) == "1, 1"
    assert (record["cpus_per_node"], record["mem"]) == (1, "500M")
    for line in ("#SBATCH --cpus-per-task=1", "#SBATCH --mem=500M"):
        assert line in record["script"].splitlines()
    nodes_before = set(pl.read_parquet(sweep / "model=probe" / "*.parquet")["env_ray_node_id"])

    slowed = planted(slurm.env, tmp_path / "slowed", SLOW_AGENT)
    again = memsweep("submit", spec, "--slurm", "--nodes", "2", "--out", str(out), "--wait", env=slowed, timeout=600)
    logs = "".join(p.read_text() for p in sweep.glob("_slurm-*.out"))
    assert again.returncode == 0, again.stdout + again.stderr + logs + slurm.log()
    assert "COMPLETED" in again.stdout
    assert (tmp_path / "slowed" / "slowed").exists()
    assert "memsweep slurm node: `ray start` failed while starting (try 1 of 3)" in logs
    assert re.search(r"^memsweep slurm node: raylet.out: .* C .*Check failed", logs, re.M), logs
    check = memsweep("verify", str(sweep), env=slurm.env)
    assert check.returncode == 0, check.stdout
    df = pl.read_parquet(sweep / "model=probe" / "*.parquet")
    assert df.height == 800 and df["point_id"].n_unique() == 800
    assert len(set(df["env_ray_node_id"]) - nodes_before) == 2  # the second job's rows: from both its nodes
    assert ds.dataset(str(sweep)).count_rows() == 800  # the jobs' logs, _slurm-<id>.out, are not parts
    first_record, record = submissions(sweep)
    assert first_record["job_id"] == job_id
    assert RAY_CPUS.search((sweep / f"_slurm-{record['job_id']}.out").read_text()).group(1) == "2, 2"  # --exclusive
    assert "#SBATCH --nodes=2" in record["script"] and "slurm_node head" in record["script"]
    assert "#SBATCH --exclusive" in record["script"].splitlines()
    manifest = json.loads((sweep / MANIFEST).read_text())
    assert manifest["slurm"]["jobs"] == [first_record, record]
    assert not TOKEN.search(json.dumps(manifest))
    assert not TOKEN.search(first.stdout + first.stderr + again.stdout + again.stderr + logs)
    status = memsweep("status", str(sweep), env=slurm.env)
    assert f"Slurm job {record['job_id']}: COMPLETED" in status.stdout


def test_a_job_fails_as_soon_as_a_ray_node_step_ends_before_its_node_joined(slurm, spec_file, tmp_path):
    """A worker's step that ends before its node joins (planted: it exits at once) fails the job then, with
    one message, not after the `wait` step's 300 s; nothing is left running."""
    ends = planted(slurm.env, tmp_path / "ends", "if b'slurm_node\\0worker' in CMD:\n    os._exit(3)\n")
    out = tmp_path / "out"
    r = memsweep("submit", str(spec_file(SPEC)), "--slurm", "--nodes", "2", "--cpus-per-node", "1", "--out", str(out),
                 "--wait", env=ends, timeout=600)
    log = "".join(p.read_text() for p in (out / "slurm").glob("_slurm-*.out"))
    assert r.returncode == 1 and "ended FAILED" in r.stderr, r.stdout + r.stderr + log
    assert "memsweep slurm: a Ray node's step ended before every node joined" in log
    assert "Ray nodes joined in" not in log
    job_id = submissions(out / "slurm")[-1]["job_id"]
    deadline = time.monotonic() + CANCEL_WAIT_S  # the head's step may still be stopping its node
    while (left := job_processes(job_id)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not left, "\n".join(left)


def test_dry_run_prints_the_script_without_a_token_and_submits_nothing(spec_file, tmp_path):
    """--dry-run prints #SBATCH lines for every option, srun steps for the head and the workers, a
    placeholder where the token would be noted; it needs no sbatch and writes nothing."""
    out = tmp_path / "out"
    r = memsweep("submit", str(spec_file(SPEC)), "--slurm", "--nodes", "2", "--partition", "debug", "--time",
                 "00:20:00", "--account", "lab", "--sbatch-arg=--exclusive", "--sbatch-arg=--mem=0",
                 "--out", str(out), "--dry-run", env={**os.environ, "PATH": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    for line in ("#SBATCH --nodes=2", "#SBATCH --partition=debug", "#SBATCH --time=00:20:00",
                 "#SBATCH --account=lab", "#SBATCH --exclusive", "#SBATCH --mem=0"):
        assert line in r.stdout.splitlines()
    assert re.search(r'^srun .*--nodelist="\$\{nodes\[0\]\}" .*slurm_node head', r.stdout, re.M)
    assert re.search(r'^  srun .*--nodelist="\$\{nodes\[i\]\}" \\\n +.*slurm_node worker .*--index \$i &$', r.stdout, re.M)
    assert "RAY_AUTH_TOKEN=<generated per job" in r.stdout and not TOKEN.search(r.stdout)
    assert not out.exists()


@pytest.mark.parametrize("args, message", [
    ([], "'--out' must be given with '--slurm'"),
    (["--out", "OUT", "--nodes", "0"], "'--nodes' must be a positive integer (got 0)"),
    (["--out", "OUT", "--address", "http://127.0.0.1:8265"], "'--address' cannot be given with '--slurm'"),
    (["--out", "OUT", "--sbatch-arg", "exclusive"], "'--sbatch-arg' must be one sbatch option"),
    (["--out", "OUT", "--cpus-per-node", "0"], "'--cpus-per-node' must be a positive integer (got 0)"),
    (["--out", "OUT", "--mem", "lots"], "'--mem' must be a size per node such as 4G or 500M"),
])
def test_bad_slurm_arguments_exit_2_with_one_message(spec_file, tmp_path, capsys, args, message):
    """Each bad combination is refused with one message naming the argument, exit 2, nothing written."""
    from sweeps.cli import main

    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    assert main(["submit", str(spec_file(SPEC)), "--slurm", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_slurm_options_need_slurm(spec_file, capsys):
    """--nodes without --slurm is refused, exit 2."""
    from sweeps.cli import main

    assert main(["submit", str(spec_file(SPEC)), "--nodes", "2", "--address", "http://127.0.0.1:1"]) == 2
    assert "'--nodes' must come with '--slurm'" in capsys.readouterr().err


def test_submit_without_sbatch_on_path_exits_2(spec_file, tmp_path, monkeypatch, capsys):
    """No sbatch on PATH: one message saying so, exit 2, nothing written."""
    from sweeps.cli import main

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert main(["submit", str(spec_file(SPEC)), "--slurm", "--out", str(tmp_path / "out")]) == 2
    assert "needs Slurm's sbatch on PATH" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_dry_run_takes_whole_nodes_unless_cpus_per_node_is_given(spec_file, tmp_path):
    """No --cpus-per-node: #SBATCH --exclusive and Ray takes the node's CPUs; --cpus-per-node 3 --mem 8G:
    --cpus-per-task=3, --mem=8G, and every Ray step (head, workers, wait) is given --cpus 3."""
    spec, out = str(spec_file(SPEC)), str(tmp_path / "out")
    whole = memsweep_here("submit", spec, "--slurm", "--nodes", "2", "--out", out, "--dry-run")
    assert whole.returncode == 0, whole.stderr
    assert "#SBATCH --exclusive" in whole.stdout.splitlines() and "--cpus" not in whole.stdout
    asked = memsweep_here("submit", spec, "--slurm", "--nodes", "2", "--cpus-per-node", "3", "--mem", "8G", "--out", out,
                          "--dry-run")
    assert asked.returncode == 0, asked.stderr
    lines = asked.stdout.replace("\\\n", "").splitlines()  # a step's command, continued lines joined
    assert "#SBATCH --cpus-per-task=3" in lines and "#SBATCH --mem=8G" in lines and "#SBATCH --exclusive" not in lines
    steps = [line for line in lines if re.search(r"sweeps\.cluster\.slurm_node (head|worker)", line)]
    assert len(steps) == 2 and all("srun " in s and " --whole " in s and s.endswith("--cpus 3 &") for s in steps)
    assert re.search(r"slurm_node wait .* --cpus 3 & children\+=\(\$!\)$", asked.stdout, re.M)


def test_dry_run_warns_on_a_node_local_interpreter_and_embeds_the_spec(spec_file, tmp_path, monkeypatch, capsys):
    """An interpreter on a tmpfs is warned about by name, an --out on nfs4 is not; the script carries the
    spec's text in a heredoc and runs the job's own copy of it, never the spec file's path."""
    from sweeps.cli import main

    local, shared = tmp_path / "local", tmp_path / "shared"
    local.mkdir()
    shared.mkdir()
    table = [Mount(mountpoint="/", fstype="ext4"), Mount(mountpoint=os.path.realpath(local), fstype="tmpfs"),
             Mount(mountpoint=os.path.realpath(shared), fstype="nfs4")]
    monkeypatch.setattr(sweeps.cluster.slurm, "mount_table", lambda: table)
    python = local / "venv" / "bin" / "python"
    monkeypatch.setattr(sys, "executable", str(python))
    path = spec_file(SPEC)
    assert main(["submit", str(path), "--slurm", "--out", str(shared / "out"), "--dry-run"]) == 0
    script, err = capsys.readouterr()
    assert f"warning: the Python interpreter {python} is on a node-local file system (tmpfs at " in err
    assert "'--out'" not in err
    assert f"python={python}\n" in script
    assert f"<<'MEMSWEEP_SPEC'\n{SPEC}MEMSWEEP_SPEC\n" in script
    assert str(path) not in script and 'sweeps.cli run "$spec" --address' in script


def test_a_nodes_ray_ports_are_distinct_and_never_the_gcs_port():
    """`ray start` refuses a port given to two of its components (a head once failed so, and its job waited
    out the workers' 300 s): a node's ports are picked together, all distinct, none the GCS port that
    the batch script chose for the head before the head listens on it."""
    from sweeps.cluster.slurm_node import free_port, ray_args

    gcs = free_port("127.0.0.1")
    for head in (True, False):
        args = ray_args(head, f"127.0.0.1:{gcs}", "127.0.0.1", "/tmp/x", 1)
        ports = [int(a.split("=")[1]) for a in args if re.match(r"--[a-z-]+-port=", a)]
        assert len(ports) == (7 if head else 6) and len(set(ports)) == len(ports) and gcs not in ports


def test_a_nodes_ports_are_outside_the_ephemeral_range_and_its_own_share(monkeypatch):
    """No process binding port 0 can take a node's ports before Ray binds them: they lie between Ray's worker
    ports and the kernel's ephemeral range; nodes 0 and 1 of a job's node list pick from disjoint shares (by
    the index the batch script gives: SLURM_NODEID is 0 in every one-node step, and once gave two nodes of a
    job on one host the same share)."""
    from sweeps.cluster.slurm_node import PICK_FROM, STRIPES, free_ports

    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    monkeypatch.setenv("SLURM_NODEID", "0")
    for index in (0, 1):
        picked = free_ports("127.0.0.1", 50, index=index)
        assert len(set(picked)) == 50 and all(PICK_FROM <= p < low for p in picked)
        assert {(p - PICK_FROM) % STRIPES for p in picked} == {index}


def written_by_the_job(script: str, folder: Path) -> Path:
    """Run the part of a batch script that writes the job's own files, in `folder`; the spec's path."""
    start, end = script.index("files=$(mktemp"), script.index('echo "memsweep: Ray head')
    shown = subprocess.run(["bash", "-c", "set -u\n" + script[start:end] + 'echo "$spec"'], capture_output=True,
                           text=True, env={**os.environ, "TMPDIR": str(folder)})
    assert shown.returncode == 0, shown.stderr
    return Path(shown.stdout.strip())


def test_the_embedded_spec_is_written_byte_for_byte(tmp_path):
    """The script's heredoc writes the spec exactly, with a line that looks like its end marker and no
    newline at the end."""
    text = 'name = "x"\nMEMSWEEP_SPEC\n# MEMSWEEP_SPEC_\nmodels = ["copy"]'
    script = sweeps.cluster.slurm.render_script(files={"spec.toml": text}, spec_path="spec.toml", sweep="x",
                                        out=str(tmp_path), log=None, options=sweeps.cluster.slurm.SlurmOptions())
    assert written_by_the_job(script, tmp_path).read_text() == text


def test_a_profile_file_beside_the_spec_travels_with_it(tmp_path):
    """A spec naming its profile by a relative path ('../profiles/host.toml'): the script writes both, the
    profile beside the spec (sweeps.spec.load.portable_spec), so the job's copy of the spec loads the same profile."""
    from sweeps.spec.load import load_spec

    (tmp_path / "profiles").mkdir()
    (tmp_path / "specs").mkdir()
    (tmp_path / "profiles" / "host.toml").write_text((ROOT / "workers" / "profiles" / "seed.toml").read_text())
    spec = tmp_path / "specs" / "spec.toml"
    spec.write_text('name = "x"\nmodels = ["copy"]\nprofile = "../profiles/host.toml"\n')
    r = memsweep_here("submit", str(spec), "--slurm", "--out", str(tmp_path / "out"), "--dry-run")
    assert r.returncode == 0, r.stderr
    assert str(spec) not in r.stdout and str(tmp_path / "profiles") not in r.stdout
    (tmp_path / "job").mkdir()
    copy = load_spec(str(written_by_the_job(r.stdout, tmp_path / "job")))
    assert copy.profile.digest() == load_spec(str(spec)).profile.digest() and 'profile = "host.toml"' in copy.text


def test_dry_run_on_more_nodes_than_chunks_says_a_cluster_will_not_help(spec_file, tmp_path):
    """2 chunks on --nodes 4: the script is printed, and a warning says a cluster will not help, how many
    nodes would sit idle and that the work is shorter than Ray's start."""
    tiny = SPEC.replace("to = 239", "to = 39")
    r = memsweep_here("submit", str(spec_file(tiny)), "--slurm", "--nodes", "4", "--out", str(tmp_path / "out"),
                      "--dry-run")
    assert r.returncode == 0 and r.stdout.startswith("#!/bin/bash"), r.stderr
    assert "warning: a cluster will not help: 2 chunks for 4 nodes: 2 nodes would sit idle; the work takes " in r.stderr
    assert "against ~3 s to start Ray on each node" in r.stderr


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder this user cannot write in: mode 555, and immutable (chattr +i) when running as root."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    chattr = shutil.which("chattr") if os.access(folder, os.W_OK) else None
    if os.access(folder, os.W_OK) and (chattr is None or subprocess.run([chattr, "+i", str(folder)]).returncode):
        pytest.skip("root here, and chattr +i is not available to make a folder read-only")
    yield folder
    if chattr:
        subprocess.run([chattr, "-i", str(folder)], check=True)
    folder.chmod(0o755)


@pytest.mark.parametrize("dry_run", [True, False])
@pytest.mark.parametrize("case", ["a file", "under a file", "read-only"])
def test_an_out_that_cannot_be_written_or_created_exits_2_before_sbatch(spec_file, tmp_path, monkeypatch, capsys,
                                                                         request, case, dry_run):
    """--out that is a file, lies under a file, or is a folder this user cannot write: exit 2 naming '--out'
    and the path tried, with or without --dry-run; sbatch never runs and nothing is written."""
    from sweeps.cli import main
    from sweeps.exceptions import UsageError

    (tmp_path / "file").write_text("x")
    out = {"a file": tmp_path / "file", "under a file": tmp_path / "file" / "out",
           "read-only": request.getfixturevalue("read_only_folder") if case == "read-only" else None}[case]
    message = (f"'--out' must be a folder you can write (got '{out}': {out} does not let this user create {out}/slurm"
               if case == "read-only" else
               f"'--out' must be a folder that exists or can be created (got '{out}': tried {out}/slurm, but "
               f"{tmp_path / 'file'} is not a folder)")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(f"#!/bin/sh\ntouch {tmp_path}/sbatch-ran\necho 1\n")
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    spec = str(spec_file(SPEC))
    before = tree_state(tmp_path)
    with pytest.raises(UsageError, match=re.escape(message)):
        sweeps.cluster.slurm.submit_slurm(spec, str(out), sweeps.cluster.slurm.SlurmOptions(), wait=False, dry_run=dry_run)
    assert main(["submit", spec, "--slurm", "--out", str(out), *(["--dry-run"] if dry_run else [])]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "sbatch-ran").exists() and tree_state(tmp_path) == before
