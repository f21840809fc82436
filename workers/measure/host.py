"""What this node is: CPU model, cache sizes, TLB size, THP mode, kernel release, free memory (for row provenance).

Everything is read from /proc and /sys under `root` (tests pass a fake tree);
a fact that cannot be read is "unknown", never an exception.
"""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path

UNKNOWN = "unknown"
ARCH_NAMES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "arm64", "arm64": "arm64"}
_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)\s*$")


def host_facts(root: Path | str = "/") -> dict[str, str]:
    """cpu_model, arch, l1d/l2/l3_bytes, tlb_4k_entries, thp_mode, kernel_release, mem_available_bytes
    (strings; "unknown" where the host does not say)."""
    root = Path(root)
    caches = cache_sizes(root)
    return {
        "cpu_model": cpu_model(root),
        "arch": machine_arch(),
        "l1d_bytes": _str(caches.get("l1d")),
        "l2_bytes": _str(caches.get("l2")),
        "l3_bytes": _str(caches.get("l3")),
        "tlb_4k_entries": _str(tlb_4k_entries(root)),
        "thp_mode": thp_mode(root),
        "kernel_release": os.uname().release,
        "mem_available_bytes": _str(mem_available_bytes(root)),
    }


def machine_arch() -> str:
    """This machine's architecture in the models' spelling (x86_64, arm64), else what uname says."""
    m = platform.machine().lower()
    return ARCH_NAMES.get(m, m)


def cpu_model(root: Path) -> str:
    """'model name' of /proc/cpuinfo (x86), else the arm64 implementer/part, else unknown."""
    text = _read(root / "proc/cpuinfo") or ""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    if "model name" in fields:
        return fields["model name"]
    if "CPU part" in fields:
        return f"CPU implementer {fields.get('CPU implementer', '?')} part {fields['CPU part']}"
    return UNKNOWN


def cache_sizes(root: Path) -> dict[str, int]:
    """Bytes of cpu0's L1 data, L2 and L3 caches from /sys/devices/system/cpu/cpu0/cache/index*."""
    out: dict[str, int] = {}
    base = root / "sys/devices/system/cpu/cpu0/cache"
    for index in sorted(base.glob("index*")):
        level, kind, size = (_read(index / f) for f in ("level", "type", "size"))
        if not (level and kind and size) or kind.strip() == "Instruction":
            continue
        m = _SIZE.match(size)
        if not m:
            continue
        nbytes = int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]
        name = "l1d" if level.strip() == "1" else f"l{level.strip()}"
        out[name] = nbytes
    return out


def tlb_4k_entries(root: Path) -> int | None:
    """TLB entries for 4 KiB pages from /proc/cpuinfo's "TLB size : 3584 4K pages" (AMD prints it;
    Intel and arm64 do not: None)."""
    m = re.search(r"^TLB size\s*:\s*(\d+)\s*4K pages", _read(Path(root) / "proc/cpuinfo") or "", re.MULTILINE)
    return int(m.group(1)) if m else None


def thp_mode(root: Path) -> str:
    """The bracketed value of /sys/kernel/mm/transparent_hugepage/enabled (always, madvise, never)."""
    text = _read(root / "sys/kernel/mm/transparent_hugepage/enabled")
    m = re.search(r"\[(\w+)\]", text or "")
    return m.group(1) if m else "unsupported"


def mem_available_bytes(root: Path | str = "/") -> int | None:
    """MemAvailable of /proc/meminfo in bytes (None when unreadable)."""
    text = _read(Path(root) / "proc/meminfo") or ""
    m = re.search(r"^MemAvailable:\s+(\d+)\s*kB", text, re.MULTILINE)
    return int(m.group(1)) * 1024 if m else None


def anon_huge_bytes(addr: int, length: int, smaps: Path | str = "/proc/self/smaps") -> int:
    """Bytes of [addr, addr + length) backed by transparent huge pages (AnonHugePages of the
    overlapping mappings in smaps, each clipped to its overlap)."""
    total, overlap = 0, 0
    header = re.compile(r"^([0-9a-f]+)-([0-9a-f]+)\s")
    for line in (_read(Path(smaps)) or "").splitlines():
        m = header.match(line)
        if m:
            lo, hi = int(m.group(1), 16), int(m.group(2), 16)
            overlap = max(0, min(hi, addr + length) - max(lo, addr))
        elif overlap and line.startswith("AnonHugePages:"):
            total += min(overlap, int(line.split()[1]) * 1024)
    return total


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _str(v: int | None) -> str:
    return UNKNOWN if v is None else str(v)
