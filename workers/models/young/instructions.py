"""What the arm64 guest's instructions say of young.unmap_step_ns, the one per-operation cost of the young model
that no exact figure pins (the x86 '50%+' bound is its only figure).

Debian's 6.12 reclaims the same 48 MiB four ways on the classic LRU (kernel_results.csv: orders 5 and 6, every
folio old or every folio young), each a count of four operations: young-bit calls (one PTE each,
contpte_ptep_test_and_clear_young()), folio visits (folio_referenced_one()), folios reclaimed and pages
reclaimed. Four rows and four unknowns: the instructions of each operation are solved exactly, with no row left
over to check them (`per_operation`). A page reclaimed on 6.12 is one try_to_unmap_one() step (mm/rmap.c) with
its deferred TLBI and its share of a contpte unfold (contpte_convert(), arch/arm64/mm/contpte.c): 676
instructions, of which the page-cache and free work is per folio, not per page.

Instructions are not time, and under TCG the guest's time is noise. The model's own prices say how many
instructions a nanosecond of each part of the same reclaim holds (the order-5 point, every folio old): its
young-bit calls (a page_vma_mapped_walk() step, the helper's atomics: the same kind of work as an unmap step)
and the rest of reclaim per folio. At each of those rates a step's instructions are a time, and what the model
prices beside unmap_step_ns in one step (call_ns, the atomics, the unfold's PTE writes) leaves the step's own
work (`implied_step`). The TLB work (a TLBI that does not wait, an unfold's TLBI + DSB) is waiting, not
instructions, and is left out of both sides.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from workers.profiles import Profile

OPERATIONS = ("kernel_calls", "kernel_walks", "kernel_folios", "kernel_ptes")  # the rows' counts, in order
NAMES = ("young-bit call", "folio visit", "folio reclaimed", "page reclaimed")
RELEASE = "6.12"  # per-PTE young-bit calls and per-PTE unmap: one step a page
POINT = {"namespace_size": 48 << 20, "mapped_size": 64 << 20, "align": 2 << 20, "compound_order": 5,
         "young_fraction": 0.0}  # the recorded classic-LRU point whose parts give the rates


def per_operation(results: pl.DataFrame, release: str = RELEASE) -> dict[str, float]:
    """Instructions per operation (NAMES) of one kernel's classic-LRU rows, solved exactly: it needs as many
    rows as operations, and their counts independent."""
    rows = results.filter((pl.col("lru") == "classic") & pl.col("release").str.starts_with(release))
    counts = rows.select(OPERATIONS).to_numpy().astype(float)
    if counts.shape != (len(OPERATIONS), len(OPERATIONS)) or np.linalg.matrix_rank(counts) < len(OPERATIONS):
        raise ValueError(f"{release}'s classic-LRU rows do not determine {len(OPERATIONS)} operations: "
                         f"{counts.shape[0]} rows of rank {np.linalg.matrix_rank(counts) if counts.size else 0}")
    return dict(zip(NAMES, np.linalg.solve(counts, rows["instructions"].to_numpy().astype(float))))


@dataclass(frozen=True, slots=True)
class Implied:
    part: str  # whose instructions per ns, possessive ("young-bit calls'")
    rate: float  # instructions per ns there (the guest's instructions over the model's time)
    step_ns: float  # unmap_step_ns at that rate


def implied_step(profile: Profile, results: pl.DataFrame) -> tuple[dict[str, float], list[Implied]]:
    """The per-operation instructions, and unmap_step_ns at the rate of the young-bit calls and of the rest of
    reclaim (see the module doc)."""
    from . import COSTS, MODEL  # the model's own prices and counts (a module-level import would be circular)

    per = per_operation(results)
    cost = {k: float(profile.value("young", k)) for k in COSTS}
    point = pl.DataFrame({**{f"param_{k}": [v] for k, v in POINT.items()}, "param_arch": ["arm64"],
                          "param_batching": ["per_pte"], "param_unmap": ["per_pte"], "param_lru": ["classic"],
                          "param_first_pte_cont": [True]})
    a, c, _ = MODEL._counts(point)
    one = {k: float(v[0]) for k, v in c.items()}
    calls_ns = float(MODEL._young_ns(c, "pp", a["arm64"], cost)[0])
    rest_ns = one["folios"] * cost["folio_ns"]
    rates = {"young-bit calls'": per["young-bit call"] * one["calls_pp"] / calls_ns,
             "rest of reclaim's": (per["folio visit"] * one["walks_pp"] + per["folio reclaimed"] * one["folios"])
             / rest_ns}
    steps = one["unmap_steps_pp"]
    beside = (cost["call_ns"] + one["unmap_atomics_pp"] / steps * cost["pte_atomic_ns"]
              + one["unmap_writes_pp"] / steps * cost["pte_read_ns"])
    per_step = per["page reclaimed"] * one["pages"] / steps
    return per, [Implied(part, rate, per_step / rate - beside) for part, rate in rates.items()]


def lines(profile: Profile) -> list[str]:
    """Calibration.crosscheck: what `memsweep calibrate` prints of it, under the assumed ranges."""
    from .kernel import results

    per, implied = implied_step(profile, results())
    entry = profile.sections["young"]["unmap_step_ns"]
    low, high = entry.range or (entry.value, entry.value)  # a profile may hold it at one value
    held = f"assumed within [{low:g}, {high:g}] ns" if entry.range else f"held at {entry.value:g} ns, no range"
    at = "; ".join(f"at the {i.part} rate ({i.rate:.2f} instructions per ns) {i.step_ns:.1f} ns" for i in implied)
    below = sum(i.step_ns < low for i in implied)
    above = sum(i.step_ns > high for i in implied)
    n = len(implied)
    verdict = ("every reading inside it: the instructions agree" if not below and not above
               else "every reading below it: the instructions and the assumption meet only at its low end"
               if below == n else "every reading above it: they meet only at its high end" if above == n
               else f"{n - below - above} of {n} readings inside it, {below} below, {above} above")
    if not entry.range:
        verdict = f"{below} of {n} readings below it, {above} above"
    solved = ", ".join(f"{name} {v:,.0f}" for name, v in per.items())
    return [f"young.unmap_step_ns against the arm64 guest's instructions (Debian {RELEASE}, classic LRU, per "
            f"operation, solved exactly from {len(OPERATIONS)} rows: {solved}):",
            f"  the {per['page reclaimed']:,.0f}-instruction unmap step's own work is, {at}",
            f"  {held}: {verdict}"]
