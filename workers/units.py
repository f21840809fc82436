"""Binary size units: "4KiB", "2MiB", "100GiB", "16TiB" <-> integers of bytes."""

from __future__ import annotations

import math
import re

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
TiB = 1 << 40
PAGE_SIZE = 4 * KiB  # x86_64 and arm64 with a 4 KiB granule

_UNITS = {"": 1, "B": 1, "KiB": KiB, "MiB": MiB, "GiB": GiB, "TiB": TiB, "PiB": 1 << 50}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMGTP]iB|B)?\s*$")


def parse_size(value: object) -> int:
    """Bytes from an int or a string with a binary unit; ValueError names what is allowed."""
    if isinstance(value, bool):
        raise ValueError(f"expected a size, got a boolean {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        m = _SIZE_RE.match(value)
        if m:
            return int(m.group(1)) * _UNITS[m.group(2) or ""]
    raise ValueError(
        f"expected a size: an integer of bytes or a string such as '4KiB', '2MiB', '100GiB', "
        f"'16TiB' (units B, KiB, MiB, GiB, TiB, PiB), got {value!r}"
    )


def format_size(n: int) -> str:
    """The largest binary unit that divides n exactly: 2097152 -> '2MiB'."""
    for unit in ("PiB", "TiB", "GiB", "MiB", "KiB"):
        if n and n % _UNITS[unit] == 0:
            return f"{n // _UNITS[unit]}{unit}"
    return f"{n}B"


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


SIZE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def bytes_text(n: float) -> str:
    """Bytes in prose, one decimal in the largest binary unit they reach: 1.5 * 2**30 -> '1.5 GiB', 300 -> '300 B'."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        if n >= _UNITS[unit]:
            return f"{n / _UNITS[unit]:.1f} {unit}"
    return f"{n:.0f} B"


def binary_size(n: float) -> str:
    """Bytes as a short binary-unit label: 1073741824 -> '1GiB', 1.5 MiB -> '1.5MiB'."""
    if not n or not math.isfinite(n) or n < 0:
        return "0" if n == 0 else ""
    i = min(int(math.log2(n) // 10), len(SIZE_UNITS) - 1)
    v = n / (1 << (10 * i))
    text = f"{v:.0f}" if abs(v - round(v)) < 1e-9 else f"{v:.3g}"
    return f"{text}{SIZE_UNITS[i]}"
