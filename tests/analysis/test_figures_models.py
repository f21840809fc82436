"""The pfnmap, copy and young figures on a real small sweep, and their skip rules."""

from __future__ import annotations

import polars as pl
import pytest
from PIL import Image

from analysis import figures_models as FX
from analysis.plotting import Rendered, Skipped
from analysis.read import Sweep
from tests.analysis.conftest import write_sweep


@pytest.fixture(scope="module")
def sweep(small_sweep) -> Sweep:
    return Sweep(small_sweep)


@pytest.mark.parametrize("fn", [FX.pfnmap_latency, FX.pfnmap_coverage, FX.copy_cost, FX.young_scan])
def test_model_figures_render_png_and_svg(sweep, tmp_path, fn):
    """Each figure is drawn from the small sweep as a real PNG plus an SVG."""
    r = fn(sweep, tmp_path)
    assert isinstance(r, Rendered), r
    with Image.open(r.png) as im:
        assert im.size[0] > 400 and im.size[1] > 300
    assert "<svg" in r.svg.read_text()[:2000] and r.title and r.caption


def test_pfnmap_latency_holds_the_published_figures_parameters(sweep, tmp_path):
    """The slice shown is the RFC's (align 1GiB) so the published crosses are comparable."""
    r = FX.pfnmap_latency(sweep, tmp_path)
    assert "align=1GiB" in r.caption and "published RFC figures" in r.caption


def test_pfnmap_coverage_uses_align_as_the_misalignment_axis(sweep, tmp_path):
    """align varies in the small sweep, so coverage is drawn against it."""
    r = FX.pfnmap_coverage(sweep, tmp_path)
    assert "Mapping lengths shown: 64MiB" in r.caption


def test_leaf_names():
    """Leaf orders print as the kernel's leaf kinds."""
    assert [FX.leaf_name(o) for o in (0, 9, 18, 5, None)] == [
        "PTE only (mainline)", "PMD leaves (RFC)", "PUD leaves (what-if)", "order 5", "auto"]


def test_coverage_skips_without_a_misalignment_axis(tmp_path):
    """No align / pa_offset / va_offset variation: nothing to plot coverage against."""
    df = pl.DataFrame({"param_namespace_size": [1 << 30, 2 << 30], "param_compound_order": [9, 9],
                       "param_align": [2 << 20] * 2, "status": "ok", "metric_huge_fraction": [1.0, 1.0]})
    r = FX.pfnmap_coverage(Sweep(write_sweep(tmp_path, "aligned", {"pfnmap": df})), tmp_path)
    assert isinstance(r, Skipped) and r.reason == "none of align, pa_offset, va_offset varies in this sweep"


def test_young_skips_with_fewer_than_two_orders(tmp_path):
    """One explicit folio order (auto rows do not count) is not a curve."""
    df = pl.DataFrame({"param_compound_order": [4, None], "param_batching": ["per_pte", "batched"],
                       "status": "ok", "metric_scan_ms": [2.0, 1.0]},
                      schema_overrides={"param_compound_order": pl.Int64})
    r = FX.young_scan(Sweep(write_sweep(tmp_path, "one-order", {"young": df})), tmp_path)
    assert isinstance(r, Skipped) and "fewer than two explicit folio orders" in r.reason


def test_copy_skips_when_columns_are_missing(tmp_path):
    """A copy dataset without ns_per_copy (another model version) is skipped, naming the column."""
    df = pl.DataFrame({"param_struct_page_size": [64, 80], "param_strategy": ["memcpy"] * 2, "status": "ok",
                       "metric_gbs": [1.0, 2.0]})
    r = FX.copy_cost(Sweep(write_sweep(tmp_path, "old-copy", {"copy": df})), tmp_path)
    assert isinstance(r, Skipped) and "metric_ns_per_copy" in r.reason
