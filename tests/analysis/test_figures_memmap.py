"""The memmap figures on a real small sweep, and their skip rules."""

from __future__ import annotations

import polars as pl
import pytest
from PIL import Image

from analysis import figures_memmap as FM
from analysis.plotting import Rendered, Skipped
from analysis.read import Sweep
from tests.analysis.conftest import write_sweep


@pytest.fixture(scope="module")
def sweep(small_sweep) -> Sweep:
    return Sweep(small_sweep)


@pytest.mark.parametrize("fn", [FM.memmap_init, FM.memmap_heatmap, FM.memmap_overhead])
def test_memmap_figures_render_png_and_svg(sweep, tmp_path, fn):
    """Each memmap figure is drawn from the small sweep: a real PNG and an SVG, a title and a caption."""
    r = fn(sweep, tmp_path)
    assert isinstance(r, Rendered), r
    with Image.open(r.png) as im:
        assert im.size[0] > 500 and im.size[1] > 300
    assert "<svg" in r.svg.read_text()[:2000]
    assert r.title.startswith("memmap") and "Other axes held at:" in r.caption


def test_init_figure_holds_kmsan_on_so_80_and_96_byte_pages_show_under_map_dev(sweep, tmp_path):
    """CONFIG_NVDIMM_KMSAN is held on: it only matters for P > 64, where map=dev needs it; map is a facet."""
    r = FM.memmap_init(sweep, tmp_path)
    assert "nvdimm_kmsan=true" in r.caption and "map=" not in r.caption.split("held at:")[1]
    assert "struct_page_size, mode, map" in r.caption


@pytest.mark.parametrize("fn", [FM.memmap_init, FM.memmap_heatmap, FM.memmap_overhead])
def test_memmap_figures_have_no_empty_panel(sweep, tmp_path, fn):
    """Every panel drawn has data: facets are the combinations with feasible rows."""
    r = fn(sweep, tmp_path)
    assert r.panels >= 2 and r.empty_panels == 0


def test_init_figure_drops_infeasible_facets_instead_of_drawing_them(tmp_path):
    """map=dev at P = 80 has no feasible row: 3 panels (P64 dev, P64 mem, P80 mem), not 4."""
    rows = []
    for p in (64, 80):
        for m in ("dev", "mem"):
            for size in (1 << 30, 2 << 30, 4 << 30):
                for strategy, t in (("slow", 2.0), ("template", 1.0)):
                    bad = p == 80 and m == "dev"
                    rows.append({"param_namespace_size": size, "param_struct_page_size": p, "param_map": m,
                                 "param_mode": "fsdax", "param_strategy": strategy,
                                 "status": "infeasible" if bad else "ok", "metric_init_ms": None if bad else t})
    s = Sweep(write_sweep(tmp_path, "facets", {"memmap": pl.DataFrame(rows)}))
    r = FM.memmap_init(s, tmp_path)
    assert isinstance(r, Rendered) and (r.panels, r.empty_panels) == (3, 0)


def test_heatmap_lays_out_the_axes_that_vary_when_compound_order_is_auto(tmp_path):
    """Order 'auto' only: the grid is align x mode, and the title says so."""
    rows = [{"param_namespace_size": 1 << 30, "param_struct_page_size": 64, "param_align": a,
             "param_compound_order": None, "param_mode": mode, "param_strategy": st, "status": "ok",
             "metric_init_ms": t} for a in (4096, 2 << 20) for mode in ("fsdax", "devdax")
            for st, t in (("slow", 2.0), ("template", 1.0))]
    df = pl.DataFrame(rows, schema_overrides={"param_compound_order": pl.Int64})
    r = FM.memmap_heatmap(Sweep(write_sweep(tmp_path, "auto", {"memmap": df})), tmp_path)
    assert isinstance(r, Rendered) and r.title.endswith("across align x mode") and r.empty_panels == 0


def test_overhead_figure_names_the_namespace_size_it_holds(sweep, tmp_path):
    """The overhead figure holds one namespace size, the default 100GiB when present."""
    r = FM.memmap_overhead(sweep, tmp_path)
    assert "namespace_size=100GiB" in r.caption


def test_memmap_figures_skip_when_the_model_is_absent(tmp_path):
    """A sweep without memmap rows skips all three with 'model absent'."""
    df = pl.DataFrame({"param_batching": ["a", "b"], "status": "ok", "metric_scan_ms": [1.0, 2.0]})
    s = Sweep(write_sweep(tmp_path, "no-memmap", {"young": df}))
    for fn in (FM.memmap_init, FM.memmap_heatmap, FM.memmap_overhead):
        r = fn(s, tmp_path)
        assert isinstance(r, Skipped) and r.reason.startswith("model absent")


def test_heatmap_skips_when_no_grid_axis_varies(tmp_path):
    """With one align, one order and one mode there is no grid to draw."""
    df = pl.DataFrame({"param_namespace_size": [1 << 30] * 2, "param_struct_page_size": [64] * 2,
                       "param_align": [2 << 20] * 2, "param_compound_order": [0, 0], "param_mode": ["fsdax"] * 2,
                       "param_strategy": ["slow", "template"], "status": "ok", "metric_init_ms": [2.0, 1.0]})
    r = FM.memmap_heatmap(Sweep(write_sweep(tmp_path, "flat", {"memmap": df})), tmp_path)
    assert isinstance(r, Skipped) and r.reason.startswith("none of compound_order, align, mode")


def test_init_figure_skips_when_size_does_not_vary(tmp_path):
    """One namespace size: nothing to plot against."""
    df = pl.DataFrame({"param_namespace_size": [1 << 30] * 2, "param_struct_page_size": [64] * 2,
                       "param_mode": ["fsdax"] * 2, "param_strategy": ["slow", "template"], "status": "ok",
                       "metric_init_ms": [2.0, 1.0]})
    r = FM.memmap_init(Sweep(write_sweep(tmp_path, "one", {"memmap": df})), tmp_path)
    assert isinstance(r, Skipped) and "namespace_size takes a single value" in r.reason


def test_overhead_figure_skips_measured_rows_that_only_fill_the_headline(tmp_path):
    """Measured memmap rows carry init time only: the overhead figure says there is nothing to draw."""
    df = pl.DataFrame({"param_namespace_size": [1 << 30] * 2, "param_struct_page_size": [64, 80],
                       "param_map": ["mem"] * 2, "source": ["measured"] * 2, "status": "ok",
                       "metric_init_ms": [1.0, 2.0]}).with_columns(
        pl.lit(None, dtype=pl.Int64).alias(c) for c in ("metric_compound_order", "metric_memmap_device_bytes",
                                                        "metric_memmap_dram_bytes")).with_columns(
        pl.lit(None, dtype=pl.Boolean).alias("metric_vmemmap_optimized"))
    r = FM.memmap_overhead(Sweep(write_sweep(tmp_path, "measured", {"memmap": df})), tmp_path)
    assert isinstance(r, Skipped) and r.reason.startswith("no ok memmap rows with a value of metric_memmap_device")
