"""The memmap model (workers/models/memmap/__init__.py, layout.py): kernel counts, feasibility, pricing, figures."""

from __future__ import annotations

import re

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workers.calibrate import predict
from workers.evaluate import evaluate
from workers.models import copy as cp
from workers.models import incore
from workers.models.memmap import MODEL, STRATEGIES, pmem_costs, work
from workers.exceptions import ProfileError
from workers.profiles import Profile, load_profile
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
    # P=80 with NVDIMM_KMSAN: 8K + 80*26214398 = 2097160032 -> 1001 x 2M = 2099249152; data from pfn 512512:
    # section-aligned pfns 16 x 32768 .. 799 x 32768 -> 784 cond_resched
    (dict(struct_page_size=80, nvdimm_kmsan=True),
     dict(offset=2099249152, end_trunc=0, R=26214400, D=25701888, area=512510, heads=25701888, tails_w=0,
          tails_a=0, optimized=False, resched=784)),
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


@pytest.mark.parametrize("psize", [64, 80, 96])
@pytest.mark.parametrize("align", ["2MiB", "1GiB"])
@pytest.mark.parametrize("map_", ["dev", "mem"])
def test_vmemmap_dedup_only_for_map_mem_and_power_of_two_struct_pages(psize, align, map_):
    """vmemmap_can_optimize(): no altmap and P a power of two; 80- and 96-byte struct pages lose it. Struct pages
    in DRAM (the DRAM bytes less the page tables): none with map=dev (whole sections, altmap leaves), 2 pages per
    compound when optimized, else R x P in 2 MiB leaves (R x P is a whole number of them here)."""
    r = row(mode="devdax", struct_page_size=psize, align=align, map=map_, nvdimm_kmsan=True)
    assert r["metric_vmemmap_optimized"] == (map_ == "mem" and psize == 64)
    expected = 0 if map_ == "dev" else (r["metric_heads"] * 2 * 4096 if psize == 64 else 26214400 * psize)
    assert r["metric_memmap_dram_bytes"] - r["metric_vmemmap_pt_bytes"] == expected


def test_memmap_bytes_and_overhead():
    """map=dev gives up offset - 8K of the namespace to the memmap and keeps only the 2 PMD tables of its 1600 MiB
    vmemmap in DRAM; map=mem puts R x P bytes (800 PMD leaves) in DRAM plus the same 2 PMD tables."""
    dev, mem = run({}, {"map": "mem"}).rows(named=True)
    assert (dev["metric_memmap_device_bytes"], dev["metric_memmap_dram_bytes"]) == (1679818752 - 8192, 2 * 4096)
    assert dev["metric_overhead_fraction"] == pytest.approx((1679818752 - 8192 + 8192) / (100 * GiB))
    assert (mem["metric_memmap_device_bytes"], mem["metric_memmap_dram_bytes"]) == (0, 26214400 * 64 + 2 * 4096)


# Every DRAM byte of a bind, from the kernel's vmemmap population (mm/sparse-vmemmap.c, arch/x86/mm/init_64.c
# vmemmap_populate()); PTE table = 2 MiB of vmemmap, PMD table = 1 GiB of vmemmap, each a 4 KiB page.
DRAM_BYTES = [
    # devdax 1 TiB, align 1 GiB, P=64, map=mem: optimized. 1024 compounds x 2 vmemmap pages (head + tail page,
    # vmemmap_populate_compound_pages()) = 8 MiB; the 16 GiB span (2^28 pfns x 64) is all 4 KiB PTEs:
    # 8192 PTE tables (32 MiB) + 16 PMD tables
    (dict(mode="devdax", align="1GiB", namespace_size="1TiB", map="mem"),
     1024 * 2 * 4096 + (16 * GiB // (2 * MiB)) * 4096 + 16 * 4096, (16 * GiB // (2 * MiB) + 16) * 4096),
    # the same on map=dev: 8192 whole sections, vmemmap_populate_hugepages() takes 2 MiB leaves from the altmap;
    # only the 16 PMD tables of the 16 GiB span are DRAM
    (dict(mode="devdax", align="1GiB", namespace_size="1TiB", map="dev"), 16 * 4096, 16 * 4096),
    # devdax 1 TiB, align 1 GiB, P=80, map=mem: not a power of two, no dedup: 2^28 x 80 = 20 GiB of 2 MiB leaves
    # from DRAM + 20 PMD tables
    (dict(mode="devdax", align="1GiB", namespace_size="1TiB", map="mem", struct_page_size=80),
     20 * GiB + 20 * 4096, 20 * 4096),
    # devdax 100 GiB, align 2 MiB, P=64, map=mem: optimized, 51200 compounds x 2 pages = 400 MiB; the 1600 MiB
    # span in PTEs: 800 PTE tables + 2 PMD tables
    (dict(mode="devdax", map="mem"), 51200 * 2 * 4096 + 800 * 4096 + 2 * 4096, 802 * 4096),
    # fsdax 100 GiB, align 2 MiB, P=80, map=mem: 800 sections x 2.5 MiB = 1000 leaves + 2 PMD tables
    (dict(struct_page_size=80, map="mem"), 1000 * 2 * MiB + 2 * 4096, 2 * 4096),
    # fsdax 100 GiB, align 2 MiB, P=80 (KMSAN), map=dev, starting 2 MiB into a section (pfns 512 .. 26214912):
    # head partial section, pfns 512 .. 32768: vmemmap [40960, 2621440) < a section's worth -> basepages with a
    # NULL altmap: 630 DRAM pages in 2 PTE tables; whole sections 1 .. 799: vmemmap [2.5 MiB, 2000 MiB) touches
    # 999 PMDs, the first already a PTE table (384 pages from the altmap), 998 altmap leaves; tail partial
    # section pfns 26214400 .. 26214912: [2000 MiB, +40 KiB) -> 10 DRAM pages, 1 PTE table; 2 PMD tables
    (dict(struct_page_size=80, nvdimm_kmsan=True, start_offset=2 * MiB), (630 + 10) * 4096 + (3 + 2) * 4096,
     5 * 4096),
]


@pytest.mark.parametrize("params,dram,pt", DRAM_BYTES, ids=[str(p) for p, _, _ in DRAM_BYTES])
def test_dram_bytes_of_a_bind_follow_vmemmap_population(params, dram, pt):
    """memmap_dram_bytes = struct pages in DRAM + the vmemmap's PTE and PMD tables, per the kernel arithmetic."""
    r = row(**params)
    assert r["status"] == "ok", r["reason"]
    assert (r["metric_memmap_dram_bytes"], r["metric_vmemmap_pt_bytes"]) == (dram, pt)
    assert r["metric_overhead_fraction"] == pytest.approx(
        (r["metric_memmap_device_bytes"] + dram) / r["param_namespace_size"])


def test_a_partial_tail_section_costs_dram_even_with_map_dev():
    """1 GiB + 3 MiB + 4 KiB: 8 whole sections and 512 pfns of a ninth; their 32 KiB of struct pages come from
    DRAM (vmemmap_populate() basepages, NULL altmap) with one PTE table, plus one PMD table."""
    r = row(namespace_size=GiB + 3 * MiB + 4 * KiB)
    assert (r["metric_memmap_dram_bytes"], r["metric_vmemmap_pt_bytes"]) == (8 * 4096 + 2 * 4096, 2 * 4096)


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
    """template_nt calls __memcpy_flushcache for every copy; template_nt_inline never does on x86_64, whose struct
    page sizes (64/80/96) are all inline in patch 8. The copy primitive still calls out of line for 72 bytes,
    but a 72-byte struct page cannot exist on x86_64."""
    nt, inl64, inl80, inl96, inl72 = run(
        {"strategy": "template_nt"}, {"strategy": "template_nt_inline"},
        {"strategy": "template_nt_inline", "struct_page_size": 80, "nvdimm_kmsan": True},
        {"strategy": "template_nt_inline", "struct_page_size": 96, "nvdimm_kmsan": True},
        {"strategy": "template_nt_inline", "struct_page_size": 72, "nvdimm_kmsan": True},
    ).rows(named=True)
    assert nt["metric_copy_calls"] == 25804288 - 1
    assert inl64["metric_copy_calls"] == inl80["metric_copy_calls"] == inl96["metric_copy_calls"] == 0
    assert inl72["status"] == "infeasible" and "multiple of 16" in inl72["reason"]
    assert cp.instructions(72, 0, cp.NT_INLINE, True)["calls"] == 1


def test_compute_is_the_kernels_cycles_per_operation_at_the_clock():
    """fsdax template_nt at 100 GiB: the first head a slow init, every other pfn a head copy at the recorded
    cycles of the series' build on the profile's core (workers.models.incore), a set_pageblock_migratetype()
    per 512 pfns and the call once, over copy.clock_ghz; a clock twice as fast halves it."""
    core = incore.recorded(work.PRICED, PROFILE.text("copy", "cpu"))
    row = run({"strategy": "template_nt"}).row(0, named=True)
    heads = row["metric_heads"]
    cycles = core.call + core.head_slow + (heads - 1) * core.head_copy[1] + -(-heads // 512) * core.pageblock
    assert row["metric_compute_ms"] * 1e6 == pytest.approx(cycles / PROFILE.value("copy", "clock_ghz"))
    faster = PROFILE.with_values({("copy", "clock_ghz"): 2 * PROFILE.value("copy", "clock_ghz")}, source="assumed")
    assert run({"strategy": "template_nt"}, profile=faster)["metric_compute_ms"][0] == pytest.approx(
        row["metric_compute_ms"] / 2)


def test_another_struct_page_size_adds_the_copy_models_cycles_for_its_bytes():
    """At P = 96 (map=mem, so the kernel allows it) a template copy is the build's 64-byte one plus four more
    cached moves at copy.store_cycles; a slow init zeroes four more words, each a store."""
    core = incore.recorded(work.PRICED, PROFILE.text("copy", "cpu"))
    store = PROFILE.value("copy", "store_cycles")
    clock = PROFILE.value("copy", "clock_ghz")
    for strategy in ("template", "slow"):
        at64, at96 = run({"strategy": strategy, "map": "mem", "struct_page_size": 64},
                         {"strategy": strategy, "map": "mem", "struct_page_size": 96}).rows(named=True)
        assert at64["metric_heads"] == at96["metric_heads"]
        heads = at64["metric_heads"]
        assert (at96["metric_compute_ms"] - at64["metric_compute_ms"]) * 1e6 == pytest.approx(
            heads * 4 * store / clock, rel=1e-6)
    assert core.copy_store == store  # the seed's copy cycles are the recorded ones


def test_non_temporal_compounds_pay_serialized_misses():
    """devdax NT strategies take 2 serialized misses per compound at P = 64 (order > 1: the head's line reloaded
    by __SetPageHead(), page[2]'s by prep_compound_head()); fsdax and cached ones none."""
    dd_nt, dd_t, fs_nt = run({"mode": "devdax", "strategy": "template_nt"}, {"mode": "devdax", "strategy": "template"},
                             {"strategy": "template_nt"}).rows(named=True)
    assert (dd_nt["metric_serial_misses"], dd_t["metric_serial_misses"], fs_nt["metric_serial_misses"]) == (
        2 * 50399, 0, 0)
    assert dd_nt["metric_stall_ms"] == pytest.approx(2 * 50399 * PROFILE.value("copy", "dram_latency_ns") / 1e6)


@pytest.mark.parametrize("psize,per_compound", [(64, 2), (80, 3), (96, 3)])
def test_the_first_tail_misses_only_beyond_the_heads_128_byte_pair(psize, per_compound):
    """page[1]'s line at P = 64 completes the head's 128-byte pair (fetched with the head's miss); at P = 80 and
    96 page[1] reaches one line further, which misses: one more serialized miss per compound, at 2 MiB and 1 GiB."""
    for align in ("2MiB", "1GiB"):
        r = row(mode="devdax", align=align, strategy="template_nt_inline", struct_page_size=psize, nvdimm_kmsan=True)
        assert r["metric_serial_misses"] == per_compound * r["metric_heads"], (psize, align)


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
    (dict(struct_page_size=72, nvdimm_kmsan=True), "multiple of 16 on x86_64 .*HAVE_ALIGNED_STRUCT_PAGE"),
    (dict(struct_page_size=88, map="mem"), "multiple of 16 on x86_64"),
    (dict(struct_page_size=56, map="mem"), "multiple of 16 on x86_64"),
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
    """Eight memmap figures with stable ids, fit by 4 costs shared by all kinds, modes and strategies: the core's
    clock, its two DRAM streams and the share of a cached stream's in-core time its misses do not hide."""
    ids = [f.id for f in MODEL.calibration.figures]
    assert ids == [f"memmap/{m}/{s}" for m in ("fsdax", "devdax") for s in STRATEGIES]
    assert {f.metric for f in MODEL.calibration.figures} == {"metric_init_ms"}
    free = MODEL.calibration.free_params
    assert [(p.section, p.key) for p in free] == [("copy", "clock_ghz"), ("copy", "dram_write_gbs"),
                                                   ("copy", "dram_rfo_gbs"), ("memmap", "exposed_fraction")]


def test_shipped_seed_profile_reproduces_the_figures_and_speedups():
    """The calibrated seed profile: each figure within 10%, slow / template_nt_inline 2.52x and 2.30x within
    10%."""
    figs = MODEL.calibration.figures
    got = predict(MODEL, figs, PROFILE)
    for f, v in zip(figs, got):
        assert v == pytest.approx(f.published, rel=0.10), f.id
    assert got[0] / got[3] == pytest.approx(2.52, rel=0.10)
    assert got[4] / got[7] == pytest.approx(2.30, rel=0.10)
    assert {PROFILE.sections[p.section][p.key].source for p in MODEL.calibration.free_params} == {"calibrated"}


def test_calibration_within_10_percent_and_leave_one_out_within_20(seed_calibration):
    """The 4 costs fit every figure within 10%; refitting without any one figure predicts it within 20%."""
    cal = seed_calibration(MODEL.name)
    assert cal.max_error < 0.10
    assert cal.max_loo_error < 0.20


def test_calibration_reaches_the_same_costs_from_most_neutral_starts(seed_calibration):
    """At least 8 of the 10 neutral starts (fixed Sobol points) end within 1% of the best costs, and the fitted
    DRAM streams are ones an Ice Lake-SP core can move (inside the published fit's 2-40 GB/s)."""
    cal = seed_calibration(MODEL.name)
    assert len(cal.starts) == 10
    assert sum(s.agrees for s in cal.starts) >= 8
    for key in ("dram_write_gbs", "dram_rfo_gbs"):
        assert 2.0 <= cal.fitted[("copy", key)] <= 40.0


def test_published_and_measured_fits_search_different_bandwidths():
    """The published figures are one Ice Lake-SP core's: its DRAM streams are searched within 2-40 GB/s; a fit to
    measured rows of any host keeps 1-200 GB/s; the seed profile sets no bounds of its own for them."""
    bounds = lambda free: {p.key: (p.lower, p.upper) for p in free}  # noqa: E731
    published, measured = bounds(MODEL.calibration.free_params), bounds(MODEL.calibration.free_for_measured)
    for key in ("dram_write_gbs", "dram_rfo_gbs"):
        assert (published[key], measured[key]) == ((2.0, 40.0), (1.0, 200.0))
        assert PROFILE.bounds("copy", key) is None


SIZES_STEP = st.integers(1, 64)


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 400), grow=SIZES_STEP, mode=st.sampled_from(["fsdax", "devdax"]),
       map_=st.sampled_from(["dev", "mem"]), align=st.sampled_from(["4KiB", "2MiB", "1GiB"]),
       psize=st.sampled_from([64, 80, 96]), strategy=st.sampled_from(STRATEGIES),
       medium=st.sampled_from(["dram", "pmem"]))
def test_init_time_never_decreases_as_the_namespace_grows(k, grow, mode, map_, align, psize, strategy, medium):
    """In whole steps of max(align', 128 MiB section), a bigger namespace never initializes faster nor takes less
    DRAM; the bandwidth bound never exceeds the modeled time; counts are non-negative integers that conserve pfns."""
    step = max({"4KiB": 2 * MiB, "2MiB": 2 * MiB, "1GiB": GiB}[align], 128 * MiB)
    base = {"mode": mode, "map": map_, "align": align, "struct_page_size": psize, "strategy": strategy,
            "nvdimm_kmsan": True, "medium": medium}
    out = run({**base, "namespace_size": k * step}, {**base, "namespace_size": (k + grow) * step})
    ok = out.filter(pl.col("status") == "ok")
    for r in ok.rows(named=True):
        assert r["metric_bound_ms"] <= r["metric_init_ms"]
        assert r["metric_struct_pages_written"] + r["metric_tails_aliased"] == r["metric_pfns_covered"]
        assert min(r[c] for c in MODEL.metric_dtypes if MODEL.metric_dtypes[c] == pl.Int64
                   and r[c] is not None) >= 0
    if ok.height == 2:
        small, big = ok["metric_init_ms"].to_list()
        assert big >= small
        small, big = ok["metric_memmap_dram_bytes"].to_list()
        assert big >= small
    for c, dt in MODEL.metric_dtypes.items():
        assert out.schema[c] == dt


def test_pmem_streams_run_at_the_lesser_of_the_core_and_the_media():
    """pmem_costs(): an NT stream at min(the core's, per-DIMM rate x DIMMs); a write-back's media bytes amplified
    to a whole XPLine; an RFO stream at min(the core's latency-bound stream, per-DIMM read x DIMMs); a miss at
    Optane's latency. A core faster than the media writes no faster; one slower than them sets the rate."""
    v = lambda k: PROFILE.value("memmap", k)  # noqa: E731
    dram = cp.CopyCosts.of(PROFILE)
    for dimms in (1, 2, 6, 8):
        pmem = pmem_costs(dram, PROFILE, dimms)
        media = v("pmem_dimm_nt_write_gbs") * dimms
        assert pmem.dram_write_gbs == pytest.approx(min(dram.dram_write_gbs, media))
        assert pmem.writeback_gbs == pytest.approx(min(dram.dram_write_gbs, media / v("pmem_writeback_amplification")))
        assert pmem.dram_rfo_gbs == pytest.approx(min(dram.dram_rfo_gbs / v("pmem_read_ratio"),
                                                      v("pmem_dimm_read_gbs") * dimms))
        assert pmem.dram_latency_ns == pytest.approx(dram.dram_latency_ns * v("pmem_latency_ratio"))
        assert (pmem.clock_ghz, pmem.store_cycles, pmem.llc_gbs) == (dram.clock_ghz, dram.store_cycles, dram.llc_gbs)
    assert pmem_costs(dram, PROFILE, 6).dram_write_gbs == pytest.approx(12.5, rel=1e-3)  # media-bound, not 16.26
    slow = PROFILE.with_values({("copy", "dram_write_gbs"): 4.0}, source="assumed")
    assert pmem_costs(cp.CopyCosts.of(slow), slow, 6).dram_write_gbs == 4.0  # a slow core sets the rate


def test_the_pmem_costs_name_the_studys_rows():
    """Per-DIMM NT write 12.50 / 6 GB/s and read 37.63 / 6 GB/s (Fig. 4, six interleaved DIMMs at their peak),
    the one-thread read ratio 7.38 / 2.88 and the random read latency ratio 305.0 / 101.5 (Fig. 2): published,
    each naming its file and row; the XPLine amplification 256 / 64, assumed and saying so."""
    for key, value, unit, named in (("pmem_dimm_nt_write_gbs", 12.50 / 6, "GB/s", "Threads = 4 and 5"),
                                    ("pmem_dimm_read_gbs", 37.63 / 6, "GB/s", "Threads = 22"),
                                    ("pmem_read_ratio", 7.38 / 2.88, "x", "column Read"),
                                    ("pmem_latency_ratio", 305.0 / 101.5, "x", "Read\\Random")):
        q = PROFILE.sections["memmap"][key]
        assert (q.unit, q.source) == (unit, "published"), key
        assert q.value == pytest.approx(value, rel=1e-3)
        assert "graphs/0" in q.note and named in q.note, key
    q = PROFILE.sections["memmap"]["pmem_writeback_amplification"]
    assert (q.value, q.source) == (256 / 64, "assumed") and "XPLine" in q.note


def test_a_pmem_init_is_never_under_the_media_bound_of_its_interleave():
    """100 GiB fsdax map=dev template_nt_inline on pmem: the struct pages stored take at least their bytes over
    the NT rate the DIMMs interleaved take, at 1, 2 and 6 DIMMs; fewer DIMMs, longer."""
    rate = PROFILE.value("memmap", "pmem_dimm_nt_write_gbs")
    out = run(*({"medium": "pmem", "pmem_dimms": d} for d in (1, 2, 6)))
    for d, r in zip((1, 2, 6), out.rows(named=True)):
        assert r["metric_init_ms"] >= r["metric_bytes_stored"] / (rate * d) / 1e6, d
    assert out["metric_init_ms"].is_sorted(descending=True)
    assert out["metric_init_ms"][0] / out["metric_init_ms"][2] > 5


def test_a_machine_that_takes_no_optane_refuses_pmem():
    """epyc_genoa (no AMD platform takes Optane): every pmem point is infeasible, naming the profile and why;
    its DRAM points are ok."""
    genoa = load_profile("epyc_genoa")
    out = run({"medium": "dram"}, {"medium": "pmem"}, {"medium": "pmem", "map": "mem"}, profile=genoa)
    assert out["status"].to_list() == ["ok", "infeasible", "infeasible"]
    assert out["reason"][1].startswith("medium = pmem: profile epyc_genoa's machine takes no Optane") \
        and "AMD" in out["reason"][1]


def test_pmem_map_dev_is_never_faster_than_dram_and_slower_where_memory_sets_the_time():
    """With map=dev the struct pages are stored to the namespace: no strategy is faster on pmem; slow, bound by its
    reads for ownership and amplified write-backs, takes over 3x as long; fsdax template_nt_inline, bound by its
    NT stream, takes what the six DIMMs' media bound gives (a little more: its re-touched lines are also read)."""
    media = 6 * PROFILE.value("memmap", "pmem_dimm_nt_write_gbs")
    for mode in ("fsdax", "devdax"):
        for strategy in STRATEGIES:
            dram, pmem = run(*({"mode": mode, "strategy": strategy, "medium": m} for m in ("dram", "pmem"))).rows(
                named=True)
            assert pmem["metric_init_ms"] >= dram["metric_init_ms"], (mode, strategy)
            if strategy == "slow":
                assert pmem["metric_init_ms"] > 3 * dram["metric_init_ms"]
                assert pmem["metric_dominant"] == "memory"
            if (mode, strategy) == ("fsdax", "template_nt_inline"):
                assert pmem["metric_bound_ms"] == pytest.approx(pmem["metric_bytes_stored"] / media / 1e6, rel=0.02)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("mode", ["fsdax", "devdax"])
def test_map_mem_is_unaffected_by_the_medium(mode, strategy):
    """map=mem keeps the struct pages in DRAM: every metric is the same on dram and pmem namespaces."""
    out = run(*({"mode": mode, "strategy": strategy, "map": "mem", "medium": m} for m in ("dram", "pmem")))
    dram, pmem = out.select(list(MODEL.metric_dtypes)).rows()
    assert dram == pmem


def test_pmem_speedup_of_template_nt_inline_is_the_rfo_it_saves_and_shrinks_with_compounds():
    """On pmem (map=dev) slow and template_nt_inline are both bound by the medium: slow's cached stores read each
    line for ownership and write it back amplified (1/read + 1/write-back ns a byte) and expose a share of
    their in-core time, MOVNTI only writes it (1/write), so fsdax's speedup is at least about write x (1/read +
    1/write-back) (a little less: the seeding inits and the re-touched lines still pay both). devdax adds 2
    serialized misses a compound, each pmem_latency_ratio times DRAM's, to the NT side only, so its speedup is
    below fsdax's."""
    rows = [{"mode": mode, "strategy": s, "medium": m} for mode in ("fsdax", "devdax")
            for m in ("dram", "pmem") for s in ("slow", "template_nt_inline")]
    out = run(*rows)
    t = dict(zip([(r["mode"], r["medium"], r["strategy"]) for r in rows], out.rows(named=True)))
    slow, nt = t[("fsdax", "pmem", "slow")], t[("fsdax", "pmem", "template_nt_inline")]
    f = PROFILE.value("memmap", "exposed_fraction")
    assert slow["metric_init_ms"] == pytest.approx(slow["metric_bound_ms"] + f * slow["metric_compute_ms"])
    assert nt["metric_init_ms"] == pytest.approx(max(nt["metric_compute_ms"], nt["metric_bound_ms"]))
    pmem = pmem_costs(cp.CopyCosts.of(PROFILE), PROFILE, 6)
    rfo_saved = pmem.dram_write_gbs * (1 / pmem.dram_rfo_gbs + 1 / pmem.writeback_gbs)
    speedup = {mode: t[(mode, "pmem", "slow")]["metric_init_ms"] / t[(mode, "pmem", "template_nt_inline")][
        "metric_init_ms"] for mode in ("fsdax", "devdax")}
    assert slow["metric_bound_ms"] / nt["metric_bound_ms"] == pytest.approx(rfo_saved, rel=0.05)
    assert speedup["fsdax"] > 0.95 * rfo_saved and speedup["devdax"] < speedup["fsdax"]
    assert t[("devdax", "pmem", "template_nt_inline")]["metric_stall_ms"] == pytest.approx(
        PROFILE.value("memmap", "pmem_latency_ratio") * t[("devdax", "dram", "template_nt_inline")]["metric_stall_ms"])


def test_only_pmem_points_need_the_pmem_costs():
    """A profile without them still prices dram points, and a pmem map=dev point fails naming the missing key
    (error rows from evaluate(); ProfileError from the model)."""
    kept = {"exposed_fraction": PROFILE.sections["memmap"]["exposed_fraction"]}  # every point's combination rule
    bare = Profile(name="bare", description="", sections={**PROFILE.sections, "memmap": kept})
    assert run({"medium": "dram"}, {"medium": "pmem", "map": "mem"}, profile=bare)["status"].to_list() == ["ok", "ok"]
    failed = run({"medium": "pmem"}, profile=bare).row(0, named=True)
    assert failed["status"] == "error" and "memmap.pmem_dimm_nt_write_gbs" in failed["reason"]
    with pytest.raises(ProfileError, match="memmap.pmem_dimm_nt_write_gbs"):
        MODEL.evaluate(frame({"medium": "pmem"}), bare)


def test_figures_are_at_medium_dram():
    """The seed measured pmem emulated in DRAM: the eight figures are the default medium, dram."""
    assert {f.params["medium"] for f in MODEL.calibration.figures} == {"dram"}
    assert next(a for a in MODEL.axes if a.name == "medium").default == "dram"


def test_every_metric_is_documented():
    """Each metric column has a one-line doc for the README schema table."""
    assert all(m.doc.strip() for m in MODEL.metrics) and len(MODEL.metric_dtypes) == len(MODEL.metrics)


def test_start_offset_takes_a_size_as_every_byte_axis_does_and_keeps_integer_labels():
    """start_offset = "2MiB" is 2097152 (it may be 0, so it is an integer axis of bytes, not a size); its
    labels stay the integers earlier sweeps recorded; a word that is no size names what is allowed."""
    axis = next(a for a in MODEL.axes if a.name == "start_offset")
    assert axis.canonical("2MiB") == axis.canonical(2 * MiB) == 2 * MiB and axis.canonical("0") == 0
    assert axis.label(axis.canonical("2MiB")) == "2097152"
    with pytest.raises(ValueError, match=r"must be an integer \(of bytes: also a size such as '2MiB'\), a non-negative "
                                         r"multiple of 4KiB \(got 'two'\)"):
        axis.canonical("two")
    with pytest.raises(ValueError, match=r"\(got '1KiB'\)"):
        axis.canonical("1KiB")


def test_memmap_pages_are_what_nr_memmap_pages_counts_per_section_not_the_leaves_that_back_them():
    """384 MiB, 80-byte struct pages, map=mem: section_nr_vmemmap_pages() adds DIV_ROUND_UP(32768 x 80, 4096)
    = 640 per section, 1920 for three (the 2 MiB PMD leaves behind them take 2048 pages of DRAM)."""
    r = row(namespace_size=384 * MiB, struct_page_size=80, nvdimm_kmsan=True, map="mem", mode="fsdax", align="2MiB")
    assert r["metric_memmap_pages"] == 1920 and r["metric_memmap_dram_bytes"] >= 2048 * 4096


def test_compute_and_memory_combine_as_the_exposed_fraction_says():
    """memmap.exposed_fraction is the share of the shorter side a cached store stream does not run under the
    longer: 0 gives max(compute, memory), 1 their sum, 0.5 halfway; an NT stream always takes max() (its
    stores do not wait for reads for ownership); the speedup's slow side combines as a cached stream."""
    point = {"namespace_size": "16GiB", "mode": "devdax", "strategy": "template_nt_inline"}
    rows = {f: run(point, {**point, "strategy": "slow"},
                   profile=PROFILE.with_values({("memmap", "exposed_fraction"): f}, source="assumed"))
            for f in (0.0, 0.5, 1.0)}
    nt, slow = rows[0.0].row(0, named=True), rows[0.0].row(1, named=True)
    for f, out in rows.items():
        assert out["metric_init_ms"][0] == pytest.approx(max(nt["metric_compute_ms"], nt["metric_bound_ms"]
                                                              + nt["metric_stall_ms"]))
        c, m = slow["metric_compute_ms"], slow["metric_bound_ms"]
        assert out["metric_init_ms"][1] == pytest.approx(max(c, m) + f * min(c, m))
        assert out["metric_speedup_vs_slow"][0] == pytest.approx(out["metric_init_ms"][1] / out["metric_init_ms"][0])
    assert PROFILE.sections["memmap"]["exposed_fraction"].source == "calibrated"

def test_where_compute_binds_the_strategies_follow_the_kernels_cycles_not_a_count_of_stores():
    """At 1 GiB fsdax map=mem (LLC-resident) the in-core speedups over slow are the recorded cycles per head
    of the kernel's code (template 10.1 / 7.7, template_nt 10.1 / 17.1): template_nt, which executes 1.81x
    slow's instructions, is slower, not faster; the instructions are the kernel's within 1%."""
    from workers.calibrate import work_comparison

    core = incore.recorded(work.PRICED, PROFILE.text("copy", "cpu"))
    point, rows = work_comparison(MODEL, PROFILE)
    assert point["namespace_size"] == "1GiB" and point["map"] == "mem"
    by = {r.variant: r for r in rows}
    for strategy, i in (("template", 0), ("template_nt", 1), ("template_nt_inline", 2)):
        assert by[strategy].compute == pytest.approx(core.head_slow / core.head_copy[i], rel=0.01)
    costs = work.recorded_costs(work.PRICED)
    assert by["template_nt"].work == pytest.approx(costs.head_slow / costs.head_copy[1], rel=0.01)
    assert by["template_nt"].work < 0.6 and by["template_nt"].speedup < 1.0
    assert (by["template"].dominant, by["template_nt"].dominant) == ("compute", "compute")
