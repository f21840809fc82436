"""The native routines (workers/native via workers/measure/native.py): what they write, never how fast."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workers.measure.exceptions import MeasureError
from workers.measure.host import anon_huge_bytes
from workers.measure.native import COPY_SIZES, COPY_STRATEGIES, MEMMAP_SIZES, MEMMAP_STRATEGIES, Mapping
from workers.measure.plans import CHASE_LOADS, CHASE_STRIDE, PAGE, chase_loads

SECTION_PFNS = 1 << 15  # PAGES_PER_SECTION in memmap.c
# (heads, per_compound, order): fsdax order-0 pages, a devdax 2 MiB compound written whole, one whose
# tails alias (compound_nr_pages() = 128 of 512), and the smallest compounds (order 1 and 2)
GEOMETRIES = [(300, 1, 0), (3, 512, 9), (3, 128, 9), (5, 2, 1), (4, 4, 2)]


def init(native, psize, strategy, heads, per, order, start_pfn, reset) -> bytes:
    nbytes = heads * per * psize
    with Mapping(native, nbytes) as m:
        m.prefault()
        m.write(0, b"\xaa" * nbytes)  # garbage: every byte the routine leaves must be its own
        native.memmap_init(m.addr, psize=psize, strategy=strategy, heads=heads, per_compound=per, order=order,
                            start_pfn=start_pfn, refcount_reset=reset)
        return m.read(0, nbytes)


@pytest.mark.parametrize("psize", MEMMAP_SIZES)
@pytest.mark.parametrize("heads,per,order", GEOMETRIES)
def test_the_four_memmap_strategies_write_identical_bytes(native, psize, heads, per, order):
    """slow, template, template_nt and template_nt_inline leave the same struct pages, across a section."""
    start = SECTION_PFNS - (heads // 2) * (1 << order)  # heads on both sides of a section boundary
    out = {s: init(native, psize, s, heads, per, order, start, reset=order == 0) for s in MEMMAP_STRATEGIES}
    assert all(v == out["slow"] for v in out.values())
    assert b"\xaa" * 8 not in out["slow"]


@pytest.mark.parametrize("psize", MEMMAP_SIZES)
def test_memmap_pages_carry_their_pfn_section_and_refcount_policy(native, psize):
    """Each page's flags hold its own section; fsdax heads get refcount 0, devdax heads keep 1."""
    start = SECTION_PFNS - 2
    for reset, refcount in ((True, 0), (False, 1)):
        raw = init(native, psize, "template_nt_inline", 4, 1, 0, start, reset)
        for i in range(4):
            page = raw[i * psize:(i + 1) * psize]
            flags, = struct.unpack_from("<Q", page, 0)
            assert (flags >> 32) & 0x7FFFF == (start + i) >> 15
            assert struct.unpack_from("<i", page, 52)[0] == refcount


def test_compound_tails_point_to_their_head_and_the_head_is_marked(native):
    """prep_compound_tail(): every tail's compound_head is its head's address | 1; __SetPageHead() on heads."""
    raw = init(native, 64, "template", 2, 512, 9, 1 << 20, reset=False)
    for h in range(2):
        head_pfn = (1 << 20) + h * 512
        head_flags, = struct.unpack_from("<Q", raw, h * 512 * 64)
        assert head_flags & (1 << 6)
        for i in (1, 2, 511):
            link, = struct.unpack_from("<Q", raw, (h * 512 + i) * 64 + 8)
            assert link == (0xFFFFEA0000000000 + head_pfn * 64) | 1


@pytest.mark.parametrize("psize,per,order", [(56, 1, 0), (64, 2, 2), (64, 513, 9), (104, 1, 0)])
def test_memmap_rejects_sizes_and_geometries_it_was_not_built_for(native, psize, per, order):
    """An unsupported P, or fewer/more pages per compound than the order allows, raises MeasureError."""
    with Mapping(native, 4 * PAGE) as m, pytest.raises(MeasureError, match="does not support"):
        native.memmap_init(m.addr, psize=psize, strategy="slow", heads=1, per_compound=per, order=order,
                            start_pfn=0, refcount_reset=True)


@settings(max_examples=60, deadline=None)
@given(size=st.sampled_from(COPY_SIZES), strategy=st.sampled_from(COPY_STRATEGIES),
       offset=st.integers(0, 127), n=st.integers(1, 40))
def test_copy_kernels_copy_exactly_at_any_offset(native, size, strategy, offset, n):
    """n copies of the source land at dst + i * size for any destination offset; bytes around stay."""
    src = bytes((7 * i + 3) % 256 for i in range(size))
    with Mapping(native, 2 * PAGE) as dst, Mapping(native, PAGE) as s:
        dst.prefault()
        dst.write(0, b"\xee" * 2 * PAGE)
        s.write(0, src)
        native.copy_run(dst.addr + offset, s.addr, size=size, strategy=strategy, n=n)
        assert dst.read(offset, n * size) == src * n
        assert dst.read(0, offset) == b"\xee" * offset
        assert dst.read(offset + n * size, 64) == b"\xee" * 64


def test_copy_rejects_a_size_it_was_not_built_for(native):
    """A copy size outside 8..128 step 8 raises MeasureError."""
    with Mapping(native, PAGE) as m, pytest.raises(MeasureError, match="does not support"):
        native.copy_run(m.addr, m.addr + 2048, size=12, strategy="memcpy", n=1)


@pytest.mark.parametrize("npages", [1, 3, 16])
def test_chase_visits_every_page_once_per_lap_and_every_line_once_per_cycle(native, npages):
    """lat_mem_rd -t: each load to another page, each lap a permutation of the pages, the cycle all lines."""
    lines = PAGE // CHASE_STRIDE
    with Mapping(native, npages * PAGE) as m:
        m.prefault()
        start = native.chase_build(m.addr, npages * PAGE, stride=CHASE_STRIDE, seed=5)
        trace = native.chase_trace(m.addr, start, npages * lines + 1)
    pages = [off // PAGE for off in trace]
    for lap in range(lines):
        assert sorted(pages[lap * npages:(lap + 1) * npages]) == list(range(npages))
    if npages > 1:
        assert all(a != b for a, b in zip(pages, pages[1:]))
    cycle = trace[:-1]
    assert sorted(cycle) == [p * PAGE + j * CHASE_STRIDE for p in range(npages) for j in range(lines)]
    assert trace[-1] == trace[0]  # the chain closes


def bit_reversed_lines(n: int) -> list[int]:
    """lmbench's words_initialize(n, stride): line i of a page is line bitreverse(i) (n a power of two)."""
    bits = n.bit_length() - 1
    return [int(f"{i:0{bits}b}"[::-1], 2) * CHASE_STRIDE if bits else 0 for i in range(n)]


def lmbench_thrash_chain(order: list[int]) -> dict[int, int]:
    """thrash_initialize() over the pages `order` (byte offsets): {offset of a line: offset it points to}."""
    words, n, k = bit_reversed_lines(PAGE // CHASE_STRIDE), PAGE // CHASE_STRIDE, len(order)
    chain = {}
    for i, page in enumerate(order):
        for j in range(n):
            nxt = order[0] + words[(j + 1) % n] if i == k - 1 else order[i + 1] + words[(i + j + 1) % n]
            chain[page + words[(i + j) % n]] = nxt
    return chain


def build_and_read(native, npages, working_set, seed):
    """(the chain's first lap of pages, every pointer written {offset: target offset}, start offset)."""
    nbytes = npages * PAGE
    with Mapping(native, nbytes) as m:
        m.prefault()
        start = native.chase_build(m.addr, nbytes, working_set=working_set, stride=CHASE_STRIDE, seed=seed)
        k = (working_set or nbytes) // PAGE
        lap = [off // PAGE * PAGE for off in native.chase_trace(m.addr, start, k)]
        raw = m.read(0, nbytes)
        base = m.addr
    words = struct.unpack(f"<{nbytes // 8}Q", raw)
    written = {8 * i: w - base for i, w in enumerate(words) if w}
    return lap, written, start - base


@pytest.mark.parametrize("npages,k", [(64, 16), (64, 1), (64, 63), (512, 64), (16, 16)])
def test_a_working_set_chain_is_lmbenchs_thrash_chain_over_its_chosen_pages(native, npages, k):
    """base_initialize() + thrash_initialize(): the chain runs through k = working_set / 4 KiB pages of the
    mapping, every pointer where lmbench's formula puts it, no other page written, all inside the mapping."""
    lap, written, start = build_and_read(native, npages, k * PAGE, seed=7)
    assert len(set(lap)) == k and all(0 <= p < npages * PAGE for p in lap)
    assert written == lmbench_thrash_chain(lap)  # exactly the chosen pages' lines, nothing else touched
    assert start == lap[0]  # lmbench starts at the first page's first line (bit-reversed line 0)


@pytest.mark.parametrize("npages,k", [(64, 16), (256, 3), (32, 32)])
def test_a_working_set_chase_visits_each_chosen_page_once_per_lap(native, npages, k):
    """Each load to another chosen page, each lap the same k pages, the cycle every line of them once."""
    lines = PAGE // CHASE_STRIDE
    with Mapping(native, npages * PAGE) as m:
        m.prefault()
        start = native.chase_build(m.addr, npages * PAGE, working_set=k * PAGE, stride=CHASE_STRIDE, seed=11)
        trace = native.chase_trace(m.addr, start, k * lines + 1)
    pages = [off // PAGE for off in trace]
    chosen = sorted(pages[:k])
    assert len(set(chosen)) == k and chosen[-1] < npages
    for lap in range(lines):
        assert sorted(pages[lap * k:(lap + 1) * k]) == chosen
    if k > 1:
        assert all(a != b for a, b in zip(pages, pages[1:]))
    assert sorted(trace[:-1]) == [p * PAGE + j * CHASE_STRIDE for p in chosen for j in range(lines)]
    assert trace[-1] == trace[0]


def test_the_chosen_pages_are_the_first_of_one_shuffle_of_all_pages(native):
    """lmbench shuffles all MAXLEN pages once and a row takes a prefix: with the same seed the working set's
    page order is the first pages of the whole mapping's order, so a smaller set is inside a larger one."""
    full, _, _ = build_and_read(native, 128, None, seed=3)
    for k in (1, 5, 32, 127):
        lap, _, _ = build_and_read(native, 128, k * PAGE, seed=3)
        assert lap == full[:k]


def test_a_working_set_is_scattered_over_the_whole_mapping(native):
    """An eighth of a 1024-page mapping is picked from all of it, not its first eighth: each quarter holds
    between 15% and 35% of the chosen pages."""
    lap, _, _ = build_and_read(native, 1024, 128 * PAGE, seed=1)
    quarters = [sum(1 for p in lap if q * 256 * PAGE <= p < (q + 1) * 256 * PAGE) for q in range(4)]
    assert all(0.15 * 128 <= n <= 0.35 * 128 for n in quarters), quarters


def test_a_working_set_of_the_whole_mapping_is_the_old_chain(native):
    """working_set = length (or not given) chains every page, pointer for pointer the same chain."""
    none = build_and_read(native, 48, None, seed=9)
    whole = build_and_read(native, 48, 48 * PAGE, seed=9)
    assert none == whole and sorted(none[0]) == [p * PAGE for p in range(48)]
    assert none[1] == lmbench_thrash_chain(none[0])


@pytest.mark.parametrize("working_set", [17 * PAGE, PAGE + 8, 4096 * 3 // 2])
def test_chase_build_refuses_a_working_set_that_is_not_whole_pages_of_the_mapping(native, working_set):
    """More than the mapping, or not a multiple of 4 KiB: MeasureError, nothing built."""
    with Mapping(native, 16 * PAGE) as m, pytest.raises(MeasureError, match="failed"):
        native.chase_build(m.addr, 16 * PAGE, working_set=working_set)


def test_chase_samples_whole_cycles_when_short_else_whole_laps():
    """A working set whose full cycle (every line once) is shorter than CHASE_LOADS is timed over whole
    cycles, as many as fit, as lmbench goes round it for its whole interval; a larger one over whole laps
    (every page once each) of about CHASE_LOADS."""
    for length in (PAGE, 64 * PAGE, 1 << 20, 1 << 30, 1 << 34):
        loads, npages = chase_loads(length), length // PAGE
        cycle = npages * (PAGE // CHASE_STRIDE)
        if cycle <= CHASE_LOADS:
            assert loads % cycle == 0 and CHASE_LOADS - cycle < loads <= CHASE_LOADS
        else:
            assert loads % npages == 0 and CHASE_LOADS <= loads < CHASE_LOADS + npages


def test_chase_build_refuses_a_stride_that_is_not_a_power_of_two(native):
    """A bad stride (or size) gives MeasureError, not a corrupt chain."""
    with Mapping(native, PAGE) as m, pytest.raises(MeasureError, match="failed"):
        native.chase_build(m.addr, PAGE, stride=48)


@pytest.mark.parametrize("vector", [False, True])
def test_nt_stream_writes_every_line(native, vector):
    """The NT write-bandwidth routines (MOVNTI, MOVNTDQ) store the pattern over the whole range."""
    with Mapping(native, 4 * PAGE) as m:
        m.prefault()
        native.nt_stream(m.addr, 4 * PAGE, vector=vector)
        assert m.read(0, 4 * PAGE) == b"\x5a" * 4 * PAGE


def test_stream_copy_copies_the_mapping(native):
    """The memcpy_seq routine copies all bytes."""
    data = bytes(range(256)) * 64
    with Mapping(native, len(data)) as a, Mapping(native, len(data)) as b:
        a.write(0, data)
        native.stream_copy(b.addr, a.addr, len(data))
        assert b.read(0, len(data)) == data


def test_a_nohugepage_mapping_has_no_huge_pages(native):
    """MADV_NOHUGEPAGE keeps a 2 MiB-aligned mapping on 4 KiB pages: smaps shows no AnonHugePages."""
    nbytes = 4 << 20
    with Mapping(native, nbytes) as m:
        assert m.advise(0, nbytes, False)
        m.prefault()
        assert anon_huge_bytes(m.addr, nbytes) == 0


@pytest.mark.parametrize("heads,per,order,seg", [(300, 1, 0, 64), (300, 1, 0, 300), (7, 4, 2, 2), (3, 512, 9, 1)])
def test_memmap_segments_cover_the_run_and_leave_the_same_bytes(native, heads, per, order, seg):
    """Timed in segments of `seg` heads: one non-negative time per segment, and the same struct pages."""
    whole = init(native, 80, "template_nt", heads, per, order, 1 << 20, reset=order == 0)
    nbytes = heads * per * 80
    with Mapping(native, nbytes) as m:
        m.prefault()
        times = native.memmap_init(m.addr, psize=80, strategy="template_nt", heads=heads, per_compound=per,
                                    order=order, start_pfn=1 << 20, refcount_reset=order == 0, segment_heads=seg)
        assert m.read(0, nbytes) == whole
    assert len(times) == -(-heads // seg) and all(t >= 0 for t in times)


def test_a_chase_continues_where_the_last_one_stopped(native):
    """chase(start, a) then chase(end, b) stops where chase(start, a + b) does: slices walk one chain."""
    with Mapping(native, 16 * PAGE) as m:
        m.prefault()
        start = native.chase_build(m.addr, 16 * PAGE, stride=CHASE_STRIDE, seed=3)
        _, middle = native.chase(start, 100)
        _, end = native.chase(middle, 37)
        _, direct = native.chase(start, 137)
        trace, base = native.chase_trace(m.addr, start, 138), m.addr
    assert end == direct == base + trace[137] and middle == base + trace[100]
