"""What a real kernel checks of the young model: the planner, reader and bound of its `KernelCheck` (the
`kernel` row source, workers.guest; the arm64 guest, workers/guest/arm64.py).

A point becomes one reclaim in its own boot of one of Debian's arm64 kernels under TCG (a
workers.guest.arm64.ReclaimConfig): the probe (reclaim.c) lays a file's folios out as the point says and
writes `namespace_size` into its memory cgroup's memory.reclaim. Which kernel is the point's batching:
- batching = per_pte, unmap = per_pte: Debian's 6.12 (before the seed series and v7.0's batched unmap of
  file large folios: folio_referenced_one() asks contpte_ptep_test_and_clear_young() about one PTE a call);
- batching = batched, unmap = batched: Debian's 7.3 cloud kernel (both series: one
  contpte_test_and_clear_young_ptes() call per folio run, nr its PTEs).
The rest of a point is the probe's to set: `compound_order` the readahead size (XFS file folios are
readahead's: mm/readahead.c page_cache_ra_order()), `align` where the mapping starts past a 2 MiB
boundary, `young_fraction` the folios touched again after clear_refs, `lru` MGLRU on or off, `mapped_size`
the mapping. A point the probe cannot be is infeasible, with the reason, and never booted: x86_64 (the
guest is arm64), batched young with per-PTE unmap or the reverse (no kernel of the two has one without the
other), orders other than 5 and 6 (readahead of 64 KiB made folios of orders 0 to 4; below order 4 a folio
has no contpte block and 6.12 clears its young bits in the inline __ptep_test_and_clear_young(), which no
probe sees; above 6, readahead's growing first windows outgrow the file's head, which the probe drops),
align below 64 KiB (no contpte block), heads unfolded (first_pte_cont = false: the probe maps whole
folios), a mapping that is no whole number of MiB or larger than MAX_MAPPED.

What a kernel row fills (`read`), from the probe's kprobe events and hist triggers, counted during the
memory.reclaim write only: metric_calls (the young-bit function's calls), metric_young_calls (those that
returned young), metric_ptes_asked (one a call on 6.12, the calls' nr on 7.3), metric_walks
(folio_referenced_one() calls: one mapping, so one per folio_referenced() walk), metric_ptes and
metric_folios (the file pages reclaimed, /proc/vmstat pgsteal_file, and those in folios). All exact: the
model's closed form must give the same numbers, and `bound` says where the recorded runs found it does.
Beside them metric_instructions_per_folio, the instructions of the memory.reclaim write (guest ns under the
instruction counter) per folio reclaimed, from the probe's second, unprobed reclaim of the same layout (the
counted write's own include about 1,700 instructions per kprobe hit, half or more of it): the kernel's alone
(the model prices time), the sample compare reads when it sets 6.12 against 7.3
(`--pair batching=per_pte:batched --pair unmap=per_pte:batched`). A
run whose mapped folios are not all of the point's order (the probe counts them before the reclaim) is
infeasible with what readahead made.
"""

from __future__ import annotations

import functools
import hashlib
from importlib import resources

import polars as pl

from workers.guest import arm64
from workers.guest.arm64 import ReclaimConfig, ReclaimRun
from workers.units import KiB, MiB

from ..recorded import recorded_points
from . import AUTO_ORDER
from .counts import PAGE, PMD_SIZE

SERIES = {("per_pte", "per_pte"): "6.12", ("batched", "batched"): "7.3"}  # (batching, unmap) -> kernel
MIN_ORDER = 5  # readahead of 64 KiB made folios of orders 0 to 4 on both kernels; 128 KiB makes order 5 only
MAX_ORDER = 6  # readahead's first windows (orders 2, 4, 6 at 256 KiB) fit the 2 MiB head the probe drops
MIN_ALIGN = 64 * KiB  # virtual and physical addresses agree modulo 64 KiB: contpte blocks
MAX_MAPPED = 256 * MiB  # a TCG guest's reclaim grows with the mapping


def plan(points: pl.DataFrame, settings) -> list:
    """Per point a ReclaimConfig, or why the probe cannot be that point."""
    return [_cannot(p) or _config(p) for p in points.to_dicts()]


def _order(p: dict) -> int:
    return AUTO_ORDER if p["param_compound_order"] is None else p["param_compound_order"]


def _mapped(p: dict) -> int:
    return p["param_namespace_size"] if p["param_mapped_size"] is None else p["param_mapped_size"]


def _cannot(p: dict) -> str | None:
    order, mapped = _order(p), _mapped(p)
    if p["param_arch"] != "arm64":
        return "the guest is arm64 (Debian's arm64 kernels under TCG): an x86_64 point is the model's alone"
    if (p["param_batching"], p["param_unmap"]) not in SERIES:
        return ("no kernel of the two has one batching without the other: Debian's 6.12 clears young bits and "
                "unmaps one PTE at a time (batching = per_pte, unmap = per_pte), 7.3 batches both")
    if not p["param_first_pte_cont"]:
        return "the probe maps whole folios: every head block is cont (first_pte_cont = true)"
    if not MIN_ORDER <= order <= MAX_ORDER:
        return (f"the probe's readahead makes folios of one order at orders {MIN_ORDER} and {MAX_ORDER} only: at 64 "
                "KiB it made orders 0 to 4 (and below order 4 a folio has no contpte block, which 6.12 clears "
                "inline, where no probe counts); above, readahead's first windows outgrow the file's head the "
                "probe drops")
    if p["param_align"] < MIN_ALIGN:
        return "align below 64KiB makes no contpte block, and 6.12 clears such PTEs inline, where no probe counts"
    if mapped % MiB or mapped > MAX_MAPPED:
        return f"the probe maps a whole number of MiB up to {MAX_MAPPED // MiB} MiB (mapped_size)"
    return None


def _config(p: dict) -> ReclaimConfig:
    order, mapped = _order(p), _mapped(p)
    folio = PAGE << order
    young = int(p["param_young_fraction"] * (mapped // folio)) * folio  # floor(young_fraction x folios)
    return ReclaimConfig(series=SERIES[p["param_batching"], p["param_unmap"]], lru=p["param_lru"],
                         readahead_kb=folio // KiB, mapped_bytes=mapped, reclaim_bytes=p["param_namespace_size"],
                         align_bytes=p["param_align"] % PMD_SIZE, young_bytes=young)


def prepare() -> None:
    """KernelCheck.prepare: Debian's arm64 kernels and busybox in this node's cache (fetched once), and the host
    tools the guest needs, so that the run's chunks find them."""
    arm64.ensure_host_tools(install=False)
    for series in arm64.KERNELS:
        arm64.fetch(series)
    arm64.busybox()


def inputs() -> dict:
    """KernelCheck.inputs: the arm64 kernels' packages and the probe's source (what else fixes a kernel row)."""
    probe = b"".join(resources.files(arm64.__package__).joinpath(f).read_bytes() for f in arm64.PROBE_FILES)
    return {"arm64": arm64.identity(), "probe_sha256": hashlib.sha256(probe).hexdigest()}


def read(point: dict, run: ReclaimRun) -> dict | str:
    """The metric columns of one reclaim (see the module doc), or why the guest was not the point: readahead
    made folios of other orders than the point's (the probe counts them before the reclaim)."""
    pages = 1 << _order(point)
    want = {_order(point): _mapped(point) // (PAGE * pages)}
    if run.folios != want:
        made = ", ".join(f"{c:,} of order {o}" if o < 31 else f"{c:,} of no power of two"
                         for o, c in sorted(run.folios.items()))
        return (f"readahead of {run.readahead_kb} KiB made the mapped folios {made or 'none'}, not "
                f"{want[_order(point)]:,} of order {_order(point)}")
    asked = sum(n * c for n, c in run.pages.items()) if run.pages else run.calls
    folios = run.reclaimed // pages
    return {"metric_calls": run.calls, "metric_young_calls": run.young.get(1, 0), "metric_ptes_asked": asked,
            "metric_walks": run.visits, "metric_ptes": run.reclaimed, "metric_folios": folios,
            "metric_instructions_per_folio": run.instructions / folios if folios else None}


RESULTS = "kernel_results.csv"  # benchmarks/young_kernel.py --write: the recorded kernel rows and the model's
KEY = ("namespace_size", "mapped_size", "align", "compound_order", "batching", "unmap", "lru", "young_fraction")


@functools.cache
def results() -> pl.DataFrame:
    """The recorded runs: per point (KEY) each metric's kernel value and the model's."""
    with resources.files(__package__).joinpath(RESULTS).open("rb") as f:
        return pl.read_csv(f)


def bound(metric: str) -> pl.Expr:
    """KernelCheck.bound: true on the points where a recorded run's `metric` equals the model's."""
    return _where(metric, equal=True)


def differs(metric: str) -> pl.Expr:
    """KernelCheck.differs: true on the points where a recorded run's `metric` is not the model's."""
    return _where(metric, equal=False)


def _where(metric: str, *, equal: bool) -> pl.Expr:
    key = {k: pl.col(f"param_{k}") for k in KEY}
    key["compound_order"] = key["compound_order"].fill_null(AUTO_ORDER)
    key["mapped_size"] = key["mapped_size"].fill_null(pl.col("param_namespace_size"))
    here = (pl.col("param_arch") == "arm64") & pl.col("param_first_pte_cont").fill_null(True)
    return recorded_points(results(), metric, key, where=here, equal=equal)
