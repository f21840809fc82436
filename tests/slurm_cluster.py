"""A real Slurm on this machine for the Slurm tests: munged, slurmctld and two slurmd (n1, n2).

Everything is Debian's (`slurm-wlm`, `munge`; installed by tests/support/install_slurm.sh when
missing). Both slurmd run here with NodeAddr=127.0.0.1, each on a port of its own and with 2 CPUs
(so that a job can take a whole node or part of one: `submit --cpus-per-node`); state, spool,
logs and munge's socket live in one temporary folder; every daemon is a child of the test
process and is stopped by its pid.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.cluster_util import free_port

INSTALL = Path(__file__).resolve().parent / "support" / "install_slurm.sh"
NODES = ("n1", "n2")
START_WAIT_S = 60.0
CONF = """\
ClusterName=memsweeptest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool-%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd-%n.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
KillWait=10
MinJobAge=600
{nodes}
PartitionName=debug Nodes={node_names} Default=YES MaxTime=INFINITE State=UP
"""
NODE_LINE = "NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} CPUs=2 RealMemory=1000 State=UNKNOWN"


@dataclass
class SlurmCluster:
    root: Path
    env: dict
    procs: list = field(default_factory=list)

    def log(self) -> str:
        """The daemons' logs, for a failing test's message."""
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(self.root.glob("*.log")))


def install() -> None:
    r = subprocess.run(["sh", str(INSTALL)], capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"installing Slurm failed:\n{r.stdout}{r.stderr}")


def start(env: dict) -> SlurmCluster:
    """Write slurm.conf, start munged, slurmctld and one slurmd per node; wait until the nodes are idle."""
    install()
    root = Path(tempfile.mkdtemp(prefix="slurm-", dir="/tmp"))  # short: Ray's socket paths are length-limited
    root.chmod(0o755)  # munged runs as the munge user and must reach its socket folder
    host = socket.gethostname()
    nodes = "\n".join(NODE_LINE.format(name=n, host=host, port=free_port()) for n in NODES)
    conf = root / "slurm.conf"
    conf.write_text(CONF.format(host=host, ctld_port=free_port(), slurmd_port=free_port(), root=root,
                                nodes=nodes, node_names=",".join(NODES)))
    for d in ("state", *(f"spool-{n}" for n in NODES)):
        (root / d).mkdir()
    (root / "tmp").mkdir()
    cluster = SlurmCluster(root=root, env={**env, "SLURM_CONF": str(conf), "TMPDIR": str(root / "tmp")})
    try:
        _start_munge(cluster)
        cluster.procs.append(_daemon(cluster, ["slurmctld", "-D", "-i", "-f", str(conf)], "slurmctld"))
        for n in NODES:
            cluster.procs.append(_daemon(cluster, ["slurmd", "-D", "-N", n, "-f", str(conf)], f"slurmd-{n}"))
        _wait_idle(cluster)
    except BaseException:
        stop(cluster)
        raise
    return cluster


def _start_munge(cluster: SlurmCluster) -> None:
    """A munged of our own (its own socket, pid and seed files), as the munge user, with the system key."""
    munge = pwd.getpwnam("munge")
    key = Path("/etc/munge/munge.key")
    if not key.exists():
        subprocess.run(["mungekey", "--create", f"--keyfile={key}"], check=True)
        os.chown(key, munge.pw_uid, munge.pw_gid)
        key.chmod(0o600)
    d = cluster.root / "munge"
    d.mkdir()
    d.chmod(0o755)  # munged: clients (root here) need execute permission on the socket folder
    os.chown(d, munge.pw_uid, munge.pw_gid)
    cmd = ["munged", "--foreground", f"--socket={d}/munge.socket", f"--pid-file={d}/munged.pid",
           f"--seed-file={d}/munged.seed", f"--log-file={d}/munged.log"]
    cluster.procs.append(_daemon(cluster, cmd, "munged", user=munge.pw_uid, group=munge.pw_gid, extra_groups=[]))
    deadline = time.monotonic() + START_WAIT_S
    while not (d / "munge.socket").exists():
        if time.monotonic() > deadline or cluster.procs[-1].poll() is not None:
            raise RuntimeError(f"munged did not start:\n{(cluster.root / 'munged.out').read_text()}")
        time.sleep(0.2)


def _daemon(cluster: SlurmCluster, cmd: list[str], name: str, **kw) -> subprocess.Popen:
    with open(cluster.root / f"{name}.out", "w") as out:
        return subprocess.Popen(cmd, env=cluster.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                **kw)


def _wait_idle(cluster: SlurmCluster) -> None:
    deadline = time.monotonic() + START_WAIT_S
    states = ""
    while time.monotonic() < deadline:
        r = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], env=cluster.env, capture_output=True, text=True)
        states = r.stdout + r.stderr
        if r.returncode == 0 and sum(line.split()[1:] == ["idle"] for line in r.stdout.splitlines()) == len(NODES):
            return
        time.sleep(0.5)
    raise RuntimeError(f"the Slurm nodes did not become idle: {states}\n{cluster.log()}")


def stop(cluster: SlurmCluster) -> None:
    """Cancel the jobs still queued or running (a failed test leaves its job running, and the job's processes
    would outlive the daemons), stop the daemons we started (by pid: the slurmds first, munged last) and
    remove the folder."""
    if len(cluster.procs) == 2 + len(NODES) and all(p.poll() is None for p in cluster.procs):  # all started
        _cancel_all(cluster)
    for p in reversed(cluster.procs):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
    shutil.rmtree(cluster.root, ignore_errors=True)


def _cancel_all(cluster: SlurmCluster) -> None:
    """scancel every job of this cluster; wait until slurmd has ended their steps (squeue shows none)."""
    subprocess.run(["scancel", "--user", pwd.getpwuid(os.getuid()).pw_name], env=cluster.env, capture_output=True)
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        r = subprocess.run(["squeue", "-h", "-o", "%i"], env=cluster.env, capture_output=True, text=True)
        if r.returncode != 0 or not r.stdout.strip():
            return
        time.sleep(0.5)
