"""What the answers in a sweep rest on (workers.evidence labels), as the report, `table` and `compare` show it.

A modeled row's label is stored in the dataset (`evidence`, `evidence_note`: schema 5) for its headline;
a metric the kernel gives exactly (memmap's counts and bytes) is `kernel-checked` at the points a guest
bound (KernelCheck.bound), `extrapolated` elsewhere, as is any count the model computes without a cost.
A cell or a group of rows rests on its weakest row: fit < validated < kernel-checked < extrapolated <
assumed. Rows of the measured and kernel sources are observations and carry no label.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import polars as pl

from workers.evidence import (ASSUMED, AT_FIGURE, BETWEEN, EXTRAPOLATED, KERNEL_CHECKED, LABELS, LARGEST, NO_FIGURE,
                              SEP, SMALLEST, arithmetic, arithmetic_checked)
from workers.units import parse_size

from .read import MODELED, ModelRows

RANK = {label: i for i, label in enumerate(LABELS)}
MARK = {label: label[0].upper() for label in LABELS}  # F, V, K, E, A: one letter per label in tables
LEGEND = ("evidence marks (a cell's weakest row): F fit, V validated, K kernel-checked, E extrapolated, "
          "A assumed")
FRAGMENTS = 8  # notes listed under a table
# An axis's note (workers.evidence): the axis, its value, a ratio for a value past the figures' range, and
# the words every such value of the axis shares: "namespace_size 4TiB: 41x the largest with a figure (100GiB)"
_AXIS_NOTE = re.compile(rf"^(\w+) ([^:]+): (?:([\d.]+)x |1/([\d.]+) )?"
                        rf"((?:{NO_FIGURE}|{BETWEEN}|{LARGEST}|{SMALLEST}) .*)$")


def _off(rows: ModelRows, metric: str) -> list[str]:
    """The note fragments of the model's assumptions that do not bear on `metric` (the stored label is the
    headline's: a cost assumption behind a time is no part of a count's evidence)."""
    model = rows.model
    return [f"assumed: {a.name}" for a in (model.calibration.assumptions if model is not None else ())
            if not a.bears_on(metric)]


def label_expr(rows: ModelRows, metric: str) -> pl.Expr | None:
    """Per row, the label of its answer for `metric`; None when the sweep does not record evidence (a
    schema-4 folder)."""
    if "evidence" not in rows.schema():
        return None
    if rows.model is not None and arithmetic(rows.model, metric):  # the kernel's arithmetic (workers.evidence)
        labelled = pl.col("evidence").is_not_null()
        return pl.when(labelled & arithmetic_checked(rows.model, metric)).then(pl.lit(KERNEL_CHECKED)) \
            .when(labelled).then(pl.lit(EXTRAPOLATED))
    off = _off(rows, metric)
    if not off:
        return pl.col("evidence")
    # assumed only for assumptions that do not bear on this metric: the point is otherwise extrapolated
    kept = pl.col("evidence_note").str.split(SEP).list.eval(
        pl.element().filter(pl.element().str.starts_with("assumed: ") & ~pl.element().is_in(off))).list.len()
    return pl.when((pl.col("evidence") == ASSUMED) & (kept == 0)).then(pl.lit(EXTRAPOLATED)) \
        .otherwise(pl.col("evidence"))


def row_label(rows: ModelRows, source: str | None, metric: str) -> pl.Expr:
    """label_expr for rows of `source`, a null string where there is none (observations, schema 4)."""
    label = label_expr(rows, metric) if source in (None, MODELED) else None
    return pl.lit(None, dtype=pl.Utf8) if label is None else label


def pair_marks(listed: pl.DataFrame) -> dict[str, list[str]]:
    """A compare listing's evidence column, {"Evidence": ["F/E", ...]}: A's mark / B's mark, "-" for a side
    that is an observation (measured or kernel rows); {} when neither side has a label."""
    pairs = listed.select("a_evidence", "b_evidence").rows()
    if all(a is None and b is None for a, b in pairs):
        return {}
    return {"Evidence": [f"{MARK.get(a, '-')}/{MARK.get(b, '-')}" for a, b in pairs]}


def weakest(expr: pl.Expr) -> pl.Expr:
    """An aggregation: the weakest label among a group's rows (null when none has one)."""
    rank = expr.replace_strict(RANK, default=None, return_dtype=pl.Int64).max()
    return rank.replace_strict(dict(enumerate(LABELS)), default=None, return_dtype=pl.Utf8)


@dataclass(frozen=True, kw_only=True, slots=True)
class Evidence:
    """What a set of modeled rows rests on: rows per label (strongest first) and the distinct notes of
    the extrapolated and assumed ones (each axis or assumption once, most rows first)."""

    counts: tuple[tuple[str, int], ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def rows(self) -> int:
        return sum(n for _, n in self.counts)

    def text(self) -> str:
        """"2,480 extrapolated, 8 fit" (strongest label first); "" when nothing is labelled."""
        return ", ".join(f"{n:,} {label}" for label, n in self.counts)


def summarize(rows: ModelRows, lf: pl.LazyFrame, metric: str) -> Evidence:
    """The evidence of the rows of `lf` (rows of one model, already filtered) for `metric`."""
    label = label_expr(rows, metric)
    if label is None:
        return Evidence(counts=(), notes=())
    counted = rows.model is not None and arithmetic(rows.model, metric)
    note = pl.lit(None, dtype=pl.Utf8) if counted else pl.col("evidence_note")
    value = pl.col(metric).is_not_null() if metric in rows.schema() else pl.lit(True)
    labelled = lf.filter(value).select(label.alias("label"), note.alias("note")).filter(pl.col("label").is_not_null())
    groups = labelled.group_by("label", "note").agg(pl.len().alias("n")).collect()  # one scan for both
    counts = groups.group_by("label").agg(pl.col("n").sum())
    notes = groups.filter(pl.col("label").is_in([EXTRAPOLATED, ASSUMED])).select("note", "n")
    ordered = tuple(sorted(((lab, int(n)) for lab, n in counts.iter_rows()), key=lambda c: RANK[c[0]]))
    off = set(_off(rows, metric))
    return Evidence(counts=ordered, notes=tuple(n for n in _fragments(notes) if n not in off))


def _fragments(notes: pl.DataFrame) -> tuple[str, ...]:
    """Each "; "-separated part of the notes once, by the rows it covers (most first). The values of one axis
    that share how far they are from a figure are one line, with the farthest ratio: "namespace_size 112GiB,
    128GiB, 144GiB, ..., 16TiB (1018 values): up to 164x the largest with a figure (100GiB)"."""
    covered: dict[str, int] = {}
    for note, n in notes.iter_rows():
        for part in (note or "").split(SEP):
            if part and not part.startswith(AT_FIGURE):  # a what-if at a figure's point: the count says it
                covered[part] = covered.get(part, 0) + n
    lines: dict[tuple[str, str | None], _Line] = {}
    for part, n in sorted(covered.items(), key=lambda kv: (-kv[1], kv[0])):
        m = _AXIS_NOTE.match(part)
        axis, value, times, fraction, far = m.groups() if m else (part, part, None, None, None)
        line = lines.setdefault((axis, far), _Line(part))
        line.values.append(value)
        line.rows += n  # a row has one value of an axis: the rows of its values add up
        if times or fraction:  # the farthest value's ratio, as its note wrote it
            line.farthest = max(line.farthest, (float(times or fraction),
                                                f"up to {times}x " if times else f"down to 1/{fraction} "))
    return tuple(line.text(axis, far) for (axis, far), line in sorted(lines.items(), key=lambda kv: -kv[1].rows))


@dataclass
class _Line:
    """One line of notes: the first note's text, the values of its axis, their rows and the farthest ratio."""

    first: str
    values: list[str] = field(default_factory=list)
    rows: int = 0
    farthest: tuple[float, str] = (0.0, "")

    def text(self, axis: str, far: str | None) -> str:
        if far is None or len(self.values) == 1:
            return self.first
        return f"{axis} {_values(self.values)}: {self.farthest[1]}{far}"


def _values(values: list[str], most: int = 6) -> str:
    """Values of one axis, in order when they are sizes; the first and last few of many."""
    try:
        values = sorted(values, key=parse_size)
    except ValueError:
        pass
    if len(values) <= most:
        return ", ".join(values)
    return f"{', '.join(values[:3])}, ..., {values[-1]} ({len(values)} values)"


def note_lines(ev: Evidence, limit: int = FRAGMENTS) -> list[str]:
    """The lines under a table: what its extrapolated and assumed answers rest on."""
    if not ev.notes:
        return []
    first = f" (the first {limit} of {len(ev.notes)}, by rows)" if len(ev.notes) > limit else ""
    return [f"extrapolated and assumed answers rest on{first}:", *(f"  {n}" for n in ev.notes[:limit])]


def sentence(ev: Evidence) -> str:
    """One line for a finding: "Rests on 2,480 extrapolated rows (namespace_size, align), 300 assumed (LLC-warm
    struct pages (copy.warm_llc)) and 8 fit." The axes and assumptions named are those of the notes."""
    if not ev.counts:
        return ""
    axes = list(dict.fromkeys(n.split(" ", 1)[0] for n in ev.notes
                              if not n.startswith(("assumed: ", "a combination", "profile")) and " " in n))
    assumed = [n.removeprefix("assumed: ") for n in ev.notes if n.startswith("assumed: ")]
    what = {EXTRAPOLATED: f" (along {', '.join(axes)})" if axes else "",
            ASSUMED: f" ({'; '.join(assumed)})" if assumed else ""}
    parts = [f"{n:,} {label}{what.get(label, '')}" for label, n in reversed(ev.counts)]
    body = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"Evidence: its {ev.rows:,} rows are {body}."
