"""The measured-vs-model figure (analysis/figures/measured.py)."""

from __future__ import annotations

import polars as pl

from analysis.figures import measured as FX
from analysis.figures.plotting import Rendered, Skipped
from analysis.read import Sweep

from tests.analysis.conftest import write_sweep


def memmap_rows(source: str, values: list[float], least: list[float] | None = None) -> pl.DataFrame:
    n = len(values)
    return pl.DataFrame({
        "point_id": pl.Series(range(n), dtype=pl.UInt64), "param_namespace_size": [1 << 30] * n,
        "param_strategy": ["slow", "template", "template_nt", "template_nt_inline"][:n], "source": source,
        "status": "ok", "metric_init_ms": values,
        "measure_min": pl.Series(least if least is not None else [None] * n, dtype=pl.Float64),
    })


def test_each_measured_point_is_drawn_against_its_modeled_twin(tmp_path):
    """Four points measured at 1.5x their modeled time: one memmap panel whose caption says 1.50."""
    df = pl.concat([memmap_rows("model", [1.0, 2.0, 3.0, 4.0]),
                    memmap_rows("measured", [1.5, 3.0, 4.5, 6.0], least=[1.4, 2.9, 4.4, 5.0])])
    r = FX.measured_vs_model(Sweep(write_sweep(tmp_path, "both", {"memmap": df})), tmp_path / "out")
    assert isinstance(r, Rendered) and r.png.stat().st_size > 0 and r.svg.is_file()
    assert "memmap: init ms: median measured / model 1.50 over 4 points" in r.caption
    pairs = FX.pairs(Sweep(str(tmp_path / "both")).rows("memmap"), "metric_init_ms", "param_strategy")
    assert sorted(pairs["least"].to_list()) == [1.4, 2.9, 4.4, 5.0]


def test_a_sweep_without_measurements_is_skipped_with_the_reason(tmp_path):
    """Only modeled rows: nothing to compare, and the reason names source = "both"."""
    r = FX.measured_vs_model(Sweep(write_sweep(tmp_path, "model", {"memmap": memmap_rows("model", [1.0, 2.0])})),
                             tmp_path / "out")
    assert isinstance(r, Skipped) and 'source = "both"' in r.reason


def test_measured_points_without_a_modeled_twin_are_skipped(tmp_path):
    """Measured and modeled rows at different points (no shared point_id) give nothing to draw."""
    measured = memmap_rows("measured", [1.0, 2.0], least=[1.0, 2.0]).with_columns(pl.col("point_id") + 100)
    df = pl.concat([memmap_rows("model", [1.0, 2.0]), measured])
    r = FX.measured_vs_model(Sweep(write_sweep(tmp_path, "apart", {"memmap": df})), tmp_path / "out")
    assert isinstance(r, Skipped) and "modeled twin" in r.reason
