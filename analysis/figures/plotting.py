"""Plot plumbing shared by the figures: Agg backend, theme, binary-size axes, saving PNG + SVG.

Only the analysis package imports matplotlib and seaborn; the backend is set to
Agg before pyplot loads, so figures render without a display.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, LogFormatter, MultipleLocator, NullLocator  # noqa: E402

from workers.units import binary_size  # noqa: E402

DPI = 110


@dataclass(frozen=True, kw_only=True, slots=True)
class Rendered:
    """A figure written to disk: PNG (embedded in the report) and SVG beside it."""

    id: str
    title: str
    caption: str
    png: Path
    svg: Path
    panels: int = 0  # data panels (Axes other than colour bars) drawn
    empty_panels: int = 0  # of those, panels with nothing plotted (see panel_counts)


@dataclass(frozen=True, kw_only=True, slots=True)
class Skipped:
    """A figure the sweep cannot draw (model or columns absent, nothing varies), and why."""

    id: str
    title: str
    reason: str


def theme() -> None:
    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.95)


def size_ticks(lo: float, hi: float, max_ticks: int = 8) -> list[float]:
    """Powers of two from lo to hi, thinned to at most `max_ticks` (anchored on exponent multiples)."""
    if lo <= 0 or hi <= 0:
        return []
    e_lo, e_hi = math.floor(math.log2(lo) + 1e-9), math.ceil(math.log2(hi) - 1e-9)
    for step in (1, 2, 3, 4, 5, 10, 20):
        ticks = [2.0 ** e for e in range(e_lo, e_hi + 1) if e % step == 0]
        if len(ticks) <= max_ticks:
            return ticks or [2.0 ** e_lo]
    return [2.0 ** e_lo, 2.0 ** e_hi]


def size_axis(ax, which: str, lo: float, hi: float, log: bool = True) -> None:
    """A byte axis: log base 2 when the values span more than a factor 4, binary-unit labels."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    if log and hi / max(lo, 1) > 4:
        (ax.set_xscale if which == "x" else ax.set_yscale)("log", base=2)
        axis.set_major_locator(FixedLocator(size_ticks(lo, hi)))
        axis.set_minor_locator(NullLocator())
    elif hi > lo:  # linear: ticks at multiples of a power of two, so labels read 1.5GiB, 1.75GiB
        axis.set_major_locator(MultipleLocator(2.0 ** math.floor(math.log2((hi - lo) / 3))))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: binary_size(v)))


def log_if_wide(ax, which: str, lo: float, hi: float, factor: float = 30.0) -> bool:
    """Log scale (base 10) on an axis whose positive values span more than `factor`."""
    if lo > 0 and hi / lo > factor:
        (ax.set_xscale if which == "x" else ax.set_yscale)("log")
        plain_log_labels(ax.xaxis if which == "x" else ax.yaxis)
        return True
    return False


def square_log_axes(ax, lo: float, hi: float) -> None:
    """Both axes log over [lo, hi] with plain labels: a parity plot's frame."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    plain_log_labels(ax.xaxis)
    plain_log_labels(ax.yaxis)


def plain_log_labels(axis) -> None:
    """Label a log axis with plain numbers (300, 4000), minor ticks too when it spans few decades."""
    for setter in (axis.set_major_formatter, axis.set_minor_formatter):
        pick_labels = LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5))
        setter(_PlainLog(pick_labels))


def save(fig, outdir: Path, fid: str, title: str, caption: str) -> Rendered:
    """Write `fig` as <fid>.png and <fid>.svg under outdir and close it."""
    outdir.mkdir(parents=True, exist_ok=True)
    stem = fid.replace("/", "_")
    png, svg = outdir / f"{stem}.png", outdir / f"{stem}.svg"
    # bbox_inches="tight" lays the figure out once more per file: lay it out once, crop both alike
    fig.draw_without_rendering()
    bbox = fig.get_tightbbox(fig.canvas.get_renderer()).padded(0.1)
    fig.savefig(png, dpi=DPI, bbox_inches=bbox)
    fig.savefig(svg, bbox_inches=bbox)
    panels, empty = panel_counts(fig)
    plt.close(fig)
    return Rendered(id=fid, title=title, caption=caption, png=png, svg=svg, panels=panels, empty_panels=empty)


def panel_counts(fig) -> tuple[int, int]:
    """(panels, empty panels) of a figure: its visible Axes other than colour bars, and those of them
    with no data drawn (no line with a finite point, no marker, no bar, no heatmap cell with a value)."""
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
    return len(panels), sum(not has_data(ax) for ax in panels)


def has_data(ax) -> bool:
    """Whether an Axes shows data: a line in data coordinates with a finite point (reference lines
    such as axvline do not count), scatter markers, a filled area or line segments, a heatmap cell
    with a value, a bar, or an image."""
    for line in ax.get_lines():
        xy = np.asarray(line.get_xydata(), dtype=float)
        if line.get_transform() is ax.transData and xy.size and np.isfinite(xy).all(axis=-1).any():
            return True
    for coll in ax.collections:
        values = coll.get_array()
        if values is not None:
            if np.ma.count(np.ma.masked_invalid(values)):
                return True
        elif isinstance(coll, PathCollection):  # scatter: its paths are the marker, offsets the points
            if len(coll.get_offsets()):
                return True
        elif len(coll.get_paths()):
            return True
    return bool(ax.patches) or bool(ax.images)


COINCIDE_REL = 1e-3  # lines this close at every x hide one another (a pixel is ~0.3% of a panel's height)
STRIPE = 5.0  # points of one colour along a striped line


def coinciding(series: dict[object, tuple[list, list]]) -> list[list]:
    """Groups (two or more, in the given order) of the series {key: (xs, ys)} that hide one another in a
    panel: every x of one is an x of another and their ys agree there within COINCIDE_REL."""
    groups: list[list] = []
    for key, xy in series.items():
        mine = _points(xy)
        for g in groups:
            theirs = _points(series[g[0]])
            common = mine.keys() & theirs.keys()
            if common and common in (mine.keys(), theirs.keys()) and all(
                    abs(mine[x] - theirs[x]) <= COINCIDE_REL * max(abs(mine[x]), abs(theirs[x])) for x in common):
                g.append(key)
                break
        else:
            groups.append([key])
    return [g for g in groups if len(g) > 1]


def _points(xy: tuple[list, list]) -> dict:
    return {x: y for x, y in zip(*xy) if y is not None and np.isfinite(y)}


def stripe(ax, lines: list[tuple[list, list, object]], lw: float = 1.6) -> None:
    """Draw coinciding lines [(xs, ys, colour)] again over one another in alternating dashes, so that every
    colour shows along the shared path; a line of one or two points (too short to stripe) as rings of
    decreasing size instead."""
    k = len(lines)
    for i, (xs, ys, colour) in enumerate(lines):
        short = len(xs) <= 2
        ax.plot(xs, ys, color=colour, lw=lw, linestyle=(i * STRIPE, (STRIPE, (k - 1) * STRIPE)), zorder=3.5,
                marker="o" if short else None, markersize=8.0 - 5.0 * i / max(k - 1, 1), markeredgewidth=0)


class _PlainLog(FuncFormatter):
    """LogFormatter's choice of which ticks get a label, printed as plain numbers (20000, not 2e+04)."""

    def __init__(self, inner: LogFormatter) -> None:
        self.inner = inner
        super().__init__(lambda v, pos: f"{v:g}" if v < 1e6 else f"{v:.0e}")

    def set_axis(self, axis) -> None:
        super().set_axis(axis)
        self.inner.set_axis(axis)

    def set_locs(self, locs) -> None:
        self.inner.set_locs(locs)

    def __call__(self, x, pos=None) -> str:
        return super().__call__(x, pos) if self.inner(x, pos) else ""
