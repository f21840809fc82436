"""The figure registry, skip rules, render_all's handling of a broken figure, and the parity plot."""

from __future__ import annotations

import polars as pl
import pytest

from analysis.figures import index as F
from analysis.exceptions import AnalysisWarning
from analysis.figures.plotting import Rendered, Skipped
from analysis.read import Sweep
from tests.analysis.conftest import write_sweep
from workers import get_model


def young_only(tmp_path, with_figure_point: bool = True) -> Sweep:
    """A hand-built young sweep: two folio orders x two batchings, optionally at the published point."""
    model = get_model("young")
    fig = next(f for f in model.calibration.figures if f.id == "young/arm64/per_pte")
    base = {a.column: a.canonical(fig.params.get(a.name, a.default)) for a in model.axes}
    if not with_figure_point:
        base["param_namespace_size"] = 1 << 30
    rows = [{**base, "param_compound_order": o, "param_batching": b, "metric_scan_ms": t}
            for o, b, t in ((4, "per_pte", 470.0), (4, "batched", 180.0), (6, "per_pte", 400.0),
                            (6, "batched", 90.0))]
    df = pl.DataFrame(rows, schema={**{a.column: a.dtype for a in model.axes}, "metric_scan_ms": pl.Float64})
    return Sweep(write_sweep(tmp_path, "young-only", {"young": df.with_columns(pl.lit("ok").alias("status"))}))


def test_registry_lists_the_declared_figures_then_the_cross_model_ones(small_sweep):
    """The small sweep's registry: the seven figures its four models declare, then parity,
    measured_vs_model, model_vs_kernel and kernel_gains; unique ids, each with a title and a callable."""
    reg = F.registry(Sweep(small_sweep))
    ids = [fid for fid, _, _ in reg]
    assert len(ids) == len(set(ids)) == 11
    assert {"memmap_init", "memmap_speedup_heatmap", "memmap_overhead", "pfnmap_latency", "pfnmap_coverage",
            "copy_cost", "young_scan"} == set(ids[:7]) and ids[7:] == ["parity", "measured_vs_model", "model_vs_kernel",
                                                                         "kernel_gains"]
    assert all(title and callable(fn) for _, title, fn in reg)


def test_absent_models_figures_are_not_listed(tmp_path):
    """A young-only sweep draws the young figure and the parity plot; absent models' figures are not
    in the list at all (not a row of 'model absent' skips)."""
    out = {r.id: r for r in F.render_all(young_only(tmp_path), tmp_path / "figs")}
    assert isinstance(out["young_scan"], Rendered) and out["young_scan"].png.is_file()
    assert isinstance(out["parity"], Rendered) and out["parity"].svg.is_file()
    assert set(out) == {"young_scan", "parity", "measured_vs_model", "model_vs_kernel", "kernel_gains"}


def test_parity_is_skipped_when_no_published_point_is_in_the_sweep(tmp_path):
    """Without a figure's point in the data the parity plot explains why it is absent."""
    r = F.parity(young_only(tmp_path, with_figure_point=False), tmp_path)
    assert isinstance(r, Skipped) and "no published figure's point is in this sweep" in r.reason


def test_parity_reports_the_median_error(tmp_path):
    """The caption names the median absolute error of the figures drawn (here 0%: values equal), those never
    fit before the fitted ones, which it calls in-sample."""
    r = F.parity(young_only(tmp_path), tmp_path)
    assert isinstance(r, Rendered) and "median |error| 0.0%" in r.caption
    val, fit = r.caption.find("Validation figures (never fit)"), r.caption.find("Fitted figures (in-sample")
    assert fit >= 0 and (val == -1 or val < fit)


def test_a_figure_that_raises_is_skipped_with_a_warning(tmp_path, monkeypatch):
    """One broken figure costs only itself: it becomes Skipped and an AnalysisWarning is raised."""
    def broken(sweep, outdir):
        raise RuntimeError("kaboom <b>")

    monkeypatch.setattr(F, "registry", lambda sweep: [("bad", "Bad figure", broken)])
    with pytest.warns(AnalysisWarning, match="figure 'bad' could not be drawn: RuntimeError: kaboom"):
        out = F.render_all(young_only(tmp_path), tmp_path)
    assert out == [Skipped(id="bad", title="Bad figure", reason="could not be drawn: RuntimeError: kaboom <b>")]
