"""Calibration figures from measured rows, so a profile can be fit to this host's measurements.

`figures_from_measured(model, frame)` turns the ok measured rows of a model
into `Figure`s (published = the measured least disturbed time, measure_min, or
the median; params = the row's point) for `workers.calibrate.calibrate(model,
profile, figures=..., free=model.free_for_measured)`. The same point measured
more than once (reruns, several nodes of one CPU model) becomes one figure, the
median of the values. `host_profile()` puts the host's own cache size into the
profile the fit starts from, and `fit_start()` moves the free parameters to the
best of several least-squares starts: the memmap fit started
from the seed profile's Ice Lake costs stops in a local minimum on another
machine (on this project's EPYC guest: RFO 47 GB/s + NT writes 50 GB/s, 30%
errors, where RFO 183 GB/s + NT writes 28 GB/s gives 5% rms).
"""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import polars as pl

from ..calibrate import fit, predict
from ..model import STATUS_OK, Figure, Model
from ..profiles import Profile
from .measure import HEADLINE, PFNMAP_HEADLINE

# The axes that name a measured figure, in order; any other axis off its default is appended as name=value.
ID_AXES = {
    "memmap": ("mode", "struct_page_size", "strategy", "namespace_size"),
    "copy": ("struct_page_size", "strategy", "inline_sizes", "namespace_size"),
    "pfnmap": ("access", "compound_order", "namespace_size"),
}
STATISTICS = {"median": "measure_median", "min": "measure_min"}
UNITS = {"metric_init_ms": "ms", "metric_ns_per_copy": "ns", "metric_ns_per_load": "ns", "metric_copy_ms": "ms"}


def figures_from_measured(model: Model, frame: pl.DataFrame, *, statistic: str = "min") -> list[Figure]:
    """One Figure per distinct measured point of `model` with status ok (rows of other sources,
    when the frame has a `source` column, are ignored). `statistic`: which summary of a row's
    repeats is the figure, "min" (measure_min, the least disturbed time, which repeats best on a
    host other jobs share) or "median" (the row's metric)."""
    if statistic not in STATISTICS:
        raise ValueError(f"'statistic' must be one of {sorted(STATISTICS)} (got {statistic!r}).")
    if model.name not in ID_AXES:
        return []
    rows = frame.filter(pl.col("status") == STATUS_OK)
    if "source" in rows.columns:
        rows = rows.filter(pl.col("source") == "measured")
    groups: dict[str, tuple[str, dict, list[float], set[str]]] = {}
    for row in rows.iter_rows(named=True):
        metric = PFNMAP_HEADLINE.get(row.get("param_access")) if model.name == "pfnmap" else HEADLINE[model.name]
        value = row.get(STATISTICS[statistic])
        value = row.get(metric) if value is None else value
        if value is None or value <= 0:
            continue
        params = {a.name: (a.label(None) if row[a.column] is None else row[a.column]) for a in model.axes}
        fid = figure_id(model, params)
        host = " ".join(str(row[c]) for c in ("env_host", "env_cpu_model") if row.get(c)) or "this host"
        groups.setdefault(fid, (metric, params, [], set()))
        groups[fid][2].append(float(value))
        groups[fid][3].add(host)
    return [
        Figure(id=fid, model=model.name, metric=metric, published=statistics.median(values), unit=UNITS[metric],
               params=params, source=(f"measured on {', '.join(sorted(hosts))} by the memsweep measure backend "
                                      f"(user-space analog; median of {len(values)} measured {statistic}(s))"))
        for fid, (metric, params, values, hosts) in groups.items()
    ]


def figure_id(model: Model, params: dict) -> str:
    """"memmap/measured/fsdax/P64/template_nt/1GiB", plus name=value for other axes off their default."""
    parts = []
    for name in ID_AXES[model.name]:
        axis = model.axis(name)
        label = axis.label(axis.canonical(params[name]))
        parts.append(f"P{label}" if name == "struct_page_size" else
                     f"order{label}" if name == "compound_order" else label)
    for axis in model.axes:
        if axis.name in ID_AXES[model.name]:
            continue
        value = axis.canonical(params[axis.name])
        if value != axis.canonical(axis.default):
            parts.append(f"{axis.name}={axis.label(value)}")
    return f"{model.name}/measured/" + "/".join(parts)


def host_profile(profile: Profile, facts: dict[str, str]) -> Profile:
    """`profile` with the host's cache sizes from host_facts() (source measured): copy.llc_bytes, so a
    fit does not price LLC-resident memmaps with another machine's LLC, and pfnmap's l1/l2/llc_bytes,
    which decide where the chase's page-table lines are found. Unknown sizes leave an entry alone."""
    known = {k: int(v) for k, v in facts.items() if k in ("l1d_bytes", "l2_bytes", "l3_bytes") and v.isdigit()}
    last = "l3_bytes" if "l3_bytes" in known else "l2_bytes" if "l2_bytes" in known else None
    wanted = {("copy", "llc_bytes"): last, ("pfnmap", "llc_bytes"): last,
              ("pfnmap", "l2_bytes"): "l2_bytes" if "l2_bytes" in known else None,
              ("pfnmap", "l1_bytes"): "l1d_bytes" if "l1d_bytes" in known else None}
    for (section, key), fact in wanted.items():
        if fact is not None:
            profile = profile.with_values({(section, key): known[fact]}, source="measured",
                                          note=f"{fact.split('_')[0].upper()} of cpu0 on the measuring host "
                                               "(/sys/devices/system/cpu)")
    return profile


def fit_start(model: Model, profile: Profile, figures, *, free=None, grid: int = 4, refine: int = 3) -> Profile:
    """`profile` with the `free` parameters (default: the model's free_for_measured) at the best
    least-squares fit among starts taken from a coarse grid (`grid` log-spaced values per parameter
    inside its bounds, plus the profile's own values): the `refine` best grid points by cost are each
    fit. Pass the result to workers.calibrate.calibrate(), whose fits then start there. (The models'
    max() kinks leave flat directions where a single least-squares start stops early.)"""
    free, figures = (model.free_for_measured if free is None else tuple(free)), tuple(figures)
    published = np.array([f.published for f in figures])

    def at(x) -> Profile:
        return profile.with_values({(p.section, p.key): v for p, v in zip(free, x)}, source="calibrated")

    def cost(x) -> float:
        pred = predict(model, figures, at(x))
        return float(np.sum(np.log(np.maximum(pred, 1e-300) / published) ** 2))

    axes = [[_log_between(p.lower, p.upper, (j + 0.5) / grid) for j in range(grid)] for p in free]
    points = [np.array([float(profile.value(p.section, p.key)) for p in free])]
    points += [np.array(x) for x in itertools.product(*axes)]
    ranked = sorted(points, key=cost)[:refine]
    fitted = [fit(model, figures, at(x0), free) for x0 in ranked]
    return at(min(fitted, key=cost))


def _log_between(lower: float, upper: float, q: float) -> float:
    """The point a share q of the way from lower to upper in log space (a zero lower bound counts as upper/1000)."""
    lo = lower if lower > 0 else 1e-3 * upper
    return float(math.exp(math.log(lo) + q * (math.log(upper) - math.log(lo))))
