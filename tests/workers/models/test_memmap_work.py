"""The work memmap_init_zone_device() does (workers/models/memmap/work.py): counts from the kernel's loops,
and the fit of per-operation instruction costs with its leave-one-out."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl
import pytest

from workers.model import points_frame
from workers.profiles import load_profile
from workers.models.memmap import MODEL, work, work_counts

MiB, GiB = 1 << 20, 1 << 30


def counts(**params) -> dict[str, int]:
    base = {"namespace_size": 2 * GiB, "struct_page_size": 64, "strategy": "slow"}
    _, n = work_counts(points_frame(MODEL, [{**base, **params}]))
    return {k: int(v[0]) for k, v in n.items()}


def test_fsdax_map_mem_initializes_every_pfn_as_a_head_and_every_pageblock():
    """fsdax, 2 GiB, map=mem: 524,288 heads through the slow path, no compounds, 1024 pageblocks."""
    assert counts(mode="fsdax", map="mem", align=2 * MiB) == {
        "call": 1, "head_slow": 524288, "head_copy": 0, "tail_slow": 0, "tail_copy": 0, "compound": 0,
        "pageblock": 1024}


def test_devdax_1gib_map_mem_writes_the_tails_vmemmap_optimization_keeps():
    """devdax, 1 GiB compounds, map=mem: 2 heads and 127 tails each (compound_nr_pages(): 2 vmemmap pages of
    64-byte struct pages), yet pageblock_migratetype_init_range() visits all 1024 pageblocks."""
    n = counts(mode="devdax", map="mem", align=GiB)
    assert (n["head_slow"], n["tail_slow"], n["compound"], n["pageblock"]) == (2, 254, 2, 1024)


def test_template_strategies_seed_one_head_and_one_tail_per_compound_through_the_slow_path():
    """Patches 4-5/8: the first head and each compound's first tail are slow; the rest are copies."""
    slow, template = counts(mode="devdax", map="dev", align=2 * MiB), counts(
        mode="devdax", map="dev", align=2 * MiB, strategy="template")
    heads, tails = slow["head_slow"], slow["tail_slow"]
    assert (template["head_slow"], template["head_copy"]) == (1, heads - 1)
    assert (template["tail_slow"], template["tail_copy"]) == (heads, tails - heads)
    assert template["pageblock"] == slow["pageblock"] and template["compound"] == slow["compound"] == heads


def test_the_fit_recovers_costs_that_priced_the_counts_and_leaves_unused_ones_unidentified():
    """Instructions made from known costs give those costs back; a strategy no row copies with stays NaN,
    and so does the prediction of a row that needs it."""
    rows = [dict(mode=m, map=p, align=a, namespace_size=s * GiB, strategy=st)
            for m, p, a in (("fsdax", "dev", 2 * MiB), ("fsdax", "mem", GiB), ("devdax", "dev", 2 * MiB),
                            ("devdax", "mem", 2 * MiB), ("devdax", "dev", GiB), ("devdax", "mem", GiB))
            for s in (2, 4) for st in ("slow", "template")]
    strategy, n = work_counts(points_frame(MODEL, rows))
    x = work.design(strategy, n)
    truth = np.array([800, 42, 51, 101, 62, 20, np.nan, np.nan, 18, np.nan, np.nan])
    y = x @ np.nan_to_num(truth)
    coef = work.fit(x, y)
    assert np.allclose(coef[~np.isnan(truth)], truth[~np.isnan(truth)], rtol=1e-6)
    assert np.isnan(coef[np.isnan(truth)]).all()
    nt = work.design(*work_counts(points_frame(MODEL, [{**rows[1], "strategy": "template_nt"}])))
    assert np.isnan(work.predict(coef, nt)).all()


def test_leave_one_out_predicts_each_group_from_the_others_alone():
    """A group whose column no other group has cannot be predicted (NaN), the others are exact."""
    x = np.array([[1.0, 10, 0], [1, 20, 0], [1, 30, 0], [1, 40, 0], [1, 10, 5], [1, 20, 6]])
    y = x @ np.array([100.0, 3, 7])
    out = work.leave_one_out(x, y, ["a", "a", "b", "b", "c", "c"])
    assert np.isnan(out[4:]).all() and out[:4] == pytest.approx(y[:4])


def test_recorded_costs_name_their_build_and_refuse_an_unknown_one():
    """instructions.toml holds a table per build; asking for another names the ones it has."""
    costs = work.recorded_costs("debian:6.12")
    assert costs.build == "debian:6.12" and costs.head_slow > 0 and np.isnan(costs.head_copy).all()
    with pytest.raises(KeyError, match=r"no costs of build 'debian:9.9' \(it has \["):
        work.recorded_costs("debian:9.9")


def kernel_like_rows(costs: work.InstructionCosts, strategies=("slow",)) -> pl.DataFrame:
    """Rows as a guest under TCG writes them for a build whose instructions are exactly `costs` x the counts:
    the configurations (mode x map x align) at 1, 2 and 4 GiB that can exist, of one build."""
    points = points_frame(MODEL, [dict(mode=m, map=p, align=a, namespace_size=s * GiB, strategy=st)
                                  for m in ("fsdax", "devdax") for p in ("dev", "mem") for a in (2 * MiB, GiB, 4096)
                                  for s in (1, 2, 4) for st in strategies])
    points = points.filter(MODEL.evaluate(points, load_profile("seed"))["reason"].is_null())  # those a kernel binds
    strategy, n = work_counts(points)
    y = np.round(costs.instructions(strategy, n)).astype(np.int64)
    return points.with_columns(pl.Series("metric_init_instructions", y), pl.lit("6.12.0-user@0123456789abcdef")
                               .alias("kernel_build"), pl.lit("6.12.0-user").alias("env_guest_kernel"))


def test_a_builds_costs_fit_to_its_kernel_rows_come_back_and_price_the_profiles_rows():
    """calibrate --from's fit (KernelCheck.fitter): rows made from Debian 6.12's recorded costs give those costs
    back, within the rounding of a count, with each configuration's leave-one-out error; written into a profile
    (work.SECTION), they are what that profile's modeled rows price, and the rows name the build."""
    from workers.models.memmap import kernel
    from workers.modeled import rows as model_rows

    truth = work.recorded_costs("debian:6.12")
    rows = kernel_like_rows(truth)
    fit = kernel.fit_build(rows)
    assert fit.build == "6.12.0-user@0123456789abcdef" and fit.problem == ""
    for op in ("call", "head_slow", "tail_slow", "compound", "pageblock"):
        assert getattr(fit.costs, op) == pytest.approx(getattr(truth, op), rel=1e-3), op
    assert np.isnan(fit.costs.head_copy).all() and 0 <= fit.loo_error < 1e-3
    assert len([line for line in fit.lines if "leave-one-out error" in line]) == 12
    assert "head_copy_template" not in fit.entries  # a strategy the build never ran: no modeled count

    seed = load_profile("seed")
    profile = replace(seed, sections={**seed.sections, fit.section: fit.entries})
    assert work.profile_costs(profile).build == fit.build and work.profile_costs(seed).build == work.PRICED
    params = rows.select(pl.col("^param_.*$"))
    out = model_rows(MODEL, params.with_columns(pl.lit("template").alias("param_strategy")).head(2).vstack(
        params.head(4)), profile, None)
    assert out["kernel_build"].to_list() == [None, None] + [fit.build] * 4  # no cost of a template copy: no count
    assert out["metric_init_instructions"].head(2).is_null().all()
    priced = out["metric_init_instructions"].tail(4).to_numpy()
    assert np.abs(priced / rows["metric_init_instructions"].head(4).to_numpy() - 1).max() < 1e-3


def test_rows_that_do_not_identify_a_builds_costs_are_said_to():
    """One configuration alone: the fit's costs are not identified and no leave-one-out error can be measured."""
    from workers.models.memmap import kernel

    rows = kernel_like_rows(work.recorded_costs("debian:6.12")).filter(
        (pl.col("param_mode") == "fsdax") & (pl.col("param_map") == "mem") & (pl.col("param_align") == 2 * MiB))
    fit = kernel.fit_build(rows)
    assert "identify" in fit.problem and "add namespace sizes, modes, aligns or maps" in fit.problem
