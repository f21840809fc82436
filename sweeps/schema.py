"""The dataset schema as a Markdown table, from the code that writes it.

    python -m sweeps.schema      # prints the table the README carries

The README's table is this output; a test keeps the two equal.
"""

from __future__ import annotations

import polars as pl

from workers.registry import shipped_models

from .store import SCHEMA_VERSION

IDENTITY = [
    ("sweep", "Utf8", "", "the spec's `name`"),
    ("model", "Utf8", "", "model name"),
    ("model_version", "Utf8", "", "model version; a new version never reuses old parts"),
    ("profile", "Utf8", "", "machine profile the costs came from"),
    ("source", "Utf8", "", "`model` (computed by the model) or `measured` (the user-space analog run on the worker)"),
    ("point_id", "UInt64", "", "64-bit hash of the model and its (axis, value) pairs: the same point has the same id in every sweep"),
    ("chunk_id", "Utf8", "", "content hash of the chunk that computed the row (its part file is `part-<chunk_id>.parquet`)"),
    ("status", "Utf8", "", "`ok`, `infeasible` (the point cannot exist) or `error` (the model raised)"),
    ("reason", "Utf8", "", "why a row is infeasible or failed; null when ok"),
]
MEASURE = [
    ("measure_repeats", "Int64", "", "measured rows: runs timed after the warm-up, at least the spec's repeats (null on modeled rows)"),
    ("measure_min", "Float64", "as the headline metric",
     "measured rows: the least disturbed value: per timed stretch the fastest run, summed (ns/load: the fastest slice)"),
    ("measure_median", "Float64", "as the headline metric", "measured rows: the median sample (the value in the metric column)"),
    ("measure_huge_pages", "Boolean", "", "measured pfnmap rows: whether the mapping got 2 MiB pages (AnonHugePages)"),
]
PROVENANCE = [
    ("env_host", "Utf8", "", "host name of the worker that computed the row"),
    ("env_cpu_model", "Utf8", "", "its CPU model (/proc/cpuinfo)"),
    ("env_caches", "Utf8", "", "its L1d, L2, L3 sizes (/sys/devices/system/cpu/cpu0/cache)"),
    ("env_thp_mode", "Utf8", "", "transparent hugepage mode (/sys/kernel/mm/transparent_hugepage/enabled)"),
    ("env_kernel_release", "Utf8", "", "kernel release (uname -r)"),
    ("env_memsweep_version", "Utf8", "", "memsweep version on the worker"),
    ("env_git_sha", "Utf8", "", "commit of the driver's checkout, empty outside git"),
    ("env_ray_node_id", "Utf8", "", "Ray node id of the worker"),
]


def _dtype(dt) -> str:
    return {pl.Int64: "Int64", pl.Float64: "Float64", pl.Utf8: "Utf8", pl.Boolean: "Boolean",
            pl.UInt64: "UInt64"}.get(dt, str(dt))


def rows() -> list[tuple[str, str, str, str, str]]:
    """(column, dtype, unit, models, meaning) for every column any shipped model writes."""
    out = [(c, t, u, "all", d) for c, t, u, d in IDENTITY]
    params: dict[str, list] = {}
    metrics: dict[str, list] = {}
    models = shipped_models()
    for name in sorted(models):
        model = models[name]
        for a in model.axes:
            params.setdefault(a.column, [_dtype(a.dtype), a.unit, [], a.doc])[2].append(name)
        for col, dt in model.metrics.items():
            entry = metrics.setdefault(col, [_dtype(dt), _unit(col), [], ""])
            entry[2].append(name)
            entry[3] = entry[3] or model.metric_docs.get(col, "")
    for col, (t, u, ms, doc) in params.items():
        out.append((col, t, u, ", ".join(ms), doc))
    for col, (t, u, ms, doc) in metrics.items():
        out.append((col, t, u, ", ".join(ms), doc))
    out += [(c, t, u, "all", d) for c, t, u, d in MEASURE + PROVENANCE]
    return out


def _unit(col: str) -> str:
    for suffix, unit in (("_ms", "ms"), ("_us", "µs"), ("_ns", "ns"), ("_bytes", "bytes"), ("_gbs", "GB/s"),
                         ("_fraction", "fraction"), ("_rate", "fraction")):
        if col.endswith(suffix):
            return unit
    return ""


def markdown() -> str:
    lines = [f"Schema version {SCHEMA_VERSION}. One row per grid point.", "",
             "| column | type | unit | models | meaning |", "|---|---|---|---|---|"]
    for col, t, u, ms, doc in rows():
        lines.append(f"| `{col}` | {t} | {u} | {ms} | {doc.replace('|', '/')} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
