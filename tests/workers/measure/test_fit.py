"""Calibration figures from measured rows (workers/measure/fit.py), and that a fit to them recovers the times."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from workers.calibrate import figure_frame, predict
from workers.calibrate import fit as fit_costs
from workers.measure import fit
from workers.models.memmap import MODEL as MEMMAP
from workers.models.pfnmap import MODEL as PFNMAP
from workers.models.young import MODEL as YOUNG
from workers.profiles import load_profile

SEED = load_profile("seed")


def measured(points, model, rows, values, status=None, source=None):
    """A dataset-like frame: the points, a status, and `values` as measure_min and measure_median."""
    frame = points(model, *rows)
    extra = {"status": status or ["ok"] * len(rows), "measure_min": values, "measure_median": values}
    if source:
        extra["source"] = source
    return pl.concat([frame, pl.DataFrame(extra)], how="horizontal")


def test_memmap_rows_become_figures_named_by_mode_size_strategy(points):
    """One figure per ok measured row, id memmap/measured/<mode>/P<P>/<strategy>/<size>, published = its value."""
    rows = [{"namespace_size": "1GiB", "strategy": "template_nt", "mode": "fsdax"},
            {"namespace_size": "2GiB", "strategy": "slow", "mode": "devdax", "map": "mem"},
            {"namespace_size": "4GiB"}]
    frame = measured(points, MEMMAP, rows, [1.5, 2.5, 3.5], status=["ok", "ok", "infeasible"])
    figs = fit.figures_from_measured(MEMMAP, frame)
    assert [f.id for f in figs] == ["memmap/measured/fsdax/P64/template_nt/1GiB",
                                    "memmap/measured/devdax/P64/slow/2GiB/map=mem"]
    assert [f.published for f in figs] == [1.5, 2.5]
    assert all(f.metric == "metric_init_ms" and f.unit == "ms" for f in figs)
    assert figure_frame(MEMMAP, figs).height == 2  # the params are canonical axis values


def test_repeated_points_are_one_figure_at_the_median_and_model_rows_are_ignored(points):
    """The same point measured three times is one figure (the median of its values); source = "model" rows
    do not count."""
    row = {"namespace_size": "1GiB"}
    frame = measured(points, MEMMAP, [row] * 4, [1.0, 4.0, 2.0, 100.0],
                     source=["measured", "measured", "measured", "model"])
    (fig,) = fit.figures_from_measured(MEMMAP, frame)
    assert fig.published == 2.0


def test_pfnmap_figures_use_the_metric_of_their_access(points):
    """lat_mem_rd_random rows calibrate ns per load, memcpy_seq rows ms per copy."""
    rows = [{"arch": "x86_64", "compound_order": 0}, {"arch": "x86_64", "compound_order": 9, "access": "memcpy_seq"}]
    figs = fit.figures_from_measured(PFNMAP, measured(points, PFNMAP, rows, [150.0, 20.0]))
    assert [(f.metric, f.unit) for f in figs] == [("metric_ns_per_load", "ns"), ("metric_copy_ms", "ms")]
    assert figs[0].id == "pfnmap/measured/lat_mem_rd_random/order0/100GiB/arch=x86_64"


def test_young_gives_no_figures(points):
    """A model without a measurement has nothing to calibrate from."""
    assert fit.figures_from_measured(YOUNG, measured(points, YOUNG, [{}], [1.0])) == []


def test_host_profile_uses_the_hosts_caches():
    """copy.llc_bytes and pfnmap's l1/l2/llc_bytes become the host's (source measured); without an L3 the
    L2 is the last level; unknown facts leave the profile alone."""
    p = fit.host_profile(SEED, {"l1d_bytes": "32768", "l3_bytes": "33554432", "l2_bytes": "1048576"})
    assert p.value("copy", "llc_bytes") == p.value("pfnmap", "llc_bytes") == 33554432
    assert (p.value("pfnmap", "l1_bytes"), p.value("pfnmap", "l2_bytes")) == (32768, 1048576)
    assert p.sections["copy"]["llc_bytes"].source == p.sections["pfnmap"]["l2_bytes"].source == "measured"
    assert fit.host_profile(SEED, {"l2_bytes": "524288"}).value("copy", "llc_bytes") == 524288
    assert fit.host_profile(SEED, {"l3_bytes": "unknown"}) is SEED


def test_host_profile_takes_the_integer_host_columns():
    """A sweep's env_l1d_bytes / env_l2_bytes / env_l3_bytes values (integers, None when unknown) set the
    same entries as host_facts()' text does."""
    p = fit.host_profile(SEED, {"l1d_bytes": 32768, "l2_bytes": 1048576, "l3_bytes": None})
    assert p.value("copy", "llc_bytes") == p.value("pfnmap", "l2_bytes") == 1048576
    assert p.value("pfnmap", "l1_bytes") == 32768
    assert fit.host_profile(SEED, {"l1d_bytes": None, "l2_bytes": None, "l3_bytes": None}) is SEED


@pytest.mark.slow
def test_a_fit_to_measured_memmap_times_reproduces_them(points):
    """Times made by the memmap model with known costs are reproduced within 2% by calibrate (neutral starts)
    of the measured free parameters, which recover the loop cost only a second struct page size shows."""
    truth = SEED.with_values({("copy", "clock_ghz"): 3.5, ("copy", "store_cycles"): 0.5, ("copy", "call_cycles"): 8.0,
                              ("copy", "dram_write_gbs"): 28.0, ("copy", "dram_rfo_gbs"): 150.0,
                              ("copy", "loop_cycles"): 2.8}, source="assumed")
    rows = [{"namespace_size": size, "mode": mode, "strategy": s, "struct_page_size": p, "map": "mem"}
            for size in ("4GiB", "64GiB") for mode in ("fsdax", "devdax") for p in (64, 80)
            for s in ("slow", "template", "template_nt", "template_nt_inline")]
    frame = points(MEMMAP, *rows)
    times = predict(MEMMAP, fit.figures_from_measured(MEMMAP, measured(points, MEMMAP, rows, [1.0] * 32)), truth)
    figs = fit.figures_from_measured(MEMMAP, measured(points, MEMMAP, rows, list(times)))
    assert frame.height == len(figs) == 32
    free = MEMMAP.calibration.free_for_measured
    assert {("copy", "loop_cycles"), ("copy", "llc_gbs")} <= {(p.section, p.key) for p in free}
    x = fit_costs(MEMMAP, figs, SEED, free)  # the best of the neutral starts (calibrate's fit, without leave-one-out)
    fitted = dict(zip(((p.section, p.key) for p in free), x))
    got = predict(MEMMAP, figs, SEED.with_values(fitted, source="calibrated"))
    assert max(abs(got / np.array([f.published for f in figs]) - 1.0)) < 0.02
    assert fitted[("copy", "dram_write_gbs")] == pytest.approx(28.0, rel=0.05)
    assert fitted[("copy", "loop_cycles")] / fitted[("copy", "clock_ghz")] == pytest.approx(2.8 / 3.5, rel=0.1)


def test_figures_use_the_least_disturbed_time_or_the_median(points):
    """By default a figure is measure_min (the least disturbed time); statistic="median" takes
    measure_median; an unknown statistic is refused."""
    frame = measured(points, MEMMAP, [{"namespace_size": "1GiB"}], [2.0]).with_columns(measure_min=pl.lit(1.5))
    assert fit.figures_from_measured(MEMMAP, frame)[0].published == 1.5
    assert fit.figures_from_measured(MEMMAP, frame, statistic="median")[0].published == 2.0
    with pytest.raises(ValueError, match="'statistic' must be one of"):
        fit.figures_from_measured(MEMMAP, frame, statistic="mean")
