"""Executable reference of arm64 young-bit clearing over a simulated page table.

The table is two numpy bool arrays indexed by PTE: `young` (the access flag,
PTE_AF) and `cont` (PTE_CONT). Index 0 is a PMD boundary, so every aligned run
of CONT_PTES entries is one contpte block. Each helper mutates `young` in place,
as the kernel does, and returns the young result with exact counts of what it
did. Python loops are allowed here and only here: the cost model
(workers/models/young/__init__.py) must agree with these counts in closed form.

Kernel sources read: torvalds/linux (arch/arm64/mm/contpte.c at 35e02583, which
predates the series: the per-PTE helpers), the series "arm64: mm: implement the
architecture-specific test_and_clear_young_ptes()" (linux-mm, March 2026) and
its follow-ups on the list, and a downstream tree carrying the merged series
(contpte_align_addr_ptep() and the batched helpers):
- arch/arm64/include/asm/pgtable-hwdef.h: CONT_PTES = 1 << (CONT_PTE_SHIFT -
  PAGE_SHIFT) = 16 with a 4 KiB granule (64 KiB blocks).
- arch/arm64/include/asm/pgtable.h: test_and_clear_young_ptes() takes the
  single-PTE fast path only for `nr == 1 && !pte_cont(ptep)`, otherwise calls
  contpte_test_and_clear_young_ptes(); ptep_test_and_clear_young() is
  test_and_clear_young_ptes(vma, addr, ptep, 1); __ptep_test_and_clear_young()
  is READ_ONCE + a cmpxchg_relaxed() loop, done whether or not AF is set.
- arch/arm64/mm/contpte.c: contpte_align_addr_ptep() widens the end up to the
  block boundary if pte_cont(ptep[nr - 1]) and the start down if pte_cont(ptep[0]);
  contpte_test_and_clear_young_ptes() then clears every PTE of [start, end);
  contpte_clear_flush_young_ptes() issues one __flush_tlb_range() over the
  widened range when the result is young. The pre-series per-PTE helpers
  contpte_ptep_test_and_clear_young() / contpte_ptep_clear_flush_young() walk
  all CONT_PTES entries of the block of the one PTE asked about.
- arch/x86/mm/pgtable.c: ptep_test_and_clear_young() does test_and_clear_bit()
  only when pte_young(); ptep_clear_flush_young() never flushes ("clearing the
  accessed bit without a TLB flush doesn't cause data corruption").
- include/linux/pgtable.h: the generic test_and_clear_young_ptes() /
  clear_flush_young_ptes() (x86) call the per-PTE helper nr times.
- mm/rmap.c folio_referenced_one(): for a large folio, nr = folio_pte_batch()
  up to pmd_addr_end(); under MGLRU lru_gen_look_around(&pvmw, nr) ->
  test_and_clear_young_ptes_notify() (no flush), otherwise
  clear_flush_young_ptes_notify(). Before the series the loop called the
  per-PTE helper once per PTE. pra->referenced counts VMAs, not PTEs: one
  young mapping gives folio_check_references() referenced_ptes = 1.
- mm/vmscan.c folio_check_references() (classic LRU): a folio found young has
  PG_referenced set and is kept for another trip round the inactive list
  (FOLIOREF_KEEP), or activated if PG_referenced was already set; a folio
  found old is reclaimed (FOLIOREF_RECLAIM_CLEAN if PG_referenced was set).
  shrink_folio_list() then calls try_to_unmap() on the folios it reclaims.
- mm/rmap.c try_to_unmap_one() and folio_unmap_pte_batch(): before v7.0 a file
  folio is unmapped one PTE per loop iteration; from v7.0 ("mm: rmap: support
  batched unmapping for file large folios") one iteration per run up to
  pmd_addr_end(). arch/arm64/include/asm/pgtable.h get_and_clear_full_ptes():
  nr == 1 calls contpte_try_unfold() (arch/arm64/mm/contpte.c contpte_convert():
  16 get-and-clears, a TLB flush, 16 writes), a larger nr
  contpte_try_unfold_partial() on partly covered end blocks only. Each
  iteration defers its flush with set_tlb_ubc_flush_pending(): arm64
  arch_tlbbatch_add_pending() issues __flush_tlb_range_nosync() (one TLBI),
  x86 bumps the mm's tlb_gen (an atomic).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

CONT_PTES = 16  # arch/arm64/include/asm/pgtable-hwdef.h, 4 KiB granule
PTRS_PER_PTE = 512  # PTEs per page table: a batch never crosses pmd_addr_end()
MAX_PAGECACHE_ORDER = 9  # include/linux/pagemap.h: min(MAX_XAS_ORDER, HPAGE_PMD_ORDER) with THP, 4 KiB pages
ARCHES = ("arm64", "x86_64")
STEP_ATOMICS = 3  # try_to_unmap_one() per iteration: large mapcount, _nr_pages_mapped, refcount
PTE_ATOMICS = 2  # ... and per PTE: the get-and-clear and the page's _mapcount


@dataclass(frozen=True, kw_only=True, slots=True)
class Counts:
    """What one or more helper calls did: calls, PTEs visited, cont blocks walked, flushes, atomics; the calls
    that returned young and the PTEs the calls named (one a per-PTE call, nr a batched one)."""

    calls: int = 0
    ptes_visited: int = 0
    blocks_touched: int = 0  # per call: cont blocks with at least one PTE visited
    tlb_flushes: int = 0
    atomics: int = 0  # atomic read-modify-writes of a PTE (arm64: every visit; x86: young ones)
    young_calls: int = 0
    ptes_asked: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            calls=self.calls + other.calls,
            ptes_visited=self.ptes_visited + other.ptes_visited,
            blocks_touched=self.blocks_touched + other.blocks_touched,
            tlb_flushes=self.tlb_flushes + other.tlb_flushes,
            atomics=self.atomics + other.atomics,
            young_calls=self.young_calls + other.young_calls,
            ptes_asked=self.ptes_asked + other.ptes_asked,
        )


def check_table(young: np.ndarray, cont: np.ndarray, arch: str = "arm64") -> None:
    """ValueError unless the arrays form a valid table: cont all-or-nothing per aligned block."""
    if arch not in ARCHES:
        raise ValueError(f"'arch' must be one of {ARCHES} (got {arch!r}).")
    if young.dtype != bool or cont.dtype != bool or young.shape != cont.shape or young.ndim != 1:
        raise ValueError("'young' and 'cont' must be 1-D bool arrays of the same length.")
    if arch == "x86_64" and cont.any():
        raise ValueError("'cont' must be all false on x86_64, which has no cont bit.")
    if cont.size % CONT_PTES:
        raise ValueError(f"the table length must be a multiple of {CONT_PTES} (got {cont.size}).")
    blocks = cont.reshape(-1, CONT_PTES)
    if (blocks.any(axis=1) != blocks.all(axis=1)).any():
        raise ValueError("'cont' must be all-or-nothing in each aligned block of 16 PTEs.")


def _check_range(cont: np.ndarray, i: int, nr: int) -> None:
    if nr < 1 or i < 0 or i + nr > cont.size:
        raise ValueError(f"the range [i, i + nr) must be non-empty and inside the table (got i={i}, nr={nr}).")


def _block(i: int) -> range:
    start = i - i % CONT_PTES
    return range(start, start + CONT_PTES)


def _visit(young: np.ndarray, idx: range, arch: str) -> tuple[bool, int]:
    """__ptep_test_and_clear_young() over idx: (any young, atomics done)."""
    was = young[idx.start:idx.stop].copy()
    young[idx.start:idx.stop] = False
    atomics = len(idx) if arch == "arm64" else int(was.sum())  # x86 skips the RMW when old
    return bool(was.any()), atomics


def _cont_blocks(cont: np.ndarray, idx: range) -> int:
    """Cont blocks with at least one PTE in idx."""
    first, last = idx.start // CONT_PTES, (idx.stop - 1) // CONT_PTES
    return int(cont[first * CONT_PTES:(last + 1) * CONT_PTES:CONT_PTES].sum())


def ptep_test_and_clear_young(young: np.ndarray, cont: np.ndarray, i: int,
                              arch: str = "arm64") -> tuple[bool, Counts]:
    """The per-PTE helper the series replaces: a cont PTE walks its whole block (contpte_ptep_test_and_clear_young)."""
    _check_range(cont, i, 1)
    idx = _block(i) if cont[i] else range(i, i + 1)
    result, atomics = _visit(young, idx, arch)
    return result, Counts(calls=1, ptes_visited=len(idx), blocks_touched=int(cont[i]), atomics=atomics,
                          young_calls=int(result), ptes_asked=1)


def ptep_clear_flush_young(young: np.ndarray, cont: np.ndarray, i: int,
                           arch: str = "arm64") -> tuple[bool, Counts]:
    """Per-PTE flush variant: arm64 flushes the PTE (or its block) when young; x86 never flushes."""
    result, c = ptep_test_and_clear_young(young, cont, i, arch)
    flushes = int(result and arch == "arm64")  # __flush_tlb_page_nosync / one block range
    return result, Counts(calls=1, ptes_visited=c.ptes_visited, blocks_touched=c.blocks_touched,
                          tlb_flushes=flushes, atomics=c.atomics, young_calls=c.young_calls, ptes_asked=c.ptes_asked)


def widened_range(cont: np.ndarray, i: int, nr: int) -> range:
    """contpte_align_addr_ptep(): the end up to its block end if the last PTE is cont, the start down if the first is."""
    _check_range(cont, i, nr)
    start, end = i, i + nr
    if cont[end - 1]:
        end = -(-end // CONT_PTES) * CONT_PTES  # ALIGN(end, CONT_PTE_SIZE)
    if cont[start]:
        start -= start % CONT_PTES  # ALIGN_DOWN(start, CONT_PTE_SIZE)
    return range(start, end)


def test_and_clear_young_ptes(young: np.ndarray, cont: np.ndarray, i: int, nr: int,
                              arch: str = "arm64") -> tuple[bool, Counts]:
    """The batched helper: one call clears nr PTEs (widened to whole blocks at cont ends on arm64)."""
    _check_range(cont, i, nr)
    if arch == "x86_64":  # generic loop over ptep_test_and_clear_young(), inside one call
        result, atomics = _visit(young, range(i, i + nr), arch)
        return result, Counts(calls=1, ptes_visited=nr, atomics=atomics, young_calls=int(result), ptes_asked=nr)
    if nr == 1 and not cont[i]:  # the likely() fast path: __ptep_test_and_clear_young()
        idx = range(i, i + 1)
    else:
        idx = widened_range(cont, i, nr)
    result, atomics = _visit(young, idx, arch)
    return result, Counts(calls=1, ptes_visited=len(idx), blocks_touched=_cont_blocks(cont, idx), atomics=atomics,
                          young_calls=int(result), ptes_asked=nr)


def clear_flush_young_ptes(young: np.ndarray, cont: np.ndarray, i: int, nr: int,
                           arch: str = "arm64") -> tuple[bool, Counts]:
    """Batched flush variant: on arm64 one TLB flush over the widened range when young; none on x86."""
    result, c = test_and_clear_young_ptes(young, cont, i, nr, arch)
    flushes = int(result and arch == "arm64")
    return result, Counts(calls=1, ptes_visited=c.ptes_visited, blocks_touched=c.blocks_touched,
                          tlb_flushes=flushes, atomics=c.atomics, young_calls=c.young_calls, ptes_asked=c.ptes_asked)


def per_pte_range(young: np.ndarray, cont: np.ndarray, i: int, nr: int, arch: str = "arm64",
                  flush: bool = False) -> tuple[bool, Counts]:
    """The pre-series loop over a range: the per-PTE helper called once for each of nr PTEs."""
    _check_range(cont, i, nr)
    helper = ptep_clear_flush_young if flush else ptep_test_and_clear_young
    result, total = False, Counts()
    for j in range(i, i + nr):
        r, c = helper(young, cont, j, arch)
        result, total = result or r, total + c
    return result, total


@dataclass(frozen=True, kw_only=True, slots=True)
class Table:
    """A simulated page table holding `folios` mapped folios of 2**order PTEs from index `offset`, of which
    reclaim is to free `reclaim`."""

    young: np.ndarray
    cont: np.ndarray
    offset: int
    folios: int
    order: int
    reclaim: int


def build_table(*, namespace_size: int, align: int, order: int, arch: str = "arm64",
                first_pte_cont: bool = True, young_fraction: float = 0.0, mapped_size: int | None = None) -> Table:
    """The page table the model assumes for a configuration (see the young package doc, "Layout").

    `mapped_size` bytes of folios are mapped (default `namespace_size`), `namespace_size` of them are to be
    reclaimed. The range starts `align` bytes past a PMD boundary when align < 2 MiB (aligned to align
    and to no larger power of two), else on one; folios are naturally aligned physically. A block is
    cont iff contpte_set_ptes() would make it so: arm64, VA block aligned and wholly inside one folio
    at a 64 KiB-aligned physical offset (first_pte_cont=True: as contpte_set_ptes() leaves them, none
    where no block can be cont). first_pte_cont=False unfolds each folio's head block.
    The first floor(young_fraction * folios) mapped folios have every PTE young.
    """
    pages = 1 << order
    mapped = namespace_size if mapped_size is None else mapped_size
    if namespace_size % (pages * 4096) or mapped % (pages * 4096):
        raise ValueError("'namespace_size' and 'mapped_size' must each be a whole number of folios.")
    if mapped < namespace_size:
        raise ValueError("'mapped_size' must be at least 'namespace_size'.")
    folios = mapped // (pages * 4096)
    offset = (align % (2 << 20)) // 4096
    length = -(-(offset + folios * pages) // PTRS_PER_PTE) * PTRS_PER_PTE
    cont = np.zeros(length, dtype=bool)
    if arch == "arm64":
        for f in range(folios):
            start = offset + f * pages
            first = -(-start // CONT_PTES) * CONT_PTES
            for b in range(first, start + pages - CONT_PTES + 1, CONT_PTES):
                if (b - start) % CONT_PTES == 0:  # physical address 64 KiB aligned too
                    cont[b:b + CONT_PTES] = True
            if not first_pte_cont and cont[start]:
                cont[start:start + CONT_PTES] = False
    young = np.zeros(length, dtype=bool)
    hot = int(np.floor(young_fraction * folios))
    young[offset:offset + hot * pages] = True
    return Table(young=young, cont=cont, offset=offset, folios=folios, order=order,
                 reclaim=namespace_size // (pages * 4096))


def _runs(table: Table, f: int):
    """(start, nr) of folio f's runs: folio_pte_batch() stops at pmd_addr_end()."""
    pages = 1 << table.order
    start, end = table.offset + f * pages, table.offset + (f + 1) * pages
    while start < end:
        nr = min(end, (start // PTRS_PER_PTE + 1) * PTRS_PER_PTE) - start
        yield start, nr
        start += nr


def walk_folio(table: Table, f: int, *, batching: str, arch: str = "arm64", flush: bool = False) -> tuple[bool, Counts]:
    """folio_referenced_one() over folio f: (referenced, counts). Mutates table.young."""
    batched = clear_flush_young_ptes if flush else test_and_clear_young_ptes
    referenced, total = False, Counts()
    for start, nr in _runs(table, f):
        if batching == "batched":
            r, c = batched(table.young, table.cont, start, nr, arch)
        else:
            r, c = per_pte_range(table.young, table.cont, start, nr, arch, flush)
        referenced, total = referenced or r, total + c
    return referenced, total


def scan(table: Table, *, batching: str, arch: str = "arm64", flush: bool = False) -> tuple[int, Counts]:
    """folio_referenced_one() over every folio of the table: (young folios, total counts).

    batched: one helper call per run of the folio inside one page table
    (folio_pte_batch() stops at pmd_addr_end()); per_pte: one per-PTE call per PTE.
    Mutates table.young.
    """
    check_table(table.young, table.cont, arch)
    total, young_folios = Counts(), 0
    for f in range(table.folios):
        referenced, c = walk_folio(table, f, batching=batching, arch=arch, flush=flush)
        young_folios, total = young_folios + referenced, total + c
    return young_folios, total


@dataclass(frozen=True, kw_only=True, slots=True)
class Unmap:
    """What try_to_unmap_one() did: loop iterations, contpte blocks unfolded, TLB flushes (deferred TLBIs
    and unfold flushes), atomic read-modify-writes, plain PTE writes."""

    steps: int = 0
    unfolds: int = 0
    tlb_flushes: int = 0
    atomics: int = 0
    writes: int = 0

    def __add__(self, other: Unmap) -> Unmap:
        return Unmap(steps=self.steps + other.steps, unfolds=self.unfolds + other.unfolds,
                     tlb_flushes=self.tlb_flushes + other.tlb_flushes, atomics=self.atomics + other.atomics,
                     writes=self.writes + other.writes)


def _unfold(cont: np.ndarray, i: int) -> Unmap:
    """contpte_try_unfold() at PTE i: contpte_convert() repaints a cont block as 16 plain PTEs."""
    if not cont[i]:
        return Unmap()
    block = _block(i)
    cont[block.start:block.stop] = False
    return Unmap(unfolds=1, tlb_flushes=1, atomics=CONT_PTES, writes=CONT_PTES)


def unmap_folio(table: Table, f: int, *, unmap: str, arch: str = "arm64") -> Unmap:
    """try_to_unmap_one() over folio f (mapped once, clean, file-backed). Clears its PTEs' young bits and
    unfolds cont blocks in table.cont the way the kernel would."""
    total = Unmap()
    for start, run in _runs(table, f):
        i, end = start, start + run
        while i < end:
            nr = end - i if unmap == "batched" else 1
            if arch == "arm64" and nr == 1:  # get_and_clear_full_ptes(): contpte_try_unfold()
                total += _unfold(table.cont, i)
            elif arch == "arm64":  # contpte_get_and_clear_full_ptes(): contpte_try_unfold_partial()
                if i % CONT_PTES or nr < CONT_PTES:
                    total += _unfold(table.cont, i)
                if (i + nr) % CONT_PTES:
                    total += _unfold(table.cont, i + nr - 1)
            table.young[i:i + nr] = False
            deferred = Unmap(tlb_flushes=1) if arch == "arm64" else Unmap(atomics=1)  # set_tlb_ubc_flush_pending()
            total += deferred + Unmap(steps=1, atomics=PTE_ATOMICS * nr + STEP_ATOMICS)
            i += nr
    return total


@dataclass(frozen=True, kw_only=True, slots=True)
class Reclaim:
    """A reclaim run: folio_referenced() walks, folios kept for a second trip, folios activated, folios
    found young by a walk, and the helper and unmap counts."""

    walks: int
    kept: int
    activated: int
    young_folios: int
    helpers: Counts
    unmap: Unmap
    freed: tuple[int, ...]  # the folios freed, in order
    look_around: LookAround | None = None  # v6.12 MGLRU's eviction, where it ran (reclaim_look_around())


KEEP, ACTIVATE, RECLAIM, RECLAIM_CLEAN = "keep", "activate", "reclaim", "reclaim_clean"


def check_references(referenced: bool, pg_referenced: bool) -> tuple[str, bool]:
    """folio_check_references() for a file folio mapped once, not VM_EXEC, not mlocked, under the classic LRU
    or MGLRU (lru_gen_set_refs(): the first young walk sets the reference and keeps, a second activates):
    (decision, PG_referenced afterwards). folio_test_clear_referenced() reads and clears the flag;
    a young folio gets it set again and is kept once, activated the second time."""
    if referenced:
        return (ACTIVATE if pg_referenced else KEEP), True
    return (RECLAIM_CLEAN if pg_referenced else RECLAIM), False


def reclaim(table: Table, *, lru: str, batching: str, unmap: str, arch: str = "arm64") -> Reclaim:
    """shrink_folio_list() until table.reclaim folios are freed, folio by folio in mapping order.

    check_references() with PG_referenced clear at the start, under either LRU (MGLRU's lru_gen_set_refs()
    keeps a folio found young for the first time as the classic LRU does); a kept folio goes to the back of
    the list, an activated one leaves it. Mutates the table. MGLRU with the per-PTE helper is v6.12's
    eviction instead, look-around and aging included (reclaim_look_around()).
    """
    check_table(table.young, table.cont, arch)
    if lru == "mglru" and batching == "per_pte":
        return reclaim_look_around(table, unmap=unmap, arch=arch)
    inactive, pg_referenced = deque(range(table.folios)), [False] * table.folios
    walks = kept = activated = young_folios = 0
    helpers, gone, freed = Counts(), Unmap(), []
    while len(freed) < table.reclaim:
        f = inactive.popleft()
        referenced, c = walk_folio(table, f, batching=batching, arch=arch, flush=lru == "classic")
        walks, helpers, young_folios = walks + 1, helpers + c, young_folios + referenced
        decision, pg_referenced[f] = check_references(referenced, pg_referenced[f])
        if decision == KEEP:  # back on the list for another trip
            kept += 1
            inactive.append(f)
            continue
        if decision == ACTIVATE:  # onto the active list (MGLRU: the youngest generation), out of this scan
            activated += 1
            continue
        gone += unmap_folio(table, f, unmap=unmap, arch=arch)
        freed.append(f)
    return Reclaim(walks=walks, kept=kept, activated=activated, young_folios=young_folios, helpers=helpers,
                   unmap=gone, freed=tuple(freed))


# v6.12's MGLRU eviction (mm/vmscan.c), as Debian's arm64 6.12 runs it under memory.reclaim (a proactive cgroup
# reclaim of file folios with no swap: one type, one tier). Read: evict_folios(), scan_folios(), sort_folio(),
# isolate_folio(), shrink_folio_list(), lru_gen_look_around(), folio_update_gen(), should_run_aging(),
# try_to_inc_max_seq() -> walk_pte_range(); mm/rmap.c folio_referenced_one(); include/linux/mmzone.h.
MIN_LRU_BATCH = 64  # BITS_PER_LONG: scan_folios() isolates until this many pages; the look-around's window
LRU, BATCH, REFERENCED, KEPT, PROMOTED, AGED, GONE = range(7)  # a folio's place, see LookAround


def look_around_window(p: int, vm_start: int, vm_end: int) -> range:
    """lru_gen_look_around()'s PTEs around PTE p: its page table's part of the VMA, cut to MIN_LRU_BATCH PTEs
    placed around p (at the table's or VMA's start or end when p is within half a batch of it)."""
    pmd = p - p % PTRS_PER_PTE
    start, end = max(pmd, vm_start), min(pmd + PTRS_PER_PTE, vm_end)
    if end - start == 1:
        return range(p, p)
    if end - start > MIN_LRU_BATCH:
        half = MIN_LRU_BATCH // 2
        if p - start < half:
            end = start + MIN_LRU_BATCH
        elif end - p < half:
            start = end - MIN_LRU_BATCH
        else:
            start, end = p - half, p + half
    return range(start, end)


class LookAround:
    """The eviction of v6.12's MGLRU over a table whose folios all sit, in mapping order, in the oldest
    generation (readahead put them there), with the per-PTE young helper.

    - scan_folios() takes folios from the list's tail (mapping order): one whose generation the look-around
      moved (PROMOTED) is sorted into it, unwalked; the others are isolated until the batch holds
      MIN_LRU_BATCH pages.
    - shrink_folio_list() then meets the batch in order. A folio the look-around found young while it sat
      isolated (folio_update_gen() set PG_referenced: REFERENCED) is kept unwalked ("folio_update_gen() tried
      to promote this page?"). Any other is walked: folio_referenced_one() calls lru_gen_look_around() for
      each PTE, whose ptep_clear_young_notify() on that PTE is the young helper's call; when it finds young,
      the look-around calls the helper on each young PTE of its window (a cont block once: ptep_get() ORs
      the block's access flags) and moves those PTEs' folios to the youngest generation. A walk that found
      young keeps its folio (KEPT; the youngest generation), an old one reclaims it.
    - Before each batch (should_run_aging(), three generations) the aging runs when the youngest generation
      holds more than half the pages or the oldest less than a quarter: try_to_inc_max_seq() walks the
      mm's page tables and clears every young PTE left (walk_pte_range(): one helper call per young PTE, a
      cont block once), after which every walk finds old. It also runs when the oldest generation is empty.
    Assumed: the aging is not held back at DEF_PRIORITY (get_nr_to_scan() ages only below it; a guest's
    reclaim met it at priority 2 by its count of batches), it walks every page table (a memcg's first aging has no
    Bloom filter to skip one by; walk_pmd_range()), the reclaim stops at exactly table.reclaim folios, and
    after the aging folios are freed the old ones first, then the rest in mapping order.
    `record` keeps what lookaround.py reads: per folio its walk, its own calls' young results and the calls of
    look-arounds on it; per batch the folios scanned and how many had found their generation.
    """

    def __init__(self, table: Table, arch: str = "arm64", record: bool = False):
        self.t, self.arch, self.n = table, arch, 1 << table.order
        self.vm = (table.offset, table.offset + table.folios * self.n)
        self.place = [LRU] * table.folios
        self.scan = 0  # the next folio scan_folios() takes
        self.decided = 0  # folios in the youngest generation (their pages: should_run_aging()'s `young`)
        self.helpers = Counts()
        self.young_walks = 0
        self.record = record
        self.walked = np.zeros(table.folios, dtype=bool)
        self.own = np.zeros((table.folios, 2), dtype=np.int64)  # young own calls, [non-cont, cont]
        self.hits = []  # (walker, target, cont) of each look-around call that cleared young
        self.batches = []  # (last folio scanned, folios decided, highest folio touched)
        self.filled = np.zeros(table.folios, dtype=np.int64)  # pages its batch had isolated once it was scanned
        self.touched = -1

    def folio(self, q: int) -> int:
        return (q - self.t.offset) // self.n

    def is_young(self, q: int) -> bool:
        """pte_young(ptep_get()): a cont PTE reads its block's access flags ORed (contpte_ptep_get())."""
        if self.t.cont[q]:
            b = _block(q)
            return bool(self.t.young[b.start:b.stop].any())
        return bool(self.t.young[q])

    def _decide(self, f: int, place: int) -> None:
        self.place[f] = place
        self.decided += 1

    def isolate(self) -> list[int]:
        """scan_folios(): the next batch, sorting the promoted folios it meets."""
        batch, pages = [], 0
        while self.scan < len(self.place) and pages < MIN_LRU_BATCH:
            f = self.scan
            self.scan += 1
            if self.place[f] == LRU:
                self.place[f] = BATCH
                batch.append(f)
                pages += self.n
            self.filled[f] = pages
        return batch

    def walk(self, f: int) -> bool:
        """folio_referenced_one() under MGLRU: lru_gen_look_around() at every PTE of folio f."""
        self.walked[f] = True
        referenced = False
        start = self.t.offset + f * self.n
        for p in range(start, start + self.n):
            cont = bool(self.t.cont[p])
            young, c = ptep_test_and_clear_young(self.t.young, self.t.cont, p, self.arch)
            self.helpers += c
            if not young:
                continue
            referenced = True
            self.own[f, int(cont)] += 1
            for q in look_around_window(p, *self.vm):
                if not self.is_young(q):
                    continue
                _, c = ptep_test_and_clear_young(self.t.young, self.t.cont, q, self.arch)
                self.helpers += c
                g = self.folio(q)
                self.touched = max(self.touched, g)
                if self.record:
                    self.hits.append((f, g, bool(self.t.cont[q])))
                if self.place[g] == LRU:  # folio_update_gen() on a folio still on the list
                    self._decide(g, PROMOTED)
                elif self.place[g] == BATCH and g != f:  # ... on one isolated: PG_referenced
                    self.place[g] = REFERENCED
        return referenced

    def shrink(self, batch: list[int], freed: list[int], want: int) -> None:
        """shrink_folio_list() over one batch: keep, keep unwalked, or reclaim (until `want` are freed)."""
        for f in batch:
            if len(freed) == want:
                self.place[f] = LRU  # not reached: the reclaim had what it asked for
                continue
            if self.place[f] == REFERENCED:
                self._decide(f, KEPT)
                continue
            if self.walk(f):
                self.young_walks += 1
                self._decide(f, KEPT)
            else:
                self.place[f] = GONE
                freed.append(f)
        self.touched = max(self.touched, batch[-1] if batch else -1)
        if self.record:
            self.batches.append((self.scan - 1, self.decided, self.touched))

    def wants_aging(self, freed: int) -> bool:
        """should_run_aging() with three generations: the youngest over half the pages, the oldest under a
        quarter (pages of one order: counted in folios)."""
        total = len(self.place) - freed
        oldest = sum(1 for x in self.place[self.scan:] if x == LRU)
        return 2 * self.decided > total or 4 * oldest < total

    def age(self) -> None:
        """try_to_inc_max_seq(): walk_pte_range() clears every young PTE of the mapping, one call a young PTE
        (a cont block once), and moves the folios it finds to the new youngest generation."""
        for q in range(*self.vm):
            if self.is_young(q):
                _, c = ptep_test_and_clear_young(self.t.young, self.t.cont, q, self.arch)
                self.helpers += c
                g = self.folio(q)
                if self.place[g] == LRU:
                    self.place[g] = AGED


def reclaim_look_around(table: Table, *, unmap: str, arch: str = "arm64", record: bool = False) -> Reclaim:
    """v6.12's MGLRU reclaim of table.reclaim folios with the per-PTE helper (see LookAround, kept in the
    result with its record when `record`). Mutates the table."""
    ev = LookAround(table, arch, record=record)
    freed: list[int] = []
    while len(freed) < table.reclaim:
        if ev.wants_aging(len(freed)):
            break
        batch = ev.isolate()
        if not batch:
            break
        ev.shrink(batch, freed, table.reclaim)
    if len(freed) < table.reclaim:
        ev.age()
        # the rest are old: the oldest generation's (never scanned, found old by the aging), then the others
        # in mapping order
        oldest = [f for f in range(ev.scan, table.folios) if ev.place[f] == LRU]
        first = set(oldest)
        left = oldest + [f for f in range(table.folios) if ev.place[f] != GONE and f not in first]
        for f in left[:table.reclaim - len(freed)]:
            referenced, c = walk_folio(table, f, batching="per_pte", arch=arch)
            assert not referenced
            ev.helpers += c
            freed.append(f)
    gone = Unmap()
    for f in freed:
        gone += unmap_folio(table, f, unmap=unmap, arch=arch)
    walks = ev.young_walks + len(freed)
    return Reclaim(walks=walks, kept=ev.young_walks, activated=0, young_folios=ev.young_walks,
                   helpers=ev.helpers, unmap=gone, freed=tuple(freed), look_around=ev)
