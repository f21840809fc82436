"""`memsweep status` and `memsweep verify`: what a dataset holds and whether it is whole."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sweeps.exceptions import DatasetError
from workers.dataset import MANIFEST, errors, parse_part_path
from workers.dataset.folder import Location, exists, layout, list_parts, part_infos, read_manifest
from workers.dataset.parts import check_parts

from .store import locate


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
    loc, m = _open(sweep_dir)
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
    lines += errors.lines(errors.from_records(m["parts"].values()))
    if m["chunks_done"] < m["chunks_expected"]:
        lines.append("incomplete: rerun the same 'memsweep run' command to finish it.")
    problems = check_parts(loc, m)
    refusing = [p for p in problems if p.refuses]
    if refusing:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        lines.append(f"the folder and its manifest disagree: {refusing[0]}{more}; 'memsweep verify {sweep_dir}' "
                     "lists every problem, and readers refuse the folder until it is mended (rerun the same "
                     "'memsweep run' command to compute damaged or missing parts again).")
    elif problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        lines.append(f"the folder holds what memsweep does not write: {problems[0]}{more}; 'memsweep verify "
                     f"{sweep_dir}' lists every one (readers still read the folder).")
    return "\n".join(lines)


def verify(sweep_dir: str) -> tuple[list[str], str]:
    """(problems, summary): every part matching the manifest (workers.dataset.parts.check_parts, every byte read,
    on object stores too), the counts the manifest and the spec expect, no duplicate point_id."""
    unmanifested = _without_manifest(sweep_dir)
    if unmanifested:
        return [f"no {MANIFEST}: the parts cannot be checked against it"], "\n".join(unmanifested)
    loc, m = _open(sweep_dir)
    problems: list[str] = []
    spec_file = layout(loc).spec
    if not exists(loc, loc.path(spec_file)):
        problems.append(f"{spec_file} is missing")
    infos = part_infos(loc)
    problems += [str(p) for p in check_parts(loc, m, infos, checksums=True)]
    rows, ids = _point_ids_of(loc, m, infos)
    problems += _row_counts(m, rows)
    found, distinct = _duplicates(ids)
    problems += found
    summary = f"{m['sweep']}: {len(m['parts'])} parts, {rows} rows, {distinct} distinct points"
    return problems, summary


def _point_ids_of(loc: Location, m: dict, infos: dict) -> tuple[int, list[pa.Table]]:
    """(rows of the readable parts the manifest lists, the point ids of every readable part present)."""
    rows, ids = 0, []
    for info in (i for found in infos.values() for i in found):
        try:
            with loc.fs.open_input_file(info.path) as f:
                table = _point_ids(f)
        except (OSError, pa.ArrowException, KeyError):
            continue  # check_parts reported it
        if parse_part_path("/".join(info.path.split("/")[-2:]))[1] in m["parts"]:
            rows += table.num_rows
        ids.append(table)
    return rows, ids


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
