"""young: the cost of clearing access (young) bits and unmapping large file folios in reclaim.

Counts, in closed form (counts.py), what reclaim of `namespace_size` bytes out of `mapped_size` bytes
of clean file folios of order `compound_order` does to their PTEs: the folio_referenced() walks
(mm/rmap.c folio_referenced_one()), per PTE as before the batching series or batched with
test_and_clear_young_ptes() / clear_flush_young_ptes(), on arm64 (contpte blocks of 16 PTEs) or x86_64
(no cont bit); how often each folio is walked (folio_check_references(), mm/vmscan.c, keeps a folio
found young for a second trip, under either LRU); and the unmaps of the
folios it frees (mm/rmap.c try_to_unmap_one(), one PTE per step before v7.0, one folio run per step
from v7.0: axis `unmap`). Then prices the counts with per-operation costs from the profile's [young]
section. The counts are those of the executable reference, workers/models/young/reference.py, on the
same layout (the tests compare them). See those modules for the kernel sources read.

Layout (what the reference's build_table() simulates):
- The folio range starts `align` bytes past a 2 MiB (PMD) boundary when align < 2 MiB (aligned to
  align and to no larger power of two), else on one. Folios are naturally aligned physically.
- A contpte block is cont iff contpte_set_ptes() sets PTE_CONT on it: arm64, order >= 4 and align >=
  64 KiB (VA and PA equal modulo 64 KiB). Otherwise no PTE is cont, whatever `first_pte_cont` says
  (true is the layout the kernel leaves, so it holds on x86_64 too). `first_pte_cont = false` unfolds
  each folio's head block (the reviewer's case: first PTE not cont, later ones cont, as after a partial
  mprotect()/madvise() at the head, contpte_try_unfold_partial()).
- folio_pte_batch() stops at pmd_addr_end(): a folio straddling a PMD boundary (align < folio size)
  takes two batched calls. Batch ends are then block aligned, so contpte_align_addr_ptep() never
  widens a whole-folio scan.
- The first floor(young_fraction * mapped folios) folios are young in every PTE; reclaim meets the
  folios in mapping order (counts.py says which are walked how often).
- compound_order "auto" is 4: a 64 KiB folio, one contpte block (CONT_PTES), the large folios the
  series targets. The seed mail does not state its folio size; the figures use order 4.

Cost = reclaimed folios x folio_ns (the rest of reclaim per folio: isolation, rmap walk setup,
page-cache removal, freeing) + young-helper calls x call_ns + cont blocks walked x CONT_PTES x
pte_read_ns (the access/dirty gather, contpte_ptep_get(), page_vma_mapped_walk() does on a cont PTE)
+ helper atomics x pte_atomic_ns + plain PTE reads x pte_read_ns (x86 skips the atomic on an old PTE)
+ helper TLB flushes x tlb_flush_ns (lru = classic only: MGLRU's lru_gen_look_around() clears without
flushing) + unmap steps x (call_ns + unmap_step_ns: the rmap, statistics and counter work of a
try_to_unmap_one() step) + unmap atomics x pte_atomic_ns (PTE get-and-clears, the page and folio
mapcounts, the refcount) + deferred unmap TLB flushes x tlb_flush_ns + unfolds x tlb_sync_ns
(contpte_convert()'s TLBI + DSB, which waits) + plain PTE writes of unfolds x pte_read_ns. MGLRU with the
per-PTE helper is v6.12's eviction (lookaround.py): each walked PTE's look-around, which clears a young PTE's
neighbours within 64 PTEs and moves their folios to the youngest generation unwalked, and the aging, which
clears the young PTEs left once that generation holds half the pages; its calls and walks are what a guest's
6.12 counted (benchmarks/RESULTS.md, kernel-young). Not modeled: a kept folio's isolation and putback (only
its walk is priced), the look-around's window scan over old PTEs (no helper call) and the aging's page-table
walk beyond its calls.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from workers.axes import ALIGN, COMPOUND_ORDER, NAMESPACE_SIZE, Axis, choice
from workers.findings import FIRST, LAST, MAX, MIN, Clause, Medians
from workers.model import (Assumption, Calibration, Comparison, Figure, FreeParam, KernelCheck, LastPoints,
                           Measurement, Metric, Model, Report)
from workers.plots import Cond, Either, Lines, Panels, Series, X, Y
from workers.profiles import Profile

from .counts import CONT_PTES, PAGE, PMD_SIZE, counts
from .reference import MAX_PAGECACHE_ORDER

AUTO_ORDER = 4  # 64 KiB folio = one contpte block
# What a reclaim in an arm64 guest counts (workers/models/young/kernel.py), each equal to the model's where it agrees
INSTRUCTIONS = "metric_instructions_per_folio"  # a kernel row's, sampled: compare's 6.12 against 7.3
KERNEL_METRICS = ("metric_calls", "metric_young_calls", "metric_ptes_asked", "metric_walks", "metric_ptes",
                  "metric_folios")
HPAGE_PMD_ORDER = 9
SOURCE = "linux-mm, Baolin Wang, [PATCH v3 6/6] arm64: mm: implement the architecture-specific " \
         "test_and_clear_young_ptes(), March 2026 (seeds/arm64-test-and-clear-young-ptes.review.txt)"

BATCHING = choice("batching", ("per_pte", "batched"), "batched",
                  "per_pte: the per-PTE helper once per PTE (before the series); batched: one helper call per "
                  "folio run (clear_flush_young_ptes() under the classic LRU from v7.0, "
                  "test_and_clear_young_ptes() under MGLRU)")
ARCH = choice("arch", ("arm64", "x86_64"), "arm64", "arm64 has 16-PTE contpte blocks; x86_64 has no cont bit")
LRU = choice("lru", ("mglru", "classic"), "mglru",
             "mglru: lru_gen_look_around() -> test_and_clear_young_ptes_notify(), no TLB flush (with per_pte "
             "v6.12's: it also clears a young PTE's neighbours and promotes their folios unwalked, and the aging "
             "clears what is left); classic: clear_flush_young_ptes_notify(), arm64 flushes the TLB when young; "
             "folio_check_references() keeps a folio a walk finds young for a second trip")
UNMAP = choice("unmap", ("per_pte", "batched"), "batched",
               "per_pte: try_to_unmap_one() clears a file folio one PTE per step, and on arm64 unfolds each "
               "contpte block first (kernels before v7.0); batched: folio_unmap_pte_batch() clears a folio run "
               "per step (v7.0: 'mm: rmap: support batched unmapping for file large folios')")
MAPPED_SIZE = Axis(
    name="mapped_size", kind="extent", unit="bytes", default="all",
    doc="bytes of clean file folios mapped and on the LRU when reclaim starts, namespace_size of them "
        "freed; every young one is met before any second trip (walked, or under MGLRU with per_pte cleared "
        "by a neighbour's look-around or the aging); 'all' (null): namespace_size",
    rule="a multiple of 4KiB", check=lambda v: v % PAGE == 0,
)
YOUNG_FRACTION = Axis(
    name="young_fraction", kind="float", unit="", default=0.0,
    doc="fraction of the mapped folios whose PTEs are young (accessed) when reclaim starts: the first ones "
        "in mapping order",
    rule="from 0 to 1", check=lambda v: 0.0 <= v <= 1.0,
)
FIRST_PTE_CONT = Axis(
    name="first_pte_cont", kind="bool", unit="", default=True,
    doc="true: each folio's PTEs as contpte_set_ptes() leaves them (cont where a block can be: arm64, order >= 4, "
        "64 KiB-aligned; none on x86_64 or smaller folios); false unfolds each folio's head contpte block "
        "(later blocks stay cont)",
)

INT = pl.Int64
FLOAT = pl.Float64
# The [young] costs evaluate() prices the counts with (the profile's notes say what each one is).
COSTS = ("folio_ns", "pte_atomic_ns", "call_ns", "pte_read_ns", "tlb_flush_ns", "unmap_step_ns", "tlb_sync_ns")
# The times of arch = x86_64 scale by [young] x86_scale: every published x86 figure is a ratio, which a factor
# common to all of one machine's costs leaves unchanged, so the x86 machine's costs are the arm64 server's times it.
TIMES = ("metric_young_clear_ms", "metric_unmap_ms", "metric_reclaim_rest_ms", "metric_scan_ms")


def on_x86(rows: pl.DataFrame, profile: Profile) -> pl.Series:
    """Rows of arch = x86_64: their times rest on the assumed x86_scale."""
    return rows["param_arch"] == "x86_64"


def unmapping(rows: pl.DataFrame, profile: Profile) -> pl.Series:
    """Rows whose reclaim unmaps a folio: their times rest on the assumed unmap_step_ns."""
    return rows["metric_unmap_steps"].fill_null(0) > 0


ASSUMPTIONS = (
    Assumption(name="x86 costs (young.x86_scale)", where=on_x86, metrics=TIMES,
               text="the x86 machine's per-operation costs are the arm64 server's times young.x86_scale; its "
                    "published figures are ratios, which leave the factor free (every x86 time spans its range)"),
    Assumption(name="unmap step (young.unmap_step_ns)", where=unmapping,
               metrics=(*TIMES, "metric_speedup_vs_per_pte", "metric_time_reduction_vs_per_pte",
                        "metric_time_reduction_vs_per_pte_unmap"),
               text="one try_to_unmap_one() step's rmap and counter work is held within its assumed range, read "
                    "from the x86 '50%+' bound (every answer spans it)"),
)


def order_expr() -> pl.Expr:
    """The folio order with "auto" (null) resolved to 4 (a 64 KiB, contpte-sized folio)."""
    return pl.col("param_compound_order").fill_null(AUTO_ORDER)


def mapped_expr() -> pl.Expr:
    """mapped_size with "all" (null) resolved to namespace_size."""
    return pl.col("param_mapped_size").fill_null(pl.col("param_namespace_size"))


# The report's figure of this model (drawn by analysis/figures/declared.py).
PLOTS = (
    Lines(id="young_scan", title="young: reclaim scan time vs folio order, per-PTE vs batched",
          x=X("compound_order", "order", "folio order (log2 pages) and folio size"),
          y=Y("metric_scan_ms", label="modeled reclaim scan time (ms)"),
          hue=Series("batching", order=("per_pte", "batched")),
          panels=Panels("arch", title="arch: {value}"),
          # x86_64 has no cont bit (its first PTE is never cont): compare arm64 with cont heads to x86_64
          where=(Cond("compound_order", "not null"),
                 Either(groups=((Cond("arch", "==", "arm64"), Cond("first_pte_cont", "==", True)),
                                (Cond("arch", "!=", "arm64"), Cond("first_pte_cont", "==", False))),
                        when_varying="first_pte_cont")),
          caption="Modeled sys time of scanning and reclaiming the folios: per_pte calls the per-PTE helper for "
                  "every PTE (a cont PTE walks its whole 16-PTE block); batched calls test_and_clear_young_ptes() "
                  "once per folio run. Order 'auto' rows are left out; where first_pte_cont varies it is true on "
                  "arm64, false on x86_64."),
)

# The report's key finding about batched young-bit clearing (workers.findings).
FINDINGS = (
    Medians(id="young_batching", figure="young_scan", metric="metric_speedup_vs_per_pte",
            where=(Cond("batching", "==", "batched"), Cond("arch", "==", "arm64")),
            by="compound_order", quote=(("best", MAX), ("worst", MIN)),
            text="Batched young-bit clearing speeds an arm64 reclaim scan up by a median {best}x{best_bar} at folio "
                 "order {best_at}, and {worst}x{worst_bar} at order {worst_at}{more}.",
            more=(Clause(by="young_fraction", quote=(("yf_low", FIRST), ("yf_high", LAST)),
                         text="; from {yf_low}x with {yf_low_at:g} of the folios young to {yf_high}x with "
                              "{yf_high_at:g}"),)),
)


CLASSIC_SOURCE = "Baolin Wang, [PATCH v5 4/5] arm64: mm: implement the architecture-specific " \
                 "clear_flush_young_ptes(), linux-arm-kernel, 2025-12-26 (also v3, v6)"
UNMAP_SOURCE = "Baolin Wang, [PATCH v5 5/5] mm: rmap: support batched unmapping for file large folios, " \
               "linux-arm-kernel, 2025-12-26 (also v2, v6)"


def published_figures(model: str) -> tuple[Figure, ...]:
    """The figures of `model` (this model's name) the profile is fit to: the seed mail's three (MGLRU) and
    the classic-LRU series' four on the same arm64 server (its x86 '10%+' is a validation figure)."""
    # 8 GiB reclaimed of 10 GiB of clean file folios; order 4 (64 KiB) assumed (not stated);
    # young_fraction 0: folios that reclaim frees were found old. The series was tested on a kernel that
    # already had v7.0's batched unmap of file large folios (its MGLRU helper builds on the classic series
    # of which that unmap is the last patch).
    base = {"namespace_size": "8GiB", "mapped_size": "10GiB", "align": "2MiB", "compound_order": 4,
            "young_fraction": 0.0, "lru": "mglru", "unmap": "batched"}
    arm = {**base, "arch": "arm64", "first_pte_cont": True}
    # The classic half (folio_referenced() -> clear_flush_young_ptes(), then batched unmap of file large
    # folios; merged for v7.0), the same reclaim via memory.reclaim. Its patches 1-4 ran on a kernel that
    # unmapped file large folios one PTE at a time (folio_unmap_pte_batch() batched only lazyfree anon
    # folios until patch 5/5). Assumed: every folio young with PG_referenced clear (mapped and touched once
    # through the mapping), so each is walked once young and kept (folio_check_references():
    # FOLIOREF_KEEP) before the 8 GiB are reclaimed on their second trip.
    classic = {**base, "young_fraction": 1.0, "lru": "classic", "unmap": "per_pte"}
    c_arm = {**classic, "arch": "arm64", "first_pte_cont": True}
    return (
        Figure(id="young/arm64/per_pte", model=model, metric="metric_scan_ms", published=470.0,
               unit="ms", params={**arm, "batching": "per_pte"}, source=SOURCE + ": sys 0m0.470s"),
        Figure(id="young/arm64/batched", model=model, metric="metric_scan_ms", published=180.0,
               unit="ms", params={**arm, "batching": "batched"}, source=SOURCE + ": real 0m0.180s"),
        # "about 15% improvement" on x86, read as time saved: the same mail calls 0.470 s -> 0.180 s
        # "60%+ performance improvement", i.e. 1 - 180/470 = 61.7%.
        Figure(id="young/x86_64/improvement", model=model, metric="metric_time_reduction_vs_per_pte",
               published=0.15, unit="fraction of time saved",
               params={**base, "arch": "x86_64", "first_pte_cont": False, "batching": "batched"},
               source=SOURCE + ": about 15% improvement on my X86 machine"),
        Figure(id="young/classic/arm64/per_pte", model=model, metric="metric_scan_ms", published=1518.0,
               unit="ms", params={**c_arm, "batching": "per_pte"},
               source=CLASSIC_SOURCE + ": sys 0m1.518s without the series"),
        Figure(id="young/classic/arm64/batched", model=model, metric="metric_scan_ms", published=1018.0,
               unit="ms", params={**c_arm, "batching": "batched"},
               source=CLASSIC_SOURCE + ": sys 0m1.018s with patches 1-4 (5/5 quotes it as its 'W/o patch')"),
        Figure(id="young/classic/arm64/batched_unmap", model=model, metric="metric_scan_ms", published=249.0,
               unit="ms", params={**c_arm, "batching": "batched", "unmap": "batched"},
               source=UNMAP_SOURCE + ": sys 0m0.249s with the patch, 0m1.018s without"),
        # A lower bound ('50%+'), fit as its bound: the one figure where no contpte block unfolds, so the
        # only one that tells the unmap's per-step work (unmap_step_ns) from the rest of reclaim per folio
        # (folio_ns) and from an unfold's synchronous TLBI + DSB (tlb_sync_ns). The x86 machine is assumed
        # to share the arm64 server's per-operation costs, as for the seed's x86 figure.
        Figure(id="young/classic/x86_64/unmap_improvement", model=model,
               metric="metric_time_reduction_vs_per_pte_unmap", published=0.50, unit="fraction of time saved",
               params={**classic, "arch": "x86_64", "first_pte_cont": False, "batching": "batched",
                       "unmap": "batched"},
               source=UNMAP_SOURCE + ": 50%+ improvement on my X86 machine", bound=">="),
    )


class YoungModel(Model):
    name = "young"
    # 7: MGLRU keeps a young folio for a second trip as the classic LRU does (Debian's arm64 7.3 in a guest)
    # 6: the calls that found young and the PTEs they name (what a kernel's probe counts)
    # 5: x86 times scale by x86_scale, the '50%+' figure a bound; 4: the unmap's per-step work and an unfold's
    # synchronous TLBI + DSB priced apart
    # 8: instructions per reclaimed folio (kernel rows; null in the model's); 9: error bars from the signed
    # leave-one-out residuals (workers.interval); 10: MGLRU with the per-PTE helper is v6.12's eviction, its
    # look-around and aging (lookaround.py; a guest's 6.12 counted the same)
    version = "10"
    description = ("arm64 contpte young-bit batching (test_and_clear_young_ptes(), clear_flush_young_ptes()) and "
                   "batched unmap of file large folios, priced as the sys time of reclaiming them under MGLRU "
                   "or the classic LRU")
    axes = (NAMESPACE_SIZE, ALIGN, COMPOUND_ORDER, BATCHING, ARCH, YOUNG_FRACTION, FIRST_PTE_CONT, LRU, UNMAP,
            MAPPED_SIZE)
    metrics = (
        Metric(column="metric_folios", dtype=INT, doc="folios reclaimed (namespace_size / folio size)"),
        Metric(column="metric_mapped_folios", dtype=INT,
               doc="folios mapped on the LRU when reclaim starts (mapped_size / folio size)"),
        Metric(column="metric_ptes", dtype=INT, doc="PTEs mapping the reclaimed folios"),
        Metric(column="metric_cont_blocks", dtype=INT, doc="arm64 contpte blocks among them"),
        Metric(column="metric_walks", dtype=INT,
               doc="folio_referenced() walks: one per trip of a folio through shrink_folio_list()"),
        Metric(column="metric_kept_folios", dtype=INT,
               doc="folios a walk found young and kept for a second trip (the inactive list; MGLRU: its "
                   "generations; not those v6.12's look-around kept unwalked)"),
        Metric(column="metric_calls", dtype=INT, doc="young-helper calls (per PTE, or one per folio run when batched)"),
        Metric(column="metric_ptes_visited", dtype=INT,
               doc="PTEs read by the helpers (a per-PTE call on a cont PTE walks its 16)"),
        Metric(column="metric_blocks_touched", dtype=INT, doc="contpte blocks walked by the helpers"),
        Metric(column="metric_tlb_flushes", dtype=INT,
               doc="TLB flushes by the young helpers (lru = classic on arm64 only; MGLRU clears without flushing)"),
        Metric(column="metric_pte_atomics", dtype=INT,
               doc="atomic PTE updates by the young helpers (arm64: every visited PTE; x86: young ones)"),
        Metric(column="metric_young_folios", dtype=INT, doc="walks that found the folio young"),
        Metric(column="metric_young_calls", dtype=INT,
               doc="young-helper calls that found a young PTE (per PTE: one per cont block and per young PTE outside "
                   "one; batched: one per young folio run)"),
        Metric(column="metric_ptes_asked", dtype=INT,
               doc="PTEs the young-helper calls name: one a per-PTE call, a folio run's a batched one"),
        Metric(column="metric_unmap_steps", dtype=INT,
               doc="try_to_unmap_one() loop steps (one per PTE, or one per folio run when unmap = batched)"),
        Metric(column="metric_unfolds", dtype=INT,
               doc="arm64 contpte blocks unfolded by a one-PTE clear (contpte_convert(); unmap = per_pte)"),
        Metric(column="metric_unmap_tlb_flushes", dtype=INT,
               doc="TLB flushes by the unmap (arm64: one deferred TLBI per step, one per unfold; x86 none)"),
        Metric(column="metric_unmap_atomics", dtype=INT,
               doc="atomic updates by the unmap (PTE get-and-clears, mapcounts, refcounts; x86 tlb_gen)"),
        Metric(column="metric_young_clear_ms", dtype=FLOAT, better="lower", doc="time in the young-bit helpers"),
        Metric(column="metric_unmap_ms", dtype=FLOAT, better="lower",
               doc="time in try_to_unmap_one()'s PTE work (steps, atomics, TLB flushes, unfolds)"),
        Metric(column="metric_reclaim_rest_ms", dtype=FLOAT, better="lower",
               doc="time of the rest of reclaim, per reclaimed folio"),
        Metric(column="metric_scan_ms", dtype=FLOAT, better="lower",
               doc="modeled sys time of the reclaim: young_clear_ms + unmap_ms + reclaim_rest_ms"),
        Metric(column="metric_speedup_vs_per_pte", dtype=FLOAT, better="higher",
               doc="per_pte scan time of the same configuration over this one"),
        Metric(column="metric_time_reduction_vs_per_pte", dtype=FLOAT, better="higher",
               doc="1 - this scan time / the per_pte one (the mail's 'improvement')"),
        Metric(column="metric_time_reduction_vs_per_pte_unmap", dtype=FLOAT, better="higher",
               doc="1 - this scan time / the one with unmap = per_pte"),
        Metric(column=INSTRUCTIONS, dtype=FLOAT, better="lower",
               doc="instructions of the reclaim (its memory.reclaim write, done again without the probes that "
                   "count its calls) per folio reclaimed: kernel rows only (an arm64 guest under QEMU's instruction "
                   "counter); the model prices the reclaim's time, not a build's instructions, and leaves it null"),
    )
    headline = "metric_scan_ms"
    points_per_second = 2e6
    _points = LastPoints()  # a chunk's counts, derived once for its error bars' refits (and a fit's figures)
    report = Report(
        comparison=Comparison(axis="batching", baseline="per_pte", metric="metric_scan_ms", label="batching"),
        best_keys=("compound_order", "arch"), plots=PLOTS, findings=FINDINGS)
    calibration = Calibration(figures=published_figures(name), free_params=(
        FreeParam(section="young", key="folio_ns", lower=50.0, upper=50_000.0),
        FreeParam(section="young", key="pte_atomic_ns", lower=0.2, upper=200.0),
        FreeParam(section="young", key="tlb_sync_ns", lower=100.0, upper=20_000.0),
    ), assumptions=ASSUMPTIONS, crosscheck="workers.models.young.instructions:lines")
    measurement = Measurement(
        reason="young has no user-space analog: test_and_clear_young_ptes() clears access bits in the kernel's "
               "arm64 page tables during reclaim, which no user process can run")
    # Debian's arm64 6.12 and 7.3 in a TCG guest, reclaiming a mapped XFS file (workers/models/young/kernel.py)
    kernel = KernelCheck(planner="workers.models.young.kernel:plan", reader="workers.models.young.kernel:read",
                         metrics=(*KERNEL_METRICS, INSTRUCTIONS), exact=KERNEL_METRICS, sampled=INSTRUCTIONS,
                         bound="workers.models.young.kernel:bound", prepare="workers.models.young.kernel:prepare",
                         inputs="workers.models.young.kernel:inputs", differs="workers.models.young.kernel:differs",
                         guest="the arm64 reclaim probe (workers/guest/arm64.py) boots Debian's arm64 6.12 or 7.3, "
                               "one boot a point, 13-15 s under TCG, whatever the image")

    def evaluate(self, points: pl.DataFrame, profile: Profile) -> dict:
        """Counts and modeled times for every point (see the module doc for the cost formula)."""
        a, c, (pick, unmapped) = self._points.get(points, self._counts)  # what depends on the points alone
        cost = {k: float(profile.value("young", k))
                for k in COSTS}
        scale = np.where(a["arm64"], 1.0, float(profile.value("young", "x86_scale")))
        rest_ns = c["folios"] * cost["folio_ns"] * scale
        young = {p: self._young_ns(c, p, a["arm64"], cost) * scale for p in ("pp", "b")}
        gone = {p: self._unmap_ns(c, p, cost) * scale for p in ("pp", "b")}
        b, bu = a["batched"], a["batched_unmap"]
        young_ns, unmap_ns = np.where(b, young["b"], young["pp"]), np.where(bu, gone["b"], gone["pp"])
        total = rest_ns + young_ns + unmap_ns
        total_pp = rest_ns + young["pp"] + unmap_ns
        total_pp_unmap = rest_ns + young_ns + gone["pp"]
        with np.errstate(divide="ignore", invalid="ignore"):  # infeasible rows (nulled below) may be 0/0
            speedup = total_pp / total
            reduction = 1.0 - total / total_pp
            reduction_unmap = 1.0 - total / total_pp_unmap
        return {
            "metric_folios": c["folios"], "metric_mapped_folios": c["mapped_folios"], "metric_ptes": c["pages"],
            "metric_cont_blocks": c["cont_blocks"], "metric_walks": pick["walks"], "metric_kept_folios": pick["kept"],
            "metric_calls": pick["calls"], "metric_ptes_visited": pick["visits"],
            "metric_blocks_touched": pick["blocks"], "metric_tlb_flushes": pick["flushes"],
            "metric_pte_atomics": pick["atomics"], "metric_young_folios": pick["young_folios"],
            "metric_young_calls": pick["found"], "metric_ptes_asked": pick["asked"],
            "metric_unmap_steps": unmapped["steps"], "metric_unfolds": unmapped["unfolds"],
            "metric_unmap_tlb_flushes": unmapped["flushes"], "metric_unmap_atomics": unmapped["atomics"],
            "metric_young_clear_ms": young_ns / 1e6, "metric_unmap_ms": unmap_ns / 1e6,
            "metric_reclaim_rest_ms": rest_ns / 1e6, "metric_scan_ms": total / 1e6,
            "metric_speedup_vs_per_pte": speedup, "metric_time_reduction_vs_per_pte": reduction,
            "metric_time_reduction_vs_per_pte_unmap": reduction_unmap,
            INSTRUCTIONS: pl.repeat(None, points.height, dtype=FLOAT, eager=True),  # the guest's alone
        }  # the host builds the frame: status from `infeasible`, metrics nulled where not ok

    @staticmethod
    def _counts(points: pl.DataFrame) -> tuple[dict, dict, tuple[dict, dict]]:
        """The points' inputs as numpy arrays, their counts (young.counts), and the counts of each point's own
        batching and unmap (the helper's, the unmap's): no cost in any."""
        arr = points.select(
            pl.col("param_namespace_size").clip(0, None).alias("size"),
            pl.max_horizontal(mapped_expr(), pl.col("param_namespace_size")).clip(0, None).alias("mapped"),
            pl.col("param_align").clip(PAGE, None).alias("align"),
            order_expr().clip(0, 18).alias("order"),
            (pl.col("param_arch") == "arm64").alias("arm64"),
            (pl.col("param_batching") == "batched").alias("batched"),
            (pl.col("param_unmap") == "batched").alias("batched_unmap"),
            (pl.col("param_lru") == "classic").alias("classic"),
            pl.col("param_first_pte_cont").fill_null(True).alias("first_cont"),
            pl.col("param_young_fraction").fill_nan(0.0).fill_null(0.0).clip(0.0, 1.0).alias("yf"),
        )
        a = {c: arr[c].to_numpy() for c in arr.columns}
        c = counts(a["size"], a["mapped"], a["align"], a["order"], a["arm64"], a["first_cont"], a["yf"], a["classic"])
        b, bu = a["batched"], a["batched_unmap"]
        pick = {k: np.where(b, c[f"{k}_b"], c[f"{k}_pp"])
                for k in ("calls", "visits", "blocks", "atomics", "flushes", "found", "asked", "walks", "kept",
                          "young_folios")}
        unmapped = {k: np.where(bu, c[f"unmap_{k}_b"], c[f"unmap_{k}_pp"])
                    for k in ("steps", "unfolds", "flushes", "atomics")}
        return a, c, (pick, unmapped)

    @staticmethod
    def _young_ns(c: dict, path: str, arm64: np.ndarray, cost: dict) -> np.ndarray:
        """Young-bit clearing time (ns) of one batching: calls, block gathers, atomics, reads, flushes."""
        reads = np.where(arm64, 0, c[f"visits_{path}"])  # arm64's READ_ONCE is part of its CAS loop
        return (c[f"calls_{path}"] * cost["call_ns"]
                + c[f"blocks_{path}"] * CONT_PTES * cost["pte_read_ns"]
                + c[f"atomics_{path}"] * cost["pte_atomic_ns"]
                + reads * cost["pte_read_ns"]
                + c[f"flushes_{path}"] * cost["tlb_flush_ns"])

    @staticmethod
    def _unmap_ns(c: dict, path: str, cost: dict) -> np.ndarray:
        """try_to_unmap_one()'s PTE work (ns) of one unmap: steps (the loop's walk step and its rmap and
        counter work), atomics, the TLB maintenance by kind, unfold writes.

        Each step (mm/rmap.c try_to_unmap_one(), v6.12) is a page_vma_mapped_walk() step (call_ns) and
        unmap_step_ns of work no other path here does: update_hiwater_rss(), dec_mm_counter() /
        add_mm_counter() (a per-CPU counter), folio_remove_rmap_pte[s]() -> __folio_remove_rmap()'s
        __lruvec_stat_mod_folio() (NR_FILE_MAPPED, a memcg statistic) and folio_put[_refs](). Its TLB
        flush is deferred: one TLBI without a wait (tlb_flush_ns). An unfold's flush is not:
        contpte_convert() (arch/arm64/mm/contpte.c) calls __flush_tlb_range(), the TLBIs then
        __tlbi_sync_s1ish() (DSB ISH), which waits for every CPU of the inner-shareable domain
        (tlb_sync_ns)."""
        unfolds = c[f"unmap_unfolds_{path}"]
        deferred = c[f"unmap_flushes_{path}"] - unfolds  # counts.unmap(): one flush per step and per unfold
        return (c[f"unmap_steps_{path}"] * (cost["call_ns"] + cost["unmap_step_ns"])
                + c[f"unmap_atomics_{path}"] * cost["pte_atomic_ns"]
                + deferred * cost["tlb_flush_ns"] + unfolds * cost["tlb_sync_ns"]
                + c[f"unmap_writes_{path}"] * cost["pte_read_ns"])

    @property
    def infeasible(self) -> tuple[tuple[pl.Expr, str], ...]:
        """Why a point cannot exist: (condition, message), the first that holds wins."""
        size, align, yf = pl.col("param_namespace_size"), pl.col("param_align"), pl.col("param_young_fraction")
        order = order_expr()
        folio = (pl.lit(2, dtype=pl.Int64).pow(order.clip(0, 18)).cast(pl.Int64) * PAGE)
        return (
            (yf.is_null() | yf.is_nan() | (yf < 0) | (yf > 1),
             "young_fraction must be from 0 to 1 (a fraction of the folios)"),
            (size <= 0, "namespace_size must be a positive number of bytes"),
            ((align < PAGE) | ((align & (align - 1)) != 0), "align must be a power of two of at least 4KiB"),
            (order > MAX_PAGECACHE_ORDER,
             "page-cache folios are at most order 9 (MAX_PAGECACHE_ORDER = HPAGE_PMD_ORDER, 4 KiB pages)"),
            ((order == HPAGE_PMD_ORDER) & (align >= PMD_SIZE),
             "a 2 MiB folio at 2 MiB alignment is PMD-mapped (do_set_pmd): its young bit is one PMD "
             "entry, not PTEs; use align below 2MiB or a smaller order"),
            (size % folio != 0, "namespace_size must be a whole number of folios of this order"),
            (mapped_expr() < size,
             "mapped_size must be at least namespace_size: the folios reclaimed are among those mapped"),
            (mapped_expr() % folio != 0, "mapped_size must be a whole number of folios of this order"),
        )


MODEL = YoungModel()
