"""ctypes bindings of libmemsweep.so (workers/native) and anonymous mappings to run its routines on.

Every timed routine returns elapsed nanoseconds measured in C around the
routine's loop, so the ctypes call overhead is not part of a sample; the clock
is wall time or the thread's CPU time (`set_clock`).
"""

from __future__ import annotations

import ctypes
import functools
from pathlib import Path

from workers.units import MiB

from .build import library_path
from .exceptions import MeasureError

U64, SIZE, INT, PTR = ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p
BAD = (1 << 64) - 1  # UINT64_MAX: the C side's "bad arguments"
MEMMAP_STRATEGIES = ("slow", "template", "template_nt", "template_nt_inline")
COPY_STRATEGIES = ("memcpy", "nt_call", "nt_inline")  # nt_inline: the patched inline set (4..96)
MEMMAP_SIZES = (64, 72, 80, 88, 96)
COPY_SIZES = tuple(range(8, 129, 8))
CLOCKS = ("wall", "thread")  # CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID

_SIGNATURES = {
    "ms_now_ns": (U64, []),
    "ms_set_clock": (INT, [INT]),
    "ms_memmap_init": (U64, [INT, INT, PTR, U64, U64, ctypes.c_uint, U64, INT, U64, ctypes.POINTER(U64)]),
    "ms_copy_run": (U64, [INT, INT, PTR, PTR, U64]),
    "ms_nt_stream_movnti": (U64, [PTR, SIZE]),
    "ms_nt_stream_sse": (U64, [PTR, SIZE]),
    "ms_map": (PTR, [SIZE, SIZE]),
    "ms_unmap": (INT, [PTR, SIZE]),
    "ms_advise": (INT, [PTR, SIZE, INT]),
    "ms_prefault": (None, [PTR, SIZE]),
    "ms_chase_build": (PTR, [PTR, SIZE, SIZE, SIZE, U64]),
    "ms_chase": (U64, [PTR, U64, ctypes.POINTER(PTR)]),
    "ms_chase_trace": (None, [PTR, PTR, U64, ctypes.POINTER(U64)]),
    "ms_stream_copy": (U64, [PTR, PTR, SIZE]),
}


class Native:
    """The library's functions with Python types; raises MeasureError on the C side's bad-argument value."""

    def __init__(self, path: Path):
        self.path = path
        self.lib = ctypes.CDLL(str(path))
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(self.lib, name)
            fn.restype, fn.argtypes = restype, argtypes

    def set_clock(self, clock: str) -> None:
        """Time the routines by "wall" clock (CLOCK_MONOTONIC) or by the "thread"'s CPU time
        (CLOCK_THREAD_CPUTIME_ID: time other tasks run on the pinned CPU is not counted)."""
        if clock not in CLOCKS:
            raise ValueError(f"'clock' must be one of {CLOCKS} (got {clock!r}).")
        self.lib.ms_set_clock(CLOCKS.index(clock))

    def memmap_init(self, addr: int, *, psize: int, strategy: str, heads: int, per_compound: int, order: int,
                    start_pfn: int, refcount_reset: bool, segment_heads: int = 0) -> list[int]:
        """Initialize heads x per_compound struct pages at addr (see memmap.c). Returns the elapsed ns
        of each stretch of `segment_heads` heads in order (one value, the whole run, when 0)."""
        segments = -(-heads // segment_heads) if segment_heads > 0 and heads > 0 else 1
        marks = (U64 * max(1, segments - 1))()  # the C side marks where segments 2.. start
        ns = self.lib.ms_memmap_init(psize, MEMMAP_STRATEGIES.index(strategy), addr, heads, per_compound, order,
                                     start_pfn, int(refcount_reset), max(0, segment_heads), marks)
        _checked(ns, f"ms_memmap_init(P={psize}, {strategy}, per_compound={per_compound}, order={order})")
        if segments == 1:
            return [ns]
        ends = [*marks, ns]
        return [b - a for a, b in zip([0, *ends[:-1]], ends)]

    def copy_run(self, dst: int, src: int, *, size: int, strategy: str, n: int) -> int:
        """n copies of the size-byte src at dst + i * size (see copy.c); elapsed ns."""
        ns = self.lib.ms_copy_run(size, COPY_STRATEGIES.index(strategy), dst, src, n)
        return _checked(ns, f"ms_copy_run(size={size}, {strategy})")

    def nt_stream(self, addr: int, nbytes: int, *, vector: bool = False) -> int:
        """One streaming non-temporal write of nbytes (MOVNTI, or MOVNTDQ when vector); elapsed ns."""
        fn = self.lib.ms_nt_stream_sse if vector else self.lib.ms_nt_stream_movnti
        return fn(addr, nbytes)

    def chase_build(self, addr: int, nbytes: int, *, working_set: int | None = None, stride: int = 64,
                    seed: int = 1) -> int:
        """Write lmbench's thrash chain over [addr, addr + nbytes); returns the start address.

        As `lat_mem_rd -t`: all nbytes / 4 KiB pages are shuffled (base_initialize()) and the chain runs
        through the first working_set / 4 KiB of them (thrash_initialize()), so a working set smaller
        than the mapping is scattered over all of it. None (or nbytes) chains every page."""
        ws = nbytes if working_set is None else working_set
        start = self.lib.ms_chase_build(addr, nbytes, ws, stride, seed)
        if not start:
            raise MeasureError(f"ms_chase_build({nbytes} bytes, working set {ws}, stride {stride}) failed: "
                               "bad size or no memory")
        return start

    def chase(self, start: int, loads: int) -> tuple[int, int]:
        """Follow the chain from `start` for `loads` dependent loads; (elapsed ns, the address it stopped at,
        where a next call continues)."""
        end = PTR()
        ns = self.lib.ms_chase(start, loads, ctypes.byref(end))
        return ns, end.value or 0

    def chase_trace(self, base: int, start: int, loads: int) -> list[int]:
        """Byte offsets from base of the first `loads` addresses the chase loads."""
        out = (U64 * loads)()
        self.lib.ms_chase_trace(base, start, loads, out)
        return list(out)

    def stream_copy(self, dst: int, src: int, nbytes: int) -> int:
        """One memcpy() of nbytes; elapsed ns."""
        return self.lib.ms_stream_copy(dst, src, nbytes)


@functools.cache
def _load(cc: str, cache_dir: str | None) -> Native:
    return Native(library_path(cc=cc, cache_dir=cache_dir))


def load(cc: str = "cc", cache_dir: Path | str | None = None) -> Native:
    """The routines built with `cc` (built on first use; loaded once per process)."""
    return _load(cc, None if cache_dir is None else str(cache_dir))


def _checked(ns: int, what: str) -> int:
    if ns == BAD:
        raise MeasureError(f"{what}: arguments the routine does not support")
    return ns


class Mapping:
    """A private anonymous mapping of `nbytes` at a multiple of `align` (not touched until prefault());
    a context manager that unmaps it."""

    def __init__(self, k: Native, nbytes: int, *, align: int = 2 * MiB):
        self.k = k
        self.nbytes = nbytes
        addr = k.lib.ms_map(nbytes, align)
        if not addr:
            raise MemoryError(f"mmap of {nbytes} bytes failed")
        self.addr: int = addr

    def advise(self, offset: int, length: int, huge: bool) -> bool:
        """MADV_HUGEPAGE (huge) or MADV_NOHUGEPAGE on [offset, offset + length); False if refused."""
        return length <= 0 or self.k.lib.ms_advise(self.addr + offset, length, int(huge)) == 0

    def prefault(self, offset: int = 0, length: int | None = None) -> None:
        """Write one byte per 4 KiB page of the range so the routines never fault."""
        self.k.lib.ms_prefault(self.addr + offset, self.nbytes - offset if length is None else length)

    def read(self, offset: int, length: int) -> bytes:
        return ctypes.string_at(self.addr + offset, length)

    def write(self, offset: int, data: bytes) -> None:
        ctypes.memmove(self.addr + offset, data, len(data))

    def close(self) -> None:
        if self.addr:
            self.k.lib.ms_unmap(self.addr, self.nbytes)
            self.addr = 0

    def __enter__(self) -> Mapping:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
