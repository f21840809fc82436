"""Key findings: a few sentences a reader of the report should take away, computed from this sweep.

Each finding is one sentence with its numbers and the configuration they hold
for, and the id of the figure that shows it. Nothing is hard-coded: every
number is an aggregate of the sweep's ok rows (lazy polars, one pass per
finding), and a finding whose rows the sweep does not have is left out.
`Finding.data` keeps the numbers the sentence quotes, so tests can check the
sentence against the rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import polars as pl

from .metrics import ok, per_variant, published_comparison
from .read import MODELED, Sweep, label

TIE = 1e-9  # relative: variants this close to the best time share the win
TiB = 1 << 40


@dataclass(frozen=True, kw_only=True)
class Finding:
    text: str
    figure: str  # id of the figure that shows it (an anchor in report.html)
    data: dict = field(default_factory=dict)


def key_findings(sweep: Sweep) -> list[Finding]:
    """Every finding this sweep's rows support, in reading order."""
    out = []
    for fn in FINDINGS:
        try:
            found = fn(sweep)
        except (pl.exceptions.ColumnNotFoundError, pl.exceptions.SchemaError):
            found = None  # a sweep of an older schema, or a model without that axis
        if found is not None:
            out.append(found)
    return out


def _rows(sweep: Sweep, model: str, *columns: str) -> pl.LazyFrame | None:
    """The model's modeled ok rows, or None when the sweep lacks the model or a column."""
    if model not in sweep.models or MODELED not in sweep.sources(model):
        return None
    schema = sweep.schema(model)
    if any(c not in schema for c in columns):
        return None
    return ok(sweep.scan(model, MODELED))


def _varying(sweep: Sweep, model: str, exclude: tuple[str, ...]) -> list[str]:
    return [c for c in sweep.params(model) if c not in exclude]


def _fmt(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def _bytes(n: float) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def best_strategy(sweep: Sweep) -> Finding | None:
    """memmap: the strategy that is fastest most often (ties are no win), its speedup over slow, and
    the axis value where it wins least."""
    lf = _rows(sweep, "memmap", "param_strategy", "metric_init_ms", "metric_speedup_vs_slow")
    if lf is None:
        return None
    keys = _varying(sweep, "memmap", ("param_strategy",))
    per = _per_variant(sweep, "memmap", keys, "param_strategy", "metric_init_ms")
    names = [c for c in per.columns if c not in keys]
    times = per.select(names).to_numpy()
    filled = np.where(np.isnan(times), np.inf, times)
    order = np.argsort(filled, axis=1)
    t0 = np.take_along_axis(filled, order[:, :1], axis=1)[:, 0]
    t1 = np.take_along_axis(filled, order[:, 1:2], axis=1)[:, 0] if len(names) > 1 else np.full(len(t0), np.inf)
    slow = per["slow"].to_numpy() if "slow" in names else np.full(len(t0), np.nan)
    per = per.select(keys).with_columns(
        pl.Series("best", np.array(names, dtype=object)[order[:, 0]], dtype=pl.Utf8),
        pl.Series("unique", (t1 - t0) > TIE * t0),
        pl.Series("speedup", slow / t0),
    ).filter(pl.Series(np.isfinite(t0)))
    wins = per.filter("unique").group_by("best").agg(pl.len().alias("n")).sort("n", descending=True)
    if wins.height == 0:
        return None
    top, n = wins.row(0)
    total = per.height
    mine = per.filter(pl.col("best") == top)
    median = float(mine["speedup"].median())
    text = (f"{top} is the fastest memmap strategy in {n:,} of {total:,} configurations ({n / total:.0%}), "
            f"a median {_fmt(median)}x faster than slow (up to {_fmt(float(mine['speedup'].max()))}x).")
    data = {"strategy": top, "wins": n, "configurations": total, "median_speedup": median}
    where = _weakest(per.with_columns(((pl.col("best") == top) & pl.col("unique")).alias("won")), keys, "won")
    if where is not None:
        col, value, share, count = where
        there = per.filter((pl.col(col) == value) & pl.col("unique") & (pl.col("best") != top))
        other = there.group_by("best").agg(pl.len().alias("n")).sort("n", descending=True)
        instead = f"; {other.row(0)[0]} is fastest in {other.row(0)[1]:,} of them" if other.height else ""
        text += (f" It wins least where {col.removeprefix('param_')} = "
                 f"{label(sweep, 'memmap', col, value)}: {share:.0%} of those {count:,} configurations{instead}.")
        data.update(stops_axis=col, stops_value=value, stops_share=share,
                    instead=other.row(0)[0] if other.height else None)
    return Finding(text=text, figure="memmap_init", data=data)


def _per_variant(sweep: Sweep, model: str, keys: list[str], axis: str, metric: str) -> pl.DataFrame:
    """One row per configuration (`keys`), one column per value of `axis`, named by the value, holding its
    `metric` (null where that variant is not ok): metrics.per_variant, which the tables share."""
    values, wide = per_variant(sweep, model, axis, metric, keys)
    return wide.rename({f"v{i}": str(v) for i, v in enumerate(values) if v is not None}).drop(
        [f"v{i}" for i, v in enumerate(values) if v is None])


def _weakest(per: pl.DataFrame, keys: list[str], flag: str) -> tuple[str, object, float, int] | None:
    """The (axis, value) whose configurations have the lowest share of `flag` (at least 5% of them)."""
    worst = None
    for col in keys:
        g = per.group_by(col).agg(pl.col(flag).mean().alias("share"), pl.len().alias("n"))
        g = g.filter(pl.col("n") >= max(2, per.height // 20))
        if g.height < 2:
            continue
        row = g.sort("share").row(0, named=True)
        if worst is None or row["share"] < worst[2]:
            worst = (col, row[col], float(row["share"]), int(row["n"]))
    return worst if worst is not None and worst[2] < 0.999 else None


def dedup_lost(sweep: Sweep) -> Finding | None:
    """memmap: the struct page sizes without vmemmap deduplication, and their DRAM per TiB against a size with it."""
    lf = _rows(sweep, "memmap", "metric_vmemmap_optimized", "metric_memmap_dram_bytes", "param_map")
    if lf is None:
        return None
    g = (lf.filter((pl.col("param_map") == "mem") & (pl.col("metric_compound_order") > 0))
         .group_by("param_struct_page_size", "param_align")
         .agg(pl.col("metric_vmemmap_optimized").any().alias("opt"),
              (pl.col("metric_memmap_dram_bytes") / pl.col("param_namespace_size") * TiB).median().alias("per_tib"))
         .sort("param_align", "param_struct_page_size").collect())
    if g.height == 0:
        return None
    lost = sorted({int(p) for p, o in zip(g["param_struct_page_size"], g["opt"]) if not o}
                  - {int(p) for p, o in zip(g["param_struct_page_size"], g["opt"]) if o})
    kept = g.filter("opt")
    if not lost or kept.height == 0:
        return None
    align = kept.sort("param_align").row(0, named=True)["param_align"]
    at = g.filter(pl.col("param_align") == align)
    base = at.filter("opt").row(0, named=True)
    worst = at.filter(pl.col("param_struct_page_size").is_in(lost)).sort("per_tib", descending=True)
    if worst.height == 0:
        return None
    w = worst.row(0, named=True)
    text = (f"vmemmap deduplication is lost at struct page sizes {', '.join(f'{p} B' for p in lost)} "
            f"(not a power of two): a devdax memmap in DRAM (map=mem, align {label(sweep, 'memmap', 'param_align', align)}) "
            f"then costs {_bytes(w['per_tib'])} per TiB at {w['param_struct_page_size']} B, against "
            f"{_bytes(base['per_tib'])} at {base['param_struct_page_size']} B.")
    return Finding(text=text, figure="memmap_overhead",
                   data={"lost": lost, "align": align, "lost_per_tib": w["per_tib"], "kept_per_tib": base["per_tib"],
                         "lost_size": w["param_struct_page_size"], "kept_size": base["param_struct_page_size"]})


def inline_movnti(sweep: Sweep) -> Finding | None:
    """memmap: what patch 8's inline MOVNTI buys over the out-of-line non-temporal copy, by struct page size."""
    lf = _rows(sweep, "memmap", "param_strategy", "metric_init_ms")
    if lf is None:
        return None
    keys = _varying(sweep, "memmap", ("param_strategy",))
    wide = _per_variant(sweep, "memmap", keys, "param_strategy", "metric_init_ms")
    if not {"template_nt", "template_nt_inline"} <= set(wide.columns):
        return None
    pair = (wide.drop_nulls(["template_nt", "template_nt_inline"])
            .group_by("param_struct_page_size", *[k for k in ("param_mode",) if k in keys])
            .agg((pl.col("template_nt") / pl.col("template_nt_inline")).median().alias("gain"), pl.len().alias("n"))
            .sort("gain", descending=True))
    if pair.height == 0:
        return None
    top, low = pair.row(0, named=True), pair.row(pair.height - 1, named=True)

    def where(r):
        mode = f" {r['param_mode']}" if "param_mode" in r else ""
        return f"{r['param_struct_page_size']} B{mode}"

    text = (f"Inline MOVNTI (template_nt_inline over template_nt) matters most at {where(top)}: "
            f"{_fmt(top['gain'])}x faster (median of {top['n']:,} configurations); least at {where(low)}: "
            f"{_fmt(low['gain'])}x.")
    return Finding(text=text, figure="memmap_init", data={"max_gain": top["gain"], "min_gain": low["gain"],
                                                           "max_at": top["param_struct_page_size"]})


def huge_leaf_alignment(sweep: Sweep) -> Finding | None:
    """pfnmap: the huge-leaf gain where blocks can become leaves, against the misaligned placements."""
    lf = _rows(sweep, "pfnmap", "metric_speedup_vs_pte", "metric_huge_fraction", "param_compound_order")
    if lf is None:
        return None
    g = (lf.filter((pl.col("param_compound_order").fill_null(9) >= 9) & pl.col("metric_ns_per_load").is_not_null())
         .with_columns((pl.col("metric_huge_fraction") > 0.5).alias("huge"))
         .group_by("huge").agg(pl.col("metric_speedup_vs_pte").median().alias("speedup"), pl.len().alias("n"))
         .collect())
    by = {bool(r["huge"]): r for r in g.iter_rows(named=True)}
    if True not in by or False not in by:
        return None
    text = (f"Huge pfnmap leaves make lat_mem_rd loads a median {_fmt(by[True]['speedup'])}x faster than PTEs "
            f"where most of the mapping can take them ({by[True]['n']:,} points), and "
            f"{_fmt(by[False]['speedup'])}x where misalignment (va - pa, or the start) leaves less than half of it "
            f"to huge leaves ({by[False]['n']:,} points).")
    return Finding(text=text, figure="pfnmap_coverage",
                   data={"aligned": by[True]["speedup"], "misaligned": by[False]["speedup"]})


def young_batching(sweep: Sweep) -> Finding | None:
    """young: the batched gain against folio order and young fraction, on arm64 (cont PTEs)."""
    lf = _rows(sweep, "young", "metric_speedup_vs_per_pte", "param_batching", "param_compound_order")
    if lf is None:
        return None
    arm = lf.filter((pl.col("param_batching") == "batched") & (pl.col("param_arch") == "arm64")
                    if "param_arch" in sweep.schema("young") else pl.col("param_batching") == "batched")
    by_order = (arm.group_by("param_compound_order").agg(pl.col("metric_speedup_vs_per_pte").median().alias("s"))
                .sort("s", descending=True).collect())
    if by_order.height == 0:
        return None
    best, worst = by_order.row(0, named=True), by_order.row(by_order.height - 1, named=True)
    text = (f"Batched young-bit clearing speeds an arm64 reclaim scan up by a median {_fmt(best['s'])}x at folio order "
            f"{best['param_compound_order']}, and {_fmt(worst['s'])}x at order {worst['param_compound_order']}")
    data = {"best_order": best["param_compound_order"], "best": best["s"], "worst_order": worst["param_compound_order"],
            "worst": worst["s"]}
    if "param_young_fraction" in sweep.schema("young"):
        by_yf = (arm.group_by("param_young_fraction").agg(pl.col("metric_speedup_vs_per_pte").median().alias("s"))
                 .sort("param_young_fraction").collect())
        if by_yf.height >= 2:
            lo, hi = by_yf.row(0, named=True), by_yf.row(by_yf.height - 1, named=True)
            text += (f"; from {_fmt(lo['s'])}x with {lo['param_young_fraction']:g} of the folios young to "
                     f"{_fmt(hi['s'])}x with {hi['param_young_fraction']:g}")
            data.update(yf_low=lo["s"], yf_high=hi["s"])
    return Finding(text=text + ".", figure="young_scan", data=data)


def medium(sweep: Sweep) -> Finding | None:
    """memmap: what the medium does to the best strategy's speedup (map=dev writes struct pages to it)."""
    lf = _rows(sweep, "memmap", "param_medium", "metric_speedup_vs_slow")
    if lf is None:
        return None
    g = (lf.filter((pl.col("param_map") == "dev") & (pl.col("param_strategy") == "template_nt_inline"))
         .group_by("param_medium", "param_mode").agg(pl.col("metric_speedup_vs_slow").median().alias("s"))
         .sort("param_mode", "param_medium").collect())
    media = set(g["param_medium"].to_list())
    if not {"dram", "pmem"} <= media:
        return None
    parts = []
    data = {}
    for mode in g["param_mode"].unique(maintain_order=True).to_list():
        m = {r["param_medium"]: r["s"] for r in g.filter(pl.col("param_mode") == mode).iter_rows(named=True)}
        if {"dram", "pmem"} <= m.keys():
            parts.append(f"{mode} {_fmt(m['dram'])}x on DRAM, {_fmt(m['pmem'])}x on pmem")
            data[mode] = (m["dram"], m["pmem"])
    if not parts:
        return None
    return Finding(text="On the namespace's own medium (map=dev), template_nt_inline's median speedup over slow is "
                        + "; ".join(parts) + ".", figure="memmap_init", data=data)


def published(sweep: Sweep) -> Finding | None:
    """How close the model is to the published figures whose points are in this sweep."""
    df = published_comparison(sweep).filter(pl.col("error").is_not_null())
    if df.height == 0:
        return None
    fit = df.filter(pl.col("use") == "fit")
    val = df.filter(pl.col("use") == "validation")
    text, data = "", {}
    if fit.height:
        worst = fit.sort(pl.col("error").abs(), descending=True).row(0, named=True)
        text = (f"Against the {fit.height} published figures at points of this sweep the model's median |error| is "
                f"{fit['error'].abs().median():.1%} (worst {worst['error']:+.1%}, {worst['id']})")
        data.update(fit=fit.height, fit_median=float(fit["error"].abs().median()))
    if val.height:
        text += ("; " if text else "Against ") + (
            f"against {val.height} validation figures, never fit, its median |error| is "
            f"{val['error'].abs().median():.1%}")
        data.update(validation=val.height, validation_median=float(val["error"].abs().median()))
    return Finding(text=text + ".", figure="parity", data=data) if text else None


FINDINGS: tuple[Callable[[Sweep], Finding | None], ...] = (
    best_strategy, inline_movnti, medium, dedup_lost, huge_leaf_alignment, young_batching, published,
)


def findings_html(findings: list[Finding], drawn: set[str], esc: Callable[[object], str]) -> str:
    """The report's opening section: one list item per finding, linked to its figure when it was drawn."""
    if not findings:
        return ('<h2 id="findings">Key findings</h2><p class="note">This sweep has none of the rows the findings '
                'are computed from.</p>')
    items = "".join(f'<li data-figure="{esc(f.figure)}">{esc(f.text)}'
                    + (f' <a href="#fig-{esc(f.figure)}">(figure)</a>' if f.figure in drawn else "") + "</li>"
                    for f in findings)
    return f'<h2 id="findings">Key findings</h2><ul class="findings">{items}</ul>'

