"""The embedded Ray that `memsweep run` starts without --address, and that the tests' shared fixture starts.

`start` brings it up as memsweep wants it: watched by a reaper from before ray.init, so that none of its
processes outlives the one that started it (sweeps.run.reaper), listening on loopback only (nothing of it
is reachable from another host), with Ray's token file private to its user when Ray would create it, and
tried again when its raylet aborts (up to START_TRIES times). `EmbeddedRay.shutdown` stops it. Quiet unless verbose: Ray logs at WARNING,
workers' output stays in Ray's log files, and Ray's notice that token authentication is on is dropped
(it stays on).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import sys

import ray
from ray._private import ray_constants
from ray._private.authentication.authentication_token_generator import generate_new_authentication_token
from ray._private.authentication.authentication_token_setup import _get_default_token_path

from sweeps.exceptions import RayStartError

from .ray_env import LOOPBACK, MARKED_ENV, OBJECT_STORE_BYTES, RUN_MARK_VAR, RUNTIME_ENV, START_TRIES
from .reaper import Reaper, marked, reap

TOKEN_NOTICE_LOGGER = "ray._private.authentication.authentication_token_setup"
TOKEN_NOTICE = "Token authentication is enabled for this Ray cluster"


class EmbeddedRay:
    """What `start` brought up (true: an embedded Ray and its reaper); `EmbeddedRay()`, nothing (a joined
    cluster, which shutdown leaves as it is)."""

    def __init__(self, reaper: Reaper | None = None, verbose: bool = True):
        self.reaper, self.verbose = reaper, verbose

    def __bool__(self) -> bool:
        return self.reaper is not None

    def shutdown(self) -> None:
        """Stop the embedded Ray, then let its reaper end what is left. Unless verbose, what Ray's C++ core
        prints meanwhile (after a Ctrl-C, "task_manager.cc ... Failed to push error") goes to its session's
        log folder, not the terminal."""
        if self.reaper is None:
            return
        with _stderr_into(None if self.verbose else _session_dir()):
            ray.shutdown()
        self.reaper.stop()


def logs(verbose: bool) -> dict:
    """ray.init's logging arguments: Ray at WARNING and workers' output in its log files, unless verbose."""
    return {"logging_level": "INFO" if verbose else "WARNING", "log_to_driver": verbose}


# No metrics: with the dashboard off nothing reads them, and the driver's metrics thread (OpenTelemetry's
# MetricCollector, started by ray::stats::Init unless enable_metrics_collection is off, src/ray/stats/stats.h)
# once crashed the driver with SIGSEGV in TemporalMetricStorage::buildMetrics as ray.init was tried again after
# a raylet abort on a busy 2-core host (Ray 2.60). Every process of the embedded Ray reads this config.
SYSTEM_CONFIG = {"enable_metrics_collection": False}


def start(cpus: int | None = None, *, runtime_env: dict | None = RUNTIME_ENV,
          object_store_bytes: int = OBJECT_STORE_BYTES, verbose: bool = False) -> EmbeddedRay:
    """Start an embedded Ray of `cpus` CPUs (default: this machine's), dashboard off, whose tasks run in
    `runtime_env` (None: the job's own, for a Ray Job's driver). RayStartError after START_TRIES failed
    tries. Its reaper starts first: a start killed half-way leaves nothing either."""
    mark = secrets.token_hex(16)
    reaper = Reaper.start(mark)
    try:
        if not verbose:
            _quiet_token_notice()
        _private_token_file()
        init = {"num_cpus": cpus or os.cpu_count(), "include_dashboard": False, "_node_ip_address": LOOPBACK,
                "object_store_memory": object_store_bytes, "configure_logging": True, **logs(verbose),
                "_system_config": SYSTEM_CONFIG,
                **({"runtime_env": runtime_env} if runtime_env is not None else {})}
        with _environment({RUN_MARK_VAR: mark, **MARKED_ENV}), _on_loopback():
            _init_tries(init, mark)
    except BaseException:
        reaper.stop()
        raise
    return EmbeddedRay(reaper, verbose)


def _init_tries(init: dict, mark: str) -> None:
    """ray.init(**init), up to START_TRIES times. Its raylet aborts when the node's dashboard agent (a Python
    process) has not written its ports 15 s after it started (NodeManager::WaitForDashboardAgentPorts,
    src/ray/raylet/node_manager.cc; the 15 s is fixed), which a busy host can make it miss; ray.init then
    raises a bare Exception 30 s later. The processes that attempt started, the raylet's orphaned agents
    among them, carry the run's `mark` and are ended before the next (ray.shutdown does not know them: the
    node never came up)."""
    for attempt in range(1, START_TRIES + 1):
        try:
            ray.init(**init)
            return
        except Exception as e:  # Ray raises a bare Exception when its node does not come up
            reap(marked(mark))
            ray.shutdown()
            error = f"{type(e).__name__}: {e}"
        if attempt < START_TRIES:
            print(f"memsweep: the embedded Ray did not start (try {attempt} of {START_TRIES}: {error}); "
                  "starting it again", file=sys.stderr, flush=True)
    raise RayStartError(f"the embedded Ray did not start in {START_TRIES} tries; the last: {error}. Its logs are "
                        "in the newest session_* folder of Ray's temp folder (/tmp/ray unless RAY_TMPDIR is set).")


def _private_token_file() -> None:
    """Create Ray's default token file (~/.ray/auth_token), mode 0600, where ray.init would create it: token
    authentication on (RAY_AUTH_MODE unset or token), no RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH, no file yet.
    Ray writes it with open(path, "w"), 0644 under the usual umask (generate_and_save_token,
    ray/_private/authentication/authentication_token_setup.py); finding one, ray.init reads it, writes none.
    One that exists already and others can read is made private too (_make_private)."""
    if (os.environ.get("RAY_AUTH_MODE", "token").lower() != "token" or os.environ.get("RAY_AUTH_TOKEN")
            or os.environ.get("RAY_AUTH_TOKEN_PATH")):
        return
    path = _get_default_token_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # Ray's, the user's or an earlier run's: Ray reads it; others may not
        _make_private(path)
        return
    with os.fdopen(fd, "w") as f:
        f.write(generate_new_authentication_token())  # Ray's own: 64 hex digits


def _make_private(path) -> None:
    """A token file of this user's that others can read (Ray's own 0644, from before memsweep made it 0600)
    becomes 0600; one of another user's is left alone (not ours to change, and chmod would fail)."""
    try:
        info = os.stat(path)
        if info.st_uid == os.getuid() and info.st_mode & 0o077:
            os.chmod(path, 0o600)
    except OSError:
        pass


@contextlib.contextmanager
def _environment(values: dict[str, str]):
    """`values` in os.environ meanwhile, the variables as they were after: every process ray.init starts
    gets a copy of os.environ (start_ray_process, ray/_private/services.py) and hands it down, while the
    processes this one starts later (a test's commands) do not carry them."""
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def _on_loopback():
    """ray.init keeps _node_ip_address 127.0.0.1 meanwhile, so that every process of the node listens there only.
    Ray binds to all interfaces unless the node's address is localhost: the GCS, raylet and core workers'
    gRPC servers, the agents (`get_localhost_ip() if is_localhost(self.ip)`, ray/dashboard/agent.py), the
    metrics servers (ray/dashboard/head.py, ray/autoscaler/_private/monitor.py). But ray.init replaces a
    localhost address by this host's outward one (services.resolve_ip_for_localhost) unless
    ray_constants.ENABLE_RAY_CLUSTER is false, as Ray makes it on Windows and macOS; services.
    get_node_ip_address reads it at each call (ray/_private/services.py)."""
    before = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = before


@contextlib.contextmanager
def _stderr_into(session_dir: str | None):
    """File descriptor 2 appended to <session_dir>/logs/memsweep-shutdown.err meanwhile (None: untouched)."""
    if session_dir is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        fd = os.open(os.path.join(session_dir, "logs", "memsweep-shutdown.err"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


class _DropTokenNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return TOKEN_NOTICE not in record.getMessage()


def _quiet_token_notice() -> None:
    """Drop Ray's notice that token authentication is on (it stays on): a filter on its one logger."""
    logger = logging.getLogger(TOKEN_NOTICE_LOGGER)
    if not any(isinstance(f, _DropTokenNotice) for f in logger.filters):
        logger.addFilter(_DropTokenNotice())


def _session_dir() -> str | None:
    node = getattr(ray._private.worker, "_global_node", None)
    try:
        return node.get_session_dir_path() if node is not None else None
    except AttributeError:
        return None
