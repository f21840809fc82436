"""Axes: the typed, validated parameters a model is evaluated over.

An axis knows its kind (and so its polars dtype), its unit, its default, and
the rule a value must obey. `Axis.canonical(value)` turns what a spec says into
the one value a grid holds, or raises ValueError with the rule (the caller adds
the field name). The four shared axes mean the same thing in every model
(MODEL.md, "Shared axes").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import polars as pl

from .units import KiB, format_size, is_power_of_two, parse_size

KINDS = ("size", "int", "float", "choice", "bool", "order", "extent")
_DTYPES = {
    "size": pl.Int64,
    "int": pl.Int64,
    "float": pl.Float64,
    "choice": pl.Utf8,
    "bool": pl.Boolean,
    "order": pl.Int64,  # null means "auto": the kernel's (or model's) own choice
    "extent": pl.Int64,  # a size, or null for "all" (the whole of what the point maps)
}
AUTO = "auto"
ALL = "all"
MAX_ORDER = 18  # PUD leaves / 1 GiB compounds with 4 KiB pages


@dataclass(frozen=True, kw_only=True, slots=True)
class Axis:
    """One parameter of a model's grid; `rule` is the human text of `check`."""

    name: str
    kind: str
    default: object
    doc: str
    unit: str = ""
    rule: str = ""
    choices: tuple[str, ...] = ()
    check: Callable[[object], bool] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"'kind' must be one of {KINDS} (got {self.kind!r}).")
        if self.kind == "choice" and not self.choices:
            raise ValueError(f"axis {self.name!r}: a choice axis needs its choices.")

    @property
    def column(self) -> str:
        return f"param_{self.name}"

    @property
    def dtype(self) -> pl.DataType:
        return _DTYPES[self.kind]

    @property
    def allowed(self) -> str:
        """What values are allowed, for error messages and help text."""
        if self.kind == "choice":
            return "one of " + ", ".join(repr(c) for c in self.choices)
        base = {
            "size": "a size (integer bytes or '4KiB', '2MiB', '100GiB', ...)",
            "int": "an integer (of bytes: also a size such as '2MiB')" if self.unit == "bytes" else "an integer",
            "float": "a number",
            "bool": "true or false",
            "order": f"an integer order 0..{MAX_ORDER} or 'auto'",
            "extent": f"a size (integer bytes or '64MiB', '4GiB', ...) or '{ALL}'",
        }[self.kind]
        return f"{base}, {self.rule}" if self.rule else base

    def canonical(self, value: object) -> object:
        """The grid value for `value`, or ValueError saying what is allowed."""
        v = self._convert(value)
        if v is not None and self.check is not None and not self.check(v):
            raise ValueError(f"must be {self.allowed} (got {value!r})")
        return v

    def _convert(self, value: object) -> object:
        bad = ValueError(f"must be {self.allowed} (got {value!r})")
        if self.kind == "extent" and value == ALL:
            return None
        if self.kind in ("size", "extent"):
            try:
                v = parse_size(value)
            except ValueError:
                raise bad from None
            if v <= 0:
                raise ValueError(f"must be a positive size (got {value!r})")
            return v
        if self.kind == "order":
            if value == AUTO:
                return None
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ORDER:
                raise bad
            return value
        if self.kind == "int":
            if isinstance(value, str) and self.unit == "bytes":  # an offset in bytes, which may be 0: '2MiB'
                try:
                    return parse_size(value)
                except ValueError:
                    raise bad from None
            if isinstance(value, bool) or not isinstance(value, int):
                raise bad
            return value
        if self.kind == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise bad
            return float(value)
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise bad
            return value
        if value not in self.choices:
            raise bad
        return value

    def label(self, value: object) -> str:
        """Short canonical text of a value, used in point names and tables."""
        if value is None:
            return ALL if self.kind == "extent" else AUTO
        if self.kind in ("size", "extent"):
            return format_size(int(value))
        if self.kind == "bool":
            return "true" if value else "false"
        return str(value)


def _page_multiple(v: int) -> bool:
    return v % (4 * KiB) == 0


NAMESPACE_SIZE = Axis(
    name="namespace_size", kind="size", unit="bytes", default="100GiB",
    doc="namespace size S (memmap), total bytes copied (copy), mapping length L (pfnmap), "
    "bytes of folios reclaimed (young)",
    rule="a multiple of 4KiB", check=_page_multiple,
)
STRUCT_PAGE_SIZE = Axis(
    name="struct_page_size", kind="int", unit="bytes", default=64,
    doc="sizeof(struct page): 64 base, 80 with KMSAN or last_cpupid out of flags, 96 with both",
    rule="from 56 to 128 and a multiple of 8", check=lambda v: 56 <= v <= 128 and v % 8 == 0,
)
ALIGN = Axis(
    name="align", kind="size", unit="bytes", default="2MiB",
    doc="namespace align (memmap); destination alignment (copy); physical start alignment "
    "(pfnmap); folio range alignment (young)",
    rule="a power of two of at least 4KiB", check=lambda v: is_power_of_two(v) and v >= 4 * KiB,
)
COMPOUND_ORDER = Axis(
    name="compound_order", kind="order", unit="log2 pages", default=AUTO,
    doc="vmemmap_shift (memmap); largest leaf order (pfnmap); folio order (young); "
    "'auto' is the kernel's own choice",
)
SHARED_AXES = {a.name: a for a in (NAMESPACE_SIZE, STRUCT_PAGE_SIZE, ALIGN, COMPOUND_ORDER)}


def choice(name: str, choices: tuple[str, ...], default: str, doc: str) -> Axis:
    """A model's own categorical axis."""
    return Axis(name=name, kind="choice", unit="", default=default, doc=doc, choices=choices)
