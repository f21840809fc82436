"""The memmap model (workers/models/memmap.py, memmap_layout.py): kernel counts, feasibility, pricing, figures."""

from __future__ import annotations

import re

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workers.calibrate import calibrate, predict
from workers.evaluate import evaluate
from workers.models import copy as cp
from workers.models.memmap import MODEL, STRATEGIES
from workers.profiles import load_profile
from workers.model import points_frame

PROFILE = load_profile("seed")
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


def frame(*rows: dict) -> pl.DataFrame:
    """A points frame from partial rows (missing axes take their defaults)."""
    return points_frame(MODEL, rows)


def run(*rows: dict, profile=PROFILE) -> pl.DataFrame:
    return evaluate(MODEL, frame(*rows), profile)


def row(**params) -> dict:
    return run(params).row(0, named=True)


# Hand-derived from nd_pfn_init() (drivers/nvdimm/pfn_devs.c) and memmap_init_zone_device() /
# memmap_init_compound() / compound_nr_pages() (mm/mm_init.c), start = 0, S = 100 GiB unless noted:
#   npfns = (S - 8K)/4K = 26214398; A' = max(align, 2M); end_trunc = S mod A'
#   map=dev: offset = ALIGN(8K + max(P, 64 if no KMSAN) * npfns, A'); map=mem: offset = A'
#   R = (S - end_trunc)/4K; D = R - offset/4K; area (memmap_init_range) = offset/4K - 2
#   map=dev walks D pfns, map=mem walks R; heads = walked / 2^k; optimized: 2*4096/P pages per compound
LAYOUTS = [
    # fsdax, P=64, 2M: 8K + 64*26214398 = 1677729664 -> 801 x 2M = 1679818752; data pfns from 410112 to
    # 26214400: section-aligned pfns 13 x 32768 .. 799 x 32768 -> 787 cond_resched
    (dict(), dict(offset=1679818752, end_trunc=0, R=26214400, D=25804288, area=410110, heads=25804288,
                  tails_w=0, tails_a=0, optimized=False, resched=787)),
    # align 4K still pads to 2M (memremap_compat_align): same layout as 2M
    (dict(align="4KiB"), dict(offset=1679818752, end_trunc=0, R=26214400, D=25804288, area=410110,
                              heads=25804288, tails_w=0, tails_a=0, optimized=False, resched=787)),
    # 1 GiB + 3 MiB + 4 KiB, not a multiple of align: end_trunc = 1M + 4K; npfns = 262911;
    # 8K + 64*262911 = 16834496 -> 9 x 2M = 18874368; R = (1G + 2M)/4K = 262656; D = 262656 - 4608;
    # pfns 4608 .. 262656 hold 1 x 32768 .. 8 x 32768 -> 8 cond_resched
    (dict(namespace_size=GiB + 3 * MiB + 4 * KiB),
     dict(offset=18874368, end_trunc=1052672, R=262656, D=258048, area=4606, heads=258048, tails_w=0,
          tails_a=0, optimized=False, resched=8)),
    # P=72 with NVDIMM_KMSAN: 8K + 72*26214398 = 1887444848 -> 901 x 2M = 1889533952; data from pfn 461312:
    # section-aligned pfns 15 x 32768 .. 799 x 32768 -> 785 cond_resched
    (dict(struct_page_size=72, nvdimm_kmsan=True),
     dict(offset=1889533952, end_trunc=0, R=26214400, D=25753088, area=461310, heads=25753088, tails_w=0,
          tails_a=0, optimized=False, resched=785)),
    # P=96 with NVDIMM_KMSAN: 8K + 96*26214398 = 2516590400 -> 1201 x 2M = 2518679552; from pfn 614912:
    # 19 x 32768 .. 799 x 32768 -> 781
    (dict(struct_page_size=96, nvdimm_kmsan=True),
     dict(offset=2518679552, end_trunc=0, R=26214400, D=25599488, area=614910, heads=25599488, tails_w=0,
          tails_a=0, optimized=False, resched=781)),
    # devdax 2M (k=9) map=dev: the altmap forbids the optimization: 50399 heads x 511 tails
    (dict(mode="devdax"), dict(offset=1679818752, end_trunc=0, R=26214400, D=25804288, area=410110,
                               heads=50399, tails_w=50399 * 511, tails_a=0, optimized=False, resched=787)),
    # devdax 1G (k=18) map=dev: 1677729664 -> 2 x 1G; D = 98 x 2^18; every head is section aligned
    (dict(mode="devdax", align="1GiB"),
     dict(offset=2 * GiB, end_trunc=0, R=26214400, D=98 * 262144, area=524286, heads=98,
          tails_w=98 * 262143, tails_a=0, optimized=False, resched=98)),
    # devdax 4K: vmemmap_shift 0, every pfn a head
    (dict(mode="devdax", align="4KiB"), dict(offset=1679818752, end_trunc=0, R=26214400, D=25804288,
                                             area=410110, heads=25804288, tails_w=0, tails_a=0,
                                             optimized=False, resched=787)),
    # fsdax map=mem: offset = 2M, all R pfns walked from the namespace start (800 sections)
    (dict(map="mem"), dict(offset=2 * MiB, end_trunc=0, R=26214400, D=26213888, area=0, heads=26214400,
                           tails_w=0, tails_a=0, optimized=False, resched=800)),
    # devdax 2M map=mem P=64: 512*64/4096 = 8 > 2 -> optimized, 2*4096/64 = 128 written per compound
    (dict(mode="devdax", map="mem"),
     dict(offset=2 * MiB, end_trunc=0, R=26214400, D=26213888, area=0, heads=51200, tails_w=51200 * 127,
          tails_a=51200 * 384, optimized=True, resched=800)),
    # devdax 2M map=mem P=80 / P=96: not a power of two -> no optimization, every tail written
    (dict(mode="devdax", map="mem", struct_page_size=80),
     dict(offset=2 * MiB, end_trunc=0, R=26214400, D=26213888, area=0, heads=51200, tails_w=51200 * 511,
          tails_a=0, optimized=False, resched=800)),
    (dict(mode="devdax", map="mem", struct_page_size=96, align="1GiB"),
     dict(offset=GiB, end_trunc=0, R=26214400, D=99 * 262144, area=0, heads=100, tails_w=100 * 262143,
          tails_a=0, optimized=False, resched=100)),
    # devdax 1G map=mem P=64: 100 compounds of 2^18, 128 written each
    (dict(mode="devdax", map="mem", align="1GiB"),
     dict(offset=GiB, end_trunc=0, R=26214400, D=99 * 262144, area=0, heads=100, tails_w=100 * 127,
          tails_a=100 * (262144 - 128), optimized=True, resched=100)),
]


@pytest.mark.parametrize("params,want", LAYOUTS, ids=[str(p) for p, _ in LAYOUTS])
def test_layout_and_counts_match_the_kernel_formulas(params, want):
    """Offset, end_trunc, pfns, heads, tails written/aliased, dedup and cond_resched match hand derivations."""
    r = row(**params)
    assert r["status"] == "ok", r["reason"]
    got = dict(offset=r["metric_offset_bytes"], end_trunc=r["metric_end_trunc_bytes"], R=r["metric_pfns_in_range"],
               D=r["metric_data_pfns"], area=r["metric_area_pages"], heads=r["metric_heads"],
               tails_w=r["metric_tails_written"], tails_a=r["metric_tails_aliased"],
               optimized=r["metric_vmemmap_optimized"], resched=r["metric_cond_resched"])
    assert got == want
    covered = want["R"] - 2 if params.get("map", "dev") == "dev" else want["R"]
    assert r["metric_pfns_covered"] == covered
    assert r["metric_struct_pages_written"] + r["metric_tails_aliased"] == covered


@pytest.mark.parametrize("psize", [64, 72, 80, 96])
@pytest.mark.parametrize("align", ["2MiB", "1GiB"])
@pytest.mark.parametrize("map_", ["dev", "mem"])
def test_vmemmap_dedup_only_for_map_mem_and_power_of_two_struct_pages(psize, align, map_):
    """vmemmap_can_optimize(): no altmap and P a power of two; 80- and 96-byte struct pages lose it."""
    r = row(mode="devdax", struct_page_size=psize, align=align, map=map_, nvdimm_kmsan=True)
    assert r["metric_vmemmap_optimized"] == (map_ == "mem" and psize == 64)
    expected_dram = 0 if map_ == "dev" else (r["metric_heads"] * 2 * 4096 if psize == 64 else 26214400 * psize)
    assert r["metric_memmap_dram_bytes"] == expected_dram


def test_memmap_bytes_and_overhead():
    """map=dev gives up offset - 8K of the namespace to the memmap; map=mem puts R x P bytes in DRAM."""
    dev, mem = run({}, {"map": "mem"}).rows(named=True)
    assert (dev["metric_memmap_device_bytes"], dev["metric_memmap_dram_bytes"]) == (1679818752 - 8192, 0)
    assert dev["metric_overhead_fraction"] == pytest.approx((1679818752 - 8192) / (100 * GiB))
    assert (mem["metric_memmap_device_bytes"], mem["metric_memmap_dram_bytes"]) == (0, 26214400 * 64)


def test_store_counts_per_kind_and_strategy():
    """fsdax slow: 19 stores a page (8 zeroing + 7 + 3 + refcount reset); devdax slow: per compound 18 (head,
    no reset for MEMORY_DEVICE_GENERIC) + 511 x 22 (tail: + prep_compound_tail 3 + refcount) + 11 (compound);
    template: one seed (19 + 8 into the template) then 8 stores per copy."""
    fs_slow, fs_tmpl, dd_slow = run({"strategy": "slow"}, {"strategy": "template"},
                                    {"strategy": "slow", "mode": "devdax"}).rows(named=True)
    assert fs_slow["metric_stores"] == 19 * 25804288
    assert dd_slow["metric_stores"] == 50399 * (18 + 511 * 22 + 11)
    assert fs_tmpl["metric_stores"] == 19 + 8 + 8 * (25804288 - 1)
    assert fs_tmpl["metric_bytes_stored"] == 25804288 * 64


def test_copy_calls_follow_the_copy_model_inline_sets():
    """template_nt calls __memcpy_flushcache for every copy; template_nt_inline only for sizes outside 4..96."""
    nt, inl64, inl72, inl80 = run(
        {"strategy": "template_nt"}, {"strategy": "template_nt_inline"},
        {"strategy": "template_nt_inline", "struct_page_size": 72, "nvdimm_kmsan": True},
        {"strategy": "template_nt_inline", "struct_page_size": 80, "nvdimm_kmsan": True},
    ).rows(named=True)
    assert nt["metric_copy_calls"] == 25804288 - 1
    assert inl64["metric_copy_calls"] == 0 and inl80["metric_copy_calls"] == 0
    assert inl72["metric_copy_calls"] == inl72["metric_data_pfns"] - 1
    assert cp.instructions(72, 0, cp.NT_INLINE, True)["calls"] == 1


def test_copy_costs_come_from_the_copy_section():
    """Doubling copy.call_ns moves template_nt by one call per copy and leaves template untouched."""
    slower = PROFILE.with_values({("copy", "call_ns"): 2 * PROFILE.value("copy", "call_ns")}, source="assumed")
    rows = ({"strategy": "template_nt"}, {"strategy": "template"})
    base_nt, base_t = run(*rows)["metric_compute_ms"].to_list()
    new_nt, new_t = run(*rows, profile=slower)["metric_compute_ms"].to_list()
    calls = 25804288 - 1 + 787  # copies + cond_resched
    assert (new_nt - base_nt) * 1e6 == pytest.approx(calls * PROFILE.value("copy", "call_ns"))
    assert new_t == pytest.approx(base_t + 787 * PROFILE.value("copy", "call_ns") / 1e6)


def test_non_temporal_compounds_pay_serialized_misses():
    """devdax NT strategies take 3 serialized misses per compound (order > 1); fsdax and cached ones none."""
    dd_nt, dd_t, fs_nt = run({"mode": "devdax", "strategy": "template_nt"}, {"mode": "devdax", "strategy": "template"},
                             {"strategy": "template_nt"}).rows(named=True)
    assert (dd_nt["metric_serial_misses"], dd_t["metric_serial_misses"], fs_nt["metric_serial_misses"]) == (
        3 * 50399, 0, 0)
    assert dd_nt["metric_stall_ms"] == pytest.approx(3 * 50399 * PROFILE.value("copy", "dram_latency_ns") / 1e6)


def test_small_namespaces_are_priced_at_llc_not_dram():
    """A 64 MiB namespace's cached memmap (1 MiB) is priced at LLC bandwidth; with a cold LLC it is a DRAM stream."""
    cold = PROFILE.with_values({("copy", "warm_llc"): 0.0}, source="assumed")
    warm = row(namespace_size="64MiB", strategy="template")
    dram = run({"namespace_size": "64MiB", "strategy": "template"}, profile=cold).row(0, named=True)
    assert warm["metric_bound_ms"] < 0.5 * dram["metric_bound_ms"]
    per_line_dram = 1 / PROFILE.value("copy", "dram_rfo_gbs") + 1 / PROFILE.value("copy", "dram_write_gbs")
    assert dram["metric_bound_ms"] * 1e6 == pytest.approx(warm["metric_lines_stored"] * 64 * per_line_dram)


INFEASIBLE = [
    (dict(struct_page_size=104, map="mem"), "above 96 bytes does not build"),
    (dict(align="64KiB"), "align must be 4KiB, 2MiB or 1GiB"),
    (dict(start_offset=4096), "start_offset must be a multiple of 2MiB"),
    (dict(compound_order=9), "fsdax \\(nd_pmem\\) maps order-0 pages"),
    (dict(mode="devdax", compound_order=0), "order_base_2\\(align / 4KiB\\)"),
    (dict(struct_page_size=80), "needs CONFIG_NVDIMM_KMSAN"),
    (dict(mode="devdax", map="mem", align="1GiB", start_offset=2 * MiB), "start_offset must be a multiple of align"),
    (dict(namespace_size="2MiB"), "namespace too small"),
    (dict(namespace_size="1GiB", align="1GiB"), "namespace too small"),
]


@pytest.mark.parametrize("params,reason", INFEASIBLE, ids=[r for _, r in INFEASIBLE])
def test_impossible_points_are_kept_with_a_reason(params, reason):
    """A point the kernel refuses is a row with status infeasible, a readable reason and null metrics."""
    r = row(**params)
    assert r["status"] == "infeasible"
    assert re.search(reason, r["reason"]), r["reason"]
    assert r["metric_init_ms"] is None and r["metric_heads"] is None


def test_devdax_with_a_matching_explicit_order_equals_auto():
    """compound_order 9 on a 2 MiB devdax namespace is what "auto" resolves to."""
    auto, nine = run({"mode": "devdax"}, {"mode": "devdax", "compound_order": 9}).rows(named=True)
    assert auto["metric_compound_order"] == nine["metric_compound_order"] == 9
    assert auto["metric_init_ms"] == nine["metric_init_ms"]


def test_data_pfns_can_shrink_when_the_namespace_grows_by_4k():
    """nd_pfn_init() pads the memmap to 2 MiB: 4 KiB more namespace can cost 512 data pfns (a kernel
    property, which is why the monotonicity property below steps by whole sections and alignments)."""
    s = 1207443456
    a, b = run({"namespace_size": s}, {"namespace_size": s + 4096}).rows(named=True)
    assert b["metric_data_pfns"] == a["metric_data_pfns"] - 512
    assert b["metric_struct_pages_written"] == a["metric_struct_pages_written"]  # all R - 2 pfns either way


def test_figures_and_free_parameters():
    """Eight memmap figures with stable ids, fit by 4 costs shared by all kinds, modes and strategies ([copy])."""
    ids = [f.id for f in MODEL.figures()]
    assert ids == [f"memmap/{m}/{s}" for m in ("fsdax", "devdax") for s in STRATEGIES]
    assert {f.metric for f in MODEL.figures()} == {"metric_init_ms"}
    assert len(MODEL.free_params) == 4 and {p.section for p in MODEL.free_params} == {"copy"}


def test_shipped_seed_profile_reproduces_the_figures_and_speedups():
    """The calibrated seed profile: each figure within 10%, slow / template_nt_inline 2.52x and 2.30x within 10%."""
    figs = MODEL.figures()
    got = predict(MODEL, figs, PROFILE)
    for f, v in zip(figs, got):
        assert v == pytest.approx(f.published, rel=0.10), f.id
    assert got[0] / got[3] == pytest.approx(2.52, rel=0.10)
    assert got[4] / got[7] == pytest.approx(2.30, rel=0.10)
    assert {PROFILE.sections["copy"][p.key].source for p in MODEL.free_params} == {"calibrated"}


def test_calibration_leave_one_out_within_25_percent():
    """Refitting the 4 costs without any one figure predicts it within 25%."""
    cal = calibrate(MODEL, PROFILE)
    assert cal.max_error < 0.10
    assert cal.max_loo_error < 0.25


SIZES_STEP = st.integers(1, 64)


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 400), grow=SIZES_STEP, mode=st.sampled_from(["fsdax", "devdax"]),
       map_=st.sampled_from(["dev", "mem"]), align=st.sampled_from(["4KiB", "2MiB", "1GiB"]),
       psize=st.sampled_from([56, 64, 72, 80, 88, 96]), strategy=st.sampled_from(STRATEGIES))
def test_init_time_never_decreases_as_the_namespace_grows(k, grow, mode, map_, align, psize, strategy):
    """In whole steps of max(align', 128 MiB section), a bigger namespace never initializes faster; the
    bandwidth bound never exceeds the modeled time; counts are non-negative integers that conserve pfns."""
    step = max({"4KiB": 2 * MiB, "2MiB": 2 * MiB, "1GiB": GiB}[align], 128 * MiB)
    base = {"mode": mode, "map": map_, "align": align, "struct_page_size": psize, "strategy": strategy,
            "nvdimm_kmsan": True}
    out = run({**base, "namespace_size": k * step}, {**base, "namespace_size": (k + grow) * step})
    ok = out.filter(pl.col("status") == "ok")
    for r in ok.rows(named=True):
        assert r["metric_bound_ms"] <= r["metric_init_ms"]
        assert r["metric_struct_pages_written"] + r["metric_tails_aliased"] == r["metric_pfns_covered"]
        assert min(r[c] for c in MODEL.metrics if MODEL.metrics[c] == pl.Int64) >= 0
    if ok.height == 2:
        small, big = ok["metric_init_ms"].to_list()
        assert big >= small
    for c, dt in MODEL.metrics.items():
        assert out.schema[c] == dt


def test_every_metric_is_documented():
    """Each metric column has a one-line doc for the README schema table."""
    assert set(MODEL.metric_docs) == set(MODEL.metrics)
