"""pfnmap: huge leaves for remap_pfn_range() (the RFC) and what they do to TLB misses.

A driver's mmap() maps L = `namespace_size` bytes of device memory with
remap_pfn_range(). The model counts, in closed form (geometry), the PTE
/ PMD / PUD leaves and arm64 contpte blocks the kernel creates, the page-table
pages it allocates (with the RFC's deposited tables) and the setup cost; then
(tlb) the TLB entries those leaves need on the profile's machine, the
TLB misses of the access pattern, the page-walk cost from where the walk's
lines live, and the resulting ns per load (lmbench lat_mem_rd -t) or ms per
streaming copy.

Axes:
- compound_order: largest leaf order allowed: 0 = mainline (PTEs only), 9 =
  the RFC (PMD leaves), 18 = PUD leaves (what-if, same rules at 1 GiB). "auto"
  is 9, what the RFC does; any other order is infeasible.
- align: the physical start is aligned to `align` and to no larger power of
  two (pa = align modulo 1 GiB; 0 for align >= 1 GiB), unless
- pa_offset (bytes) is given: the physical start modulo 1 GiB. -1 means "not
  given" (then align decides).
- va_offset (bytes, default 0): (va - pa) modulo 1 GiB. 0 lets every aligned
  block become a huge leaf; a value that is not a multiple of 2 MiB allows none.
- arch: x86_64 or arm64 (16-PTE contpte blocks, if the profile says special
  PTEs get PTE_CONT; mainline never folds them). The machine (TLB, caches,
  virtualization) is the profile's for either arch. arm64 has no PUD pfnmap
  (mm/Kconfig: ARCH_SUPPORTS_PUD_PFNMAP needs HAVE_ARCH_TRANSPARENT_HUGEPAGE_PUD,
  which arm64 does not select), so order 18 on arm64 is infeasible.
- access: lat_mem_rd_random (metric_ns_per_load) or memcpy_seq (metric_copy_ms);
  the other metric is null. Miss rate is per load, or per 64-byte line copied.

Metrics beyond the leaf counts: pt_pages / pt_bytes (PTE and PMD table pages
plus the RFC's deposits; upper levels are shared and not counted),
huge_fraction (bytes under PMD/PUD leaves), tlb_entries (translations at TLB
granularity) and the bytes the L1 / L2 TLB can cover of them (reach),
tlb_miss_rate (walks per access), walk_refs and walk_ns (the mean walk),
walk_ns_per_access, and speedup_vs_pte (the same point with PTEs only, over
this one, for the selected access pattern).

Costs: setup = remap_call_ns + PTEs x pte_set_ns + huge leaves x
huge_leaf_set_ns + page-table pages x pt_page_alloc_ns. setup_instructions
(x86_64 only) is the same counts at the huge-pfnmap build's instructions per
operation, fit to a real kernel's mmap() counts (instructions.py); kernel.py
maps the x86_64 points in that build (workers/guest/devmem.py), where every
leaf and table count must equal the model's. Loads and copies: see tlb. Five costs are fit to the RFC's twenty figures (free_params): the DRAM
latency, the latencies of the two parts of the L3 a walk reads, and the copy's
bandwidth and stall per TLB miss. The cache sizes are the named part's
(datasheet); the rest of [pfnmap] is assumed (kernel facts: published), each
with its note.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from workers.axes import ALIGN, COMPOUND_ORDER, NAMESPACE_SIZE, Axis, choice
from workers.findings import Medians
from workers.model import (
    L1D_BYTES,
    L2_BYTES,
    LAST_LEVEL,
    Calibration,
    Comparison,
    CostOrder,
    Figure,
    FreeParam,
    KernelCheck,
    LastPoints,
    Measurement,
    Metric,
    Model,
    Report,
)
from workers.plots import Cond, Either, Lines, Overlay, Panels, Series, X, Y
from workers.profiles import Profile

from .geometry import LEAF_ORDERS, PAGE, PMD_ORDER, PUD, PUD_ORDER, kind_bytes, leaves, starts
from .instructions import setup_instructions
from .tlb import Machine, entries, random_access, random_counts, reach, sequential_copy, sequential_counts

AUTO_ORDER = PMD_ORDER  # the RFC's behaviour: PMD leaves where the rules allow
# What a kernel row counts (workers/models/pfnmap/kernel.py: the x86 /dev/mem guest), each exact.
KERNEL_METRICS = ("metric_pte_leaves", "metric_cont_blocks", "metric_pmd_leaves", "metric_pud_leaves",
                  "metric_pt_pages", "metric_pt_bytes", "metric_huge_fraction")
INSTRUCTIONS = "metric_setup_instructions"  # a kernel row's count, the model's price of its operations
NOT_GIVEN = -1
SOURCE = ("linux-mm, Yin Tirui, [PATCH RFC v2 0/2] mm: add huge pfnmap support for remap_pfn_range(), "
          "2025-10-16 (seeds/huge-pfnmap-remap-pfn-range.rfc-v2.txt)")

PA_OFFSET = Axis(
    name="pa_offset", kind="int", unit="bytes", default=NOT_GIVEN,
    doc="physical start modulo 1 GiB; -1 = not given (the start is then `align`, aligned to it and to "
        "no larger power of two)",
    rule="-1 (not given) or from 0 to 1GiB - 1", check=lambda v: v == NOT_GIVEN or 0 <= v < PUD,
)
VA_OFFSET = Axis(
    name="va_offset", kind="int", unit="bytes", default=0,
    doc="(va - pa) modulo 1 GiB: 0 lets aligned blocks become huge leaves; not a multiple of 2 MiB allows none",
    rule="from 0 to 1GiB - 1", check=lambda v: 0 <= v < PUD,
)
ARCH = choice("arch", ("arm64", "x86_64"), "arm64",
              "arm64: 16-PTE contpte blocks are a leaf size (when the profile lets special PTEs be cont); "
              "x86_64: no cont bit")
ACCESS = choice("access", ("lat_mem_rd_random", "memcpy_seq"), "lat_mem_rd_random",
                "lat_mem_rd_random: lmbench lat_mem_rd -t (each load to a different page, random page "
                "order, stride 64); memcpy_seq: one streaming copy of the working set")
WORKING_SET = Axis(
    name="working_set", kind="extent", unit="bytes", default="all",
    doc="bytes the access touches: lat_mem_rd_random chains working_set / 4 KiB pages picked at random from "
        "the whole mapping (lmbench -t: a row of a larger run); memcpy_seq copies the first working_set bytes; "
        "'all' (null) is the whole mapping",
    rule="a multiple of 4KiB", check=lambda v: v % PAGE == 0,
)

INT, FLOAT = pl.Int64, pl.Float64
# The geometry the access model reads (gathered per access pattern).
ACCESS_NEEDS = ("pte", "pmd_entries", "pud_entries", "pt_pages", "pte_tables", "pmd_tables")


def _rows(g: dict, a: dict, rows: np.ndarray) -> tuple:
    """An access function's leaves, bytes by leaf kind, lengths and working sets, of `rows` only (the
    arrays themselves when `rows` is every point)."""
    whole = rows.size == a["seq"].size
    pick = (lambda x: x) if whole else (lambda x: x[rows])  # noqa: E731
    return ({k: pick(g[k]) for k in ACCESS_NEEDS}, {k: pick(v) for k, v in kind_bytes(g).items()},
            pick(a["length"]), pick(a["working_set"]))
SETUP_KEYS = ("remap_call_ns", "pte_set_ns", "huge_leaf_set_ns", "pt_page_alloc_ns")

# The RFC's tables (ns per load, ms per copy), by size: PTE-only (mainline) and with PMD leaves.
LAT_FIGURES = {"64MiB": (148.858, 100.780), "128MiB": (164.745, 103.537), "256MiB": (169.907, 103.179),
               "512MiB": (171.285, 103.072), "1GiB": (173.054, 103.055), "2GiB": (172.820, 103.091),
               "4GiB": (172.877, 103.115)}
COPY_FIGURES = {"1GiB": (95.76, 77.91), "2GiB": (190.87, 155.64), "4GiB": (380.84, 311.45)}


def order_expr() -> pl.Expr:
    """Largest leaf order with "auto" (null) resolved to 9, the RFC's PMD leaves."""
    return pl.col("param_compound_order").fill_null(AUTO_ORDER)


# The report's figures of this model (drawn by analysis/figures/declared.py).
_MISALIGN = ("align", "pa_offset", "va_offset")
PLOTS = (
    Lines(id="pfnmap_latency", title="pfnmap: access cost vs mapping size per leaf order",
          x=X("namespace_size", label="mapping length L (bytes, log2)"),
          y=Y({"lat_mem_rd_random": "metric_ns_per_load", "memcpy_seq": "metric_copy_ms"},
              label={"lat_mem_rd_random": "ns per load (lat_mem_rd -t, random pages)",
                     "memcpy_seq": "ms per copy of the whole mapping"}),
          hue=Series("compound_order", title="largest leaf"),
          panels=Panels("access", order=("lat_mem_rd_random", "memcpy_seq"), title="{value}"),
          # only the published rows whose working set is the whole mapping lie on these lines: the RFC's
          # smaller lat_mem_rd rows are working sets of one 4 GiB mapping (the parity figure compares them)
          overlay=Overlay(published=True, published_when=(
              Either(groups=((Cond("working_set", "not null", None),
                              Cond("working_set", "== column", "namespace_size")),
                             (Cond("working_set", "==", None),))),)),
          caption="Median over the held slice per (mapping size, largest leaf order); black crosses are the "
                  "published RFC figures whose working set is the whole mapping, at their own parameters (the "
                  "RFC's smaller lat_mem_rd rows are working sets of one 4 GiB mapping: the parity figure "
                  "compares them)."),
    Lines(id="pfnmap_coverage", title="pfnmap: huge-leaf coverage vs misalignment",
          # one panel per misalignment axis that varies; pa_offset -1: not given (the start is then `align`)
          x=(X("align", label="physical start alignment (bytes; aligned to this, no larger power of 2)"),
             X("pa_offset", "ordinal_size", "physical start modulo 1 GiB (bytes)", min=0),
             X("va_offset", "ordinal_size", "(va - pa) modulo 1 GiB (bytes)")),
          y=Y("metric_huge_fraction", "percent", "mapping covered by huge leaves (%)"),
          hue=Series("compound_order", title="largest leaf"), style=Series("namespace_size", most=3),
          caption="A 2 MiB (1 GiB) block becomes a PMD (PUD) leaf only when it lies wholly inside the range and "
                  "va and pa are both aligned to it; the unaligned head and tail fall back to PTEs; a (va - pa) "
                  "that is not a multiple of 2 MiB allows no huge leaf at all. One panel per misalignment axis "
                  "that varies (at most two), line style the mapping length (at most three shown)."),
)

# The report's key finding about huge leaves and alignment (workers.findings).
FINDINGS = (
    Medians(id="huge_leaf_alignment", figure="pfnmap_coverage", metric="metric_speedup_vs_pte",
            where=(Either(((Cond("compound_order", ">=", 9),), (Cond("compound_order", "==", None),))),
                   Cond("metric_ns_per_load", "not null")),
            by=Cond("metric_huge_fraction", ">", 0.5), quote=(("aligned", True), ("misaligned", False)),
            text="Huge pfnmap leaves make lat_mem_rd loads a median {aligned}x{aligned_bar} faster than PTEs where "
                 "most of the mapping can take them ({aligned_n} points), and {misaligned}x{misaligned_bar} where misalignment (va - pa, or the "
                 "start) leaves less than half of it to huge leaves ({misaligned_n} points)."),
)


# The RFC's figures pin five numbers (calibrate's count): the DRAM load of every row, where the PTE rows'
# walk lines live (the cluster's share of the L3 at 64 MiB, the rest of the die's L3 from 128 MiB), and the
# copy's rate and per-page stall. The cache sizes are the named part's; walk_ref_ns, which the figures
# cannot tell from the latencies a walk reads, stays hand-set and small.
FREE_PARAMS = (
    FreeParam(section="pfnmap", key="dram_latency_ns", lower=20.0, upper=500.0),
    FreeParam(section="pfnmap", key="cluster_l3_latency_ns", lower=3.0, upper=100.0),
    FreeParam(section="pfnmap", key="llc_latency_ns", lower=5.0, upper=150.0),
    FreeParam(section="pfnmap", key="memcpy_test_gbs", lower=0.5, upper=200.0),
    FreeParam(section="pfnmap", key="copy_tlb_miss_ns", lower=0.0, upper=1000.0),
)
# Rows measured on a host span sizes whose data lives in its caches, so they pin the walker's own cost
# apart from the LLC latency; the host's cluster_l3 is its L2 (host_caches), whose latency is assumed.
MEASURED_FREE_PARAMS = tuple(
    FreeParam(section="pfnmap", key="walk_ref_ns", lower=0.0, upper=200.0) if p.key == "cluster_l3_latency_ns" else p
    for p in FREE_PARAMS)
# A load that misses one level is served by a farther one: no sooner, and from no smaller a cache.
COST_ORDERS = (
    CostOrder(lower="l1_latency_ns", higher="l2_latency_ns", why="a load that misses the L1 is served no sooner"),
    CostOrder(lower="l2_latency_ns", higher="cluster_l3_latency_ns",
              why="a load that misses the L2 is served no sooner"),
    CostOrder(lower="cluster_l3_latency_ns", higher="llc_latency_ns",
              why="a load that misses the cluster's share of the L3 is served no sooner"),
    CostOrder(lower="llc_latency_ns", higher="dram_latency_ns", why="a load that misses the LLC is served no sooner"),
    CostOrder(lower="l1_bytes", higher="l2_bytes", why="the L2 holds at least what the L1 holds"),
    CostOrder(lower="l2_bytes", higher="cluster_l3_bytes", why="the cluster's share of the L3 holds at least the L2"),
    CostOrder(lower="cluster_l3_bytes", higher="llc_bytes", why="the LLC holds at least the capacity nearer than it"),
)


def published_figures(model: str) -> tuple[Figure, ...]:
    """The RFC's twenty figures of `model` (this model's name): lat_mem_rd rows and streaming copies."""
    # lat_mem_rd -t 4096M on a 4 GiB mmap(device_fd): every row is a working set of the one 4 GiB
    # mapping; memcpy_test copies 1/2/4 GiB of it. The RFC's machine is arm64-class (the series targets
    # arm64 and riscv); device memory taken as 1 GiB aligned, va == pa modulo 1 GiB, so every whole
    # 2 MiB block gets a PMD leaf.
    base = {"namespace_size": "4GiB", "align": "1GiB", "pa_offset": NOT_GIVEN, "va_offset": 0, "arch": "arm64"}
    runs = (("lat_mem_rd", LAT_FIGURES, "metric_ns_per_load", "ns", "lat_mem_rd_random", "lat_mem_rd -t 4096M, row "),
            ("copy", COPY_FIGURES, "metric_copy_ms", "ms", "memcpy_seq", "memcpy_test, "))
    return tuple(
        Figure(id=f"pfnmap/{kind}/{leaf}/{size}", model=model, metric=metric, published=value, unit=unit,
               params={**base, "working_set": size, "compound_order": order, "access": access},
               source=SOURCE + f": numactl -C 0 {command}{size}, {leaf} mapping")
        for kind, table, metric, unit, access, command in runs
        for size, (pte, pmd) in table.items()
        for leaf, order, value in (("pte", 0, pte), ("pmd", PMD_ORDER, pmd)))


class PfnmapModel(Model):
    name = "pfnmap"
    _points = LastPoints()  # a fit's figures: status and inputs derived once (a third of an evaluation)
    _counted: dict[tuple, LastPoints] = {}  # Machine.structure, contpte_special -> the last points' geometry
    version = "6"  # 2: no PUD leaves on arm64; 3: the L3 in two parts, datasheet cache sizes, five new costs;
    # 4: setup instructions, priced from the huge-pfnmap build's kernel rows; 5: error bars from the signed
    # leave-one-out residuals (workers.interval); 6: setup priced from the build on the RFC v2's code paths
    description = ("remap_pfn_range() with PMD (RFC) or PUD (what-if) leaves: leaves, page tables, setup, "
                   "TLB misses, page walks, ns per random load and ms per streaming copy")
    axes = (NAMESPACE_SIZE, ALIGN, COMPOUND_ORDER, PA_OFFSET, VA_OFFSET, ARCH, ACCESS, WORKING_SET)
    metrics = (
        Metric(column="metric_pte_leaves", dtype=INT, doc="PTE leaves (4 KiB) the mapping ends up with"),
        Metric(column="metric_cont_blocks", dtype=INT,
               doc="arm64 64 KiB contpte blocks among the PTEs (0 unless the profile lets special PTEs fold)"),
        Metric(column="metric_pmd_leaves", dtype=INT, doc="2 MiB PMD leaves"),
        Metric(column="metric_pud_leaves", dtype=INT, doc="1 GiB PUD leaves (what-if)"),
        Metric(column="metric_pt_pages", dtype=INT,
               doc="page-table pages allocated (PTE and PMD tables plus the RFC's deposited tables)"),
        Metric(column="metric_pt_deposited_pages", dtype=INT, doc="of which deposited with a PMD leaf (the RFC)"),
        Metric(column="metric_pt_bytes", dtype=INT, doc="page-table memory, pt_pages x 4 KiB"),
        Metric(column="metric_huge_fraction", dtype=FLOAT, better="higher",
               doc="share of the mapping's bytes under PMD or PUD leaves"),
        Metric(column="metric_setup_us", dtype=FLOAT, better="lower",
               doc="remap_pfn_range() time: call + leaves + page-table page allocations"),
        Metric(column="metric_setup_instructions", dtype=FLOAT, better="lower",
               doc="instructions of the mmap() that runs remap_pfn_range() in the huge-pfnmap x86 build: kernel "
                   "rows under QEMU's instruction counter; modeled: a call, PTEs, PMD leaves and page-table pages "
                   "at instructions per operation fit to the recorded kernel rows (pfnmap/instructions.py); null "
                   "for arm64"),
        Metric(column="metric_tlb_entries", dtype=INT,
               doc="TLB entries needed to cover the mapping at TLB granularity"),
        Metric(column="metric_tlb_reach_l1_bytes", dtype=INT, doc="bytes of the mapping the L1 data TLB can cover"),
        Metric(column="metric_tlb_reach_l2_bytes", dtype=INT, doc="bytes of the mapping the L2 TLB can cover"),
        Metric(column="metric_tlb_miss_rate", dtype=FLOAT, better="lower",
               doc="page walks per load (random) or per 64-byte line copied (sequential)"),
        Metric(column="metric_walk_refs", dtype=FLOAT,
               doc="memory references of a mean page walk (up to 24 in a guest)"),
        Metric(column="metric_walk_ns", dtype=FLOAT, better="lower",
               doc="time of a mean page walk, from where its page-table lines live"),
        Metric(column="metric_walk_ns_per_access", dtype=FLOAT, better="lower",
               doc="walk time per load or per line copied"),
        Metric(column="metric_ns_per_load", dtype=FLOAT, better="lower",
               doc="lat_mem_rd -t latency per load (access = lat_mem_rd_random; else null)"),
        Metric(column="metric_copy_ms", dtype=FLOAT, better="lower",
               doc="time to stream-copy the mapping (access = memcpy_seq; else null)"),
        Metric(column="metric_speedup_vs_pte", dtype=FLOAT, better="higher",
               doc="the same point with PTEs only, over this one (1.0 for compound_order = 0)"),
    )
    headline = "metric_ns_per_load"
    points_per_second = 1.5e6  # measured 1.4-2.2 M points/s on one core (1,000,000-point frames)
    report = Report(
        comparison=Comparison(axis="compound_order", baseline=0, metric="metric_ns_per_load",
                              label="largest leaf order"),
        best_keys=("namespace_size", "access"), plots=PLOTS, findings=FINDINGS,
        # The leaf names kernel developers use for the orders (the RFC's "PTE" / "PMD").
        value_labels={"compound_order": {0: "PTE (order 0)", 9: "PMD (order 9)", 18: "PUD (order 18)"}})
    calibration = Calibration(figures=published_figures(name), free_params=FREE_PARAMS,
                              measured_free_params=MEASURED_FREE_PARAMS, cost_orders=COST_ORDERS)
    # The user-space analogs (workers/models/pfnmap/measure.py): lmbench's lat_mem_rd -t chase fills
    # metric_ns_per_load, the streaming copy metric_copy_ms; the host's caches decide where the chase's
    # page-table lines are found, so a fit takes its L1d, L2 and last level (and its L2 as the cluster's
    # share of the L3: a level no larger than the one before it is left out).
    measurement = Measurement(
        planner="workers.models.pfnmap.measure:plan_pfnmap", metric_axis="access",
        metric={"lat_mem_rd_random": "metric_ns_per_load", "memcpy_seq": "metric_copy_ms"},
        id_axes=("access", "compound_order", "namespace_size"), id_prefixes={"compound_order": "order"},
        host_caches={("pfnmap", "llc_bytes"): LAST_LEVEL, ("pfnmap", "l2_bytes"): L2_BYTES,
                     ("pfnmap", "cluster_l3_bytes"): L2_BYTES, ("pfnmap", "l1_bytes"): L1D_BYTES},
    )

    # The x86 guest maps /dev/mem in the huge-pfnmap build (RFC on and off) and counts its leaves and tables.
    kernel = KernelCheck(planner="workers.models.pfnmap.kernel:plan", reader="workers.models.pfnmap.kernel:read",
                         metrics=(*KERNEL_METRICS, INSTRUCTIONS), exact=KERNEL_METRICS, sampled=INSTRUCTIONS,
                         work=(INSTRUCTIONS,), inputs="workers.models.pfnmap.kernel:inputs",
                         prepare="workers.models.pfnmap.kernel:prepare",
                         bound="workers.models.pfnmap.kernel:bound", fitted="workers.models.pfnmap.kernel:fitted",
                         differs="workers.models.pfnmap.kernel:differs",
                         guest="the x86 /dev/mem probe (workers/guest/devmem.py) boots its own huge-pfnmap build, one "
                               "boot a chunk for each of [kernel] boots, 7-11 s under TCG, whatever the image")

    def evaluate(self, points: pl.DataFrame, profile: Profile) -> pl.DataFrame:
        """Geometry, setup and access cost for every point (see the module doc)."""
        a = self._points.get(points, self._inputs)  # what depends on the points alone
        m = Machine.from_profile(profile)
        contpte = bool(profile.value("pfnmap", "contpte_special"))
        geo = self._counted.setdefault((m.structure, contpte), LastPoints()).get(
            points, lambda p: self._geometry(m, a, contpte))
        g = geo["mapping"]
        cost = self._access(m, a, geo["access"])
        base = self._access(m, a, geo["mainline"])
        kb = kind_bytes(g)
        per_kind, per_size = entries(m, kb)
        setup = {k: float(profile.value("pfnmap", k)) for k in SETUP_KEYS}
        setup_ns = (setup["remap_call_ns"] + g["pte"] * setup["pte_set_ns"]
                    + (g["pmd"] + g["pud"]) * setup["huge_leaf_set_ns"] + g["pt_pages"] * setup["pt_page_alloc_ns"])
        metrics = pl.DataFrame({
            "metric_pte_leaves": g["pte"], "metric_cont_blocks": g["cont"], "metric_pmd_leaves": g["pmd"],
            "metric_pud_leaves": g["pud"], "metric_pt_pages": g["pt_pages"],
            "metric_pt_deposited_pages": g["deposited"], "metric_pt_bytes": g["pt_pages"] * PAGE,
            "metric_huge_fraction": g["huge_bytes"] / a["length"], "metric_setup_us": setup_ns / 1e3,
            "metric_setup_instructions": np.where(a["arm64"], np.nan, setup_instructions(g["pte"], g["pmd"],
                                                                                        g["pt_pages"])),
            "metric_tlb_entries": sum(per_kind.values()),
            "metric_tlb_reach_l1_bytes": reach(m, per_size, m.tlb_l1),
            "metric_tlb_reach_l2_bytes": reach(m, per_size, m.tlb_l2),
            "metric_tlb_miss_rate": cost["miss_rate"], "metric_walk_refs": cost["walk_refs"],
            "metric_walk_ns": cost["walk_ns"], "metric_walk_ns_per_access": cost["walk_ns_per_access"],
            "metric_ns_per_load": cost["ns"], "metric_copy_ms": cost["ns"] / 1e6,
            "metric_speedup_vs_pte": base["ns"] / cost["ns"],
        }, schema=self.metric_dtypes)
        # each access pattern fills its own metric; the host nulls the metrics of rows not ok
        seq = pl.Series(a["seq"])
        only = {"metric_ns_per_load": ~seq, "metric_copy_ms": seq,
                "metric_setup_instructions": ~pl.Series(a["arm64"])}
        return metrics.with_columns(pl.when(keep).then(pl.col(c)).otherwise(None).alias(c) for c, keep in only.items())

    @staticmethod
    def _inputs(points: pl.DataFrame) -> dict[str, np.ndarray]:
        """Parameter columns as numpy arrays, made safe to compute on (bad rows are nulled later)."""
        order = order_expr()
        pa, va = pl.col("param_pa_offset"), pl.col("param_va_offset")
        arr = points.select(
            (pl.col("param_namespace_size").fill_null(PAGE).clip(PAGE, None) // PAGE * PAGE).alias("length"),
            pl.col("param_align").fill_null(PAGE).clip(PAGE, None).alias("align"),
            pl.when(order.is_in(LEAF_ORDERS)).then(order).otherwise(0).alias("order"),
            pl.when((pa >= 0) & (pa < PUD)).then(pa // PAGE * PAGE).otherwise(NOT_GIVEN).alias("pa_offset"),
            pl.when((va >= 0) & (va < PUD)).then(va // PAGE * PAGE).otherwise(0).alias("va_offset"),
            (pl.col("param_arch") == "arm64").fill_null(False).alias("arm64"),
            (pl.col("param_access") == "memcpy_seq").fill_null(False).alias("seq"),
            pl.col("param_working_set").alias("ws"),
        ).with_columns(  # "all" (null) is the whole mapping; bad values are nulled later
            pl.min_horizontal(pl.col("ws").fill_null(pl.col("length")).clip(PAGE, None) // PAGE * PAGE,
                              pl.col("length")).alias("working_set"),
        ).drop("ws")
        return {c: arr[c].to_numpy() for c in arr.columns}

    @staticmethod
    def _geometry(m: Machine, a: dict, contpte: bool) -> dict:
        """The leaves of the mapping and, for the access with this RFC's leaves and with mainline's PTEs, the
        leaves it sees and the counts of its random loads and its streaming copies (tlb.random_counts,
        tlb.sequential_counts): what the points and the machine's structure decide. Kept per structure for
        the last points (self._counted): a chunk's error bars evaluate its points again under refits that
        move latencies and bandwidths only, and price these counts again."""
        cont_on = a["arm64"] & contpte
        pa, va = starts(a["align"], a["pa_offset"], a["va_offset"])
        # What the access sees: the whole mapping (random pages from all of it), or the copied prefix.
        span = np.where(a["seq"], a["working_set"], a["length"])
        out = {"mapping": leaves(a["length"], pa, va, a["order"], cont_on)}
        for side, order in (("access", a["order"]), ("mainline", np.zeros_like(a["order"]))):
            g = leaves(span, pa, va, order, cont_on)
            counts = {}
            for key, rows, count in (("random", np.flatnonzero(~a["seq"]), random_counts),
                                     ("seq", np.flatnonzero(a["seq"]), sequential_counts)):
                if rows.size:
                    counts[key] = (rows, count(m, *_rows(g, a, rows)))
            out[side] = counts
        return out

    @staticmethod
    def _access(m: Machine, a: dict, counts: dict) -> dict[str, np.ndarray]:
        """The access pattern's cost per point: random loads or the streaming copy, each on its rows, priced
        from their counts."""
        n = a["seq"].size
        out = {k: np.zeros(n) for k in ("ns", "miss_rate", "walk_ns_per_access", "walk_ns", "walk_refs")}
        for key, fn in (("random", random_access), ("seq", sequential_copy)):
            if key not in counts:
                continue
            rows, c = counts[key]
            for k, v in fn(m, c).items():
                out[k][rows] = v
        return out

    @property
    def infeasible(self) -> tuple[tuple[pl.Expr, str], ...]:
        """Why a point cannot exist: (condition, message), the first that holds wins."""
        size, align, order = pl.col("param_namespace_size"), pl.col("param_align"), order_expr()
        pa, va, ws = pl.col("param_pa_offset"), pl.col("param_va_offset"), pl.col("param_working_set")
        return (
            (size.is_null() | (size <= 0) | (size % PAGE != 0),
             "namespace_size must be a positive multiple of 4KiB (remap_pfn_range maps whole pages)"),
            (align.is_null() | (align < PAGE) | ((align & (align - 1)) != 0),
             "align must be a power of two of at least 4KiB"),
            (~order.is_in(LEAF_ORDERS),
             "compound_order must be 0 (PTEs only, mainline), 9 (PMD leaves, the RFC) or 18 "
             "(PUD leaves, what-if); remap_pfn_range() creates no other leaf order ('auto' is 9)"),
            # mm/Kconfig: ARCH_SUPPORTS_PUD_PFNMAP depends on HAVE_ARCH_TRANSPARENT_HUGEPAGE_PUD, which
            # x86_64 selects and arm64 does not (huge pfnmap series: "only x86_64 (1G+2M) and arm64 (2M)")
            ((order == PUD_ORDER) & (pl.col("param_arch") == "arm64"),
             "arm64 has no PUD pfnmap: ARCH_SUPPORTS_PUD_PFNMAP needs HAVE_ARCH_TRANSPARENT_HUGEPAGE_PUD, "
             "which arm64 does not select (mm/Kconfig); its largest pfnmap leaf is a PMD (order 9)"),
            (pa.is_null() | ((pa != NOT_GIVEN) & ((pa < 0) | (pa >= PUD))),
             "pa_offset must be -1 (not given) or a byte offset from 0 to 1GiB - 1"),
            ((pa != NOT_GIVEN) & (pa % PAGE != 0),
             "pa_offset must be a multiple of 4KiB: remap_pfn_range() maps page frames"),
            (va.is_null() | (va < 0) | (va >= PUD), "va_offset must be from 0 to 1GiB - 1"),
            (va % PAGE != 0,
             "va_offset must be a multiple of 4KiB: remap_pfn_range() warns and fails on an "
             "unaligned address (WARN_ON_ONCE(!PAGE_ALIGNED(addr)))"),
            (ws.is_not_null() & ((ws <= 0) | (ws % PAGE != 0)),
             "working_set must be a positive multiple of 4KiB (the chase visits whole pages) or 'all'"),
            (ws.is_not_null() & (ws > size),
             "working_set must not exceed namespace_size: the access touches pages of the mapping"),
        )


MODEL = PfnmapModel()
