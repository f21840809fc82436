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
    assert counts == ref.Counts(calls=16, ptes_visited=256, blocks_touched=16, tlb_flushes=1, atomics=256)


def test_batched_on_a_cont_block_visits_sixteen_once():
    """The batched flush variant over one young cont block: 1 call, 16 visits, 1 block, one flush."""
    young, cont = table([True], young_idx=(5,))
    got, counts = ref.clear_flush_young_ptes(young, cont, 0, C)
    assert got is True
    assert counts == ref.Counts(calls=1, ptes_visited=16, blocks_touched=1, tlb_flushes=1, atomics=16)


def test_per_pte_non_cont_flushes_each_young_pte():
    """Without cont bits the per-PTE flush variant flushes once per young PTE."""
    young, cont = table([False], young_idx=(1, 2, 9))
    _, counts = ref.per_pte_range(young, cont, 0, C, flush=True)
    assert counts == ref.Counts(calls=16, ptes_visited=16, blocks_touched=0, tlb_flushes=3, atomics=16)


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
    assert counts == ref.Counts(calls=1, ptes_visited=32, blocks_touched=0, tlb_flushes=0, atomics=2)


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


def test_build_table_rejects_partial_folio_and_impossible_first_cont():
    """build_table() needs whole folios, and a cont first PTE only where the layout allows one."""
    with pytest.raises(ValueError, match="whole number of folios"):
        ref.build_table(namespace_size=100 * 1024, align=2 << 20, order=4)
    with pytest.raises(ValueError, match="first_pte_cont"):
        ref.build_table(namespace_size=64 * 1024, align=2 << 20, order=4, arch="x86_64")
