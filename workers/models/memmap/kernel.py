"""What a real kernel checks of the memmap model: the planner and reader of its `KernelCheck` (the `kernel`
row source, workers.guest).

A point becomes one namespace the guest creates and binds (workers.guest.GuestConfig): its mode, map,
align and size. The rest of a point is the kernel's to decide, so a point the kernel under test cannot
be is infeasible, with the reason, and never booted:
- `strategy` and `struct_page_size` are what the kernel implements. Debian's kernels are mainline:
  memmap_init_zone_device() (mm/mm_init.c) initializes page by page (the slow path), and struct page is
  64 bytes. A patched kernel says what it carries ([kernel] strategy, struct_page_size).
- `compound_order` is the kernel's own choice: fsdax 0, devdax the align's order (dev_dax_probe() sets
  pgmap->vmemmap_shift from the align); "auto", or that same number, is the only one a kernel can show.
- `start_offset`: the guest's namespaces start 1 GiB-aligned; `medium`: they are in the guest's RAM;
  `nvdimm_kmsan`: Debian builds without CONFIG_NVDIMM_KMSAN.
- A namespace larger than MAX_NAMESPACE is not tried: the guest's time grows with it (TCG).
Rules the kernel itself enforces (an align outside supported_alignments, a size the region's 16 MiB
alignment does not divide, a 1 GiB offset that leaves no data) are left to it: such rows are infeasible
with the kernel's own message.

What a kernel row fills (`read`), from what the guest measured (workers.guest.records):
- metric_memmap_pages: /proc/vmstat nr_memmap_pages across the bind. In 6.12 (and 6.12.y since the
  stable fix "mm/sparse-vmemmap: fix DAX vmemmap accounting with optimization") section_activate()
  counts section_nr_vmemmap_pages() for every section it populates, the memmap placed on the device
  (map=dev) included; 6.1 has no such counter (null).
- metric_offset_bytes, metric_memmap_device_bytes, metric_end_trunc_bytes, metric_data_pfns: from the
  pfn/dax device's resource and size (drivers/nvdimm/pfn_devs.c resource_show(), size_show()).
- metric_init_instructions: under TCG, the guest runs with QEMU's instruction counter (1 ns of guest
  time per instruction, workers/guest/qemu.py), so the function_graph duration of
  memmap_init_zone_device() is the instructions it executed (interrupts that land inside included): the
  median over the [kernel] binds of one boot; with [kernel] boots, each boot's value is a sample
  (measure_min/median/max/repeats) and the metric their median. A rerun repeats it
  exactly whatever the host's load (qemu.DETERMINISTIC), as long as the guest runs the same /init; the binds of one namespace differ by the timer
  ticks that land inside (a few thousand instructions).
- metric_init_ms: under KVM, that duration in a machine's milliseconds; null under TCG, whose time is
  not a machine's (env_accel says which).
metric_memmap_dram_bytes stays null: the kernel counts memmap pages, not the page tables that map them,
which the model's DRAM bytes include (metric_vmemmap_pt_bytes).
"""

from __future__ import annotations

import functools
import io
import statistics
from dataclasses import dataclass
from importlib import resources

import numpy as np
import polars as pl

from workers.units import PAGE_SIZE, GiB, format_size

from . import layout as ml
from . import work
from .work import PRICED, recorded_costs

INSTRUCTIONS = "metric_init_instructions"

# A choice, not a kernel rule: it bounds what one guest takes of a small node. Under TCG an 8 GiB map=dev bind
# spent 177 ms in memmap_init_zone_device() (benchmarks/RESULTS.md), growing with the size; a 64 GiB map=dev
# memmap writes 1 GiB into the guest's sparse NVDIMM file, and a map=mem one needs 1 GiB of guest RAM.
MAX_NAMESPACE = 64 * GiB
KERNEL_ORDER = {"fsdax": lambda align: 0, "devdax": lambda align: (align // PAGE_SIZE).bit_length() - 1}


def plan(points: pl.DataFrame, settings) -> list:
    """A GuestConfig per point (bound `settings.binds` times, switched to the point's strategy first when
    the kernel offers a choice), or the reason the kernel under test cannot hold it."""
    from workers.guest import GuestConfig

    switchable = settings.switchable_strategies()
    out = []
    for p in points.iter_rows(named=True):
        reason = _cannot(p, settings, switchable)
        out.append(reason or GuestConfig(mode=p["param_mode"], map=p["param_map"], align_bytes=p["param_align"],
                                         namespace_size_bytes=p["param_namespace_size"], binds=settings.binds,
                                         strategy=p["param_strategy"] if switchable else None))
    return out


def _cannot(p: dict, settings, switchable: tuple[str, ...]) -> str | None:
    """The first thing the kernel under test cannot be of point p, or None."""
    order, kernel_order = p["param_compound_order"], KERNEL_ORDER[p["param_mode"]](p["param_align"])
    if switchable and p["param_strategy"] not in switchable:
        return f"the kernel under test switches among the strategies {list(switchable)} only"
    if not switchable and p["param_strategy"] != settings.strategy:
        return (f"the kernel under test has strategy {settings.strategy!r} only ([kernel] strategy; Debian's "
                "kernels are mainline: memmap_init_zone_device() initializes page by page, the slow path; the "
                "series' kernel, image = \"series:6.12\", switches among all four)")
    if p["param_struct_page_size"] != settings.struct_page_size:
        return f"the kernel under test has {settings.struct_page_size}-byte struct pages ([kernel] struct_page_size)"
    if order is not None and order != kernel_order:
        return (f"the kernel chooses the compound order itself: {kernel_order} for {p['param_mode']} at align "
                f"{format_size(p['param_align'])} (compound_order 'auto')")
    if p["param_start_offset"] != 0:
        return "the guest's namespaces start 1GiB-aligned (start_offset 0)"
    if p["param_medium"] != "dram":
        return "the guest's namespaces are emulated pmem in the guest's RAM (medium dram)"
    if p["param_nvdimm_kmsan"]:
        return "the kernel under test is built without CONFIG_NVDIMM_KMSAN"
    if p["param_namespace_size"] > MAX_NAMESPACE:
        return f"the guest holds namespaces up to {format_size(MAX_NAMESPACE)} (its time grows with the size)"
    return None


def read(point: dict, result) -> dict:
    """The metrics of an ok result (one boot's); under the instruction counter metric_init_instructions is
    the median of the boot's binds."""
    offset, size = result.data_offset_bytes, point["param_namespace_size"]
    data = result.data_size_bytes
    dev = point["param_map"] == "dev"
    counts = [round(us * 1000) for us in result.bind_us] if result.counted else []
    return {
        "metric_init_instructions": int(statistics.median_low(counts)) if counts else None,
        "metric_memmap_pages": result.memmap_pages_delta,
        "metric_offset_bytes": offset,
        "metric_memmap_device_bytes": None if offset is None else (offset - ml.INFO_BLOCK if dev else 0),
        "metric_end_trunc_bytes": None if offset is None or data is None else size - offset - data,
        "metric_data_pfns": None if data is None else data // PAGE_SIZE,
        "metric_init_ms": None if result.init_us is None or result.counted else result.init_us / 1e3,
    }


# The kernel results this project records (benchmarks/kernel_checked.py --record): one row per
# configuration a guest ran, of the shipped `kernel` spec and benchmarks/kernel_instructions.toml on the
# series' build and Debian's 6.12 and 6.1, with the exact metrics it compared and whether they agreed, and
# the kernel's and the model's instruction counts.
RESULTS = "kernel_results.csv"
KEY = ("mode", "map", "align", "namespace_size", "strategy")  # the axes a guest varies; the rest is fixed
FIT, CHECK = "fit", "check"  # a row's use: among those instructions.toml's costs were fit to, or not


@functools.cache
def results() -> pl.DataFrame:
    """The recorded kernel results (RESULTS), as written."""
    data = resources.files(__package__).joinpath(RESULTS).read_bytes()
    return pl.read_csv(io.BytesIO(data), schema_overrides={"checked": pl.Utf8, "instructions": pl.Int64,
                                                          "instructions_model": pl.Int64, "error": pl.Float64})


def bound(metric: str) -> pl.Expr:
    """KernelCheck.bound: true on the points where a recorded kernel row checked `metric` and agreed: an
    exact metric equal to the model's on any build that gives it; the instruction count of the build
    modeled rows price (work.PRICED) within its fit's leave-one-out error, at a point the fit did not see."""
    r = results()
    if metric == INSTRUCTIONS:
        tolerance = recorded_costs(PRICED).loo_error
        r = r.filter((pl.col("build") == PRICED) & (pl.col("use") == CHECK) & (pl.col("error").abs() <= tolerance))
    else:
        name = metric.removeprefix("metric_")
        r = r.filter(pl.col("agrees") & pl.col("checked").str.split(" ").list.contains(name))
    return _at(r)


def fitted(metric: str) -> tuple[str, pl.Expr] | None:
    """KernelCheck.fitted: for the instruction count, the build whose kernel rows its costs were fit to and
    true on those rows' points; None for any other metric."""
    if metric != INSTRUCTIONS:
        return None
    r = results().filter((pl.col("build") == PRICED) & (pl.col("use") == FIT))
    return PRICED, _at(r)


def _at(r: pl.DataFrame) -> pl.Expr:
    """True on a frame's points that are one of `r`'s configurations, as a guest has a point: 64-byte
    struct pages, the kernel's own compound order, offset 0, in DRAM, no KMSAN."""
    mode, align, order = pl.col("param_mode"), pl.col("param_align"), pl.col("param_compound_order")
    keys = r.select(_key(pl.col(k) for k in KEY)).to_series().unique().to_list()
    kernel_order = pl.when(mode == "fsdax").then(0).otherwise((align // PAGE_SIZE).log(2).round().cast(pl.Int64))
    return (_key(pl.col(f"param_{k}") for k in KEY).is_in(keys) & (pl.col("param_struct_page_size") == 64)
            & (pl.col("param_start_offset") == 0) & (pl.col("param_medium") == "dram") & ~pl.col("param_nvdimm_kmsan")
            & (order.is_null() | (order == kernel_order))).fill_null(False)


def _key(columns) -> pl.Expr:
    return pl.concat_str([c.cast(pl.Utf8) for c in columns], separator="/")


# ---------------------------------------------------------------- a user's build: its own instruction costs

CELL = ("param_strategy", "param_mode", "param_align", "param_map")  # a configuration: every size of it


@dataclass(frozen=True, kw_only=True, slots=True)
class BuildFit:
    """KernelCheck.fitter's answer: one build's instructions per operation (work.InstructionCosts) fit to its
    kernel rows, the profile table that holds them, and what the fit rests on."""

    build: str
    costs: work.InstructionCosts
    section: str  # the profile table (work.SECTION)
    entries: dict  # its entries (work.costs_section)
    loo_error: float  # the largest |leave-one-out error| over the configurations (NaN: one is not identified)
    lines: tuple[str, ...]  # per configuration, its rows and leave-one-out error; then the costs
    problem: str  # why the costs cannot be trusted; "" when the rows identify them


def fit_build(rows: pl.DataFrame) -> BuildFit:
    """`memsweep calibrate --from` on a kernel sweep: the instructions per operation of the build its kernel rows
    ran (`rows`: one build's ok memmap kernel rows; those with an instruction count and 64-byte struct pages
    are fit), by work.fit() over every row, and each configuration's leave-one-out error: predicted by the
    fit to the other configurations, as benchmarks/instructions.py does for memsweep's own build."""
    from . import work_counts

    rows = rows.filter((pl.col(INSTRUCTIONS) > 0) & (pl.col("param_struct_page_size") == work.BUILD_STRUCT_PAGE))
    builds = sorted(set(rows["kernel_build"].drop_nulls().to_list())) if "kernel_build" in rows.columns else []
    build = builds[0] if len(builds) == 1 else str(rows["env_guest_kernel"][0]) if rows.height else ""
    if rows.height == 0:
        return BuildFit(build=build, costs=recorded_costs(PRICED), section=work.SECTION, entries={},
                        loo_error=float("nan"), lines=(), problem="no kernel row with an instruction count "
                        "(a guest under TCG counts them) and 64-byte struct pages")
    strategy, n = work_counts(rows.select(pl.col("^param_.*$")))
    x, y = work.design(strategy, n), rows[INSTRUCTIONS].to_numpy().astype(float)
    cells = [tuple(r) for r in rows.select(CELL).iter_rows()]
    coef = work.fit(x, y)
    loo = work.leave_one_out(x, y, cells) / y - 1
    used = np.any(x > 0, axis=0)
    rank = int(np.linalg.matrix_rank(x[:, used] / y[:, None]))
    worst = float(np.nanmax(np.abs(loo))) if np.isfinite(loo).any() else float("nan")
    names = sorted(set(cells), key=str)
    lines = [f"{' '.join(_cell_text(c))}: {sum(1 for k in cells if k == c)} rows, leave-one-out error "
             + _worst(loo[[k == c for k in cells]]) for c in names]
    strategies = sorted(rows["param_strategy"].unique().to_list())
    fit_text = (f"nnls over {rows.height} kernel rows of {build} ({len(names)} configurations; strategies "
                f"{strategies}), memsweep calibrate --from")
    costs = work.costs_of(coef, build=build, fit_text=fit_text, loo_error=worst)
    lines.append("instructions per operation: " + ", ".join(f"{c} {v:.1f}" for c, v in zip(work.COLUMNS, coef)
                                                            if not np.isnan(v)))
    problem = ""
    if rank < int(used.sum()):
        problem = (f"the kernel rows identify {rank} of the {int(used.sum())} operation costs their counts use: "
                   "add namespace sizes, modes, aligns or maps to the kernel sweep")
    elif len(names) < 2 or np.isnan(loo).any():
        problem = ("a configuration's leave-one-out error cannot be measured (no other configuration identifies "
                   "the costs it uses): add configurations to the kernel sweep")
    return BuildFit(build=build, costs=costs, section=work.SECTION, entries=work.costs_section(costs),
                    loo_error=worst, lines=tuple(lines), problem=problem)


def _cell_text(cell: tuple) -> list[str]:
    strategy, mode, align, map_ = cell
    return [str(strategy), str(mode), format_size(int(align)), f"map={map_}"]


def _worst(errors: np.ndarray) -> str:
    if np.isnan(errors).any():
        return "not identified by the other configurations"
    return f"{errors[np.argmax(np.abs(errors))]:+.2%}"
