"""The instructions of the mmap() that runs remap_pfn_range(), priced from the kernel's own counts.

The x86 /dev/mem guest (workers/guest/devmem.py) counts, under QEMU's instruction counter, the instructions
of each mapping's mmap() in the huge-pfnmap build, beside its leaves and page-table pages
(workers/models/pfnmap/kernel_results.csv, benchmarks/pfnmap_kernel.py --write). An mmap() is a call
(mmap_region(), track_pfn_remap()'s memtype reservation, the descent to the PMD level) plus, in
remap_pfn_range(), each PTE set (remap_pte_range(): pte_mkspecial(pfn_pte()), set_pte_at()), each PMD
leaf set (remap_try_huge_pmd() in workers/guest/hugepfn/0002) and each page-table page allocated
(pte_alloc_one() and its clearing; the RFC's deposits among them). `fit` finds those four counts' per-call
instructions by non-negative least squares (no operation takes fewer than none) on the points whose
physical start is 2 MiB aligned, and the model predicts the others with them.

What the costs say: a page-table page is about 4,500 instructions, most of them clearing it: under TCG a
`rep stosb` counts each of its 4,096 iterations (clear_page_erms() with -cpu max's ERMS), where a
hardware counter of retired instructions counts one; a PTE about 36; a PMD leaf nothing the fit can tell
from its deposited table (each leaf comes with one, so only their sum is pinned). These are the counts of
one build under TCG, not a machine's times: null for arm64 points.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

import numpy as np
import polars as pl
from scipy.optimize import nnls

from workers.units import MiB

RESULTS = "kernel_results.csv"  # benchmarks/pfnmap_kernel.py --write
TERMS = ("call", "pte_leaves", "pmd_leaves", "pt_pages")  # what an instruction count is priced from
TRAIN_ALIGN = 2 * MiB  # the points the costs are fit to: a physical start on a 2 MiB boundary


@dataclass(frozen=True, kw_only=True, slots=True)
class Fit:
    """Per-operation instructions of one call (`costs`, by TERMS), the rows they were fit to, the worst relative
    error on the rows held out and the worst leave-one-out error over all rows."""

    costs: dict[str, float]
    train: int
    held_out: int
    held_out_error: float
    loo_error: float


def _design(df: pl.DataFrame) -> np.ndarray:
    return np.column_stack([np.ones(df.height)] + [df[f"kernel_{t}"].to_numpy() for t in TERMS[1:]]).astype(float)


def fit(df: pl.DataFrame, column: str, train: pl.Series) -> Fit:
    """`column`'s instructions = call + PTEs x a + PMDs x b + tables x c, fit on the `train` rows."""
    x, y, t = _design(df), df[column].to_numpy().astype(float), train.to_numpy()
    coef, _ = nnls(x[t], y[t])
    held = np.abs(x[~t] @ coef / y[~t] - 1)
    loo = []
    for i in range(df.height):
        keep = np.arange(df.height) != i
        c, _ = nnls(x[keep], y[keep])
        loo.append(abs(x[i] @ c / y[i] - 1))
    return Fit(costs=dict(zip(TERMS, (float(c) for c in coef))), train=int(t.sum()), held_out=int((~t).sum()),
               held_out_error=float(held.max()) if held.size else 0.0, loo_error=float(max(loo)))


@functools.cache
def recorded() -> pl.DataFrame:
    with resources.files(__package__).joinpath(RESULTS).open("rb") as f:
        return pl.read_csv(f)


@functools.cache
def setup_fit() -> Fit:
    """mmap()'s costs, fit to the recorded aligned points."""
    df = recorded()
    return fit(df, "mmap_instructions", df["align"] == TRAIN_ALIGN)


def setup_instructions(pte: np.ndarray, pmd: np.ndarray, pt_pages: np.ndarray) -> np.ndarray:
    """mmap()'s instructions for these counts, at the recorded fit's costs."""
    c = setup_fit().costs
    return c["call"] + pte * c["pte_leaves"] + pmd * c["pmd_leaves"] + pt_pages * c["pt_pages"]
