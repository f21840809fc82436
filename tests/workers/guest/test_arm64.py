"""The arm64 reclaim probe (workers/guest/arm64.py): its console read back, refused when it failed; and, marked
`guest`, Debian's arm64 6.12 (one young-bit call per PTE) and 7.3 (the seed series' batched call) under TCG,
each mapping a 64 MiB XFS file in 128 KiB folios and reclaiming 48 MiB of it from its memory cgroup."""

from __future__ import annotations

import dataclasses

import pytest

from workers.guest import arm64
from workers.guest.exceptions import GuestSetupError

CONSOLE = """[    1.0] booting
memsweep-reclaim release 7.3.4+deb13-cloud-arm64
memsweep-reclaim function contpte_test_and_clear_young_ptes
memsweep-reclaim lru 0x0000
memsweep-reclaim before_pgscan_file 10
memsweep-reclaim before_pgsteal_file 4
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
memsweep-reclaim done
"""
MIB = 1 << 20


def test_the_console_reads_back_as_a_run():
    run = arm64.parse(CONSOLE, lru="classic", readahead_kb=128, reclaim_bytes=48 * MIB)
    assert (run.release, run.function, run.visits) == ("7.3.4+deb13-cloud-arm64",
                                                       "contpte_test_and_clear_young_ptes", 974)
    assert run.young == {0: 391, 1: 519} and run.calls == 910 and run.pages == {32: 890, 4: 16, 16: 4}
    assert (run.scanned, run.reclaimed, run.instructions, run.mapped_bytes) == (28672, 12288, 14758064, 64 * MIB)
    assert ("910 calls, 519 found an accessed PTE; calls by pages: 4 pages: 16, 16 pages: 4, 32 pages: 890"
            in arm64.text(run))


@pytest.mark.parametrize("console, message", [
    (CONSOLE.replace("memsweep-reclaim done\n", ""), r"did not finish"),
    (CONSOLE.replace("memsweep-reclaim done", "memsweep-error mount the XFS disk"), r"failed: mount the XFS disk"),
    (CONSOLE.replace("dropped_pages 0", "dropped_pages 3"), r"dropped events \(\['dropped_pages'\]\)"),
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
def runs():
    """The four (kernel, LRU) runs (about 10 s each under TCG on 2 cores)."""
    kernels = {s: arm64.cached(s) for s in arm64.KERNELS}
    assert all(kernels.values()), "run `make guest` first (python -m workers.guest fetch-arm64)"
    return {(s, lru): arm64.reclaim(k, lru=lru) for s, k in kernels.items() for lru in arm64.LRUS}


@pytest.mark.guest
def test_before_the_series_one_call_per_pte_after_it_one_per_folio_run_over_the_same_ptes(runs):
    """Classic LRU, the same file and reclaim: 6.12 calls contpte_ptep_test_and_clear_young() once per PTE it
    asks about; 7.3 calls contpte_test_and_clear_young_ptes() once per folio run, most of them over a whole
    128 KiB folio (32 PTEs), and its calls cover exactly as many PTEs as 6.12's calls. Both reclaim the 48 MiB
    asked, and under either LRU."""
    before, after = runs[("6.12", "classic")], runs[("7.3", "classic")]
    assert before.function == "contpte_ptep_test_and_clear_young" and before.pages == {}
    assert after.function == "contpte_test_and_clear_young_ptes"
    assert max(after.pages, key=after.pages.get) == 128 // 4
    assert sum(n * c for n, c in after.pages.items()) == before.calls
    assert after.calls * 20 < before.calls
    assert all(r.reclaimed == 48 * MIB // 4096 for r in runs.values()), {k: r.reclaimed for k, r in runs.items()}


@pytest.mark.guest
def test_a_rerun_repeats_every_count_and_the_instructions(runs):
    """The XFS disk is a RAM disk and the guest runs under QEMU's instruction counter: a second boot of the
    same probe counts the same calls, visits and pages, and the same instructions, exactly."""
    again = arm64.reclaim(arm64.cached("6.12"), lru="mglru")
    assert dataclasses.replace(again, console="") == dataclasses.replace(runs[("6.12", "mglru")], console="")
