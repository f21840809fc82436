"""memmap's own findings, table and figure (workers.hooks): functions of its rows that return the numbers.

The report's host words, rounds, links and draws them; each function reads the rows with polars and
returns None (a figure: the reason) where the sweep lacks them.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from workers import hooks, interval
from workers.hooks import Cells, Heatmap, Sentence
from workers.model import STATUS_OK
from workers.units import MiB, TiB

SPEEDUP, DRAM_BYTES, OPTIMIZED = "metric_speedup_vs_slow", "metric_memmap_dram_bytes", "metric_vmemmap_optimized"


def medium(rows) -> Sentence | None:
    """template_nt_inline's median speedup over slow where the struct pages live on the namespace (map=dev),
    on DRAM and on pmem, once per mode that has both."""
    lf = rows.modeled(SPEEDUP, "param_map", "param_strategy", "param_medium", "param_mode")
    if lf is None:
        return None
    lf = lf.filter((pl.col("param_map") == "dev") & (pl.col("param_strategy") == "template_nt_inline"))
    df = hooks.medians(lf, SPEEDUP, [pl.col("param_mode"), pl.col("param_medium")], bar=interval.columns(SPEEDUP))
    clauses, values = [], {}
    for mode in sorted(df["param_mode"].unique().to_list(), key=lambda v: (v is None, str(v))):
        got = {g.at: g for g in hooks.groups(df.filter(pl.col("param_mode") == mode),
                                             lambda r: (r["param_medium"], r["param_medium"]))}
        if {"dram", "pmem"} <= set(got):
            values.update({mode: rows.label_with_unit("param_mode", mode),
                           f"{mode}_dram": got["dram"], f"{mode}_pmem": got["pmem"]})
            clauses.append(f"{{{mode}}} {{{mode}_dram}}x{{{mode}_dram_bar}} on DRAM, "
                           f"{{{mode}_pmem}}x{{{mode}_pmem_bar}} on pmem")
    if not clauses:
        return None
    return Sentence(text="On the namespace's own medium (map=dev), template_nt_inline's median speedup over slow "
                         f"is {'; '.join(clauses)}.", values=values, rows=lf, metric=SPEEDUP)


def dedup_lost(rows) -> Sentence | None:
    """The struct page sizes at which a devdax memmap in DRAM (map=mem, align 2 MiB, compound pages) is never
    vmemmap-optimized, and its DRAM per TiB of namespace there against the smallest size that keeps it."""
    lf = rows.modeled(DRAM_BYTES, OPTIMIZED, "param_namespace_size", "param_map", "metric_compound_order",
                      "param_align", "param_struct_page_size")
    if lf is None:
        return None
    lf = lf.filter((pl.col("param_map") == "mem") & (pl.col("metric_compound_order") > 0)
                   & (pl.col("param_align") == 2 * MiB))
    df = hooks.medians(lf, DRAM_BYTES, [pl.col("param_struct_page_size")], bar=interval.columns(DRAM_BYTES),
                       scale=lambda v: v / pl.col("param_namespace_size") * TiB, flags=(OPTIMIZED,))
    size = "param_struct_page_size"
    gs = hooks.groups(df, lambda r: (r[size], rows.label_with_unit(size, r[size])), (OPTIMIZED,))
    lost = [g for g in gs if not g.flags[OPTIMIZED]]
    quoted = {"lost": hooks.pick(lost, "all"), "lost_per_tib": hooks.pick(lost, "max"),
              "kept_per_tib": hooks.pick([g for g in gs if g.flags[OPTIMIZED]], "first")}
    if any(v is None for v in quoted.values()):
        return None
    return Sentence(text="vmemmap deduplication is lost at struct page sizes {lost_at} (not a power of two): a devdax "
                         "memmap in DRAM (map=mem, align 2MiB) then costs {lost_per_tib} per TiB at "
                         "{lost_per_tib_at}, against {kept_per_tib} at {kept_per_tib_at}.",
                    values=quoted, rows=lf, metric=DRAM_BYTES, fmt="bytes")


def overhead(rows) -> Cells | None:
    """Memmap bytes on the namespace and in DRAM, and their share of it, per map location, struct page size and
    resolved compound order: medians over mode, align and the declared order, CONFIG_NVDIMM_KMSAN held on
    where it varies (it only matters for P > 64)."""
    by = ["param_map", "param_struct_page_size", "metric_compound_order"]
    medians = ["metric_memmap_device_bytes", DRAM_BYTES, "metric_overhead_fraction"]
    if any(c not in rows.schema() for c in (*by, *medians, OPTIMIZED)):
        return None
    expr, held = rows.pin(["param_map", "param_struct_page_size", "param_mode", "param_align", "param_compound_order"],
                          {"param_nvdimm_kmsan": True})
    df = (rows.scan().filter(expr & (pl.col("status") == STATUS_OK)).group_by(by)
          .agg(*(pl.col(m).median() for m in medians), pl.col(OPTIMIZED).any())
          .sort(by, nulls_last=True).collect(engine="streaming")
          .drop_nulls(["metric_compound_order", *medians]))
    if df.height == 0:
        return None
    share = pl.Series("metric_overhead_fraction", [f"{v:.2%}" for v in df["metric_overhead_fraction"]], pl.Utf8)
    return Cells(frame=df.with_columns(share), caption="Medians over mode and align.", held=held,
                 headers={"param_map": "map", "param_struct_page_size": "struct page",
                          "metric_compound_order": "compound order", "metric_memmap_device_bytes": "device bytes",
                          DRAM_BYTES: "DRAM bytes", "metric_overhead_fraction": "overhead",
                          OPTIMIZED: "vmemmap optimized"})


def best_strategy(rows) -> Sentence | None:
    """The strategy fastest in the most configurations, outright (ties are no win), its median speedup over the
    baseline, and the axis value where it wins least."""
    comp = rows.model.report.comparison
    lf = rows.modeled(comp.column, comp.metric)
    if lf is None:
        return None
    axis = comp.column
    keys = [c for c in rows.params() if c != axis]
    per, values = rows.variants(axis, comp.metric, keys)
    names = [c for c in per.columns if c not in keys]
    base = str(comp.baseline)
    if base not in names:
        return None
    pick, t0, near = hooks.tied_best(per, names, minimize=True)  # init time: the lower the better
    with np.errstate(divide="ignore", invalid="ignore"):
        speedup = per[base].to_numpy().astype(float) / t0
    per = per.select(keys).with_columns(
        pl.Series("best", np.array(names, dtype=object)[pick], dtype=pl.Utf8),
        pl.Series("unique", near.sum(axis=1) == 1), pl.Series("speedup", speedup),
    ).filter(pl.Series(np.isfinite(t0)))
    wins = per.filter("unique").group_by("best").agg(pl.len().alias("n")).sort(["n", "best"], descending=[True, False])
    if wins.height == 0:
        return None
    top, n = wins.row(0)
    mine = per.filter(pl.col("best") == top)["speedup"]
    name = lambda col: rows.label(axis, values[col])  # noqa: E731
    weakest = _weakest(per.with_columns(((pl.col("best") == top) & pl.col("unique")).alias("won")), keys, "won")
    if weakest:
        col, value, share, count = weakest
        there = per.filter((pl.col(col) == value) & pl.col("unique") & (pl.col("best") != top))
        other = there.group_by("best").agg(pl.len().alias("n")).sort(["n", "best"], descending=[True, False])
        instead = f"; {name(other.row(0)[0])} is fastest in {other.row(0)[1]:,} of them" if other.height else ""
        weakest = (f" It wins least where {col.removeprefix('param_')} = {rows.label(col, value)}: {share:.0%} of "
                   f"those {count:,} configurations{instead}.")
    return Sentence(text="{winner} is the fastest {model} {label} in {wins:,} of {configurations:,} configurations "
                         "({share:.0%}), a median {median_speedup}x faster than {baseline} (up to {max_speedup}x)."
                         "{weakest}",
                    values={"winner": name(top), "model": rows.name, "label": comp.label, "wins": n,
                            "configurations": per.height, "share": n / per.height,
                            "median_speedup": float(mine.median()), "max_speedup": float(mine.max()),
                            "baseline": rows.label(axis, comp.baseline), "weakest": weakest or ""},
                    rows=lf, metric=comp.metric)


def _weakest(per: pl.DataFrame, keys: list[str], flag: str) -> tuple[str, object, float, int] | None:
    """The (axis, value) whose configurations have the lowest share of `flag` (at least 5% of them)."""
    worst = None
    for col in keys:
        g = per.group_by(col).agg(pl.col(flag).mean().alias("share"), pl.len().alias("n"))
        g = g.filter(pl.col("n") >= max(2, per.height // 20))
        if g.height < 2:
            continue
        row = g.sort("share", col, nulls_last=True).row(0, named=True)
        if worst is None or row["share"] < worst[2]:
            worst = (col, row[col], float(row["share"]), int(row["n"]))
    return worst if worst is not None and worst[2] < 0.999 else None


def inline_movnti(rows) -> Sentence | None:
    """The median gain of inline MOVNTI (template_nt over template_nt_inline, at the same configuration), per
    struct page size and mode: where it matters most and least, or, where every group reads alike, its range."""
    comp = rows.model.report.comparison
    lf = rows.modeled(comp.column, comp.metric)
    keys = [c for c in rows.params() if c != comp.column]
    by = [c for c in ("param_struct_page_size", "param_mode") if c in keys]
    if lf is None or not by:
        return None
    wide, _ = rows.variants(comp.column, comp.metric, keys)
    if not {"template_nt", "template_nt_inline"} <= set(wide.columns):
        return None
    pairs = wide.drop_nulls(["template_nt", "template_nt_inline"])
    ratio = pl.col("template_nt") / pl.col("template_nt_inline")
    df = pairs.group_by(by).agg(ratio.median().alias("_v"), pl.len().alias("_n"))

    def at(r):
        key = tuple(r[c] for c in by)
        return (key if len(by) > 1 else key[0]), " ".join(rows.label_with_unit(c, r[c]) for c in by)

    gs = hooks.groups(df, at)
    most, least = hooks.pick(gs, "max"), hooks.pick(gs, "min")
    if most is None:
        return None
    values = {"max_gain": most, "min_gain": least}
    if f"{most.value:.2f}" != f"{least.value:.2f}":
        return Sentence(text="Inline MOVNTI (template_nt_inline over template_nt) matters most at {max_gain_at}: "
                             "{max_gain}x faster (median of {max_gain_n} configurations); least at {min_gain_at}: "
                             "{min_gain}x.", values=values, rows=lf, metric=comp.metric)
    # "most at X: 1.00x; least at X: 1.00x" would hide the spread: say the groups read alike, and the range
    each = pairs.select(ratio.alias("r"))["r"]
    axes = " x ".join(c.removeprefix("param_").replace("_", " ") for c in by)
    alike = (f" in every {axes} group alike ({len(gs)} groups)" if len(gs) > 1
             else f", in the one {axes} group this sweep has ({gs[0].text})")
    return Sentence(text="template_nt_inline over template_nt ({model}): median {max_gain}x" + alike + ", over "
                         "{pairs:,} configurations; single configurations range from {low}x to {high}x.",
                    values={**values, "model": rows.name, "pairs": pairs.height, "low": float(each.min()),
                            "high": float(each.max())}, rows=lf, metric=comp.metric)


# The heatmap's grid: the first two of these that vary; its panels: combinations of the facets that vary.
GRID = ("param_compound_order", "param_align", "param_mode", "param_map", "param_medium", "param_nvdimm_kmsan")
FACETS = ("param_struct_page_size", "param_mode", "param_map", "param_medium", "param_nvdimm_kmsan")
KEPT = {"param_struct_page_size": (64, 80, 96, 128)}  # show the sizes x86_64 can have, when there are many
MOST = 8  # values per grid axis, and panels


def speedup_heatmap(rows) -> Heatmap | str:
    """Per cell of the grid, the largest init-time speedup of any strategy over slow at that point, one panel
    per combination of the facets; CONFIG_NVDIMM_KMSAN held on where it varies (it only matters for P > 64)."""
    comp = rows.model.report.comparison
    axis, metric = comp.column, comp.metric
    lacking = [c for c in (axis, metric) if c not in rows.schema()]
    if lacking:
        return f"the {rows.name} rows lack the columns {lacking} (written by another model version)"
    why = rows.not_varying([axis])
    if why:
        return why
    grid = dict(list(rows.choose(GRID, MOST ** 2, {axis}, MOST, KEPT).items())[:2])
    name = lambda c: c.removeprefix("param_")  # noqa: E731
    if not grid:
        return f"none of {', '.join(map(name, GRID))} varies among the ok {rows.name} rows of this sweep"
    facets = rows.choose(FACETS, MOST, {*grid, axis}, keep=KEPT)
    expr, held = rows.pin([*grid, *facets, axis], {"param_nvdimm_kmsan": True})
    for c, values in {**grid, **facets}.items():
        expr = expr & hooks.is_in(c, values)
    keys = [c for c in rows.params() if c != axis]
    df = (hooks.speedup(rows.scan().filter(expr), axis, comp.baseline, metric, keys)
          .filter(pl.col(axis) != comp.baseline).group_by(*facets, *grid)
          .agg(pl.col("speedup").max().alias("value"), pl.col(axis).sort_by("speedup", descending=True).first())
          .collect(engine="streaming")).filter(pl.col("value").is_not_null())
    if df.height == 0:
        shown = rows.describe(held)
        return f"no ok {rows.name} rows with a value of {metric} in the slice shown" + (f" ({shown})" if shown else "")
    caption = ("Each cell: the largest init-time speedup over the slow strategy at that point (slow time / best "
               "strategy's time, same namespace and axes); compound order in log2 pages, auto = the kernel's choice. "
               "Grey cells are infeasible (e.g. fsdax needs order 0; devdax sets the order from the align). The "
               f"grid's axes are the first two of {', '.join(map(name, GRID))} that vary among the feasible rows; "
               f"one panel per combination of {', '.join(map(name, facets)) or 'nothing'} with feasible points.")
    return Heatmap(frame=df, grid=tuple(grid), facets=tuple(facets), caption=caption, held=held,
                   colorbar=f"speedup over {rows.label(axis, comp.baseline)} (x)")
