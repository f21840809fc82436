"""Measurement plans (each model's `measurement` planner, workers/models/*_measure.py, and the generic pieces
of workers/measure/plans.py): what each point maps and runs, or why it cannot be measured."""

from __future__ import annotations

import polars as pl
import pytest

from workers.evaluate import evaluate
from workers.measure import plans
from workers.measure.measure import planned
from workers.measure.host import machine_arch
from workers.models.copy import MODEL as COPY
from workers.models.memmap import MODEL as MEMMAP
from workers.models.pfnmap import MODEL as PFNMAP
from workers.models.pfnmap.measure import PfnmapPlan
from workers.profiles import load_profile
from workers.units import GiB, MiB

OTHER_ARCH = "arm64" if machine_arch() == "x86_64" else "x86_64"


@pytest.mark.parametrize("row", [
    {"namespace_size": "100GiB", "mode": "fsdax"},
    {"namespace_size": "100GiB", "mode": "devdax"},
    {"namespace_size": "8GiB", "mode": "devdax", "map": "mem"},  # vmemmap-optimized: 128 of 512 written
    {"namespace_size": "8GiB", "mode": "devdax", "map": "mem", "struct_page_size": 80},  # not optimized
    {"namespace_size": "4GiB", "mode": "devdax", "align": "1GiB", "map": "mem", "struct_page_size": 96},
])
def test_memmap_plans_write_the_struct_pages_the_model_counts(points, row):
    """heads x per_compound of the plan = the model's struct pages written by memmap_init_zone_device()."""
    frame = points(MEMMAP, row)
    (plan,) = MEMMAP.measurement.plan(frame)
    model = evaluate(MEMMAP, frame, load_profile("seed")).row(0, named=True)
    assert plan.heads == model["metric_heads"]
    assert plan.heads * plan.per_compound == model["metric_struct_pages_written"] - model["metric_area_pages"]
    assert plan.memory >= plan.heads * plan.per_compound * plan.psize


def test_a_100gib_fsdax_memmap_needs_about_1_5gib_of_struct_pages(points):
    """100 GiB at P = 64, map=dev: 25.8M data pfns (26.2M less the memmap area) x 64 bytes = 1.54 GiB."""
    (plan,) = MEMMAP.measurement.plan(points(MEMMAP, {"namespace_size": "100GiB", "mode": "fsdax"}))
    assert 1.5 * GiB < plan.memory < 1.6 * GiB
    assert plan.refcount_reset and plan.order == 0 and plan.strategy == "template_nt_inline"


def test_memmap_sizes_without_a_compiled_analog_are_refused(points):
    """P = 56 is a legal axis value but has no routine: the reason names the built sizes."""
    (reason,) = MEMMAP.measurement.plan(points(MEMMAP, {"struct_page_size": 56, "map": "mem"}))
    assert isinstance(reason, str) and "64, 72, 80, 88, 96" in reason


@pytest.mark.parametrize("size,strategy,inline,routine", [
    (64, "nt_inline", "mainline", "nt_call"), (64, "nt_inline", "patched", "nt_inline"),
    (72, "nt_inline", "patched", "nt_call"), (56, "nt_inline", "patched", "nt_call"),
    (64, "memcpy", "patched", "memcpy"), (96, "nt_call", "patched", "nt_call"),
])
def test_copy_plans_pick_the_routine_the_inline_set_implies(points, size, strategy, inline, routine):
    """nt_inline is inline MOVNTI only for sizes in the inline set; otherwise the out-of-line call."""
    (plan,) = COPY.measurement.plan(points(COPY, {"struct_page_size": size, "strategy": strategy,
                                                  "inline_sizes": inline, "namespace_size": "1MiB", "dst_offset": 8}))
    assert (plan.strategy, plan.n, plan.dst_offset) == (routine, (1 * MiB) // size, 8)


@pytest.mark.parametrize("row,huge,offset", [
    ({"compound_order": 0}, False, 0),
    ({"compound_order": 9}, True, 0),
    ({"compound_order": "auto"}, True, 0),
    ({"compound_order": 9, "va_offset": 4096}, False, 4096),  # (va - pa) not 2 MiB aligned: no huge leaves
    ({"compound_order": 9, "align": "64KiB"}, True, 64 * 1024),  # the start sits 64 KiB into a 2 MiB block
])
def test_pfnmap_plans_honour_order_and_placement(points, row, huge, offset):
    """4 KiB vs THP mapping and the offset into the first 2 MiB block follow the pfnmap rules."""
    frame = points(PFNMAP, {"arch": machine_arch(), "namespace_size": "8MiB", "align": "1GiB", **row})
    (plan,) = PFNMAP.measurement.plan(frame)
    assert (plan.huge, plan.offset) == (huge, offset)
    assert plan.span % (2 * MiB) == 0 and plan.span >= plan.offset + plan.length


@pytest.mark.parametrize("row,match", [
    ({"arch": OTHER_ARCH}, f"arch={OTHER_ARCH} cannot be measured"),
    ({"arch": machine_arch(), "compound_order": 18}, "1 GiB leaves"),
])
def test_pfnmap_points_this_node_cannot_honour_are_refused(points, row, match):
    """Another architecture, or PUD leaves, give a reason instead of a plan."""
    (reason,) = PFNMAP.measurement.plan(points(PFNMAP, row))
    assert isinstance(reason, str) and match in reason


@pytest.mark.parametrize("access", ["lat_mem_rd_random", "memcpy_seq"])
@pytest.mark.parametrize("working_set,expected", [("2MiB", 2 * MiB), ("all", None), ("8MiB", None)])
def test_pfnmap_plans_carry_the_working_set(points, access, working_set, expected):
    """The access touches working_set bytes of the whole mapping; 'all' (or the whole mapping) is None."""
    frame = points(PFNMAP, {"arch": machine_arch(), "namespace_size": "8MiB", "compound_order": 0,
                            "access": access, "working_set": working_set})
    (plan,) = PFNMAP.measurement.plan(frame)
    assert (plan.length, plan.working_set, plan.touched) == (8 * MiB, expected, expected or 8 * MiB)
    assert plan.span == 8 * MiB  # the whole mapping is mapped (and pre-faulted), whatever the working set


@pytest.mark.parametrize("column", [None, -1])
def test_a_points_frame_without_a_working_set_measures_the_whole_mapping(points, column):
    """A frame from before the axis (no column), or -1 (not given), touches every page, as before."""
    frame = points(PFNMAP, {"arch": machine_arch(), "namespace_size": "4MiB", "compound_order": 0})
    frame = (frame.drop("param_working_set") if column is None
             else frame.with_columns(pl.lit(column, pl.Int64).alias("param_working_set")))
    (plan,) = PFNMAP.measurement.plan(frame)
    assert plan.working_set is None and plan.touched == 4 * MiB


@pytest.mark.parametrize("working_set", [0, 6000, 16 * MiB])
def test_a_working_set_the_chase_cannot_visit_is_refused(points, working_set):
    """Not whole pages of the mapping: a reason, not a plan (the model refuses these points first)."""
    frame = points(PFNMAP, {"arch": machine_arch(), "namespace_size": "8MiB", "compound_order": 0})
    frame = frame.with_columns(pl.lit(working_set, pl.Int64).alias("param_working_set"))
    (reason,) = PFNMAP.measurement.plan(frame)
    assert isinstance(reason, str) and "working_set" in reason


def test_a_working_set_chase_samples_laps_over_its_own_pages(native):
    """The chase of a 1 MiB working set in an 8 MiB mapping times whole laps of its 256 pages, in slices."""
    plan = PfnmapPlan(length=8 * MiB, offset=0, huge=False, copy=False, working_set=1 * MiB)
    with plan.open(native) as run:
        stretches = run.sample()
    loads = sum(n for _, n in stretches)
    assert loads == plans.chase_loads(1 * MiB) and loads % 256 == 0
    assert all(n <= plans.SLICE_LOADS for _, n in stretches) and run.per_unit


def test_a_chase_sample_starts_warm_and_times_only_its_own_loads():
    """Before each sample an untimed pass (the full cycle when short, else whole laps) puts the chain back in
    its steady state, as lmbench's timed intervals are: only the sample's loads are timed, in slices."""
    calls = []

    class FakeNative:
        def chase(self, at, n):
            calls.append(n)
            return 10 * n, at + n

    chain = plans.Chain(FakeNative(), 0)
    assert chain.follow(3 * plans.SLICE_LOADS, warm=1000) == [(10 * plans.SLICE_LOADS, plans.SLICE_LOADS)] * 3
    assert calls == [1000] + [plans.SLICE_LOADS] * 3 and chain.at == 1000 + 3 * plans.SLICE_LOADS
    lines = plans.PAGE // plans.CHASE_STRIDE
    for ws in (plans.PAGE, 1 * MiB, 16 * MiB, 64 * MiB, 1 * GiB, 16 * GiB):
        warm, npages = plans.chase_warm_loads(ws), ws // plans.PAGE
        assert warm % npages == 0 and npages <= warm <= npages * lines
        if npages * lines <= plans.CHASE_WARM_LOADS:
            assert warm == npages * lines  # a working set that fits a cache is all in it


def test_a_working_set_copy_copies_its_first_bytes(native, monkeypatch):
    """memcpy_seq copies the first working_set bytes of the region (the model's sequential_copy)."""
    copied = []
    monkeypatch.setattr(type(native), "stream_copy", lambda self, dst, src, n: copied.append(n) or 1)
    plan = PfnmapPlan(length=4 * MiB, offset=4096, huge=False, copy=True, working_set=64 * 1024)
    with plan.open(native) as run:
        run.sample()
    assert copied == [64 * 1024] and plan.memory == 2 * plan.span


def test_a_streaming_copy_maps_two_regions():
    """memcpy_seq needs a source and a destination of the span each."""
    plan = PfnmapPlan(length=3 * MiB, offset=4096, huge=True, copy=True)
    assert plan.span == 4 * MiB and plan.memory == 8 * MiB


def test_young_has_no_analog(points):
    """Every young point gets the reason young's measurement declares."""
    from workers.models.young import MODEL as YOUNG

    assert not YOUNG.measurement.measurable and "no user-space analog" in YOUNG.measurement.reason
    reasons = planned(YOUNG, pl.concat([points(YOUNG, {}), points(YOUNG, {})]))
    assert reasons == [YOUNG.measurement.reason] * 2


def test_a_total_time_floor_sums_each_segments_fastest_repeat():
    """memmap-like runs: values are the repeats' totals; the floor takes each segment's best repeat."""
    run = plans.Run(sample=lambda: [], scale=1e-6)
    runs = [[(100, 1), (500, 1)], [(300, 1), (200, 1)]]  # a burst hit segment 2 of repeat 1, segment 1 of repeat 2
    s = plans.summarize(run, runs)
    assert s.values == pytest.approx((600e-6, 500e-6)) and s.floor == pytest.approx(300e-6)
    assert s.floor < min(s.values)  # no single repeat was undisturbed throughout


def test_a_per_unit_floor_is_the_fastest_slice():
    """chase-like runs: values are ns per load of each repeat; the floor its fastest slice."""
    run = plans.Run(sample=lambda: [], scale=1.0, per_unit=True, huge_pages=True)
    s = plans.summarize(run, [[(400, 2), (900, 3)], [(500, 5)]])
    assert s.values == pytest.approx((260.0, 100.0)) and s.floor == pytest.approx(100.0)
    assert s.huge_pages is True


def test_a_stretch_timed_at_zero_is_left_out_of_the_floor():
    """A stretch of 0 ns measured nothing (the clock did not move on): the floor is the least time measured."""
    total = plans.summarize(plans.Run(sample=lambda: [], scale=1e-6), [[(0, 1)], [(300, 1)], [(250, 1)]])
    assert total.floor == pytest.approx(250e-6)
    per_unit = plans.summarize(plans.Run(sample=lambda: [], scale=1.0, per_unit=True), [[(0, 2), (900, 3)]])
    assert per_unit.floor == pytest.approx(300.0)
