"""`memsweep status` and `memsweep verify`: what a dataset holds and whether it is whole."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sweeps.exceptions import DatasetError
from workers.dataset import MANIFEST
from workers.folder import Location, exists, foreign_parts, layout, list_parts, mixed_message, read_manifest

from .store import checksum, locate


def _open(sweep_dir: str) -> tuple[Location, dict]:
    loc = locate(sweep_dir)
    if not exists(loc, loc.root):
        raise DatasetError(f"'OUT/SWEEP' must be a sweep folder written by 'memsweep run' (got {sweep_dir!r}: no such folder).")
    manifest = read_manifest(loc)
    if manifest is None:
        raise DatasetError(f"'OUT/SWEEP' must hold a {MANIFEST} (got {sweep_dir!r}: none there); run the sweep first.")
    return loc, manifest


def _without_manifest(sweep_dir: str) -> list[str] | None:
    """For a sweep folder with parts but no manifest (a run stopped before writing it): what is there,
    per model the parts and their rows. None when there is a manifest or no part."""
    loc = locate(sweep_dir)
    if not exists(loc, loc.root) or read_manifest(loc) is not None:
        return None
    present = list_parts(loc)
    if not present:
        return None
    lines = [f"{loc.uri}: no {MANIFEST} (the run stopped before writing one); the parts present:"]
    for model, cids in sorted(present.items()):
        rows, unreadable = 0, 0
        for cid in cids:
            try:
                with loc.fs.open_input_file(loc.part_path(model, cid)) as f:
                    rows += pq.read_metadata(f).num_rows
            except (OSError, pa.ArrowException):
                unreadable += 1
        bad = f", {unreadable} unreadable" if unreadable else ""
        lines.append(f"  {model}: {len(cids)} parts, {rows} rows{bad}")
    lines.append("incomplete: rerun the same 'memsweep run' command to finish it (finished parts are kept).")
    return lines


def status(sweep_dir: str, slurm: list[str] | tuple[str, ...] = ()) -> str:
    """A few lines: the `slurm` lines first (the state of the job that runs it, sweeps.cluster.slurm), then
    chunks done/total and rows by status."""
    unmanifested = _without_manifest(sweep_dir)
    if unmanifested:
        return "\n".join([*slurm, *unmanifested])
    if slurm and read_manifest(locate(sweep_dir)) is None:
        return "\n".join([*slurm, "no manifest yet: the job has not started the sweep."])
    _, m = _open(sweep_dir)
    by_status: dict[str, int] = {}
    for rec in m["parts"].values():
        for s, n in rec["status"].items():
            by_status[s] = by_status.get(s, 0) + n
    lines = [
        *slurm,
        f"sweep {m['sweep']} (profile {m['profile']}, updated {m['updated']})",
        f"chunks: {m['chunks_done']} of {m['chunks_expected']} done",
        f"rows: {m['rows']} of {m.get('rows_expected', m['points_expected'])} ({m['points_expected']} points x sources "
        f"{m.get('sources', ['model'])})",
        "by status: " + ", ".join(f"{s} {n}" for s, n in sorted(by_status.items())) if by_status else "by status: none yet",
    ]
    for model, info in m["models"].items():
        done = sum(r["rows"] for r in m["parts"].values() if r["model"] == model)
        lines.append(f"  {model} v{info['version']}: {done} of {info['points']} points")
    if m["chunks_done"] < m["chunks_expected"]:
        lines.append("incomplete: rerun the same 'memsweep run' command to finish it.")
    return "\n".join(lines)


def verify(sweep_dir: str) -> tuple[list[str], str]:
    """(problems, summary): every part readable and matching the manifest, no duplicate point_id."""
    unmanifested = _without_manifest(sweep_dir)
    if unmanifested:
        return [f"no {MANIFEST}: the parts cannot be checked against it"], "\n".join(unmanifested)
    loc, m = _open(sweep_dir)
    problems: list[str] = []
    spec_file = layout(loc).spec
    if not exists(loc, loc.path(spec_file)):
        problems.append(f"{spec_file} is missing")
    present = list_parts(loc)
    found, rows, ids = _listed_parts(loc, m, present)
    problems += found
    found, stray_ids = _unlisted_parts(loc, m, present)
    problems += found + _row_counts(m, rows)
    found, distinct = _duplicates(ids + stray_ids)
    problems += found
    summary = f"{m['sweep']}: {len(m['parts'])} parts, {rows} rows, {distinct} distinct points"
    return problems, summary


def _listed_parts(loc: Location, m: dict, present: dict[str, set[str]]) -> tuple[list[str], int, list[pa.Table]]:
    """The parts the manifest lists: (problems, their rows, their point ids). Each must be present and
    readable, with the manifest's checksum and row count."""
    listed = {cid for ids in present.values() for cid in ids}
    problems: list[str] = []
    ids = []
    rows = 0
    for cid, rec in sorted(m["parts"].items()):
        path = loc.part_path(rec["model"], cid)
        if cid not in listed:
            problems.append(f"part {path} is in the manifest but missing")
            continue
        try:
            with loc.fs.open_input_stream(path) as f:
                data = f.read()
            table = _point_ids(pa.BufferReader(data))
        except (OSError, pa.ArrowException) as e:
            problems.append(f"part {path} is unreadable: {e}")
            continue
        if checksum(data) != rec.get("checksum"):
            problems.append(f"part {path} checksum differs from the manifest")
        if table.num_rows != rec["rows"]:
            problems.append(f"part {path} has {table.num_rows} rows, the manifest says {rec['rows']}")
        rows += table.num_rows
        ids.append(table)
    return problems, rows, ids


def _unlisted_parts(loc: Location, m: dict, present: dict[str, set[str]]) -> tuple[list[str], list[pa.Table]]:
    """The parts present that the manifest does not list: (problems, the point ids of those readable). Each
    is a problem: of another computation (a mixed folder) or not yet recorded."""
    problems: list[str] = []
    ids = []
    unlisted = {model: [loc.part_path(model, cid) for cid in sorted(cids - set(m["parts"]))]
                for model, cids in sorted(present.items())}
    foreign = set(foreign_parts(loc.fs, m, unlisted))
    if foreign:
        problems.append(mixed_message(loc.uri, sorted(foreign)))
    for path in (p for paths in unlisted.values() for p in paths):
        why = "computed with another spec, profile or model version" if path in foreign else \
            "of this computation but not yet recorded (a run in progress or stopped: rerun the same command)"
        problems.append(f"part {path} is not in the manifest: {why}")
        try:
            with loc.fs.open_input_file(path) as f:
                ids.append(_point_ids(f))
        except (OSError, pa.ArrowException, KeyError):
            pass  # already reported as stray; its rows cannot be read
    return problems, ids


def _row_counts(m: dict, rows: int) -> list[str]:
    """Problems with the counts: chunks not all done, or the listed parts' `rows` not the manifest's or the spec's."""
    problems = []
    if m["chunks_done"] != m["chunks_expected"]:
        problems.append(f"only {m['chunks_done']} of {m['chunks_expected']} chunks are done")
    if rows != m["rows"]:
        problems.append(f"the parts hold {rows} rows, the manifest says {m['rows']}")
    expected = m.get("rows_expected", m.get("points_expected"))  # schema 1: one row per point
    if rows != expected:
        problems.append(f"the parts hold {rows} rows; the spec makes {expected}")
    return problems


def _duplicates(ids: list[pa.Table]) -> tuple[list[str], int]:
    """(problems, distinct points): a point_id twice among one source's rows is a problem; the distinct
    points are those of the source with the most."""
    problems = []
    distinct = set()
    for source, pids in _ids_by_source(ids).items():
        unique = np.unique(pids)
        distinct.add(unique.size)
        if pids.size != unique.size:
            problems.append(f"{pids.size - unique.size} duplicate point_id values among the {source} rows")
    return problems, max(distinct, default=0)


def _point_ids(source) -> pa.Table:
    """A part's point_id and source columns (schema 1 parts have no source: all modeled rows)."""
    pf = pq.ParquetFile(source)
    if "source" in pf.schema_arrow.names:
        return pf.read(columns=["point_id", "source"])
    ids = pf.read(columns=["point_id"])
    return ids.append_column("source", pa.array(["model"] * ids.num_rows, pa.string()))


def _ids_by_source(tables: list[pa.Table]) -> dict[str, np.ndarray]:
    """point_id arrays per source: each point appears once per source (model, measured)."""
    if not tables:
        return {}
    t = pa.concat_tables(tables)
    pids = t.column("point_id").to_numpy()
    source = t.column("source").to_numpy(zero_copy_only=False)
    return {s: pids[source == s] for s in np.unique(source)}
