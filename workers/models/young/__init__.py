"""young: the cost of clearing access (young) bits of large folios during MGLRU reclaim.

Counts, in closed form, what folio_referenced_one() does to the PTEs of
`namespace_size` bytes of folios of order `compound_order` (mm/rmap.c), per
PTE as before the v3 series or batched with test_and_clear_young_ptes(), on
arm64 (contpte blocks of 16 PTEs) or x86_64 (no cont bit); then prices the
counts with per-operation costs from the profile's [young] section. The counts
are those of the executable reference, workers/models/young/reference.py, on
the same layout (the tests compare them). See that module for the kernel
sources read.

Layout (what the reference's build_table() simulates):
- The folio range starts `align` bytes past a 2 MiB (PMD) boundary when
  align < 2 MiB (aligned to align and to no larger power of two), else on one.
  Folios are naturally aligned physically.
- A contpte block is cont iff contpte_set_ptes() sets PTE_CONT on it: arm64,
  order >= 4 and align >= 64 KiB (VA and PA equal modulo 64 KiB). Otherwise no
  PTE is cont. `first_pte_cont = false` unfolds each folio's head block (the
  reviewer's case: first PTE not cont, later ones cont, as after a partial
  mprotect()/madvise() at the head, contpte_try_unfold_partial()).
- folio_pte_batch() stops at pmd_addr_end(): a folio straddling a PMD boundary
  (align < folio size) takes two batched calls. Batch ends are then block
  aligned, so contpte_align_addr_ptep() never widens a whole-folio scan.
- The first floor(young_fraction * folios) folios are young in every PTE.
- compound_order "auto" is 4: a 64 KiB folio, one contpte block (CONT_PTES),
  the large folios the series targets. The seed mail does not state its folio
  size; the figures use order 4.

Cost per scan = folios x folio_ns (the rest of reclaim per folio: isolation,
rmap walk setup, unmapping, page-cache removal, freeing) + PTEs x pte_atomic_ns
(try_to_unmap's get-and-clear, an atomic per PTE) + helper calls x call_ns +
cont blocks walked x CONT_PTES x pte_read_ns (the access/dirty gather,
contpte_ptep_get(), page_vma_mapped_walk() does on a cont PTE) + atomic PTE
clears x pte_atomic_ns + plain PTE reads x pte_read_ns (x86 skips the atomic on
an old PTE) + TLB flushes x tlb_flush_ns (lru = classic only: MGLRU's
lru_gen_look_around() clears without flushing). Not modeled: the look-around
scan MGLRU does around a young folio, and that a young folio is kept rather
than freed (it is charged the same folio_ns).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from workers.axes import ALIGN, COMPOUND_ORDER, NAMESPACE_SIZE, Axis, choice
from workers.findings import FIRST, LAST, MAX, MIN, Clause, Medians
from workers.model import (Calibration, Comparison, Figure, FreeParam, Measurement, Metric, Model, Reasons, Report,
                           status_columns)
from workers.plots import Cond, Either, Lines, Panels, Series, X, Y
from workers.profiles import Profile
from workers.units import KiB, MiB

CONT_PTES = 16  # arch/arm64/include/asm/pgtable-hwdef.h: 1 << (CONT_PTE_SHIFT - PAGE_SHIFT), 4 KiB granule
PTRS_PER_PTE = 512  # PTEs per page table; pmd_addr_end() bounds a folio_pte_batch() run
PAGE = 4 * KiB
PMD_SIZE = 2 * MiB
AUTO_ORDER = 4  # 64 KiB folio = one contpte block
MAX_PAGECACHE_ORDER = 9  # include/linux/pagemap.h: min(MAX_XAS_ORDER, HPAGE_PMD_ORDER) with THP, 4 KiB pages
HPAGE_PMD_ORDER = 9
SOURCE = "linux-mm, Baolin Wang, [PATCH v3 6/6] arm64: mm: implement the architecture-specific " \
         "test_and_clear_young_ptes(), March 2026 (seeds/arm64-test-and-clear-young-ptes.review.txt)"

BATCHING = choice("batching", ("per_pte", "batched"), "batched",
                  "per_pte: the per-PTE helper once per PTE (before the series); batched: "
                  "test_and_clear_young_ptes() once per folio run")
ARCH = choice("arch", ("arm64", "x86_64"), "arm64", "arm64 has 16-PTE contpte blocks; x86_64 has no cont bit")
LRU = choice("lru", ("mglru", "classic"), "mglru",
             "mglru: lru_gen_look_around() -> test_and_clear_young_ptes_notify(), no TLB flush; "
             "classic: clear_flush_young_ptes_notify(), arm64 flushes the TLB when young")
YOUNG_FRACTION = Axis(
    name="young_fraction", kind="float", unit="", default=0.0,
    doc="fraction of the folios whose PTEs are young (accessed) when reclaim scans them",
    rule="from 0 to 1", check=lambda v: 0.0 <= v <= 1.0,
)
FIRST_PTE_CONT = Axis(
    name="first_pte_cont", kind="bool", unit="", default=True,
    doc="whether each folio's first PTE is cont; false unfolds the head contpte block (later blocks stay cont)",
)

INT = pl.Int64
FLOAT = pl.Float64


def order_expr() -> pl.Expr:
    """The folio order with "auto" (null) resolved to 4 (a 64 KiB, contpte-sized folio)."""
    return pl.col("param_compound_order").fill_null(AUTO_ORDER)


def counts(size: np.ndarray, align: np.ndarray, order: np.ndarray, arm64: np.ndarray,
           first_cont: np.ndarray, young_fraction: np.ndarray) -> dict[str, np.ndarray]:
    """Closed-form counts of one folio_referenced_one() pass, per point, for both batchings.

    Keys ending in _pp are the per-PTE path, _b the batched one; arrays are int64.
    Inputs must already be feasible-looking (no negative sizes, order 0..18).
    """
    n = np.left_shift(1, order).astype(np.int64)  # PTEs per folio
    folios = size // (n * PAGE)
    pages = folios * n
    off = (align % PMD_SIZE) // PAGE  # first PTE's index in its page table
    cont_ok = arm64 & (order >= 4) & (off % CONT_PTES == 0)
    blocks_per_folio = np.where(cont_ok, n // CONT_PTES, 0)
    cont_per_folio = blocks_per_folio - (cont_ok & ~first_cont)
    cont_blocks = folios * cont_per_folio
    cont_ptes = cont_blocks * CONT_PTES
    split = (off % n) != 0  # PMD boundaries fall inside folios
    splits = np.where(split, (off + pages - 1) // PTRS_PER_PTE, 0)
    young_folios = np.floor(young_fraction * folios).astype(np.int64)
    young_splits = np.where(split & (young_folios > 0), (off + young_folios * n - 1) // PTRS_PER_PTE, 0)
    visits_pp = pages - cont_ptes + cont_ptes * CONT_PTES  # a cont PTE walks its whole block
    young_ptes = young_folios * n
    return {
        "folios": folios, "pages": pages, "cont_blocks": cont_blocks, "young_folios": young_folios,
        "calls_pp": pages, "calls_b": folios + splits,
        "visits_pp": visits_pp, "visits_b": pages,
        "blocks_pp": cont_ptes, "blocks_b": cont_blocks,
        # arm64 CASes every PTE it visits; x86 only the young ones, once each
        "atomics_pp": np.where(arm64, visits_pp, young_ptes), "atomics_b": np.where(arm64, pages, young_ptes),
        # clear_flush variants on arm64: one flush per call that finds young
        "flushes_pp": np.where(arm64, young_folios * (cont_per_folio + n - cont_per_folio * CONT_PTES), 0),
        "flushes_b": np.where(arm64, young_folios + young_splits, 0),
    }


# The report's figure of this model (drawn by analysis/figures/declared.py).
PLOTS = (
    Lines(id="young_scan", title="young: reclaim scan time vs folio order, per-PTE vs batched",
          x=X("param_compound_order", "order", "folio order (log2 pages) and folio size"),
          y=Y("metric_scan_ms", label="modeled reclaim scan time (ms)"),
          hue=Series("param_batching", order=("per_pte", "batched")),
          panels=Panels("param_arch", title="arch: {value}"),
          # x86_64 has no cont bit (its first PTE is never cont): compare arm64 with cont heads to x86_64
          where=(Cond("param_compound_order", "not null"),
                 Either(groups=((Cond("param_arch", "==", "arm64"), Cond("param_first_pte_cont", "==", True)),
                                (Cond("param_arch", "!=", "arm64"), Cond("param_first_pte_cont", "==", False))),
                        when_varying="param_first_pte_cont")),
          caption="Modeled sys time of scanning and reclaiming the folios: per_pte calls the per-PTE helper for "
                  "every PTE (a cont PTE walks its whole 16-PTE block); batched calls test_and_clear_young_ptes() "
                  "once per folio run. Order 'auto' rows are left out; where first_pte_cont varies it is true on "
                  "arm64, false on x86_64."),
)

# The report's key finding about batched young-bit clearing (workers.findings).
FINDINGS = (
    Medians(id="young_batching", figure="young_scan", metric="metric_speedup_vs_per_pte",
            where=(Cond("param_batching", "==", "batched"), Cond("param_arch", "==", "arm64")),
            by="param_compound_order", quote=(("best", MAX), ("worst", MIN)),
            text="Batched young-bit clearing speeds an arm64 reclaim scan up by a median {best}x at folio order "
                 "{best_at}, and {worst}x at order {worst_at}{more}.",
            more=(Clause(by="param_young_fraction", quote=(("yf_low", FIRST), ("yf_high", LAST)),
                         text="; from {yf_low}x with {yf_low_at:g} of the folios young to {yf_high}x with "
                              "{yf_high_at:g}"),)),
)


def published_figures(model: str) -> tuple[Figure, ...]:
    """The seed mail's three figures of `model` (this model's name)."""
    # 8 GiB reclaimed of 10 GiB of clean file folios; order 4 (64 KiB) assumed (not stated);
    # young_fraction 0: folios that reclaim frees were found old.
    base = {"namespace_size": "8GiB", "align": "2MiB", "compound_order": 4, "young_fraction": 0.0,
            "lru": "mglru"}
    arm = {**base, "arch": "arm64", "first_pte_cont": True}
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
    )


class YoungModel(Model):
    name = "young"
    version = "1"
    description = ("arm64 contpte test_and_clear_young_ptes() batching vs the per-PTE helper, "
                   "priced as the sys time of reclaiming large file folios")
    axes = (NAMESPACE_SIZE, ALIGN, COMPOUND_ORDER, BATCHING, ARCH, YOUNG_FRACTION, FIRST_PTE_CONT, LRU)
    metrics = (
        Metric(column="metric_folios", dtype=INT, doc="folios scanned (namespace_size / folio size)"),
        Metric(column="metric_ptes", dtype=INT, doc="PTEs mapping them"),
        Metric(column="metric_cont_blocks", dtype=INT, doc="arm64 contpte blocks among them"),
        Metric(column="metric_calls", dtype=INT, doc="young-helper calls (per PTE, or one per folio run when batched)"),
        Metric(column="metric_ptes_visited", dtype=INT,
               doc="PTEs read by the helpers (a per-PTE call on a cont PTE walks its 16)"),
        Metric(column="metric_blocks_touched", dtype=INT, doc="contpte blocks walked by the helpers"),
        Metric(column="metric_tlb_flushes", dtype=INT,
               doc="TLB flushes (lru = classic on arm64 only; MGLRU clears without flushing)"),
        Metric(column="metric_pte_atomics", dtype=INT,
               doc="atomic PTE updates (arm64: every visited PTE; x86: young ones)"),
        Metric(column="metric_young_folios", dtype=INT, doc="folios found young"),
        Metric(column="metric_young_clear_ms", dtype=FLOAT, better="lower", doc="time in the young-bit helpers"),
        Metric(column="metric_reclaim_rest_ms", dtype=FLOAT, better="lower",
               doc="time of the rest of reclaim for these folios (per folio and per PTE)"),
        Metric(column="metric_scan_ms", dtype=FLOAT, better="lower",
               doc="modeled sys time of the reclaim: young_clear_ms + reclaim_rest_ms"),
        Metric(column="metric_speedup_vs_per_pte", dtype=FLOAT, better="higher",
               doc="per_pte scan time of the same configuration over this one"),
        Metric(column="metric_time_reduction_vs_per_pte", dtype=FLOAT, better="higher",
               doc="1 - this scan time / the per_pte one (the mail's 'improvement')"),
    )
    headline = "metric_scan_ms"
    points_per_second = 2e6
    report = Report(
        comparison=Comparison(axis="batching", baseline="per_pte", metric="metric_scan_ms", label="batching"),
        best_keys=("compound_order", "arch"), plots=PLOTS, findings=FINDINGS)
    calibration = Calibration(figures=published_figures(name), free_params=(
        FreeParam(section="young", key="folio_ns", lower=50.0, upper=50_000.0),
        FreeParam(section="young", key="pte_atomic_ns", lower=0.2, upper=200.0),
    ))
    measurement = Measurement(
        reason="young has no user-space analog: test_and_clear_young_ptes() clears access bits in the kernel's "
               "arm64 page tables during reclaim, which no user process can run")

    def evaluate(self, points: pl.DataFrame, profile: Profile) -> pl.DataFrame:
        """Counts and modeled times for every point (see the module doc for the cost formula)."""
        status = points.select(*status_columns(self._reasons()))
        arr = points.select(
            pl.col("param_namespace_size").clip(0, None).alias("size"),
            pl.col("param_align").clip(PAGE, None).alias("align"),
            order_expr().clip(0, 18).alias("order"),
            (pl.col("param_arch") == "arm64").alias("arm64"),
            (pl.col("param_batching") == "batched").alias("batched"),
            (pl.col("param_lru") == "classic").alias("classic"),
            pl.col("param_first_pte_cont").fill_null(True).alias("first_cont"),
            pl.col("param_young_fraction").fill_nan(0.0).fill_null(0.0).clip(0.0, 1.0).alias("yf"),
        )
        a = {c: arr[c].to_numpy() for c in arr.columns}
        c = counts(a["size"], a["align"], a["order"], a["arm64"], a["first_cont"], a["yf"])
        cost = {k: float(profile.value("young", k))
                for k in ("folio_ns", "pte_atomic_ns", "call_ns", "pte_read_ns", "tlb_flush_ns")}
        rest_ns = c["folios"] * cost["folio_ns"] + c["pages"] * cost["pte_atomic_ns"]
        young_pp = self._young_ns(c, "pp", a["arm64"], a["classic"], cost)
        young_b = self._young_ns(c, "b", a["arm64"], a["classic"], cost)
        b = a["batched"]
        pick = {k: np.where(b, c[f"{k}_b"], c[f"{k}_pp"]) for k in ("calls", "visits", "blocks", "atomics", "flushes")}
        flushes = np.where(a["classic"], pick["flushes"], 0)
        total_pp = rest_ns + young_pp
        total = rest_ns + np.where(b, young_b, young_pp)
        with np.errstate(divide="ignore", invalid="ignore"):  # infeasible rows (nulled below) may be 0/0
            speedup = total_pp / total
            reduction = 1.0 - total / total_pp
        metrics = pl.DataFrame({
            "metric_folios": c["folios"], "metric_ptes": c["pages"], "metric_cont_blocks": c["cont_blocks"],
            "metric_calls": pick["calls"], "metric_ptes_visited": pick["visits"],
            "metric_blocks_touched": pick["blocks"], "metric_tlb_flushes": flushes,
            "metric_pte_atomics": pick["atomics"], "metric_young_folios": c["young_folios"],
            "metric_young_clear_ms": np.where(b, young_b, young_pp) / 1e6,
            "metric_reclaim_rest_ms": rest_ns / 1e6, "metric_scan_ms": total / 1e6,
            "metric_speedup_vs_per_pte": speedup, "metric_time_reduction_vs_per_pte": reduction,
        }, schema=self.metric_dtypes)
        return pl.concat([status, metrics], how="horizontal")  # evaluate() nulls the metrics of rows not ok

    @staticmethod
    def _young_ns(c: dict, path: str, arm64: np.ndarray, classic: np.ndarray, cost: dict) -> np.ndarray:
        """Young-bit clearing time (ns) of one batching: calls, block gathers, atomics, reads, flushes."""
        reads = np.where(arm64, 0, c[f"visits_{path}"])  # arm64's READ_ONCE is part of its CAS loop
        return (c[f"calls_{path}"] * cost["call_ns"]
                + c[f"blocks_{path}"] * CONT_PTES * cost["pte_read_ns"]
                + c[f"atomics_{path}"] * cost["pte_atomic_ns"]
                + reads * cost["pte_read_ns"]
                + np.where(classic, c[f"flushes_{path}"], 0) * cost["tlb_flush_ns"])

    @staticmethod
    def _reasons() -> pl.Expr:
        """Why a point cannot exist (first rule that matches), or null."""
        size, align, yf = pl.col("param_namespace_size"), pl.col("param_align"), pl.col("param_young_fraction")
        order = order_expr()
        folio = (pl.lit(2, dtype=pl.Int64).pow(order.clip(0, 18)).cast(pl.Int64) * PAGE)
        arch, first = pl.col("param_arch"), pl.col("param_first_pte_cont")
        return (Reasons()
                .add(yf.is_null() | yf.is_nan() | (yf < 0) | (yf > 1),
                     "young_fraction must be from 0 to 1 (a fraction of the folios)")
                .add(size <= 0, "namespace_size must be a positive number of bytes")
                .add((align < PAGE) | ((align & (align - 1)) != 0), "align must be a power of two of at least 4KiB")
                .add(order > MAX_PAGECACHE_ORDER,
                     "page-cache folios are at most order 9 (MAX_PAGECACHE_ORDER = HPAGE_PMD_ORDER, 4 KiB pages)")
                .add((order == HPAGE_PMD_ORDER) & (align >= PMD_SIZE),
                     "a 2 MiB folio at 2 MiB alignment is PMD-mapped (do_set_pmd): its young bit is one PMD "
                     "entry, not PTEs; use align below 2MiB or a smaller order")
                .add(size % folio != 0, "namespace_size must be a whole number of folios of this order")
                .add(first & (arch == "x86_64"),
                     "x86_64 has no cont bit, so the first PTE cannot be cont: set first_pte_cont = false")
                .add(first & (order < 4),
                     "folios below order 4 are smaller than a 64 KiB contpte block, so no PTE is cont: "
                     "set first_pte_cont = false")
                .add(first & (align < 64 * KiB),
                     "align below 64KiB: VA and PA differ modulo 64 KiB, so contpte_set_ptes() sets no cont "
                     "bit: set first_pte_cont = false")
                .expr())


MODEL = YoungModel()
