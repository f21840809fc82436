"""workers.plots: a declaration names an axis by its name; the objects hold its param_ column."""

from __future__ import annotations

from workers.findings import MAX, Clause, Medians
from workers.plots import POOL, Cond, Either, Lines, Panels


def test_an_axis_by_its_name_is_its_param_column_and_a_metric_is_kept():
    """x, hue, panels, hold, where (a Cond, "== column" on both sides), Either.when_varying, a
    Medians' by and its clauses': every axis name becomes param_<name>; param_ and metric_ names stay."""
    bare = Lines(id="a", title="t", caption="c", x="size", y="metric_time_ms", hue="strategy",
                 panels=Panels("arch", facets=("cpus", "param_mode"), keep={"cpus": (1,)}),
                 hold={"align": POOL}, where=(Cond("hvo", "==", True), Cond("working_set", "== column", "size"),
                                              Either(((Cond("metric_x", ">", 0),),), when_varying="lru")))
    assert [x.column for x in bare.x] == ["param_size"] and bare.hue.column == "param_strategy"
    assert (bare.panels.split, bare.panels.facets, dict(bare.panels.keep)) == (
        "param_arch", ("param_cpus", "param_mode"), {"param_cpus": (1,)})
    assert dict(bare.hold) == {"param_align": POOL} and bare.y.metric == "metric_time_ms"
    hvo, ws, either = bare.where
    assert (hvo.column, ws.column, ws.value, either.when_varying) == ("param_hvo", "param_working_set", "param_size",
                                                                       "param_lru")
    assert either.groups[0][0].column == "metric_x"
    m = Medians(id="m", figure="a", text="{low}{more}", metric="metric_y", by="batching", quote=(("low", MAX),),
                more=(Clause(by="cpus", quote=(("c", MAX),), text=""),))
    assert (m.by, m.more[0].by) == ("param_batching", "param_cpus")
