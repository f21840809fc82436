"""copy: one struct-page-sized copy, repeated over a contiguous destination array.

Copy i of `struct_page_size` (s) bytes lands at base + dst_offset + i*s, where
base is aligned to `align` (>= 4 KiB, so a cache line: only dst_offset moves a
copy's position inside its lines). `namespace_size` is the total bytes copied:
n = namespace_size // s copies. Three ways to copy (axis `strategy`):

- memcpy: the compiler's constant-size expansion (kernel built with -mno-sse):
  s/8 cached 8-byte moves, then 4/2/1-byte moves for the remainder. Cached
  stores write-allocate: every destination line is read for ownership (RFO).
- nt_call: an out-of-line __memcpy_flushcache() (arch/x86/lib/usercopy_64.c):
  an unaligned head (to 8 bytes) goes through memcpy() + clean_cache_range()
  (CLWB), then 32-byte blocks of 4 MOVNTI, 8-byte MOVNTI, one 4-byte MOVNTI,
  and a cached tail (memcpy() + CLWB).
- nt_inline: memcpy_flushcache() with a constant size
  (arch/x86/include/asm/string_64.h): the sizes of `inline_sizes` are inline
  MOVNTI sequences (mainline 4/8/16; patched 4/8/16/32/48/64/80/96 as in patch
  8/8 of the seed series); any other size takes the nt_call path.

Price (per copy, ns) = max(compute, memory + serialized misses x latency):
compute = (store instructions (cached moves, MOVNTI, split stores counted
twice, CLWB) x store_cycles + out-of-line calls x call_cycles + iterations of
__memcpy_flushcache()'s three copy loops x loop_cycles) / clock_ghz, the
cycles the kernel's own copies take on the profile's core (workers/models/
incore.py: llvm-mca of the series' build as it ran); memory = the traffic the
copy causes (write-allocate reads, write-backs, non-temporal writes) over the
bandwidths of the profile's [copy] section. A destination that fits in the LLC
is not priced as a DRAM stream: with `warm_llc` (rewritten in a loop, as the
seed's rebinds do) min(1, LLC / footprint) of its lines are LLC-resident, so
their RFO is served by the LLC and they are not written back during the copy.
Non-temporal stores always go to DRAM. A cached store to a line that still has
non-temporal bytes in flight (an unaligned nt_call's head/tail next to MOVNTI
data) misses: MOVNTI neither writes its line into the caches nor fetches it
(Intel SDM Vol. 2B, MOVNTI) and evicts a cached copy of it (Intel Optimization
Reference Manual, "Memory Type and Non-temporal Stores"), so the store's read
for ownership goes to memory. It holds the store buffer, which drains in
program order (SDM Vol. 3A, section 11.10 "Store Buffer"): one DRAM latency
that holds up the store stream but not the instructions around it (as in the
memmap model's serial_misses()).

The memmap model prices its struct-page copies with `instructions()`,
`compute_ns()` and `memory_ns()` from here: there is one set of copy costs.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

import numpy as np
import polars as pl

from workers.axes import ALIGN, NAMESPACE_SIZE, STRUCT_PAGE_SIZE, Axis, choice
from workers.model import LAST_LEVEL, Calibration, Comparison, CostOrder, Measurement, Metric, Model, Report
from workers.plots import Lines, Panels, Series, X, Y
from workers.profiles import Profile

LINE = 64  # boot_cpu_data.x86_clflush_size on x86_64
STRATEGIES = ("memcpy", "nt_call", "nt_inline")
MEMCPY, NT_CALL, NT_INLINE = 0, 1, 2
INLINE_SETS = ("mainline", "patched")
# memcpy_flushcache() switch cases, arch/x86/include/asm/string_64.h
MAINLINE_INLINE = (4, 8, 16)
PATCHED_INLINE = (4, 8, 16, 32, 48, 64, 80, 96)  # [PATCH v10 8/8] x86/string: extend ... fixed-size fastpaths
_POPCOUNT = np.array([0, 1, 1, 2, 1, 2, 2, 3], dtype=np.int64)  # 4/2/1-byte moves for 0..7 bytes
MAX_TABLE_SIZE = 128  # the struct_page_size axis: 56..128, multiples of 8

STRATEGY = choice("strategy", STRATEGIES, "nt_inline",
                  "memcpy: cached constant-size copy; nt_call: out-of-line __memcpy_flushcache(); "
                  "nt_inline: memcpy_flushcache() with a constant size (inline MOVNTI for inline_sizes)")
INLINE_SIZES = choice("inline_sizes", INLINE_SETS, "mainline",
                      "fixed sizes memcpy_flushcache() copies inline: mainline 4/8/16, "
                      "patched 4..96 (patch 8/8 of the seed series)")
DST_OFFSET = Axis(
    name="dst_offset", kind="int", unit="bytes", default=0,
    doc="bytes added to the destination array start (misaligns every copy by the same amount)",
    rule="from 0 to 4095", check=lambda v: 0 <= v < 4096,
)

INT, FLOAT, BOOL = pl.Int64, pl.Float64, pl.Boolean


@dataclass(frozen=True, slots=True)
class CopyCosts:
    """The [copy] section of a profile: in-core cycles per operation at the core's clock, and the memory
    system's rates and sizes."""

    clock_ghz: float  # the core's clock: cycles per ns
    store_cycles: float  # one store instruction (MOV or MOVNTI) with its load and its share of address work
    call_cycles: float  # one out-of-line call and return (__memcpy_flushcache, memcpy), its entry and exit
    loop_cycles: float  # one iteration of a __memcpy_flushcache() copy loop beyond its stores (compare, branch)
    dram_write_gbs: float  # DRAM write bandwidth one core sustains (non-temporal or write-back)
    dram_rfo_gbs: float  # DRAM read-for-ownership bandwidth one core sustains for cached stores
    llc_gbs: float  # LLC bandwidth of RFOs that hit an LLC-resident line
    llc_bytes: float  # last-level cache size
    dram_latency_ns: float  # one serialized DRAM miss
    warm_llc: bool  # destinations rewritten in a loop keep an LLC-sized part resident
    # write-backs of cached lines where they go at another rate than dram_write_gbs (a medium that
    # amplifies them: memmap's pmem, workers.models.memmap.pmem_costs); None: dram_write_gbs
    writeback_gbs: float | None = None

    @property
    def store_ns(self) -> float:
        return self.store_cycles / self.clock_ghz

    @property
    def call_ns(self) -> float:
        return self.call_cycles / self.clock_ghz

    @property
    def loop_ns(self) -> float:
        return self.loop_cycles / self.clock_ghz

    @classmethod
    def of(cls, profile: Profile) -> CopyCosts:
        v = lambda k: profile.value("copy", k)  # noqa: E731
        return cls(
            clock_ghz=float(v("clock_ghz")), store_cycles=float(v("store_cycles")),
            call_cycles=float(v("call_cycles")), loop_cycles=float(v("loop_cycles")),
            dram_write_gbs=float(v("dram_write_gbs")), dram_rfo_gbs=float(v("dram_rfo_gbs")),
            llc_gbs=float(v("llc_gbs")), llc_bytes=float(v("llc_bytes")),
            dram_latency_ns=float(v("dram_latency_ns")), warm_llc=bool(v("warm_llc")),
        )


def instructions(size, dst, strategy, patched) -> dict[str, np.ndarray]:
    """Instruction counts of ONE copy of `size` bytes to address `dst` (arrays, broadcast).

    `strategy` holds MEMCPY/NT_CALL/NT_INLINE codes, `patched` whether the
    patched inline sizes apply. Keys: inline (bool), calls, movnti,
    cached_stores, cached_bytes, head, tail (cached fragment bytes of the
    __memcpy_flushcache path), nt_bytes, loops (iterations of its 32-, 8- and
    4-byte MOVNTI loops).
    """
    size = np.asarray(size, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    strategy = np.asarray(strategy)
    in_set = np.where(patched, np.isin(size, PATCHED_INLINE), np.isin(size, MAINLINE_INLINE))
    inline = (strategy == NT_INLINE) & in_set
    flushcache = (strategy != MEMCPY) & ~inline  # the out-of-line __memcpy_flushcache() path
    # __memcpy_flushcache: "cache copy and flush to align dest" to 8 bytes
    head = np.where(flushcache, np.minimum(size, (8 - dst % 8) % 8), 0)
    rest = size - head
    n32, rem = rest // 32, rest % 32  # "4x8 movnti loop"
    n8, rem = rem // 8, rem % 8  # "1x8 movnti loop"
    n4, tail = rem // 4, rem % 4  # "1x4 movnti loop" (at most once), "cache copy for remaining bytes"
    tail = np.where(flushcache, tail, 0)
    movnti = np.where(inline, size // 8 + (size % 8) // 4,  # movnti_8 per 8 bytes; movnti_4 for the 4-byte case
                      np.where(flushcache, 4 * n32 + n8 + n4, 0))
    cached = strategy == MEMCPY
    cached_stores = np.where(cached, size // 8 + _POPCOUNT[size % 8],
                             _POPCOUNT[np.minimum(head, 7)] + _POPCOUNT[tail])
    calls = flushcache.astype(np.int64) + (head > 0) + (tail > 0)  # memcpy() per cached fragment
    cached_bytes = np.where(cached, size, head + tail)
    return {
        "inline": inline, "calls": calls, "movnti": movnti, "cached_stores": cached_stores,
        "cached_bytes": cached_bytes, "head": head, "tail": tail, "nt_bytes": size - cached_bytes,
        "loops": np.where(flushcache, n32 + n8 + n4, 0),
    }


def _boundaries(lo, hi):
    """Multiples of LINE strictly inside (lo, hi)."""
    return np.maximum(0, (hi - 1) // LINE - lo // LINE)


def lines(size, dst, ins: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Cache-line geometry of ONE copy at `dst` with the counts `ins` of `instructions()`.

    Keys: lines (touched), full, partial, splits (stores that cross a line),
    flushed (CLWB'd lines), fragment_lines (lines RFO'd by cached fragments),
    serial (cached accesses to a line with non-temporal bytes in flight).
    Assumes size % 8 == 0 for `serial` (the previous copy then has the same head/tail).
    """
    size = np.asarray(size, dtype=np.int64)
    d = np.asarray(dst, dtype=np.int64) % LINE
    e = d + size
    touched = (e - 1) // LINE - d // LINE + 1
    full = np.maximum(0, e // LINE - (d + LINE - 1) // LINE)
    head, tail, nt = ins["head"], ins["tail"], ins["nt_bytes"]
    # 8-byte moves (cached memcpy, inline movnti) from d split when d is not 8-aligned;
    # the __memcpy_flushcache body starts 8-aligned and never splits.
    flat = (ins["calls"] == 0) & (size >= 8)
    splits = np.where(flat & (d % 8 != 0), _boundaries(d, d + 8 * (size // 8)), 0)
    head_line = (head > 0).astype(np.int64)  # a head or tail fragment stays inside one 8-byte granule
    tail_line = (tail > 0).astype(np.int64)
    same = (head > 0) & (tail > 0) & (d // LINE == (e - 1) // LINE)
    fragment_lines = head_line + tail_line - same
    # The previous copy's MOVNTI data ends at d - tail; this copy's at e - tail.
    serial = (((head > 0) & (nt > 0) & (d - tail > (d // LINE) * LINE)).astype(np.int64)
              + ((tail > 0) & (nt > 0) & (e - tail > ((e - 1) // LINE) * LINE)))
    return {"lines": touched, "full": full, "partial": touched - full, "splits": splits,
            "flushed": fragment_lines, "fragment_lines": fragment_lines, "serial": serial}


def cycles(stores, calls, cost: CopyCosts, loops=0):
    """In-core cycles: store instructions x store_cycles + out-of-line calls x call_cycles + copy-loop
    iterations x loop_cycles."""
    return stores * cost.store_cycles + calls * cost.call_cycles + loops * cost.loop_cycles


def compute_ns(stores, calls, cost: CopyCosts, loops=0):
    """Instruction time (ns): cycles() at the core's clock."""
    return cycles(stores, calls, cost, loops) / cost.clock_ghz


def resident_fraction(footprint, cost: CopyCosts):
    """Share of a rewritten destination of `footprint` bytes found in the LLC (0 when not warm)."""
    if not cost.warm_llc:
        return np.zeros_like(np.asarray(footprint, dtype=float))
    return np.minimum(1.0, cost.llc_bytes / np.maximum(np.asarray(footprint, dtype=float), 1.0))


def memory_ns(cached_bytes, cold_bytes, nt_bytes, footprint, cost: CopyCosts):
    """Memory time (ns) of write-allocated lines, cold re-touched lines and non-temporal bytes.

    `cached_bytes` are lines stored with cached stores over a destination of
    `footprint` bytes (LLC-resident fraction min(1, LLC/footprint) when warm);
    `cold_bytes` are lines read for ownership and written back from DRAM
    whatever the footprint (CLWB'd or non-temporally evicted lines);
    `nt_bytes` go to DRAM with non-temporal stores. GB/s is bytes per ns.
    """
    resident = resident_fraction(footprint, cost)
    writeback = cost.dram_write_gbs if cost.writeback_gbs is None else cost.writeback_gbs
    dram_line = 1.0 / cost.dram_rfo_gbs + 1.0 / writeback
    return (cached_bytes * ((1.0 - resident) * dram_line + resident / cost.llc_gbs)
            + cold_bytes * dram_line + nt_bytes / cost.dram_write_gbs)


def _table() -> dict[str, np.ndarray]:
    """Per-copy counts for every (size // 8, dst % 64, strategy, patched), averaged over the
    destination phases a stream of such copies cycles through (one full period)."""
    s8, off, strat, pat = np.meshgrid(np.arange(MAX_TABLE_SIZE // 8 + 1), np.arange(LINE), np.arange(3),
                                      np.arange(2), indexing="ij")
    size, off, strat, pat = (a.ravel().astype(np.int64) for a in (s8 * 8, off, strat, pat))
    safe = np.maximum(size, 8)
    ins = instructions(safe, off, strat, pat.astype(bool))
    period = LINE // np.gcd(safe, LINE)
    acc = {k: np.zeros(size.shape) for k in ("lines", "full", "partial", "splits", "flushed", "serial")}
    for j in range(LINE // 8):  # period <= 8 for multiples of 8
        live = j < period
        geo = lines(safe, off + j * safe, ins)
        for k in acc:
            acc[k] += np.where(live, geo[k], 0)
    table = {k: v / period for k, v in acc.items()}
    table.update({k: ins[k] for k in ("inline", "calls", "movnti", "cached_stores", "cached_bytes", "nt_bytes",
                                      "loops")})
    return table


_TABLE = _table()


def _lookup(size, dst, strategy, patched) -> np.ndarray:
    return (((np.clip(size, 0, MAX_TABLE_SIZE) // 8) * LINE + dst % LINE) * 3 + strategy) * 2 + patched


# The report's figure of this model (drawn by analysis/figures/declared.py).
PLOTS = (
    Lines(id="copy_cost", title="copy: ns per struct-page copy vs size, three copy paths",
          x=X("struct_page_size", "ticks", "copy size = sizeof(struct page) (bytes)"),
          y=Y("metric_ns_per_copy", label="time per copy (ns)"),
          hue=Series("strategy", order=("memcpy", "nt_call", "nt_inline"), title="copy path"),
          panels=Panels("inline_sizes", order=("mainline",), title="inline sizes: {value}"),
          caption="memcpy: cached constant-size copy; nt_call: out-of-line __memcpy_flushcache(); nt_inline: "
                  "memcpy_flushcache() with inline MOVNTI for the inline sizes (mainline 4/8/16, patched "
                  "4..96), other sizes fall back to the call."),
)

class CopyModel(Model):
    name = "copy"
    # 3: in-core cycles at the core's clock (the kernel's copies priced by llvm-mca); 2: lines_partial, rfo_bytes,
    # serial_misses are named *_per_copy (memmap's are Int64 totals)
    version = "3"
    description = ("one struct-page-sized copy repeated over a destination array: memcpy vs "
                   "__memcpy_flushcache vs inline MOVNTI; counts and ns per copy")
    axes = (NAMESPACE_SIZE, STRUCT_PAGE_SIZE, ALIGN, DST_OFFSET, STRATEGY, INLINE_SIZES)
    metrics = (
        Metric(column="metric_copies", dtype=INT, doc="copies in the array: namespace_size // struct_page_size"),
        Metric(column="metric_inline", dtype=BOOL,
               doc="the copy is an inline MOVNTI sequence (nt_inline with a size in inline_sizes)"),
        Metric(column="metric_calls", dtype=INT,
               doc="out-of-line calls per copy: __memcpy_flushcache() + memcpy() per cached fragment"),
        Metric(column="metric_movnti", dtype=INT, doc="MOVNTI instructions per copy"),
        Metric(column="metric_cached_stores", dtype=INT,
               doc="cached store instructions per copy (memcpy moves, fragment bytes)"),
        Metric(column="metric_cached_bytes", dtype=INT, doc="bytes per copy written with cached stores"),
        Metric(column="metric_split_stores", dtype=FLOAT,
               doc="stores per copy that cross a cache line (averaged over the array's line phases)"),
        Metric(column="metric_lines_written", dtype=FLOAT, doc="cache lines one copy touches (averaged over phases)"),
        Metric(column="metric_lines_full", dtype=FLOAT, doc="lines one copy covers entirely (averaged over phases)"),
        Metric(column="metric_lines_partial_per_copy", dtype=FLOAT,
               doc="lines one copy covers partly (averaged over phases)"),
        Metric(column="metric_lines_flushed", dtype=FLOAT,
               doc="lines per copy written back by clean_cache_range() (CLWB)"),
        Metric(column="metric_rfo_bytes_per_copy", dtype=FLOAT,
               doc="bytes per copy read for ownership (cached stores write-allocate)"),
        Metric(column="metric_dram_write_bytes", dtype=FLOAT,
               doc="bytes per copy written to DRAM (NT data, CLWB'd and evicted lines)"),
        Metric(column="metric_serial_misses_per_copy", dtype=FLOAT,
               doc="serialized DRAM misses per copy (cached fragment next to in-flight MOVNTI data)"),
        Metric(column="metric_compute_ns", dtype=FLOAT, better="lower",
               doc="instruction time per copy: (stores x store_cycles + calls x call_cycles + loop iterations x "
                   "loop_cycles) / clock_ghz"),
        Metric(column="metric_bound_ns", dtype=FLOAT, better="lower",
               doc="memory-bandwidth lower bound per copy (LLC-priced when the array fits)"),
        Metric(column="metric_ns_per_copy", dtype=FLOAT, better="lower",
               doc="modeled time per copy: max(compute, bound + serialized misses x latency)"),
        Metric(column="metric_gbs", dtype=FLOAT, better="higher",
               doc="copy throughput: struct_page_size / ns per copy (GB/s)"),
        Metric(column="metric_total_ms", dtype=FLOAT, better="lower", doc="time for all copies"),
        Metric(column="metric_memory_bound", dtype=BOOL, doc="the bandwidth bound exceeds the instruction time"),
    )
    headline = "metric_ns_per_copy"
    points_per_second = 8e6  # ~1e7 measured on one core, 1,000,000 mixed points
    report = Report(
        comparison=Comparison(axis="strategy", baseline="memcpy", metric="metric_ns_per_copy", label="copy path"),
        best_keys=("struct_page_size", "inline_sizes"), plots=PLOTS)
    calibration = Calibration(cost_orders=(
        CostOrder(lower="dram_rfo_gbs", higher="llc_gbs",
                  why="the LLC sits between the core and DRAM: an RFO it serves is no slower than one from DRAM"),
    ))
    # The user-space copy loop (workers/models/copy/measure.py) fills metric_ns_per_copy, and metric_gbs =
    # struct_page_size bytes / ns per copy; a fit takes the host's last-level cache as copy.llc_bytes.
    measurement = Measurement(
        planner="workers.models.copy.measure:plan_copy", metric="metric_ns_per_copy",
        derived={"metric_gbs": "struct_page_size"},
        id_axes=("struct_page_size", "strategy", "inline_sizes", "namespace_size"),
        id_prefixes={"struct_page_size": "P"}, host_caches={("copy", "llc_bytes"): LAST_LEVEL},
    )

    def evaluate(self, points: pl.DataFrame, profile: Profile) -> dict:
        """Per-copy counts (averaged over the array's line phases) and time per copy."""
        arr = points.select(
            pl.col("param_namespace_size").fill_null(0).clip(0, None).alias("total"),
            pl.col("param_struct_page_size").fill_null(8).clip(8, MAX_TABLE_SIZE).alias("size"),
            pl.col("param_dst_offset").fill_null(0).clip(0, None).alias("dst"),
            pl.when(pl.col("param_strategy") == "memcpy").then(MEMCPY)
            .when(pl.col("param_strategy") == "nt_call").then(NT_CALL).otherwise(NT_INLINE).alias("strategy"),
            (pl.col("param_inline_sizes") == "patched").fill_null(False).cast(pl.Int64).alias("patched"),
        )
        a = {c: arr[c].to_numpy() for c in arr.columns}
        size, dst = a["size"], a["dst"]
        idx = _lookup(size, dst, a["strategy"], a["patched"])
        t = {k: v[idx] for k, v in _TABLE.items()}
        cost = CopyCosts.of(profile)
        n = a["total"] // size
        cached = a["strategy"] == MEMCPY
        # stream: a cached array is RFO'd line by line once; fragment lines are RFO'd per copy
        d0 = dst % LINE
        array_lines = (d0 + n * size - 1) // LINE - d0 // LINE + 1
        footprint = array_lines * LINE
        per = np.maximum(n, 1)
        rfo = np.where(cached, footprint / per, t["flushed"] * LINE)
        written_back = (1.0 - resident_fraction(footprint, cost)) * footprint / per
        dram_write = np.where(cached, written_back, t["nt_bytes"] + t["flushed"] * LINE)
        stores = t["cached_stores"] + t["movnti"] + t["splits"] + t["flushed"]  # CLWB issues like a store
        compute = compute_ns(stores, t["calls"], cost, t["loops"])
        bound = np.where(cached, memory_ns(footprint / per, 0.0, 0.0, footprint, cost),
                         memory_ns(0.0, t["flushed"] * LINE, t["nt_bytes"], footprint, cost))
        ns = np.maximum(compute, bound + t["serial"] * cost.dram_latency_ns)
        return {
            "metric_copies": n, "metric_inline": t["inline"], "metric_calls": t["calls"],
            "metric_movnti": t["movnti"], "metric_cached_stores": t["cached_stores"],
            "metric_cached_bytes": t["cached_bytes"], "metric_split_stores": t["splits"],
            "metric_lines_written": t["lines"], "metric_lines_full": t["full"],
            "metric_lines_partial_per_copy": t["partial"], "metric_lines_flushed": t["flushed"],
            "metric_rfo_bytes_per_copy": rfo, "metric_dram_write_bytes": dram_write,
            "metric_serial_misses_per_copy": t["serial"], "metric_compute_ns": compute, "metric_bound_ns": bound,
            "metric_ns_per_copy": ns, "metric_gbs": size / ns, "metric_total_ms": ns * n / 1e6,
            "metric_memory_bound": bound > compute,
        }  # the host builds the frame: status from `infeasible`, metrics nulled where not ok

    @property
    def infeasible(self) -> tuple[tuple[pl.Expr, str], ...]:
        """Why a point cannot exist: (condition, message), the first that holds wins."""
        size, total = pl.col("param_struct_page_size"), pl.col("param_namespace_size")
        return (
            (size.is_null() | (size < 8) | (size > MAX_TABLE_SIZE) | (size % 8 != 0),
             f"struct_page_size (the copy size) must be a multiple of 8 from 8 to {MAX_TABLE_SIZE}"),
            (pl.col("param_dst_offset").is_null() | (pl.col("param_dst_offset") < 0),
             "dst_offset must be a non-negative number of bytes"),
            (total.is_null() | (total < size),
             "namespace_size (the total bytes copied) is smaller than one copy"),
        )


def period(size: int) -> int:
    """How many copies until the destination's line phase repeats (64 / gcd(size, 64))."""
    return LINE // gcd(size, LINE)


MODEL = CopyModel()
