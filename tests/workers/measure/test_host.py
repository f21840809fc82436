"""Host facts (workers/measure/host.py): read from /proc and /sys, never an exception."""

from __future__ import annotations

import os

from workers.measure import host


def fake_root(tmp_path):
    """A /proc + /sys tree of an imaginary two-level-cache machine."""
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text("processor\t: 0\nmodel name\t: Imaginary CPU 9000\nflags\t: sse2\n\n"
                                           "processor\t: 1\nmodel name\t: Imaginary CPU 9000\n")
    (tmp_path / "proc/meminfo").write_text("MemTotal:       32000000 kB\nMemAvailable:   1000000 kB\n")
    cache = tmp_path / "sys/devices/system/cpu/cpu0/cache"
    for i, (level, kind, size) in enumerate([("1", "Data", "48K"), ("1", "Instruction", "32K"),
                                             ("2", "Unified", "2048K"), ("3", "Unified", "64M")]):
        d = cache / f"index{i}"
        d.mkdir(parents=True)
        for name, value in (("level", level), ("type", kind), ("size", size)):
            (d / name).write_text(value + "\n")
    thp = tmp_path / "sys/kernel/mm/transparent_hugepage"
    thp.mkdir(parents=True)
    (thp / "enabled").write_text("always [madvise] never\n")
    return tmp_path


def test_host_facts_reads_cpu_caches_thp_and_memory(tmp_path):
    """CPU model, L1d/L2/L3 bytes, the bracketed THP mode and MemAvailable come from the tree."""
    facts = host.host_facts(fake_root(tmp_path))
    assert facts["cpu_model"] == "Imaginary CPU 9000"
    assert (facts["l1d_bytes"], facts["l2_bytes"], facts["l3_bytes"]) == ("49152", "2097152", "67108864")
    assert facts["thp_mode"] == "madvise"
    assert facts["mem_available_bytes"] == str(1000000 * 1024)
    assert facts["kernel_release"] == os.uname().release
    assert all(isinstance(v, str) for v in facts.values())


def test_tlb_size_comes_from_amd_cpuinfo_and_is_unknown_elsewhere(tmp_path):
    """AMD's "TLB size : 3584 4K pages" gives 3584 entries (the first processor's); a cpuinfo without
    the line (Intel, arm64) gives None, and host_facts says "unknown"."""
    root = fake_root(tmp_path)
    assert host.tlb_4k_entries(root) is None and host.host_facts(root)["tlb_4k_entries"] == "unknown"
    (root / "proc/cpuinfo").write_text(
        "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9654 96-Core Processor\n"
        "cache size\t: 1024 KB\nTLB size\t: 3584 4K pages\nclflush size\t: 64\n\n"
        "processor\t: 1\nTLB size\t: 2048 4K pages\n")
    assert host.tlb_4k_entries(root) == 3584
    assert host.host_facts(root)["tlb_4k_entries"] == "3584"


def test_missing_files_give_unknown_not_errors(tmp_path):
    """An empty tree yields 'unknown' facts and THP 'unsupported'."""
    facts = host.host_facts(tmp_path)
    assert facts["cpu_model"] == facts["l3_bytes"] == facts["mem_available_bytes"] == "unknown"
    assert facts["tlb_4k_entries"] == "unknown"
    assert facts["thp_mode"] == "unsupported"


def test_anon_huge_bytes_sums_overlapping_mappings_clipped_to_the_range(tmp_path):
    """AnonHugePages of each mapping overlapping the range counts, at most its overlap."""
    smaps = tmp_path / "smaps"
    smaps.write_text(
        "00400000-00800000 rw-p 00000000 00:00 0\nAnonHugePages:      4096 kB\n"
        "00800000-00a00000 rw-p 00000000 00:00 0\nAnonHugePages:      2048 kB\n"
        "00c00000-00e00000 rw-p 00000000 00:00 0\nAnonHugePages:      2048 kB\n")
    assert host.anon_huge_bytes(0x600000, 0x400000, smaps) == 0x200000 + 0x200000
    assert host.anon_huge_bytes(0x400000, 0x600000, smaps) == 6 << 20
    assert host.anon_huge_bytes(0xa00000, 0x200000, smaps) == 0


def test_this_hosts_facts_are_readable():
    """On the test machine every key is present and the architecture is in the models' spelling."""
    facts = host.host_facts()
    assert set(facts) == {"cpu_model", "arch", "l1d_bytes", "l2_bytes", "l3_bytes", "tlb_4k_entries", "thp_mode",
                          "kernel_release", "mem_available_bytes"}
    assert facts["arch"] and facts["arch"] not in ("aarch64", "amd64")
    assert int(facts["mem_available_bytes"]) > 0
