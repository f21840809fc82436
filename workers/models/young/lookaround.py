"""The young helper's counts under v6.12's MGLRU with the per-PTE helper, in closed form per layout.

Before the seed series, MGLRU's folio_referenced_one() calls lru_gen_look_around() at each PTE of a walked
folio, and a look-around that finds its PTE young also clears the young PTEs of up to 64 around it and moves
their folios to the youngest generation; the aging (try_to_inc_max_seq()) clears what young PTEs are left
once the youngest generation holds more than half the pages (mm/vmscan.c). reference.py's LookAround follows
that eviction over a page table; a guest's reclaim on Debian's arm64 6.12 counted exactly its calls, walks
and young results (benchmarks/RESULTS.md, kernel-young).

Here the same eviction is the reference's own run where the mapping is small (up to DIRECT_PAGES). Beyond,
a layout (order, where the mapping starts in its page table, which blocks are cont) gives a pattern: the
reference's eviction over a few page tables, all folios young, which repeats page table after page table
(`pattern()` finds where it starts repeating and its period, and refuses a layout that does not). Per
point, with Y young folios of M mapped and R to free:
- Until the young ones run out, the eviction meets folios in mapping order: walked (found young, kept),
  kept unwalked (their batch neighbour's look-around found them young) or sorted past (promoted before their
  batch). Before each batch the aging runs if more than half the folios found the youngest generation.
- If that happens while the young ones last (its batch touched none past Y): the aging clears every young
  PTE left, and every later walk is old. Calls: n per walk (each PTE's look-around) plus one per young
  block or young non-cont PTE that no walk's own call found.
- Otherwise the young ones all pass first; then batches of old folios, each freed; before each the aging
  runs if 2 Y > M - freed, and it runs when the oldest generation empties (R > M - Y). Without it, the young
  PTEs no look-around reached stay young and uncounted.
Walks: the young walks plus R old ones (one each freed folio).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from . import reference as ref

PAGE_SHIFT = 12
DIRECT_PAGES = 8 * ref.PTRS_PER_PTE  # mappings up to eight page tables: the reference's own run
PERIODS = (1, 2, 4, 8)  # page tables a layout's pattern may take to repeat
PREFIX = 3  # ... and to start repeating
KEYS = ("walks", "kept", "young_folios", "calls", "visits", "blocks", "atomics", "flushes", "found", "asked")


@dataclass(frozen=True, slots=True)
class Pattern:
    """One layout's eviction of an all-young mapping, to `top` folios: per Y (0..top) the young walks among
    the first Y folios, their own calls' young results and the look-around calls on them by them ([.., 0]
    non-cont, [.., 1] cont), and the old folios a batch that ends the young ones still isolates; per batch
    the last folio scanned, the folios that have found the youngest generation and the highest folio it
    touched. Beyond `top`, each `period` folios repeat the last period's."""

    n: int
    period: int
    top: int
    walks: np.ndarray
    own: np.ndarray
    hits: np.ndarray
    fill_old: np.ndarray
    last: np.ndarray
    decided: np.ndarray
    touched: np.ndarray

    def at(self, name: str, y: np.ndarray) -> np.ndarray:
        """Quantity `name` (walks, own, hits, fill_old) at Y, extended period by period beyond top."""
        arr = getattr(self, name)
        k = np.maximum(0, -(-(y - self.top) // self.period))
        base = arr[y - k * self.period]
        if name == "fill_old":
            return base
        step = arr[self.top] - arr[self.top - self.period]
        return base + (k[:, None] if arr.ndim == 2 else k) * step

    def trigger(self, need: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The first batch after which at least `need` folios found the youngest generation: (last folio it
        scanned, highest folio touched so far)."""
        hi = self.decided[-1]
        k = np.maximum(0, -(-(need - hi) // self.period))
        j = np.searchsorted(self.decided, need - k * self.period)
        return self.last[j] + k * self.period, self.touched[j] + k * self.period


def _run(table: ref.Table, arch: str) -> ref.LookAround:
    ev = ref.LookAround(table, arch, record=True)
    while ev.scan < table.folios:
        ev.shrink(ev.isolate(), [], table.folios + 1)
    return ev


@functools.cache
def pattern(order: int, align: int, arch: str, first_cont: bool) -> Pattern:
    """The layout's pattern (see Pattern); ValueError if it does not repeat within PERIODS page tables."""
    n = 1 << order
    table_folios = max(1, ref.PTRS_PER_PTE // n)  # a page table's folios (one folio: a PMD multiple)
    for m in PERIODS:
        period = m * table_folios
        t = ref.build_table(namespace_size=(PREFIX * table_folios + 3 * period) << (order + PAGE_SHIFT),
                            align=align, order=order, arch=arch, first_pte_cont=first_cont, young_fraction=1.0)
        ev = _run(t, arch)
        hits = np.array(ev.hits, dtype=np.int64).reshape(-1, 3)
        batches = np.array(ev.batches, dtype=np.int64).reshape(-1, 3)

        def rel(lo, hi, data, shift):  # the rows whose first column is in [lo, hi), moved to 0
            sel = data[(data[:, 0] >= lo) & (data[:, 0] < hi)]
            return sorted(map(tuple, sel - lo * np.array(shift)))

        def repeats(a, b, top):  # folios [a, b) and [b, top) did the same
            return (np.array_equal(ev.walked[a:b], ev.walked[b:top]) and np.array_equal(ev.own[a:b], ev.own[b:top])
                    and np.array_equal(ev.filled[a:b], ev.filled[b:top])
                    and rel(a, b, hits, (1, 1, 0)) == rel(b, top, hits, (1, 1, 0))
                    and rel(a, b, batches, (1, 1, 1)) == rel(b, top, batches, (1, 1, 1)))

        # the first page tables may differ (the VMA's start cuts windows, batches find their phase)
        start = next((k * table_folios for k in range(1, PREFIX + 1)
                      if repeats(k * table_folios, k * table_folios + period, k * table_folios + 2 * period)), None)
        if start is None:
            continue
        top = start + 2 * period
        zero = np.zeros((1, 2), dtype=np.int64)
        own = np.concatenate([zero, np.cumsum(ev.own[:top], axis=0)])
        hit = np.zeros((top + 1, 2), dtype=np.int64)
        done = np.maximum(hits[:, 0], hits[:, 1]) + 1  # a hit counts from Y = the later of walker and target + 1
        keep = done <= top
        np.add.at(hit, (done[keep], hits[keep, 2]), 1)
        filled = ev.filled[:top]
        fill_old = np.concatenate([[0], np.where(filled >= ref.MIN_LRU_BATCH, 0,
                                                 -(-(ref.MIN_LRU_BATCH - filled) // n))])
        inside = batches[batches[:, 0] < top]
        return Pattern(n=n, period=period, top=top,
                       walks=np.concatenate([[0], np.cumsum(ev.walked[:top])]), own=own, hits=np.cumsum(hit, axis=0),
                       fill_old=fill_old, last=inside[:, 0], decided=inside[:, 1], touched=inside[:, 2])
    raise ValueError(f"the look-around of order {order} at align {align} ({arch}, first_pte_cont={first_cont}) "
                     f"does not repeat within {PERIODS[-1]} page tables after its first {PREFIX}")


@functools.lru_cache(maxsize=4096)
def _direct(order: int, align: int, arch: str, first_cont: bool, folios: int, young: int,
            reclaim: int) -> tuple[int, ...]:
    """The reference's own eviction of a small mapping: KEYS in order."""
    size = 1 << (order + PAGE_SHIFT)
    t = ref.build_table(namespace_size=reclaim * size, mapped_size=folios * size, align=align, order=order,
                        arch=arch, first_pte_cont=first_cont)
    t.young[t.offset:t.offset + (young << order)] = True  # the first `young` folios (no float in between)
    r = ref.reclaim_look_around(t, unmap="per_pte", arch=arch)
    h = r.helpers
    return (r.walks, r.kept, r.young_folios, h.calls, h.ptes_visited, h.blocks_touched, h.atomics, h.tlb_flushes,
            h.young_calls, h.ptes_asked)


def counts(order: np.ndarray, align: np.ndarray, arm64: np.ndarray, first_cont: np.ndarray, folios: np.ndarray,
           young: np.ndarray, reclaim: np.ndarray, cont_per_folio: np.ndarray) -> dict[str, np.ndarray]:
    """KEYS per point (int64 arrays): M = `folios` mapped, Y = `young` of them young, R = `reclaim` freed.
    Zeros where no reclaim can be (no folio mapped or freed, or an order the page cache never makes: the
    model says why those points are infeasible)."""
    out = {k: np.zeros(order.shape, dtype=np.int64) for k in KEYS}
    can = np.flatnonzero((folios > 0) & (reclaim > 0) & (reclaim <= folios) & (young <= folios)
                         & (order <= ref.MAX_PAGECACHE_ORDER))
    layout = np.stack([order[can], align[can] % (2 << 20), arm64[can], first_cont[can]]).T
    keys, group = np.unique(layout, axis=0, return_inverse=True)
    for g, (o, al, a64, fc) in enumerate(keys):
        rows = can[group.ravel() == g]
        arch = "arm64" if a64 else "x86_64"
        small = rows[folios[rows] << o <= DIRECT_PAGES]
        for i in small:
            for k, v in zip(KEYS, _direct(int(o), int(al), arch, bool(fc), int(folios[i]), int(young[i]),
                                         int(reclaim[i]))):
                out[k][i] = v
        big = rows[folios[rows] << o > DIRECT_PAGES]
        if big.size:
            got = _closed(pattern(int(o), int(al), arch, bool(fc)), folios[big], young[big], reclaim[big],
                          cont_per_folio[big], bool(a64))
            for k in KEYS:
                out[k][big] = got[k]
    return out


def _closed(p: Pattern, m: np.ndarray, y: np.ndarray, r: np.ndarray, cpf: np.ndarray,
            arm64: bool) -> dict[str, np.ndarray]:
    """The module doc's arithmetic over one layout's pattern."""
    n = p.n
    last, touched = p.trigger(m // 2 + 1)  # 2 x decided > M
    early = touched < y  # the aging ran while young folios were left
    seen = np.where(early, last + 1, y)
    walks_y, own = p.at("walks", seen), p.at("own", seen)
    # after the young ones: old batches of b folios, the first after the one that ends the young ones
    b = -(-ref.MIN_LRU_BATCH // n)
    first = np.minimum(p.at("fill_old", y), m - y)
    final = first + b * ((r - 1 - first) // b)  # the freed count at the last check before the reclaim ends
    aged = early | (r > m - y) | ((r > first) & (final > m - 2 * y))
    units = np.stack([y * (n - cpf * ref.CONT_PTES), y * cpf], axis=1)  # young non-cont PTEs, young cont blocks
    extra = np.where(aged[:, None], units - own, p.at("hits", y))
    walks = walks_y + r
    calls = n * walks + extra.sum(axis=1)
    cont_ptes = cpf * ref.CONT_PTES
    visits = walks * (n - cont_ptes + cont_ptes * ref.CONT_PTES) + extra[:, 0] + ref.CONT_PTES * extra[:, 1]
    found = own.sum(axis=1) + extra.sum(axis=1)
    return {"walks": walks, "kept": walks_y, "young_folios": walks_y, "calls": calls, "visits": visits,
            "blocks": walks * cont_ptes + extra[:, 1], "atomics": visits if arm64 else found,
            "flushes": np.zeros_like(walks), "found": found, "asked": calls}
