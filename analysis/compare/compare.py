"""`memsweep compare A B`: two sweeps side by side, B/A per point (mmtests' compare-kernels for sweeps).

The same point has the same `point_id` in every sweep, so each model's ok rows
of A and B are joined on it (lazily; nothing is collected but aggregates and a
few listed rows). A block compares one model, one metric and one pair of row
sources: like with like by default (modeled with modeled, measured with
measured), or `sources=("measured", "model")` for a measured sweep against
its modeled twin. Each point gets a verdict: better / worse, `=` (equal),
`~` (not a change by the rule: a side rests on samples, measured rows' runs or
a kernel row's boots spanning [measure_min, measure_max], and the spans overlap
or B/A is within 1% of 1) or `n<3` (fewer than 3 samples on a side: no verdict); the
rule is ratios.RULE, after LKP's. `--format mail` prints a block to paste
(mail.py). Small comparisons print one row per configuration; big ones a summary,
the ratios grouped by the one or two axes that explain most of the variation
of log B/A (or by the `--by` axes), and the largest changes (ratios.py).
`--where` keeps some points; axes along which no value changes are collapsed
(axes.py). A string metric is compared as same / changed per point
(changes.py). Across sources the verdicts read "model over-predicts /
under-predicts". page.py draws and writes the page.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from dataclasses import dataclass, field

import polars as pl

from analysis import evidence
from analysis.evidence import Evidence
from analysis.exceptions import AnalysisError
from analysis.metrics import categorical, headline_metric, higher_is_better, ok
from analysis.read import EQUAL_REL, KERNEL, MEASURED, MODELED, ModelRows, Sweep, parse_where
from analysis.report.overview import Table, describe_point
from analysis.tables import metric_unit, render
from workers import interval
from workers.dataset import SOURCE, SOURCES as DECLARED, unit_of
from workers.guest.settings import manifest_build

from . import changes, ratios
from .axes import Selection, View, cells, collapsible, merged, parse_by, parse_pair, select, where_text
from .ratios import (BAR_RULE, BETTER, EQUAL, FEW, MAX_POINTS, NOISE, RULE, TOP, UNFIT, WORSE,  # noqa: F401
                     verdict)  # (re-exported)

SOURCES = tuple(s.name for s in DECLARED)
EXAMPLES = 5  # points of one side only listed
TIME_UNITS = ("ns", "µs", "ms", "s")
COMPARE_PREFIX = "compare-"
MAIL_ROWS = 40  # distinct rows a mail block lists one by one (more: a grouped summary and the largest changes)


@dataclass(frozen=True, kw_only=True, slots=True)
class Block:
    """One model, metric and pair of sources compared: counts, the tables to print, the figure's frames."""

    model: str
    metric: str
    source_a: str
    source_b: str
    higher: bool
    unit: str
    points_a: int  # ok points with a value, each side
    points_b: int
    compared: int
    summary: dict  # median / min / max B/A and the count of each verdict
    heading: str  # what the tables show (the header line)
    tables: tuple[Table, ...]
    only: tuple[tuple[int, tuple[str, ...]], tuple[int, tuple[str, ...]]]  # (count, examples) for A, B
    hist: pl.DataFrame  # ratio, n: the histogram of B/A (bin centres)
    groups: pl.DataFrame  # group, median, q10, q90, min, max, n: B/A by the grouping axes
    group_axes: tuple[str, ...]
    view: View = View(shown=())  # the axes the tables show and those collapsed
    categorical: bool = False  # a string metric: same / changed per point, no ratio
    evidence: tuple[Evidence, Evidence] = (Evidence(), Evidence())  # what A's and B's modeled answers rest on
    listed: pl.DataFrame = field(default_factory=pl.DataFrame)  # the mail's rows (_listed)
    references: tuple[str, ...] = ()  # a patched build's side read against its base and Debian's kernel
    more: int = 0  # significant changes the mail leaves out
    unfit: str = ""  # why points got no verdict: the model's work costs are another build's (UNFIT)

    @property
    def varies(self) -> bool:
        """Whether B/A takes more than one value over the compared points."""
        return bool(self.compared and self.summary.get("var"))

    @property
    def title(self) -> str:
        direction = "same or changed" if self.categorical else f"{'higher' if self.higher else 'lower'} is better"
        return (f"{self.model} {self.metric.removeprefix('metric_')}, {self.source_a} (A) vs {self.source_b} (B)"
                f" ({direction})")


@dataclass(frozen=True, kw_only=True, slots=True)
class Comparison:
    """Sweeps A and B and one Block per model and source pair compared."""

    a: Sweep
    b: Sweep
    blocks: tuple[Block, ...]
    where: str = ""  # the --where filters as text
    left_out: tuple[str, ...] = ()  # models without an axis --where, --pair or --by names
    paired: str = ""  # --pair as text: which value of an axis each side is read at
    chosen: str = ""  # why these rows were compared, when compare chose them (two kernel sweeps)


def words(block: Block) -> tuple[str, str]:
    """What a better / worse point of this block is called (vocabulary)."""
    return vocabulary(block.unit, block.higher, block.source_a, block.source_b)


def vocabulary(unit: str, higher: bool, source_a: str, source_b: str) -> tuple[str, str]:
    """What a better / worse point is called: faster / slower for times, else better / worse; across
    sources, what the model does: "model over-predicts" when the modeled value is above the measured one."""
    if {source_a, source_b} == {MODELED, MEASURED}:
        over, under = "model over-predicts", "model under-predicts"
        b_above, b_below = (over, under) if source_b == MODELED else (under, over)
        return (b_above, b_below) if higher else (b_below, b_above)  # `better` is B above A iff higher
    timed = unit in TIME_UNITS and not higher
    return ("faster", "slower") if timed else (BETTER, WORSE)


def open_sweep(path: str, which: str) -> Sweep:
    """Sweep A or B, with an error that says which one is not a sweep."""
    return Sweep(path, field=which)


def parse_sources(text: str | None) -> tuple[str, str] | None:
    """`measured:model` -> ("measured", "model"): A's rows of the first source against B's of the second."""
    if text is None:
        return None
    parts = text.split(":")
    if len(parts) != 2 or any(p not in SOURCES for p in parts):
        raise AnalysisError(f"'--sources' must be A_SOURCE:B_SOURCE, each one of {list(SOURCES)} "
                            f"(e.g. measured:model) (got {text!r}).")
    return parts[0], parts[1]


def compare(a_dir: str, b_dir: str, *, metric: str | None = None, model: str | None = None,
            sources: str | tuple[str, str] | None = None, by: str | list[str] | None = None,
            where: list[str] | tuple[str, ...] = (), pair: list[str] | tuple[str, ...] = ()) -> Comparison:
    """Compare sweep B with sweep A: one Block per model in both (or `model`) and pair of sources, over
    the points `where` keeps ("AXIS=VALUE" each), grouped by the `by` axes if given; with `pair`
    ("AXIS=A_VALUE:B_VALUE" each), A's rows at one value of an axis against B's at another."""
    a, b = open_sweep(a_dir, "A"), open_sweep(b_dir, "B")
    pair_src = parse_sources(sources) if isinstance(sources, str) or sources is None else tuple(sources)
    wheres, by_axes, pairs = parse_where(where), parse_by(by), parse_pair(pair)
    common = [m for m in a.models if m in b.models]
    if not common:
        raise AnalysisError(f"'A' and 'B' must have a model in common (got A: {list(a.models)}, "
                            f"B: {list(b.models)}).")
    if model is not None:
        if model not in common:
            raise AnalysisError(f"'--model' must be one of the models both sweeps have {common} (got {model!r}).")
        common = [model]
    picks, left_out = select(a, b, common, by_axes, wheres, pairs)
    sides = [(a.rows(m), b.rows(m)) for m in common if m in picks]
    jobs = [(ra, rb, c, sa, sb) for ra, rb in sides for sa, sb in _source_pairs(ra, rb, pair_src)
            for c in _metrics(ra, rb, metric, common, (sa, sb))]
    if not jobs:
        _no_sources(a, b, common, pair_src)
    _no_guest_times(jobs)
    blocks = [_block(*job, picks[job[0].name]) for job in jobs]
    if not any(bl.compared for bl in blocks):
        sides = {w: "; ".join(f"{bl.model} {bl.source_a if w == 'A' else bl.source_b} "
                              f"{bl.points_a if w == 'A' else bl.points_b:,} ok points" for bl in blocks)
                 for w in ("A", "B")}
        if wheres or pairs:
            asked = " and ".join(filter(None, [where_text(wheres), ", ".join(f"{n}={x}:{y}" for n, x, y in pairs)]))
            raise AnalysisError(f"no shared points where {asked} (A: {sides['A']}; B: {sides['B']}); "
                                "give '--where' and '--pair' values that hold together.")
        raise AnalysisError(f"no shared points (A: {sides['A']}; B: {sides['B']}): {_how(a, b, blocks)}")
    paired = next((p.pair.text for p in picks.values() if p.pair is not None), "")
    chosen = ("kernel rows: both sweeps ran a kernel (the model's rows with --sources model:model)"
              if pair_src is None and any(j[3:] == (KERNEL, KERNEL) for j in jobs) else "")
    return Comparison(a=a, b=b, blocks=tuple(blocks), where=where_text(wheres), left_out=tuple(left_out),
                      paired=paired, chosen=chosen)


def _how(a: Sweep, b: Sweep, blocks: list[Block]) -> str:
    """How to compare two sweeps that share no point: the axes whose values the compared rows do not share,
    and the --pair that reads A at one of its values against B at one of its own."""
    for bl in blocks:
        ra, rb = a.rows(bl.model), b.rows(bl.model)
        params = [c for c in ra.params() if c in rb.params()]
        if not params:
            continue
        va, vb = (ok(r.scan(src)).select(pl.col(c).unique().implode() for c in params).collect().row(0, named=True)
                  for r, src in ((ra, bl.source_a), (rb, bl.source_b)))
        apart = [c for c in params if va[c] and vb[c] and not set(va[c]) & set(vb[c])]
        if apart:
            c = apart[0]
            x, y = ra.label(c, ra.spec_order(va[c], c)[0]), rb.label(c, rb.spec_order(vb[c], c)[0])
            names = ", ".join(n.removeprefix("param_") for n in apart)
            rows = f"{bl.source_a} rows" if bl.source_a == bl.source_b else f"{bl.source_a} and {bl.source_b} rows"
            return (f"their {rows} share no value of {names}; give '--pair {c.removeprefix('param_')}={x}:{y}' "
                    "to read A at one value and B at another")
    return "the sweeps evaluate different grids; compare sweeps of the same spec's axes, or give " \
        "'--pair AXIS=A_VALUE:B_VALUE'"


def _metrics(a: ModelRows, b: ModelRows, metric: str | None, common: list[str],
             sources: tuple[str, str]) -> list[str]:
    """The metric compared for the model of `a` and `b`: `metric` if both sweeps have it, else the headline
    metric, or between kernel rows the one the guest measured (`common`: every model compared, named when
    `metric` is none of theirs)."""
    both = [c for c in a.metrics() if c in b.metrics()]
    if metric is None:
        guests = [r for r, src in zip((a, b), sources) if src == KERNEL]
        found = _guest_metric(guests, both) if guests else None
        found = found or headline_metric(a.model, both)
        return [found] if found else []
    col = metric if metric.startswith("metric_") else f"metric_{metric}"
    if col in both:
        return [col]
    sa, sb = a.sweep, b.sweep
    if len(common) == 1 or not any(col in sa.metrics(m) and col in sb.metrics(m) for m in common):
        allowed = sorted({c for m in common for c in sa.metrics(m) if c in sb.metrics(m)})
        where = f"model {common[0]!r}" if len(common) == 1 else "a model both sweeps have"
        raise AnalysisError(f"'--metric' must be a metric of {where} in both sweeps, one of {allowed} "
                            f"(got {metric!r}).")
    return []  # another model has it


def _source_pairs(a: ModelRows, b: ModelRows, pair: tuple[str, str] | None) -> list[tuple[str, str]]:
    """The row sources compared: `pair` (--sources); by default like with like, and where both sweeps ran
    a kernel, its rows only (a kernel A/B asks what the kernels did; the model rows with --sources
    model:model)."""
    if pair is not None:
        return [pair] if pair[0] in a.sources() and pair[1] in b.sources() else []
    if KERNEL in a.sources() and KERNEL in b.sources():
        return [(KERNEL, KERNEL)]
    return [(s, s) for s in a.sources() if s in b.sources()]


def _guest_metric(guests: list[ModelRows], both: list[str]) -> str | None:
    """What the guests of the kernel rows compared measured: the headline (a time) where every kernel side
    has it (KVM), else the kernel check's sampled count (TCG: a guest's time is the emulator's, its
    instruction counter exact)."""
    model = guests[0].model
    check = getattr(model, "kernel", None)
    headline = headline_metric(model, both)
    if headline is not None and all(
            ok(r.scan(KERNEL)).select(pl.col(headline).is_not_null().any()).collect().item() for r in guests):
        return headline
    return check.sampled if check is not None and check.sampled in both else None


TIME_UNITS = ("ns", "µs", "ms", "s")


def _no_guest_times(jobs) -> None:
    """A time from kernel rows a TCG guest ran is the emulator's, proportional to the work and not a
    machine's: it is compared with another guest's only, never with model or measured rows."""
    for ra, rb, metric, sa, sb in jobs:
        if (sa == KERNEL) == (sb == KERNEL) or metric_unit(metric) not in TIME_UNITS:
            continue
        rows = ra if sa == KERNEL else rb
        accels = rows.scan(KERNEL).select(pl.col("env_accel").drop_nulls().unique()).collect()["env_accel"].to_list()
        if "tcg" in accels:
            raise AnalysisError(
                f"'--metric' {metric} is a time, and the kernel rows of {rows.name} ran under TCG: a guest's time, "
                "proportional to the work, not a machine's, is never compared with model or measured times; "
                "compare a count (e.g. --metric memmap_pages) or two kernel sweeps (--sources kernel:kernel).")


def _no_sources(a: Sweep, b: Sweep, common: list[str], pair: tuple[str, str] | None) -> None:
    have = "; ".join(f"{m}: A {a.sources(m)}, B {b.sources(m)}" for m in common)
    if pair is None:
        raise AnalysisError(f"'A' and 'B' must have rows of the same source for a model in common ({have}); "
                            "give '--sources A_SOURCE:B_SOURCE' (e.g. measured:model) to compare across sources.")
    raise AnalysisError(f"'--sources' must name sources the sweeps have: A {pair[0]!r} and B {pair[1]!r} "
                        f"({have}).")


def _side(rows: ModelRows, source: str, metric: str, tag: str, params: list[str],
          build: bool = False) -> pl.LazyFrame:
    """point_id, the params, the value, its interval [lo, hi], whether it has one (`spread`), whether that is
    a model's error bar (`bar`) and its sample count n: measured and kernel rows whose metric is the one
    the measure_* columns summarize (the median of measure_repeats samples: runs, or a kernel row's boots)
    span [measure_min, measure_max]; modeled rows with a bar (workers.interval) span it; others are a
    point with no interval. `build`: and the kernel build its count is of (`<tag>_build`)."""
    v = pl.col(metric).cast(pl.Float64)
    schema = rows.schema()
    lf = ok(rows.scan(source)).filter(v.is_not_null() & v.is_finite())
    spread, bar, low, high, n = pl.lit(False), pl.lit(False), v, v, pl.lit(None, dtype=pl.Int64)
    lo_col, hi_col = interval.columns(metric)
    declared = SOURCE[source]  # what the source's rows carry, as workers.dataset declares it
    if "measure_min" in declared.columns and "measure_min" in schema and "measure_median" in schema:
        spread = (pl.col("measure_min").is_not_null() & pl.col("measure_median").is_not_null()
                  & ((pl.col("measure_median") - v).abs() <= EQUAL_REL * v.abs())).fill_null(False)
        # LKP's range, [min, max]; a sweep before schema 8 kept no max: [min, median]
        top = pl.col("measure_max").fill_null(pl.col("measure_median")) if "measure_max" in schema \
            else pl.col("measure_median")
        low = pl.when(spread).then(pl.min_horizontal(pl.col("measure_min"), v)).otherwise(v)
        high = pl.when(spread).then(pl.max_horizontal(pl.col("measure_min"), top, v)).otherwise(v)
        if source == KERNEL and "measure_max" not in schema:  # before schema 8: the binds of one boot, one sample
            n = pl.when(spread).then(pl.lit(1, dtype=pl.Int64))
        elif "measure_repeats" in schema:  # a sweep without it: no count, so no verdict (FEW)
            n = pl.when(spread).then(pl.col("measure_repeats").cast(pl.Int64))
    elif declared.bars and lo_col in schema and hi_col in schema:
        bar = spread = (pl.col(lo_col).is_not_null() & pl.col(hi_col).is_not_null()).fill_null(False)
        # the bar as stored (Float32) around the value as computed: never narrower than the value itself
        low = pl.when(bar).then(pl.min_horizontal(pl.col(lo_col).cast(pl.Float64), v)).otherwise(v)
        high = pl.when(bar).then(pl.max_horizontal(pl.col(hi_col).cast(pl.Float64), v)).otherwise(v)
    return lf.select("point_id", *params, v.alias(tag), low.alias(f"{tag}_lo"), high.alias(f"{tag}_hi"),
                     spread.alias(f"{tag}_spread"), bar.alias(f"{tag}_bar"), n.alias(f"{tag}_n"),
                     evidence.row_label(rows, source, metric).alias(f"{tag}_evidence"),
                     *([_build(rows, source).alias(f"{tag}_build")] if build else []))


def _build(rows: ModelRows, source: str) -> pl.Expr:
    """The kernel build a row's count of the kernel's work is of (kernel_build): for a sweep before schema 9,
    its kernel rows' from the manifest and its modeled rows' from its profile (KernelCheck.priced_build)."""
    if "kernel_build" in rows.schema():
        return pl.col("kernel_build")
    check, profile = getattr(rows.model, "kernel", None), rows.sweep.profile_object()
    if source == KERNEL:
        known = manifest_build(rows.sweep.manifest)
    else:
        known = check.priced_build(profile) if check is not None and profile is not None else None
    return pl.lit(known, dtype=pl.Utf8)


def _builds_matter(a: ModelRows, metric: str, sources: tuple[str, str]) -> bool:
    """Whether a modeled count of a build's work (KernelCheck.work) meets kernel rows: then each point's two
    builds are compared, as the model's instruction costs were fit to one build and say nothing of another."""
    check = getattr(a.model, "kernel", None)
    return set(sources) == {MODELED, KERNEL} and check is not None and metric in check.work


def _joined(a: ModelRows, b: ModelRows, metric: str, sources: tuple[str, str], params: list[str],
            pick: Selection, cat: bool, higher: bool) -> tuple[pl.LazyFrame, pl.LazyFrame, pl.LazyFrame]:
    """A's and B's rows (those --where keeps, at the values --pair reads each side at) and their join on
    point_id (with --pair, on every other axis: the point_id is A's), with the verdict (and for numbers
    B/A and log B/A)."""
    builds = not cat and _builds_matter(a, metric, sources)
    side = changes.side if cat else functools.partial(_side, build=builds)
    sa = side(a, sources[0], metric, "a", params).filter(pick.where & _paired(pick, "a"))
    sb = side(b, sources[1], metric, "b", params).filter(pick.where & _paired(pick, "b"))
    if pick.pair is None:
        j = sa.join(sb.drop(params), on="point_id", how="inner")
    else:  # each point of A with B's point that differs from it in the paired axes only
        j = sa.join(sb.rename({"point_id": "b_point_id"}).drop(*pick.pair.axes), on=_keys(pick, params), how="inner",
                    nulls_equal=True)
    if cat:
        return sa, sb, j.with_columns(changes.verdict().alias("verdict"))
    same = pl.col("a") == pl.col("b")  # 0 and 0 too: a metric that is zero on both sides has not changed
    ratio = pl.when(same).then(1.0).when(pl.col("a") != 0).then(pl.col("b") / pl.col("a"))
    lr = pl.when(same).then(0.0).when((pl.col("a") > 0) & (pl.col("b") > 0)).then((pl.col("b") / pl.col("a")).log())
    unfit = pl.col("a_build").ne_missing(pl.col("b_build")) if builds else pl.lit(False)
    judged = pl.when(unfit).then(pl.lit(UNFIT)).otherwise(verdict(higher))
    return sa, sb, j.with_columns(ratio.alias("ratio"), lr.alias("lr"), judged.alias("verdict"))


def _paired(pick: Selection, side: str) -> pl.Expr:
    """The rows of one side (`a` or `b`) --pair reads: those at that side's value of the paired axes."""
    return pl.lit(True) if pick.pair is None else getattr(pick.pair, side)


def _keys(pick: Selection, params: list[str]) -> list[str]:
    """What joins a point of A with its point of B: point_id, or with --pair every axis but the paired ones."""
    return ["point_id"] if pick.pair is None else [c for c in params if c not in pick.pair.axes]


def _block(a: ModelRows, b: ModelRows, metric: str, src_a: str, src_b: str, pick: Selection) -> Block:
    cat = categorical(a.schema()[metric])
    higher, unit = (False, "") if cat else (higher_is_better(a.model, metric), unit_of(metric))
    params = [c for c in a.params() if c in b.params()]
    sa, sb, j = _joined(a, b, metric, (src_a, src_b), params, pick, cat, higher)
    head, distinct, n_a, n_b = pl.collect_all([
        j.select(changes.stats() if cat else ratios.stats()),
        j.select(pl.col(c).n_unique().alias(c) for c in params) if params else j.select(pl.lit(0).alias("_")),
        sa.select(pl.len()), sb.select(pl.len()),
    ])
    summary = head.row(0, named=True)
    counts = {c: distinct[c][0] for c in params if distinct[c][0] > 1} if params else {}
    keys = _keys(pick, params)
    only = (_only(a, sa, sb, keys), _only(b, sb, sa, keys))
    b_ids = "point_id" if pick.pair is None else "b_point_id"  # B's own point of each compared pair
    ev = tuple(evidence.summarize(r, ok(r.scan(src)).filter(pick.where & _paired(pick, t)), metric)
               for r, src, t in ((a, src_a, "a"), (b, src_b, "b")))
    base = dict(model=a.name, metric=metric, source_a=src_a, source_b=src_b, higher=higher, unit=unit,
                points_a=n_a.item(), points_b=n_b.item(), compared=summary["n"], summary=summary,
                only=only, categorical=cat, evidence=ev,
                references=tuple(line for r, src, t, ids in ((a, src_a, "A", "point_id"), (b, src_b, "B", b_ids))
                                 for line in _references(r, src, metric, j.select(pl.col(ids).alias("point_id")), t)))
    if summary["n"] == 0:
        return Block(**base, heading="no shared points", tables=(), groups=pl.DataFrame(), group_axes=(),
                     hist=ratios.no_hist() if cat else ratios.hist(j, 0.0))
    if not cat and summary[UNFIT]:
        base["unfit"] = _unfit_text(j, (src_a, src_b))
    unchanged = summary[changes.CHANGED] == 0 if cat else summary[EQUAL] == summary["n"]
    view = View(shown=tuple(counts)) if unchanged else collapsible(j, list(counts), counts, cat)  # no rows listed
    if cat:
        tables, heading = changes.tables(a, j, view, pick.by, summary)
        return Block(**base, heading=heading, tables=tables, hist=ratios.no_hist(), groups=pl.DataFrame(),
                     group_axes=pick.by or (), view=view)
    var = summary["var"] or 0.0
    if pick.by is None:
        group_axes, explained = ratios.grouping(j, list(view.shown), counts, var)
    else:
        group_axes, explained = pick.by, (ratios.explained(j, [pick.by])[pick.by] if var > 0 else 0.0)
    groups = ratios.groups(a, j, group_axes)
    marks = vocabulary(unit, higher, src_a, src_b)
    listed, more = _listed(j, a, view, summary["n"])
    tables, heading = ratios.tables(a, j, view, groups, (group_axes, explained, pick.by is not None), summary,
                                    (higher, unit, marks))
    return Block(**base, heading=heading, tables=tables, hist=ratios.hist(j, var), group_axes=group_axes, view=view,
                 groups=groups.head(ratios.limit(pick.by)), listed=listed, more=more)


def _unfit_text(j: pl.LazyFrame, sources: tuple[str, str]) -> str:
    """Why points got no verdict (UNFIT), naming the modeled side's build and the kernel side's, and the
    command that fits the other build's costs."""
    pairs = j.filter(pl.col("verdict") == UNFIT).select("a_build", "b_build").unique().collect()
    side = {"a": "A", "b": "B"}
    model, kernel = ("a", "b") if sources[0] == MODELED else ("b", "a")
    costs = ", ".join(sorted(str(v) for v in pairs[f"{model}_build"].unique().to_list()))
    built = ", ".join(sorted(str(v) for v in pairs[f"{kernel}_build"].unique().to_list()))
    return (f"the model was not fit to that kernel: {side[model]}'s modeled counts price build {costs}'s "
            f"instructions per operation, {side[kernel]}'s kernel rows ran build {built}; no better or worse "
            f"(memsweep calibrate --from {side[kernel]} --save FILE fits that build's costs, a sweep with "
            "profile FILE prices them)")


def _references(rows: ModelRows, source: str, metric: str, compared: pl.LazyFrame, side: str) -> list[str]:
    """What a side's kernel rows say of their build beside the kernels they were booted with (the series'
    build: its base and Debian's 6.12, slow path; a user's build: its base): the patches' and the config's
    effect, median and range over the compared points (`compared`: their point_id on this side); nothing for
    other rows."""
    if source != KERNEL or "kernel_base" not in rows.schema():
        return []
    v = pl.col(metric).cast(pl.Float64)
    df = ok(rows.scan(KERNEL)).join(compared.unique(), on="point_id", how="semi").filter(
        pl.col("kernel_base").is_not_null() & v.is_not_null()).select(
        (pl.col("kernel_base") / v).alias("patches"),
        (pl.col("kernel_stock") / pl.col("kernel_base")).alias("config")).collect()
    out = []
    for col, what in (("patches", "its base (the same source and config, no patches) / it"),
                      ("config", "Debian's 6.12 / its base, slow path")):
        x = df[col].drop_nulls()
        if len(x):
            out.append(f"{side}'s {col}: {what}: median {x.median():.3f}x ({x.min():.3f}-{x.max():.3f}x) "
                       f"over {len(x):,} points")
    return out


def _only(rows: ModelRows, this: pl.LazyFrame, other: pl.LazyFrame,
          keys: list[str]) -> tuple[int, tuple[str, ...]]:
    """Points ok (with a value) on this side only (none in `other` with the same `keys`): their count and
    the first few, with their configuration."""
    rest = this.join(other.select(keys), on=keys, how="anti", nulls_equal=True)
    n, first = pl.collect_all([rest.select(pl.len()), rest.bottom_k(EXAMPLES, by="point_id").sort("point_id")])
    keys = [c for c in rows.varying() if c in first.columns]
    return n.item(), tuple(f"{r['point_id']}  {describe_point(rows, keys, r)}" for r in first.iter_rows(named=True))


def summary_line(block: Block) -> str:
    """`2,488 points compared: B/A median 1.320 (min 1.000, max 2.100); 2,000 slower, 0 faster, ...`"""
    s, (faster, slower) = block.summary, words(block)
    if not block.compared:
        return (f"no shared points: A has {block.points_a:,} ok points with a value, B {block.points_b:,}")
    if block.categorical:
        return changes.summary_line(s)
    r = ratios.ratio
    head = (f"{block.compared:,} points compared: B/A median {r(s['median'])} (min {r(s['min'])}, "
            f"max {r(s['max'])})")
    if s.get(UNFIT) == block.compared:
        return f"{head}; all {block.compared:,} not fit: {block.unfit}"
    line = (f"{head}; {s[BETTER]:,} {faster}, {s[WORSE]:,} {slower}, "
            f"{s[NOISE]:,} not a change (~), {s[EQUAL]:,} equal (=)")
    if s.get(UNFIT):
        line += f", {s[UNFIT]:,} {UNFIT}: {block.unfit}"
    if s["sampled"] and s.get("barred") == s["sampled"]:  # modeled: two computations, not a test
        line += f"; {s['significant']:,} outside both error bars"
    elif s["sampled"]:
        on = "on samples and error bars" if s.get("barred") else "on samples"
        line += (f"; {on}, {s['significant']:,} significant changes"
                 + (f" and {s[FEW]:,} with too few samples for a verdict ({FEW})" if s[FEW] else ""))
    return line


def rule_lines(block: Block) -> list[str]:
    """The significance rules, where a side rests on samples or error bars."""
    s = block.summary
    kernel = [f"{side} {s.get(f'{t}_samples') or 1} boot{'s' if (s.get(f'{t}_samples') or 1) > 1 else ''}"
              for side, t, src in (("A", "a", block.source_a), ("B", "b", block.source_b)) if src == KERNEL]
    return ([f"rule: {RULE}"] if s.get("sampled", 0) > s.get("barred", 0) else []) + \
        ([f"rule: {BAR_RULE}"] if s.get("barred") else []) + \
        ([f"samples of the kernel rows: {', '.join(kernel)} a point (the binds of one boot are one sample: "
          f"[kernel] boots = {ratios.MIN_SAMPLES} for the sampled rule)"] if kernel else [])


def evidence_lines(block: Block) -> list[str]:
    """What each side's modeled answers rest on (measured and kernel rows are observations: no line)."""
    out = []
    for side, ev in zip("AB", block.evidence):
        if ev.counts:
            out.append(f"evidence of {side}'s answers: {ev.text()}")
            out.extend(evidence.note_lines(ev, limit=4))
    return out


def only_lines(block: Block) -> list[str]:
    out = []
    for side, (n, examples) in zip("AB", block.only):
        if n:
            more = f" (first {len(examples)})" if n > len(examples) else ""
            out.append(f"ok in {side} only: {n:,} points{more}:")
            out.extend(f"  {e}" for e in examples)
    return out


def header_lines(cmp: Comparison) -> list[str]:
    """The points kept (--where) and the models left out, if any."""
    out = [f"only the points where {cmp.where}"] if cmp.where else []
    if cmp.paired:
        out.append(f"paired, every other axis alike: {cmp.paired}")
    if cmp.chosen:
        out.append(cmp.chosen)
    if cmp.left_out:
        out.append(f"not compared (they lack an axis --where or --by names): {', '.join(cmp.left_out)}")
    return out


def what(sw: Sweep, short: bool = False) -> str:
    """What a side is, beyond its name: the profile, the guest kernels and accelerators its kernel rows ran,
    and the hosts that computed or measured its rows (Sweep.provenance: the parts' footers, not their rows);
    `short`: a profile file by its name only (a mail's line holds no long path)."""
    seen = sw.provenance()
    profile = str(sw.manifest.get("profile", "?"))
    parts = [f"profile {Path(profile).name if short else profile}"]
    if seen.get("env_guest_kernel"):
        accels = "/".join(sorted(seen.get("env_accel") or ())) or "?"
        parts.append(f"kernel {_image(sw, seen['env_guest_kernel'])}{', '.join(sorted(seen['env_guest_kernel']))} "
                     f"({accels})")
    if seen.get("env_host"):
        hosts = sorted(seen["env_host"])
        parts.append(("host " if len(hosts) == 1 else "hosts ") + ", ".join(hosts))
    return "; ".join(parts)


def _image(sw: Sweep, releases) -> str:
    """The kernel image a sweep's run booted, as its manifest records it ("series:6.12, image 173b5704, "): two
    builds of one release (the series and its base, both 6.12.118) read apart by name and digest. Nothing when
    none of the kernel rows ran its release (`releases`): a model with a guest of its own (the arm64 reclaim
    probe) boots its own kernels, not the [kernel] image."""
    kernel = (((sw.manifest.get("computation") or {}).get("identity") or {}).get("spec") or {}).get("kernel") or {}
    image, digest = kernel.get("image"), kernel.get("image_sha256")
    if not image or (kernel.get("release") and kernel["release"] not in releases):
        return ""
    name = image if ":" in image and "/" not in image else Path(image).parent.name if Path(image).name in (
        "bzImage", "vmlinux") else Path(image).name
    return f"{name}, image {digest[:8]}, " if digest else f"{name}, "


def text(cmp: Comparison) -> str:
    """The comparison as mailing-list text: a header, then per block a summary line and its tables."""
    out = ["memsweep compare: B/A per point_id over ok rows", f"sweep A = {cmp.a.name}: {what(cmp.a)}",
           f"sweep B = {cmp.b.name}: {what(cmp.b)}",
           f"profile of A {cmp.a.profile_status()}", f"profile of B {cmp.b.profile_status()}",
           *header_lines(cmp)]
    for bl in cmp.blocks:
        out += ["", f"{bl.title}: {bl.heading}", summary_line(bl), *bl.references, *rule_lines(bl),
                *evidence_lines(bl)]
        if bl.tables:
            out += bl.view.note()
        for t in bl.tables:
            out += ["", f"{t.title}:", render(list(t.frame.columns), [list(r) for r in t.frame.iter_rows()])]
        lines = only_lines(bl)
        if lines:
            out += ["", *lines]
    return "\n".join(out)


def default_name(cmp: Comparison) -> str:
    """`compare-<A name>.html`, the name made safe for a file."""
    return f"{COMPARE_PREFIX}{re.sub(r'[^A-Za-z0-9._-]+', '_', cmp.a.name).strip('.') or 'a'}.html"


def _listed(j: pl.LazyFrame, rows: ModelRows, view: View, compared: int) -> tuple[pl.DataFrame, int]:
    """The rows the mail lists (mail.py), each distinct row once (axes.merged): every one when there are at
    most MAIL_ROWS, else the TOP largest changes by |log B/A|; and how many distinct rows were left out.
    The configuration is one column per shown axis (`cfg_<axis>`, its labels), and `points` per row."""
    each = ratios.each_configuration(j, view, compared, MAIL_ROWS)
    df = each if each is not None else ratios.largest(j, view)
    more = 0 if each is not None else max(merged(j, view).select(pl.len()).collect().item() - df.height, 0)
    df = df.with_columns(ratios.significant().alias("significant"))
    config = cells(rows, df, view)
    return df.with_columns(*(pl.Series(f"cfg_{k}", v, dtype=pl.Utf8) for k, v in config.items() if k != "points"),
                           pl.col("points") if "points" in df.columns else pl.lit(1).alias("points")), more
