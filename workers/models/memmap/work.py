"""The work memmap_init_zone_device() does, as counts of operations, and the instructions they cost in
one kernel build: the modeled `metric_init_instructions`, set beside a kernel row's instruction count.

The counts follow Debian 6.12.118's mm/mm_init.c (memmap_init_zone_device(), memmap_init_compound(),
__init_zone_device_page(), pageblock_migratetype_init_range()) and the series' patches 4-5/8
(workers/guest/series/), per point (`layout.walk()` gives heads, tails written and compounds):

- `call`: one memmap_init_zone_device() call (entry, the altmap start, pr_debug's jiffies, return);
- `head_slow`, `head_copy`: compound heads (every pfn for fsdax) through __init_zone_device_page()
  (zone_device_page_init_slow() after patch 2), or with a template strategy all heads but the first as a
  template copy (zone_device_page_init_from_template(): the PFN refresh is a no-op on x86_64, then the
  strategy's copy), each with its loop step and the IS_ALIGNED(pfn, PAGES_PER_SECTION) test;
- `tail_slow`, `tail_copy`: the compound_nr_pages() - 1 tails memmap_init_compound() writes per
  compound: __init_zone_device_page() + prep_compound_tail() + set_page_count(), or with a template
  strategy all tails of a compound but its first as a copy (patch 5/8);
- `compound`: per compound of order > 0, the memmap_init_compound() call, __SetPageHead() and
  prep_compound_head();
- `pageblock`: set_pageblock_migratetype() on every pageblock (512 pfns) the walk covers, which 6.12.118
  does in pageblock_migratetype_init_range() after the loop; so does Debian's 6.1.192 (6.1.0-57), whose
  mm/mm_init.c has the same loop with the helper as a macro (mainline 6.1 set it in
  __init_zone_device_page(), only for the pfns whose struct page it writes).

A build's `InstructionCosts` give each operation's instructions; heads and tails copied cost per copy
strategy (memcpy, out-of-line __memcpy_flushcache(), inline MOVNTI). The costs of memsweep's own
`series:6.12` build (instructions.toml) are fit to its kernel rows by benchmarks/instructions.py, which
prints the leave-one-out error per configuration (benchmarks/RESULTS.md). They price 64-byte struct
pages, what the build has; other sizes get no modeled count. Another build's costs (a user's tree) are fit
by `memsweep calibrate --from` to that build's kernel rows (fit_build()) and live in a profile's SECTION;
modeled rows price with the profile's where it has them (profile_costs()) and name the build they priced
in their kernel_build column, so a count is never read against a kernel its costs were not fit to.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, fields
from importlib import resources

import numpy as np

OPS = ("call", "head_slow", "head_copy", "tail_slow", "tail_copy", "compound", "pageblock")
PAGEBLOCK_PFNS = 512  # pageblock_nr_pages: 1 << pageblock_order (HPAGE_PMD_ORDER, 9) on x86_64
BUILD_STRUCT_PAGE = 64  # sizeof(struct page) of the builds priced (no KMSAN, no LAST_CPUPID_NOT_IN_PAGE_FLAGS)
PRICED = "series:6.12"  # the build modeled rows price by default: memsweep's own, the one that runs every strategy
SECTION = "memmap_instructions"  # a profile's table of one build's instruction costs (memsweep calibrate --from)
SLOW = 0  # strategy index, as memmap.STRATEGIES
STRATEGY_NAMES = ("template", "template_nt", "template_nt_inline")  # the copy strategies, indices 1-3


def counts(strategy: np.ndarray, w: dict, order: np.ndarray) -> dict[str, np.ndarray]:
    """Each point's operation counts (OPS) from its walk (`layout.walk()`) and strategy index."""
    heads, tails = w["heads"], w["tails_written"]
    template = strategy != SLOW
    compounds = np.where(order > 0, heads, 0)
    with_tails = np.where(w["per_compound"] > 1, compounds, 0)  # compounds that write a first tail
    head_slow = np.where(template, np.minimum(heads, 1), heads)
    tail_slow = np.where(template, with_tails, tails)
    first, end = w["first_pfn"], w["first_pfn"] + w["walked"]
    pageblocks = -(-end // PAGEBLOCK_PFNS) - -(-first // PAGEBLOCK_PFNS)  # pageblock_align(): ALIGN up
    return {"call": (heads > 0).astype(np.int64), "head_slow": head_slow, "head_copy": heads - head_slow,
            "tail_slow": tail_slow, "tail_copy": tails - tail_slow, "compound": compounds,
            "pageblock": np.where(heads > 0, pageblocks, 0)}


@dataclass(frozen=True, kw_only=True, slots=True)
class InstructionCosts:
    """Instructions per operation (OPS) in one build; `head_copy` and `tail_copy` per template strategy
    (template, template_nt, template_nt_inline), as the strategy's index minus one. `build` names it and
    `fit` says what the numbers rest on."""

    build: str
    fit: str
    call: float
    head_slow: float
    tail_slow: float
    compound: float
    pageblock: float
    head_copy: tuple[float, float, float]
    tail_copy: tuple[float, float, float]
    # the fit's largest |leave-one-out error| over its rows (each configuration predicted by the fit to the
    # others): how far off a count at a configuration no fit saw has been; a kernel row within it agrees
    loo_error: float = float("nan")

    def instructions(self, strategy: np.ndarray, n: dict[str, np.ndarray]) -> np.ndarray:
        """The instructions of each point's counts `n` (counts()), under its strategy index; NaN where it
        copies with a strategy the fit had no rows of (its cost NaN)."""
        pick = np.clip(strategy - 1, 0, 2)
        head_copy, tail_copy = np.asarray(self.head_copy)[pick], np.asarray(self.tail_copy)[pick]
        head_copy = np.where(n["head_copy"] > 0, head_copy, 0.0)
        tail_copy = np.where(n["tail_copy"] > 0, tail_copy, 0.0)
        return (n["call"] * self.call + n["head_slow"] * self.head_slow + n["head_copy"] * head_copy
                + n["tail_slow"] * self.tail_slow + n["tail_copy"] * tail_copy + n["compound"] * self.compound
                + n["pageblock"] * self.pageblock)

    def toml(self) -> str:
        """The costs as a table of instructions.toml (a cost the fit could not identify: "nan")."""
        def value(v):
            if isinstance(v, tuple):
                return f"[{', '.join(value(x) for x in v)}]"
            return f'"{v}"' if isinstance(v, str) else ("nan" if np.isnan(v) else f"{v:.3f}" if abs(v) >= 1 else f"{v:.4g}")
        return "".join(f"{f.name} = {value(getattr(self, f.name))}\n" for f in fields(self))


@functools.cache
def recorded_costs(build: str) -> InstructionCosts:
    """The recorded costs of a build (a table of instructions.toml; PRICED the one modeled rows use)."""
    tables = tomllib.loads(resources.files(__package__).joinpath("instructions.toml").read_text())
    if build not in tables:
        raise KeyError(f"instructions.toml has no costs of build {build!r} (it has {sorted(tables)})")
    return InstructionCosts(**{k: tuple(v) if isinstance(v, list) else v for k, v in tables[build].items()})


def profile_costs(profile) -> InstructionCosts:
    """The instruction costs a profile prices with: its SECTION (a build's costs fit by memsweep calibrate
    --from) where it has one, else the recorded costs of PRICED."""
    table = profile.sections.get(SECTION)
    if not table:
        return recorded_costs(PRICED)
    def cost(key: str) -> float:
        entry = table.get(key)
        return float(getattr(entry, "value", float("nan")))
    copies = {op: tuple(cost(f"{op}_{s}") for s in STRATEGY_NAMES) for op in ("head_copy", "tail_copy")}
    return InstructionCosts(build=str(table.get("build", "")), fit=str(table.get("fit", "")),
                            **{op: cost(op) for op in OPS if op not in copies}, **copies, loo_error=cost("loo_error"))


def build_of(profile) -> str:
    """KernelCheck.build: the build whose instruction costs the profile prices with."""
    return profile_costs(profile).build


def costs_section(costs: InstructionCosts) -> dict:
    """`costs` as a profile's SECTION (workers.profiles entries): the build and the fit in words, each identified
    cost an entry (a copy strategy the build's rows never ran is left out: its counts get no modeled value)."""
    from workers.profiles import Quantity

    note = f"instructions per operation of build {costs.build} (workers/models/memmap/work.py), fit as `fit` says"
    out: dict = {"build": costs.build, "fit": costs.fit}
    values = {**{op: getattr(costs, op) for op in OPS if op not in ("head_copy", "tail_copy")},
              **{f"{op}_{s}": v for op in ("head_copy", "tail_copy")
                 for s, v in zip(STRATEGY_NAMES, getattr(costs, op))}}
    for key, v in values.items():
        if not np.isnan(v):
            out[key] = Quantity(value=round(float(v), 3), unit="instructions", source="calibrated", note=note)
    if not np.isnan(costs.loo_error):
        out["loo_error"] = Quantity(value=round(costs.loo_error, 4), unit="fraction", source="calibrated",
                                    note="the fit's largest |leave-one-out error| over its configurations")
    return out


# ---------------------------------------------------------------- fitting a build's costs to its kernel rows

COLUMNS = ("call", "head_slow", "tail_slow", "compound", "pageblock",
           *(f"{op}_copy[{s}]" for op in ("head", "tail") for s in STRATEGY_NAMES))


def design(strategy: np.ndarray, n: dict[str, np.ndarray]) -> np.ndarray:
    """The counts as a matrix over COLUMNS: a copy counts only in the column of its strategy."""
    cols = [n[c] for c in COLUMNS[:5]]
    for op in ("head_copy", "tail_copy"):
        cols += [np.where(strategy == s, n[op], 0) for s in (1, 2, 3)]
    return np.stack(cols, axis=1).astype(float)


def fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative instructions per column (scipy's nnls) minimizing the *relative* error of every point,
    so a 1 GiB bind weighs as much as a 16 GiB one; columns no point uses are NaN (not identified)."""
    from scipy.optimize import nnls

    used = np.any(x > 0, axis=0)
    scale = 1.0 / y
    coef = np.full(x.shape[1], np.nan)
    if not len(y):  # no rows (a leave-one-out of the only configuration): nothing identified; scipy's nnls
        return coef  # frees twice on an empty problem (free(): double free detected, the process aborts)
    coef[used] = nnls(x[:, used] * scale[:, None], y * scale, maxiter=50 * x.shape[1])[0]
    return coef


def predict(coef: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Instructions of rows `x` at `coef`; NaN where a row uses a column the fit could not identify."""
    missing = np.isnan(coef)
    out = x[:, ~missing] @ coef[~missing]
    return np.where(np.any(x[:, missing] > 0, axis=1), np.nan, out)


def costs_of(coef: np.ndarray, *, build: str, fit_text: str, loo_error: float = float("nan")) -> InstructionCosts:
    """`fit()`'s coefficients as InstructionCosts (an unidentified column stays NaN)."""
    c = [float(v) for v in coef]
    return InstructionCosts(build=build, fit=fit_text, call=c[0], head_slow=c[1], tail_slow=c[2], compound=c[3],
                            pageblock=c[4], head_copy=tuple(c[5:8]), tail_copy=tuple(c[8:11]), loo_error=loo_error)


def leave_one_out(x: np.ndarray, y: np.ndarray, groups: list) -> np.ndarray:
    """Each row's prediction by the fit to the rows of every other group (a group: one configuration, all
    its sizes); NaN where the other groups leave a column this row needs unidentified."""
    keys = np.asarray([str(g) for g in groups])
    out = np.full(len(y), np.nan)
    for k in np.unique(keys):
        held = keys == k
        out[held] = predict(fit(x[~held], y[~held]), x[held])
    return out
