"""Closed-form counts of one reclaim run of the young model: the reference walks and the unmaps.

A reclaim of R folios out of M mapped ones (shrink_folio_list(), mm/vmscan.c) walks each folio it
takes off the LRU with folio_referenced() (the young helpers, mm/rmap.c folio_referenced_one()) and
unmaps the ones it frees with try_to_unmap() (mm/rmap.c try_to_unmap_one()). These functions count
both, per point, for both batchings of the young helpers (keys ending in _pp and _b); the executable
reference (reference.py) simulates the same on a page-table array and the tests compare the two.

Which folios are walked, and how often (folio_check_references(), mm/vmscan.c, v6.12 and v7.3): the
list is scanned in mapping order. A folio found young with PG_referenced clear (all of them at the
start: the folios were mapped and touched, not read through a file descriptor) gets PG_referenced set
and FOLIOREF_KEEP: its young bits now clear, it comes round again. Under the classic LRU it goes back
on the inactive list; under MGLRU lru_gen_set_refs() sets the reference and keeps it the same way
(only a second young walk would activate it). A folio found old is reclaimed (FOLIOREF_RECLAIM, or
FOLIOREF_RECLAIM_CLEAN when PG_referenced was set by its first trip). The first
floor(young_fraction * M) folios are young, so all Y of them are walked once before any is reclaimed,
then R old walks reclaim the R folios that follow: the old ones first, then the young ones on their
second trip. Walks: Y + R, under either LRU. Debian's arm64 7.3 walks exactly so under both LRUs
(benchmarks/RESULTS.md, kernel-young). 6.12's MGLRU does not: its per-PTE lru_gen_look_around() clears
the young neighbours of a young PTE and promotes their folios, and its aging clears the rest; with the
per-PTE helper under MGLRU the walks and helper counts (keys ending in _pp) are lookaround.py's.
"""

from __future__ import annotations

import numpy as np

from workers.units import MiB

from . import lookaround

CONT_PTES = 16  # arch/arm64/include/asm/pgtable-hwdef.h: 1 << (CONT_PTE_SHIFT - PAGE_SHIFT), 4 KiB granule
PTRS_PER_PTE = 512  # PTEs per page table; pmd_addr_end() bounds a folio_pte_batch() run
PAGE = 4096
PMD_SIZE = 2 * MiB
# try_to_unmap_one() (mm/rmap.c), per loop iteration whatever its nr_pages: folio_remove_rmap_ptes()
# -> __folio_remove_rmap() updates the large mapcount once (folio_sub_large_mapcount(): an atomic_sub(),
# or with CONFIG_MM_ID a bit_spin_lock() around plain updates, released by a plain store) and, with
# CONFIG_PAGE_MAPCOUNT (assumed here and below), does atomic_sub_return_relaxed() on _nr_pages_mapped;
# folio_put_refs() drops the references: three atomic read-modify-writes (v6.19 and v7.0 code).
STEP_ATOMICS = 3
# ... and per PTE it unmaps, in both unmaps: the get-and-clear (xchg on arm64 and x86) and
# atomic_add_negative() on the page's _mapcount (CONFIG_PAGE_MAPCOUNT).
PTE_ATOMICS = 2


def splits_in(lo: np.ndarray, hi: np.ndarray, off: np.ndarray, n: np.ndarray, split: np.ndarray) -> np.ndarray:
    """PMD boundaries inside the folios [lo, hi): each one splits a folio run in two (folio_pte_batch()
    stops at pmd_addr_end()). With split (the range starts off the folio size) no boundary falls on a
    folio start, and a folio of at most 512 PTEs holds at most one."""
    inside = (off + hi * n - 1) // PTRS_PER_PTE - (off + lo * n) // PTRS_PER_PTE
    return np.where(split & (hi > lo), inside, 0)


def walk(folios: np.ndarray, splits: np.ndarray, young: np.ndarray, flush: np.ndarray, n: np.ndarray,
         cont_per_folio: np.ndarray, arm64: np.ndarray) -> dict[str, np.ndarray]:
    """One folio_referenced() walk of `folios` folios holding `splits` PMD boundaries, all young or all
    old, with the clear_flush helpers when `flush` (lru = classic): the helper counts of both batchings.

    per_pte calls the per-PTE helper for each PTE, and on a cont PTE it walks the whole block
    (contpte_ptep_clear_flush_young()); batched calls it once per folio run. arm64 CASes every PTE it
    visits, x86 only the young ones. A call finds young once per young folio run when batched; per PTE,
    once per young PTE outside cont blocks and once per cont block (its first PTE clears the block, so
    its 15 others find old). On arm64 a flush helper flushes once per call that finds young. The calls
    name one PTE each per PTE, a run's PTEs when batched: every PTE of the walked folios either way.
    """
    pages = folios * n
    cont_ptes = folios * cont_per_folio * CONT_PTES
    visits_pp = pages - cont_ptes + cont_ptes * CONT_PTES
    young_pages = np.where(young, pages, 0)
    found_pp = np.where(young, folios * (cont_per_folio + n - cont_per_folio * CONT_PTES), 0)
    found_b = np.where(young, folios + splits, 0)
    flushing = flush & arm64
    return {
        "calls_pp": pages, "calls_b": folios + splits,
        "visits_pp": visits_pp, "visits_b": pages,
        "blocks_pp": cont_ptes, "blocks_b": folios * cont_per_folio,
        "atomics_pp": np.where(arm64, visits_pp, young_pages), "atomics_b": np.where(arm64, pages, young_pages),
        "flushes_pp": np.where(flushing, found_pp, 0), "flushes_b": np.where(flushing, found_b, 0),
        "found_pp": found_pp, "found_b": found_b, "asked_pp": pages, "asked_b": pages,
    }


def unmap(folios: np.ndarray, splits: np.ndarray, n: np.ndarray, cont_per_folio: np.ndarray,
          arm64: np.ndarray) -> dict[str, np.ndarray]:
    """try_to_unmap_one() over `folios` clean file folios holding `splits` PMD boundaries, for both
    unmaps (keys ending in _pp: per PTE, _b: batched).

    per_pte (kernels before v7.0): folio_unmap_pte_batch() returns 1 for a file folio, so each PTE is
    one loop iteration, and on arm64 the first PTE cleared in a cont block unfolds it
    (get_and_clear_full_ptes(nr = 1) -> contpte_try_unfold() -> contpte_convert(): 16 get-and-clears,
    one __flush_tlb_range() unless the CPU has BBML2_NOABORT, 16 plain PTE writes). batched (v7.0,
    "mm: rmap: support batched unmapping for file large folios"): one iteration per folio run; a run
    starts and ends on block boundaries, so contpte_try_unfold_partial() unfolds nothing. Each
    iteration defers its TLB flush (set_tlb_ubc_flush_pending()): arm64 issues one TLBI there
    (__flush_tlb_range_nosync(); a run's range is one range TLBI, FEAT_TLBIRANGE assumed), x86 bumps
    the mm's tlb_gen (an atomic) and flushes once per batch later.
    """
    pages = folios * n
    unfolds = np.where(arm64, folios * cont_per_folio, 0)
    out = {}
    for path, steps, unf in (("pp", pages, unfolds), ("b", folios + splits, np.zeros_like(unfolds))):
        out[f"steps_{path}"] = steps
        out[f"unfolds_{path}"] = unf
        out[f"flushes_{path}"] = np.where(arm64, steps, 0) + unf
        out[f"atomics_{path}"] = (PTE_ATOMICS * pages + STEP_ATOMICS * steps + np.where(arm64, 0, steps)
                                  + CONT_PTES * unf)
        out[f"writes_{path}"] = CONT_PTES * unf
    return out


def _add(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: a[k] + b[k] for k in a}


def counts(size: np.ndarray, mapped: np.ndarray, align: np.ndarray, order: np.ndarray, arm64: np.ndarray,
           first_cont: np.ndarray, young_fraction: np.ndarray, classic: np.ndarray) -> dict[str, np.ndarray]:
    """Every count of one reclaim of `size` bytes out of `mapped` bytes of folios, per point (int64 arrays).

    Keys: folios (reclaimed), mapped_folios, pages, cont_blocks; walks, kept, young_folios (each _pp and _b:
    MGLRU's per-PTE look-around walks fewer folios); the helper
    counts over all walks (calls, visits, blocks, atomics, flushes, each _pp and _b); the unmap counts
    of the reclaimed folios (steps, unfolds, flushes, atomics, writes, each prefixed unmap_, _pp and _b).
    Inputs must already be feasible-looking (no negative sizes, order 0..18, mapped >= size).
    """
    n = np.left_shift(1, order).astype(np.int64)  # PTEs per folio
    reclaimed = size // (n * PAGE)
    folios = mapped // (n * PAGE)
    off = (align % PMD_SIZE) // PAGE  # first PTE's index in its page table
    cont_ok = arm64 & (order >= 4) & (off % CONT_PTES == 0)
    cont_per_folio = np.where(cont_ok, n // CONT_PTES, 0) - (cont_ok & ~first_cont)
    split = (off % n) != 0  # PMD boundaries fall inside folios
    young = np.floor(young_fraction * folios).astype(np.int64)
    zero = np.zeros_like(folios)
    # Y young first trips [0, Y), then R old walks over [Y, Y + r1) and (second trips) [0, r2)
    r1 = np.minimum(reclaimed, folios - young)
    r2 = reclaimed - r1
    segs = ((zero, young, True), (young, young + r1, False), (zero, r2, False))

    def args(lo, hi):
        return hi - lo, splits_in(lo, hi, off, n, split)

    helpers = None
    for lo, hi, is_young in segs:
        w = walk(*args(lo, hi), np.full(folios.shape, is_young), classic, n, cont_per_folio, arm64)
        helpers = w if helpers is None else _add(helpers, w)
    # the reclaimed folios: [Y, Y + r1) and [0, r2)
    c1_f, c1_s = args(young, young + r1)
    c2_f, c2_s = args(zero, r2)
    gone = unmap(c1_f + c2_f, c1_s + c2_s, n, cont_per_folio, arm64)
    trips = {f"{k}_{p}": v for k, v in (("walks", young + reclaimed), ("kept", young), ("young_folios", young))
             for p in ("pp", "b")}
    # MGLRU with the per-PTE helper is v6.12's eviction: its look-around and aging (lookaround.py)
    mglru = np.flatnonzero(~classic)
    if mglru.size:
        la = lookaround.counts(order[mglru], align[mglru], arm64[mglru], first_cont[mglru], folios[mglru],
                               young[mglru], reclaimed[mglru], cont_per_folio[mglru])
        for k, v in la.items():
            target = trips if f"{k}_pp" in trips else helpers
            target[f"{k}_pp"] = target[f"{k}_pp"].copy()
            target[f"{k}_pp"][mglru] = v
    return {
        "folios": reclaimed, "mapped_folios": folios, "pages": reclaimed * n,
        "cont_blocks": reclaimed * cont_per_folio, **trips,
        **helpers, **{f"unmap_{k}": v for k, v in gone.items()},
    }
