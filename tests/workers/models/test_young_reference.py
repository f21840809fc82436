"""The executable reference of arm64 young-bit clearing (workers/models/young/reference.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workers.models.young import reference as ref

C = ref.CONT_PTES


def table(cont_blocks: list[bool], young_idx: tuple[int, ...] = ()) -> tuple[np.ndarray, np.ndarray]:
    """A table of len(cont_blocks) blocks, cont per block, with the given PTEs young."""
    cont = np.repeat(np.array(cont_blocks, dtype=bool), C)
    young = np.zeros(cont.size, dtype=bool)
    young[list(young_idx)] = True
    return young, cont


def oracle(young: np.ndarray, cont: np.ndarray, i: int, nr: int) -> tuple[bool, np.ndarray]:
    """MODEL.md semantics PTE by PTE: a cont PTE stands for its whole block (its access flag is the OR)."""
    hit = np.zeros(young.size, dtype=bool)
    for j in range(i, i + nr):
        if cont[j]:
            hit[j - j % C:j - j % C + C] = True
        else:
            hit[j] = True
    after = young.copy()
    after[hit] = False
    return bool(young[hit].any()), after


@st.composite
def tables_and_ranges(draw):
    nblocks = draw(st.integers(1, 8))
    cont_blocks = draw(st.lists(st.booleans(), min_size=nblocks, max_size=nblocks))
    cont = np.repeat(np.array(cont_blocks, dtype=bool), C)
    young = np.array(draw(st.lists(st.booleans(), min_size=cont.size, max_size=cont.size)), dtype=bool)
    i = draw(st.integers(0, cont.size - 1))
    nr = draw(st.integers(1, cont.size - i))
    return young, cont, i, nr


@settings(max_examples=300, deadline=None)
@given(tables_and_ranges())
def test_batched_matches_oracle(case):
    """The batched helper returns the oracle's result and leaves the oracle's bits."""
    young, cont, i, nr = case
    want, after = oracle(young, cont, i, nr)
    got, _ = ref.test_and_clear_young_ptes(young, cont, i, nr)
    assert got == want
    assert np.array_equal(young, after)


@settings(max_examples=300, deadline=None)
@given(tables_and_ranges())
def test_batched_leaves_range_and_touched_blocks_old(case):
    """Afterwards every PTE in [i, i+nr) is old and every cont block with a PTE in the range is wholly old."""
    young, cont, i, nr = case
    ref.test_and_clear_young_ptes(young, cont, i, nr)
    assert not young[i:i + nr].any()
    for b in range(i // C, (i + nr - 1) // C + 1):
        if cont[b * C]:
            assert not young[b * C:(b + 1) * C].any()


@settings(max_examples=200, deadline=None)
@given(tables_and_ranges())
def test_per_pte_path_matches_oracle(case):
    """The per-PTE loop the series replaces gives the same result and bits as the oracle."""
    young, cont, i, nr = case
    want, after = oracle(young, cont, i, nr)
    got, counts = ref.per_pte_range(young, cont, i, nr)
    assert (got, counts.calls) == (want, nr)
    assert np.array_equal(young, after)


@settings(max_examples=200, deadline=None)
@given(tables_and_ranges())
def test_flush_variant_matches_oracle_and_flushes_once_when_young(case):
    """clear_flush_young_ptes() clears like the oracle and issues exactly one flush iff young."""
    young, cont, i, nr = case
    want, after = oracle(young, cont, i, nr)
    got, counts = ref.clear_flush_young_ptes(young, cont, i, nr)
    assert got == want and counts.tlb_flushes == int(want)
    assert np.array_equal(young, after)


@settings(max_examples=200, deadline=None)
@given(tables_and_ranges())
def test_batched_never_visits_more_than_per_pte(case):
    """Batching never visits more PTEs, walks more blocks or makes more calls than the per-PTE path."""
    young, cont, i, nr = case
    _, b = ref.test_and_clear_young_ptes(young.copy(), cont, i, nr)
    _, p = ref.per_pte_range(young.copy(), cont, i, nr)
    assert b.ptes_visited <= p.ptes_visited and b.blocks_touched <= p.blocks_touched and b.calls <= p.calls


def test_reviewer_case_a_range_spanning_four_blocks():
    """64 PTEs over four cont blocks: one call visits all 64, walks 4 blocks, sees a young PTE in block 3."""
    young, cont = table([True] * 4, young_idx=(40,))
    got, counts = ref.test_and_clear_young_ptes(young, cont, 0, 64)
    assert got is True
    assert (counts.calls, counts.ptes_visited, counts.blocks_touched) == (1, 64, 4)
    assert not young.any()


def test_reviewer_case_a_unaligned_range_widens_both_ends():
    """64 PTEs from the middle of a cont block widen to [0, 80): 80 visits over 5 blocks."""
    young, cont = table([True] * 5, young_idx=(3, 77))
    got, counts = ref.test_and_clear_young_ptes(young, cont, 8, 64)
    assert ref.widened_range(cont, 8, 64) == range(0, 80)
    assert got is True and (counts.ptes_visited, counts.blocks_touched) == (80, 5)
    assert not young.any()


def test_reviewer_case_b_first_pte_not_cont_later_cont():
    """First PTE not cont, later blocks cont: no widening at the start, the end widens to its block end."""
    young, cont = table([False, True, True, True], young_idx=(2, 60))
    got, counts = ref.test_and_clear_young_ptes(young, cont, 8, 40)  # [8, 48) ends inside block 2
    assert ref.widened_range(cont, 8, 40) == range(8, 48)  # block 2 is cont, so end = ALIGN(48) = 48
    assert got is False  # PTE 60 is in block 3, outside; PTE 2 precedes the range
    assert (counts.ptes_visited, counts.blocks_touched) == (40, 2)
    assert young[2] and young[60]


def test_reviewer_case_b_young_bit_in_touched_block_tail():
    """A young PTE past the range end but inside the last touched cont block is reported and cleared."""
    young, cont = table([False, True, True, True], young_idx=(63,))
    got, counts = ref.test_and_clear_young_ptes(young, cont, 8, 42)  # [8, 50) ends inside block 3
    assert got is True and counts.ptes_visited == 56 and counts.blocks_touched == 3
    assert not young.any()


def test_per_pte_on_a_cont_block_visits_sixteen_times_sixteen():
    """The per-PTE path over one young cont block: 16 calls, 256 visits, 16 block walks, one flush."""
    young, cont = table([True], young_idx=(5,))
    got, counts = ref.per_pte_range(young, cont, 0, C, flush=True)
    assert got is True
    assert counts == ref.Counts(calls=16, ptes_visited=256, blocks_touched=16, tlb_flushes=1, atomics=256,
                                young_calls=1, ptes_asked=16)


def test_batched_on_a_cont_block_visits_sixteen_once():
    """The batched flush variant over one young cont block: 1 call, 16 visits, 1 block, one flush."""
    young, cont = table([True], young_idx=(5,))
    got, counts = ref.clear_flush_young_ptes(young, cont, 0, C)
    assert got is True
    assert counts == ref.Counts(calls=1, ptes_visited=16, blocks_touched=1, tlb_flushes=1, atomics=16,
                                young_calls=1, ptes_asked=16)


def test_per_pte_non_cont_flushes_each_young_pte():
    """Without cont bits the per-PTE flush variant flushes once per young PTE."""
    young, cont = table([False], young_idx=(1, 2, 9))
    _, counts = ref.per_pte_range(young, cont, 0, C, flush=True)
    assert counts == ref.Counts(calls=16, ptes_visited=16, blocks_touched=0, tlb_flushes=3, atomics=16,
                                young_calls=3, ptes_asked=16)


def test_single_pte_fast_path_and_cont_single_pte():
    """nr == 1 on a non-cont PTE visits one PTE; nr == 1 on a cont PTE walks its whole block."""
    young, cont = table([False, True], young_idx=(20,))
    assert ref.test_and_clear_young_ptes(young, cont, 3, 1)[1].ptes_visited == 1
    got, counts = ref.test_and_clear_young_ptes(young, cont, 17, 1)
    assert got is True and counts.ptes_visited == 16 and counts.blocks_touched == 1


def test_x86_atomics_only_on_young_and_never_flushes():
    """x86 visits every PTE once per call, does atomics only on young PTEs and never flushes."""
    young, cont = table([False, False], young_idx=(0, 31))
    got, counts = ref.clear_flush_young_ptes(young, cont, 0, 32, arch="x86_64")
    assert got is True
    assert counts == ref.Counts(calls=1, ptes_visited=32, blocks_touched=0, tlb_flushes=0, atomics=2, young_calls=1,
                                ptes_asked=32)


def test_build_table_layout_head_block_unfolded():
    """build_table(): 128 KiB folios at 2 MiB alignment are cont except each unfolded head block."""
    t = ref.build_table(namespace_size=4 * 128 * 1024, align=2 << 20, order=5, first_pte_cont=False,
                        young_fraction=0.5)
    assert t.offset == 0 and t.folios == 4
    assert t.cont[:32].tolist() == [False] * 16 + [True] * 16
    assert t.young[:64].all() and not t.young[64:].any()


def test_build_table_misaligned_range_has_no_cont():
    """At 4 KiB alignment VA and PA differ modulo 64 KiB, so no block is cont."""
    t = ref.build_table(namespace_size=64 * 1024 * 8, align=4096, order=4, first_pte_cont=False)
    assert t.offset == 1 and not t.cont.any()


def test_scan_splits_folios_at_pmd_boundaries():
    """A 2 MiB folio starting 64 KiB past a PMD boundary takes two batched calls."""
    t = ref.build_table(namespace_size=2 << 20, align=64 * 1024, order=9)
    young_folios, counts = ref.scan(t, batching="batched")
    assert (young_folios, counts.calls, counts.ptes_visited, counts.blocks_touched) == (0, 2, 512, 32)


def test_check_table_rejects_partial_cont_block():
    """A cont bit on only part of an aligned block is rejected."""
    young, cont = table([False])
    cont[3] = True
    with pytest.raises(ValueError, match="all-or-nothing"):
        ref.check_table(young, cont)


def test_check_table_rejects_cont_on_x86():
    """x86_64 tables may not carry cont bits."""
    young, cont = table([True])
    with pytest.raises(ValueError, match="no cont bit"):
        ref.check_table(young, cont, arch="x86_64")


def test_check_table_rejects_bad_length_and_arch():
    """Tables must be whole blocks and arch must be known."""
    with pytest.raises(ValueError, match="multiple of 16"):
        ref.check_table(np.zeros(10, dtype=bool), np.zeros(10, dtype=bool))
    with pytest.raises(ValueError, match="'arch' must be one of"):
        ref.check_table(np.zeros(16, dtype=bool), np.zeros(16, dtype=bool), arch="riscv")


def test_range_outside_table_is_rejected():
    """A range past the table end, or an empty one, is rejected."""
    young, cont = table([False])
    with pytest.raises(ValueError, match="inside the table"):
        ref.test_and_clear_young_ptes(young, cont, 10, 7)
    with pytest.raises(ValueError, match="non-empty"):
        ref.per_pte_range(young, cont, 0, 0)


def test_build_table_needs_whole_folios_and_leaves_no_cont_bit_where_none_can_be():
    """build_table() needs whole folios; first_pte_cont=True on x86_64 or an order-2 folio is the layout
    contpte_set_ptes() leaves there: no cont bit at all, as with first_pte_cont=False."""
    with pytest.raises(ValueError, match="whole number of folios"):
        ref.build_table(namespace_size=100 * 1024, align=2 << 20, order=4)
    for kw in ({"arch": "x86_64", "order": 4}, {"order": 2}):
        t = ref.build_table(namespace_size=64 * 1024, align=2 << 20, first_pte_cont=True, **kw)
        assert not t.cont.any()
        assert (t.cont == ref.build_table(namespace_size=64 * 1024, align=2 << 20, first_pte_cont=False,
                                          **kw).cont).all()
    with pytest.raises(ValueError, match="at least 'namespace_size'"):
        ref.build_table(namespace_size=128 * 1024, align=2 << 20, order=4, mapped_size=64 * 1024)


@pytest.mark.parametrize(("referenced", "pg_referenced", "decision", "after"), [
    (True, False, ref.KEEP, True),  # first young sighting: mark it, spare it a trip
    (True, True, ref.ACTIVATE, True),  # young again with the mark: activate
    (False, True, ref.RECLAIM_CLEAN, False),  # its second trip finds it old: the mark is spent, reclaim
    (False, False, ref.RECLAIM, False),
])
def test_check_references_follows_folio_check_references(referenced, pg_referenced, decision, after):
    """The classic LRU's decision and the PG_referenced left behind, for each young/marked combination."""
    assert ref.check_references(referenced, pg_referenced) == (decision, after)


def test_classic_lru_walks_a_young_folio_twice_before_freeing_it():
    """A young folio is kept once (young walk, one flush), then freed on its second, old walk."""
    t = ref.build_table(namespace_size=64 << 10, align=2 << 20, order=4, young_fraction=1.0)
    run = ref.reclaim(t, lru="classic", batching="batched", unmap="batched")
    assert (run.walks, run.kept, run.activated, run.young_folios, run.freed) == (2, 1, 0, 1, (0,))
    assert (run.helpers.calls, run.helpers.tlb_flushes) == (2, 1)


def test_classic_lru_walks_every_young_mapped_folio_before_a_second_trip():
    """10 folios mapped, all young, 8 to free: 10 kept first walks, then 8 old ones free folios 0..7."""
    t = ref.build_table(namespace_size=8 << 16, mapped_size=10 << 16, align=2 << 20, order=4, young_fraction=1.0)
    run = ref.reclaim(t, lru="classic", batching="batched", unmap="batched")
    assert (run.walks, run.kept, run.young_folios, run.freed) == (18, 10, 10, tuple(range(8)))


def test_classic_lru_frees_old_folios_on_their_first_walk():
    """Old folios with PG_referenced clear are reclaimed at once; MGLRU keeps a young folio for a second walk
    as the classic LRU does, without a TLB flush."""
    t = ref.build_table(namespace_size=4 << 16, mapped_size=6 << 16, align=2 << 20, order=4, young_fraction=0.5)
    run = ref.reclaim(t, lru="classic", batching="per_pte", unmap="batched")
    assert (run.walks, run.kept, run.freed) == (7, 3, (3, 4, 5, 0))
    t = ref.build_table(namespace_size=64 << 10, align=2 << 20, order=4, young_fraction=1.0)
    run = ref.reclaim(t, lru="mglru", batching="batched", unmap="batched")
    assert (run.walks, run.kept, run.helpers.tlb_flushes) == (2, 1, 0)


def test_per_pte_unmap_steps_once_per_pte_and_unfolds_each_cont_block():
    """A 64 KiB cont folio: per_pte unmap takes 16 steps, unfolds its block once (16 clears, a flush, 16
    writes) and defers 16 TLBIs; batched takes one step, one TLBI, no unfold."""
    per_pte = ref.unmap_folio(ref.build_table(namespace_size=64 << 10, align=2 << 20, order=4), 0, unmap="per_pte")
    batched = ref.unmap_folio(ref.build_table(namespace_size=64 << 10, align=2 << 20, order=4), 0, unmap="batched")
    assert (per_pte.steps, per_pte.unfolds, per_pte.tlb_flushes, per_pte.writes) == (16, 1, 17, 16)
    assert per_pte.atomics == 16 + 16 * ref.PTE_ATOMICS + 16 * ref.STEP_ATOMICS
    assert (batched.steps, batched.unfolds, batched.tlb_flushes, batched.writes) == (1, 0, 1, 0)
    assert batched.atomics == 16 * ref.PTE_ATOMICS + ref.STEP_ATOMICS


def test_unmap_leaves_the_folio_old_and_unfolded_only_when_per_pte():
    """Per-PTE unmap repaints the cont block as plain PTEs first; the batched clear leaves the bits alone."""
    for unmap, cont_after in (("per_pte", False), ("batched", True)):
        t = ref.build_table(namespace_size=64 << 10, align=2 << 20, order=4, young_fraction=1.0)
        ref.unmap_folio(t, 0, unmap=unmap)
        assert not t.young.any() and bool(t.cont[:16].all()) == cont_after


def test_x86_unmap_defers_its_flush_with_an_atomic():
    """x86 has no cont bit and no per-step TLBI: each step bumps the mm's tlb_gen instead."""
    t = ref.build_table(namespace_size=32 << 10, align=2 << 20, order=3, arch="x86_64", first_pte_cont=False)
    u = ref.unmap_folio(t, 0, unmap="per_pte", arch="x86_64")
    assert (u.steps, u.unfolds, u.tlb_flushes) == (8, 0, 0)
    assert u.atomics == 8 * ref.PTE_ATOMICS + 8 * (ref.STEP_ATOMICS + 1)


def test_batched_unmap_splits_at_a_pmd_boundary():
    """A folio straddling a page table is unmapped in two steps (folio_unmap_pte_batch() stops at
    pmd_addr_end()), each with its own deferred TLBI."""
    t = ref.build_table(namespace_size=2 << 20, align=1 << 20, order=9, first_pte_cont=False)
    u = ref.unmap_folio(t, 0, unmap="batched")
    assert (u.steps, u.tlb_flushes, u.unfolds) == (2, 2, 0)


@pytest.mark.parametrize("order, walks, calls", [(5, 625, 20_783), (6, 321, 21_327)])
def test_look_around_counts_what_a_6_12_guest_counted(order, walks, calls):
    """v6.12's MGLRU eviction, 48 of 64 MiB reclaimed, every folio young (benchmarks/RESULTS.md, kernel-young):
    the calls, visits and young results Debian's arm64 6.12 counted, and the split its extra probes counted
    once: 241 look-arounds found their own PTE young, their windows cleared 275 blocks, the aging the other 508.
    Order 5: batches of two folios; a page table's first folio's window (its first 64 PTEs) takes its batch
    partner, kept unwalked; the aging runs once 258 folios (8,256 of 16,384 pages) are in the youngest
    generation."""
    t = ref.build_table(namespace_size=48 << 20, mapped_size=64 << 20, align=2 << 20, order=order,
                        young_fraction=1.0)
    run = ref.reclaim_look_around(t, unmap="per_pte", record=True)
    ev = run.look_around
    assert (run.walks, run.helpers.calls, run.helpers.young_calls, len(run.freed)) == (walks, calls, 1024,
                                                                                     (48 << 20) >> (order + 12))
    own, windows = int(ev.own.sum()), len(ev.hits)
    assert (own, windows, run.helpers.young_calls - own - windows) == (241, 275, 508)
    assert run.helpers.calls == (walks << order) + windows + 508  # each visited PTE's own call, then the others'
    again = ref.build_table(namespace_size=48 << 20, mapped_size=64 << 20, align=2 << 20, order=order,
                            young_fraction=1.0)
    assert ref.reclaim(again, lru="mglru", batching="per_pte", unmap="per_pte").helpers == run.helpers
    if order == 5:
        walked = set(np.flatnonzero(ev.walked).tolist())
        assert walked == set(range(257)) - set(range(1, 257, 16))


def test_look_around_promotes_a_neighbour_still_on_the_list_and_keeps_an_isolated_one_unwalked():
    """Order 4 (16 PTEs, batches of four): the first folio's window (64 PTEs) clears its three batch partners,
    which shrink_folio_list() keeps unwalked; a later folio's window reaches the next batch's first folio,
    promoted (sorted past, never isolated)."""
    t = ref.build_table(namespace_size=64 << 16, mapped_size=64 << 16, align=2 << 20, order=4, young_fraction=1.0)
    ev = ref.LookAround(t, record=True)
    first = ev.isolate()
    ev.shrink(first, [], t.folios)
    assert first == [0, 1, 2, 3] and ev.walked[:4].tolist() == [True, False, False, False]
    assert [ev.place[f] for f in first] == [ref.KEPT] * 4
    second = ev.isolate()
    ev.shrink(second, [], t.folios)
    assert second == [4, 5, 6, 7] and ev.walked[4:8].tolist() == [True, False, True, False]


def test_look_around_window_stays_in_its_page_table_and_vma():
    """lru_gen_look_around(): 64 PTEs, placed around the PTE, pushed inside the page table and the VMA."""
    assert ref.look_around_window(0, 0, 4096) == range(0, 64)
    assert ref.look_around_window(100, 0, 4096) == range(68, 132)
    assert ref.look_around_window(500, 0, 4096) == range(448, 512)
    assert ref.look_around_window(520, 16, 530) == range(512, 530)
    assert ref.look_around_window(7, 7, 8) == range(7, 7)
