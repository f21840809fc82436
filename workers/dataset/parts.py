"""Whether a sweep folder's parts are the ones its manifest records: the one check that every reader
(report, table, compare, calibrate --from, analysis.scan), `status`, `verify` and a resuming `run` make.

A part the manifest lists must be present, readable (its footer parses), of the size and checksum the
manifest records and hold its rows. A part the manifest does not list gets one verdict, the same from every
command (`unlisted_verdict`): a duplicate of another part under another name (its footer names another chunk),
rows of another computation (its footer's computation digest is not the manifest's), or rows of this
computation not yet recorded (a run in progress, or stopped before its manifest caught up). Nothing vouches
for such a part's rows but the part itself: its footer records a digest of its data pages (content_digest),
and a part not in the manifest, or whose record has no checksum, is taken only when its pages match it.

Checksums mean reading every byte: on a local folder that is cheap beside what a reader does next
(benchmarks/RESULTS.md: the `large` sweep's 28 parts, 165 MB), and those bytes are then in the page cache.
On an object store it would download every part twice, so there the check compares sizes (from the one
listing) and footers, and `verify` alone reads whole parts.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import polars as pl
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from workers.dataset import (COMPUTATION, PART_CHUNK_ID, PART_COMPUTATION, PART_CONTENT, PART_MODEL, PART_RANGE,
                             parse_part_path, part_path)
from workers.exceptions import SweepFolderError
from .folder import Location, at, layout, others, part_infos, read_manifest, retrying, scan_parts


def checksum(data: bytes) -> str:
    """The checksum the manifest records of a part's bytes."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


MAGIC = 4  # a Parquet file starts with b"PAR1"; it ends with the footer, its 4-byte length and b"PAR1"


def content_digest(pages) -> str:
    """The digest a part's footer records of its rows (PART_CONTENT): of its data pages, `pages` being the
    file's bytes from after the leading magic to the footer. The footer cannot hold a checksum of the bytes
    that hold it; the pages are every value the part stores."""
    return hashlib.blake2b(pages, digest_size=16).hexdigest()


def data_pages(data: bytes) -> memoryview:
    """The data pages of a whole part's bytes: between the leading magic and the footer."""
    footer = int.from_bytes(data[-8:-4], "little")
    return memoryview(data)[MAGIC:len(data) - 8 - footer]


def content_problem(data: bytes, footer: Footer) -> str | None:
    """What is wrong with a part whose content nothing else vouches for (not in the manifest, or its record has
    no checksum): its data pages against the digest its footer records; None when they agree."""
    if footer.content is None:
        return ("has no digest of its rows in its footer (written before memsweep recorded one): nothing proves "
                "its content")
    if content_digest(data_pages(data)) != footer.content:
        return "holds other rows than the digest in its footer records (changed after it was written)"
    return None


@dataclass(frozen=True, slots=True)
class PartProblem:
    """One part that does not match the manifest, or an entry of the folder that is not memsweep's: its path
    relative to the sweep folder, and what is wrong."""

    part: str  # model=<name>/part-<chunk_id>.parquet
    problem: str  # "is in the manifest but missing", ...
    what: str = "part"  # "file" or "folder" for an entry that is not a part (others())
    refuses: bool = True  # readers refuse the folder for it (verify and status name every problem)

    def __str__(self) -> str:
        return f"{self.what} {self.part} {self.problem}"


STRAY_PARQUET = ("is not a part this sweep records, but a Parquet reader of the folder (pyarrow, polars or duckdb over "
                 "its files) would read its rows: delete it or move it out of the sweep folder")


def not_memsweeps(loc: Location) -> list[PartProblem]:
    """Each entry under the sweep folder that memsweep does not write (folder.others): a Parquet file a reader
    of the folder's files would take for rows refuses the folder; any other file or folder is named."""
    prefix, out = loc.root.rstrip("/") + "/", []
    for info in others(loc, layout(loc)):
        rel = info.path.removeprefix(prefix)
        if info.type == pafs.FileType.Directory:
            out.append(PartProblem(rel, "is a folder memsweep does not write: move it out of the sweep folder",
                                   "folder", refuses=False))
        elif rel.endswith(".parquet"):
            out.append(PartProblem(rel, STRAY_PARQUET, "file"))
        else:
            out.append(PartProblem(rel, "is not a file memsweep writes: move it out of the sweep folder", "file",
                                   refuses=False))
    return out


@dataclass(frozen=True, slots=True)
class Footer:
    """What a part's footer says: its rows and the key-value metadata memsweep writes."""

    rows: int
    chunk_id: str | None
    computation: str | None
    model: str | None = None
    range: tuple[int, int] | None = None  # the chunk's [start, stop) of its model's grid
    content: str | None = None  # content_digest() of its data pages as written


def _footer(meta: pq.FileMetaData) -> Footer:
    kv = meta.metadata or {}
    get = (lambda key: kv[key.encode()].decode() if key.encode() in kv else None)
    start, _, stop = (get(PART_RANGE) or "").partition(":")
    span = (int(start), int(stop)) if start.isdigit() and stop.isdigit() else None
    return Footer(rows=meta.num_rows, chunk_id=get(PART_CHUNK_ID), computation=get(PART_COMPUTATION),
                  model=get(PART_MODEL), range=span, content=get(PART_CONTENT))


def read_footer(fs: pafs.FileSystem, path: str) -> Footer | None:
    """The footer of the part at `path`; None when it cannot be read (truncated, not Parquet)."""
    try:
        with fs.open_input_file(path) as f:
            return _footer(pq.read_metadata(f))
    except (OSError, pa.ArrowException):
        return None


def unlisted_verdict(part: str, footer: Footer | None, digest: str | None, content: str | None = None) -> str:
    """What every command says of a part the manifest does not list (`digest`: the manifest's computation,
    None in a folder written before computations were recorded; `content`: content_problem() of its bytes,
    where they were read)."""
    named = parse_part_path(part)[1]
    if footer is None:
        return "is not in the manifest and cannot be read (not a whole Parquet file): delete it"
    if footer.chunk_id is not None and footer.chunk_id != named:
        return (f"is not in the manifest: a duplicate of part {footer.chunk_id} under another name (its footer "
                "names that chunk): delete it")
    if digest is None or footer.computation != digest:
        return ("is not in the manifest: computed with another spec, profile or model version: delete it, or "
                "rerun the sweep with --fresh to start over")
    if content is not None:
        return f"is not in the manifest and {content}: delete it (a rerun computes its chunk again)"
    return ("is not in the manifest: of this computation but not yet recorded (a run in progress or stopped): "
            "rerun the same 'memsweep run' command to record it")


def stray(loc: Location, info: pafs.FileInfo, digest: str | None, checksums: bool = False) -> PartProblem:
    """A part the manifest does not list, with its verdict (unlisted_verdict); `checksums`: its bytes read and
    its content checked against its footer's digest (what verify does on a local folder)."""
    part = info.path.removeprefix(loc.root.rstrip("/") + "/")
    if not checksums:
        return PartProblem(part, unlisted_verdict(part, read_footer(loc.fs, info.path), digest))
    data = retrying(loc, "reading", info.path, lambda: _read_all(loc.fs, info.path))
    try:
        footer = _footer(pq.read_metadata(pa.BufferReader(data)))
    except (OSError, pa.ArrowException):
        footer = None
    content = content_problem(data, footer) if footer is not None else None
    return PartProblem(part, unlisted_verdict(part, footer, digest, content))


def part_problem(loc: Location, rec: dict, info: pafs.FileInfo, checksums: bool) -> tuple[str | None, Footer | None]:
    """What is wrong with the part `info` against its manifest record `rec` (None when nothing), and its footer:
    unreadable, another checksum (when `checksums`: every byte read), size, chunk or rows than recorded. A
    record without a checksum (a part not in the manifest, which the driver checks with the rows its chunk
    must hold, or a record edited or written by hand) has its every byte read wherever the folder is, and the
    part's rows must match the digest its footer records (content_problem)."""
    unproved = rec.get("checksum") is None
    if checksums or unproved:
        data = retrying(loc, "reading", info.path, lambda: _read_all(loc.fs, info.path))
        try:
            footer = _footer(pq.read_metadata(pa.BufferReader(data)))
        except (OSError, pa.ArrowException):
            return "cannot be read (not a whole Parquet file)", None
        if not unproved and rec["checksum"] != checksum(data):
            return "has another checksum than the manifest records (its bytes changed)", footer
        if unproved and (problem := content_problem(data, footer)) is not None:
            return problem, footer
    else:
        footer = read_footer(loc.fs, info.path)
        if footer is None:
            return "cannot be read (not a whole Parquet file)", None
    if rec.get("bytes") not in (None, info.size):
        return f"is {info.size} bytes, the manifest records {rec['bytes']}", footer
    named = parse_part_path(info.path.rsplit("/", 2)[-2] + "/" + info.base_name)[1]
    if footer.chunk_id not in (None, named):
        return f"holds the rows of chunk {footer.chunk_id} (its footer), not its own", footer
    if footer.rows != rec.get("rows", footer.rows):
        return f"has {footer.rows} rows, the manifest records {rec['rows']}", footer
    return None, footer


def _read_all(fs: pafs.FileSystem, path: str) -> bytes:
    with fs.open_input_stream(path) as f:
        return f.read()


def check_parts(loc: Location, manifest: dict, infos: dict[str, list[pafs.FileInfo]] | None = None,
                checksums: bool | None = None) -> list[PartProblem]:
    """Every part that does not match the manifest, listed ones (by chunk id) first, then every entry that is
    not memsweep's (not_memsweeps). `infos`: part_infos(loc), when the caller listed them already;
    `checksums`: compare every byte (default: on local folders)."""
    infos = part_infos(loc) if infos is None else infos
    checksums = loc.is_local if checksums is None else checksums
    prefix = loc.root.rstrip("/") + "/"
    present = {parse_part_path(i.path.removeprefix(prefix))[1]: i for found in infos.values() for i in found}
    listed = manifest.get("parts", {})
    problems = []
    for cid, rec in sorted(listed.items()):
        part = part_path(str(rec.get("model")), cid)
        if cid not in present or parse_part_path(present[cid].path.removeprefix(prefix))[0] != rec.get("model"):
            problems.append(PartProblem(part, "is in the manifest but missing"))
            continue
        problem, _ = part_problem(loc, rec, present[cid], checksums)
        if problem:
            problems.append(PartProblem(part, problem))
    digest = (manifest.get(COMPUTATION) or {}).get("digest")
    problems += [stray(loc, info, digest, checksums) for cid, info in sorted(present.items()) if cid not in listed]
    return problems + not_memsweeps(loc)


def mismatch_message(uri: str, problems: list[PartProblem], done: str = "Nothing was read from it.") -> str:
    """The one message a command gives for a folder whose parts do not match its manifest; `done`: what the
    command did instead."""
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{uri} does not match its manifest: {problems[0]}{more}; 'memsweep verify {uri}' lists every problem. {done}"


def checked_parts(loc: Location, manifest: dict) -> dict[str, list[str]]:
    """model -> sorted part paths, once every part matches the manifest (check_parts); SweepFolderError
    naming the first problem otherwise. What every reader opens a sweep folder with."""
    infos = part_infos(loc)
    problems = [p for p in check_parts(loc, manifest, infos) if p.refuses]
    if problems:
        raise SweepFolderError(mismatch_message(loc.uri, problems))
    return {m: [i.path for i in found] for m, found in infos.items()}


def scan(sweep_dir: str, model: str | None = None) -> pl.LazyFrame:
    """A lazy scan of one model's parts, or (model None) of every model's parts concatenated
    diagonally (a column one model lacks is null on its rows), once the parts match the manifest
    (checked_parts; SweepFolderError otherwise). Local folders go through polars' own scan; filesystem URIs through pyarrow (their options, such as endpoint_override, are in
    the query and only pyarrow reads them).

        import analysis; analysis.scan("results/default", model="memmap").collect()
    """
    loc = at(sweep_dir)
    manifest = read_manifest(loc)
    if manifest is None:
        raise SweepFolderError(f"'sweep_dir' must be a sweep folder written by 'memsweep run' (got {sweep_dir!r}: "
                               "no manifest there).")
    parts = checked_parts(loc, manifest)
    if model is not None and model not in parts:
        raise SweepFolderError(f"'model' must be a model with parts in {sweep_dir}, one of {list(parts)} "
                               f"(got {model!r}).")
    if not parts:
        raise SweepFolderError(f"'sweep_dir' must be a sweep folder with parts (got {sweep_dir!r}: none there).")
    frames = [scan_parts(loc.fs, parts[m]) for m in ([model] if model is not None else parts)]
    return frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")
