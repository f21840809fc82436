"""What a working set touches of a mapping: lmbench's page selection, counted in closed form.

lmbench `lat_mem_rd -t MAXLEN` (src/lat_mem_rd.c, src/lib_mem.c) maps the
whole MAXLEN buffer once: `base_initialize()` takes `permutation(nmpages)` of
*all* maxlen / pagesize pages, and for each row of size `range`
`thrash_initialize()` chains the first range / pagesize pages of that
permutation (page i -> page i + 1, the last back to the first). So a row's n
pages are n pages drawn without replacement from the mapping's N: a 64 MiB row
of a 4096M run touches almost every 2 MiB region of the 4 GiB.

An aligned unit of m pages (a TLB entry of m pages, a 64-byte line of 8 PTEs,
a PMD entry line covering 8 x 2 MiB ...) is touched iff at least one of its m
pages is chosen: P = 1 - C(N - m, n) / C(N, n) (hypergeometric), computed
through log-gamma. tests/workers/models/test_pfnmap.py checks these counts against a
direct simulation of the permutation.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln


def touched_fraction(total_pages, chosen_pages, unit_pages) -> np.ndarray:
    """P(an aligned unit of `unit_pages` pages holds a chosen page) when `chosen_pages` of
    `total_pages` are drawn at random without replacement (arrays broadcast; float64)."""
    n_all = np.asarray(total_pages, dtype=np.float64)
    n = np.minimum(np.asarray(chosen_pages, dtype=np.float64), n_all)
    m = np.minimum(np.asarray(unit_pages, dtype=np.float64), n_all)
    # C(N - m, n) / C(N, n) = (N - m)! (N - n)! / ((N - m - n)! N!); zero when m + n > N.
    free = n_all - m - n
    safe = np.maximum(free, 0.0)
    log_none = gammaln(n_all - m + 1) + gammaln(n_all - n + 1) - gammaln(safe + 1) - gammaln(n_all + 1)
    none = np.where(free >= 0, np.exp(np.minimum(log_none, 0.0)), 0.0)
    return np.where(n > 0, 1.0 - none, 0.0)


def touched(units, total_pages, chosen_pages, unit_pages) -> np.ndarray:
    """Expected units touched out of `units` aligned units of `unit_pages` pages each."""
    return np.asarray(units, dtype=np.float64) * touched_fraction(total_pages, chosen_pages, unit_pages)
