"""The work memmap_init_zone_device() does (workers/models/memmap/work.py): counts from the kernel's loops,
and the fit of per-operation instruction costs with its leave-one-out."""

from __future__ import annotations

import numpy as np
import pytest

from workers.model import points_frame
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
