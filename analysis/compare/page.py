"""The page of `memsweep compare`: one ratio figure and the comparison's tables, self-contained like report.html,
written atomically beside sweep B (or where --out says).

The figure has one row per compared block (model, metric, pair of sources):
left, the distribution of B/A over the compared points (counts per bin of
log B/A, aggregated by polars); right, B/A per group of the axes the text
table groups by (median, 10-90% range, min-max). seaborn never sees raw rows.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import matplotlib.pyplot as plt
import polars as pl
import seaborn as sns
from matplotlib.ticker import FuncFormatter, MaxNLocator

from analysis.figures.plotting import Rendered, Skipped, plain_log_labels, save, theme
from analysis.report.page import CSS, esc, html_figure, html_table
from workers.dataset.folder import at, write_files

from .compare import (
    BETTER,
    EQUAL_REL,
    NOISE,
    WORSE,
    Block,
    Comparison,
    default_name,
    only_lines,
    summary_line,
    text,
    what,
    words,
)

MAX_PANELS = 8  # blocks drawn; the rest are in the tables
TITLE = "B/A per point"


def ratio_figure(cmp: Comparison, outdir: Path, fid: str) -> Rendered | Skipped:
    """Per block: the histogram of B/A and B/A by group; PNG and SVG under outdir as <fid>.*"""
    compared = [b for b in cmp.blocks if b.compared and not b.categorical]  # a string metric has no ratio
    if not compared:
        why = "the metrics compared are strings: same or changed, in the tables" \
            if any(b.compared for b in cmp.blocks) else "no block has shared points"
        return Skipped(id=fid, title=TITLE, reason=why)
    varying = [b for b in compared if b.varies]
    pool = varying or compared  # blocks with one B/A everywhere are drawn only when no other is
    blocks, flat = pool[:MAX_PANELS], [b for b in compared if not b.varies] if varying else []
    theme()
    colours = sns.color_palette("colorblind", 8)
    palette = {BETTER: colours[2], WORSE: colours[3], "equal": (0.55, 0.55, 0.55)}
    heights = [max(2.8, 0.26 * b.groups.height + 1.4) for b in blocks]
    fig, axes = plt.subplots(len(blocks), 2, figsize=(13.0, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights, "width_ratios": [1.0, 1.3]})
    for (hx, gx), bl in zip(axes, blocks):
        _hist_panel(hx, bl, palette)
        _group_panel(gx, bl, palette)
    fig.suptitle(f"{TITLE}: B = {cmp.b.name} (profile {cmp.b.manifest.get('profile', '?')}) over "
                 f"A = {cmp.a.name} (profile {cmp.a.manifest.get('profile', '?')})")
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.3 / sum(heights)))
    left = len(pool) - len(blocks)
    same = "; ".join(f"{b.model} {b.source_a} vs {b.source_b}: {b.summary['median']:.3f}" for b in flat)
    caption = ("Left: how many compared points have each B/A (log scale; green: B better, red: B worse, grey: "
               "not a change by the rule (~) or equal). Right: B/A per group of the axes the tables group by: dot at the "
               "median (grey when no point of the group changed beyond the noise), thick bar from the 10th to the "
               "90th percentile, thin line from min to max."
               + (f" Not drawn, B/A the same at every point: {same}." if flat else "")
               + (f" {left} more blocks are in the tables only." if left else ""))
    return save(fig, outdir, fid, TITLE, caption)


def _direction(lo: float, hi: float, higher: bool) -> str:
    if lo <= 1 + EQUAL_REL and hi >= 1 - EQUAL_REL:
        return "equal"
    return BETTER if (lo > 1) == higher else WORSE


def _log_x(ax, lo: float | None, hi: float | None) -> None:
    """A log B/A axis around 1 and [lo, hi] (None, where no point has a ratio: around 1 alone)."""
    lo, hi = min(1.0 if lo is None else lo, 1.0) / 1.05, max(1.0 if hi is None else hi, 1.0) * 1.05
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    plain_log_labels(ax.xaxis)
    ax.axvline(1.0, color="0.25", lw=1)


def _hist_panel(ax, bl: Block, palette: dict) -> None:
    """Bars of points per bin of B/A: significant changes coloured by direction, the rest (`~`, `=`) grey."""
    h = bl.hist
    colours = [palette[_direction(lo, hi, bl.higher)] for lo, hi in h.select("lo", "hi").iter_rows()]
    left, width = h["lo"].to_list(), (h["hi"] - h["lo"]).to_list()
    ax.bar(left, h["significant"].to_list(), width=width, align="edge", color=colours, edgecolor="0.3",
           linewidth=0.3)
    ax.bar(left, (h["n"] - h["significant"]).to_list(), bottom=h["significant"].to_list(), width=width,
           align="edge", color=palette["equal"], edgecolor="0.3", linewidth=0.3)
    if h.height:
        _log_x(ax, h["lo"].min(), h["hi"].max())
    ax.yaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))  # a short panel: a few counts, in full
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    faster, slower = words(bl)
    ax.set_xlabel(f"B/A of {bl.metric.removeprefix('metric_')} (< 1: B {'lower' if not bl.higher else 'smaller'})")
    ax.set_ylabel("points")
    s = bl.summary
    ax.set_title(f"{bl.model}, {bl.source_a} vs {bl.source_b}: {bl.compared:,} points, "
                 f"{s[BETTER]:,} {faster}, {s[WORSE]:,} {slower}, {s[NOISE]:,} ~", fontsize=9)


def _group_panel(ax, bl: Block, palette: dict) -> None:
    g = bl.groups.with_row_index("pos").with_columns(
        pl.Series("direction", [_direction(m, m, bl.higher) if better + worse else "equal"
                                for m, better, worse in bl.groups.select("median", BETTER, WORSE).iter_rows()],
                  dtype=pl.Utf8))
    ax.hlines(g["pos"].to_list(), g["min"].to_list(), g["max"].to_list(), color="0.55", lw=1)
    ax.hlines(g["pos"].to_list(), g["q10"].to_list(), g["q90"].to_list(),
              color=[palette[d] for d in g["direction"].to_list()], lw=5, alpha=0.55)
    sns.scatterplot(data=g.select("pos", "median", "direction").to_pandas(), x="median", y="pos", hue="direction",
                    palette=palette, s=40, edgecolor="black", linewidth=0.5, ax=ax, legend=False, zorder=3)
    ax.set_yticks(g["pos"].to_list(), g["group"].to_list(), fontsize=7)
    ax.set_ylim(g.height - 0.5, -0.5)
    _log_x(ax, g["min"].min(), g["max"].max())
    ax.set_xlabel("B/A")
    ax.set_ylabel("")
    names = " x ".join(c.removeprefix("param_") for c in bl.group_axes) or "all points"
    ax.set_title(f"B/A by {names}", fontsize=9)


def page(cmp: Comparison, fig: Rendered | Skipped) -> str:
    """The whole comparison page as a string: summary and tables per block, the figure, the text output."""
    drawn = isinstance(fig, Rendered)
    sections = []
    for i, bl in enumerate(cmp.blocks):
        only = only_lines(bl)
        sections.append(
            f'<section id="block-{i}"><h2>{esc(bl.title)}</h2><p class="caption">{esc(bl.heading)}</p>'
            f"<p>{esc(summary_line(bl))}</p>" + "".join(html_table(t) for t in bl.tables)
            + (f"<pre>{esc(chr(10).join(only))}</pre>" if only else "") + "</section>")
    figure = html_figure(fig) if drawn else f'<p class="skipped">{esc(fig.title)}: {esc(fig.reason)}</p>'
    sides = "".join(f"<li><strong>{w}</strong> = {esc(s.name)}: {esc(what(s))} ({esc(s.uri)})</li>"
                    for w, s in (("A", cmp.a), ("B", cmp.b)))
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>memsweep compare: {esc(cmp.b.name)} vs {esc(cmp.a.name)}</title><style>{CSS}</style></head>",
        f'<body data-figure-count="{int(drawn)}">',
        f"<h1>memsweep compare: {esc(cmp.b.name)} (B) vs {esc(cmp.a.name)} (A)</h1>",
        f"<ul>{sides}</ul>",
        '<p class="caption">B/A per point_id over ok rows. "~": not a change (a side rests on samples, '
        '[measure_min, measure_max], or on a modeled answer\'s error bar, and the intervals overlap or B/A is within '
        '1% of 1); "n<3": too few samples for a verdict; "=": equal. A modeled value is printed with its error '
        'bar as stored, each side in % of the value (-a/+b; ± where both read the same).</p>',
        '<nav><a href="#figure">Figure</a><a href="#text">Text</a></nav>',
        f'<section id="figure"><h2>Figure</h2>{figure}</section>', *sections,
        f'<section id="text"><h2>As text</h2><pre>{esc(text(cmp))}</pre></section>',
        f'<footer class="caption">Generated by memsweep compare at {esc(time.strftime("%Y-%m-%d %H:%M:%S %Z"))}.'
        "</footer>", "</body></html>",
    ]
    return "\n".join(parts)


def write(cmp: Comparison, out: str | None = None) -> str:
    """Write the HTML comparison (figure PNG and SVG beside it) atomically; return where it went.

    Default: B's folder, _report/compare-<A name>.html (uploaded when B is on an object store);
    `out` is a file, or a folder to put compare-<A name>.html in."""
    name = default_name(cmp)
    if out is not None:
        target = Path(out) / name if Path(out).is_dir() or str(out).endswith("/") else Path(out)
        target.parent.mkdir(parents=True, exist_ok=True)
        loc, folder, shown = at(str(target.parent)), str(target.parent.resolve()), str(target)
    else:
        target = Path(name)
        loc, folder = cmp.b.loc, f"{cmp.b.root}/{cmp.b.layout.report}"
        base, sep, query = cmp.b.uri.partition("?")  # keep the URI's options last
        shown = (str(Path(folder) / name) if loc.is_local else f"{base}/{cmp.b.layout.report}/{name}{sep}{query}")
    with tempfile.TemporaryDirectory(prefix="memsweep-compare-") as tmp:
        work = Path(tmp)
        fig = ratio_figure(cmp, work, target.stem)
        (work / target.name).write_text(page(cmp, fig), encoding="utf-8")
        # each file written whole (temporary name and rename, or one PUT), the page last
        write_files(loc, folder, sorted(work.iterdir(), key=lambda p: p.suffix == ".html"))
    return shown
