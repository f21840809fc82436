"""What the answers in a sweep rest on (workers.evidence labels), as the report, `table` and `compare` show it.

A modeled row's evidence is stored in the dataset as data (schema 7: `evidence`, `evidence_figure`,
`evidence_error`, `evidence_axes`, `evidence_assumptions`, and `evidence_note`, the same in words) for its
headline; this module reads the data, never the note's words. A metric the kernel gives exactly (memmap's
counts and bytes) is `kernel-checked` at the points a guest bound (KernelCheck.bound), `extrapolated`
elsewhere, as is any count the model computes without a cost. A cell or a group of rows rests on its
weakest row: fit < validated < kernel-checked < extrapolated < assumed. Rows of the measured and kernel
sources are observations and carry no label. A sweep of schema 5 or 6 stored the label and the note only:
its labels are read as stored and its notes listed as written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import polars as pl

from workers.dataset import EVIDENCE_AXIS, PART_EVIDENCE_AXES
from workers import interval
from workers.evidence import (ASSUMED, EXTRAPOLATED, FIT, LABELS, VALIDATED, WORK, arithmetic,
                              counted_label, describe, value_text, what_if)
from workers.model import validation_figures
from workers.units import parse_size

from .metrics import figure_filter
from .read import MODELED, ModelRows, collect_all

RANK = {label: i for i, label in enumerate(LABELS)}
MARK = {label: label[0].upper() for label in LABELS}  # F, V, K, E, A: one letter per label in tables
LEGEND = ("evidence marks (a cell's weakest row): F fit, V validated, K kernel-checked, E extrapolated, "
          "A assumed")
FRAGMENTS = 8  # notes listed under a table
ASSUMED_PREFIX = "assumed: "  # how a line names an assumption
ENTRY_BATCH_ROWS = 1_000_000  # rows whose evidence_axes _entries decodes at once (large memmap: +350 MiB, 3.2 s)


def _structured(rows: ModelRows) -> bool:
    """Whether the sweep stores its evidence as data (schema 7), not as the note alone."""
    return "evidence_axes" in rows.schema() and "evidence_assumptions" in rows.schema()


def _off(rows: ModelRows, metric: str) -> list[str]:
    """The names of the model's assumptions that do not bear on `metric` (the stored label is the
    headline's: a cost assumption behind a time is no part of a count's evidence)."""
    model = rows.model
    return [a.name for a in (model.calibration.assumptions if model is not None else ()) if not a.bears_on(metric)]


def label_expr(rows: ModelRows, metric: str) -> pl.Expr | None:
    """Per row, the label of its answer for `metric`; None when the sweep does not record evidence (a
    schema-4 folder)."""
    if "evidence" not in rows.schema():
        return None
    if rows.model is not None and arithmetic(rows.model, metric):  # the kernel's arithmetic (workers.evidence)
        label = counted_label(rows.model, metric)
        fit = rows.model.kernel.fit_points(metric) if arithmetic(rows.model, metric) == WORK else None
        if fit is not None and "kernel_build" in rows.schema():  # the recorded checks are of that build's costs
            other = pl.col("kernel_build").ne_missing(pl.lit(fit[0]))
            label = pl.when(other).then(pl.lit(EXTRAPOLATED)).otherwise(label)
        return pl.when(pl.col("evidence").is_not_null()).then(label)
    off = _off(rows, metric)
    stored = pl.col("evidence")
    if off and _structured(rows):
        # assumed only for assumptions that do not bear on this metric: the point is otherwise extrapolated
        kept = pl.col("evidence_assumptions").list.eval(pl.element().filter(~pl.element().is_in(off))).list.len()
        stored = pl.when((stored == ASSUMED) & (kept == 0)).then(pl.lit(EXTRAPOLATED)).otherwise(stored)
    return _own_figures(rows, metric, stored, off)


def _own_figures(rows: ModelRows, metric: str, stored: pl.Expr, off: list[str]) -> pl.Expr:
    """The label of a metric that is not the headline, by workers.evidence.only()'s rule (rows store the
    headline's): a fit or validated point of another metric's figure is no check of this one (assumed
    where an assumption that bears on it applies, else extrapolated), while this metric's own figures make
    their points fit, or validated where the answer is within the model's stated error of its kind."""
    model, profile = rows.model, rows.sweep.profile_object()
    if model is None or profile is None or metric == model.headline or what_if(model, profile):
        return stored  # a what-if profile's answers are assumed at every point
    columns = list(rows.schema())
    checked = stored.is_in([FIT, VALIDATED])
    if _structured(rows):
        kept = pl.col("evidence_assumptions").list.eval(pl.element().filter(~pl.element().is_in(off))).list.len()
        label = pl.when(checked & (kept > 0)).then(pl.lit(ASSUMED)).when(checked).then(pl.lit(EXTRAPOLATED)) \
            .otherwise(stored)
    else:
        label = pl.when(checked).then(pl.lit(EXTRAPOLATED)).otherwise(stored)
    q = interval.stated(model, profile).q.get(metric)
    own = [(f, FIT) for f in model.calibration.figures if f.metric == metric]
    own += [(f, VALIDATED) for f in validation_figures(model, profile) if f.metric == metric]
    for f, use in reversed(own):  # the first figure at a point decides, a fit one before a validation one
        at = figure_filter(model, f, columns)
        if at is None:
            continue
        if use == VALIDATED:
            if q is None:
                continue
            at = at & (_figure_error(metric, f).abs() <= q)
        label = pl.when(at & stored.is_not_null()).then(pl.lit(use)).otherwise(label)
    return label


def _figure_error(metric: str, f) -> pl.Expr:
    """A row's error against figure `f`, as workers.model.Figure.error() counts it: a bound ("10%+") is off
    only on its wrong side."""
    err = pl.col(metric).cast(pl.Float64) / f.published - 1.0
    return err.clip(upper_bound=0.0) if f.bound == ">=" else err.clip(lower_bound=0.0) if f.bound == "<=" else err


def _missed(rows: ModelRows, metric: str, note: pl.Expr) -> pl.Expr:
    """`note`, but at the point of one of `metric`'s own validation figures (not the headline's) the figure
    and how far the answer is from it, as workers.evidence words it for the headline."""
    model, profile = rows.model, rows.sweep.profile_object()
    if model is None or profile is None or metric == model.headline or metric not in rows.schema():
        return note
    q = interval.stated(model, profile).q.get(metric)
    columns = list(rows.schema())
    for f in reversed([f for f in validation_figures(model, profile) if f.metric == metric]):
        at = figure_filter(model, f, columns)
        if at is None or q is None:
            continue
        err = _figure_error(metric, f) * 100
        words = pl.format("{}: {}{}% from it, beyond the model's stated {}", pl.lit(f.id),
                          pl.when(err >= 0).then(pl.lit("+")).otherwise(pl.lit("")), err.round(1), pl.lit(f"{q:.1%}"))
        note = pl.when(at).then(words).otherwise(note)
    return note


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
    """What a set of modeled rows rests on: rows per label (strongest first); the lines that say what the
    extrapolated and assumed ones rest on (each axis or assumption once, most rows first); and the axes and
    the assumptions those lines name."""

    counts: tuple[tuple[str, int], ...] = ()
    notes: tuple[str, ...] = ()
    axes: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()

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
        return Evidence()
    value = pl.col(metric).is_not_null() if metric in rows.schema() else pl.lit(True)
    labelled = lf.filter(value).with_columns(label.alias("_label")).filter(pl.col("_label").is_not_null())
    # a point of another metric's figure (the stored note says "fit to ...") is weak for this one: say so
    name = metric.removeprefix("metric_")
    note = pl.when(pl.col("evidence").is_in([FIT, VALIDATED])) \
        .then(pl.lit(f"no figure of {name} here (") + pl.col("evidence_note") + pl.lit(")")) \
        .otherwise(pl.col("evidence_note"))
    weak = labelled.filter(pl.col("_label").is_in([EXTRAPOLATED, ASSUMED])).with_columns(
        _missed(rows, metric, note).alias("evidence_note"))
    counted = rows.model is not None and arithmetic(rows.model, metric)
    if counted:  # the kernel's arithmetic: the label says it all
        counts = labelled.group_by("_label").agg(pl.len().alias("n")).collect()
        return Evidence(counts=_ordered(counts))
    if not _structured(rows):
        counts, notes = collect_all([labelled.group_by("_label").agg(pl.len().alias("n")),
                                     weak.group_by("evidence_note").agg(pl.len().alias("n"))])
        return Evidence(counts=_ordered(counts), notes=tuple(
            n for n, _ in sorted(notes.drop_nulls("evidence_note").rows(), key=lambda r: (-r[1], r[0]))))
    off = _off(rows, metric)
    far = far_values(rows)
    if far is None:  # a model not registered here, or entries its axes' values do not account for
        return _summarize_entries(labelled, weak, off)
    # an entry of evidence_axes is a function of one axis's value, which far_values read from the parts' footers
    # (or the rows): the rows far along an axis are counted by their value, never by decoding each row's list
    # (a million rows' lists took a second to read, and the report asks this of several sections)
    hits = [(a, _among(a.column, far[a.name])) for a in rows.model.axes if far.get(a.name)]
    per_axis = [weak.filter(hit).group_by(pl.col(a.column).alias("param")).agg(pl.len().alias("n")) for a, hit in hits]
    none_far = ~pl.any_horizontal(*(hit for _, hit in hits)) if hits else pl.lit(True)
    counts, assumed, other, *found = collect_all([
        labelled.group_by("_label").agg(pl.len().alias("n")),
        weak.select(pl.col("evidence_assumptions").explode().alias("name")).drop_nulls()
        .filter(~pl.col("name").is_in(off)).group_by("name").agg(pl.len().alias("n")),
        # rows extrapolated with no axis far from a figure (a combination no figure has; a model without
        # figures): the producer's words for why, as written
        weak.filter(none_far & (pl.col("_label") == EXTRAPOLATED)).group_by("evidence_note").agg(pl.len().alias("n")),
        *per_axis,
    ])
    axes = [(a.name, *far[a.name][param], n) for (a, _), frame in zip(hits, found) for param, n in frame.rows()]
    axes = pl.DataFrame(axes, schema={"axis": pl.Utf8, "value": pl.Utf8, "relation": pl.Utf8, "reference": pl.Utf8,
                                      "ratio": pl.Float64, "n": pl.Int64}, orient="row")
    axes = axes.group_by("axis", "relation", "reference", "value").agg(pl.col("n").sum(), pl.col("ratio").max())
    return _evidence(counts, axes, assumed, other)


def _among(column: str, values) -> pl.Expr:
    """Whether a row's `column` is one of `values` (None among them: a null one is)."""
    known = [v for v in values if v is not None]
    hit = pl.col(column).is_in(known) if known else pl.lit(False)
    return hit | pl.col(column).is_null() if None in values else hit


def _summarize_entries(labelled: pl.LazyFrame, weak: pl.LazyFrame, off: list[str]) -> Evidence:
    """summarize() by each row's evidence_axes entries, where far_values cannot say which values are far."""
    axis = pl.col("evidence_axes").explode().struct
    counts, axes, assumed, other = collect_all([
        labelled.group_by("_label").agg(pl.len().alias("n")),
        weak.select(axis.field("axis"), axis.field("value"), axis.field("relation"), axis.field("ratio"),
                    axis.field("reference")).drop_nulls("axis")
        .group_by("axis", "relation", "reference", "value").agg(pl.len().alias("n"), pl.col("ratio").max()),
        weak.select(pl.col("evidence_assumptions").explode().alias("name")).drop_nulls()
        .filter(~pl.col("name").is_in(off)).group_by("name").agg(pl.len().alias("n")),
        weak.filter(pl.col("evidence_axes").list.len() == 0).filter(pl.col("_label") == EXTRAPOLATED)
        .group_by("evidence_note").agg(pl.len().alias("n")),
    ])
    return _evidence(counts, axes, assumed, other)


def _evidence(counts: pl.DataFrame, axes: pl.DataFrame, assumed: pl.DataFrame, other: pl.DataFrame) -> Evidence:
    """An Evidence from its counts by label, its far axes (axis, relation, reference, value, n, ratio), its
    assumptions (name, n) and the notes of extrapolated rows far along no axis (evidence_note, n)."""
    lines = _axis_lines(axes) + [(f"{ASSUMED_PREFIX}{name}", n) for name, n in assumed.rows()] + \
        [(note, n) for note, n in other.drop_nulls("evidence_note").rows()]
    lines.sort(key=lambda line: (-line[1], line[0]))
    names = [name for name, _ in sorted(assumed.rows(), key=lambda r: (-r[1], r[0]))]
    shown = list(dict.fromkeys(a for a, _ in sorted(
        axes.group_by("axis").agg(pl.col("n").sum()).rows(), key=lambda r: (-r[1], r[0]))))
    return Evidence(counts=_ordered(counts), notes=tuple(text for text, _ in lines), axes=tuple(shown),
                    assumptions=tuple(names))


def far_values(rows: ModelRows) -> dict[str, dict] | None:
    """axis name -> {param value: (value, relation, reference, ratio)}: the values of each axis that some modeled
    row's evidence_axes names, with its entry, read once per sweep and model (the distinct entries, _entries) and
    matched to the axis's values by the words the producer wrote them in (workers.evidence.value_text). None
    for a model not registered here, and when an entry matches no value of its axis or one value has two entries
    (then nothing is guessed: summarize counts the entries row by row)."""
    model = rows.model
    if model is None:
        return None

    def read() -> dict[str, dict] | None:
        by_axis = {a.name: a for a in model.axes if a.column in rows.schema()}
        # the values of ok rows, which the report has read already (Sweep.axis_values), by their words; every
        # modeled row's for an axis with an entry none of those has (a value where no point is feasible)
        ok_values = rows.axis_values()

        def by_text(name: str, values: list) -> dict[str, list]:
            texts: dict[str, list] = {}
            for v in values:
                texts.setdefault(value_text(by_axis[name], v), []).append(v)
            return texts

        texts = {name: by_text(name, ok_values[a.column]["value"].to_list() if a.column in ok_values else [])
                 for name, a in by_axis.items()}
        every: set[str] = set()
        far: dict[str, dict] = {}
        for name, value, relation, reference, ratio in _entries(rows).rows():
            params = texts.get(name, {}).get(value)
            if not params and name in by_axis and name not in every:
                every.add(name)
                column = pl.col(by_axis[name].column)
                texts[name] = by_text(name, rows.scan(MODELED).group_by(column).len().collect(engine="streaming")
                                      .to_series(0).to_list())
                params = texts[name].get(value)
            entry, known = (value, relation, reference, ratio), far.setdefault(name, {})
            if not params or any(known.get(p, entry) != entry for p in params):
                return None  # a value no row has, or one value with two entries (two profiles' figures)
            known.update(dict.fromkeys(params, entry))
        return far

    return rows.sweep.memo(("far_values", rows.name), read)


def _entries(rows: ModelRows) -> pl.DataFrame:
    """The distinct evidence_axes entries of the model's rows (axis, value, relation, reference, ratio): from the
    parts' footers (PART_EVIDENCE_AXES) when every part lists them, else read from the rows, batch by batch (the
    lists of all rows at once held 2 GB; a million rows' took a second to decode)."""
    columns = ["axis", "value", "relation", "reference", "ratio"]
    schema = {c: EVIDENCE_AXIS.to_schema()[c] for c in columns}
    listed = [(meta.metadata or {}).get(PART_EVIDENCE_AXES.encode()) for meta in rows.sweep.footers(rows.name).values()]
    if all(entries is not None for entries in listed):
        found = [e for entries in listed for e in json.loads(entries)]
        return pl.DataFrame(found, schema=schema).unique() if found else pl.DataFrame(schema=schema)
    axis = pl.col("evidence_axes").explode().struct
    return pl.concat([lf.select(*(axis.field(c) for c in columns)).drop_nulls("axis").unique()
                      .collect(engine="streaming") for lf in rows.scan_batches(MODELED, batch_rows=ENTRY_BATCH_ROWS)]
                     ).unique()


def _ordered(counts: pl.DataFrame) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(((lab, int(n)) for lab, n in counts.select("_label", "n").iter_rows()), key=lambda c: RANK[c[0]]))


def _axis_lines(axes: pl.DataFrame) -> list[tuple[str, int]]:
    """One line per axis and distance (relation, reference): its values, with the farthest ratio when several
    share it: "namespace_size 112GiB, 128GiB, 144GiB, ..., 16TiB (1018 values): up to 164x the largest with a
    figure (100GiB)"; and the rows it covers (a row has one value of an axis: its values' rows add up)."""
    lines: dict[tuple[str, str, str], _Line] = {}
    for axis, relation, reference, value, n, ratio in sorted(
            axes.select("axis", "relation", "reference", "value", "n", "ratio").rows(), key=lambda r: (-r[4], r[3])):
        line = lines.setdefault((axis, relation, reference), _Line())
        line.values.append(value)
        line.rows += n
        if ratio is not None:
            line.farthest = max(line.farthest, ratio)
    out = []
    for (axis, relation, reference), line in lines.items():
        several = len(line.values) > 1
        far = describe(relation, line.farthest or None, reference, farthest=several)
        out.append((f"{axis} {_values(line.values)}: {far}", line.rows))
    return out


@dataclass
class _Line:
    """One line of notes: the values of its axis, their rows and the farthest ratio."""

    values: list[str] = field(default_factory=list)
    rows: int = 0
    farthest: float = 0.0


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
    struct pages (copy.warm_llc)) and 8 fit." The axes and assumptions named are those of the rows."""
    if not ev.counts:
        return ""
    what = {EXTRAPOLATED: f" (along {', '.join(ev.axes)})" if ev.axes else "",
            ASSUMED: f" ({'; '.join(ev.assumptions)})" if ev.assumptions else ""}
    parts = [f"{n:,} {label}{what.get(label, '')}" for label, n in reversed(ev.counts)]
    body = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"Evidence: its {ev.rows:,} rows are {body}."
