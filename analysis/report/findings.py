"""Key findings: a few sentences a reader of the report should take away, computed from this sweep.

Each finding is one sentence with its numbers and the configuration they hold
for, and the id of the figure that shows it. The sentences are declared by the
models (`Report.findings`: a `Medians`, workers/findings.py, or a `Hook`,
workers/hooks.py: a function of the model's own that returns a Sentence) and
evaluated here by one generic path each, model by model in sweep order, each
model's declarations in order, then `published` (model vs published figures).
Nothing is hard-coded: every number is an aggregate of the sweep's ok modeled
rows (lazy polars), and a finding whose rows or columns the sweep does not have
is left out. `Finding.data` keeps the numbers the sentence quotes, so tests can
check the sentence against the rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import polars as pl

from analysis import evidence
from analysis.kernel import checked as kernel_checked
from analysis.kernel import gains as kernel_gains
from analysis.metrics import HookRows, figure_error, published_comparison
from analysis.read import ModelRows, Sweep, collect_all, cond_expr
from analysis.tables import bar_parts
from workers import hooks, interval
from workers.dataset import errors
from workers.findings import Clause, Medians, Pick
from workers.hooks import Group, Hook, Sentence
from workers.model import Model
from workers.plots import Cond, cond_columns
from workers.units import bytes_text

# What a finding's evaluation may raise on a sweep of an older schema or an unexpected dtype: it is left out.
SKIP = (pl.exceptions.ColumnNotFoundError, pl.exceptions.SchemaError, pl.exceptions.InvalidOperationError)


@dataclass(frozen=True, kw_only=True)
class Finding:
    text: str
    figure: str  # id of the figure that shows it (an anchor in report.html)
    data: dict = field(default_factory=dict)
    id: str = ""  # "<model>/<declaration id>"; "published" for the parity finding
    evidence: str = ""  # what its rows rest on (analysis.evidence.sentence), "" when not recorded


def key_findings(sweep: Sweep) -> list[Finding]:
    """Every finding this sweep's rows support, in reading order: first, when there are any, the rows that are
    errors and not results."""
    out = failed(sweep)
    for rows in map(sweep.rows, sweep.named_models()):  # the figures' order; a model without rows has none (ModelRows.modeled)
        model = rows.model
        for decl in (model.report.findings if model is not None else ()):
            try:
                found = evaluate(rows, model, decl)
            except SKIP:
                found = None  # a sweep of an older schema, or a model without that axis
            if found is not None:
                out.append(found)
    try:
        found = published(sweep)
    except SKIP:
        found = None
    return out + ([found] if found is not None else []) + kernel(sweep) + kernel_gain(sweep)


def failed(sweep: Sweep) -> list[Finding]:
    """The sweep's error rows, per model and source with their distinct reasons (workers.dataset.errors, the
    wording of `run` and `status`), read from the rows of the models whose manifest records count any."""
    models = {r.get("model") for r in sweep.manifest.get("parts", {}).values() if r.get("status", {}).get(errors.ERROR)}
    frames = [sweep.scan(m, source=None).filter(pl.col("status") == errors.ERROR)
              .group_by("model", "source", "reason").len() for m in sweep.models if m in models]
    found = errors.from_rows(pl.concat(collect_all(frames))) if frames else {}
    if not found:
        return []
    said = errors.lines(found)
    text = f"{said[0].removesuffix(':')}: " + "; ".join(line.strip() for line in said[1:]) + "."
    return [Finding(text=text, figure="", id="errors", data={k: v.rows for k, v in found.items()})]


def kernel(sweep: Sweep) -> list[Finding]:
    """Per model with kernel rows: on how many configurations the model's counts equal the real kernel's, and
    where they differ, what and by how much (analysis.kernel)."""
    out = []
    for rows, df, a in kernel_checked(sweep):
        name = lambda ms: ", ".join(m.removeprefix("metric_").replace("_", " ") for m in ms)  # noqa: E731
        text = (f"The model's {rows.name} counts ({name(a.checked)}) and feasibility equal the real kernel's "
                f"({', '.join(a.kernels)}) on {a.agree} of {a.configurations} configurations ({a.ok} bound, "
                f"{a.configurations - a.ok} refused by the kernel)")
        if a.unchecked:
            text += f"; the kernel does not give {name(a.unchecked)}, so they are unchecked"
        off = df.filter(~pl.col("agrees"))
        if off.height:
            keys = [c for c in df.columns if c.startswith("param_")]
            first = off.row(0, named=True)
            where = ", ".join(f"{k.removeprefix('param_')}={rows.label(k, first[k])}" for k in keys)
            text += f"; they differ in {off.height}, e.g. {where}: {first['differs']}"
        out.append(Finding(text=text + ".", figure="model_vs_kernel", id=f"{rows.name}/kernel",
                           data={"configurations": a.configurations, "agree": a.agree, "ok": a.ok}))
    return out


def kernel_gain(sweep: Sweep) -> list[Finding]:
    """Per model with kernel rows of several variants: each variant's gain over the baseline in the real
    kernel's own count (median and range over the configurations), and how far the model's gain on the
    same count is from it at worst (analysis.kernel.gains)."""
    out = []
    for rows in map(sweep.rows, sweep.models):
        df = kernel_gains(rows)
        if df.is_empty():
            continue
        cmp, metric = rows.model.report.comparison, rows.model.kernel.sampled.removeprefix("metric_")
        per = df.group_by("variant", maintain_order=True).agg(
            pl.len().alias("n"), pl.col("kernel_gain").median().alias("median"),
            pl.col("kernel_gain").min().alias("min"), pl.col("kernel_gain").max().alias("max"),
            (pl.col("model_gain") / pl.col("kernel_gain") - 1).abs().max().alias("off"),
            pl.col("model_time_gain").median().alias("time"))
        parts = [f"{r['variant']} {r['median']:.2f}x ({r['min']:.2f}-{r['max']:.2f}x)" for r in per.iter_rows(named=True)]
        off = per["off"].drop_nulls()
        text = (f"In the real kernel ({', '.join(sorted(set(df['env_guest_kernel'])))}), {metric.replace('_', ' ')} "
                f"of {cmp.label} {cmp.baseline} over each {cmp.label}'s, median (range) over "
                f"{per['n'].max()} configurations: {'; '.join(parts)}")
        if off.len():
            text += (f". The model's gain on the same count is within {_percent(off.max())} of the kernel's "
                     "at every configuration; its time gains rest on the profile, not on instructions")
        out.append(Finding(text=text + ".", figure="kernel_gains", id=f"{rows.name}/kernel_gain",
                           data={r["variant"]: r for r in per.iter_rows(named=True)}))
    return out


def _percent(x: float) -> str:
    """A relative error as a percentage with the digits it holds (0.2%, 3%, 15%)."""
    v = 100 * x
    return f"{v:.2g}%" if v < 10 else f"{v:.0f}%"


def evaluate(rows: ModelRows, model: Model, decl: Medians | Hook) -> Finding | None:
    """One declared finding of `model` (the registered model of `rows`) on its rows, or None when the
    sweep lacks them."""
    if isinstance(decl, Hook):
        return _hooked(rows, decl)
    found = _medians(rows, decl) if isinstance(decl, Medians) else None
    if found is None:
        return None
    text, data = found
    return Finding(text=text, figure=decl.figure, data=data, id=f"{rows.name}/{decl.id}",
                   evidence=_evidence(rows, decl))


def _hooked(rows: ModelRows, decl: Hook) -> Finding | None:
    """A finding a model computes itself (workers.hooks): its Sentence filled and its evidence said."""
    said = HookRows(rows.sweep, rows.name).call(decl, Sentence)
    if said is None:
        return None
    values, data = _said(said.values, said.fmt)
    lf = said.rows
    ev = "" if lf is None or not said.metric else evidence.sentence(
        evidence.summarize(rows, lf.filter(pl.col(said.metric).is_not_null()), said.metric))
    return Finding(text=said.text.format(**values), figure=decl.figure, data=data, id=f"{rows.name}/{decl.id}",
                   evidence=ev)


def _said(quoted: dict, fmt: str) -> tuple[dict, dict]:
    """(template values, data) of a Sentence's values: a Group or a list of them as a quoted name, a number
    written with `fmt`, anything else as it is."""
    values, data = {}, {}
    for name, v in quoted.items():
        if isinstance(v, Group) or (isinstance(v, list) and v and isinstance(v[0], Group)):
            got = _quote_one(name, v, fmt)
            values.update(got[0])
            data.update(got[1])
        else:
            values[name] = _Value(v, _number(v, fmt) if isinstance(v, float) else str(v))
            data[name] = v
    return values, data


def _evidence(rows: ModelRows, decl: Medians) -> str:
    """What the finding's rows rest on: the modeled ok rows of its metric and its `where`."""
    metric = decl.metric
    lf = rows.modeled(metric)
    if lf is None:
        return ""
    lf = _where(rows, lf, decl.where)
    return evidence.sentence(evidence.summarize(rows, lf.filter(pl.col(metric).is_not_null()), metric))


def _where(rows: ModelRows, lf: pl.LazyFrame, conds) -> pl.LazyFrame:
    """The rows of `lf` that satisfy every condition of a declaration's `where`."""
    schema, varying = rows.schema(), set(rows.varying())
    for c in conds:
        e = cond_expr(c, schema, varying)
        if e is not None:  # None: an Either whose when_varying axis takes one value holds everywhere
            lf = lf.filter(e)
    return lf


# -- formatting -------------------------------------------------------------------------------------------
class _Value:
    """A placeholder's value: its text by default, the raw number under a format spec ("{x_at:g}"); a
    list formats each item and joins them with ", "."""

    __slots__ = ("raw", "text")

    def __init__(self, raw: object, text: str) -> None:
        self.raw, self.text = raw, text

    def __format__(self, spec: str) -> str:
        if not spec:
            return self.text
        if isinstance(self.raw, list):
            return ", ".join(format(v, spec) for v in self.raw)
        return format(self.raw, spec)

    def __str__(self) -> str:
        return self.text


def _number(v: float, fmt: str) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "-"
    return bytes_text(v) if fmt == "bytes" else format(v, fmt)


# -- rows -------------------------------------------------------------------------------------------------
# -- groups and quotes --------------------------------------------------------------------------------------
def _same(a: object, b: object) -> bool:
    """a == b, but a boolean equals only a boolean (True is not the group value 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return a == b


def _pick(groups: list[Group], pick: object) -> Group | list[Group] | None:
    """The group(s) a quote stands for, or None when the sweep has none."""
    if not isinstance(pick, Pick):
        return next((g for g in groups if _same(g.at, pick)), None)
    return hooks.pick(groups, pick.which)


def _quote(groups: list[Group], quote, fmt: str) -> tuple[dict, dict] | None:
    """(template values, data) of every quoted name, or None when a quoted group is missing."""
    values, data = {}, {}
    for name, pick in quote:
        got = _pick(groups, pick)
        if got is None:
            return None
        v, d = _quote_one(name, got, fmt)
        values.update(v)
        data.update(d)
    return values, data


def _quote_one(name: str, got: Group | list[Group], fmt: str) -> tuple[dict, dict]:
    """(template values, data) of one quoted name: {name}, {name_at}, {name_n}, {name_bar}."""
    values, data = {}, {}
    if isinstance(got, list):
        v, at, n = [g.value for g in got], [g.at for g in got], [g.n for g in got]
        values[name] = _Value(v, ", ".join(_number(x, fmt) for x in v))
        values[f"{name}_at"] = _Value(at, ", ".join(g.text for g in got))
        values[f"{name}_n"] = _Value(n, ", ".join(f"{x:,}" for x in n))
        values[f"{name}_bar"] = _Value(None, "")
    else:
        v, at, n = got.value, got.at, got.n
        decimals = re.fullmatch(r"\.(\d+)f", fmt)  # never more digits than the declaration writes
        parts = bar_parts(v, *got.bar, int(decimals.group(1)) if decimals else None) \
            if got.bar and fmt != "bytes" else None
        # a value with an error bar, to the digits the bar supports, and the bar as stored: "2.5", " (-4.1/+5.8%)"
        values[name] = _Value(v, parts[0] if parts else _number(v, fmt))
        values[f"{name}_bar"] = _Value(got.bar, f" ({parts[1]})" if parts else "")
        values[f"{name}_at"] = _Value(at, got.text)
        values[f"{name}_n"] = _Value(n, f"{n:,}")
        if got.bar:
            data[f"{name}_bar"] = got.bar
    data.update({name: v, f"{name}_at": at, f"{name}_n": n})
    return values, data


# -- the three kinds ---------------------------------------------------------------------------------------
def _medians(rows: ModelRows, d: Medians) -> tuple[str, dict] | None:
    """Median of a metric on a slice, per group of a column or of a condition (True / False)."""
    clauses = (Clause(by=d.by, quote=d.quote, text=""), *d.more)
    columns = {d.metric}
    for c in (*(c.by for c in clauses if isinstance(c.by, Cond)), *d.where):
        columns |= cond_columns(c)
    columns |= {c.by for c in clauses if isinstance(c.by, str)}
    lf = rows.modeled(*columns)
    if lf is None:
        return None
    lf = _where(rows, lf, d.where)

    def quoted(c: Clause) -> tuple[dict, dict] | None:
        if isinstance(c.by, Cond):
            key, at = cond_expr(c.by, rows.schema(), set()), lambda r: (r["_at"], str(r["_at"]).lower())
        else:
            key, at = pl.col(c.by), lambda r: (r["_at"], rows.label_with_unit(c.by, r["_at"]))
        groups = hooks.groups(hooks.medians(lf, d.metric, [key.alias("_at")], bar=interval.columns(d.metric)), at)
        return _quote(groups, c.quote, d.fmt) if (c is clauses[0] or len(groups) >= 2) else None

    more, extra = "", {}
    for c in d.more:
        got = quoted(c)
        if got is not None:
            more += c.text.format(**got[0])
            extra.update(got[1])
    got = quoted(clauses[0])
    if got is None:
        return None
    return d.text.format(**got[0], more=more), {**got[1], **extra}


# -- generic ------------------------------------------------------------------------------------------------
def published(sweep: Sweep) -> Finding | None:
    """How close the models are to all their published figures, whatever points this sweep holds (a figure
    outside it is evaluated here, under the sweep's profile): the errors on figures a fit did not see first
    (leave-one-out, validation), the in-sample residual last, and called that."""
    df = _every_figure(sweep, published_comparison(sweep)).filter(pl.col("error").is_not_null())
    if df.height == 0:
        return None
    fit = df.filter(pl.col("use") == "fit")
    loo = fit.filter(pl.col("loo_error").is_not_null())
    val = df.filter(pl.col("use") == "validation")
    parts, data = [], {}
    if loo.height:
        parts.append(f"Leave-one-out (each of {loo.height} fitted figures predicted by a fit without it), the "
                     f"model's median |error| is {_spread(loo, 'loo_error')}")
        data.update(loo=loo.height, loo_median=float(loo["loo_error"].abs().median()))
    if val.height:
        parts.append(f"against {val.height} validation figures, never fit, it is {_spread(val, 'error')}")
        data.update(validation=val.height, validation_median=float(val["error"].abs().median()))
    if fit.height:
        parts.append(f"on the {fit.height} figures the profile was fit to (in-sample, not a test of accuracy) "
                     f"it is {_spread(fit, 'error')}")
        data.update(fit=fit.height, fit_median=float(fit["error"].abs().median()))
    held = _coverage(sweep, df["model"].unique().sort().to_list())
    if held:
        kinds = {use: [h for h in held if h.use == use] for use in ("stored", "fit", "validation")}
        own = kinds["stored"] + kinds["validation"]  # each figure against the bar its point's row carries
        inside = sum(h.inside for h in own)
        parts.append(f"its error bars hold {inside} of {len(own)} published figures at their own point ("
                     + ", ".join(f"{what}: {sum(h.inside for h in kinds[use])} of {len(kinds[use])}"
                                 for use, what in (("stored", "fit figures"), ("validation", "validation figures"),
                                                   ("fit", "each fit figure left out of its own bar"))
                                 if kinds[use]) + ")")
        data.update(covered=inside, covered_of=len(own))
    text = "; ".join(parts)
    return Finding(text=text[0].upper() + text[1:] + ".", figure="parity", data=data, id="published")


def _coverage(sweep: Sweep, models: list[str]) -> list:
    """The published figures of `models` against the error bar at their own point (workers.interval.stored()),
    and the fit figures each left out of it (coverage()), under the sweep's profile."""
    from workers import interval

    profile = sweep.profile_object()
    out = []
    for name in models:
        model = sweep.model_object(name)
        if model is not None and profile is not None:
            out += interval.stored(model, profile) + interval.coverage(model, profile)
    return out


def _every_figure(sweep: Sweep, df: pl.DataFrame) -> pl.DataFrame:
    """published_comparison's frame with the model's value filled in, from the model itself under the
    sweep's profile, for the figures whose point the sweep does not hold."""
    from workers.evaluate import evaluate
    from workers.model import points_frame, validation_figures

    profile = sweep.profile_object()
    if profile is None or df.height == 0:
        return df
    values: dict[str, float] = {}
    for name in df.filter(pl.col("model_value").is_null())["model"].unique().to_list():
        model = sweep.model_object(name)
        if model is None:
            continue
        figures = [*model.calibration.figures, *validation_figures(model, profile)]
        rows = evaluate(model, points_frame(model, [f.params for f in figures]), profile)
        for f, value in zip(figures, (rows[f.metric][i] if f.metric in rows.columns else None
                                      for i, f in enumerate(figures))):
            if value is not None:
                values[f.id] = float(value)
    filled = pl.col("model_value").fill_null(pl.col("id").replace_strict(values, default=None,
                                                                         return_dtype=pl.Float64))
    return df.with_columns(filled.alias("model_value")).with_columns(figure_error("model_value").alias("error"))


def _spread(df: pl.DataFrame, column: str) -> str:
    """"10.5% (worst -81.5%, young/validation/classic/arm64/batched)" of one group of figures."""
    worst = df.sort(pl.col(column).abs(), descending=True).row(0, named=True)
    return f"{df[column].abs().median():.1%} (worst {worst[column]:+.1%}, {worst['id']})"


def findings_html(findings: list[Finding], drawn: set[str], esc: Callable[[object], str]) -> str:
    """The report's opening section: one list item per finding, linked to its figure when it was drawn."""
    if not findings:
        return ('<h2 id="findings">Key findings</h2><p class="note">This sweep has none of the rows the findings '
                'are computed from.</p>')
    items = "".join(f'<li data-figure="{esc(f.figure)}">{esc(f.text)}'
                    + (f' <a href="#fig-{esc(f.figure)}">(figure)</a>' if f.figure in drawn else "")
                    + (f'<br><span class="evidence">{esc(f.evidence)}</span>' if f.evidence else "") + "</li>"
                    for f in findings)
    return f'<h2 id="findings">Key findings</h2><ul class="findings">{items}</ul>'
