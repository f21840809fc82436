"""The dataset on disk (or any pyarrow filesystem): parts, manifest, spec as run.

    OUT/<sweep>/model=<name>/part-<chunk_id>.parquet
    OUT/<sweep>/manifest.json
    OUT/<sweep>/spec.toml

A part is written whole or not at all: under a temporary name and renamed on a
local filesystem, one PUT on an object store. A reader never sees half a part.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from .exceptions import DatasetError, UsageError

SCHEMA_VERSION = "2"
# Schema history:
#   1: identity, param_*, metric_*, env_* columns; key-value metadata memsweep.*
#   2: `source` ("model" | "measured") among the identity columns; measure_* columns after the
#      metrics (null on modeled rows); env_kernel_release, env_thp_mode, env_caches
MANIFEST = "manifest.json"
SPEC_FILE = "spec.toml"
IDENTITY_COLUMNS = ("sweep", "model", "model_version", "profile", "source", "point_id", "chunk_id", "status",
                    "reason")
PROVENANCE_COLUMNS = ("env_host", "env_cpu_model", "env_caches", "env_thp_mode", "env_kernel_release",
                      "env_memsweep_version", "env_git_sha", "env_ray_node_id")


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
        return self.path(f"model={model}", f"part-{chunk_id}.parquet")


def locate(out: str, sweep: str | None = None) -> Location:
    """The Location of OUT/<sweep> (or of OUT itself when sweep is None)."""
    try:
        if "://" in out:
            fs, root = pafs.FileSystem.from_uri(out)
        else:
            fs, root = pafs.LocalFileSystem(), os.path.abspath(out)
    except (pa.ArrowInvalid, OSError, ValueError) as e:
        raise UsageError(f"'--out' must be a local path or a filesystem URI such as s3://bucket/path (got {out!r}: {e}).") from None
    base, sep, query = out.partition("?")  # s3://bucket/prefix?endpoint_override=...: options stay last
    uri = base.rstrip("/")
    if sweep:
        root, uri = f"{root.rstrip('/')}/{sweep}", f"{uri}/{sweep}"
    return Location(fs=fs, root=root, uri=uri + sep + query)


def exists(loc: Location, path: str) -> bool:
    return loc.fs.get_file_info(path).type != pafs.FileType.NotFound


def write_bytes(loc: Location, path: str, data: bytes) -> None:
    """Write a whole file atomically: temp name + rename locally, one PUT on object stores."""
    parent = path.rsplit("/", 1)[0]
    loc.fs.create_dir(parent, recursive=True)
    if not loc.is_local:
        with loc.fs.open_output_stream(path) as f:
            f.write(data)
        return
    tmp = f"{parent}/.tmp-{uuid.uuid4().hex}-{path.rsplit('/', 1)[1]}"
    with loc.fs.open_output_stream(tmp) as f:
        f.write(data)
    loc.fs.move(tmp, path)


def read_text(loc: Location, path: str) -> str:
    with loc.fs.open_input_stream(path) as f:
        return f.read().decode()


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
    """model -> chunk ids of the part files present (one listing per model folder)."""
    out: dict[str, set[str]] = {}
    if not exists(loc, loc.root):
        return out
    for info in loc.fs.get_file_info(pafs.FileSelector(loc.root, recursive=True)):
        name = info.base_name
        parent = info.path.rsplit("/", 2)[-2] if info.path.count("/") >= 1 else ""
        if info.type == pafs.FileType.File and name.startswith("part-") and name.endswith(".parquet") \
                and parent.startswith("model="):
            out.setdefault(parent[len("model="):], set()).add(name[len("part-"):-len(".parquet")])
    return out


def read_manifest(loc: Location) -> dict | None:
    path = loc.path(MANIFEST)
    if not exists(loc, path):
        return None
    try:
        return json.loads(read_text(loc, path))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DatasetError(f"{loc.uri}/{MANIFEST} is not valid JSON ({e}); rerun with --fresh to start over.") from None


def write_manifest(loc: Location, manifest: dict) -> None:
    write_bytes(loc, loc.path(MANIFEST), json.dumps(manifest, indent=1, sort_keys=True).encode())


def delete_sweep(loc: Location) -> None:
    if exists(loc, loc.root):
        loc.fs.delete_dir(loc.root)
