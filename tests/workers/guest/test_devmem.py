"""The /dev/mem probe (workers/guest/devmem.py): its console read back, refused when it failed; the pfnmap
model's planner (workers/models/pfnmap/kernel.py); and, marked `guest`, the huge-pfnmap build
(workers/guest/hugepfn/) booted under TCG: leaves of aligned, skewed and holed mappings with the RFC on, all
PTEs with it off, a fork with live PMD mappings, identical reruns, and the shipped kernel-pfnmap spec beside
the model."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import polars as pl
import pytest

from tests.conftest import memsweep
from workers import evidence, get_model
from workers.guest import build, devmem
from workers.guest.devmem import MapConfig
from workers.guest.exceptions import GuestSetupError
from workers.model import points_frame
from workers.profiles import load_profile
from workers.models.pfnmap import KERNEL_METRICS
from workers.models.pfnmap import instructions as pi
from workers.models.pfnmap import kernel as pk
from workers.models.pfnmap.geometry import leaves

MIB = 1 << 20
TICK = 10_000  # more than a timer interrupt's instructions in the guest (4,587 seen)
CONSOLE = """[    0.9] Run /init as init process
memsweep-devmem-release 6.12.118
memsweep-devmem-switch Y
memsweep-devmem 0 va=140733193388032 pte=0 pmd=3 pud=0 pt_bytes=16384 mmap_ns=20000 munmap_ns=9000 hole_pte=511 \
hole_pmd=2 hole_ns=30000 child=0 after=0 pt_left=0
memsweep-devmem-child 0 0 3 0
memsweep-devmem 1 error=mmap:Invalid argument
memsweep-devmem-done
memsweep-devmem-end
"""
CONFIGS = [MapConfig(huge=True, size=6 * MIB, hole=0, fork=True), MapConfig(huge=False, size=4096)]


def test_the_console_reads_back_as_one_result_per_mapping():
    run = devmem.parse(CONSOLE, CONFIGS)
    assert (run.release, run.switch) == ("6.12.118", "Y")
    first, second = run.results
    assert (first.pte, first.pmd, first.pud, first.pt_bytes, first.mmap_instructions) == (0, 3, 0, 16384, 20000)
    assert (first.hole_pte, first.hole_pmd, first.child, first.child_status) == (511, 2, (0, 3, 0), 0)
    assert first.build == build.HUGEPFN and first.config == CONFIGS[0]
    assert second == "the /dev/mem probe failed at mmap:Invalid argument"
    assert "after a one-page hole at +0x0: 511 PTEs, 2 PMDs" in devmem.text(first)


@pytest.mark.parametrize("console, message", [
    (CONSOLE.replace("memsweep-devmem-done\n", ""), r"did not finish \(an oops or a WARN panics it\)"),
    (CONSOLE.replace("memsweep-devmem-end", "memsweep-devmem-dmesg BUG: Bad rss-counter state\nmemsweep-devmem-end"),
     r"the kernel complained during the /dev/mem probe: BUG: Bad rss-counter state"),
    (CONSOLE.replace("memsweep-devmem-switch Y", "memsweep-devmem-fatal no debugfs"), r"could not start: no debugfs"),
])
def test_a_guest_that_failed_or_complained_is_refused_with_what_it_printed(console, message):
    with pytest.raises(GuestSetupError, match=message):
        devmem.parse(console, CONFIGS)


@pytest.mark.guest
def test_an_image_that_never_reaches_init_is_refused_with_what_qemu_and_the_console_said(tmp_path):
    """A damaged kernel image (cut short): the guest never prints its first line, and the run says so, naming
    the image, rather than reading an empty console as no mappings."""
    image = tmp_path / "bzImage"
    image.write_bytes(build.cached_build(name=build.HUGEPFN).image.read_bytes()[:100_000])
    with pytest.raises(GuestSetupError, match=r"never reached /init \(.*bzImage; (no output|QEMU said)"):
        devmem.run([MapConfig(huge=True, size=2 * MIB)], image=image, timeout_s=60)


@pytest.mark.parametrize("config, problem", [
    (MapConfig(huge=True, size=3000), "whole pages"),
    (MapConfig(huge=True, size=64 * MIB, pa_offset=65 * MIB), "pa_offset + size must be at most 128 MiB"),
    (MapConfig(huge=True, size=2 * MIB, hole=2 * MIB), "a page inside the mapping"),
])
def test_a_mapping_the_probe_cannot_make_is_refused_before_a_boot(config, problem):
    assert problem in config.problem()
    with pytest.raises(GuestSetupError, match=re.escape(problem)):
        devmem.run([config])


def _points(**axes) -> pl.DataFrame:
    base = dict(arch="x86_64", namespace_size=6 * MIB, align=2 * MIB, compound_order=9, pa_offset=-1, va_offset=0,
                access="lat_mem_rd_random")
    return points_frame(get_model("pfnmap"), [{**base, **axes}])


@pytest.mark.parametrize("axes, reason", [
    ({"arch": "arm64"}, "the guest is x86_64"),
    ({"compound_order": 18}, "the RFC makes no PUD leaves"),
    ({"namespace_size": 128 * MIB}, "keeps 128 MiB of RAM for the mapping"),
])
def test_points_the_guest_cannot_be_say_why(axes, reason):
    (got,) = pk.plan(_points(**axes), None)
    assert isinstance(got, str) and reason in got, got


def test_a_point_becomes_a_mapping_at_the_models_offsets_and_its_counts_are_read_back():
    """The physical start modulo 1 GiB is the model's (pa_offset, else align); compound_order 0 is the switch
    off; the leaves and tables read back as the model's columns."""
    (on,) = pk.plan(_points(align=4096, va_offset=4096), None)
    (off,) = pk.plan(_points(compound_order=0, pa_offset=3 * MIB), None)
    assert on == MapConfig(huge=True, size=6 * MIB, pa_offset=4096, va_offset=4096)
    assert off == MapConfig(huge=False, size=6 * MIB, pa_offset=3 * MIB, va_offset=0)
    (result, _) = devmem.parse(CONSOLE, CONFIGS).results
    assert pk.read({"param_namespace_size": 6 * MIB}, result) == {
        "metric_pte_leaves": 0, "metric_cont_blocks": 0, "metric_pmd_leaves": 3, "metric_pud_leaves": 0,
        "metric_pt_pages": 4, "metric_pt_bytes": 16384, "metric_huge_fraction": 1.0,
        "metric_setup_instructions": 20000.0}


# What the guest maps: aligned 2, 6 and 64 MiB with the RFC on, and 64 MiB off; skewed by 4 KiB and by 1 MiB;
# a physical start 4 KiB past a block (PTE head and tail); a one-page hole at a block's start and in its
# middle; forks with live PMD mappings.
PROBE = [
    MapConfig(huge=True, size=2 * MIB), MapConfig(huge=True, size=6 * MIB), MapConfig(huge=True, size=64 * MIB),
    MapConfig(huge=False, size=64 * MIB), MapConfig(huge=True, size=6 * MIB, va_offset=4096),
    MapConfig(huge=True, size=64 * MIB, va_offset=MIB), MapConfig(huge=True, size=6 * MIB, pa_offset=4096),
    MapConfig(huge=True, size=6 * MIB, hole=0), MapConfig(huge=True, size=64 * MIB, hole=3 * MIB),
    MapConfig(huge=True, size=6 * MIB, fork=True), MapConfig(huge=True, size=64 * MIB, fork=True, hole=4096),
    MapConfig(huge=False, size=6 * MIB, fork=True),
]


@pytest.fixture(scope="module")
def probe():
    """Two boots of the huge-pfnmap build, each mapping PROBE in turn (a few seconds each under TCG)."""
    assert build.cached_build(name=build.HUGEPFN), "run `make kernels` first (python -m workers.guest build)"
    return devmem.run(PROBE), devmem.run(PROBE)


def _model(c: MapConfig) -> dict:
    pa, va = np.array([c.pa_offset]), np.array([(c.pa_offset + c.va_offset) % (1 << 30)])
    g = leaves(np.array([c.size]), pa, va, np.array([9 if c.huge else 0]), np.array([False]))
    return {k: int(g[k][0]) for k in ("pte", "pmd", "pud", "pt_pages")}


@pytest.mark.guest
def test_the_leaves_and_tables_are_the_models_with_the_rfc_on_and_off(probe):
    """Every mapping's PTE, PMD and PUD leaves and page-table pages (deposits included) are the model's closed
    form (workers/models/pfnmap/geometry.py): 1, 3 and 32 PMDs aligned; all PTEs with the switch off or a skew
    that is not a multiple of 2 MiB; a 4 KiB physical start leaves a PTE head and tail around whole blocks."""
    run, _ = probe
    assert run.switch == "Y" and run.release.startswith("6.12")
    for c, r in zip(PROBE, run.results):
        assert not isinstance(r, str), (c, r)
        assert {"pte": r.pte, "pmd": r.pmd, "pud": r.pud, "pt_pages": r.pt_bytes // 4096} == _model(c), c
        assert (r.after, r.pt_left) == (0, 0), c  # munmap() gives every leaf and table back
    assert [r.pmd for r in run.results[:4]] == [1, 3, 32, 0]


@pytest.mark.guest
def test_a_hole_splits_its_block_into_the_ptes_it_stood_for(probe):
    """Unmapping one page of a PMD leaf leaves its other 511 pages mapped by PTEs (the RFC's split, from the
    table deposited with the leaf) and the other blocks PMDs."""
    run, _ = probe
    for c, r in zip(PROBE, run.results):
        if c.hole >= 0:
            blocks = c.size // (2 * MIB)
            assert (r.hole_pte, r.hole_pmd) == (511, blocks - 1), c


@pytest.mark.guest
def test_a_fork_copies_live_pmd_mappings_leaf_for_leaf(probe):
    """A child forked with the mapping live has the parent's leaves (copy_huge_pmd() with a table deposited
    for its copy) and exits cleanly; no oops, no WARN (either would end the guest before its last line)."""
    run, _ = probe
    for c, r in zip(PROBE, run.results):
        if c.fork:
            assert r.child == (r.pte, r.pmd, r.pud) and r.child_status == 0, c


@pytest.mark.guest
def test_a_rerun_repeats_every_count_and_instruction(probe):
    """Under QEMU's instruction counter a second boot maps the same leaves with the same instructions."""
    first, again = probe
    assert dataclasses.replace(again, console="") == dataclasses.replace(first, console="")
    on, off = first.results[2], first.results[3]  # 64 MiB aligned, the RFC on and off
    assert on.mmap_instructions < off.mmap_instructions and on.munmap_instructions < off.munmap_instructions


@pytest.mark.guest
def test_the_shipped_spec_puts_the_kernels_leaves_beside_the_models(tmp_path):
    """The shipped kernel-pfnmap spec run as a user runs it: 36 points, three boots, each kernel row's leaves and
    page tables equal to the model's row, its TLB columns null (the model's alone), its instructions three
    samples."""
    r = memsweep("run", "kernel-pfnmap", "--out", "out", "--quiet", "--no-report", cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    df = pl.read_parquet(tmp_path / "out" / "kernel-pfnmap" / "model=pfnmap" / "*.parquet")
    kernel, model = df.filter(pl.col("source") == "kernel"), df.filter(pl.col("source") == "model")
    both = kernel.join(model, on="point_id", suffix="_model")
    assert both.height == 36 and (both["status"] == "ok").all()
    for m in KERNEL_METRICS:
        assert (both[m] == both[f"{m}_model"]).all(), m
    assert both["metric_tlb_miss_rate"].is_null().all() and both["metric_ns_per_load"].is_null().all()
    assert set(both["kernel_build"]) == {build.HUGEPFN}
    assert (both["measure_repeats"] == 3).all()  # [kernel] boots = 3: each boot a sample of the instructions
    assert ((both["measure_min"] <= both["metric_setup_instructions"])
            & (both["metric_setup_instructions"] <= both["measure_max"])).all()
    # the recorded mappings are this sweep's (one boot, the same order)
    recorded = pi.recorded().rename({k: f"param_{k}" for k in pk.KEY})
    got = both.join(recorded, on=[f"param_{k}" for k in pk.KEY])
    assert got.height == 36
    # the same mappings in one boot repeat their instructions, but for a timer interrupt that lands inside
    # another mmap() (a 750,000-instruction call catches at most one: ~4,600 instructions here)
    assert ((got["metric_setup_instructions"] - got["mmap_instructions"]).abs() < TICK).all()
    # and the model's price of each is within 1% (the recorded fit's held-out error, 0.64%, and one tick)
    assert (got["metric_setup_instructions_model"] / got["metric_setup_instructions"] - 1).abs().max() < 0.01


def test_a_leaf_count_is_kernel_checked_where_a_recorded_mapping_equals_it():
    """The evidence of an exact count: `kernel-checked` at a point the recorded mappings
    (workers/models/pfnmap/kernel_results.csv) counted equal, `extrapolated` at one no guest mapped (an arm64
    point, a 1 GiB mapping)."""
    rows = pl.concat([_points(), _points(arch="arm64"), _points(namespace_size=1 << 30)])
    got = evidence.label(get_model("pfnmap"), load_profile("seed"), rows, "metric_pmd_leaves")
    assert got["evidence"].to_list() == ["kernel-checked", "extrapolated", "extrapolated"]


def test_the_instruction_costs_are_ones_the_kernels_code_can_have_and_predict_the_points_held_out():
    """mmap()'s instructions per operation, fit to the recorded 2 MiB-aligned mappings, are none negative; a
    page-table page costs at least the 4,096 counted iterations of clearing it (clear_page_erms()'s rep stosb
    under TCG) and a PTE tens of instructions (remap_pte_range()'s loop); the points held out (a 4 KiB
    physical start) fall within 1% of their price, and so does every point left out of its own fit."""
    f = pi.setup_fit()
    assert min(f.costs.values()) >= 0 and 4096 <= f.costs["pt_pages"] < 8192 and 10 < f.costs["pte_leaves"] < 100
    assert (f.train, f.held_out) == (18, 18) and f.held_out_error < 0.01 and f.loo_error < 0.01
    df = pi.recorded()
    modeled = pi.setup_instructions(df["kernel_pte_leaves"].to_numpy(), df["kernel_pmd_leaves"].to_numpy(),
                                    df["kernel_pt_pages"].to_numpy())
    assert np.abs(modeled / df["mmap_instructions"].to_numpy() - 1).max() < 0.01


def test_the_setup_instructions_are_fit_where_their_costs_were_and_kernel_checked_where_a_held_out_count_agrees():
    """The instructions' evidence at the recorded points: `fit` at the 18 with a 2 MiB-aligned physical start,
    `kernel-checked` at the 16 of the 18 held out that the price is within the fit's leave-one-out error of
    (the other two are 64 MiB mmap()s a timer interrupt landed in), and `extrapolated` where no guest counted."""
    df = pi.recorded()
    points = [dict(arch="x86_64", access="lat_mem_rd_random", **{k: r[k] for k in pk.KEY}) for r in df.to_dicts()]
    points.append({**points[0], "namespace_size": 8 * MIB})
    rows = points_frame(get_model("pfnmap"), points)
    got = evidence.label(get_model("pfnmap"), load_profile("seed"), rows, "metric_setup_instructions")["evidence"]
    aligned = [r["align"] == pi.TRAIN_ALIGN for r in df.to_dicts()]
    assert [g for g, a in zip(got, aligned) if a] == ["fit"] * 18
    held = [g for g, a in zip(got, aligned) if not a]
    assert held.count("kernel-checked") == 16 and held.count("extrapolated") == 2
    assert got[-1] == "extrapolated"


def test_a_run_readies_the_build_before_it_writes_anything_and_a_plan_does_not(monkeypatch):
    """`memsweep run` (with_kernel(..., build=True)) has the model's check build the huge-pfnmap kernel in the
    driver, once, before any chunk (rather than each chunk building it); `plan` (build=False) builds nothing."""
    from sweeps.spec.load import load_spec, with_kernel

    calls = []
    monkeypatch.setattr(devmem, "kernel", lambda *a, **k: calls.append(a))
    spec = load_spec("kernel-pfnmap")
    with_kernel(spec, build=False)
    assert calls == []
    with_kernel(spec, build=True)
    assert len(calls) == 1
