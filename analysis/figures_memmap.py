"""Figures of the memmap model: init time vs size, best-speedup heatmap, memmap overhead."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import polars as pl
import seaborn as sns

from .figures import held_text, missing, no_rows, not_varying
from .metrics import group_medians, ok, speedup
from .plotting import Rendered, Skipped, binary_size, log_if_wide, pick, save, size_axis
from .read import Sweep, describe, label, pin

M = "memmap"
SIZE, P, MODE, MAP = "param_namespace_size", "param_struct_page_size", "param_mode", "param_map"
ALIGN, ORDER, STRATEGY = "param_align", "param_compound_order", "param_strategy"
STRATEGIES = ("slow", "template", "template_nt", "template_nt_inline")
# Show the 80/96-byte struct pages under map=dev too: CONFIG_NVDIMM_KMSAN only matters for P > 64.
PREFER = {"param_nvdimm_kmsan": True}
MAX_COLS = 4


def facet_values(sweep: Sweep, column: str, keep: tuple = ()) -> list:
    values = sweep.axis_values(M).get(column)
    if values is None:
        return [None]
    return pick(sorted(values["value"].to_list(), key=lambda v: (v is None, v or 0)), MAX_COLS, keep)


def empty_note(ax, sweep: Sweep, where: pl.Expr) -> None:
    """Write in an empty panel why it is empty: the commonest reason among its rows."""
    top = (sweep.scan(M).filter(where & (pl.col("status") != "ok")).group_by("reason").len()
           .sort("len", descending=True).head(1).collect())
    why = top["reason"][0] if top.height else "no rows in this slice"
    ax.text(0.5, 0.5, "no feasible points:\n" + "\n".join(_wrap(why, 40)), ha="center", va="center",
            transform=ax.transAxes, fontsize=8, color="0.3")


def _wrap(text: str, width: int) -> list[str]:
    out, line = [], ""
    for word in text.split():
        if len(line) + len(word) + 1 > width and line:
            out.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return out + ([line] if line else [])


def memmap_init(sweep: Sweep, outdir: Path) -> Rendered | Skipped:
    """memmap_init_zone_device() time vs namespace size per strategy, faceted by P and mode."""
    fid, title = "memmap_init", "memmap: init time vs namespace size per strategy"
    why = missing(sweep, M, [SIZE, P, MODE, STRATEGY, "metric_init_ms"]) or not_varying(sweep, M, [SIZE])
    if why:
        return Skipped(id=fid, title=title, reason=why)
    modes, sizes = facet_values(sweep, MODE), facet_values(sweep, P, keep=(64, 80, 96, 128))
    expr, held = pin(sweep, M, [SIZE, P, MODE, STRATEGY], PREFER)
    lf = sweep.scan(M).filter(expr & pl.col(P).is_in(sizes))
    df = (ok(lf).filter(pl.col("metric_init_ms").is_not_null()).group_by(MODE, P, STRATEGY, SIZE)
          .agg(pl.col("metric_init_ms").median()).collect())
    if df.height == 0:
        return Skipped(id=fid, title=title, reason=no_rows(M, "metric_init_ms", describe(sweep, M, held)))
    names = [s for s in STRATEGIES if s in df[STRATEGY].to_list()] or sorted(df[STRATEGY].unique().to_list())
    palette = dict(zip(names, sns.color_palette("colorblind", len(names))))
    fig, axes = plt.subplots(len(modes), len(sizes), figsize=(3.9 * len(sizes), 3.3 * len(modes) + 0.6),
                             squeeze=False, sharex=True, sharey=True)
    x_all = df[SIZE].to_list() or [1, 2]
    y_all = df["metric_init_ms"].to_list() or [1, 2]
    for i, mode in enumerate(modes):
        for j, p in enumerate(sizes):
            ax = axes[i][j]
            part = df.filter((pl.col(MODE) == mode) & (pl.col(P) == p)).sort(SIZE)
            if part.height:
                sns.lineplot(data=part.to_pandas(), x=SIZE, y="metric_init_ms", hue=STRATEGY, hue_order=names,
                             palette=palette, marker="o", markersize=4, ax=ax, errorbar=None,
                             legend=False)
            else:
                empty_note(ax, sweep, expr & (pl.col(MODE) == mode) & (pl.col(P) == p))
            ax.set_title(f"mode={mode}, struct page={p} B", fontsize=9)
            ax.set_xlabel("namespace size (bytes, log2)" if i == len(modes) - 1 else "")
            ax.set_ylabel("init time (ms)" if j == 0 else "")
    handles = [plt.Line2D([], [], color=palette[n], marker="o", markersize=4, label=n) for n in names]
    fig.legend(handles=handles, title="strategy", loc="upper center", ncol=len(names), fontsize=8,
               bbox_to_anchor=(0.5, 0.0))
    size_axis(axes[0][0], "x", min(x_all), max(x_all))
    log_if_wide(axes[0][0], "y", max(min(y_all), 1e-9), max(y_all))
    for ax in axes.flat:
        ax.tick_params(axis="x", labelrotation=45)
    fig.suptitle(title)
    fig.tight_layout()
    caption = ("Modeled memmap_init_zone_device() time (median per point of the held slice). slow: field-by-"
               "field init; template: memcpy of a template; template_nt: memcpy_nontemporal (out-of-line "
               "__memcpy_flushcache); template_nt_inline: inline MOVNTI (patch 8)."
               + held_text(describe(sweep, M, held)))
    return save(fig, outdir, fid, title, caption)


def memmap_heatmap(sweep: Sweep, outdir: Path) -> Rendered | Skipped:
    """Best speedup over slow (any strategy) on an align x compound order grid, per P and mode."""
    fid, title = "memmap_speedup_heatmap", "memmap: best speedup over slow across align x compound order"
    why = (missing(sweep, M, [ALIGN, ORDER, P, STRATEGY, "metric_init_ms"])
           or not_varying(sweep, M, [STRATEGY]))
    if why:
        return Skipped(id=fid, title=title, reason=why)
    if len(set(sweep.varying(M)) & {ALIGN, ORDER}) == 0:
        return Skipped(id=fid, title=title, reason="neither align nor compound_order varies in this sweep")
    keep = [ALIGN, ORDER, P, MODE, STRATEGY]
    expr, held = pin(sweep, M, keep, PREFER)
    keys = [c for c in sweep.params(M) if c != STRATEGY]
    sp = speedup(sweep.scan(M).filter(expr), STRATEGY, "slow", "metric_init_ms", keys)
    df = (sp.filter(pl.col(STRATEGY) != "slow").group_by(MODE, P, ALIGN, ORDER)
          .agg(pl.col("speedup").max(), pl.col(STRATEGY).sort_by("speedup", descending=True).first())
          .collect()).filter(pl.col("speedup").is_not_null())
    if df.height == 0:
        return Skipped(id=fid, title=title, reason=no_rows(M, "metric_init_ms", describe(sweep, M, held)))
    modes, sizes = facet_values(sweep, MODE), facet_values(sweep, P, keep=(64, 80, 96, 128))
    aligns = sorted(sweep.axis_values(M)[ALIGN]["value"].to_list())
    orders = sorted(sweep.axis_values(M)[ORDER]["value"].to_list(), key=lambda o: (o is not None, o or 0))
    vmax = float(df["speedup"].max() or 1.0)
    row_h = max(2.6, 0.55 * len(orders) + 1.5)
    fig, axes = plt.subplots(len(modes), len(sizes), figsize=(3.6 * len(sizes) + 1, row_h * len(modes) + 0.6),
                             squeeze=False)
    for i, mode in enumerate(modes):
        for j, p in enumerate(sizes):
            part = df.filter((pl.col(MODE) == mode) & (pl.col(P) == p))
            grid = np.full((len(orders), len(aligns)), np.nan)
            for r in part.iter_rows(named=True):
                grid[orders.index(r[ORDER]), aligns.index(r[ALIGN])] = r["speedup"]
            ax = axes[i][j]
            sns.heatmap(grid, ax=ax, annot=True, fmt=".2f", cmap="viridis", vmin=1.0, vmax=max(vmax, 1.01),
                        cbar=j == len(sizes) - 1, cbar_kws={"label": "speedup over slow (x)"},
                        xticklabels=[binary_size(a) for a in aligns],
                        yticklabels=[label(sweep, M, ORDER, o) for o in orders], annot_kws={"fontsize": 8})
            ax.set_facecolor("0.88")
            ax.grid(False)
            ax.set_title(f"mode={mode}, struct page={p} B", fontsize=9)
            ax.set_xlabel("namespace align (bytes)")
            ax.set_ylabel("compound order" if j == 0 else "")
    fig.suptitle(title)
    fig.tight_layout()
    caption = ("Each cell: the largest init-time speedup over the slow strategy at that point (slow time / best "
               "strategy's time, same namespace and axes); compound order in log2 pages, auto = the kernel's "
               "choice. Grey cells are infeasible (e.g. fsdax needs order 0; "
               "devdax sets the order from the align)." + held_text(describe(sweep, M, held)))
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
          .sort(MAP, "metric_compound_order", P).collect())
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
