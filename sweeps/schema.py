"""The dataset schema as a Markdown table, from the column registry (workers.dataset) and the models.

    python -m sweeps.schema      # prints the table the README carries

The README's table is this output; a test keeps the two equal.
"""

from __future__ import annotations

import polars as pl

from workers import interval
from workers.dataset import BUILD, EVIDENCE, IDENTITY, MEASURE, PROVENANCE, REFERENCE, SCHEMA_VERSION, unit_of
from workers.registry import shipped_models


def _dtype(dt) -> str:
    if isinstance(dt, pl.List):
        return f"List({_dtype(dt.inner)})"
    if isinstance(dt, pl.Struct):
        return "Struct"
    return {pl.Int64: "Int64", pl.Float64: "Float64", pl.Utf8: "Utf8", pl.Boolean: "Boolean",
            pl.UInt64: "UInt64", pl.Float32: "Float32"}.get(dt, str(dt))


def rows() -> list[tuple[str, str, str, str, str]]:
    """(column, dtype, unit, models, meaning) for every column any shipped model writes."""
    out = [(c, _dtype(t), u, "all", d) for c, t, u, d in IDENTITY]
    params: dict[str, list] = {}
    metrics: dict[str, list] = {}
    models = shipped_models()
    for name in sorted(models):
        model = models[name]
        for a in model.axes:
            params.setdefault(a.column, [_dtype(a.dtype), a.unit, [], a.doc])[2].append(name)
        for m in model.metrics:
            entry = metrics.setdefault(m.column, [_dtype(m.dtype), m.unit, [], ""])
            entry[2].append(name)
            entry[3] = entry[3] or m.doc
    for col, (t, u, ms, doc) in params.items():
        out.append((col, t, u, ", ".join(ms), doc))
    for col, (t, u, ms, doc) in metrics.items():
        out.append((col, t, u, ", ".join(ms), doc))
    bars: dict[str, list] = {}
    for name in sorted(models):
        for m in models[name].priced:
            for col, end in zip(interval.columns(m), ("low", "high")):
                bars.setdefault(col, [unit_of(col), [], f"modeled rows: the {end} end of `{m}`'s error bar "
                                                        "(workers.interval); null on measured and kernel rows"])[1].append(name)
    for col, (u, ms, doc) in bars.items():
        out.append((col, _dtype(interval.DTYPE), u, ", ".join(ms), doc))
    out += [(c, _dtype(t), u, "all", d) for c, t, u, d in (*MEASURE, *REFERENCE, *BUILD, *EVIDENCE, *PROVENANCE)]
    return out


def markdown() -> str:
    lines = [f"Schema version {SCHEMA_VERSION}. One row per grid point.", "",
             "| column | type | unit | models | meaning |", "|---|---|---|---|---|"]
    for col, t, u, ms, doc in rows():
        lines.append(f"| `{col}` | {t} | {u} | {ms} | {doc.replace('|', '/')} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
