"""The dataset contract (workers/dataset/__init__.py): part paths, layouts, the column registry, units, one home."""

from __future__ import annotations

import re

import polars as pl
import pytest

from tests.conftest import ROOT
from workers import dataset
from workers.dataset import LAYOUT, LEGACY_LAYOUT, layout_of, parse_part_path, part_path, unit_of


def test_part_path_round_trips_and_rejects_what_is_not_a_part():
    """model=<model>/part-<chunk_id>.parquet (relative to the sweep folder) parses back to (model, chunk
    id); the folder's own files, temporary files and files elsewhere are not parts."""
    assert part_path("memmap", "00ab") == "model=memmap/part-00ab.parquet"
    assert parse_part_path(part_path("memmap", "00ab")) == ("memmap", "00ab")
    for path in ("_manifest.json", "model=memmap/.tmp-1234-part-00ab.parquet", "model=memmap/part-00ab.parquet.tmp",
                 "part-00ab.parquet", "_report/model=memmap/part-1.parquet", "model=memmap/sub/part-1.parquet"):
        assert parse_part_path(path) is None, path


def test_every_own_file_of_the_sweep_folder_starts_with_an_underscore():
    """pyarrow.dataset skips names starting with "_" or "."; schema 1-2 named them plainly."""
    names = [LAYOUT.manifest, LAYOUT.spec, LAYOUT.submissions, LAYOUT.lease, LAYOUT.report, dataset.SLURM_LOG]
    assert all(n.startswith("_") for n in names) and dataset.TEMP_PREFIX.startswith(".")
    assert (LEGACY_LAYOUT.manifest, LEGACY_LAYOUT.spec, LEGACY_LAYOUT.report) == ("manifest.json", "spec.toml", "report")


def test_layout_of_a_folder_follows_its_manifest_and_spec():
    """A folder with schema 1-2's manifest or spec (and not schema 3's) is read by the old names; a new
    or empty folder, or one with both, by the current ones."""
    assert layout_of([]) is LAYOUT and layout_of(["model=memmap", "_manifest.json"]) is LAYOUT
    assert layout_of(["model=memmap", "manifest.json", "spec.toml", "report"]) is LEGACY_LAYOUT
    assert layout_of(["spec.toml"]) is LEGACY_LAYOUT
    assert layout_of(["manifest.json", "_manifest.json"]) is LAYOUT


@pytest.mark.parametrize("column, unit", [
    ("metric_ns_per_load", "ns"), ("metric_walk_ns_per_access", "ns"), ("metric_copy_ms", "ms"),
    ("metric_setup_us", "µs"), ("metric_pt_bytes", "bytes"), ("metric_bytes_stored", "bytes"),
    ("metric_gbs", "GB/s"), ("metric_huge_fraction", "fraction"), ("metric_tlb_miss_rate", "fraction"),
    ("metric_speedup_vs_pte", ""), ("metric_heads", ""), ("measure_min", "as the headline metric"),
    ("env_l3_bytes", "bytes"), ("env_tlb_4k_entries", ""), ("point_id", ""),
])
def test_unit_of_reads_the_registry_then_the_name(column, unit):
    """Registered columns have the registry's unit; others the first unit token of their name."""
    assert unit_of(column) == unit


def test_registry_derives_the_column_tuples_and_host_facts_are_integers():
    """IDENTITY_COLUMNS / PROVENANCE_COLUMNS are the registry's names in order; the host's cache and
    TLB sizes are Int64 provenance columns beside the env_caches text."""
    assert dataset.IDENTITY_COLUMNS == tuple(c[0] for c in dataset.IDENTITY)
    assert dataset.PROVENANCE_COLUMNS == tuple(c[0] for c in dataset.PROVENANCE)
    assert dataset.IDENTITY_COLUMNS[0] == "sweep" and dataset.PROVENANCE_COLUMNS[-4:] == (
        "env_ray_node_id", *dataset.GUEST_COLUMNS)
    for c in ("env_l1d_bytes", "env_l2_bytes", "env_l3_bytes", "env_tlb_4k_entries"):
        assert c in dataset.PROVENANCE_COLUMNS and dataset.DTYPES[c] == pl.Int64
    assert dataset.DTYPES["env_caches"] == pl.Utf8


def test_the_registry_has_one_source():
    """The README generator, the measure backend and the task take their columns from workers.dataset."""
    from sweeps import schema
    from sweeps.run import task
    from workers.measure import measure

    assert schema.IDENTITY is dataset.IDENTITY and schema.PROVENANCE is dataset.PROVENANCE
    assert schema.MEASURE is dataset.MEASURE and schema.SCHEMA_VERSION == dataset.SCHEMA_VERSION == "9"
    assert schema.EVIDENCE is dataset.EVIDENCE
    assert dataset.SOURCE["model"].columns == (*dataset.BUILD_COLUMNS, *dataset.EVIDENCE_COLUMNS)
    rows = schema.rows()
    assert [r[0] for r in rows[:len(dataset.IDENTITY)]] == list(dataset.IDENTITY_COLUMNS)
    assert [(r[0], r[2], r[4]) for r in rows[-len(dataset.PROVENANCE):]] == [
        (c, u, d) for c, _, u, d in dataset.PROVENANCE]
    assert measure.MEASURE_COLUMNS is dataset.MEASURE_COLUMNS
    assert task.PROVENANCE_COLUMNS is dataset.PROVENANCE_COLUMNS and task.SCHEMA_VERSION is dataset.SCHEMA_VERSION


def test_schema_version_provenance_list_and_part_rule_are_defined_once():
    """In the three packages' source, only workers/dataset/__init__.py defines the schema version, lists the
    provenance columns, and spells the part file name."""
    rules = {"schema version": re.compile(r"^SCHEMA_VERSION\s*=", re.M),
             "provenance list": re.compile(r"\(\s*\"env_host\",.{0,300}?\"env_cpu_model\",.{0,300}?\"env_caches\",", re.S),
             "part rule": re.compile(r"part-\{|\"part-\*?\"|\"model=\"|model=\{[^}]*\}/")}
    found = {name: [] for name in rules}
    for pkg in ("sweeps", "workers", "analysis"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            text = path.read_text()
            for name, rule in rules.items():
                if rule.search(text):
                    found[name].append(str(path.relative_to(ROOT)))
    assert found == {name: ["workers/dataset/__init__.py"] for name in rules}
