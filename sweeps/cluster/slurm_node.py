"""One Ray node inside a Slurm allocation: the steps of the batch script `memsweep submit --slurm` writes.

    python -m sweeps.cluster.slurm_node address NODE                         # NODE's Slurm NodeAddr, as an IPv4 address
    python -m sweeps.cluster.slurm_node free-port IP                         # a TCP port nothing listens on, on IP
    python -m sweeps.cluster.slurm_node head --address IP:PORT [--cpus C]    # (srun, first node) the Ray head, GCS on PORT
    python -m sweeps.cluster.slurm_node worker --address IP:PORT --index I [--cpus C]  # (srun, node I > 0) joins it
    python -m sweeps.cluster.slurm_node wait --address IP:PORT --nodes N [--cpus C]  # until N Ray nodes are alive

A Ray node has C CPUs (`submit --cpus-per-node`), else the CPUs Slurm gave the job on its node
(SLURM_CPUS_ON_NODE: the whole node, as the job is --exclusive then); `wait` prints each node's CPUs
and fails when one of them does not have the C asked for.

A node binds to its own NodeAddr and takes ports that are free on it (several slurmd may share a
host; node I of the job's node list picks from its own share of them), keeps Ray's files under
$TMPDIR/msray-<job>-<node>, and runs `ray start --block` in a session of its own. On SIGTERM
(scancel, or the batch script ending) it stops `ray start`, then every process left in that session
or naming its temp folder: no Ray process of the job outlives its step. A worker whose `ray start`
fails while starting (its raylet never registers with the head) prints Ray's error lines and starts
again with new ports, up to START_TRIES times. Nothing here uses `ray stop`, which would stop every
Ray of the user on the host.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from sweeps.run.ray_env import OBJECT_STORE_BYTES, START_TRIES

JOIN_WAIT_S = 300.0  # a worker waits this long for the head's GCS port; `wait` for all nodes
TERM_GRACE_S = 0.4  # after SIGTERM, the node's processes get this long before SIGKILL
STOP_WAIT_S = 10.0
TEMP_PREFIX = "msray"
MAX_TEMP_DIR = 40  # Ray's unix socket paths (session dir + sockets/...) must stay under 108 bytes
PICK_FROM = 20000  # above Ray's default max_worker_port (19999)
EPHEMERAL_LOW = 32768  # Linux's default start of net.ipv4.ip_local_port_range
STRIPES = 8  # nodes of one job on one host that never pick the same port
STARTING_S = 120.0  # a `ray start --block` that ends sooner failed while starting
ERROR_LINES = 20  # of each Ray log, the last error lines printed when a start fails
RAY_ERROR = re.compile(r"\[[-0-9 :,]+ [EC] \d+ \d+\]")  # Ray's C++ log line of level error or fatal


def node_address(node: str) -> str:
    """The IPv4 address Slurm reaches `node` at (its NodeAddr; the node name when none is set)."""
    r = subprocess.run(["scontrol", "show", "node", node, "-o"], capture_output=True, text=True)
    m = re.search(r"\bNodeAddr=(\S+)", r.stdout)
    addr = m.group(1) if m else node
    return socket.getaddrinfo(addr, None, socket.AF_INET)[0][4][0]


def free_port(ip: str) -> int:
    """A free port for the head's GCS (picked by the batch script, from the head's share: node 0)."""
    return free_ports(ip, 1)[0]


def free_ports(ip: str, n: int, taken: tuple[int, ...] = (), index: int = 0) -> list[int]:
    """n distinct TCP ports nothing listens on, on ip, none of `taken`: each is held until all are
    picked (ports picked one after the other can repeat, and `ray start` refuses a port given twice).

    A port is free only until Ray binds it, seconds later. They are picked at random from pick_window(),
    where no process that binds port 0 is given one (Ray's own components among them; a head once lost
    its client server's port so, on a host where other Ray nodes were starting), and each node of a job
    from its own share of it (every STRIPES-th port, by its index in the job's node list): two nodes of a
    job on one host never pick the same port."""
    window = pick_window(index)
    candidates = iter(random.sample(window, len(window)))
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        while len(ports) < n:
            s = socket.socket()
            held.append(s)
            try:
                s.bind((ip, next(candidates, 0)))  # 0 (the kernel's choice) once the window is spent
            except OSError:
                continue  # in use
            if (port := s.getsockname()[1]) not in taken:
                ports.append(port)
        return ports
    finally:
        for s in held:
            s.close()


def pick_window(index: int = 0) -> range:
    """Node `index`'s share of port_window(): every STRIPES-th port. The index is the node's place in the
    job's node list, given by the batch script: SLURM_NODEID is 0 in every one-node step."""
    whole = port_window()
    stripe = index % STRIPES
    return range(whole.start + stripe, whole.stop, STRIPES) if whole else whole


def port_window() -> range:
    """The ports above Ray's worker ports (10002-19999 by default) and below the kernel's ephemeral range
    (net.ipv4.ip_local_port_range, where bind(("", 0)) and connect() take theirs); empty when that leaves
    fewer than 1,000."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = EPHEMERAL_LOW
    return range(PICK_FROM, low) if low - PICK_FROM >= 1000 else range(0)


def temp_dir() -> str:
    """$TMPDIR/msray-<job>-<node> (/tmp when $TMPDIR is too long for Ray's socket paths)."""
    base = tempfile.gettempdir()
    if len(base) > MAX_TEMP_DIR:
        base = "/tmp"
    return os.path.join(base, f"{TEMP_PREFIX}-{os.environ.get('SLURM_JOB_ID', os.getpid())}-"
                              f"{os.environ.get('SLURMD_NODENAME', socket.gethostname())}")


def ray_args(head: bool, address: str, ip: str, temp: str, cpus: int | None = None, index: int = 0) -> list[str]:
    """`ray start` arguments: this node's address, its CPUs, its own free ports, the dashboard off."""

    cpus = cpus or os.environ.get("SLURM_CPUS_ON_NODE") or os.cpu_count()
    args = ["start", "--block", f"--node-ip-address={ip}", f"--temp-dir={temp}", f"--num-cpus={cpus}",
            f"--object-store-memory={OBJECT_STORE_BYTES}", "--disable-usage-stats"]
    opts = ["node-manager-port", "object-manager-port", "dashboard-agent-listen-port", "dashboard-agent-grpc-port",
            "runtime-env-agent-port", "metrics-export-port", *(["ray-client-server-port"] if head else [])]
    port = address.rsplit(":", 1)[1]  # the head's GCS port, not listening yet when the head starts
    args += [f"--{opt}={p}" for opt, p in zip(opts, free_ports(ip, len(opts), (int(port),), index))]
    if head:
        return [*args, "--head", f"--port={port}", "--include-dashboard=false"]
    return [*args, f"--address={address}"]


def wait_for_port(address: str, timeout: float) -> bool:
    host, port = address.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, int(port)), timeout=2.0):
                return True
        except OSError:
            time.sleep(1.0)
    return False


def run_node(head: bool, address: str, cpus: int | None = None, index: int = 0) -> int:
    """Run `ray start --block` until it ends or we are signalled; then leave no process of it behind.

    A worker whose `ray start` ends within STARTING_S failed while starting. The raylet aborts when the
    node's dashboard agent has not written its port files 15 s after it started (NodeManager::
    WaitForDashboardAgentPorts in Ray's src/ray/raylet/node_manager.cc; the 15 s is fixed), which a
    busy host can make it miss: Ray's error lines are printed and the node starts again with new ports,
    up to START_TRIES times. The head gets one try: the other steps are connected to the GCS it started."""
    ip = node_address(os.environ["SLURMD_NODENAME"]) if "SLURMD_NODENAME" in os.environ else address.rsplit(":", 1)[0]
    if not head and not wait_for_port(address, JOIN_WAIT_S):
        print(f"memsweep slurm node: the Ray head at {address} did not answer in {JOIN_WAIT_S:.0f} s", file=sys.stderr)
        return 1
    temp = temp_dir()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())
    ray = Path(sys.executable).with_name("ray")
    tries = 1 if head else START_TRIES
    for attempt in range(1, tries + 1):
        started = time.monotonic()
        proc = subprocess.Popen([str(ray) if ray.exists() else "ray", *ray_args(head, address, ip, temp, cpus, index)],
                                start_new_session=True)
        try:
            while not stop.is_set() and proc.poll() is None:
                stop.wait(1.0)
        finally:
            stop_node(proc, temp)
        if stop.is_set():
            return 0
        print_ray_errors(temp)
        if attempt == tries or time.monotonic() - started > STARTING_S:
            break
        print(f"memsweep slurm node: `ray start` failed while starting (try {attempt} of {tries}); "
              "starting it again with new ports", file=sys.stderr, flush=True)
    return proc.returncode or 1


def print_ray_errors(temp: str) -> None:
    """The last error lines (levels E and C, Ray's fatal) of the raylet's and the GCS's logs of the node's
    latest session, on stderr: `ray start` shows only the stack of a raylet that aborted, not why."""
    for log in (Path(temp, "session_latest", "logs", name) for name in ("gcs_server.out", "raylet.out")):
        if not log.exists():
            continue
        lines = [line for line in log.read_text(errors="replace").splitlines() if RAY_ERROR.match(line)]
        for line in lines[-ERROR_LINES:]:
            print(f"memsweep slurm node: {log.name}: {line}", file=sys.stderr)
    sys.stderr.flush()


def stop_node(proc: subprocess.Popen, temp: str) -> None:
    """SIGTERM every process of the node (the session of `ray start`, or naming its temp folder),
    SIGKILL what is left a moment later, until none is left. Quick on purpose: when a job is
    cancelled, srun follows its SIGTERM to this step with a SIGKILL one second later."""
    start = time.monotonic()
    while left := leftovers(proc.pid, temp):
        elapsed = time.monotonic() - start
        if elapsed > STOP_WAIT_S:
            print(f"memsweep slurm node: processes {left} did not stop", file=sys.stderr)
            break
        sig = signal.SIGTERM if elapsed < TERM_GRACE_S else signal.SIGKILL
        for pid in left:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
        proc.poll()  # reap `ray start`, our child


def leftovers(sid: int, temp: str) -> list[int]:
    """Processes of session `sid`, or whose command line names `temp` (Ray passes its session
    folder to every process it starts), other than this one."""
    found, mark = [], temp.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().rsplit(b")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if stat[0] == b"Z":
            continue
        if int(stat[3]) == sid or mark + b"/" in cmdline or mark + b"\0" in cmdline:
            found.append(int(entry))
    return found


def wait_for_nodes(address: str, nodes: int, timeout: float, cpus: int | None = None) -> int:
    """Return 0 once `nodes` Ray nodes are alive in the cluster at `address` (each with `cpus` CPUs, when
    given); 1 after `timeout`, or when a node has other CPUs than asked for."""
    if not wait_for_port(address, timeout):
        print(f"memsweep slurm: the Ray head at {address} did not start in {timeout:.0f} s", file=sys.stderr)
        return 1
    import ray

    ray.init(address=address, logging_level="WARNING", log_to_driver=False)
    try:
        deadline = time.monotonic() + timeout
        while len(alive := [n for n in ray.nodes() if n["Alive"]]) < nodes:
            if time.monotonic() > deadline:
                print(f"memsweep slurm: {len(alive)} of {nodes} Ray nodes joined in {timeout:.0f} s", file=sys.stderr)
                return 1
            time.sleep(1.0)
    finally:
        ray.shutdown()
    per_node = [int(n["Resources"].get("CPU", 0)) for n in alive]
    print(f"memsweep slurm: Ray cluster at {address} with {nodes} nodes; CPUs per node: "
          f"{', '.join(map(str, per_node))}", flush=True)
    if cpus and any(c != cpus for c in per_node):
        print(f"memsweep slurm: each Ray node must have the {cpus} CPUs asked for with '--cpus-per-node' "
              f"(got {per_node}).", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sweeps.cluster.slurm_node")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("address").add_argument("node")
    sub.add_parser("free-port").add_argument("ip")
    for name in ("head", "worker", "wait"):
        node = sub.add_parser(name)
        node.add_argument("--address", required=True)
        node.add_argument("--cpus", type=int, help="the Ray node's CPUs (default: SLURM_CPUS_ON_NODE)")
    sub.choices["worker"].add_argument("--index", type=int, required=True,
                                       help="the node's place in the job's node list (the head is 0)")
    w = sub.choices["wait"]
    w.add_argument("--nodes", type=int, required=True)
    w.add_argument("--timeout", type=float, default=JOIN_WAIT_S)
    args = p.parse_args(argv)
    if args.cmd == "address":
        print(node_address(args.node))
        return 0
    if args.cmd == "free-port":
        print(free_port(args.ip))
        return 0
    if args.cmd == "wait":
        return wait_for_nodes(args.address, args.nodes, args.timeout, args.cpus)
    return run_node(args.cmd == "head", args.address, args.cpus, getattr(args, "index", 0))


if __name__ == "__main__":
    sys.exit(main())
