"""What a model's answer rests on: one label per row, derived from what the model declares.

A model declares its evidence domain once, in its contract: the points of its fit figures
(`calibration.figures`), the metrics a real kernel checks exactly (`kernel.exact`) and the assumptions
its answers may rest on (`calibration.assumptions`); the profile adds the points of its validation
figures (`[[validation]]`, never fit). From that, each modeled row gets a label and a note:

- `fit`: the row is the point of a figure the profile's costs were fit to;
- `validated`: the point of a validation figure (published elsewhere, predicted, never fit) whose error
  against it is within the model's stated error of that kind (workers.interval: what its bars rest on); the
  note gives the error. One beyond it, or of a model that states none, is not validated: its note says
  how far off it is;
- `kernel-checked`: the metric asked about is one the kernel gives and the model must equal (counts,
  bytes: workers.guest), at a point a guest bound with equal counts in the kernel results the project
  records (KernelCheck.bound); elsewhere the same count, and any count or size the model computes
  without a cost (Model.arithmetic: memmap's DRAM bytes), is the kernel's arithmetic, `extrapolated`. A
  count of the kernel's work (KernelCheck.work: memmap's instructions, operation counts x a build's
  instructions per operation) is `fit` at the points of the kernel rows its costs were fit to,
  `kernel-checked` where another guest's count agreed within the fit's leave-one-out error, and
  `extrapolated` elsewhere;
- `extrapolated`: none of these; the note names each axis whose value no figure has, and how far it
  lies from the values that have one ("namespace_size 4TiB: 41x the largest with a figure (100GiB)");
- `assumed`: an assumption applies (the note names it), or the profile was not fit for this model.

A fit or validation point keeps its label whatever else applies: its number was checked against a
published one. The label is per metric: a metric other than the headline is fit or validated only at its
own figures' points (`only()`; a validated speedup at a fit time's point), and rows store the headline's,
which analysis/evidence.py turns into another metric's by the same rule. Otherwise `assumed` is the weaker label and wins over `extrapolated`; the note lists
both. Rows of the measured and kernel sources are observations, not answers: their evidence is null.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from . import interval
from .dataset import EVIDENCE, EVIDENCE_AXIS
from .model import Figure, Model, figure_frame, validation_figures
from .profiles import Profile, calibration_status
from .units import format_size

FIT, VALIDATED, KERNEL_CHECKED, EXTRAPOLATED, ASSUMED = LABELS = (
    "fit", "validated", "kernel-checked", "extrapolated", "assumed")
# How far an axis's value lies from the values some figure has (`relation` of an evidence_axes entry)
NO_FIGURE, BETWEEN, ABOVE, BELOW = RELATIONS = ("no figure", "between", "above", "below")
AXIS = EVIDENCE_AXIS
# The evidence columns (workers.dataset.EVIDENCE), as data that polars, duckdb and pyarrow filter on and
# analysis reads, never the note: the label; the figure a fit or validation point is at and its error
# against a validation figure; each axis whose value no figure has (AXIS: the axis, the value as its label,
# RELATIONS, how many times past the range, the values with figures it is measured from); the assumptions
# that apply (their names, and a what-if profile's reason); and the note, the same in words for a reader.
COLUMNS = {name: dtype for name, dtype, *_ in EVIDENCE}
AT_FIGURE = "at the point of "  # a what-if profile's answer at a figure's point
SEP = "; "  # between the parts of a note


@dataclass(frozen=True, kw_only=True, slots=True)
class Domain:
    """Where a model's answers under one profile were checked: the fit and validation points, each axis's
    values that some figure has, and what makes every answer of the profile an assumption (or "")."""

    fit: frozenset[str]  # point keys (_key) of the fit figures
    validated: frozenset[str]  # point keys of the validation figures
    values: dict[str, list]  # param column -> the values the figures have, in order
    what_if: str  # why no row of this profile rests on the fit, or ""
    figure_ids: dict[str, str]  # point key -> the first figure's id at it
    checks: pl.DataFrame  # key, id, metric, published: the validation figures, to measure a row against
    fits: pl.DataFrame  # key, id, metric: the fit figures, to narrow the domain to one metric's (only())
    stated: dict[str, float]  # metric -> the model's stated error of its kind (workers.interval: the held-out
    # residual its error bars are built from); empty when the profile states none


def domain(model: Model, profile: Profile) -> Domain:
    """The evidence domain of `model` under `profile` (module doc)."""
    fit, val = model.calibration.figures, validation_figures(model, profile)
    frames = {use: _keyed(model, figs) for use, figs in (("fit", fit), ("validation", val)) if figs}
    both = pl.concat(list(frames.values())) if frames else None
    values = {a.column: ([] if both is None else both[a.column].unique(maintain_order=True).to_list())
              for a in model.axes}
    ids = {} if both is None else dict(zip(both["key"].to_list()[::-1], both["id"].to_list()[::-1]))
    checks = pl.DataFrame({"key": frames["validation"]["key"], "id": [f.id for f in val],
                           "check_metric": [f.metric for f in val], "published": [f.published for f in val],
                           "bound": [f.bound for f in val]}) \
        if "validation" in frames else pl.DataFrame(schema={"key": pl.UInt64, "id": pl.Utf8, "check_metric": pl.Utf8,
                                                            "published": pl.Float64, "bound": pl.Utf8})
    fits = pl.DataFrame({"key": frames["fit"]["key"], "id": [f.id for f in fit], "metric": [f.metric for f in fit]}) \
        if "fit" in frames else pl.DataFrame(schema={"key": pl.UInt64, "id": pl.Utf8, "metric": pl.Utf8})
    return Domain(fit=frozenset(frames["fit"]["key"]) if "fit" in frames else frozenset(),
                  validated=frozenset(frames["validation"]["key"]) if "validation" in frames else frozenset(),
                  values=values, what_if=what_if(model, profile), figure_ids=ids, checks=checks, fits=fits,
                  stated=interval.stated(model, profile).q)


def only(dom: Domain, metric: str) -> Domain:
    """The domain of one metric that is not the headline: a figure of another metric at a point checks
    nothing of this one, so only this metric's fit and validation figures make a point fit or validated
    (memmap's validation speedups sit at the points of fit times). The axes' values stay every figure's."""
    fits = dom.fits.filter(pl.col("metric") == metric)
    checks = dom.checks.filter(pl.col("check_metric") == metric)
    keys, ids = fits["key"].to_list() + checks["key"].to_list(), fits["id"].to_list() + checks["id"].to_list()
    return replace(dom, fit=frozenset(fits["key"]), validated=frozenset(checks["key"]), checks=checks,
                   figure_ids=dict(zip(keys[::-1], ids[::-1])))


def _keyed(model: Model, figures: tuple[Figure, ...]) -> pl.DataFrame:
    frame = figure_frame(model, figures)
    return frame.with_columns(_key(model), pl.Series("id", [f.id for f in figures]))


def _key(model: Model) -> pl.Expr:
    """One 64-bit hash per point of its axis values, to match rows against figure points."""
    return pl.struct([pl.col(a.column).cast(a.dtype) for a in model.axes]).hash(seed=0).alias("key")


def what_if(model: Model, profile: Profile) -> str:
    """Why the profile's answers for this model are not the fitted ones: its fitted costs are not
    calibrated, or it changes entries of a fitted base profile. "" when they are."""
    free = model.calibration.free_params
    if not free:
        return ""
    status = calibration_status(profile, [(p.section, p.key) for p in free])
    if not status.startswith("calibrated"):
        return f"profile {profile.name} {status.split(' (')[0].lower()} (what-if)"
    sections = {model.name} | {p.section for p in free}
    changed = sorted(f"{s}.{k}" for s, k in profile.overrides if s in sections)
    if changed:
        return (f"profile {profile.name}: sets {', '.join(changed)} apart from the costs fit in "
                f"{profile.base} (what-if)")
    return ""


def label(model: Model, profile: Profile, rows: pl.DataFrame, metric: str | None = None,
          dom: Domain | None = None) -> pl.DataFrame:
    """The evidence COLUMNS for each row of `rows` (param_* columns, and the metric columns an assumption
    reads), the same height and order, for the answer `metric` (default: the headline)."""
    dom = dom or domain(model, profile)
    metric = metric or model.headline
    n = rows.height
    if n == 0:
        return pl.DataFrame(schema=COLUMNS)
    if arithmetic(model, metric) is not None:
        # a count or a size of the kernel's own arithmetic, or a count of its work: no cost of a machine, so
        # no cache state or machine; checked where a guest bound the point and agreed (KernelCheck.bound)
        out = rows.with_columns(counted_label(model, metric).alias("_evidence"),  # a literal broadcasts
                                counted_note(model, metric).alias("_note"))
        return _frame(n, out["_evidence"].alias("evidence"), note=out["_note"].alias("evidence_note"))
    if metric != model.headline:
        dom = only(dom, metric)
    keys = rows.select(_key(model)).to_series()
    check = _validation(rows, keys, dom)
    axes, axes_text = _axes(model, rows, dom)
    assumed = _assumed(model, profile, rows, dom, metric)
    parts = pl.DataFrame({
        "fit": keys.is_in(list(dom.fit)), "validated": keys.is_in(list(dom.validated)),
        "id": keys.replace_strict(dom.figure_ids, default=None, return_dtype=pl.Utf8),
        "axes": axes_text, "assumed": assumed.list.eval("assumed: " + pl.element()).list.join(SEP),
        "within": check["within"], "check": check["check"], "error": check["error"],
    })
    # a fit point's number was checked against a published one, unless the profile is a what-if; a
    # validation point's too, when its error is within the model's stated error (else it says how far off)
    fit = pl.col("fit") & pl.lit(not dom.what_if)
    validated = pl.col("validated") & pl.lit(not dom.what_if) & pl.col("within")
    off = pl.col("validated") & ~pl.col("fit") & ~pl.col("within")  # a validation point, too far off
    where = pl.when(off).then(pl.col("id") + pl.lit(": ") + pl.col("check")) \
        .when(pl.col("fit") | pl.col("validated")).then(pl.lit(AT_FIGURE) + pl.col("id")) \
        .otherwise(pl.col("axes"))
    some = pl.col("assumed").str.len_bytes() > 0
    out = parts.select(
        pl.when(fit).then(pl.lit(FIT))
        .when(validated).then(pl.lit(VALIDATED))
        .when(some).then(pl.lit(ASSUMED))
        .otherwise(pl.lit(EXTRAPOLATED)).alias("evidence"),
        pl.when(pl.col("fit") | pl.col("validated")).then(pl.col("id")).alias("evidence_figure"),
        pl.when(~pl.col("fit")).then(pl.col("error")).alias("evidence_error"),  # against evidence_figure
        pl.when(fit).then(pl.lit("fit to ") + pl.col("id"))
        .when(validated).then(pl.lit("validated by ") + pl.col("id") + pl.lit(", ") + pl.col("check"))
        .when(some).then(pl.concat_str([where, pl.col("assumed")], separator=SEP, ignore_nulls=True))
        .otherwise(where).alias("evidence_note"),
    )
    return out.with_columns(axes.alias("evidence_axes"), assumed.alias("evidence_assumptions")).select(list(COLUMNS))


def _frame(n: int, labels: pl.Series, note: pl.Series) -> pl.DataFrame:
    """COLUMNS for rows with a label and a note only (no figure, error, axes or assumptions)."""
    return pl.DataFrame({"evidence": labels, "evidence_figure": pl.Series([None] * n, dtype=pl.Utf8),
                         "evidence_error": pl.Series([None] * n, dtype=pl.Float64),
                         "evidence_axes": _lists("evidence_axes", [], AXIS, n),
                         "evidence_assumptions": _lists("evidence_assumptions", [], pl.Utf8, n),
                         "evidence_note": note})


def _validation(rows: pl.DataFrame, keys: pl.Series, dom: Domain) -> pl.DataFrame:
    """Per row at a validation figure's point: `within` (its error against the figure is within the model's
    stated error), `error` and `check`, the error in words; false and null elsewhere."""
    n = rows.height
    within, check, error = [False] * n, [None] * n, [None] * n
    if dom.checks.height:
        at = {k: i for i, k in enumerate(dom.checks["key"].to_list())}
        hits = np.flatnonzero(keys.is_in(list(at)).to_numpy())  # a chunk's few validation points, not every row
        for i, k in zip(hits.tolist(), keys.gather(hits).to_list()):
            j = at[k]
            metric, published, bound = dom.checks.row(j)[2:]
            value = rows[metric][i] if metric in rows.columns else None
            if value is None or not published:
                check[i] = "no value to set against it"
                continue
            err = error[i] = float(value) / published - 1
            if bound != "=":  # a bound ("10%+") is off only on its wrong side
                err = error[i] = min(err, 0.0) if bound == ">=" else max(err, 0.0)
            q = dom.stated.get(metric)
            if q is None:
                check[i] = f"{err:+.1%} from it (the model states no error: no leave-one-out fit)"
            elif abs(err) <= q:
                within[i], check[i] = True, f"{err:+.1%} (within the model's stated {q:.1%})"
            else:
                check[i] = f"{err:+.1%} from it, beyond the model's stated {q:.1%}"
    return pl.DataFrame({"within": pl.Series(within, dtype=pl.Boolean), "check": pl.Series(check, dtype=pl.Utf8),
                         "error": pl.Series(error, dtype=pl.Float64)})


EXACT, COUNTED, WORK = "exact", "counted", "work"


def arithmetic(model: Model, metric: str) -> str | None:
    """Whether `metric` is the kernel's arithmetic or work rather than an answer priced with a machine's
    costs: EXACT when a guest gives it and the model must equal it (KernelCheck.exact), WORK when it is
    counts times a kernel build's fitted costs per operation (KernelCheck.work: instructions), COUNTED when
    only the model computes it without a cost (Model.arithmetic), None for an answer that rests on costs."""
    if model.kernel is not None and metric in model.kernel.exact:
        return EXACT
    if model.kernel is not None and metric in model.kernel.work:
        return WORK
    return COUNTED if metric in model.arithmetic else None


def counted_label(model: Model, metric: str) -> pl.Expr:
    """Over param_* columns, the label of an arithmetic() metric: `fit` on the points a work count's costs
    were fit to (KernelCheck.fitted), `kernel-checked` where a guest bound the point and agreed on it
    (KernelCheck.bound, from the kernel results the project records), `extrapolated` elsewhere."""
    kind, label = arithmetic(model, metric), pl.lit(EXTRAPOLATED)
    if kind in (EXACT, WORK):
        label = pl.when(model.kernel.bound_points(metric)).then(pl.lit(KERNEL_CHECKED)).otherwise(label)
    if kind == WORK and (fit := model.kernel.fit_points(metric)) is not None:
        label = pl.when(fit[1]).then(pl.lit(FIT)).otherwise(label)  # a fit row is fit, whatever else checked it
    return label


def counted_note(model: Model, metric: str) -> pl.Expr:
    """The note beside counted_label(), in words."""
    name, kind = metric.removeprefix("metric_"), arithmetic(model, metric)
    label = counted_label(model, metric)
    if kind == WORK:
        fit = model.kernel.fit_points(metric)
        build = fit[0] if fit else "a kernel build"
        what = f"{name}: operation counts x build {build}'s instructions per operation"
        return pl.when(label == FIT).then(pl.lit(f"{what}, fit to its guest's counts at this point and others")) \
            .when(label == KERNEL_CHECKED).then(pl.lit(f"{what}, within the fit's leave-one-out error of a guest's "
                                                       "count at this point")) \
            .otherwise(pl.lit(f"{what}; no guest counted this point"))
    unchecked = "no guest bound this point" if kind == EXACT else "no guest gives it"
    differs = model.kernel.differing_points(metric) if kind == EXACT else pl.lit(False)
    return pl.when(label == KERNEL_CHECKED).then(pl.lit(f"{name}: the kernel's own arithmetic, equal to a guest's at "
                                                        "this point")) \
        .when(differs).then(pl.lit(f"{name}: the model's arithmetic, which a guest counted otherwise at this point "
                                   "(the kernel results the project records)")) \
        .otherwise(pl.lit(f"{name}: the kernel's own arithmetic; {unchecked}"))


def _assumed(model: Model, profile: Profile, rows: pl.DataFrame, dom: Domain, metric: str) -> pl.Series:
    """Per row, the names of the assumptions that apply to `metric` (a what-if profile's reason first), as a
    list; empty where none does. Built per combination of the assumptions that apply (a few), then joined."""
    n = rows.height
    fixed = [dom.what_if] if dom.what_if else []
    bearing = [a for a in model.calibration.assumptions if a.bears_on(metric)]
    if not bearing:
        return _lists("assumed", fixed, pl.Utf8, n)
    columns = {}
    for i, a in enumerate(bearing):
        applies = pl.Series(a.applies(rows, profile), dtype=pl.Boolean).fill_null(False)
        columns[f"_{i}"] = applies if applies.len() == n else pl.repeat(applies[0], n, eager=True)  # one for all
    flags = pl.DataFrame(columns)
    combos = flags.unique()
    names = [fixed + [a.name for a, on in zip(bearing, combo) if on] for combo in combos.rows()]
    table = combos.with_columns(pl.Series("assumed", names, dtype=pl.List(pl.Utf8)))
    return flags.join(table, on=list(flags.columns), how="left", maintain_order="left")["assumed"]


def _axes(model: Model, rows: pl.DataFrame, dom: Domain) -> tuple[pl.Series, pl.Series]:
    """Per row, the axes whose value no figure has (a list of AXIS), and the same in words: each with how far
    it is from the values that have one ("a combination ... no single figure has" when every value has one
    but the point is none of the figures'). Each distinct combination of the far axes' values is described
    once, and joined back to the rows (a chunk has a million rows and a few thousand combinations)."""
    n = rows.height
    if not dom.fit and not dom.validated:
        return (_lists("axes", [], AXIS, n),
                _repeat("axes", f"{model.name} has no published figure of its own", n))
    entries, texts, columns = [], [], []
    for a in model.axes:
        if a.column not in rows.columns:
            continue
        have, seen = dom.values[a.column], rows[a.column].unique().to_list()
        far = {v: _far(a, v, have) for v in seen if v not in have and (v is not None or None not in have)}
        if not far:
            continue
        col = pl.col(a.column)
        known = [v for v in far if v is not None]
        hit = col.is_in(known) if known else pl.lit(False)
        if None in far:
            hit = hit | col.is_null()

        def field(i: int, dtype) -> pl.Expr:
            mapping = {v: f[i] for v, f in far.items() if v is not None}
            e = col.replace_strict(mapping, default=None, return_dtype=dtype) if mapping else pl.lit(None, dtype=dtype)
            return pl.when(col.is_null()).then(pl.lit(far[None][i], dtype=dtype)).otherwise(e) if None in far else e

        columns.append(a.column)
        entries.append(pl.when(hit).then(pl.struct(
            pl.lit(a.name).alias("axis"), field(0, pl.Utf8).alias("value"), field(1, pl.Utf8).alias("relation"),
            field(2, pl.Float64).alias("ratio"), field(3, pl.Utf8).alias("reference"))))
        texts.append(pl.when(hit).then(pl.lit(f"{a.name} ") + field(0, pl.Utf8) + pl.lit(": ") + field(4, pl.Utf8)))
    combination = "a combination of values no single figure has"
    if not entries:
        return _lists("axes", [], AXIS, n), _repeat("axes", combination, n)
    combos = rows.select(columns).unique().with_row_index("_combo")
    # the entries in long form, axis by axis, gathered per combination (polars builds a list of structs
    # ten times faster so than by concat_list)
    long = pl.concat([combos.select("_combo", e.alias("_entry")).filter(pl.col("_entry").is_not_null())
                      for e in entries])
    lists = long.group_by("_combo", maintain_order=True).agg(pl.col("_entry").cast(AXIS).alias("_list"))
    described = combos.with_columns(pl.concat_str(texts, separator=SEP, ignore_nulls=True).alias("_text")) \
        .join(lists, on="_combo", how="left").with_columns(pl.col("_list").fill_null(pl.lit([], dtype=pl.List(AXIS))))
    out = rows.select(columns).join(described.drop("_combo"), on=columns, how="left", nulls_equal=True,
                                    maintain_order="left")
    text = out.select(pl.when(pl.col("_text").str.len_bytes() == 0).then(pl.lit(combination))
                      .otherwise(pl.col("_text")).alias("axes"))["axes"]
    return out["_list"].alias("axes"), text


def _lists(name: str, items: list, inner, n: int) -> pl.Series:
    """The same list on each of n rows (built once and repeated: a Python list of n lists is slow)."""
    return pl.Series(name, [items], dtype=pl.List(inner)).new_from_index(0, n)


def _repeat(name: str, text: str | None, n: int) -> pl.Series:
    return pl.repeat(text, n, dtype=pl.Utf8, eager=True).alias(name)


def _far(axis, value, have: list) -> tuple[str, str, float | None, str, str]:
    """How far `value` of `axis` is from the values some figure has: (the value as its label, RELATIONS,
    the ratio past the range or None, the values it is measured from, the words)."""
    text = value_text(axis, value)
    numbers = [v for v in have if isinstance(v, (int, float)) and not isinstance(v, bool)]
    # an order is an exponent: how many times larger says nothing, so it reads as a value no figure has
    if axis.kind in ("size", "extent", "int", "float") and numbers and min(numbers) > 0 \
            and isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        lo, hi = min(numbers), max(numbers)
        if value > hi:
            found = (ABOVE, value / hi, value_text(axis, hi))
        elif value < lo:
            found = (BELOW, lo / value, value_text(axis, lo))
        else:
            found = (BETWEEN, None, f"{value_text(axis, lo)} .. {value_text(axis, hi)}")
    else:
        found = (NO_FIGURE, None, ", ".join(value_text(axis, v) for v in have))
    return (text, *found, describe(*found))


def describe(relation: str, ratio: float | None, reference: str, farthest: bool = False) -> str:
    """An evidence_axes entry's distance in words, for the note and for analysis alike: "41x the largest
    with a figure (100GiB)", "1/512 of the smallest with a figure (1GiB)", "between values with figures
    (4KiB .. 2MiB)", "no figure (figures at 0)"; `farthest` for several values' farthest ("up to 41x")."""
    if relation == ABOVE:
        return f"{'up to ' if farthest else ''}{_ratio(ratio)}x the largest with a figure ({reference})"
    if relation == BELOW:
        return f"{'down to ' if farthest else ''}1/{_ratio(ratio)} of the smallest with a figure ({reference})"
    if relation == BETWEEN:
        return f"between values with figures ({reference})"
    return f"no figure (figures at {reference})"


def value_text(axis, value) -> str:
    """A value as the notes give it: a count of bytes as a size (start_offset 10MiB), else the axis's label."""
    if axis.unit == "bytes" and isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return format_size(value)
    return axis.label(value)


def _ratio(x: float) -> str:
    return f"{x:.0f}" if x >= 10 else f"{x:.1f}"
