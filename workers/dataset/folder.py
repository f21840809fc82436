"""A sweep folder on a filesystem (local, or any pyarrow filesystem such as S3): the one home of its file
I/O. Where it is (`Location`), whole-file writes (`write_bytes`), reads retried on an object store's
transient errors, the names its own files use (`layout`), the part lister (`part_files`, `list_parts`) and
the JSON reader of its manifest and submissions (`read_json`); workers.dataset.parts checks the parts against the
manifest and scans them. The driver and its workers write parts and
manifests through here; status, verify, calibrate, report and compare read through here, and the report
and compare pages are written with the same `write_bytes`. workers.dataset has the names and columns.

Nothing is written through a symlink out of the sweep folder (`check_inside`). A file is written whole or
not at all: under a temporary name and renamed on a local filesystem, one PUT on an object store. A reader
never sees half a file. A write that fails (no space, no permission, an I/O error) removes its temporary
file and raises StoreIOError naming the file; object-store requests that fail transiently (HTTP 5xx,
SlowDown/throttling, timeouts) are retried with backoff.
"""

from __future__ import annotations

import errno
import json
import os
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.fs as pafs

from workers.dataset import (SLURM_LOG, TEMP_PREFIX, Layout, layout_of, model_of_dir, parse_part_path,
                             part_path)
from workers.exceptions import StoreIOError, SweepFolderError

from . import manifest

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


def filesystem(uri: str, field: str = "sweep_dir") -> tuple[pafs.FileSystem, str]:
    """(filesystem, path on it) of a local path or a pyarrow filesystem URI (s3://bucket/p?endpoint_override=...).
    `field`: what the caller's user calls `uri` (an argument, an option), named in the error. An empty
    `uri` is refused: os.path.abspath would make it the current folder."""
    if not str(uri).strip():
        raise SweepFolderError(f"'{field}' must be a local path or a filesystem URI such as s3://bucket/path "
                               f"(got {uri!r}).")
    try:
        if "://" in str(uri):
            return pafs.FileSystem.from_uri(str(uri))
        return pafs.LocalFileSystem(), os.path.abspath(uri)
    except (pa.ArrowInvalid, OSError, ValueError) as e:
        raise SweepFolderError(f"'{field}' must be a local path or a filesystem URI such as s3://bucket/path "
                               f"(got {uri!r}: {e}).") from None


def at(uri: str, field: str = "sweep_dir") -> Location:
    """The Location of the sweep folder `uri` (a local path or a filesystem URI); `field` as filesystem()'s."""
    fs, root = filesystem(str(uri).rstrip("/"), field)
    return Location(fs=fs, root=root, uri=str(uri).rstrip("/"))


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


def link_out(loc: Location, path: str) -> tuple[str, str] | None:
    """(the link, where it resolves) when `path` on a local filesystem resolves outside loc.root through a
    symlink at or below loc.root; None when it stays inside (or on an object store, which has no links).
    loc.root may itself be a link (results -> /scratch/results): the folder is where it resolves."""
    if not loc.is_local:
        return None
    root = os.path.realpath(loc.root)
    if _inside(os.path.realpath(path), root):
        return None
    here, chain = path, []
    while os.path.dirname(here) != here:
        chain.append(here)
        here = os.path.dirname(here)
    for entry in reversed(chain):  # from the top: the first link out of the folder is the one to name
        if os.path.islink(entry) and _inside(os.path.realpath(os.path.dirname(entry)), root):
            return entry, os.path.realpath(entry)
    return path, os.path.realpath(path)


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


def check_inside(loc: Location, path: str) -> None:
    """Refuse (SweepFolderError, exit 2) a write to `path` that a symlink would take out of the sweep folder
    (a _report or model=<name> folder, or _manifest.json, linked elsewhere); every write goes through here."""
    found = link_out(loc, path)
    if found is not None:
        link, target = found
        raise SweepFolderError(f"'{link}' must be a file or folder inside {loc.uri}, not a symlink out of it (got "
                               f"a link to {target!r}); nothing is written through it: remove the link.")


def write_bytes(loc: Location, path: str, data: bytes) -> None:
    """Write a whole file atomically: temp name + rename locally, one PUT on object stores.

    On failure nothing is left behind (the temp file is removed) and StoreIOError names the file. A path
    that a symlink takes out of the folder is refused first (check_inside)."""
    check_inside(loc, path)
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


def write_files(loc: Location, folder: str, files: list) -> None:
    """Write local files (paths) into `folder` on loc's filesystem, each whole (write_bytes), in the order
    given: a page that links its figures goes last, so a reader never finds it before them. Every target is
    checked (check_inside) before the first is written: a link refused last must not leave the figures."""
    targets = [f"{folder.rstrip('/')}/{os.path.basename(path)}" for path in files]
    for target in targets:
        check_inside(loc, target)
    for path, target in zip(files, targets):
        write_bytes(loc, target, Path(path).read_bytes())


def remove_quietly(loc: Location, path: str) -> None:
    """Delete a file if it is there; cleanup after a failure must not raise a second error."""
    try:
        loc.fs.delete_file(path)
    except OSError:
        pass


def read_text(loc: Location, path: str) -> str:
    def read() -> str:
        with loc.fs.open_input_stream(path) as f:
            return f.read().decode()

    return retrying(loc, "reading", path, read)


def part_infos(loc: Location) -> dict[str, list[pafs.FileInfo]]:
    """model -> the part files in the sweep folder (path and size), sorted by path (one recursive listing)."""
    out: dict[str, list[pafs.FileInfo]] = {}
    if not exists(loc, loc.root):
        return out
    prefix = loc.root.rstrip("/") + "/"
    listing = retrying(loc, "reading", loc.root,
                       lambda: loc.fs.get_file_info(pafs.FileSelector(loc.root, recursive=True)))
    for info in listing:
        found = parse_part_path(info.path.removeprefix(prefix)) if info.type == pafs.FileType.File else None
        if found is not None:
            out.setdefault(found[0], []).append(info)
    return {m: sorted(infos, key=lambda i: i.path) for m, infos in sorted(out.items())}


def others(loc: Location, names: Layout) -> list[pafs.FileInfo]:
    """Every entry under the sweep folder that memsweep does not write there, sorted by path: not a part
    (model=<name>/part-<id>.parquet, whatever its state: workers.dataset.parts checks those), not one of the
    folder's own files (`names`) or Slurm's job output, not a model's folder, not the report's folder or what
    is in it, and not hidden (a write in progress names its temporary file with a leading '.')."""
    if not exists(loc, loc.root):
        return []
    prefix = loc.root.rstrip("/") + "/"
    own = {names.manifest, names.spec, names.submissions, names.lease}
    slurm_log = re.compile(re.escape(SLURM_LOG).replace("%j", r"\d+") + "$")
    out = []
    for info in retrying(loc, "reading", loc.root,
                         lambda: loc.fs.get_file_info(pafs.FileSelector(loc.root, recursive=True))):
        rel = info.path.removeprefix(prefix)
        parts = rel.split("/")
        if any(p.startswith(".") for p in parts) or parts[0] == names.report or parse_part_path(rel) is not None:
            continue
        if len(parts) == 1 and (rel in own or slurm_log.match(rel)
                                or (model_of_dir(rel) and info.type == pafs.FileType.Directory)):
            continue
        out.append(info)
    return sorted(out, key=lambda i: i.path)


def part_files(loc: Location) -> dict[str, list[str]]:
    """model -> sorted paths (on loc.fs) of the part files in the sweep folder, unchecked (workers.dataset.parts
    checks them against the manifest)."""
    return {m: [i.path for i in infos] for m, infos in part_infos(loc).items()}


def list_parts(loc: Location) -> dict[str, set[str]]:
    """model -> chunk ids of the part files present."""
    return {m: {parse_part_path(p.removeprefix(loc.root.rstrip("/") + "/"))[1] for p in paths}
            for m, paths in part_files(loc).items()}


def layout(loc: Location) -> Layout:
    """The names this sweep folder uses for its own files: schema 3's, or schema 1-2's for an older folder."""
    return layout_of(e.base_name for e in _top(loc))


def read_json(loc: Location, name: str, advice: str) -> dict | None:
    """OUT/<sweep>/<name> (the manifest, the Slurm submissions) parsed; None when absent; SweepFolderError
    naming it and `advice` when it is not JSON."""
    path = loc.path(name)
    if not exists(loc, path):
        return None
    try:
        return json.loads(read_text(loc, path))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SweepFolderError(f"{loc.uri}/{name} is not valid JSON ({e}); {advice}.") from None


def _top(loc: Location) -> list[pafs.FileInfo]:
    """The sweep folder's top-level entries (none when there is no folder yet)."""
    if not exists(loc, loc.root):
        return []
    return retrying(loc, "reading", loc.root, lambda: loc.fs.get_file_info(pafs.FileSelector(loc.root)))


def check_kinds(loc: Location, names: Layout, top: list[pafs.FileInfo] | None = None) -> None:
    """SweepFolderError when one of the sweep folder's own names holds the wrong kind of entry: a folder where
    its manifest, spec, lease or Slurm record (files) belongs, a file where its report or a model's parts
    (folders) belong. Otherwise a command would fail reading or writing it halfway, as an I/O error. `top`:
    the folder's top-level entries, when the caller listed them already."""
    files = {names.manifest: "manifest", names.spec: "spec", names.submissions: "record of Slurm jobs",
             names.lease: "lease"}
    for e in _top(loc) if top is None else top:
        if e.base_name in files and e.type == pafs.FileType.Directory:
            raise SweepFolderError(f"{loc.uri}/{e.base_name} is a folder where the sweep's {files[e.base_name]} "
                                   "file belongs: move it out of the sweep folder.")
        if e.type == pafs.FileType.File and (e.base_name == names.report or model_of_dir(e.base_name)):
            what = "report" if e.base_name == names.report else f"{model_of_dir(e.base_name)} parts"
            raise SweepFolderError(f"{loc.uri}/{e.base_name} is a file where the sweep's folder of {what} "
                                   "belongs: move it out of the sweep folder.")


def read_manifest(loc: Location, names: Layout | None = None) -> dict | None:
    """The manifest (of schema 3, or of the folder's own layout `names`); None when there is none yet;
    SweepFolderError when it is not JSON or not of the shape memsweep reads (workers.dataset.manifest), or
    when one of the folder's own names holds the wrong kind of entry (check_kinds)."""
    top = _top(loc)  # one listing for the layout and the kinds
    names = names or layout_of(e.base_name for e in top)
    check_kinds(loc, names, top)
    name, advice = names.manifest, "rerun the sweep with --fresh to start over"
    found = read_json(loc, name, advice)
    return None if found is None else manifest.check(found, f"{loc.uri}/{name}", advice)


def scan_parts(fs: pafs.FileSystem, paths: list[str]) -> pl.LazyFrame:
    """The part files `paths` of one model (all of them as part_files lists them, or a batch), hive
    partitioning off: `model` is in the file."""
    if isinstance(fs, pafs.LocalFileSystem):
        return pl.scan_parquet(paths, hive_partitioning=False)
    import pyarrow.dataset as ds

    return pl.scan_pyarrow_dataset(ds.dataset(paths, filesystem=fs, format="parquet"))
