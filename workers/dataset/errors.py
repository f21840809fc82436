"""Rows whose computation failed (status "error"): what a part's record keeps of them, and the one wording in
which `run`, `status` and the report say them: per model and row source, how many rows are errors and their
distinct reasons, the first few, each once. An infeasible row is an answer (the point cannot exist), not an
error, and is not counted here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import polars as pl

from workers.dataset import MODELED, STATUS_ERROR as ERROR

REASONS_KEPT = 3  # distinct reasons a part's record keeps, and a summary prints per model and source
REASON_CHARS = 300  # a reason is shown as its first line, cut here (a guest's reason carries its console)


def short(reason: str | None) -> str:
    """A reason as it is printed: its first line, at most REASON_CHARS characters."""
    text = (reason or "").strip()
    first = text.splitlines()[0] if text else "no reason recorded"
    return first if len(first) <= REASON_CHARS else first[:REASON_CHARS - 3] + "..."


def chunk_reasons(frame: pl.DataFrame) -> list[str]:
    """The distinct (short) reasons of a chunk's error rows in row order, the first REASONS_KEPT: what its
    part's record keeps under "errors"."""
    errors = frame.filter(pl.col("status") == ERROR)["reason"]
    return list(dict.fromkeys(short(r) for r in errors.unique(maintain_order=True).head(50)))[:REASONS_KEPT]


@dataclass
class Failed:
    """The error rows of one model's rows of one source: how many, and their first distinct reasons."""

    rows: int = 0
    reasons: list[str] = field(default_factory=list)

    def add(self, rows: int, reasons: Iterable[str]) -> None:
        self.rows += rows
        for r in reasons:
            if r not in self.reasons and len(self.reasons) < REASONS_KEPT:
                self.reasons.append(r)


def from_records(records: Iterable[Mapping]) -> dict[tuple[str, str], Failed]:
    """(model, source) -> its error rows, from manifest records (each part's status counts and the reasons it
    kept; a record written before reasons were kept says so)."""
    out: dict[tuple[str, str], Failed] = {}
    for rec in records:
        n = int(rec.get("status", {}).get(ERROR, 0))
        if n:
            key = (str(rec.get("model")), str(rec.get("source", MODELED)))
            out.setdefault(key, Failed()).add(n, rec.get("errors") or ["reason not recorded in the manifest: "
                                                                         "read the part's reason column"])
    return out


def from_rows(frame: pl.DataFrame) -> dict[tuple[str, str], Failed]:
    """(model, source) -> its error rows, from a frame of (model, source, reason, len) counts of error rows."""
    out: dict[tuple[str, str], Failed] = {}
    for r in frame.sort("model", "source", pl.col("len"), descending=[False, False, True]).iter_rows(named=True):
        failed = out.setdefault((r["model"], r["source"]), Failed())
        failed.add(r["len"], [short(r["reason"])])
    return out


def lines(failed: Mapping[tuple[str, str], Failed]) -> list[str]:
    """The summary: a first line with the total, then one line per model and source with its reasons."""
    if not failed:
        return []
    total = sum(f.rows for f in failed.values())
    out = [f"{total:,} row{'s' if total != 1 else ''} are errors, not results (a model or measurement raised):"]
    for (model, source), f in sorted(failed.items()):
        out.append(f"  {model} ({source} rows): {f.rows:,} error row{'s' if f.rows != 1 else ''}: "
                   + "; ".join(f.reasons))
    return out
