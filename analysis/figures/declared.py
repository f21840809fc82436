"""Every figure a model declares (its report's `plots`: workers.plots.Lines, or a workers.hooks.Hook whose
function returns a Heatmap), drawn by one generic path.

For each declared plot of a model in the sweep: check the columns it needs, hold
every other varying axis at one value (analysis.read.pin: the `hold` value,
else the axis default, else the most common; POOL axes are pooled instead),
take the median of the metric per (panel, series, x) with polars, and draw the
small frame with seaborn. A figure whose rows the sweep lacks is Skipped with
the reason, never drawn empty: panels are the combinations that have rows.
Every function takes the model's rows (analysis.read.ModelRows) and the declaration.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import seaborn as sns

from analysis.metrics import HookRows, choose, not_varying, ok, shown_values, value_order
from analysis.read import ModelRows, Sweep, cond_expr, value_expr
from workers import interval
from workers.hooks import Heatmap, Hook, is_in
from workers.model import Model
from workers.plots import MAX_X, Lines, Series, X, cond_columns, holds

from .plotting import (
    COINCIDE_REL,
    Rendered,
    Skipped,
    binary_size,
    coinciding,
    log_if_wide,
    plain_log_labels,
    save,
    size_axis,
    stripe,
)

MAX_COLS = 4
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
DASHES = ("", (4, 1.5), (1, 1.2), (3, 1, 1, 1), (6, 2), (2, 2))
LOG_FACTOR = 30.0  # "auto" y scales go log when the values span more than this
BAND_ALPHA = 0.15  # a series' error band: light enough that lines and other bands show through
BANDS = (" Bands: each modeled answer's error bar: the answer moved by the most over- and the most "
         "under-predicted figure its fit held out, the answers of the fits that left one figure out and of "
         "assumed ranges' ends, and wider where no figure checked the point (workers/interval.py).")


def declared(sweep: Sweep) -> list[tuple[str, Lines | Hook]]:
    """(model, plot) for every plot declared by a model the sweep names (Sweep.named_models), in
    declaration order."""
    out = []
    for name in sweep.named_models():
        obj = sweep.model_object(name)
        out += [(name, p) for p in (obj.report.plots if obj is not None else ())]
    return out


def draw(rows: ModelRows, plot: Lines | Hook, outdir: Path) -> Rendered | Skipped:
    """One declared figure of the model whose rows these are, rendered or skipped with its reason."""
    why = f"model absent: this sweep has no {rows.name} rows" if rows.name not in rows.sweep.models else \
        _lacking(rows, plot)
    if why:
        return Skipped(id=plot.id, title=plot.title, reason=why)
    if isinstance(plot, Hook):
        return _hooked(rows, plot, outdir)
    return _lines(rows, plot, outdir)


# ----- shared pieces -----

def _lacking(rows: ModelRows, p: Lines | Hook) -> str | None:
    """Why the model's rows cannot give this plot: a column it needs is absent."""
    if not isinstance(p, Lines):
        return None  # a hook says itself what it lacks
    have = rows.schema()
    need = [*p.y.metrics, *(c for c in (p.hue.column, p.overlay.flag) if c)]
    need += [p.x[0].column] if len(p.x) == 1 else []  # of alternatives, those the rows have are drawn
    lacking = [c for c in need if c not in have]
    if lacking:
        return f"the {rows.name} rows lack the columns {lacking} (written by another model version)"
    return None


def no_rows(model: str, metric: str, held: str) -> str:
    """The skip reason of a figure whose slice has no value to plot (e.g. measured rows, which fill
    only a model's headline metric)."""
    return f"no ok {model} rows with a value of {metric} in the slice shown" + (f" ({held})" if held else "")


def held_text(held: str) -> str:
    return f" Other axes held at: {held}." if held else ""


def _name(column: str) -> str:
    return column.removeprefix("param_").removeprefix("metric_")


def _where(rows: ModelRows, conds) -> pl.Expr:
    schema, varying = rows.schema(), set(rows.varying())
    expr = pl.lit(True)
    for c in conds:
        e = cond_expr(c, schema, varying)
        if e is not None:
            expr = expr & e
    return expr


def _published(obj: Model | None, p: Lines) -> list:
    """The model's published figures the plot overlays, their parameters canonical."""
    if obj is None or not p.overlay.published:
        return []
    out = []
    for f in obj.calibration.figures:
        params = {a.column: a.canonical(f.params[a.name]) for a in obj.axes if a.name in f.params}
        if all(holds(c, params) for c in p.overlay.published_when):
            out.append((f, params))
    return out


def _grid(n: int, width: float, height: float, extra: float = 0.6, **kw):
    """n panels in rows of at most MAX_COLS; the unused slots of the last row are removed (so nothing
    empty is drawn) and the panels above them get x tick labels."""
    cols = min(MAX_COLS, n)
    nrows = -(-n // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(width * cols, height * nrows + extra), squeeze=False, **kw)
    flat = list(axes.flat)
    for i, ax in enumerate(flat[n:], start=n):
        fig.delaxes(ax)
        if i - cols >= 0:
            flat[i - cols].xaxis.set_tick_params(labelbottom=True)
    return fig, flat[:n]


def _combos(df: pl.DataFrame, columns: list[str]) -> list[dict]:
    """The combinations of `columns` that have rows in `df`, sorted: one panel each, none empty."""
    if not columns:
        return [{}] if df.height else []
    return df.select(columns).unique().sort(columns, nulls_last=True).to_dicts()


def _select(combo: dict) -> pl.Expr:
    expr = pl.lit(True)
    for c, v in combo.items():
        expr = expr & value_expr(c, v)
    return expr


def _combo_title(rows: ModelRows, combo: dict) -> str:
    return ", ".join(f"{_name(c)}={rows.label(c, v)}" for c, v in combo.items())


def _ordered(present: list, first: tuple) -> list:
    head = [v for v in first if v in present]
    return head + sorted((v for v in present if v not in head), key=value_order)


# ----- lines -----

@dataclass(frozen=True, slots=True)
class _Slice:
    """What a lines figure shows of the rows: its x columns that the rows have, the split column and
    style series (None when absent), the series columns, the facets with their values, and the
    published figures it overlays."""

    xs: list[X]
    split: str | None
    style: Series | None
    series: list[str]
    facets: dict[str, list]
    published: list


@dataclass(frozen=True, slots=True)
class _Panel:
    """One panel of a lines figure: its x column, split value, facet combination, metric and medians."""

    x: X
    split: object
    combo: dict
    metric: str
    frame: pl.DataFrame


@dataclass(frozen=True, slots=True)
class _Look:
    """How the series are drawn: the hue labels in order with their colours; the style labels with their
    markers and dashes."""

    hue_names: list[str]
    palette: dict
    style_names: list[str]
    markers: dict
    dashes: dict


def _lines(rows: ModelRows, p: Lines, outdir: Path) -> Rendered | Skipped:
    """The median of the plot's metric per (panel, series, x), as lines (see the module doc)."""
    s = _slice(rows, p)
    if isinstance(s, Skipped):
        return s
    frames, helds = [], []
    for x in s.xs:
        frame, held = _medians(rows, p, s, x)
        frames.append((x, frame))
        helds.append((x, rows.describe(held)))
    held_all = "; ".join(f"{_name(x.column)} panel: {h or 'nothing'}" for x, h in helds) if len(helds) > 1 \
        else helds[0][1]
    panels = _panels(p, s, frames)
    if not panels:
        return Skipped(id=p.id, title=p.title, reason=no_rows(rows.name, " or ".join(p.y.metrics), held_all))
    # too few x values after the filters: nothing to draw a line through
    if all(panel.frame[panel.x.column].n_unique() < 2 for panel in panels) and len(p.x) == 1:
        return Skipped(id=p.id, title=p.title, reason=f"fewer than two values of {_name(s.xs[0].column)} among "
                                                         f"the ok {rows.name} rows shown")
    look = _look(rows, p, s, panels)
    fig, overlaps = _draw_lines(rows, p, s, panels, look)
    caption = p.caption
    if s.facets:
        caption += f" One panel per combination of {', '.join(_name(c) for c in s.facets)} with feasible points."
    for c in (series.column for series in (p.hue, s.style) if series and series.most):
        shown = sorted({v for panel in panels if c in panel.frame.columns for v in panel.frame[c].to_list()},
                       key=value_order)
        if shown:
            caption += f" {_name(c)} shown: {', '.join(rows.label(c, v) for v in shown)}."
    if has_bands(panels):
        caption += BANDS
    caption += _overlap_caption(overlaps) + held_text(held_all)
    return save(fig, outdir, p.id, p.title, caption)


def _slice(rows: ModelRows, p: Lines) -> _Slice | Skipped:
    """The columns a lines figure shows, or why it cannot be drawn (no x column varies)."""
    schema, varying = rows.schema(), set(rows.varying())
    xs = [x for x in p.x if x.column in schema]
    if len(p.x) > 1:
        xs = [x for x in xs if x.column in varying][:MAX_X]
        if not xs:
            names = ", ".join(_name(x.column) for x in p.x)
            return Skipped(id=p.id, title=p.title, reason=f"none of {names} varies among the ok {rows.name} rows of "
                                                             "this sweep")
    else:
        why = not_varying(rows, [x.column for x in xs])
        if why:
            return Skipped(id=p.id, title=p.title, reason=why)
    split = p.panels.split if p.panels.split in schema else None
    style = p.style if p.style and p.style.column in schema else None
    series = [p.hue.column, *([style.column] if style else [])]
    facets = choose(rows, p.panels.facets, p.panels.most, {*(x.column for x in xs), *series, split}, MAX_COLS,
                    p.panels.keep)
    return _Slice(xs=xs, split=split, style=style, series=series, facets=facets,
                  published=_published(rows.model, p))


def _medians(rows: ModelRows, p: Lines, s: _Slice, x: X) -> tuple[pl.DataFrame, dict]:
    """The median of the metric(s) per (facets, split, series, x) over the ok rows of the slice shown
    against `x`, and the axes held fixed to get it ({column: value})."""
    prefer: dict = {}
    for _, params in s.published:  # hold the other axes where the published figures were taken (the first wins)
        for c, v in params.items():
            prefer.setdefault(c, v)
    prefer.update(p.prefer)
    split = [s.split] if s.split else []
    # the axes a declared condition filters are not also held at one value
    filtered = [c for cond in p.where for c in cond_columns(cond)]
    expr, held = rows.pin([x.column, *s.series, *s.facets, *split, *p.pooled, *filtered], prefer)
    for c, values in s.facets.items():
        expr = expr & is_in(c, values)
    for series in (p.hue, s.style):
        if series and series.most:
            expr = expr & is_in(series.column, shown_values(rows, series.column, series.most))
    expr = expr & _where(rows, p.where) & pl.col(x.column).is_not_null()
    if x.min is not None:
        expr = expr & (pl.col(x.column) >= x.min)
    by = [*s.facets, *split, *s.series, x.column]
    flag = p.overlay.flag
    schema = rows.schema()
    bars = [c for m in p.y.metrics for c in interval.columns(m) if c in schema]  # each answer's error bar
    frame = (ok(rows.scan().filter(expr)).group_by(by)
             .agg(*(pl.col(m).median() for m in p.y.metrics), *(pl.col(c).median() for c in bars),
                  *([pl.col(flag).any()] if flag else []))
             .sort(by, nulls_last=True).collect(engine="streaming"))
    return frame, held


def _panels(p: Lines, s: _Slice, frames: list[tuple[X, pl.DataFrame]]) -> list[_Panel]:
    """The panels that have a finite value to draw: per x column, split value and facet combination."""
    panels = []
    for x, df in frames:
        splits = _ordered(df[s.split].unique().to_list(), p.panels.order) if s.split else [None]
        for value in splits:
            part = df.filter(value_expr(s.split, value)) if s.split else df
            metric = p.y.metric_of(value)
            if metric not in part.columns:
                continue
            part = part.filter(pl.col(metric).is_not_null() & pl.col(metric).is_finite())
            if p.y.scale == "size":  # a log2 byte axis: zero bytes has no place on it
                part = part.filter(pl.col(metric) > 0)
            for combo in _combos(part, list(s.facets)):
                panel = part.filter(_select(combo)).sort(x.column)
                if panel.height:
                    panels.append(_Panel(x=x, split=value, combo=combo, metric=metric, frame=panel))
    return panels


def _look(rows: ModelRows, p: Lines, s: _Slice, panels: list[_Panel]) -> _Look:
    """Colours for the hue values, markers and dashes for the style values (declared order first)."""
    def names(series: Series | None) -> list[str]:
        if series is None:
            return []
        values = _ordered(list({v for panel in panels for v in panel.frame[series.column].to_list()}), series.order)
        return [rows.label(series.column, v) for v in values]

    hue_names, style_names = names(p.hue), names(s.style)
    return _Look(hue_names=hue_names, palette=dict(zip(hue_names, sns.color_palette("colorblind", len(hue_names)))),
                 style_names=style_names, markers=dict(zip(style_names, MARKERS)),
                 dashes=dict(zip(style_names, DASHES)))


def _draw_lines(rows: ModelRows, p: Lines, s: _Slice, panels: list[_Panel], look: _Look):
    """The figure of the panels, and the series that coincide in each panel [(panel title, names)]."""
    shared_y = len({panel.metric for panel in panels}) == 1
    shared_x = len(s.xs) == 1 and s.xs[0].scale != "ordinal_size"
    width = 3.9 if len(panels) > 2 else 5.4
    if all(x.scale in ("ticks", "order") for x in s.xs):  # one slot per value: room for their labels
        width = min(8.0, max(width, 0.5 * max(panel.frame[panel.x.column].n_unique() for panel in panels) + 1.5))
    fig, axes = _grid(len(panels), width, 3.4 if len(panels) > 2 else 4.2, sharex=shared_x, sharey=shared_y)
    all_x: set = set()
    all_y: list = []
    overlaps: list[tuple[str, list[str]]] = []  # (panel title, the series that coincide in it)
    for k, (ax, panel) in enumerate(zip(axes, panels)):
        xvalues, yvalues, overlap = _draw_panel(ax, rows, p, s, panel, look)
        overlaps.append(overlap)
        all_x.update(xvalues)
        all_y.extend(yvalues)
        if not shared_x:
            _x_axis(ax, panel.x.scale, xvalues)
        if panel.x.scale == "size":
            ax.tick_params(axis="x", labelrotation=45)
        elif panel.x.scale == "order":  # two lines a tick; on every panel, as shared axes label each their own
            ax.tick_params(axis="x", labelsize=8)
        if not shared_y:
            _y_axis(ax, p.y.scale, yvalues)
        ax.set_xlabel(panel.x.text)
        ax.set_ylabel(p.y.text(panel.split, panel.metric) if (not shared_y or k % MAX_COLS == 0) else "")
        ax.set_title(overlap[0], fontsize=9)
    # shared axes are scaled once, over every panel's values (a second call would undo the first's limits)
    if shared_x:
        _x_axis(axes[0], s.xs[0].scale, sorted(all_x))
    if shared_y:
        _y_axis(axes[0], p.y.scale, all_y)
    _legend(fig, p, look, s.style, bool(s.published))
    fig.suptitle(p.title)
    fig.tight_layout()
    return fig, overlaps


def _draw_panel(ax, rows: ModelRows, p: Lines, s: _Slice, panel: _Panel, look: _Look):
    """One panel's lines, flags and published crosses: (its x values, its y values, (its title, the
    series that coincide in it)); the caller scales and labels its axes."""
    x, metric, hue = panel.x.column, panel.metric, p.hue.column
    xvalues = sorted(panel.frame[x].unique().to_list())
    frame = panel.frame.with_columns(
        pl.Series("_hue", [rows.label(hue, v) for v in panel.frame[hue].to_list()], dtype=pl.Utf8),
        pl.Series("_style", [rows.label(s.style.column, v) for v in panel.frame[s.style.column].to_list()],
                  dtype=pl.Utf8) if s.style else pl.lit("").alias("_style"),
        (pl.col(metric) * (100.0 if p.y.scale == "percent" else 1.0)).alias("_y"),
        (pl.col(x).replace_strict({v: i for i, v in enumerate(xvalues)}, return_dtype=pl.Float64)
         if panel.x.scale == "ordinal_size" else pl.col(x)).alias("_x"))
    # markers only while they stay apart: a thousand sizes would hide the lines
    kw = dict(style="_style", style_order=look.style_names, markers=look.markers, dashes=look.dashes) \
        if s.style else dict(marker="o")
    sns.lineplot(data=frame.to_pandas(), x="_x", y="_y", hue="_hue", hue_order=look.hue_names, palette=look.palette,
                 markersize=5 if len(xvalues) <= 40 else 0, ax=ax, errorbar=None, legend=False, alpha=0.9, **kw)
    band = _bands(ax, frame, metric, 100.0 if p.y.scale == "percent" else 1.0, look.palette)
    title = _panel_title(rows, p, s, panel)
    overlap = (title, _overlaps(ax, frame, look.palette, (look.hue_names, look.style_names),
                                _name(s.style.column) if s.style else ""))
    if p.overlay.flag:
        for hname in look.hue_names:
            mine = frame.filter((pl.col("_hue") == hname) & pl.col(p.overlay.flag).fill_null(False))
            ax.scatter(mine["_x"], mine["_y"], color=look.palette[hname], s=90, marker="*", edgecolor="black",
                       zorder=4)
    crosses = [(params.get(x), f.published) for f, params in s.published
               if f.metric == metric and (panel.split is None or params.get(s.split) == panel.split)
               and params.get(x) is not None]
    if crosses:
        ax.scatter([a for a, _ in crosses], [b for _, b in crosses], marker="X", s=70, color="black", zorder=5)
    return xvalues + [a for a, _ in crosses], frame["_y"].to_list() + band + [b for _, b in crosses], overlap


def _bands(ax, frame: pl.DataFrame, metric: str, scale: float, palette: dict) -> list[float]:
    """Each series' error bar (workers.interval) as a light band around its line; the band's ends (for the
    y axis), [] when the rows carry none."""
    lo, hi = interval.columns(metric)
    if lo not in frame.columns or hi not in frame.columns:
        return []
    ends = []
    for (hue, _), part in frame.filter(pl.col(lo).is_not_null() & pl.col(hi).is_not_null()).group_by(
            "_hue", "_style", maintain_order=True):
        part = part.sort("_x")
        low, high = (part[lo].cast(pl.Float64) * scale).to_list(), (part[hi].cast(pl.Float64) * scale).to_list()
        ax.fill_between(part["_x"].to_list(), low, high, color=palette[hue], alpha=BAND_ALPHA, linewidth=0, zorder=1)
        ends += low + high
    return ends


def has_bands(panels) -> bool:
    """Whether any panel's rows carry error bars of the metric it draws."""
    lows = ((p.frame, interval.columns(p.metric)[0]) for p in panels)
    return any(lo in frame.columns and frame[lo].is_not_null().any() for frame, lo in lows)


def _overlaps(ax, frame: pl.DataFrame, palette: dict, order: tuple[list, list], style_name: str) -> list[str]:
    """The series of a panel that coincide (plotting.coinciding), named; those of different colours are
    drawn again over one another (plotting.stripe), so that no colour hides another."""
    hues, styles = order
    keyed = {k: (part["_x"].to_list(), part["_y"].to_list())
             for k, part in frame.sort("_x").group_by(["_hue", "_style"], maintain_order=True)}
    keys = sorted(keyed, key=lambda k: (hues.index(k[0]) if k[0] in hues else -1,
                                        styles.index(k[1]) if k[1] in styles else -1))
    names = []
    for group in coinciding({k: keyed[k] for k in keys}):
        one = {k[0]: k for k in group}  # a line per colour
        if len(one) > 1 and palette:
            stripe(ax, [(*keyed[k], palette[h]) for h, k in one.items()])
        names.append(_coincide_name(group, style_name))
    return names


def _coincide_name(group: list[tuple[str, str]], style_name: str) -> str:
    """`slow = template`; `PMD (order 9) = PUD (order 18), namespace_size 4MiB = 8GiB` (every combination
    coincides); else each series as `hue (style)`."""
    hues = [h for h in dict.fromkeys(h for h, _ in group) if h]
    styles = [v for v in dict.fromkeys(v for _, v in group) if v]
    if len(group) != max(len(hues), 1) * max(len(styles), 1):
        return " = ".join(f"{h} ({v})" if h and v else h or v for h, v in group)
    parts = [" = ".join(hues)] if hues else []
    if styles:
        parts.append(f"{style_name} {' = '.join(styles)}")
    return ", ".join(parts)


def _overlap_caption(overlaps: list[tuple[str, list[str]]]) -> str:
    """A caption sentence naming the series that coincide, and in which panels (none: empty)."""
    where: dict[str, list[str]] = {}
    for title, names in overlaps:
        for n in names:
            where.setdefault(n, []).append(title)
    if not where:
        return ""
    every = len(overlaps)
    parts = [n if every == 1 else f"{n} ({'every panel' if len(ts) == every else '; '.join(ts)})"
             for n, ts in where.items()]
    return (f" Lines that coincide (within {COINCIDE_REL:.1%}; drawn in alternating dashes where their colours "
            f"differ): {'; '.join(parts)}.")


def _panel_title(rows: ModelRows, p: Lines, s: _Slice, panel: _Panel) -> str:
    parts = []
    if len(s.xs) > 1:
        parts.append(f"vs {_name(panel.x.column)}")
    if s.split:
        text = rows.label(s.split, panel.split)
        parts.append(p.panels.title.format(value=text) if p.panels.title else f"{_name(s.split)}={text}")
    if panel.combo:
        parts.append(_combo_title(rows, panel.combo))
    return ", ".join(parts) or p.title


def _x_axis(ax, scale: str, values: list) -> None:
    if scale == "ordinal_size":
        ax.set_xticks(range(len(values)), [binary_size(v) for v in values], rotation=30)
    elif scale == "order":
        ax.set_xticks(values, [f"{o}\n{binary_size(4096 << int(o))}" for o in values])
    elif scale == "ticks":
        ax.set_xticks(values)
    elif scale == "log":
        if min(values) > 0:
            ax.set_xscale("log")
            plain_log_labels(ax.xaxis)
    else:
        positive = [v for v in values if v and v > 0]
        if positive:
            size_axis(ax, "x", min(positive), max(positive))


def _y_axis(ax, scale: str, values: list) -> None:
    ys = [v for v in values if v is not None and np.isfinite(v)]
    if not ys:
        return
    lo, hi = min(ys), max(ys)
    if scale == "percent":
        ax.set_ylim(-3, 103)
    elif scale == "size":
        size_axis(ax, "y", max(lo, 1), max(hi, 1))
    elif not log_if_wide(ax, "y", max(lo, 1e-12) if lo > 0 else lo, hi, LOG_FACTOR) and hi > 0 and lo >= 0:
        ax.set_ylim(0, hi * 1.08)


def _legend(fig, p: Lines, look: _Look, style: Series | None, published: bool) -> None:
    handles = [plt.Line2D([], [], color=look.palette[n], marker="o", markersize=4, label=n) for n in look.hue_names]
    if style:
        handles.append(plt.Line2D([], [], color="none", label=f"{style.title or _name(style.column)}:"))
        handles += [plt.Line2D([], [], color="0.3", marker=look.markers[n], dashes=look.dashes[n] or (None, None),
                               markersize=5, label=n) for n in look.style_names]
    if p.overlay.flag:
        handles.append(plt.Line2D([], [], color="none", marker="*", markersize=11, markerfacecolor="white",
                                  markeredgecolor="black", label=_name(p.overlay.flag).replace("_", " ")))
    if published:
        handles.append(plt.Line2D([], [], color="none", marker="X", markersize=8, markerfacecolor="black",
                                  markeredgecolor="black", label="published"))
    if handles:
        fig.legend(handles=handles, title=p.hue.title or _name(p.hue.column), loc="upper center",
                   ncol=min(len(handles), 6), fontsize=8, bbox_to_anchor=(0.5, 0.0))


# ----- a model's own figure -----

def _hooked(rows: ModelRows, p: Hook, outdir: Path) -> Rendered | Skipped:
    """A figure the model computes itself (workers.hooks): its Heatmap drawn, or skipped with its reason."""
    got = HookRows(rows.sweep, rows.name).call(p, Heatmap, str)  # draw() has checked the sweep has the model
    if got is None or isinstance(got, str):
        return Skipped(id=p.id, title=p.title, reason=got or f"{p.call} drew nothing from these rows")
    title = f"{p.title} across {' x '.join(_name(c) for c in got.grid)}"
    fig = _draw_heatmaps(rows, got.frame, list(got.grid), list(got.facets), got.colorbar)
    fig.suptitle(title)
    fig.tight_layout()
    return save(fig, outdir, p.id, title, got.caption + held_text(rows.describe(dict(got.held))))


def _draw_heatmaps(rows: ModelRows, df: pl.DataFrame, grid: list[str], facets: list[str], colorbar: str):
    """One heatmap of `value` per facet combination that has rows, coloured from 1 up; the first grid axis
    down the rows when there are two, the last across."""
    row_axis, col_axis = (grid[0], grid[1]) if len(grid) == 2 else (None, grid[0])
    cols = sorted(df[col_axis].unique().to_list(), key=value_order)
    lines = sorted(df[row_axis].unique().to_list(), key=value_order) if row_axis else [None]
    combos = _combos(df, facets)
    vmax = float(df["value"].max() or 1.0)
    fig, axes = _grid(len(combos), 0.75 * len(cols) + 1.6, max(2.6, 0.55 * len(lines) + 1.5))
    for k, (ax, combo) in enumerate(zip(axes, combos)):
        values = np.full((len(lines), len(cols)), np.nan)
        for r in df.filter(_select(combo)).iter_rows(named=True):
            values[lines.index(r[row_axis]) if row_axis else 0, cols.index(r[col_axis])] = r["value"]
        sns.heatmap(values, ax=ax, annot=True, fmt=".2f", cmap="viridis", vmin=1.0, vmax=max(vmax, 1.01),
                    cbar=k == len(combos) - 1,
                    cbar_kws={"label": colorbar},
                    xticklabels=[rows.label(col_axis, v) for v in cols],
                    yticklabels=[rows.label(row_axis, v) for v in lines] if row_axis else False,
                    annot_kws={"fontsize": 8})
        ax.set_facecolor("0.88")
        ax.grid(False)
        ax.tick_params(axis="y", labelrotation=0)
        ax.set_title(_combo_title(rows, combo) or "all rows", fontsize=9)
        ax.set_xlabel(_name(col_axis).replace("_", " "))
        ax.set_ylabel(_name(row_axis).replace("_", " ") if row_axis and k % MAX_COLS == 0 else "")
    return fig
