"""Figures of the memmap model: init time vs size, best-speedup heatmap, memmap overhead."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import seaborn as sns

from .figures import held_text, missing, no_rows, not_varying
from .metrics import group_medians, ok, speedup
from .plotting import Rendered, Skipped, binary_size, log_if_wide, pick, save, size_axis
from .read import Sweep, describe, label, pin, value_expr

M = "memmap"
SIZE, P, MODE, MAP = "param_namespace_size", "param_struct_page_size", "param_mode", "param_map"
ALIGN, ORDER, STRATEGY = "param_align", "param_compound_order", "param_strategy"
MEDIUM, KMSAN = "param_medium", "param_nvdimm_kmsan"
STRATEGIES = ("slow", "template", "template_nt", "template_nt_inline")
# Show the 80/96-byte struct pages under map=dev too: CONFIG_NVDIMM_KMSAN only matters for P > 64.
PREFER = {"param_nvdimm_kmsan": True}
MAX_COLS = 4


def facet_values(sweep: Sweep, column: str, keep: tuple = ()) -> list:
    values = sweep.axis_values(M).get(column)
    if values is None:
        return [None]
    return pick(sorted(values["value"].to_list(), key=lambda v: (v is None, v or 0)), MAX_COLS, keep)


def choose_axes(sweep: Sweep, order: tuple[str, ...], limit: int, exclude: tuple = (),
                most_values: int = MAX_COLS) -> dict[str, list]:
    """The axes of `order` that vary among the ok memmap rows (not in `exclude`), in that order,
    each with its values (at most `most_values`, struct page sizes spread by `pick`), taken while
    the number of their combinations stays within `limit`: {column: values}."""
    chosen: dict[str, list] = {}
    varying = set(sweep.varying(M))
    for c in order:
        if c not in varying or c in exclude:
            continue
        values = facet_values(sweep, c, keep=(64, 80, 96, 128) if c == P else ())[:most_values]
        if math.prod(len(v) for v in chosen.values()) * len(values) <= limit:
            chosen[c] = values
    return chosen


def panel_title(sweep: Sweep, combo: dict) -> str:
    """'struct page=80 B, mode=devdax, map=mem': the facet values a panel shows."""
    return ", ".join(f"struct page={v} B" if c == P else f"{c.removeprefix('param_')}={label(sweep, M, c, v)}"
                     for c, v in combo.items())


def present(df: pl.DataFrame, columns: list[str]) -> list[dict]:
    """The combinations of `columns` that have rows in `df`, sorted: one panel each, none empty."""
    if not columns:
        return [{}] if df.height else []
    return df.select(columns).unique().sort(columns, nulls_last=True).to_dicts()


def panel_grid(n: int, width: float, height: float, extra: float = 0.6, **kw):
    """n panels in rows of at most MAX_COLS; the unused slots of the last row are removed (so
    nothing empty is drawn) and the panels above them get x tick labels."""
    cols = min(MAX_COLS, n)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows + extra), squeeze=False, **kw)
    flat = list(axes.flat)
    for i, ax in enumerate(flat[n:], start=n):
        fig.delaxes(ax)
        if i - cols >= 0:
            flat[i - cols].xaxis.set_tick_params(labelbottom=True)
    return fig, flat[:n]


def _select(combo: dict) -> pl.Expr:
    expr = pl.lit(True)
    for c, v in combo.items():
        expr = expr & value_expr(c, v)
    return expr


# The axes the init-time figure facets by, in order of preference (hue: strategy, x: size).
INIT_FACETS = (P, MODE, MAP, MEDIUM, KMSAN, ALIGN, ORDER)
MAX_INIT_PANELS = 12


def memmap_init(sweep: Sweep, outdir: Path) -> Rendered | Skipped:
    """memmap_init_zone_device() time vs namespace size per strategy, one panel per combination
    of the facet axes (struct page size, mode, map, ... as far as they vary) that has feasible rows."""
    fid, title = "memmap_init", "memmap: init time vs namespace size per strategy"
    why = missing(sweep, M, [SIZE, P, MODE, STRATEGY, "metric_init_ms"]) or not_varying(sweep, M, [SIZE])
    if why:
        return Skipped(id=fid, title=title, reason=why)
    facets = choose_axes(sweep, INIT_FACETS, MAX_INIT_PANELS, exclude=(SIZE, STRATEGY))
    expr, held = pin(sweep, M, [SIZE, STRATEGY, *facets], PREFER)
    for c, values in facets.items():
        expr = expr & pl.col(c).is_in(values)
    df = (ok(sweep.scan(M).filter(expr)).filter(pl.col("metric_init_ms").is_not_null())
          .group_by(*facets, STRATEGY, SIZE).agg(pl.col("metric_init_ms").median()).collect(engine="streaming"))
    if df.height == 0:
        return Skipped(id=fid, title=title, reason=no_rows(M, "metric_init_ms", describe(sweep, M, held)))
    combos = present(df, list(facets))
    names = [s for s in STRATEGIES if s in df[STRATEGY].to_list()] or sorted(df[STRATEGY].unique().to_list())
    palette = dict(zip(names, sns.color_palette("colorblind", len(names))))
    marker = "o" if df[SIZE].n_unique() <= 40 else None  # a thousand sizes: markers would hide the lines
    fig, axes = panel_grid(len(combos), 3.9, 3.3, sharex=True, sharey=True)
    for k, (ax, combo) in enumerate(zip(axes, combos)):
        part = df.filter(_select(combo)).sort(SIZE)
        sns.lineplot(data=part.to_pandas(), x=SIZE, y="metric_init_ms", hue=STRATEGY, hue_order=names,
                     palette=palette, marker=marker, markersize=4, ax=ax, errorbar=None, legend=False)
        ax.set_title(panel_title(sweep, combo) or "all rows", fontsize=9)
        ax.set_xlabel("namespace size (bytes, log2)")
        ax.set_ylabel("init time (ms)" if k % MAX_COLS == 0 else "")
    handles = [plt.Line2D([], [], color=palette[n], marker=marker, markersize=4, label=n) for n in names]
    fig.legend(handles=handles, title="strategy", loc="upper center", ncol=len(names), fontsize=8,
               bbox_to_anchor=(0.5, 0.0))
    size_axis(axes[0], "x", float(df[SIZE].min()), float(df[SIZE].max()))
    log_if_wide(axes[0], "y", max(float(df["metric_init_ms"].min()), 1e-9), float(df["metric_init_ms"].max()))
    for ax in axes:
        ax.tick_params(axis="x", labelrotation=45)
    fig.suptitle(title)
    fig.tight_layout()
    shown = ", ".join(c.removeprefix("param_") for c in facets) or "nothing"
    caption = ("Modeled memmap_init_zone_device() time (median per point of the held slice). slow: field-by-"
               "field init; template: memcpy of a template; template_nt: memcpy_nontemporal (out-of-line "
               "__memcpy_flushcache); template_nt_inline: inline MOVNTI (patch 8). One panel per combination of "
               f"{shown} with feasible points (struct page sizes that are not a multiple of 16 are infeasible on "
               "x86_64; map=dev needs CONFIG_NVDIMM_KMSAN for P > 64)." + held_text(describe(sweep, M, held)))
    return save(fig, outdir, fid, title, caption)


# Heatmap axes (rows, then columns: the first two that vary) and panel axes, in order of preference.
GRID_AXES = (ORDER, ALIGN, MODE, MAP, MEDIUM, KMSAN)
HEAT_FACETS = (P, MODE, MAP, MEDIUM, KMSAN)
MAX_HEAT_PANELS = 8
MAX_GRID_VALUES = 8


def memmap_heatmap(sweep: Sweep, outdir: Path) -> Rendered | Skipped:
    """Best speedup over slow (any strategy) on a grid of the two axes (of compound order, align,
    mode, map, ...) that vary among the ok rows, one panel per combination of struct page size and
    the next varying axes that has feasible rows."""
    fid, title = "memmap_speedup_heatmap", "memmap: best speedup over slow"
    why = (missing(sweep, M, [ALIGN, ORDER, P, STRATEGY, "metric_init_ms"])
           or not_varying(sweep, M, [STRATEGY]))
    if why:
        return Skipped(id=fid, title=title, reason=why)
    grid = choose_axes(sweep, GRID_AXES, MAX_GRID_VALUES ** 2, most_values=MAX_GRID_VALUES)
    grid = dict(list(grid.items())[:2])
    if not grid:
        names = ", ".join(c.removeprefix("param_") for c in GRID_AXES)
        return Skipped(id=fid, title=title, reason=f"none of {names} varies among the ok memmap rows of this sweep")
    facets = choose_axes(sweep, HEAT_FACETS, MAX_HEAT_PANELS, exclude=(*grid, STRATEGY))
    expr, held = pin(sweep, M, [*grid, *facets, STRATEGY], PREFER)
    for c, values in {**grid, **facets}.items():
        expr = expr & pl.col(c).is_in(values)
    keys = [c for c in sweep.params(M) if c != STRATEGY]
    sp = speedup(sweep.scan(M).filter(expr), STRATEGY, "slow", "metric_init_ms", keys)
    df = (sp.filter(pl.col(STRATEGY) != "slow").group_by(*facets, *grid)
          .agg(pl.col("speedup").max(), pl.col(STRATEGY).sort_by("speedup", descending=True).first())
          .collect(engine="streaming")).filter(pl.col("speedup").is_not_null())
    if df.height == 0:
        return Skipped(id=fid, title=title, reason=no_rows(M, "metric_init_ms", describe(sweep, M, held)))
    axes_ = list(grid)
    row_axis, col_axis = (axes_[0], axes_[1]) if len(axes_) == 2 else (None, axes_[0])
    title = f"{title} across {' x '.join(c.removeprefix('param_') for c in axes_)}"
    order = lambda v: (v is None, v if v is not None else 0)  # noqa: E731
    cols = sorted(df[col_axis].unique().to_list(), key=order)
    rows = sorted(df[row_axis].unique().to_list(), key=order) if row_axis else [None]
    combos = present(df, list(facets))
    vmax = float(df["speedup"].max() or 1.0)
    fig, axes = panel_grid(len(combos), 0.75 * len(cols) + 1.6, max(2.6, 0.55 * len(rows) + 1.5))
    for k, (ax, combo) in enumerate(zip(axes, combos)):
        grid_values = np.full((len(rows), len(cols)), np.nan)
        for r in df.filter(_select(combo)).iter_rows(named=True):
            grid_values[rows.index(r[row_axis]) if row_axis else 0, cols.index(r[col_axis])] = r["speedup"]
        sns.heatmap(grid_values, ax=ax, annot=True, fmt=".2f", cmap="viridis", vmin=1.0, vmax=max(vmax, 1.01),
                    cbar=k == len(combos) - 1, cbar_kws={"label": "speedup over slow (x)"},
                    xticklabels=[label(sweep, M, col_axis, v) for v in cols],
                    yticklabels=[label(sweep, M, row_axis, v) for v in rows] if row_axis else False,
                    annot_kws={"fontsize": 8})
        ax.set_facecolor("0.88")
        ax.grid(False)
        ax.tick_params(axis="y", labelrotation=0)
        ax.set_title(panel_title(sweep, combo) or "all rows", fontsize=9)
        ax.set_xlabel(col_axis.removeprefix("param_").replace("_", " "))
        ax.set_ylabel(row_axis.removeprefix("param_").replace("_", " ") if row_axis and k % MAX_COLS == 0 else "")
    fig.suptitle(title)
    fig.tight_layout()
    caption = ("Each cell: the largest init-time speedup over the slow strategy at that point (slow time / best "
               "strategy's time, same namespace and axes); compound order in log2 pages, auto = the kernel's "
               "choice. The grid's axes are the first two of compound order, align, mode, map, medium, "
               "nvdimm_kmsan that vary among the feasible rows; one panel per combination of "
               f"{', '.join(c.removeprefix('param_') for c in facets) or 'nothing'} with feasible points. Grey "
               "cells are infeasible (e.g. fsdax needs order 0; devdax sets the order from the align)."
               + held_text(describe(sweep, M, held)))
    return save(fig, outdir, fid, title, caption)


def memmap_overhead(sweep: Sweep, outdir: Path) -> Rendered | Skipped:
    """memmap bytes on the device (map=dev) and in DRAM (map=mem) vs struct page size, per
    resolved compound order, marking where the vmemmap optimization applies."""
    fid, title = "memmap_overhead", "memmap overhead: device and DRAM bytes vs struct page size"
    need = [P, MAP, "metric_compound_order", "metric_memmap_device_bytes", "metric_memmap_dram_bytes",
            "metric_vmemmap_optimized"]
    why = missing(sweep, M, need) or not_varying(sweep, M, [P])
    if why:
        return Skipped(id=fid, title=title, reason=why)
    expr, held = pin(sweep, M, [P, MAP, MODE, ALIGN, ORDER], PREFER)
    df = (group_medians(sweep.scan(M).filter(expr), [MAP, P, "metric_compound_order"],
                        ["metric_memmap_device_bytes", "metric_memmap_dram_bytes"], ("metric_vmemmap_optimized",))
          .rename({"metric_memmap_device_bytes": "device", "metric_memmap_dram_bytes": "dram",
                   "metric_vmemmap_optimized": "optimized"})
          .sort(MAP, "metric_compound_order", P).collect(engine="streaming"))
    df = df.filter(pl.col("metric_compound_order").is_not_null() & pl.col("device").is_not_null()
                   & pl.col("dram").is_not_null())
    maps = [m for m in ("dev", "mem") if m in df[MAP].to_list()]
    if not maps:
        return Skipped(id=fid, title=title, reason=no_rows(M, "metric_memmap_device_bytes", describe(sweep, M, held)))
    orders = sorted(df["metric_compound_order"].unique().to_list())
    palette = dict(zip(orders, sns.color_palette("colorblind", len(orders))))
    fig, axes = plt.subplots(1, len(maps), figsize=(6.0 * len(maps), 4.4), squeeze=False)
    for ax, m in zip(axes[0], maps):
        col = "device" if m == "dev" else "dram"
        part = df.filter((pl.col(MAP) == m) & (pl.col(col) > 0))
        for o in orders:
            s = part.filter(pl.col("metric_compound_order") == o)
            if s.height == 0:
                continue
            ax.plot(s[P], s[col], color=palette[o], lw=1.2, label=f"order {o} ({binary_size(4096 << o)})")
            opt = s.filter(pl.col("optimized"))
            plain = s.filter(~pl.col("optimized"))
            ax.scatter(plain[P], plain[col], color=palette[o], s=30, zorder=3)
            ax.scatter(opt[P], opt[col], color=palette[o], s=90, marker="*", edgecolor="black", zorder=4)
        if part.height:
            size_axis(ax, "y", float(part[col].min()), float(part[col].max()))
        ax.scatter([], [], marker="*", s=90, color="white", edgecolor="black", label="vmemmap optimized")
        ax.set_xticks(sorted(df[P].unique().to_list()))
        ax.set_xlabel("sizeof(struct page) (bytes)")
        ax.set_ylabel("memmap bytes on the namespace" if m == "dev" else "memmap bytes in DRAM")
        ax.set_title("map=dev: memmap on the device" if m == "dev" else "map=mem: memmap in DRAM", fontsize=10)
        ax.legend(fontsize=8, title="compound order")
    size = held.get(SIZE)
    fig.suptitle(title + (f" ({binary_size(size)} namespace)" if size else ""))
    fig.tight_layout()
    caption = ("map=dev reserves 64 bytes per pfn on the namespace (sizeof(struct page) with "
               "CONFIG_NVDIMM_KMSAN). map=mem with compound pages and a power-of-two struct page writes only "
               "2 x 4096 / P struct pages per compound (stars: vmemmap optimization); 80- and 96-byte struct "
               "pages lose it and pay the full memmap." + held_text(describe(sweep, M, held)))
    return save(fig, outdir, fid, title, caption)
