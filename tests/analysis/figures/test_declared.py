"""The figures models declare (workers.plots.Lines; memmap's heatmap, a workers.hooks.Hook), drawn by
analysis.figures.declared on real sweeps, and their skip rules."""

from __future__ import annotations

import polars as pl
import pytest
from PIL import Image

from analysis.figures.declared import declared, draw
from analysis.figures.plotting import Rendered, Skipped
from analysis.read import Sweep
from tests.analysis.conftest import write_sweep
from workers import get_model
from workers.hooks import Hook
from workers.plots import Cond, Either, holds

SHIPPED = [(m, p.id) for m in ("memmap", "copy", "pfnmap", "young") for p in get_model(m).report.plots]


def plot(model: str, fid: str):
    return next(p for p in get_model(model).report.plots if p.id == fid)


def render(sweep: Sweep, model: str, fid: str, outdir) -> Rendered | Skipped:
    return draw(sweep.rows(model), plot(model, fid), outdir)


@pytest.fixture(scope="module")
def sweep(small_sweep) -> Sweep:
    return Sweep(small_sweep)


def test_the_shipped_models_declare_the_seven_figures():
    """Three memmap figures, two pfnmap, one copy, one young: ids unique, each with a title and caption."""
    ids = [fid for _, fid in SHIPPED]
    assert ids == ["memmap_init", "memmap_speedup_heatmap", "memmap_overhead", "copy_cost", "pfnmap_latency",
                   "pfnmap_coverage", "young_scan"]
    # a Lines declares its caption; a hook's figure brings its own (test_every_declared_figure_renders_png_and_svg_...)
    assert all(plot(m, f).title and (isinstance(plot(m, f), Hook) or plot(m, f).caption) for m, f in SHIPPED)


def test_declared_lists_the_plots_of_the_sweeps_models_in_the_specs_order(sweep):
    """The small sweep runs all four models: every shipped plot, memmap's first (the spec lists it first)."""
    assert [p.id for _, p in declared(sweep)][:3] == ["memmap_init", "memmap_speedup_heatmap", "memmap_overhead"]
    assert sorted(p.id for _, p in declared(sweep)) == sorted(fid for _, fid in SHIPPED)


@pytest.mark.parametrize("model,fid", SHIPPED)
def test_every_declared_figure_renders_png_and_svg_without_empty_panels(sweep, tmp_path, model, fid):
    """Each figure is drawn from the small sweep: a real PNG and an SVG, a caption, no empty panel."""
    r = render(sweep, model, fid, tmp_path)
    assert isinstance(r, Rendered), r
    with Image.open(r.png) as im:
        assert im.size[0] > 400 and im.size[1] > 300
    assert "<svg" in r.svg.read_text()[:2000] and r.title.startswith(model) and r.caption
    assert r.panels >= 1 and r.empty_panels == 0


@pytest.mark.slow  # renders the largest figure a second time
def test_init_figure_holds_kmsan_on_so_80_and_96_byte_pages_show_under_map_dev(sweep, tmp_path):
    """CONFIG_NVDIMM_KMSAN is held on: it only matters for P > 64, where map=dev needs it; map is a facet."""
    r = render(sweep, "memmap", "memmap_init", tmp_path)
    assert "nvdimm_kmsan=true" in r.caption and "map=" not in r.caption.split("held at:")[1]
    assert "One panel per combination of struct_page_size, mode, map" in r.caption


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
    r = render(s, "memmap", "memmap_init", tmp_path)
    assert isinstance(r, Rendered) and (r.panels, r.empty_panels) == (3, 0)


def test_heatmap_lays_out_the_axes_that_vary_when_compound_order_is_auto(tmp_path):
    """Order 'auto' only: the grid is align x mode, and the title says so."""
    rows = [{"param_namespace_size": 1 << 30, "param_struct_page_size": 64, "param_align": a,
             "param_compound_order": None, "param_mode": mode, "param_strategy": st, "status": "ok",
             "metric_init_ms": t} for a in (4096, 2 << 20) for mode in ("fsdax", "devdax")
            for st, t in (("slow", 2.0), ("template", 1.0))]
    df = pl.DataFrame(rows, schema_overrides={"param_compound_order": pl.Int64})
    r = render(Sweep(write_sweep(tmp_path, "auto", {"memmap": df})), "memmap", "memmap_speedup_heatmap", tmp_path)
    assert isinstance(r, Rendered) and r.title.endswith("across align x mode") and r.empty_panels == 0


def test_heatmap_skips_when_no_grid_axis_varies(tmp_path):
    """With one align, one order and one mode there is no grid to draw."""
    df = pl.DataFrame({"param_namespace_size": [1 << 30] * 2, "param_struct_page_size": [64] * 2,
                       "param_align": [2 << 20] * 2, "param_compound_order": [0, 0], "param_mode": ["fsdax"] * 2,
                       "param_strategy": ["slow", "template"], "status": "ok", "metric_init_ms": [2.0, 1.0]})
    r = render(Sweep(write_sweep(tmp_path, "flat", {"memmap": df})), "memmap", "memmap_speedup_heatmap", tmp_path)
    assert isinstance(r, Skipped) and r.reason.startswith("none of compound_order, align, mode")


def test_overhead_figure_names_the_namespace_size_it_holds(sweep, tmp_path):
    """The overhead figure holds one namespace size, the default 100GiB when present."""
    r = render(sweep, "memmap", "memmap_overhead", tmp_path)
    assert "namespace_size=100GiB" in r.caption and (r.panels, r.empty_panels) == (2, 0)


def test_init_figure_skips_when_size_does_not_vary(tmp_path):
    """One namespace size: nothing to plot against."""
    df = pl.DataFrame({"param_namespace_size": [1 << 30] * 2, "param_struct_page_size": [64] * 2,
                       "param_mode": ["fsdax"] * 2, "param_strategy": ["slow", "template"], "status": "ok",
                       "metric_init_ms": [2.0, 1.0]})
    r = render(Sweep(write_sweep(tmp_path, "one", {"memmap": df})), "memmap", "memmap_init", tmp_path)
    assert isinstance(r, Skipped) and "namespace_size takes a single value" in r.reason


def test_overhead_figure_skips_measured_rows_that_only_fill_the_headline(tmp_path):
    """Measured memmap rows carry init time only: the overhead figure says there is nothing to draw."""
    df = pl.DataFrame({"param_namespace_size": [1 << 30] * 2, "param_struct_page_size": [64, 80],
                       "param_map": ["mem"] * 2, "source": ["measured"] * 2, "status": "ok",
                       "metric_init_ms": [1.0, 2.0]}).with_columns(
        pl.lit(None, dtype=pl.Int64).alias(c) for c in ("metric_compound_order", "metric_memmap_device_bytes",
                                                        "metric_memmap_dram_bytes")).with_columns(
        pl.lit(None, dtype=pl.Boolean).alias("metric_vmemmap_optimized"))
    r = render(Sweep(write_sweep(tmp_path, "measured", {"memmap": df})), "memmap", "memmap_overhead", tmp_path)
    assert isinstance(r, Skipped) and r.reason.startswith("no ok memmap rows with a value of metric_memmap_device")


def test_pfnmap_latency_holds_the_published_figures_parameters(sweep, tmp_path):
    """The slice shown is the RFC's (align 1GiB) so the published crosses are comparable."""
    r = render(sweep, "pfnmap", "pfnmap_latency", tmp_path)
    assert "align=1GiB" in r.caption and "published RFC figures" in r.caption


def test_pfnmap_coverage_uses_align_as_the_misalignment_axis(sweep, tmp_path):
    """align varies in the small sweep, so coverage is drawn against it, at most three lengths shown."""
    r = render(sweep, "pfnmap", "pfnmap_coverage", tmp_path)
    assert "namespace_size shown: 64MiB" in r.caption


def test_coverage_skips_without_a_misalignment_axis(tmp_path):
    """No align / pa_offset / va_offset variation: nothing to plot coverage against."""
    df = pl.DataFrame({"param_namespace_size": [1 << 30, 2 << 30], "param_compound_order": [9, 9],
                       "param_align": [2 << 20] * 2, "status": "ok", "metric_huge_fraction": [1.0, 1.0]})
    r = render(Sweep(write_sweep(tmp_path, "aligned", {"pfnmap": df})), "pfnmap", "pfnmap_coverage", tmp_path)
    assert isinstance(r, Skipped)
    assert r.reason == "none of align, pa_offset, va_offset varies among the ok pfnmap rows of this sweep"


def test_young_skips_with_fewer_than_two_orders(tmp_path):
    """One explicit folio order (auto rows are filtered out by the declaration) is not a curve."""
    df = pl.DataFrame({"param_compound_order": [4, None], "param_batching": ["per_pte", "batched"],
                       "status": "ok", "metric_scan_ms": [2.0, 1.0]},
                      schema_overrides={"param_compound_order": pl.Int64})
    r = render(Sweep(write_sweep(tmp_path, "one-order", {"young": df})), "young", "young_scan", tmp_path)
    assert isinstance(r, Skipped) and "fewer than two values of compound_order" in r.reason


def test_copy_skips_when_columns_are_missing(tmp_path):
    """A copy dataset without ns_per_copy (another model version) is skipped, naming the column."""
    df = pl.DataFrame({"param_struct_page_size": [64, 80], "param_strategy": ["memcpy"] * 2, "status": "ok",
                       "metric_gbs": [1.0, 2.0]})
    r = render(Sweep(write_sweep(tmp_path, "old-copy", {"copy": df})), "copy", "copy_cost", tmp_path)
    assert isinstance(r, Skipped) and "lack the columns ['metric_ns_per_copy']" in r.reason


def test_conditions_hold_on_rows_as_data():
    """Cond and Either read a row given as a dict: comparisons, null, membership, another column."""
    row = {"param_arch": "arm64", "param_first_pte_cont": True, "param_working_set": None,
           "param_namespace_size": 4 << 30}
    assert holds(Cond("param_arch", "==", "arm64"), row) and not holds(Cond("param_arch", "!=", "arm64"), row)
    assert holds(Cond("param_working_set", "==", None), row)
    assert not holds(Cond("param_working_set", "not null"), row) and not holds(Cond("param_working_set", ">=", 0), row)
    assert holds(Cond("param_arch", "in", ("arm64", "x86_64")), row) and not holds(Cond("param_nope", "==", 1), row)
    assert holds(Cond("param_namespace_size", "== column", "param_namespace_size"), row)
    either = Either(groups=((Cond("param_arch", "==", "x86_64"),), (Cond("param_first_pte_cont", "==", True),)))
    assert holds(either, row) and not holds(either, {**row, "param_first_pte_cont": False})


def test_young_figure_pairs_arm64_cont_heads_with_x86_64_where_first_pte_cont_varies(tmp_path):
    """The declared Either keeps arm64 rows with a cont first PTE and x86_64 rows without one: the
    medians drawn are those rows' values, not a mix."""
    rows = [{"param_compound_order": o, "param_batching": b, "param_arch": a, "param_first_pte_cont": c,
             "status": "ok", "metric_scan_ms": (100.0 if c == (a == "arm64") else 1e6) + o}
            for o in (4, 6) for b in ("per_pte", "batched") for a in ("arm64", "x86_64") for c in (True, False)]
    s = Sweep(write_sweep(tmp_path, "cont", {"young": pl.DataFrame(rows)}))
    r = render(s, "young", "young_scan", tmp_path)
    assert isinstance(r, Rendered) and r.panels == 2 and "true on arm64, false on x86_64" in r.caption
    assert "first_pte_cont=" not in r.caption  # filtered by the declaration, not held at one value


def test_panels_sharing_an_order_axis_label_it_in_one_size(tmp_path, monkeypatch):
    """young_scan's two panels share the folio-order axis: each labels its ticks (order and size, two
    lines) in the same size, not the first panel smaller than the second."""
    import matplotlib.figure
    drawn = []
    save = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda fig, *a, **k: (drawn.append(fig), save(fig, *a, **k)))
    rows = [{"param_compound_order": o, "param_batching": b, "param_arch": a, "status": "ok",
             "metric_scan_ms": 100.0 * (o + 1)} for o in (0, 2, 4) for b in ("per_pte", "batched")
            for a in ("arm64", "x86_64")]
    r = render(Sweep(write_sweep(tmp_path, "orders", {"young": pl.DataFrame(rows)})), "young", "young_scan", tmp_path)
    assert isinstance(r, Rendered) and r.panels == 2
    panels = [ax for ax in drawn[0].axes if ax.get_xticklabels()]
    sizes = {t.get_fontsize() for ax in panels for t in ax.get_xticklabels()}
    assert len(panels) == 2 and sizes == {8.0}
    assert [t.get_text() for t in panels[1].get_xticklabels()] == ["0\n4KiB", "2\n16KiB", "4\n64KiB"]


def test_a_sweep_of_one_model_lists_only_that_models_figures(tmp_path):
    """A young-only sweep lists young's figure and the cross-model ones, not the absent models' figures."""
    df = pl.DataFrame({"param_compound_order": [4, 6], "param_batching": ["per_pte", "batched"],
                       "status": "ok", "metric_scan_ms": [2.0, 1.0]})
    assert [p.id for _, p in declared(Sweep(write_sweep(tmp_path, "young", {"young": df})))] == ["young_scan"]


def test_coinciding_lines_are_named_in_the_caption_and_no_panel_is_empty(tmp_path):
    """slow and template give the same init time under map=mem only: the caption names them and that panel;
    template_nt, apart everywhere, is not named; both panels still have data."""
    rows = []
    for m in ("dev", "mem"):
        for size in (1 << 30, 2 << 30, 4 << 30):
            for strategy, t in (("slow", 2.0 if m == "dev" else 1.0), ("template", 1.0), ("template_nt", 0.5)):
                rows.append({"param_namespace_size": size, "param_map": m, "param_mode": "fsdax",
                             "param_strategy": strategy, "status": "ok", "metric_init_ms": t * size / (1 << 30)})
    s = Sweep(write_sweep(tmp_path, "same", {"memmap": pl.DataFrame(rows)}))
    r = render(s, "memmap", "memmap_init", tmp_path)
    assert isinstance(r, Rendered) and (r.panels, r.empty_panels) == (2, 0)
    assert "Lines that coincide (within 0.1%; drawn in alternating dashes where their colours differ): " \
           "slow = template (map=mem)." in r.caption
    assert "template_nt =" not in r.caption and "= template_nt" not in r.caption
