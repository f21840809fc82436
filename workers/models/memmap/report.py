"""memmap's own findings and table (workers.hooks): functions of its rows that return the numbers.

The report's host words, rounds and links them; each function reads the rows with polars and returns None
where the sweep lacks them.
"""

from __future__ import annotations

import polars as pl

from workers import hooks, interval
from workers.hooks import Cells, Sentence
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
