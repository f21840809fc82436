"""The dataset on disk (or any pyarrow filesystem): parts, manifest, spec as run, Slurm submissions.

The layout, the file names and the schema version are workers.dataset's; this module writes them. A
folder of schema 1-2 (manifest.json, spec.toml, ...) is read through its own names (`layout`) and
never written into (`check_schema`).

A part is written whole or not at all: under a temporary name and renamed on a
local filesystem, one PUT on an object store. A reader never sees half a part.
A write that fails (no space, no permission, an I/O error) removes its temporary
file and raises StoreIOError naming the file; object-store requests that fail
transiently (HTTP 5xx, SlowDown/throttling, timeouts) are retried with backoff.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from sweeps.exceptions import DatasetError, StoreIOError, UsageError
from workers.dataset import (
    LAYOUT,
    MANIFEST,
    SCHEMA_VERSION,
    SUBMISSIONS,
    TEMP_PREFIX,
    Layout,
    filesystem,
    layout_of,
    parse_part_path,
    part_path,
)
from workers.exceptions import SweepFolderError

# Object-store retries: 5 tries, waiting 0.2, 0.4, 0.8, 1.6 s between them (at most 3 s), on top of
# the AWS SDK's own attempts inside each pyarrow call. Only errors that read as transient are retried.
RETRY_TRIES = 5
RETRY_FIRST_S, RETRY_MAX_S = 0.2, 3.0
TRANSIENT = re.compile(
    r"SLOW_?DOWN|THROTTL|TOO_MANY_REQUESTS|REQUEST_?TIMEOUT|SERVICE_?UNAVAILABLE|INTERNAL_?(FAILURE|ERROR)"
    r"|HTTP (response|status)? ?code:? ?5\d\d|timed out|timeout|NETWORK_CONNECTION|connection",
    re.IGNORECASE,
)


@dataclass(frozen=True, kw_only=True)
class Location:
    """A sweep's folder on a pyarrow filesystem."""

    fs: pafs.FileSystem
    root: str  # path of OUT/<sweep> on fs
    uri: str  # what the user gave, joined with the sweep name

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, pafs.LocalFileSystem)

    def path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    def part_path(self, model: str, chunk_id: str) -> str:
        return self.path(part_path(model, chunk_id))


def locate(out: str, sweep: str | None = None) -> Location:
    """The Location of OUT/<sweep> (or of OUT itself when sweep is None)."""
    try:
        fs, root = filesystem(out, field="--out")
    except SweepFolderError as e:
        raise UsageError(str(e)) from None
    base, sep, query = out.partition("?")  # s3://bucket/prefix?endpoint_override=...: options stay last
    uri = base.rstrip("/")
    if sweep:
        root, uri = f"{root.rstrip('/')}/{sweep}", f"{uri}/{sweep}"
    return Location(fs=fs, root=root, uri=uri + sep + query)


def describe_os_error(e: OSError) -> str:
    """One line for an OSError: the errno's name for local faults, the first line of pyarrow's text otherwise."""
    if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EIO, errno.EROFS):
        return os.strerror(e.errno).lower()
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return text[:300]


def retrying(loc: Location, what: str, path: str, fn: Callable):
    """fn() with object-store transient errors retried (RETRY_TRIES, exponential backoff); any other
    OSError, or the last transient one, becomes StoreIOError("<what> <path> failed: <why>")."""
    delay = RETRY_FIRST_S
    for attempt in range(1, RETRY_TRIES + 1):
        try:
            return fn()
        except StoreIOError:
            raise
        except FileNotFoundError:
            raise
        except OSError as e:
            transient = not loc.is_local and bool(TRANSIENT.search(str(e)))
            if transient and attempt < RETRY_TRIES:
                time.sleep(delay)
                delay = min(2 * delay, RETRY_MAX_S)
                continue
            tries = f" after {attempt} tries" if transient else ""
            raise StoreIOError(e.errno, f"{what} {_display(loc, path)} failed{tries}: {describe_os_error(e)}") from None
    raise AssertionError("unreachable")


def _display(loc: Location, path: str) -> str:
    """A path as the user named it: the URI's scheme and options kept for object stores."""
    if loc.is_local or not path.startswith(loc.root.rstrip("/")):
        return path
    base, sep, query = loc.uri.partition("?")
    return base + path[len(loc.root.rstrip("/")):]


def exists(loc: Location, path: str) -> bool:
    return retrying(loc, "reading", path, lambda: loc.fs.get_file_info(path).type != pafs.FileType.NotFound)


def write_bytes(loc: Location, path: str, data: bytes) -> None:
    """Write a whole file atomically: temp name + rename locally, one PUT on object stores.

    On failure nothing is left behind (the temp file is removed) and StoreIOError names the file."""
    parent, name = path.rsplit("/", 1)
    if not loc.is_local:
        def put() -> None:
            loc.fs.create_dir(parent, recursive=True)
            with loc.fs.open_output_stream(path) as f:
                f.write(data)

        retrying(loc, "writing", path, put)
        return
    tmp = f"{parent}/{TEMP_PREFIX}{uuid.uuid4().hex}-{name}"

    def write_and_rename() -> None:
        loc.fs.create_dir(parent, recursive=True)
        try:
            with loc.fs.open_output_stream(tmp) as f:
                f.write(data)
            loc.fs.move(tmp, path)
        except BaseException:
            remove_quietly(loc, tmp)
            raise

    retrying(loc, "writing", path, write_and_rename)


def remove_quietly(loc: Location, path: str) -> None:
    """Delete a file if it is there; cleanup after a failure must not raise a second error."""
    try:
        loc.fs.delete_file(path)
    except OSError:
        pass


def remove_temp_files(loc: Location) -> int:
    """Delete the temporary files (.tmp-*) writes left in the sweep folder and its model folders
    (a worker killed mid-write leaves one); only the lease holder calls this. Returns how many."""
    if not loc.is_local or not exists(loc, loc.root):
        return 0
    n = 0
    for info in loc.fs.get_file_info(pafs.FileSelector(loc.root, recursive=True)):
        if info.type == pafs.FileType.File and info.base_name.startswith(TEMP_PREFIX):
            remove_quietly(loc, info.path)
            n += 1
    return n


def read_text(loc: Location, path: str) -> str:
    def read() -> str:
        with loc.fs.open_input_stream(path) as f:
            return f.read().decode()

    return retrying(loc, "reading", path, read)


def parquet_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


def checksum(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def write_part(loc: Location, model: str, chunk_id: str, table: pa.Table) -> dict:
    """Write one part; return what the manifest records of it."""
    data = parquet_bytes(table)
    write_bytes(loc, loc.part_path(model, chunk_id), data)
    return {"bytes": len(data), "checksum": checksum(data), "rows": table.num_rows}


def part_rows(loc: Location, model: str, chunk_id: str) -> int | None:
    """Rows of an existing, readable part written for this chunk id; None if missing or invalid."""
    path = loc.part_path(model, chunk_id)
    try:
        with loc.fs.open_input_file(path) as f:
            meta = pq.read_metadata(f)
    except (OSError, pa.ArrowInvalid):
        return None
    kv = meta.metadata or {}
    if kv.get(b"memsweep.chunk_id", b"").decode() != chunk_id:
        return None
    return meta.num_rows


def part_checksum(loc: Location, model: str, chunk_id: str) -> dict:
    with loc.fs.open_input_stream(loc.part_path(model, chunk_id)) as f:
        data = f.read()
    return {"bytes": len(data), "checksum": checksum(data)}


def list_parts(loc: Location) -> dict[str, set[str]]:
    """model -> chunk ids of the part files present (one recursive listing of the sweep folder)."""
    out: dict[str, set[str]] = {}
    if not exists(loc, loc.root):
        return out
    prefix = loc.root.rstrip("/") + "/"
    for info in loc.fs.get_file_info(pafs.FileSelector(loc.root, recursive=True)):
        found = parse_part_path(info.path.removeprefix(prefix)) if info.type == pafs.FileType.File else None
        if found is not None:
            out.setdefault(found[0], set()).add(found[1])
    return out


def layout(loc: Location) -> Layout:
    """The names this sweep folder uses for its own files: schema 3's, or schema 1-2's for an older folder."""
    if not exists(loc, loc.root):
        return LAYOUT
    names = retrying(loc, "reading", loc.root,
                     lambda: [i.base_name for i in loc.fs.get_file_info(pafs.FileSelector(loc.root))])
    return layout_of(names)


def check_schema(loc: Location) -> None:
    """Refuse to write into a folder written with another dataset schema (reads only)."""
    found = layout(loc)
    default = SCHEMA_VERSION if found is LAYOUT else found.schemas
    version = str((read_manifest(loc, found) or {}).get("schema_version", default))
    if version != SCHEMA_VERSION:
        raise DatasetError(
            f"{loc.uri} holds a sweep written with dataset schema {version}; this memsweep writes schema "
            f"{SCHEMA_VERSION} and does not mix the two in one folder: rerun with --fresh to replace it, "
            "or give another --out."
        )


def _read_json(loc: Location, name: str, advice: str) -> dict | None:
    """OUT/<sweep>/<name> parsed; None when absent; DatasetError naming it and `advice` when not JSON."""
    path = loc.path(name)
    if not exists(loc, path):
        return None
    try:
        return json.loads(read_text(loc, path))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DatasetError(f"{loc.uri}/{name} is not valid JSON ({e}); {advice}.") from None


def read_manifest(loc: Location, names: Layout | None = None) -> dict | None:
    """The manifest (of schema 3, or of the folder's own layout `names`); None when there is none yet."""
    return _read_json(loc, (names or layout(loc)).manifest, "rerun with --fresh to start over")


def write_manifest(loc: Location, manifest: dict) -> None:
    submissions = read_submissions(loc, LAYOUT)
    if submissions:
        manifest = {**manifest, "slurm": submissions}
    write_bytes(loc, loc.path(MANIFEST), json.dumps(manifest, indent=1, sort_keys=True).encode())


def read_submissions(loc: Location, names: Layout | None = None) -> dict | None:
    """OUT/<sweep>/_slurm.json: {"jobs": [...]}, one record per `submit --slurm` (job id, script, options)."""
    return _read_json(loc, (names or layout(loc)).submissions, "delete it to forget the Slurm jobs")


def add_submission(loc: Location, record: dict) -> None:
    """Append one Slurm submission to OUT/<sweep>/_slurm.json (earlier ones are kept)."""
    jobs = (read_submissions(loc, LAYOUT) or {}).get("jobs", [])
    write_bytes(loc, loc.path(SUBMISSIONS), json.dumps({"jobs": [*jobs, record]}, indent=1).encode())


def delete_sweep(loc: Location, keep: tuple[str, ...] = ()) -> None:
    """Delete OUT/<sweep>'s contents except the top-level files named in `keep` (the lease)."""
    if not exists(loc, loc.root):
        return
    for info in loc.fs.get_file_info(pafs.FileSelector(loc.root, recursive=False)):
        if info.base_name in keep:
            continue
        if info.type == pafs.FileType.Directory:
            retrying(loc, "deleting", info.path, lambda p=info.path: loc.fs.delete_dir(p))
        else:
            retrying(loc, "deleting", info.path, lambda p=info.path: loc.fs.delete_file(p))
