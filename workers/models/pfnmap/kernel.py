"""What a real kernel checks of the pfnmap model: the planner and reader of its `KernelCheck` (the `kernel`
row source, workers.guest; the x86 /dev/mem guest, workers/guest/devmem.py).

A point becomes one mapping of /dev/mem in the huge-pfnmap build (Debian's 6.12 source with the RFC as
workers/guest/hugepfn/ follows the v2 mails' code paths: remap_pfn_range() makes a special PMD leaf for each
whole 2 MiB block whose virtual and physical starts are 2 MiB aligned, a PTE table deposited with it), all
points of a chunk in one boot: `compound_order` 0 the build's switch off (mainline's PTEs), 9 or "auto" on;
`namespace_size` the mapping's length; the physical start modulo 1 GiB the model's (pa_offset, else
`align`: geometry.starts()) and (va - pa) modulo 1 GiB `va_offset`. A point the guest cannot be is
infeasible, with the reason, and never booted: arm64 (the guest is x86_64), order 18 (the RFC makes no PUD
leaves: PUDs are the model's what-if), a mapping and physical start past the RAM the guest keeps for it.
`access` and `working_set` play no part: the guest counts leaves and page tables, not TLB misses (under TCG
QEMU walks the guest's page tables in host code, and there is no PMU), so every TLB, walk and access metric
of a kernel row is null: those are the model's alone.

What a kernel row fills (`read`), all exact, read from the kernel's own page-table dump and VmPTE after the
mmap(): metric_pte_leaves, metric_pmd_leaves, metric_pud_leaves, metric_cont_blocks (0: x86 has no cont
bit), metric_pt_pages and metric_pt_bytes (the PTE and PMD tables mmap() added, deposited ones included),
metric_huge_fraction (PMD leaves' bytes over the mapping); and metric_setup_instructions, the instructions
of the mmap() (guest ns under QEMU's instruction counter: one boot repeats them exactly), which the model
prices from per-operation costs fit to the recorded rows (workers/models/pfnmap/instructions.py).
"""

from __future__ import annotations

import hashlib
from importlib import resources

import numpy as np
import polars as pl

from workers.guest import devmem
from workers.guest.devmem import MapConfig, MapResult
from workers.units import MiB

from ..recorded import at_rows, recorded_points
from . import INSTRUCTIONS
from .geometry import PMD, PMD_ORDER, PUD_ORDER, starts
from .instructions import TRAIN_ALIGN, recorded, setup_fit, setup_instructions

def plan(points: pl.DataFrame, settings) -> list:
    """Per point a devmem.MapConfig, or why the guest cannot be that point."""
    return [_cannot(p) or _config(p) for p in points.to_dicts()]


def _order(p: dict) -> int:
    return PMD_ORDER if p["param_compound_order"] is None else p["param_compound_order"]


def pa_of(align: int, pa_offset: int) -> int:
    """The physical start modulo 1 GiB: the model's own (geometry.starts()), for one point."""
    pa, _ = starts(np.array([align]), np.array([pa_offset]), np.array([0]))
    return int(pa[0])


def _pa(p: dict) -> int:
    return pa_of(p["param_align"], p["param_pa_offset"])


def _cannot(p: dict) -> str | None:
    if p["param_arch"] != "x86_64":
        return ("the guest is x86_64 (the huge-pfnmap build of Debian's 6.12 under TCG): an arm64 point is the "
                "model's alone")
    if _order(p) == PUD_ORDER:
        return "the RFC makes no PUD leaves (compound_order 18 is the model's what-if)"
    if _pa(p) + p["param_namespace_size"] > devmem.RESERVED:
        return (f"the guest keeps {devmem.RESERVED // MiB} MiB of RAM for the mapping: its physical start modulo "
                f"1 GiB plus namespace_size must fit")
    return None


def _config(p: dict) -> MapConfig:
    return MapConfig(huge=_order(p) == PMD_ORDER, size=p["param_namespace_size"], pa_offset=_pa(p),
                     va_offset=p["param_va_offset"])


def prepare() -> None:
    """KernelCheck.prepare: the huge-pfnmap build, built here first when this node has none (minutes, progress on
    stderr), so that the run's chunks find it rather than each building it."""
    devmem.kernel()


def inputs() -> dict:
    """KernelCheck.inputs: the build's patches and config (its digest) and the probe's source."""
    from workers.guest import build

    probe = b"".join(resources.files(devmem.__package__).joinpath(f).read_bytes() for f in devmem.PROBE_FILES)
    return {"build": build.digest(build.HUGEPFN), "probe_sha256": hashlib.sha256(probe).hexdigest()}


def read(point: dict, result: MapResult) -> dict:
    """The metric columns of one mapping (see the module doc)."""
    return {"metric_pte_leaves": result.pte, "metric_cont_blocks": 0, "metric_pmd_leaves": result.pmd,
            "metric_pud_leaves": result.pud, "metric_pt_pages": result.pt_bytes // devmem.PAGE,
            "metric_pt_bytes": result.pt_bytes,
            "metric_huge_fraction": result.pmd * PMD / point["param_namespace_size"],
            "metric_setup_instructions": float(result.mmap_instructions)}


KEY = ("namespace_size", "align", "pa_offset", "va_offset", "compound_order")  # a recorded row's point
X86 = pl.col("param_arch") == "x86_64"  # where a recorded row can be


def _key() -> dict[str, pl.Expr]:
    key = {k: pl.col(f"param_{k}") for k in KEY}
    key["compound_order"] = key["compound_order"].fill_null(PMD_ORDER)
    return key


def bound(metric: str) -> pl.Expr:
    """KernelCheck.bound: true on the points where a recorded run's `metric` equals the model's; for the
    setup instructions, the recorded points held out of their costs' fit whose count the model's price is
    within the fit's leave-one-out error of."""
    if metric == INSTRUCTIONS:
        df, f = recorded(), setup_fit()
        price = setup_instructions(df["kernel_pte_leaves"], df["kernel_pmd_leaves"], df["kernel_pt_pages"])
        near = (price / df["mmap_instructions"] - 1).abs() <= f.loo_error
        return at_rows(df.filter(near & (df["align"] != TRAIN_ALIGN)), _key(), where=X86)
    return recorded_points(recorded(), metric, _key(), where=X86, equal=True)


def fitted(metric: str) -> tuple[str, pl.Expr] | None:
    """KernelCheck.fitted: the setup instructions' costs were fit to the huge-pfnmap build's recorded points
    with a 2 MiB-aligned physical start."""
    if metric != INSTRUCTIONS:
        return None
    from workers.guest import build

    return build.HUGEPFN, at_rows(recorded().filter(pl.col("align") == TRAIN_ALIGN), _key(), where=X86)


def differs(metric: str) -> pl.Expr:
    """KernelCheck.differs: true on the points where a recorded run's `metric` is not the model's."""
    return recorded_points(recorded(), metric, _key(), where=X86, equal=False)
