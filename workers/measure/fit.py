"""Calibration figures from measured rows, so a profile can be fit to this host's measurements.

`figures_from_measured(model, frame)` turns the ok measured rows of a model
into `Figure`s (published = the measured least disturbed time, measure_min, or
the median; params = the row's point) for `workers.calibrate.calibrate(model,
profile, figures=..., free=model.calibration.free_for_measured)`. The same point measured
more than once (reruns, several nodes of one CPU model) becomes one figure, the
median of the values. What names a figure and which metric it is come from the
model's declaration (`model.measurement`, workers.model.Measurement: id_axes,
id_prefixes, metric); its unit is the metric column's. `host_profile()` puts
the host's own cache sizes into the profile entries the models declare
(Measurement.host_caches). The fit itself starts from neutral points inside each
cost's bounds (workers.calibrate): a single start from the seed profile's Ice
Lake costs stops in a local minimum on another machine (on this project's EPYC
guest: RFO 47 GB/s + NT writes 50 GB/s, 30% errors, where RFO 183 GB/s + NT
writes 28 GB/s gives 5% rms).
"""

from __future__ import annotations

import statistics
from typing import Iterable

import polars as pl

from workers.dataset import MEASURED
from workers.model import L1D_BYTES, L2_BYTES, LAST_LEVEL, STATUS_OK, Figure, Model
from workers.profiles import Profile
from workers.registry import MODELS

STATISTICS = {"median": "measure_median", "min": "measure_min"}


def figures_from_measured(model: Model, frame: pl.DataFrame, *, statistic: str = "min") -> list[Figure]:
    """One Figure per distinct measured point of `model` with status ok (rows of other sources,
    when the frame has a `source` column, are ignored). `statistic`: which summary of a row's
    repeats is the figure, "min" (measure_min, the least disturbed time, which repeats best on a
    host other jobs share) or "median" (the row's metric)."""
    if statistic not in STATISTICS:
        raise ValueError(f"'statistic' must be one of {sorted(STATISTICS)} (got {statistic!r}).")
    m = model.measurement
    if m is None or not m.measurable:
        return []
    rows = frame.filter(pl.col("status") == STATUS_OK)
    if "source" in rows.columns:
        rows = rows.filter(pl.col("source") == MEASURED)
    groups: dict[str, tuple[str, dict, list[float], set[str]]] = {}
    for row in rows.iter_rows(named=True):
        metric = m.metric_of(row.get(f"param_{m.metric_axis}")) if m.metric_axis else m.metric_of()
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
        Figure(id=fid, model=model.name, metric=metric, published=statistics.median(values),
               unit=model.metric(metric).unit,
               params=params, source=(f"measured on {', '.join(sorted(hosts))} by the memsweep measure backend "
                                      f"(user-space analog; median of {len(values)} measured {statistic}(s))"))
        for fid, (metric, params, values, hosts) in groups.items()
    ]


def figure_id(model: Model, params: dict) -> str:
    """"<model>/measured/" and the labels of the model's declared id axes, each after its declared prefix
    (memmap: "memmap/measured/fsdax/P64/template_nt/1GiB"), plus name=value for other axes off their default."""
    m = model.measurement
    id_axes = m.id_axes if m is not None else ()
    prefixes = m.id_prefixes if m is not None else {}
    parts = []
    for name in id_axes:
        axis = model.axis(name)
        label = axis.label(axis.canonical(params[name]))
        parts.append(f"{prefixes.get(name, '')}{label}")
    for axis in model.axes:
        if axis.name in id_axes:
            continue
        value = axis.canonical(params[axis.name])
        if value != axis.canonical(axis.default):
            parts.append(f"{axis.name}={axis.label(value)}")
    return f"{model.name}/measured/" + "/".join(parts)


def host_profile(profile: Profile, facts: dict[str, int | str | None],
                 models: Iterable[Model] | None = None) -> Profile:
    """`profile` with the host's cache sizes (source measured) in the entries `models` (default: every
    registered model) declare in their measurement's host_caches: e.g. a last-level cache size, so a
    fit does not price LLC-resident memory with another machine's LLC, or the L1/L2 sizes that decide
    where a chase's page-table lines are found. `facts`: l1d_bytes, l2_bytes, l3_bytes as integers
    (a sweep's env_*_bytes columns) or as host_facts() gives them; unknown sizes (None, "unknown")
    leave an entry alone, and so does an entry the profile does not have."""
    known = {k: int(v) for k, v in facts.items()
             if k in ("l1d_bytes", "l2_bytes", "l3_bytes") and _whole(v)}
    last = "l3_bytes" if "l3_bytes" in known else "l2_bytes" if "l2_bytes" in known else None
    which = {LAST_LEVEL: last, L2_BYTES: "l2_bytes" if "l2_bytes" in known else None,
             L1D_BYTES: "l1d_bytes" if "l1d_bytes" in known else None}
    if models is None:
        models = MODELS.values()
    wanted: dict[tuple[str, str], str | None] = {}
    for model in models:
        if model.measurement is not None:
            for entry, cache in model.measurement.host_caches.items():
                wanted.setdefault(tuple(entry), which.get(cache))
    for (section, key), fact in wanted.items():
        if fact is not None and key in profile.sections.get(section, {}):
            profile = profile.with_values({(section, key): known[fact]}, source="measured",
                                          note=f"{fact.split('_')[0].upper()} of cpu0 on the measuring host "
                                               "(/sys/devices/system/cpu)")
    return profile


def _whole(v: int | str | None) -> bool:
    """A known size: a positive integer, or host_facts()' digits."""
    if isinstance(v, str):
        return v.isdigit()
    return isinstance(v, int) and not isinstance(v, bool) and v > 0
