"""A sweep folder opens with the three ordinary calls: pyarrow.dataset, duckdb's read_parquet, and
analysis.scan (polars); each sees every part and nothing else, whatever sits beside the parts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.dataset as ds
import pytest

import analysis
from workers.dataset import LEASE_FILE, MANIFEST, REPORT_DIR, SLURM_LOG, part_path
from workers.measure.host import host_facts


@pytest.fixture(scope="module")
def folder(small_sweep, tmp_path_factory) -> Path:
    """A copy of the small sweep with what a run, a report and a Slurm job leave beside the parts."""
    folder = tmp_path_factory.mktemp("opens") / "small"
    shutil.copytree(small_sweep, folder)
    (folder / REPORT_DIR).mkdir()
    (folder / REPORT_DIR / "report.html").write_text("<html></html>")
    (folder / REPORT_DIR / "memmap_init.svg").write_text("<svg/>")
    (folder / LEASE_FILE).write_text("{}")
    (folder / SLURM_LOG.replace("%j", "42")).write_text("slurm output\n")
    return folder


def per_model(manifest: dict) -> dict[str, int]:
    rows: dict[str, int] = {}
    for rec in manifest["parts"].values():
        rows[rec["model"]] = rows.get(rec["model"], 0) + rec["rows"]
    return rows


def test_pyarrow_dataset_opens_the_sweep_folder_and_a_model_folder(folder):
    """ds.dataset(OUT/SWEEP) lists every part and counts the manifest's rows; a model folder has that
    model's columns."""
    manifest = json.loads((folder / MANIFEST).read_text())
    whole = ds.dataset(str(folder))
    assert sorted(whole.files) == sorted(str(folder / part_path(rec["model"], cid))
                                         for cid, rec in manifest["parts"].items())
    assert whole.count_rows() == manifest["rows"] > 0
    memmap = ds.dataset(str(folder / "model=memmap"))
    assert {"param_strategy", "metric_init_ms", "env_l3_bytes"} <= set(memmap.schema.names)
    assert "param_batching" not in memmap.schema.names
    assert memmap.count_rows() == per_model(manifest)["memmap"] == manifest["models"]["memmap"]["points"]


def test_duckdb_reads_every_part_by_name(folder):
    """read_parquet('OUT/SWEEP/**/*.parquet', union_by_name=true): the manifest's rows per model, and the
    same medians as polars."""
    manifest = json.loads((folder / MANIFEST).read_text())
    glob = f"{folder}/**/*.parquet"
    counts = dict(duckdb.sql(f"SELECT model, count(*) FROM read_parquet('{glob}', union_by_name=true) "
                             "GROUP BY model").fetchall())
    assert counts == per_model(manifest)
    [(slow,)] = duckdb.sql(f"SELECT median(metric_init_ms) FROM read_parquet('{glob}', union_by_name=true) "
                           "WHERE model = 'memmap' AND param_strategy = 'slow' AND status = 'ok'").fetchall()
    ours = (analysis.scan(str(folder), model="memmap")
            .filter((pl.col("param_strategy") == "slow") & (pl.col("status") == "ok"))
            .select(pl.col("metric_init_ms").median()).collect().item())
    assert slow == pytest.approx(ours)


def test_analysis_scan_reads_one_model_or_all_of_them(folder):
    """analysis.scan(OUT/SWEEP, model=M): M's rows and columns; without a model every row, columns
    unioned (a column a model lacks is null on its rows); host facts are Int64 columns."""
    manifest = json.loads((folder / MANIFEST).read_text())
    young = analysis.scan(str(folder), model="young").collect()
    assert young.height == per_model(manifest)["young"] and "param_strategy" not in young.columns
    rows = analysis.scan(str(folder)).collect()
    assert rows.height == manifest["rows"]
    assert dict(rows.group_by("model").len().iter_rows()) == per_model(manifest)
    assert rows.filter(pl.col("model") == "young")["param_strategy"].is_null().all()
    assert rows.filter(pl.col("model") == "memmap")["param_strategy"].is_not_null().all()
    assert rows.schema["env_l1d_bytes"] == rows.schema["env_tlb_4k_entries"] == pl.Int64
    facts = host_facts()
    for column in ("l1d_bytes", "l3_bytes", "tlb_4k_entries"):
        expected = int(facts[column]) if facts[column].isdigit() else None
        assert rows[f"env_{column}"].unique().to_list() == [expected], column
