"""The model against the real kernel (analysis.kernel, its figure, table and finding, and compare's rule on
guest times), on hand-built sweeps: what agrees, what differs, what a kernel does not give, and what was
never run."""

from __future__ import annotations

import polars as pl
import pytest

from analysis.compare.compare import compare
from analysis.exceptions import AnalysisError
from analysis.figures.kernel import kernel_gains, model_vs_kernel
from analysis.figures.plotting import Rendered, Skipped
from analysis.kernel import agreement, gains, pairs
from analysis.read import Sweep
from analysis.report.findings import kernel as kernel_finding
from analysis.report.findings import kernel_gain
from analysis.report.overview import gain_tables, kernel_tables
from tests.analysis.conftest import write_sweep
from workers.units import GiB, MiB

SIZES = [1 * GiB, 2 * GiB, 4 * GiB]


def rows(source: str, pages: list[int | None], status: list[str] | None = None, guest: str | None = "6.12.0",
         init_ms: float = 10.0) -> pl.DataFrame:
    """memmap rows of one source at three namespace sizes (point_id = index)."""
    n = len(pages)
    kernel = source == "kernel"
    return pl.DataFrame({
        "point_id": pl.Series(range(n), dtype=pl.UInt64), "param_namespace_size": SIZES[:n],
        "param_mode": "devdax", "param_align": 2 * MiB, "source": source, "status": status or ["ok"] * n,
        "reason": pl.Series([None] * n, dtype=pl.Utf8),
        "metric_memmap_pages": pl.Series(pages, dtype=pl.Int64),
        "metric_offset_bytes": pl.Series([2 * MiB] * n, dtype=pl.Int64),
        "metric_init_ms": [init_ms] * n,
        "env_guest_kernel": pl.Series([guest if kernel else None] * n, dtype=pl.Utf8),
        "env_accel": pl.Series(["tcg" if kernel and guest else None] * n, dtype=pl.Utf8),
    })


def sweep(tmp_path, model: pl.DataFrame, kernel: pl.DataFrame, name: str = "k") -> Sweep:
    return Sweep(write_sweep(tmp_path, name, {"memmap": pl.concat([model, kernel], how="diagonal_relaxed")}))


def test_equal_counts_agree_and_a_different_one_is_named(tmp_path):
    sw = sweep(tmp_path, rows("model", [1024, 2048, 4096]), rows("kernel", [1024, 2048, 4095]))
    df = pairs(sw.rows("memmap"))
    assert df["agrees"].to_list() == [True, True, False] and df["differs"].to_list() == ["", "", "memmap_pages"]
    a = agreement(df)
    assert (a.configurations, a.agree, a.ok, a.kernels, a.accels) == (3, 2, 3, ("6.12.0",), ("tcg",))
    [found] = kernel_finding(sw)
    assert found.text.startswith("The model's memmap counts (memmap pages, offset bytes) and feasibility equal the "
                                 "real kernel's (6.12.0) on 2 of 3 configurations (3 bound, 0 refused by the kernel)")
    assert "they differ in 1, e.g. namespace_size=4GiB: memmap_pages" in found.text
    [table] = kernel_tables(sw)
    assert table.title == "memmap: the model against the real kernel (2 of 3 agree)"
    assert table.frame["memmap_pages"].to_list() == ["1024", "2048", "4095 ≠ 4096"]
    assert table.frame["agrees"].to_list() == ["yes", "yes", "no: memmap_pages"]


def test_a_count_the_kernel_does_not_give_is_unchecked_not_different(tmp_path):
    """6.1 has no nr_memmap_pages: its null pages leave the configuration agreeing on what it does give."""
    sw = sweep(tmp_path, rows("model", [1024, 2048, 4096]), rows("kernel", [None, None, None], guest="6.1.0"))
    a = agreement(pairs(sw.rows("memmap")))
    assert (a.agree, a.checked, a.unchecked) == (3, ("metric_offset_bytes",), ("metric_memmap_pages",))
    assert "the kernel does not give memmap pages, so they are unchecked" in kernel_finding(sw)[0].text


def test_feasibility_must_match_and_rows_no_guest_ran_are_left_out(tmp_path):
    """A point the kernel refuses but the model binds differs in feasibility; a kernel row without a guest
    (the planner ruled it out) is no configuration the kernel checked."""
    model = rows("model", [1024, 2048, 4096])
    kernel = pl.concat([rows("kernel", [1024, None], status=["ok", "infeasible"]),
                        rows("kernel", [None, None, None], status=["infeasible"] * 3, guest=None)[2:]])
    df = pairs(sweep(tmp_path, model, kernel).rows("memmap"))
    assert df.height == 2 and df["differs"].to_list() == ["", "feasibility"]


def test_the_figure_is_drawn_for_kernel_rows_and_skipped_without(tmp_path):
    sw = sweep(tmp_path, rows("model", [1024, 2048, 4096]), rows("kernel", [1024, 2048, 4095]))
    fig = model_vs_kernel(sw, tmp_path / "figs")
    assert isinstance(fig, Rendered) and fig.png.stat().st_size > 0 and "accelerator tcg" in fig.caption
    alone = Sweep(write_sweep(tmp_path, "m", {"memmap": rows("model", [1024, 2048, 4096])}))
    skipped = model_vs_kernel(alone, tmp_path / "figs")
    assert isinstance(skipped, Skipped) and "no model in this sweep has kernel rows a guest ran" in skipped.reason


def test_a_count_at_zero_on_both_sides_everywhere_gets_a_line_not_an_empty_panel(tmp_path):
    sw = sweep(tmp_path, rows("model", [0, 0, 0]), rows("kernel", [0, 0, 0]))
    fig = model_vs_kernel(sw, tmp_path / "figs")
    assert isinstance(fig, Rendered)
    assert "No panel for memmap pages: 0 on both sides of all 3 configurations both bound." in fig.caption


def test_compare_refuses_a_tcg_time_against_the_model_but_not_counts_or_two_guests(tmp_path):
    both = write_sweep(tmp_path, "ab", {"memmap": pl.concat([rows("model", [1, 2, 3]), rows("kernel", [1, 2, 3])],
                                                            how="diagonal_relaxed")})
    with pytest.raises(AnalysisError, match=r"'--metric' metric_init_ms is a time, and the kernel rows of memmap ran "
                                            r"under TCG: .* never compared with model or measured times"):
        compare(both, both, sources="kernel:model")
    counts = compare(both, both, sources="kernel:model", metric="memmap_pages")
    assert counts.blocks[0].compared == 3
    other = write_sweep(tmp_path, "b", {"memmap": rows("kernel", [1, 2, 3], guest="6.1.0", init_ms=20.0)})
    ab = compare(both, other, model="memmap")
    kernel_block = next(b for b in ab.blocks if b.source_a == "kernel")
    assert kernel_block.compared == 3


def strategy_rows(source: str, counts: dict[str, int], init_ms: dict[str, float] | None = None) -> pl.DataFrame:
    """memmap rows of one source at one 2 GiB configuration, one per strategy (point_id = index)."""
    n, kernel = len(counts), source == "kernel"
    return pl.DataFrame({
        "point_id": pl.Series(range(n), dtype=pl.UInt64), "param_namespace_size": [2 * GiB] * n,
        "param_mode": "devdax", "param_strategy": list(counts), "source": source, "status": ["ok"] * n,
        "reason": pl.Series([None] * n, dtype=pl.Utf8),
        "metric_init_instructions": pl.Series(list(counts.values()), dtype=pl.Int64),
        "metric_init_ms": pl.Series([(init_ms or {}).get(s) for s in counts], dtype=pl.Float64),
        "measure_repeats": pl.Series([3 if kernel else None] * n, dtype=pl.Int64),
        "measure_min": pl.Series([v - 10.0 if kernel else None for v in counts.values()], dtype=pl.Float64),
        "env_guest_kernel": pl.Series(["6.12.118-series" if kernel else None] * n, dtype=pl.Utf8),
        "env_accel": pl.Series(["tcg" if kernel else None] * n, dtype=pl.Utf8),
    })


def test_each_strategys_gain_is_measured_against_slow_beside_the_models(tmp_path):
    """Kernel gain = slow's instructions over the strategy's, same configuration and kernel; the model's on
    its own counts and on its time; the baseline itself is no row."""
    model = strategy_rows("model", {"slow": 1000, "template": 800}, {"slow": 2.0, "template": 1.0})
    kernel = strategy_rows("kernel", {"slow": 1200, "template": 600})
    sw = sweep(tmp_path, model, kernel)
    df = gains(sw.rows("memmap"))
    assert df["variant"].to_list() == ["template"]
    assert (df["kernel_gain"][0], df["model_gain"][0], df["model_time_gain"][0]) == (2.0, 1.25, 2.0)
    [table] = gain_tables(sw)
    assert table.title == "memmap: each strategy's gain in the real kernel, beside the model's"
    assert table.frame.row(0, named=True) == {
        "configuration": "(one point)", "strategy": "template", "kernel": "6.12.118-series",
        "init_instructions": "600 (3 boots, min 590)", "kernel gain": "2.000x", "model gain, same work": "1.250x",
        "model gain, time": "2.00x"}


def test_the_gain_finding_and_figure_quote_the_kernels_gain_and_the_models_distance_from_it(tmp_path):
    """The key finding gives each variant's median gain in the kernel's count and how far the model's gain on
    the same count is at worst; the figure sets both against each other; a sweep without variants has neither."""
    model = strategy_rows("model", {"slow": 1000, "template": 500, "template_nt": 2000}, {"slow": 2.0, "template": 1.0,
                                                                                         "template_nt": 1.0})
    kernel = strategy_rows("kernel", {"slow": 1000, "template": 520, "template_nt": 2000})
    sw = sweep(tmp_path / "a", model, kernel)
    [finding] = kernel_gain(sw)
    assert finding.figure == "kernel_gains"
    assert "template 1.92x (1.92-1.92x); template_nt 0.50x (0.50-0.50x)" in finding.text
    assert "within 4% of the kernel's" in finding.text  # 2.0 / (1000/520) - 1 = 4.0%
    drawn = kernel_gains(sw, tmp_path)
    assert drawn.id == "kernel_gains" and drawn.png.is_file() and drawn.panels == 2
    alone = sweep(tmp_path / "b", strategy_rows("model", {"slow": 1000}), strategy_rows("kernel", {"slow": 1000}))
    assert kernel_gain(alone) == [] and isinstance(kernel_gains(alone, tmp_path), Skipped)
