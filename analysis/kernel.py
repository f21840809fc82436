"""The model against the real kernel: every configuration a guest ran, beside the model's row for the same
point (same point_id), with the counts and bytes the model must equal (its KernelCheck's `exact` metrics).

A kernel row a guest ran carries the guest's release (env_guest_kernel); a row the model's planner ruled
out (a strategy the kernel under test does not have, a struct page size it is not built with) does not,
and is no configuration the kernel checked. A configuration agrees when the kernel and the model say the
same of its feasibility (both ok, or both refuse it) and, where both are ok, every exact metric the kernel
gives is equal (one it does not give, such as nr_memmap_pages before 6.11, is unchecked, not different).
Times are left out: a guest's time under TCG is proportional to the work, not a machine's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import polars as pl

from .read import KERNEL, MODELED, ModelRows, Sweep


def exact_metrics(rows: ModelRows) -> list[str]:
    """The metrics the model's kernel check says must equal the kernel's, present in this sweep."""
    obj = rows.model
    if obj is None or obj.kernel is None:
        return []
    schema = rows.schema()
    return [m for m in obj.kernel.exact if m in schema]


def has_kernel_rows(rows: ModelRows) -> bool:
    return {KERNEL, MODELED} <= set(rows.sources()) and bool(exact_metrics(rows))


def pairs(rows: ModelRows) -> pl.DataFrame:
    """Per configuration a guest ran: point_id, the varying axes, each side's status, the kernel's reason,
    each exact metric as `<metric>` (kernel) and `<metric>_model`, `differs` (the exact metrics that
    differ, comma-separated; "feasibility" when only one side is ok) and `agrees`."""
    exact = exact_metrics(rows)
    axes = [c for c in rows.varying() if c.startswith("param_")]
    kernel = rows.scan(KERNEL).filter(pl.col("env_guest_kernel").is_not_null()).select(
        "point_id", *axes, "status", "reason", "env_guest_kernel", "env_accel", *exact)
    model = rows.scan(MODELED).select("point_id", pl.col("status").alias("status_model"),
                                      *(pl.col(m).alias(f"{m}_model") for m in exact))
    df = kernel.join(model, on="point_id", how="inner").collect(engine="streaming")
    both_ok = (pl.col("status") == "ok") & (pl.col("status_model") == "ok")
    # a metric the kernel did not give (6.1 has no nr_memmap_pages) is unchecked, not different
    differs = [pl.when(both_ok & pl.col(m).is_not_null() & pl.col(m).ne_missing(pl.col(f"{m}_model")))
               .then(pl.lit(m.removeprefix("metric_"))) for m in exact]
    feasibility = pl.when((pl.col("status") == "ok") != (pl.col("status_model") == "ok")).then(pl.lit("feasibility"))
    return df.with_columns(
        pl.concat_str([feasibility, *differs], separator=", ", ignore_nulls=True).alias("differs"),
    ).with_columns((pl.col("differs") == "").alias("agrees")).sort(axes or "point_id")


@dataclass(frozen=True, slots=True)
class Agreement:
    """How many configurations a guest ran, how many of them agree, and on which kernels."""

    configurations: int
    agree: int
    ok: int  # of them, bound by the kernel
    kernels: tuple[str, ...]
    accels: tuple[str, ...]
    checked: tuple[str, ...]  # the exact metrics the kernel gave on some bound configuration
    unchecked: tuple[str, ...]  # those it never gave (6.1: no nr_memmap_pages)


def agreement(df: pl.DataFrame) -> Agreement:
    bound = df.filter(pl.col("status") == "ok")
    exact = [c.removesuffix("_model") for c in df.columns if c.endswith("_model") and c != "status_model"]
    given = [m for m in exact if bound.height and bound[m].is_not_null().any()]
    return Agreement(configurations=df.height, agree=int(df["agrees"].sum()), ok=bound.height,
                     kernels=tuple(sorted(set(df["env_guest_kernel"].to_list()))),
                     accels=tuple(sorted(set(df["env_accel"].to_list()))),
                     checked=tuple(given), unchecked=tuple(m for m in exact if m not in given))


def checked(sweep: Sweep) -> Iterator[tuple[ModelRows, pl.DataFrame, Agreement]]:
    """Every model of the sweep with configurations a guest ran: its rows, their pairs and the agreement."""
    for rows in map(sweep.rows, sweep.models):
        if has_kernel_rows(rows):
            df = pairs(rows)
            if df.height:
                yield rows, df, agreement(df)


def gains(rows: ModelRows) -> pl.DataFrame:
    """The kernel's own gain of each variant the report compares (the model's Report.comparison: memmap's
    strategies against slow), on the kernel check's `sampled` metric (instructions), configuration by
    configuration, beside the model's gain on the same metric and on the comparison's own (time):
    the varying axes but the compared one, `variant`, the kernel's value and samples (n, min, median),
    `kernel_gain` (baseline / variant), `model_gain` and `model_time_gain`. Empty without such rows."""
    obj = rows.model
    cmp, check = obj and obj.report.comparison, obj and obj.kernel
    schema = rows.schema()
    if cmp is None or check is None or check.sampled not in schema or cmp.column not in schema:
        return pl.DataFrame()
    metric, axis = check.sampled, cmp.column
    keys = [c for c in rows.varying() if c.startswith("param_") and c != axis]
    kernel = rows.scan(KERNEL).filter((pl.col("status") == "ok") & pl.col(metric).is_not_null()).select(
        "point_id", *keys, axis, metric, "measure_repeats", "measure_min",
        *(["measure_max"] if "measure_max" in schema else []), "env_guest_kernel")
    model = rows.scan(MODELED).filter(pl.col("status") == "ok").select(
        "point_id", pl.col(metric).alias("model"), pl.col(cmp.metric).alias("model_time"))
    df = kernel.join(model, on="point_id", how="left").collect(engine="streaming")
    if df.is_empty() or cmp.baseline not in set(df[axis].to_list()):
        return pl.DataFrame()
    base = df.filter(pl.col(axis) == cmp.baseline).select(
        *keys, "env_guest_kernel", pl.col(metric).alias("base"), pl.col("model").alias("model_base"),
        pl.col("model_time").alias("model_time_base"))
    out = df.filter(pl.col(axis) != cmp.baseline).join(base, on=[*keys, "env_guest_kernel"], how="inner",
                                                        nulls_equal=True)
    return out.select(
        *keys, pl.col(axis).alias("variant"), "env_guest_kernel", metric, "measure_repeats", "measure_min",
        (pl.col("base") / pl.col(metric)).alias("kernel_gain"), (pl.col("model_base") / pl.col("model")).alias("model_gain"),
        (pl.col("model_time_base") / pl.col("model_time")).alias("model_time_gain"),
    ).sort(*keys, "variant")


def references(rows: ModelRows) -> pl.DataFrame:
    """A patched build's kernel rows read against the kernels it was booted beside (workers.guest's
    [kernel] references): per configuration and variant, the build's value of the sampled metric, its base's
    (the same source and config without the patches) and the distribution's kernel's (Debian's 6.12), both on
    the slow path; `patches` = base / value (above 1: the patches save work), `config` = stock / base (above
    1: the build's config does less than the distribution's). Empty without them."""
    obj = rows.model
    check = obj and obj.kernel
    schema = rows.schema()
    if check is None or check.sampled not in schema or "kernel_base" not in schema:
        return pl.DataFrame()
    metric = check.sampled
    keys = [c for c in rows.varying() if c.startswith("param_")]
    df = rows.scan(KERNEL).filter((pl.col("status") == "ok") & pl.col("kernel_base").is_not_null()).select(
        *keys, "env_guest_kernel", pl.col(metric).cast(pl.Float64).alias("value"), "kernel_base", "kernel_stock",
    ).collect(engine="streaming")
    return df.with_columns((pl.col("kernel_base") / pl.col("value")).alias("patches"),
                           (pl.col("kernel_stock") / pl.col("kernel_base")).alias("config")).sort(keys)
