"""The arm64 reclaim probe (workers/guest/arm64.py): its console read back, refused when it failed; the young
model's planner (workers/models/young/kernel.py); and, marked `guest`, the shipped kernel-young spec: Debian's
arm64 6.12 (one young-bit call per PTE) and 7.3 (the seed series' batched call) under TCG, each boot mapping
64 MiB of an XFS file in 64 or 128 KiB folios and reclaiming 48 MiB of it from its memory cgroup, beside the model."""

from __future__ import annotations

import dataclasses

import polars as pl
import pytest

from tests.conftest import memsweep
from workers import evidence, get_model
from workers.guest import arm64
from workers.guest.exceptions import GuestSetupError
from workers.model import points_frame
from workers.models.young import KERNEL_METRICS
from workers.models.young import kernel as yk
from workers.models.young import reference as ref
from workers.profiles import load_profile

CONSOLE = """[    1.0] booting
memsweep-reclaim release 7.3.4+deb13-cloud-arm64
memsweep-reclaim function contpte_test_and_clear_young_ptes
memsweep-reclaim lru 0x0000
memsweep-reclaim before_pgscan_file 10
memsweep-reclaim before_pgsteal_file 4
memsweep-reclaim folio 5 512
memsweep-reclaim mapped 67108864
memsweep-reclaim written 3
memsweep-reclaim instructions 14758064
memsweep-reclaim checksum 0
memsweep-reclaim after_pgscan_file 28682
memsweep-reclaim after_pgsteal_file 12292
memsweep-reclaim calls 0 391
memsweep-reclaim calls 1 519
memsweep-reclaim dropped_calls 0
memsweep-reclaim pages 32 890
memsweep-reclaim pages 4 16
memsweep-reclaim pages 16 4
memsweep-reclaim dropped_pages 0
memsweep-reclaim visits 0 974
memsweep-reclaim dropped_visits 0
memsweep-reclaim clean_before_pgscan_file 28682
memsweep-reclaim clean_before_pgsteal_file 12292
memsweep-reclaim clean_folio 5 512
memsweep-reclaim clean_mapped 67108864
memsweep-reclaim clean_written 3
memsweep-reclaim clean_instructions 6912032
memsweep-reclaim clean_checksum 0
memsweep-reclaim clean_after_pgscan_file 57354
memsweep-reclaim clean_after_pgsteal_file 24580
memsweep-reclaim done
"""
MIB = 1 << 20


def test_the_console_reads_back_as_a_run():
    run = arm64.parse(CONSOLE, lru="classic", readahead_kb=128, reclaim_bytes=48 * MIB)
    assert (run.release, run.function, run.visits) == ("7.3.4+deb13-cloud-arm64",
                                                       "contpte_test_and_clear_young_ptes", 974)
    assert run.young == {0: 391, 1: 519} and run.calls == 910 and run.pages == {32: 890, 4: 16, 16: 4}
    assert (run.scanned, run.reclaimed, run.mapped_bytes) == (28672, 12288, 64 * MIB)
    # the unprobed pass's instructions are the reclaim's; the counted pass's include the probes' own
    assert (run.instructions, run.probed_instructions) == (6912032, 14758064)
    assert ("910 calls, 519 found an accessed PTE; calls by pages: 4 pages: 16, 16 pages: 4, 32 pages: 890"
            in arm64.text(run))


@pytest.mark.parametrize("console, message", [
    (CONSOLE.replace("memsweep-reclaim done\n", ""), r"did not finish"),
    (CONSOLE.replace("memsweep-reclaim done", "memsweep-error mount the XFS disk"), r"failed: mount the XFS disk"),
    (CONSOLE.replace("dropped_pages 0", "dropped_pages 3"), r"dropped events \(\['dropped_pages'\]\)"),
    (CONSOLE.replace("clean_after_pgsteal_file 24580", "clean_after_pgsteal_file 24000"),
     r"without probes differed from the probed one: folios \{5: 512\}, scanned 28,672, reclaimed 11,708"),
    (CONSOLE.replace("clean_folio 5 512", "clean_folio 4 1024"), r"without probes differed"),
])
def test_a_probe_that_failed_is_refused_with_what_it_printed(console, message):
    with pytest.raises(GuestSetupError, match=message):
        arm64.parse(console, lru="mglru", readahead_kb=128, reclaim_bytes=48 * MIB)


def test_the_kernels_are_debians_arm64_packages_fetched_with_apt_of_its_own(tmp_path):
    assert arm64.KERNELS["6.12"][0].match("linux-image-6.12.118+deb12-arm64-unsigned")
    assert [p.match(n) is not None for p, n in zip(arm64.KERNELS["7.3"], (
        "linux-binary-7.3.4+deb13-cloud-arm64", "linux-modules-7.3.4+deb13-cloud-arm64"))] == [True, True]
    options = " ".join(arm64.PrivateApt(tmp_path).options)
    assert "APT::Architecture=arm64" in options and f"Dir::State={tmp_path / 'state'}" in options
    with pytest.raises(GuestSetupError, match=r"'series' must be one of \['6.12', '7.3'\]"):
        arm64.fetch("5.10", tmp_path)
    with pytest.raises(ValueError, match=r"'lru' must be one of"):
        arm64.reclaim(arm64.Arm64Kernel(image=tmp_path, modules=tmp_path, release="x", series="6.12", packages=()),
                      lru="lru")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """The shipped kernel-young spec run as a user runs it: 32 points, 16 of them one boot each of Debian's arm64
    6.12 or 7.3 under TCG (about 12 s a boot on 2 cores), the other 16 no kernel's; and the model's rows."""
    assert all(arm64.cached(s) for s in arm64.KERNELS), "run `make guest` first (python -m workers.guest fetch-arm64)"
    out = tmp_path_factory.mktemp("young")
    r = memsweep("run", "kernel-young", "--out", "out", "--quiet", "--no-report", cwd=out, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    df = pl.read_parquet(out / "out" / "kernel-young" / "model=young" / "*.parquet")
    kernel, model = df.filter(pl.col("source") == "kernel"), df.filter(pl.col("source") == "model")
    return kernel.join(model, on="point_id", suffix="_model").filter(pl.col("status") == "ok")


def _at(rows: pl.DataFrame, batching: str, lru: str, young: float, order: int) -> dict:
    (row,) = rows.filter((pl.col("param_batching") == batching) & (pl.col("param_lru") == lru)
                         & (pl.col("param_young_fraction") == young)
                         & (pl.col("param_compound_order") == order)).to_dicts()
    return row


@pytest.mark.guest
def test_before_the_series_one_call_per_pte_after_it_one_per_folio(sweep):
    """Per folio visit (folio_referenced_one()): 6.12 calls contpte_ptep_test_and_clear_young() once per PTE of
    the folio (32 or 64 pages), and where every folio is young under the classic LRU its young results are the
    contpte blocks of the folios' first visits; 7.3 calls contpte_test_and_clear_young_ptes() with nr = the
    folio's pages. Every run reclaims the 48 MiB asked."""
    assert sweep.height == 16 and set(sweep["env_guest_kernel"].str.slice(0, 4)) == {"6.12", "7.3."}
    for order in (5, 6):
        pages = 1 << order
        for lru in ("mglru", "classic"):
            for young in (0.0, 1.0):
                before, after = _at(sweep, "per_pte", lru, young, order), _at(sweep, "batched", lru, young, order)
                extra = before["metric_calls"] - before["metric_walks"] * pages
                if (lru, young) == ("mglru", 1.0):  # look-around windows and the aging clear blocks unvisited
                    # every young block is cleared once: by a visit's own call, or by another's window or the
                    # aging (the reference's eviction says how many visits found their own PTE young: 241)
                    t = ref.build_table(namespace_size=48 * MIB, mapped_size=64 * MIB, align=2 * MIB, order=order,
                                        young_fraction=1.0)
                    own = int(ref.reclaim_look_around(t, unmap="per_pte").look_around.own.sum())
                    assert extra == before["metric_young_calls"] - own > 0
                else:
                    assert extra == 0
                assert after["metric_ptes_asked"] == after["metric_calls"] * pages
        classic = _at(sweep, "per_pte", "classic", 1.0, order)
        first_visits = classic["metric_walks"] - classic["metric_folios"]  # the folios kept for a second trip
        assert classic["metric_young_calls"] == first_visits * (pages // 16)
    assert (sweep["metric_ptes"] == 48 * MIB // 4096).all()


@pytest.mark.guest
def test_the_models_counts_are_the_kernels_where_recorded_and_only_there(sweep):
    """Every count a kernel row has equals the model's at the points the recorded runs
    (workers/models/young/kernel_results.csv) found equal, and differs where they found it differs: the record
    is this sweep's, count for count (a guest's counts repeat exactly)."""
    recorded = yk.results()
    assert recorded.height == sweep.height
    for row in recorded.iter_rows(named=True):
        got = _at(sweep, row["batching"], row["lru"], row["young_fraction"], row["compound_order"])
        for m in KERNEL_METRICS:
            name = m.removeprefix("metric_")
            assert got[m] == row[f"kernel_{name}"], (row, m)
            assert got[f"{m}_model"] == row[f"model_{name}"], (row, m)
    for m in KERNEL_METRICS:
        agree = sweep.filter(yk.bound(m))
        assert (agree[m] == agree[f"{m}_model"]).all()
        assert agree.height + sweep.filter(yk.differs(m)).height == sweep.height, m
    assert (sweep["metric_folios"] == sweep["metric_folios_model"]).all()


@pytest.mark.guest
def test_a_rerun_repeats_every_count_and_the_instructions():
    """The XFS disk is a RAM disk and the guest runs under QEMU's instruction counter: a second boot of the
    same probe counts the same calls, visits and pages, and the same instructions, exactly."""
    config = arm64.ReclaimConfig(series="6.12", lru="classic", readahead_kb=128, mapped_bytes=64 * MIB,
                                 reclaim_bytes=48 * MIB, align_bytes=0, young_bytes=64 * MIB)
    (first,), (again,) = arm64.run_reclaims([config]), arm64.run_reclaims([config])  # two boots
    assert not isinstance(first, str), first
    assert dataclasses.replace(again, console="") == dataclasses.replace(first, console="")


def _points(**axes) -> pl.DataFrame:
    base = dict(arch="arm64", namespace_size=48 * MIB, mapped_size=64 * MIB, align=2 * MIB, compound_order=5,
                batching="per_pte", unmap="per_pte", lru="classic", young_fraction=0.5, first_pte_cont=True)
    return points_frame(get_model("young"), [{**base, **axes}])


def test_the_recorded_instructions_are_the_unprobed_pass_s_and_the_probes_cost_more_than_the_young_calls():
    """kernel_results.csv keeps both passes' instructions: the row's (no probe) below the counted one's at every
    point, by what the probes' hits cost: the difference over the hits (kretprobes on the young-bit function
    and folio_referenced_one(), a kprobe on the batched one's nr) is 1,600-1,818 instructions a hit at all 16
    points (a BRK trap, the handler, the hist trigger), whatever the kernel, LRU or order."""
    recorded = yk.results()
    assert recorded.height == 16 and (recorded["instructions"] < recorded["probed_instructions"]).all()
    batched = recorded["batching"] == "batched"
    hits = recorded["kernel_calls"] * pl.when(batched).then(2).otherwise(1) + recorded["kernel_walks"]
    per_hit = (recorded["probed_instructions"] - recorded["instructions"]) / recorded.select(hits).to_series()
    assert ((1_500 < per_hit) & (per_hit < 2_000)).all(), per_hit.to_list()


@pytest.mark.parametrize("axes, reason", [
    ({"arch": "x86_64"}, "the guest is arm64"),
    ({"batching": "batched"}, "no kernel of the two has one batching without the other"),
    ({"first_pte_cont": False}, "every head block is cont"),
    ({"compound_order": 4}, "orders 5 and 6 only"),
    ({"compound_order": 7, "namespace_size": 64 * MIB}, "orders 5 and 6 only"),
    ({"align": 16 * 1024}, "align below 64KiB"),
    ({"mapped_size": 512 * MIB}, "up to 256 MiB"),
])
def test_points_the_probe_cannot_be_say_why(axes, reason):
    (got,) = yk.plan(_points(**axes), None)
    assert isinstance(got, str) and reason in got, got


def test_a_point_becomes_its_kernels_reclaim_and_its_counts_are_read_back():
    """6.12 for per-PTE clearing and unmapping, 7.3 for batched; readahead the folio size, the young part the
    first floor(young_fraction x folios) folios, align past the 2 MiB boundary."""
    (before,) = yk.plan(_points(align=128 * 1024), None)
    (after,) = yk.plan(_points(batching="batched", unmap="batched", lru="mglru", compound_order=6), None)
    assert before == arm64.ReclaimConfig(series="6.12", lru="classic", readahead_kb=128, mapped_bytes=64 * MIB,
                                         reclaim_bytes=48 * MIB, align_bytes=128 * 1024, young_bytes=32 * MIB)
    assert (after.series, after.lru, after.readahead_kb) == ("7.3", "mglru", 256)
    run = arm64.parse(CONSOLE, lru="classic", readahead_kb=128, reclaim_bytes=48 * MIB)
    point = {"param_compound_order": 5, "param_mapped_size": 64 * MIB, "param_namespace_size": 48 * MIB}
    assert run.folios == {5: 512}
    assert yk.read(point, run) == {
        "metric_calls": 910, "metric_young_calls": 519, "metric_ptes_asked": 32 * 890 + 4 * 16 + 16 * 4,
        "metric_walks": 974, "metric_ptes": 12288, "metric_folios": 384,
        "metric_instructions_per_folio": 6912032 / 384}  # the unprobed pass's
    mixed = dataclasses.replace(run, folios={5: 384, 9: 8})  # khugepaged collapsed some (7.3, before it was off)
    assert yk.read(point, mixed) == ("readahead of 128 KiB made the mapped folios 384 of order 5, 8 of order 9, "
                                     "not 512 of order 5")


def test_a_count_is_kernel_checked_where_a_recorded_run_equals_it_and_says_where_one_differs(monkeypatch):
    """The evidence of an exact count at the recorded points: `kernel-checked` where the guest's count equals the
    model's (6.12 with every folio young, under either LRU since model version 10), no guest at all at a point
    none ran (order 6, half young), and a note saying the guest counted otherwise where a record differs (as
    6.12's MGLRU did before version 10: its record then, read through the same KernelCheck)."""
    model = get_model("young")
    rows = pl.concat([_points(young_fraction=1.0), _points(young_fraction=1.0, lru="mglru"),
                      _points(compound_order=6)])
    got = evidence.label(model, load_profile("seed"), rows, "metric_calls")
    assert got["evidence"].to_list() == ["kernel-checked", "kernel-checked", "extrapolated"]
    notes = got["evidence_note"].to_list()
    assert "equal to a guest's" in notes[0] and "equal to a guest's" in notes[1]
    assert "no guest bound this point" in notes[2]
    before = yk.results().with_columns(  # version 9's model: every young folio walked, one call per PTE
        pl.when((pl.col("lru") == "mglru") & (pl.col("young_fraction") == 1.0) & (pl.col("batching") == "per_pte"))
        .then(28_672).otherwise(pl.col("model_calls")).alias("model_calls"))
    monkeypatch.setattr(yk, "results", lambda: before)
    got = evidence.label(model, load_profile("seed"), rows, "metric_calls")
    assert got["evidence"].to_list() == ["kernel-checked", "extrapolated", "extrapolated"]
    assert "a guest counted otherwise" in got["evidence_note"][1]
