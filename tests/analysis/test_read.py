"""Opening a sweep folder, lazy scans per model, axis values, holding axes fixed, labels."""

from __future__ import annotations

import polars as pl
import pytest

from analysis.exceptions import AnalysisError
from analysis.read import Sweep, nearest, value_expr
from tests.analysis.conftest import write_sweep


def young_rows(**over) -> pl.DataFrame:
    base = {"param_namespace_size": [1 << 30, 8 << 30, 64 << 30, 8 << 30],
            "param_compound_order": [4, 4, 4, None], "param_batching": ["batched"] * 4,
            "status": ["ok", "ok", "ok", "infeasible"], "metric_scan_ms": [1.0, 8.0, 64.0, None]}
    base.update(over)
    return pl.DataFrame(base, schema_overrides={"param_compound_order": pl.Int64})


def test_missing_folder_is_an_analysis_error(tmp_path):
    """A path that is not there names the rule and the value."""
    with pytest.raises(AnalysisError, match=r"'OUT/SWEEP' must be a sweep folder .*no such folder"):
        Sweep(str(tmp_path / "nope"))


def test_bad_uri_is_an_analysis_error_naming_the_field():
    """A URI no filesystem understands names 'OUT/SWEEP', or the field the caller gives."""
    with pytest.raises(AnalysisError, match=r"^'OUT/SWEEP' must be a local path or a filesystem URI"):
        Sweep("nosuchfs://bucket/x")
    with pytest.raises(AnalysisError, match=r"^'B' must be a local path or a filesystem URI"):
        Sweep("nosuchfs://bucket/x", field="B")


def test_folder_without_manifest_is_an_analysis_error(tmp_path):
    """A folder without _manifest.json is not a sweep."""
    with pytest.raises(AnalysisError, match=r"must hold a _manifest.json"):
        Sweep(str(tmp_path))


def test_corrupt_manifest_is_an_analysis_error(tmp_path):
    """_manifest.json must be JSON (and so must a schema-2 folder's manifest.json)."""
    (tmp_path / "_manifest.json").write_text("{not json")
    with pytest.raises(AnalysisError, match=r"/_manifest.json is not valid JSON \(.*\); rerun the sweep with --fresh"):
        Sweep(str(tmp_path))
    (tmp_path / "_manifest.json").unlink()
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(AnalysisError, match=r"/manifest.json is not valid JSON"):
        Sweep(str(tmp_path))


def test_sweep_lists_models_with_parts_and_scans_each_lazily(small_sweep):
    """Every model folder with parts is listed; a scan is lazy and has that model's columns only."""
    sweep = Sweep(small_sweep)
    assert set(sweep.models) == {"memmap", "copy", "pfnmap", "young"}
    lf = sweep.scan("young")
    assert isinstance(lf, pl.LazyFrame)
    assert "param_batching" in sweep.params("young") and "param_strategy" not in sweep.params("young")
    assert "metric_scan_ms" in sweep.metrics("young")
    assert lf.select(pl.len()).collect().item() == sweep.manifest["models"]["young"]["points"]
    assert sweep.name == "small" and "<script>" in sweep.description


def test_scan_of_an_unknown_model_is_an_analysis_error(small_sweep):
    """Asking for a model the sweep lacks names the models it has."""
    with pytest.raises(AnalysisError, match=r"'model' must be one of the models in this sweep .*got 'nope'"):
        Sweep(small_sweep).scan("nope")


def test_axis_values_count_ok_rows_most_common_first(tmp_path):
    """Distinct values among ok rows only; an axis with one value does not vary."""
    sweep = Sweep(write_sweep(tmp_path, "v", {"young": young_rows()}))
    values = sweep.axis_values("young")
    assert sorted(values["param_namespace_size"]["value"].to_list()) == [1 << 30, 8 << 30, 64 << 30]
    assert values["param_compound_order"]["value"].to_list() == [4]  # the null row is infeasible
    assert sweep.varying("young") == ["param_namespace_size"]


def test_pin_prefers_then_default_then_nearest(tmp_path):
    """Held value: `prefer` if present, else the axis default, else the present value nearest the default."""
    sweep = Sweep(write_sweep(tmp_path, "p", {"young": young_rows(param_batching=["batched", "per_pte"] * 2)}))
    young = sweep.rows("young")
    expr, held = young.pin(keep=["param_batching"])
    assert held == {"param_namespace_size": 64 << 30}  # default 100GiB is absent; 64GiB is nearest
    _, held = young.pin(keep=["param_batching"], prefer={"param_namespace_size": 1 << 30})
    assert held == {"param_namespace_size": 1 << 30}
    _, held = young.pin(keep=["param_namespace_size"])
    assert held == {"param_batching": "batched"}  # the default
    assert young.scan().filter(expr).select(pl.len()).collect().item() == 1
    assert young.describe(held) == "batching=batched"


def test_value_expr_matches_null_as_auto_and_floats_with_tolerance():
    """None selects nulls; floats compare within a relative 1e-9."""
    df = pl.DataFrame({"o": [None, 9], "f": [0.1 + 0.2, 0.5]}, schema_overrides={"o": pl.Int64})
    assert df.filter(value_expr("o", None)).height == 1
    assert df.filter(value_expr("f", 0.3)).height == 1


def test_nearest_uses_ratio_for_sizes():
    """Sizes are compared by ratio, so 100GiB is nearer 128GiB than 64GiB; non-numbers take the first."""
    assert nearest([64 << 30, 128 << 30], 100 << 30) == 128 << 30
    assert nearest(["a", "b"], "z") == "a"


def test_labels_use_binary_sizes_auto_and_leaf_names(small_sweep):
    """2MiB for sizes, auto for a null order, PTE / PMD names for pfnmap leaf orders."""
    sweep = Sweep(small_sweep)
    assert sweep.rows("memmap").label("param_align", 2 << 20) == "2MiB"
    assert sweep.rows("memmap").label("param_compound_order", None) == "auto"
    assert sweep.rows("pfnmap").label("param_compound_order", 9) == "PMD (order 9)"
    assert sweep.rows("unknown").label("param_x", 3) == "3"


def two_sources(tmp_path) -> Sweep:
    """The same four young points modeled and measured (measured rows 2x slower)."""
    model = young_rows().with_columns(pl.lit("model").alias("source"))
    measured = model.with_columns(pl.lit("measured").alias("source"), pl.col("metric_scan_ms") * 2)
    df = pl.concat([model, measured]).with_columns(pl.Series("point_id", [0, 1, 2, 3] * 2, dtype=pl.UInt64))
    return Sweep(write_sweep(tmp_path, "two", {"young": df}))


def test_scan_defaults_to_modeled_rows_and_can_pick_a_source(tmp_path):
    """Modeled rows by default; 'measured' or None (every row) on request; describe() names the source."""
    sweep = two_sources(tmp_path)
    assert sweep.sources("young") == ["model", "measured"] and sweep.default_source("young") == "model"
    count = lambda lf: lf.select(pl.len()).collect().item()  # noqa: E731
    assert count(sweep.scan("young")) == 4 and count(sweep.scan("young", "measured")) == 4
    assert count(sweep.scan("young", None)) == 8
    assert sweep.scan("young", "measured").select(pl.col("metric_scan_ms").max()).collect().item() == 128.0
    assert sweep.rows("young").describe({}) == "source=model"


def test_a_measured_only_model_defaults_to_its_measured_rows(tmp_path):
    """Without modeled rows the default source is the measured one; schema-1 data counts as modeled."""
    df = young_rows().with_columns(pl.lit("measured").alias("source"))
    sweep = Sweep(write_sweep(tmp_path, "m", {"young": df}))
    assert sweep.sources("young") == ["measured"] and sweep.scan("young").select(pl.len()).collect().item() == 4
    old = Sweep(write_sweep(tmp_path, "v1", {"young": young_rows()}))
    assert old.sources("young") == ["model"] and old.rows("young").describe({}) == ""


def test_forget_drops_one_kind_of_kept_aggregate_and_the_next_ask_computes_it_again(small_sweep):
    """memo() computes once per key; forget(kind) drops the keys of that kind only."""
    sweep, calls = Sweep(str(small_sweep)), []

    def compute(name):
        return lambda: calls.append(name) or len(calls)

    assert [sweep.memo(("a", 1), compute("a1")), sweep.memo(("a", 1), compute("a1")),
            sweep.memo(("b", 1), compute("b1"))] == [1, 1, 2]
    sweep.forget("a")
    assert sweep.memo(("b", 1), compute("b1")) == 2 and sweep.memo(("a", 1), compute("a1")) == 3
    assert calls == ["a1", "b1", "a1"]
