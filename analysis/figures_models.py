"""Figures of the pfnmap, copy and young models (see figures.py for the contract)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import polars as pl
import seaborn as sns

from workers.axes import AUTO

from .figures import held_text, medians, missing, no_rows, not_varying
from .plotting import Rendered, Skipped, binary_size, log_if_wide, pick, save, size_axis
from .read import Sweep

SIZE = "param_namespace_size"
ORDER = "param_compound_order"
LEAF_NAMES = {0: "PTE only (mainline)", 9: "PMD leaves (RFC)", 18: "PUD leaves (what-if)"}
MAX_PANELS = 4


def leaf_name(order: int | None) -> str:
    return "auto" if order is None else LEAF_NAMES.get(order, f"order {order}")


def panels(n: int, width: float = 5.2, height: float = 4.2):
    """A row of n axes sharing nothing (each panel has its own units)."""
    fig, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False)
    return fig, list(axes[0])


def lines(ax, df: pl.DataFrame, x: str, y: str, hue: str, hue_order: list[str], palette: dict) -> None:
    """One line per hue value; markers only while they stay apart (a thousand sizes would hide the lines)."""
    sns.lineplot(data=df.to_pandas(), x=x, y=y, hue=hue, hue_order=hue_order, palette=palette,
                 marker="o" if df[x].n_unique() <= 40 else None, markersize=5, ax=ax, errorbar=None)


def pfnmap_latency(sweep: Sweep, outdir: Path) -> Rendered | Skipped:
    """ns per random load (lat_mem_rd -t) and ms per streaming copy vs mapping size, per largest
    leaf order, with the RFC's published points overlaid."""
    fid, title = "pfnmap_latency", "pfnmap: access cost vs mapping size per leaf order"
    need = [SIZE, ORDER, "param_access", "metric_ns_per_load", "metric_copy_ms"]
    why = missing(sweep, "pfnmap", need) or not_varying(sweep, "pfnmap", [SIZE])
    if why:
        return Skipped(id=fid, title=title, reason=why)
    model = sweep.model_object("pfnmap")
    figs = [f for f in (model.figures() if model else ())]
    prefer = {}
    for f in figs:
        for k, v in f.params.items():
            prefer.setdefault(f"param_{k}", model.axis(k).canonical(v))
    accesses = sweep.axis_values("pfnmap")["param_access"]["value"].to_list()
    jobs = [(a, m, lab) for a, m, lab in (
        ("lat_mem_rd_random", "metric_ns_per_load", "ns per load (lat_mem_rd -t, random pages)"),
        ("memcpy_seq", "metric_copy_ms", "ms per copy of the whole mapping")) if a in accesses]
    frames, held_all = [], ""
    for access, metric, ylabel in jobs:
        df, held_all = medians(sweep, "pfnmap", SIZE, metric, [ORDER], where=pl.col("param_access") == access,
                               fixed=("param_access",), prefer=prefer)
        if df.height:
            frames.append((access, metric, ylabel, df))
    if not frames:
        return Skipped(id=fid, title=title, reason=no_rows("pfnmap", "metric_ns_per_load or metric_copy_ms",
                                                           held_all))
    fig, axes = panels(len(frames))
    for ax, (access, metric, ylabel, df) in zip(axes, frames):
        df = df.with_columns(pl.col(ORDER).map_elements(leaf_name, return_dtype=pl.Utf8).alias("leaves"))
        names = [leaf_name(o) for o in sorted(df[ORDER].unique().to_list(), key=lambda o: (o is None, o or 0))]
        palette = dict(zip(names, sns.color_palette("colorblind", len(names))))
        lines(ax, df, SIZE, metric, "leaves", names, palette)
        # Only figures whose working set is the whole mapping sit on these lines: the RFC's smaller rows
        # are working sets of one 4 GiB mapping, at another point than its 4 GiB row (see the parity figure).
        pub = [f for f in figs if f.metric == metric and _whole_mapping(model, f)]
        if pub:
            px = [model.axis("namespace_size").canonical(f.params["namespace_size"]) for f in pub]
            ax.scatter(px, [f.published for f in pub], marker="X", s=70, color="black", zorder=5,
                       label="published (RFC v2)")
        xs = df[SIZE].to_list() + ([*px] if pub else [])
        size_axis(ax, "x", min(xs), max(xs))
        ys = df[metric].to_list() + [f.published for f in pub]
        log_if_wide(ax, "y", min(ys), max(ys))
        ax.set_xlabel("mapping length L (bytes, log2)")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{access}: {metric.removeprefix('metric_')}", fontsize=10)
        ax.legend(fontsize=8, title="largest leaf")
    fig.suptitle(title)
    fig.tight_layout()
    caption = ("Median over the held slice per (mapping size, largest leaf order); black crosses are the "
               "published RFC figures whose working set is the whole mapping, at their own parameters (the RFC's "
               "smaller lat_mem_rd rows are working sets of one 4 GiB mapping: the parity figure compares them)."
               + held_text(held_all))
    return save(fig, outdir, fid, title, caption)


MISALIGN = {"param_align": "physical start alignment (bytes; aligned to this, no larger power of 2)",
            "param_pa_offset": "physical start modulo 1 GiB (bytes)",
            "param_va_offset": "(va - pa) modulo 1 GiB (bytes)"}


def pfnmap_coverage(sweep: Sweep, outdir: Path) -> Rendered | Skipped:
    """Fraction of the mapping covered by huge leaves vs how the physical start (align, pa_offset)
    or va - pa (va_offset) is misaligned, per largest leaf order and mapping length: one panel per
    misalignment axis that varies (at most two)."""
    fid, title = "pfnmap_coverage", "pfnmap: huge-leaf coverage vs misalignment"
    why = missing(sweep, "pfnmap", [SIZE, ORDER, "metric_huge_fraction"])
    if why:
        return Skipped(id=fid, title=title, reason=why)
    xs = [c for c in MISALIGN if c in sweep.varying("pfnmap")][:2]
    if not xs:
        return Skipped(id=fid, title=title, reason="none of align, pa_offset, va_offset varies in this sweep")
    shown = pick(sorted(sweep.axis_values("pfnmap")[SIZE]["value"].to_list()), 3)
    frames, helds = [], []
    for x in xs:
        df, held = medians(sweep, "pfnmap", x, "metric_huge_fraction", [ORDER, SIZE],
                           where=pl.col(SIZE).is_in(shown) & (pl.col(x) >= 0))
        if df.height:
            frames.append((x, df))
            helds.append(f"{x.removeprefix('param_')} panel: {held or 'nothing'}")
    if not frames:
        return Skipped(id=fid, title=title, reason=no_rows("pfnmap", "metric_huge_fraction", ""))
    fig, axes = panels(len(frames), width=6.4, height=4.6)
    for ax, (x, df) in zip(axes, frames):
        _coverage_panel(ax, df, x, shown)
    fig.suptitle(title)
    fig.tight_layout()
    caption = ("A 2 MiB (1 GiB) block becomes a PMD (PUD) leaf only when it lies wholly inside the range and "
               "va and pa are both aligned to it; the unaligned head and tail fall back to PTEs; a (va - pa) "
               "that is not a multiple of 2 MiB allows no huge leaf at all. Mapping lengths shown: "
               f"{', '.join(binary_size(s) for s in shown)}. Other axes held at: {'; '.join(helds)}.")
    return save(fig, outdir, fid, title, caption)


def _coverage_panel(ax, df: pl.DataFrame, x: str, shown: list[int]) -> None:
    """Coverage (%) vs one misalignment axis: log2 for align, one slot per value for offsets."""
    df = df.with_columns(pl.col(ORDER).map_elements(leaf_name, return_dtype=pl.Utf8).alias("leaves"),
                         pl.col(SIZE).map_elements(binary_size, return_dtype=pl.Utf8).alias("length"),
                         (pl.col("metric_huge_fraction") * 100).alias("coverage_pct"))
    values = sorted(df[x].unique().to_list())
    ordinal = x != "param_align"
    if ordinal:  # offsets include 0 and uneven steps: equal spacing reads better than a log axis
        df = df.with_columns(pl.col(x).replace_strict({v: i for i, v in enumerate(values)}).alias(x))
    names = [leaf_name(o) for o in sorted(df[ORDER].unique().to_list(), key=lambda o: (o is None, o or 0))]
    palette = dict(zip(names, sns.color_palette("colorblind", len(names))))
    sns.lineplot(data=df.to_pandas(), x=x, y="coverage_pct", hue="leaves", hue_order=names, palette=palette,
                 style="length", style_order=[binary_size(s) for s in shown if binary_size(s) in
                                              df["length"].to_list()], markers=True, ax=ax, errorbar=None,
                 alpha=0.85)
    if ordinal:
        ax.set_xticks(range(len(values)), [binary_size(v) for v in values], rotation=30)
    else:
        size_axis(ax, "x", min(values), max(values))
    ax.set_ylim(-3, 103)
    ax.set_xlabel(MISALIGN[x])
    ax.set_ylabel("mapping covered by huge leaves (%)")
    ax.legend(fontsize=7, loc="best")


def copy_cost(sweep: Sweep, outdir: Path) -> Rendered | Skipped:
    """ns per copy vs copy size for memcpy / out-of-line nt call / inline nt, mainline vs patched
    inline sizes."""
    fid, title = "copy_cost", "copy: ns per struct-page copy vs size, three copy paths"
    x, y = "param_struct_page_size", "metric_ns_per_copy"
    why = missing(sweep, "copy", [x, y, "param_strategy"]) or not_varying(sweep, "copy", [x])
    if why:
        return Skipped(id=fid, title=title, reason=why)
    has_inline = "param_inline_sizes" in sweep.schema("copy")
    sets = sweep.axis_values("copy")["param_inline_sizes"]["value"].to_list() if has_inline else [None]
    sets = sorted(sets, key=lambda s: (s != "mainline", str(s)))
    series = ["param_strategy"] + (["param_inline_sizes"] if has_inline else [])
    df, held = medians(sweep, "copy", x, y, series)
    if df.height == 0:
        return Skipped(id=fid, title=title, reason=no_rows("copy", y, held))
    strategies = [s for s in ("memcpy", "nt_call", "nt_inline") if s in df["param_strategy"].to_list()]
    strategies += sorted(set(df["param_strategy"].to_list()) - set(strategies))
    palette = dict(zip(strategies, sns.color_palette("colorblind", len(strategies))))
    fig, axes = panels(len(sets))
    for ax, s in zip(axes, sets):
        part = df if s is None else df.filter(pl.col("param_inline_sizes") == s)
        lines(ax, part, x, y, "param_strategy", strategies, palette)
        ax.set_xticks(sorted(df[x].unique().to_list()))
        ax.set_xlabel("copy size = sizeof(struct page) (bytes)")
        ax.set_ylabel("time per copy (ns)")
        ax.set_title(f"inline sizes: {s}" if s else "copy paths", fontsize=10)
        ax.legend(fontsize=8, title="copy path")
    lo, hi = float(df[y].min()), float(df[y].max())
    for ax in axes:
        if not log_if_wide(ax, "y", lo, hi):
            ax.set_ylim(0, hi * 1.08)
    fig.suptitle(title)
    fig.tight_layout()
    caption = ("memcpy: cached constant-size copy; nt_call: out-of-line __memcpy_flushcache(); nt_inline: "
               "memcpy_flushcache() with inline MOVNTI for the inline sizes (mainline 4/8/16, patched "
               "4..96), other sizes fall back to the call." + held_text(held))
    return save(fig, outdir, fid, title, caption)


def young_scan(sweep: Sweep, outdir: Path) -> Rendered | Skipped:
    """Modeled reclaim scan time vs folio order, per batching (per-PTE vs batched) and arch."""
    fid, title = "young_scan", "young: reclaim scan time vs folio order, per-PTE vs batched"
    x, y = ORDER, "metric_scan_ms"
    why = missing(sweep, "young", [x, y, "param_batching"])
    if why:
        return Skipped(id=fid, title=title, reason=why)
    orders = [o for o in sweep.axis_values("young")[x]["value"].to_list() if o is not None]
    if len(orders) < 2:
        return Skipped(id=fid, title=title, reason="fewer than two explicit folio orders in this sweep")
    has_arch = "param_arch" in sweep.schema("young")
    series = ["param_batching"] + (["param_arch"] if has_arch else [])
    where, fixed, note = pl.col(x).is_not_null(), (), ""
    if has_arch and "param_first_pte_cont" in sweep.varying("young"):
        # x86_64 has no cont bit (its first PTE is never cont): compare arm64 with cont heads to x86_64
        where = where & (pl.col("param_first_pte_cont") == (pl.col("param_arch") == "arm64"))
        fixed, note = ("param_first_pte_cont",), " first_pte_cont is true on arm64, false on x86_64."
    df, held = medians(sweep, "young", x, y, series, where=where, fixed=fixed)
    if df.height == 0:
        return Skipped(id=fid, title=title, reason=no_rows("young", y, held))
    arches = sorted(df["param_arch"].unique().to_list()) if has_arch else [None]
    batchings = [b for b in ("per_pte", "batched") if b in df["param_batching"].to_list()]
    palette = dict(zip(batchings, sns.color_palette("colorblind", len(batchings))))
    fig, axes = panels(min(len(arches), MAX_PANELS), width=max(5.2, 0.5 * len(orders) + 1.5))
    for ax, arch in zip(axes, arches):
        part = df if arch is None else df.filter(pl.col("param_arch") == arch)
        lines(ax, part, x, y, "param_batching", batchings, palette)
        ticks = sorted(part[x].unique().to_list())
        ax.set_xticks(ticks, [f"{o}\n{binary_size(4096 << o)}" for o in ticks], fontsize=8)
        log_if_wide(ax, "y", float(df[y].min()), float(df[y].max()))
        ax.set_xlabel("folio order (log2 pages) and folio size")
        ax.set_ylabel("modeled reclaim scan time (ms)")
        ax.set_title(f"arch: {arch}" if arch else "scan time", fontsize=10)
        ax.legend(fontsize=8, title="batching")
    fig.suptitle(title)
    fig.tight_layout()
    caption = ("Modeled sys time of scanning and reclaiming the folios: per_pte calls the per-PTE helper for "
               "every PTE (a cont PTE walks its whole 16-PTE block); batched calls test_and_clear_young_ptes() "
               f"once per folio run. Order '{AUTO}' rows are left out.{note}" + held_text(held))
    return save(fig, outdir, fid, title, caption)


def _whole_mapping(model, figure) -> bool:
    """Whether a published figure's working set is its whole mapping (or the model has no such axis)."""
    if "working_set" not in model.axis_names:
        return True
    ws = model.axis("working_set").canonical(figure.params.get("working_set", "all"))
    return ws is None or ws == model.axis("namespace_size").canonical(figure.params["namespace_size"])
