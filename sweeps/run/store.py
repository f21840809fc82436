"""The sweep's own records on disk (or any pyarrow filesystem): parts, manifest, spec as run, Slurm
submissions, and the folder's upkeep (schema check, temporary files, deletion).

The layout, the file names and the schema version are workers.dataset's; the file I/O (whole-file writes,
retried reads, the part lister, the manifest reader) is workers.dataset.folder's; this module writes the records
with them. A folder of schema 1-2 (manifest.json, spec.toml, ...) is read through its own names
(`layout`) and never written into (`check_schema`).
"""

from __future__ import annotations

import io
import json
import os
import time

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from sweeps.exceptions import OUT_RULE, DatasetError, UsageError
from workers.dataset import (LAYOUT, LEASE_TEMP_PREFIX, MANIFEST, PART_CONTENT, SCHEMA_VERSION, SUBMISSIONS,
                             TEMP_PREFIX, Layout, parquet_options)
from workers.exceptions import SweepFolderError
from workers.dataset.parts import MAGIC, checksum, content_digest
from workers.dataset.folder import (
    Location, exists, filesystem, layout, link_out, read_json, read_manifest, remove_quietly, retrying,
    write_bytes,
)

LEASE_TEMP_STALE_S = 60.0  # a lease attempt's file older than this is a killed driver's


def locate(out: str, sweep: str | None = None) -> Location:
    """The Location of OUT/<sweep> (or of OUT itself when sweep is None). A local OUT/<sweep> that is, or
    lies under, a file is refused (UsageError): the sweep's folder cannot be made there."""
    try:
        fs, root = filesystem(out, field="--out")
    except SweepFolderError as e:
        raise UsageError(str(e)) from None
    base, sep, query = out.partition("?")  # s3://bucket/prefix?endpoint_override=...: options stay last
    uri = base.rstrip("/")
    if sweep:
        root, uri = f"{root.rstrip('/')}/{sweep}", f"{uri}/{sweep}"
        blocker = _file_in_the_way(root) if isinstance(fs, pafs.LocalFileSystem) else None
        if blocker is not None:
            raise UsageError(f"'--out' must be {OUT_RULE} (got {out!r}: {blocker} is a file).")
    return Location(fs=fs, root=root, uri=uri + sep + query)


def _file_in_the_way(path: str) -> str | None:
    """The existing file at `path`, or at the nearest ancestor of it that exists, where folders would have to
    be; None when that ancestor is a folder."""
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    return None if os.path.isdir(path) else path


def remove_temp_files(loc: Location) -> int:
    """Delete the temporary files (.tmp-*) writes left in the sweep folder and its model folders
    (a worker killed mid-write leaves one); only the lease holder calls this. Returns how many.

    Another driver's attempt at the lease, a .tmp-lease-* file younger than LEASE_TEMP_STALE_S, is left:
    removed between its creation and its link, it failed that driver with an I/O error where it must
    be told who holds the lease (seen in CI, two drivers started together)."""
    if not loc.is_local or not exists(loc, loc.root):
        return 0
    n = 0
    for info in loc.fs.get_file_info(pafs.FileSelector(loc.root, recursive=True)):
        if info.type != pafs.FileType.File or not info.base_name.startswith(TEMP_PREFIX):
            continue
        if link_out(loc, info.path) is not None:
            continue  # the listing follows links: what lies out of the folder is not the sweep's to delete
        if info.base_name.startswith(LEASE_TEMP_PREFIX) and info.mtime is not None \
                and time.time() - info.mtime.timestamp() < LEASE_TEMP_STALE_S:
            continue
        remove_quietly(loc, info.path)
        n += 1
    return n


def parquet_bytes(table: pa.Table) -> bytes:
    """A part's file: its table encoded as workers.dataset.parquet_options says, its footer recording the
    digest of the data pages just written (PART_CONTENT: the footer is written last, so it can hold it)."""
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, table.schema, **parquet_options(table.schema)) as writer:
        writer.write_table(table)
        with buf.getbuffer() as written:  # released before the writer appends its footer
            writer.add_key_value_metadata({PART_CONTENT: content_digest(written[MAGIC:buf.tell()])})
    return buf.getvalue()


def write_part(loc: Location, model: str, chunk_id: str, table: pa.Table) -> dict:
    """Write one part; return what the manifest records of it."""
    data = parquet_bytes(table)
    write_bytes(loc, loc.part_path(model, chunk_id), data)
    return {"bytes": len(data), "checksum": checksum(data), "rows": table.num_rows}


def part_checksum(loc: Location, model: str, chunk_id: str) -> dict:
    with loc.fs.open_input_stream(loc.part_path(model, chunk_id)) as f:
        data = f.read()
    return {"bytes": len(data), "checksum": checksum(data)}


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


def write_manifest(loc: Location, manifest: dict) -> None:
    submissions = read_submissions(loc, LAYOUT)
    if submissions:
        manifest = {**manifest, "slurm": submissions}
    write_bytes(loc, loc.path(MANIFEST), json.dumps(manifest, indent=1, sort_keys=True).encode())


def read_submissions(loc: Location, names: Layout | None = None) -> dict | None:
    """OUT/<sweep>/_slurm.json: {"jobs": [...]}, one record per `submit --slurm` (job id, script, options)."""
    return read_json(loc, (names or layout(loc)).submissions, "delete it to forget the Slurm jobs")


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
