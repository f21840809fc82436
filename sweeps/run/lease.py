"""One driver per sweep: a lease file, OUT/<sweep>/_lease.json, held while `run` runs.

The lease names its holder (host, pid, start time) and carries a heartbeat that
a thread of the driver refreshes every HEARTBEAT_S seconds. A second driver
refuses (LeaseError, exit 2) naming the holder, or waits for it with
`--wait-lease`. A lease is stale, and taken over with a message, when its
heartbeat is older than STALE_AFTER_S (three heartbeats), or at once when its
holder ran on this host and that process is gone.

How the lease is created, by filesystem:
- local or shared (NFS) folders: the content goes to a temp file that is then
  hard-linked to _lease.json; link() fails if the name exists and is atomic on
  NFS (a lost reply is recognised by the temp file's link count).
- object stores: pyarrow's S3FileSystem offers no conditional PUT (no
  If-None-Match), so a lease is created by: check that none exists, PUT, wait
  CONFIRM_S, re-read and compare the token. Two drivers that both pass the
  check within one request's time both PUT; the later PUT wins and the earlier
  driver sees a foreign token on its re-read and refuses. What is left is a
  driver whose PUT lands more than CONFIRM_S after the other's re-read: both
  then run until the next heartbeat, where the one whose token was replaced
  stops ("lost the lease"). Parts are content-addressed and written whole, so
  that overlap costs duplicate work, never wrong rows.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass

import psutil

from sweeps.exceptions import LeaseError
from workers.dataset import LEASE_FILE, LEASE_TEMP_PREFIX, TEMP_PREFIX
from workers.exceptions import StoreIOError
from workers.dataset.folder import Location, check_inside, read_text, remove_quietly, retrying, write_bytes

HEARTBEAT_S = 10.0
STALE_AFTER_S = 3 * HEARTBEAT_S  # three missed heartbeats
WAIT_POLL_S = 2.0
CONFIRM_S = 1.0  # object stores: how long after its PUT a driver re-reads the lease


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


@dataclass(frozen=True, kw_only=True)
class Holder:
    """Who holds a lease, as written in _lease.json (times are UNIX seconds)."""

    host: str
    boot_id: str
    pid: int
    pid_start: float
    token: str
    started: float
    heartbeat: float

    @classmethod
    def me(cls) -> Holder:
        now = time.time()
        return cls(host=socket.gethostname(), boot_id=_boot_id(), pid=os.getpid(),
                   pid_start=psutil.Process().create_time(), token=uuid.uuid4().hex, started=now, heartbeat=now)

    def to_json(self) -> bytes:
        return json.dumps({**asdict(self), "started_utc": _iso(self.started),
                           "heartbeat_utc": _iso(self.heartbeat)}, indent=1).encode()

    @classmethod
    def from_json(cls, text: str) -> Holder | None:
        try:
            d = json.loads(text)
            return cls(host=str(d["host"]), boot_id=str(d.get("boot_id", "")), pid=int(d["pid"]),
                       pid_start=float(d.get("pid_start", 0.0)), token=str(d["token"]),
                       started=float(d["started"]), heartbeat=float(d["heartbeat"]))
        except (ValueError, KeyError, TypeError):
            return None

    def describe(self, now: float | None = None) -> str:
        if not self.token:
            return "an unreadable _lease.json"
        age = (now or time.time()) - self.heartbeat
        return (f"host {self.host} pid {self.pid}, running since {_iso(self.started)}, "
                f"last heartbeat {_iso(self.heartbeat)} ({age:.0f} s ago)")

    def stale_reason(self, now: float) -> str | None:
        """Why this lease may be taken over, or None while its holder is alive."""
        if not self.token:
            return "it cannot be read"
        me = Holder.me()
        if self.host == me.host and self.boot_id == me.boot_id and not _alive(self.pid, self.pid_start):
            return "its process is gone"
        if now - self.heartbeat > STALE_AFTER_S:
            return f"its heartbeat is {now - self.heartbeat:.0f} s old (stale after {STALE_AFTER_S:.0f} s)"
        return None


UNREADABLE = Holder(host="?", boot_id="", pid=0, pid_start=0.0, token="", started=0.0, heartbeat=0.0)


def _alive(pid: int, start: float) -> bool:
    try:
        p = psutil.Process(pid)
        return abs(p.create_time() - start) < 1.0 and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class Lease:
    """The lease of one sweep folder; `with Lease(loc).acquired(wait=...)` holds it for a block."""

    def __init__(self, loc: Location, say: Callable[[str], None] = print):
        self.loc = loc
        self.path = loc.path(LEASE_FILE)
        self.say = say
        self.me = Holder.me()
        self.lost: str | None = None  # set by the heartbeat thread when another driver holds the lease
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- acquiring ---------------------------------------------------------------------------------
    def acquire(self, wait: bool = False) -> None:
        """Take the lease; raise LeaseError naming the holder (or wait for it with wait=True)."""
        announced = False
        while True:
            created, holder = self._create()
            if created:
                break
            if holder is None:
                continue  # released between our attempt and our read: try again
            now = time.time()
            reason = holder.stale_reason(now)
            if reason:
                self.say(f"taking over the lease on {self.loc.uri} from {holder.describe(now)}: {reason}.")
                self._remove_if(holder)
                continue
            if not wait:
                raise LeaseError(
                    f"{self.loc.uri} is being run by another driver ({holder.describe(now)}); let it finish, "
                    "or rerun with --wait-lease to run after it."
                )
            if not announced:
                self.say(f"waiting for the lease on {self.loc.uri}, held by {holder.describe(now)} ...")
                announced = True
            time.sleep(WAIT_POLL_S)
        self._thread = threading.Thread(target=self._beat, name="memsweep-lease", daemon=True)
        self._thread.start()

    def _create(self) -> tuple[bool, Holder | None]:
        """Try to create _lease.json holding self.me: (True, None) if created, else (False, the holder
        found there, or None when the lease vanished meanwhile and the attempt should be repeated)."""
        if self.loc.is_local:
            return self._create_local()
        found = self._read()
        if found is not None:
            return False, found
        write_bytes(self.loc, self.path, self.me.to_json())
        time.sleep(CONFIRM_S)
        found = self._read()
        if found is not None and found.token == self.me.token:
            return True, None
        return False, found

    def _create_local(self) -> tuple[bool, Holder | None]:
        check_inside(self.loc, self.path)  # the lease is linked, not written by write_bytes
        parent = os.path.dirname(self.path)
        tmp = os.path.join(parent, f"{LEASE_TEMP_PREFIX}{self.me.token}")

        def link() -> bool:
            os.makedirs(parent, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, self.me.to_json())
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(tmp, self.path)
                return True
            except FileExistsError:
                return os.stat(tmp).st_nlink == 2  # NFS: the link was made but its reply was lost
            finally:
                os.unlink(tmp)

        try:
            if retrying(self.loc, "creating the lease", self.path, link):
                return True, None
        except BaseException:
            remove_quietly(self.loc, tmp)
            raise
        return False, self._read()

    def _read(self) -> Holder | None:
        """The holder in _lease.json; None if there is no lease; a token-less Holder if unreadable."""
        try:
            text = read_text(self.loc, self.path)
        except FileNotFoundError:
            return None
        except StoreIOError as e:
            if "not found" in str(e).lower() or "no such file" in str(e).lower():
                return None
            raise
        return Holder.from_json(text) or UNREADABLE

    def _remove_if(self, stale: Holder) -> None:
        """Remove _lease.json if it still holds `stale` (same token and heartbeat)."""
        if not self.loc.is_local:
            now = self._read()
            if now is not None and (now.token, now.heartbeat) == (stale.token, stale.heartbeat):
                retrying(self.loc, "removing the stale lease", self.path, lambda: self.loc.fs.delete_file(self.path))
            return
        # Local/NFS: rename is atomic, so of two drivers taking over only one moves the stale lease aside.
        grave = f"{self.path}.{TEMP_PREFIX}{uuid.uuid4().hex}"
        try:
            os.rename(self.path, grave)
        except FileNotFoundError:
            return
        try:
            with open(grave) as f:
                moved = Holder.from_json(f.read())
            if moved is not None and (moved.token, moved.heartbeat) != (stale.token, stale.heartbeat):
                try:  # its holder refreshed it meanwhile: put it back unless a new lease took its place
                    os.link(grave, self.path)
                except FileExistsError:
                    pass
        finally:
            os.unlink(grave)

    # -- holding -----------------------------------------------------------------------------------
    def _beat(self) -> None:
        last_ok = time.monotonic()
        while not self._stop.wait(HEARTBEAT_S):
            try:
                self.refresh()
                last_ok = time.monotonic()
            except StoreIOError as e:
                if time.monotonic() - last_ok > STALE_AFTER_S - HEARTBEAT_S:
                    self.lost = f"its heartbeat could not be written for {time.monotonic() - last_ok:.0f} s ({e})"
            if self.lost:
                return

    def refresh(self) -> None:
        """Write a new heartbeat if the lease is still ours; otherwise record that it was lost."""
        found = self._read()
        if found is None or found.token != self.me.token:
            self.lost = f"it is now held by {found.describe()}" if found else "_lease.json was removed"
            return
        self.me = Holder(**{**asdict(self.me), "heartbeat": time.time()})
        write_bytes(self.loc, self.path, self.me.to_json())

    def check(self) -> None:
        """Raise LeaseError if the heartbeat thread found the lease taken by another driver."""
        if self.lost:
            raise LeaseError(f"lost the lease on {self.loc.uri}: {self.lost}; stopped (finished chunks are kept).")

    def release(self) -> None:
        """Stop the heartbeat and delete _lease.json if it is still ours."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=HEARTBEAT_S + 5)
        if self.lost:
            return
        try:
            found = self._read()
            if found is not None and found.token == self.me.token:
                retrying(self.loc, "releasing the lease", self.path, lambda: self.loc.fs.delete_file(self.path))
        except (StoreIOError, FileNotFoundError):
            pass  # a lease left behind goes stale and is taken over by the next run

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc) -> None:
        self.release()
