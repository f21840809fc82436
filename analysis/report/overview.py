"""The report's tables, as small polars frames of display text: summary, provenance, winners,
speedups, growth with size, the tables the models declare, model vs published, measured and the
real kernel vs the model.

Each function aggregates lazily per model and returns `Table`s whose cells are
already formatted (units, binary sizes, percent), so the HTML layer only escapes.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from analysis import evidence
from analysis.metrics import (
    TIE_RTOL,
    HookRows,
    best_by,
    growth_exponents,
    headline_metric,
    higher_is_better,
    measured_vs_model,
    ok,
    per_variant,
    published_comparison,
    reason_counts,
    regimes_of,
    series_points,
    speedup,
    speedup_summary,
    win_counts,
)
from analysis.kernel import checked as kernel_checked
from analysis.kernel import exact_metrics
from analysis.kernel import gains as kernel_gains
from analysis.kernel import references as kernel_references
from analysis.read import MEASURED, MODELED, SOURCE, ModelRows, Sweep
from analysis.tables import format_value, metric_unit
from workers.calibrate import loo_text
from workers.hooks import Cells, Hook
from workers.model import STATUS_ERROR, STATUS_INFEASIBLE, STATUS_OK

SIZE = "param_namespace_size"
MAX_REASONS = 40
MAX_ROWS = 40


@dataclass(frozen=True, kw_only=True, slots=True)
class Table:
    """A titled table of display strings with a one-paragraph caption."""

    title: str
    caption: str
    frame: pl.DataFrame


def _text(df: pl.DataFrame) -> pl.DataFrame:
    return df.with_columns(pl.all().cast(pl.Utf8).fill_null("-"))


def status_summary(sweep: Sweep) -> Table:
    """Per model and source: points expected, rows present, and rows ok / infeasible / error."""
    models = list(sweep.models)
    frames = pl.collect_all([
        sweep.scan(m, None).group_by(*[c for c in (SOURCE,) if c in sweep.schema(m)], "status").len()
        for m in models]) if models else []
    rows = []
    expected = sweep.manifest.get("models", {})
    for m, f in zip(models, frames):
        if SOURCE not in f.columns:
            f = f.with_columns(pl.lit(MODELED).alias(SOURCE))
        for src in sorted(set(f[SOURCE].to_list()), key=lambda v: (v != MODELED, str(v))):
            n = dict(f.filter(pl.col(SOURCE) == src).select("status", "len").iter_rows())
            rows.append({"model": m, "source": str(src), "version": str(expected.get(m, {}).get("version", "?")),
                         "points expected": f"{expected.get(m, {}).get('points', 0):,}",
                         "rows": f"{sum(n.values()):,}", "ok": f"{n.get(STATUS_OK, 0):,}",
                         "infeasible": f"{n.get(STATUS_INFEASIBLE, 0):,}", "error": f"{n.get(STATUS_ERROR, 0):,}"})
    m = sweep.manifest
    expected_rows = m.get("rows_expected", m.get("points_expected", 0))
    caption = (f"Profile {m.get('profile', '?')}; sources {', '.join(m.get('sources', [MODELED]))}; "
               f"{m.get('chunks_done', '?')} of {m.get('chunks_expected', '?')} chunks done; "
               f"{m.get('rows', 0):,} rows of {expected_rows:,} expected ({m.get('points_expected', 0):,} points).")
    return Table(title="Points", caption=caption, frame=pl.DataFrame(rows))


def reasons(sweep: Sweep) -> Table:
    """Infeasible and failed rows counted by model, source and reason, most frequent first."""
    frames = pl.collect_all([
        reason_counts(sweep.scan(m, None), by=[SOURCE] if SOURCE in sweep.schema(m) else [])
        .with_columns(pl.lit(m).alias("model")) for m in sweep.models]) if sweep.models else []
    frames = [f if SOURCE in f.columns else f.with_columns(pl.lit(MODELED).alias(SOURCE)) for f in frames]
    schema = {"status": pl.Utf8, "reason": pl.Utf8, "n": pl.UInt32, "model": pl.Utf8, SOURCE: pl.Utf8}
    df = pl.concat([f.select(pl.col(c).cast(t) for c, t in schema.items()) for f in frames]) if frames \
        else pl.DataFrame(schema=schema)
    df = df.sort("n", descending=True)
    caption = f"{df.height} distinct reasons" + (f"; the {MAX_REASONS} most frequent shown." if
                                                 df.height > MAX_REASONS else ".")
    shown = df.head(MAX_REASONS).select("model", SOURCE, "status", pl.col("n").map_elements(
        lambda n: f"{n:,}", return_dtype=pl.Utf8).alias("rows"), "reason")
    return Table(title="Infeasible and failed points by reason", caption=caption, frame=_text(shown))


def provenance(sweep: Sweep) -> Table:
    """Hosts, CPU models, caches, TLB sizes, kernels, THP modes, memsweep versions and git commits the
    rows came from, and the number of Ray nodes."""
    seen = sweep.provenance()
    driver = sweep.manifest.get("driver", {})
    rows = [
        ("hosts", ", ".join(sorted(seen["env_host"])) or "-"),
        ("CPU models", "; ".join(sorted(seen["env_cpu_model"])) or "-"),
        ("caches", "; ".join(sorted(seen["env_caches"])) or "-"),
        ("TLB entries (4 KiB pages)", ", ".join(str(n) for n in sorted(seen["env_tlb_4k_entries"])) or "-"),
        ("kernel releases", ", ".join(sorted(seen["env_kernel_release"])) or "-"),
        ("THP modes", ", ".join(sorted(seen["env_thp_mode"])) or "-"),
        ("memsweep versions", ", ".join(sorted(seen["env_memsweep_version"])) or "-"),
        ("git commits", ", ".join(sorted(seen["env_git_sha"])) or "(not in a git checkout)"),
        ("Ray nodes", str(len(seen["env_ray_node_id"]))),
        ("driver", f"{driver.get('env_host', '?')} ({driver.get('env_cpu_model', '?')}), git "
                   f"{driver.get('env_git_sha') or '-'}"),
        ("profile", f"{sweep.manifest.get('profile', '?')} (digest {sweep.manifest.get('profile_digest', '?')})"),
        ("profile status", sweep.profile_status()),
        ("updated", str(sweep.manifest.get("updated", "?"))),
    ]
    return Table(title="Provenance", caption="Where and with what the rows were computed.",
                 frame=pl.DataFrame(rows, schema=["item", "value"], orient="row"))


def _comparisons(sweep: Sweep):
    """(the model's rows, its model object, its Comparison) for every model in the sweep that declares one
    whose axis varies and whose metric the rows have (a model no longer registered has none)."""
    for rows in map(sweep.rows, sweep.models):
        model = rows.model
        comp = model.report.comparison if model is not None else None
        if comp and comp.column in rows.schema() and comp.metric in rows.schema() and comp.column in rows.varying():
            yield rows, model, comp


def best_tables(sweep: Sweep) -> list[Table]:
    """Per model: how many configurations each variant wins, then the winner per configuration
    over a few key axes (other axes held)."""
    out = []
    for rows, model, comp in _comparisons(sweep):
        axis = comp.column
        others = [c for c in rows.params() if c != axis]
        minimize = not higher_is_better(model, comp.metric)
        variants, wide = per_variant(rows, axis, comp.metric, others)
        wins = win_counts(variants, wide, minimize)
        wins = pl.DataFrame({comp.label: [winners(rows, axis, t) for t in wins["tied"].to_list()],
                             "configurations": [f"{n:,}" for n in wins["configurations"].to_list()],
                             "share": [f"{v:.1%}" for v in wins["share"].to_list()]})
        out.append(Table(title=f"{rows.name}: best {comp.label} across all configurations",
                         caption=f"Configurations (every other axis value combination with at least one feasible "
                                 f"{comp.label}) won by each {comp.label}, by {comp.metric}. Values within a "
                                 f"relative {TIE_RTOL:g} of the best tie: a tie is its own line (\"tie: a = b\"), "
                                 "counted for none of the tied values.", frame=wins))
        keys = [f"param_{k}" for k in model.report.best_keys if f"param_{k}" in rows.varying()]
        if not keys:
            continue
        expr, held = rows.pin([*keys, axis])
        best = best_by(rows.scan().filter(expr), axis, comp.metric, keys, minimize).collect(engine="streaming")
        sp = (speedup(rows.scan().filter(expr), axis, comp.baseline, comp.metric, keys, higher=not minimize)
              .group_by(keys).agg(pl.col("speedup").max()).collect(engine="streaming"))
        best = best.join(sp, on=keys, how="left", nulls_equal=True).head(MAX_ROWS)
        unit = metric_unit(comp.metric)
        body = [{**{k.removeprefix("param_"): rows.label(k, r[k]) for k in keys},
                 f"best {comp.label}": winners(rows, axis, r["tied"]),
                 comp.metric.removeprefix("metric_"): format_value(r["best_value"], unit),
                 "runner-up": format_value(r["runner_up_value"], unit),
                 f"speedup over {rows.label(axis, comp.baseline)}":
                     "-" if r["speedup"] is None else f"{r['speedup']:.2f}x"} for r in best.iter_rows(named=True)]
        out.append(Table(title=f"{rows.name}: best {comp.label} per configuration",
                         caption=f"Held fixed: {rows.describe(held) or 'nothing'}. Ties (within a relative "
                                 f"{TIE_RTOL:g}) list every tied {comp.label}; the runner-up is the best that does "
                                 f"not tie. At most {MAX_ROWS} rows.",
                         frame=pl.DataFrame(body)))
    return out


def winners(rows: ModelRows, axis: str, tied: list) -> str:
    """The winner of a configuration, or every tied value: 'template_nt_inline', 'tie: nt_call = nt_inline'."""
    names = [rows.label(axis, v) for v in tied]
    return names[0] if len(names) == 1 else "tie: " + " = ".join(names)


def speedup_tables(sweep: Sweep) -> list[Table]:
    """Per model: each variant's speedup over the baseline, min / median / max over every
    configuration where both are feasible."""
    out = []
    for rows, model, comp in _comparisons(sweep):
        axis = comp.column
        keys = [c for c in rows.params() if c != axis]
        variants, wide = per_variant(rows, axis, comp.metric, keys)
        summary = speedup_summary(variants, wide, axis, comp.baseline, higher=higher_is_better(model, comp.metric))
        body = [{comp.label: rows.label(axis, r[axis]), "configurations": f"{r['configurations']:,}",
                 "min": f"{r['min']:.2f}x", "median": f"{r['median']:.2f}x", "max": f"{r['max']:.2f}x"}
                for r in summary.iter_rows(named=True)]
        base = rows.label(axis, comp.baseline)
        out.append(Table(title=f"{rows.name}: speedup over {base}",
                         caption=f"{comp.metric} of {base} divided by that of each {comp.label} at the same point "
                                 "(every other axis equal).", frame=pl.DataFrame(body)))
    return out


def growth_tables(sweep: Sweep) -> list[Table]:
    """Per model: how the headline metric grows with namespace size (log-log exponent per series)
    and the series whose growth changes regime, with where."""
    out = []
    for rows in map(sweep.rows, sweep.models):
        metric = headline_metric(rows.model, rows.metrics())
        if metric is None or SIZE not in rows.varying():
            continue
        series = [c for c in rows.varying() if c != SIZE]
        values = {c: rows.axis_values()[c]["value"].to_list() for c in series}
        points = series_points([ok(lf).filter(pl.col(metric).is_not_null()) for lf in rows.scan_batches()],
                               SIZE, metric, series, values)
        exps = growth_exponents(points, series)
        if exps.height == 0:
            continue
        regimes = regimes_of(points, series)
        changed = regimes.filter(pl.col("changes"))
        q = exps["exponent"]
        summary = pl.DataFrame([{
            "metric": metric, "series": f"{exps.height:,}", "exponent min": f"{q.min():.3f}",
            "median": f"{q.median():.3f}", "max": f"{q.max():.3f}",
            "series changing regime": f"{changed.height:,} of {regimes.height:,}"}])
        out.append(Table(title=f"{rows.name}: growth with namespace size",
                         caption=f"Slope of log({metric}) on log(namespace size) per series (every other axis "
                                 "fixed); 1 is linear growth. A regime change is a break where a two-slope fit's "
                                 "slopes differ by more than 0.15.", frame=summary))
        if changed.height:
            out.append(_regime_table(rows, changed, series))
    return out


def _regime_table(rows: ModelRows, changed: pl.DataFrame, series: list[str]) -> Table:
    """Series that change regime, grouped by (break, slope before, slope after): count and an example."""
    grouped = (
        changed.with_columns(pl.col("slope_before").round(2).alias("before"),
                             pl.col("slope_after").round(2).alias("after"))
        .group_by("break_x", "before", "after", maintain_order=True)
        .agg(pl.len().alias("n"), pl.struct(series).first().alias("example"))
        .with_columns((pl.col("after") - pl.col("before")).abs().alias("d"))
        .sort(["d", "n"], descending=True).head(15)
    )
    body = [{"series": f"{r['n']:,}", "break at": rows.label(SIZE, r["break_x"]),
             "exponent before": f"{r['before']:.2f}", "after": f"{r['after']:.2f}",
             "example series": rows.describe(r["example"])} for r in grouped.iter_rows(named=True)]
    return Table(title=f"{rows.name}: series whose growth changes regime",
                 caption="Series grouped by where the slope changes and the slopes (to 0.01) on each side; "
                         "the 15 largest changes shown, each with one example series.", frame=pl.DataFrame(body))


def declared_tables(sweep: Sweep) -> list[Table]:
    """Every table the sweep's models declare (`Report.tables`: a workers.hooks.Hook whose function returns the
    groups as Cells), model by model in sweep order, each cell written by what its column is."""
    out = []
    for rows in map(sweep.rows, sweep.models):
        model = rows.model
        for h in (model.report.tables if model is not None else ()):
            table = hooked_table(rows, h)
            if table is not None:
                out.append(table)
    return out


def hooked_table(rows: ModelRows, h: Hook) -> Table | None:
    """One declared table of the model, or None when its function finds none of its rows in the sweep."""
    cells = HookRows(rows.sweep, rows.name).call(h, Cells)
    if cells is None:
        return None
    schema = cells.frame.schema
    body = [{header: _cell(rows, c, r[c], schema[c]) for c, header in cells.headers.items()}
            for r in cells.frame.iter_rows(named=True)]
    return Table(title=h.title, caption=f"{cells.caption} Held fixed: {rows.describe(dict(cells.held)) or 'nothing'}.",
                 frame=pl.DataFrame(body))


def _cell(rows: ModelRows, column: str, v: object, dtype: pl.DataType) -> str:
    """A cell by what its column is: a boolean as yes / no; a metric with its unit (text as it is); an axis
    value as its label, with its unit."""
    if dtype == pl.Boolean:
        return "yes" if v else "no"
    if v is None:
        return "-"
    if column.startswith("metric_"):
        return format_value(v, metric_unit(column))
    return rows.label_with_unit(column, v)


def published_table(sweep: Sweep) -> Table:
    """Every published figure: published value, this sweep's modeled (and measured) value at its
    point, and the error; the profile's validation figures (predicted, never fit) after the fit ones."""
    df = published_comparison(sweep).sort(pl.col("use") == "validation", maintain_order=True)
    measured = bool(df.height) and df["measured_rows"].sum() > 0
    rows = []
    for r in df.iter_rows(named=True):
        row = {"figure": r["id"], "use": "fit" if r["use"] == "fit" else "validation: predicted, not fit",
               "metric": r["metric"], "published": format_value(r["published"], r["unit"]),
               "model": format_value(r["model_value"], r["unit"]) if r["in_sweep"] else "not in sweep",
               "error": "-" if r["error"] is None else f"{r['error']:+.1%}",
               "leave-one-out": "-" if r["loo_error"] is None else loo_text((r["loo_low"], r["loo_high"]))}
        if measured:
            row["measured here"] = format_value(r["measured_value"], r["unit"])
            row["measured vs published"] = "-" if r["measured_error"] is None else f"{r['measured_error']:+.1%}"
        rows.append(row)
    n = int(df["in_sweep"].sum()) if df.height else 0
    tail = ""
    for use, column, name in (("fit", "loo_error", "leave-one-out"), ("validation", "error", "validation figures"),
                              ("fit", "error", "fit figures (in-sample)")):
        errs = df.filter((pl.col("use") == use) & pl.col(column).is_not_null())[column].abs()
        if errs.len():
            tail += f"; {name}: median |error| {errs.median():.1%}, max {errs.max():.1%}"
    note = " 'measured here' is this sweep's measurement on its own hardware, not the published machine." \
        if measured else ""
    return Table(title="Model vs published figures",
                 caption=f"{n} of {df.height} published figures have their point in this sweep{tail}. A figure's "
                         "point is every axis at the figure's value (others at their defaults). Validation figures "
                         "come from other sources than the seed documents and are never used in a fit." + note,
                 frame=pl.DataFrame(rows) if rows else pl.DataFrame({"figure": []}))


def evidence_tables(sweep: Sweep) -> list[Table]:
    """Per model with modeled rows: how many of its answers (headline) rest on each kind of evidence, and
    what the extrapolated and assumed ones rest on (analysis.evidence)."""
    rows_out = []
    for rows in map(sweep.rows, sweep.models):
        if rows.model is None or MODELED not in rows.sources():
            continue
        ev = evidence.summarize(rows, ok(rows.scan(MODELED)), rows.model.headline)
        for label, n in ev.counts:
            what = [x for x in ev.notes if (x.startswith(evidence.ASSUMED_PREFIX) == (label == evidence.ASSUMED))]
            rows_out.append({"model": rows.name, "evidence": label, "rows": f"{n:,}",
                             "share": f"{n / ev.rows:.1%}",
                             "rests on": "; ".join(what[:6]) + (f" (+{len(what) - 6} more)" if len(what) > 6 else "")
                             if label in (evidence.EXTRAPOLATED, evidence.ASSUMED) else ""})
    if not rows_out:
        return []
    return [Table(title="What the answers rest on",
                  caption="Each modeled row's headline, labelled from the model's declarations (workers.evidence; "
                          "the dataset's evidence and evidence_note columns): fit (the point of a figure the profile "
                          "was fit to), validated (of a figure never fit), kernel-checked (a count the kernel gives), "
                          "extrapolated (named axes beyond every figure, and how far: the most common listed), "
                          "assumed (named assumptions, or a profile that is not calibrated). A fit or validation "
                          "point keeps its label; otherwise an assumption is the weaker label.",
                  frame=pl.DataFrame(rows_out))]


def measured_tables(sweep: Sweep) -> list[Table]:
    """Per model with measured rows: for each metric the measurement fills, measured / modeled over
    every point measured, and the points themselves (at most MAX_ROWS)."""
    out = []
    for rows in map(sweep.rows, sweep.models):
        if MEASURED not in rows.sources() or MODELED not in rows.sources():
            continue
        metrics = rows.metrics()
        filled = ok(rows.scan(MEASURED)).select(pl.col(c).is_not_null().any() for c in metrics).collect(engine="streaming")
        keys = [c for c in rows.params() if c in set(rows.varying())]
        summary, points = [], []
        for metric in (c for c in metrics if filled[c][0]):
            pairs = measured_vs_model(rows.scan(MODELED), rows.scan(MEASURED), metric, keys).collect(engine="streaming")
            if pairs.height == 0:
                continue
            q = pairs["ratio"]
            summary.append({"metric": metric, "points": f"{pairs.height:,}", "measured / model min": f"{q.min():.2f}",
                            "median": f"{q.median():.2f}", "max": f"{q.max():.2f}"})
            unit = metric_unit(metric)
            for r in pairs.sort(keys, nulls_last=True).head(MAX_ROWS - len(points)).iter_rows(named=True):
                points.append({"metric": metric, "point": describe_point(rows, keys, r),
                               "measured": format_value(r["measured"], unit), "model": format_value(r["model"], unit),
                               "measured / model": f"{r['ratio']:.2f}"})
        if summary:
            out.append(Table(title=f"{rows.name}: measured on this hardware vs the model",
                             caption="Ratio of the measured user-space analog to the modeled value at the same "
                                     "point (same point_id); the model's costs come from the sweep's profile, "
                                     "not from this hardware.", frame=pl.DataFrame(summary)))
            out.append(Table(title=f"{rows.name}: measured points", caption=f"At most {MAX_ROWS} points.",
                             frame=pl.DataFrame(points)))
    return out


MAX_KERNEL_ROWS = 200


def kernel_tables(sweep: Sweep) -> list[Table]:
    """Per model with kernel rows: every configuration a guest ran (at most MAX_KERNEL_ROWS), what the kernel
    and the model say of its feasibility, and each metric the model must equal: the value where both agree,
    both values where they differ (analysis.kernel)."""
    out = []
    for rows, df, a in kernel_checked(sweep):
        exact = exact_metrics(rows)
        keys = [c for c in df.columns if c.startswith("param_")]
        table = []
        for r in df.head(MAX_KERNEL_ROWS).iter_rows(named=True):
            row = {"configuration": describe_point(rows, keys, r), "kernel": r["status"], "model": r["status_model"]}
            for m in exact:
                row[m.removeprefix("metric_")] = _kernel_cell(r[m], r[f"{m}_model"], metric_unit(m)) \
                    if r["status"] == r["status_model"] == STATUS_OK else "-"
            row["agrees"] = "yes" if r["agrees"] else f"no: {r['differs']}"
            row["the kernel says"] = (r["reason"] or "")[:160]
            table.append(row)
        out.append(Table(
            title=f"{rows.name}: the model against the real kernel ({a.agree} of {a.configurations} agree)",
            caption=(f"Every configuration a guest ran ({', '.join(a.kernels)}; accelerator {', '.join(a.accels)}), "
                     "beside the model's row for the same point. A value stands for both sides where they are "
                     "equal; 'kernel ≠ model' where they differ. Configurations the kernel under test cannot be "
                     "(another strategy or struct page size) are not run, and not listed."),
            frame=pl.DataFrame(table)))
    return out


def gain_tables(sweep: Sweep) -> list[Table]:
    """Per model with kernel rows of several variants (memmap's strategies): the gain the kernel measured on
    its sampled metric, configuration by configuration, beside the model's (analysis.kernel.gains)."""
    out = []
    for rows in map(sweep.rows, sweep.models):
        df = kernel_gains(rows)
        if df.is_empty():
            continue
        cmp, metric = rows.model.report.comparison, rows.model.kernel.sampled
        keys = [c for c in df.columns if c.startswith("param_")]
        table = [{"configuration": describe_point(rows, keys, r), cmp.label: r["variant"],
                  "kernel": r["env_guest_kernel"],
                  metric.removeprefix("metric_"): _boots(r, metric),
                  "kernel gain": f"{r['kernel_gain']:.3f}x",
                  "model gain, same work": "-" if r["model_gain"] is None else f"{r['model_gain']:.3f}x",
                  "model gain, time": "-" if r["model_time_gain"] is None else f"{r['model_time_gain']:.2f}x"}
                 for r in df.head(MAX_KERNEL_ROWS).iter_rows(named=True)]
        out.append(Table(
            title=f"{rows.name}: each {cmp.label}'s gain in the real kernel, beside the model's",
            caption=(f"Kernel gain: {metric.removeprefix('metric_')} of {cmp.label} {cmp.baseline} over this "
                     f"{cmp.label}'s, the same configuration and kernel (medians of the binds: under QEMU's "
                     "instruction counter a rerun repeats them exactly, and the binds of one namespace differ "
                     "only by the timer ticks that land inside, a few thousand instructions). Model gain, same "
                     "work: the model's "
                     "operation counts, priced with the costs it records for a kernel build. "
                     f"Model gain, time: {cmp.metric.removeprefix('metric_')} under the sweep's profile, which "
                     "instructions alone do not give (stores to memory, non-temporal write-back)."),
            frame=pl.DataFrame(table)))
    return out


def reference_tables(sweep: Sweep) -> list[Table]:
    """Per model whose kernel rows were read against reference kernels (the series' build: its base and
    Debian's 6.12; a user's build: the base given with it): what the patches change and what the config
    changes, two numbers per configuration (the config's only where a stock kernel was booted)."""
    out = []
    for rows in map(sweep.rows, sweep.models):
        df = kernel_references(rows)
        if df.is_empty():
            continue
        metric = rows.model.kernel.sampled.removeprefix("metric_")
        keys = [c for c in df.columns if c.startswith("param_")]
        table = [{"configuration": describe_point(rows, keys, r), "kernel": r["env_guest_kernel"],
                  metric: f"{int(r['value']):,}", "base, slow": f"{int(r['kernel_base']):,}",
                  "Debian 6.12, slow": "-" if r["kernel_stock"] is None else f"{int(r['kernel_stock']):,}",
                  "patches": f"{r['patches']:.3f}x",
                  "config": "-" if r["config"] is None else f"{r['config']:.3f}x"}
                 for r in df.head(MAX_KERNEL_ROWS).iter_rows(named=True)]
        p, c = df["patches"], df["config"].drop_nulls()
        if not len(c):  # a user's build read against its own base only
            table = [{k: v for k, v in row.items() if k not in ("Debian 6.12, slow", "config")} for row in table]
        out.append(Table(
            title=(f"{rows.name}: what the patches change and what the config changes (patches "
                   f"{p.min():.3f}-{p.max():.3f}x, config {c.min():.3f}-{c.max():.3f}x)" if len(c) else
                   f"{rows.name}: what the patches change (patches {p.min():.3f}-{p.max():.3f}x)"),
            caption=(f"The build against the kernels it was booted beside, on {metric}: its base (the same "
                     "source, config and compiler without the patches)"
                     + (" and Debian's own 6.12 kernel" if len(c) else "")
                     + ", binding the same namespace on the slow path, one boot. Patches: base / this row (above 1x "
                     "the patched path does less work than the code before the patches, under the same config)"
                     + ("; config: Debian 6.12 / base (above 1x the build's small config does less than Debian's). "
                        "Their product is this row against Debian's kernel." if len(c) else ".")),
            frame=pl.DataFrame(table)))
    return out


def _boots(r: dict, metric: str) -> str:
    """A kernel row's count and its samples: "3,425,928 (1 boot)"; "3,425,928 (3 boots, 3,425,900-3,425,950)"."""
    n = r["measure_repeats"] or 1
    if n == 1 or r.get("measure_min") is None:
        return f"{r[metric]:,} (1 boot)"
    top = r.get("measure_max")  # none before schema 8
    span = f"{int(r['measure_min']):,}-{int(top):,}" if top is not None else f"min {int(r['measure_min']):,}"
    return f"{r[metric]:,} ({n} boots, {span})"


def _kernel_cell(kernel: object, model: object, unit: str) -> str:
    if kernel == model:
        return format_value(kernel, unit)
    return f"{format_value(kernel, unit)} ≠ {format_value(model, unit)}"


def describe_point(rows: ModelRows, keys: list[str], row: dict) -> str:
    return ", ".join(f"{k.removeprefix('param_')}={rows.label(k, row[k])}" for k in keys) or "(one point)"
