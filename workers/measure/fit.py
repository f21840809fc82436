"""Calibration figures from measured rows, so a profile can be fit to this host's measurements.

`figures_from_measured(model, frame)` turns the ok measured rows of a model
into `Figure`s (published = the measured least disturbed time, measure_min, or
the median; params = the row's point) for `workers.calibrate.calibrate(model,
profile, figures=..., free=model.free_for_measured)`. The same point measured
more than once (reruns, several nodes of one CPU model) becomes one figure, the
median of the values. `host_profile()` puts the host's own cache sizes into the
profile the fit uses. The fit itself starts from neutral points inside each
cost's bounds (workers.calibrate): a single start from the seed profile's Ice
Lake costs stops in a local minimum on another machine (on this project's EPYC
guest: RFO 47 GB/s + NT writes 50 GB/s, 30% errors, where RFO 183 GB/s + NT
writes 28 GB/s gives 5% rms).
"""

from __future__ import annotations

import statistics

import polars as pl

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


def host_profile(profile: Profile, facts: dict[str, int | str | None]) -> Profile:
    """`profile` with the host's cache sizes (source measured): copy.llc_bytes, so a fit does not
    price LLC-resident memmaps with another machine's LLC, and pfnmap's l1/l2/llc_bytes, which decide
    where the chase's page-table lines are found. `facts`: l1d_bytes, l2_bytes, l3_bytes as integers
    (a sweep's env_*_bytes columns) or as host_facts() gives them; unknown sizes (None, "unknown")
    leave an entry alone."""
    known = {k: int(v) for k, v in facts.items()
             if k in ("l1d_bytes", "l2_bytes", "l3_bytes") and _whole(v)}
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


def _whole(v: int | str | None) -> bool:
    """A known size: a positive integer, or host_facts()' digits."""
    if isinstance(v, str):
        return v.isdigit()
    return isinstance(v, int) and not isinstance(v, bool) and v > 0
