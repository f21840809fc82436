"""pfnmap geometry: the leaves and page-table pages remap_pfn_range() creates, in closed form.

Everything here is integer arithmetic on numpy int64 arrays, one element per
point; nothing loops over pages. Addresses are taken modulo 1 GiB (the largest
leaf), which is all the leaf rules look at: `va` in [0, 1 GiB) stands for the
virtual start, `pa` for the physical start, `end = va + L`.

Kernel rules (mm/memory.c, read at torvalds/linux):
- Mainline remap_pfn_range() -> remap_p4d/pud/pmd_range() -> remap_pte_range():
  one special PTE per 4 KiB (set_pte_at(..., pte_mkspecial(pfn_pte()))), a PTE
  table allocated per PMD-sized piece (pte_alloc_map_lock()), a PMD table per
  PUD-sized piece (pmd_alloc()).
- The RFC (seeds/huge-pfnmap-remap-pfn-range.rfc-v2.txt, MODEL.md): a 2 MiB
  piece becomes one PMD leaf iff it is a whole aligned block inside the range
  and va, pa are both 2 MiB aligned (so (va - pa) mod 2 MiB == 0); head and
  tail fall back to PTEs. It deposits a PTE table per PMD leaf (allocated
  before set_pmd_at(), "prevent PMD mapping creation when pgtable allocation
  fails"), so page-table memory does not shrink. Mainline
  vmf_insert_pfn_pmd() deposits only when arch_needs_pgtable_deposit().
- PUD (1 GiB) leaves are the what-if compound_order = 18 with the same rules;
  like vmf_insert_pfn_pud() (mm/huge_memory.c) they deposit nothing. Today
  only x86_64 selects ARCH_SUPPORTS_PUD_PFNMAP; arm64 has no THP PUDs.
- arm64 contpte: contpte_set_ptes() (arch/arm64/mm/contpte.c) sets PTE_CONT on
  a run of 16 PTEs when addr, next and the pfn are all 64 KiB aligned, i.e. a
  whole aligned 64 KiB block with (va - pa) mod 64 KiB == 0. remap_pte_range()
  sets PTEs one at a time, and contpte_try_fold() never folds special PTEs
  ("We can't fold special mappings, because there is no associated folio"), so
  mainline pfnmaps get no cont blocks: `cont_enabled` is the profile's say.
"""

from __future__ import annotations

import numpy as np

from workers.units import GiB, KiB, MiB

PAGE = 4 * KiB
CONT = 64 * KiB  # CONT_PTES (16) x 4 KiB, arch/arm64/include/asm/pgtable-hwdef.h
PMD = 2 * MiB
PUD = 1 * GiB
PMD_ORDER = 9
PUD_ORDER = 18
LEAF_ORDERS = (0, PMD_ORDER, PUD_ORDER)
PTES_PER_CONT = CONT // PAGE
ENTRY_BYTES = 8  # one page-table entry (pte_t, pmd_t, pud_t)


def starts(align: np.ndarray, pa_offset: np.ndarray, va_offset: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Physical and virtual start modulo 1 GiB.

    pa is `align` itself (aligned to align and to no larger power of two; 0 when
    align >= 1 GiB) unless pa_offset >= 0 gives it; va = (pa + va_offset) mod 1 GiB.
    """
    pa = np.where(pa_offset >= 0, pa_offset, np.where(align >= PUD, 0, align))
    return pa, (pa + va_offset) % PUD


def _shift(block: int) -> int:
    return block.bit_length() - 1


def full_blocks(va: np.ndarray, end: np.ndarray, block: int) -> np.ndarray:
    """Whole `block`-aligned blocks inside [va, end): floor(end/B) - ceil(va/B), at least 0."""
    s = _shift(block)
    return np.maximum(0, (end >> s) - ((va + (block - 1)) >> s))


def spanned(va: np.ndarray, end: np.ndarray, block: int) -> np.ndarray:
    """`block`-aligned regions that [va, end) touches: ceil(end/B) - floor(va/B)."""
    s = _shift(block)
    return ((end + (block - 1)) >> s) - (va >> s)


def leaves(length: np.ndarray, pa: np.ndarray, va: np.ndarray, order: np.ndarray,
           cont_enabled: np.ndarray) -> dict[str, np.ndarray]:
    """Leaf counts, page-table pages and entries of one remap_pfn_range() per point.

    `order` is the largest leaf order allowed (0, 9 or 18); `cont_enabled` says
    whether 16-PTE runs get PTE_CONT (arm64 and the profile allows it).
    Returns int64 arrays: pte, cont, pmd, pud leaves; pte_tables, pmd_tables,
    deposited (RFC) and pt_pages; pmd_entries, pud_entries (entries of those
    levels that cover the range, leaf or table). Blocks are powers of two, so
    x mod B is x & (B - 1), also for a negative va - pa (two's complement).
    """
    end = va + length
    delta = va - pa
    pmd_entries, pud_entries = spanned(va, end, PMD), spanned(va, end, PUD)
    pmd_ok = (order >= PMD_ORDER) & ((delta & (PMD - 1)) == 0)
    pud_ok = (order >= PUD_ORDER) & ((delta & (PUD - 1)) == 0)
    pud = np.where(pud_ok, full_blocks(va, end, PUD), 0)
    pmd = np.where(pmd_ok, full_blocks(va, end, PMD) - pud * (PUD // PMD), 0)
    huge_bytes = pud * PUD + pmd * PMD
    pte = (length - huge_bytes) >> _shift(PAGE)
    cont_ok = cont_enabled & ((delta & (CONT - 1)) == 0)
    cont = np.where(cont_ok, full_blocks(va, end, CONT) - (huge_bytes >> _shift(CONT)), 0)
    # PTE tables: with huge leaves only the unaligned head and tail pieces need one each.
    head_tail_pte = ((va & (PMD - 1)) != 0).astype(np.int64) + ((end & (PMD - 1)) != 0)
    pte_tables = np.where(huge_bytes > 0, head_tail_pte, pmd_entries)
    head_tail_pmd = ((va & (PUD - 1)) != 0).astype(np.int64) + ((end & (PUD - 1)) != 0)
    pmd_tables = np.where(pud > 0, head_tail_pmd, pud_entries)
    deposited = pmd  # one PTE table per PMD leaf (the RFC); PUD leaves deposit nothing
    return {
        "pte": pte, "cont": cont, "pmd": pmd, "pud": pud, "huge_bytes": huge_bytes,
        "pte_tables": pte_tables, "pmd_tables": pmd_tables, "deposited": deposited,
        "pt_pages": pte_tables + pmd_tables + deposited,
        "pmd_entries": pmd_entries, "pud_entries": pud_entries,
    }


def kind_bytes(g: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Bytes mapped by each leaf kind: plain PTEs, contpte blocks, PMD and PUD leaves."""
    return {
        "plain": (g["pte"] - g["cont"] * PTES_PER_CONT) * PAGE,
        "cont": g["cont"] * CONT,
        "pmd": g["pmd"] * PMD,
        "pud": g["pud"] * PUD,
    }
