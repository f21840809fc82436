"""Datasets for the analysis tests: one real small sweep per session, and hand-built sweeps."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from sweeps.run.driver import run
from sweeps.spec.load import load_spec
from tests.conftest import once_per_run
from workers.dataset import LAYOUT, LEGACY_LAYOUT, part_path
from workers.dataset.parts import checksum

# Small, but every figure has something to draw: all four models, the published figures' points
# (pfnmap at align 1GiB on arm64, the young reclaim test), and markup in the description.
SMALL_SPEC = """
name = "small"
description = "Small sweep <script>alert('x')</script> & <b>bold</b> for the analysis tests"
models = ["memmap", "copy", "pfnmap", "young"]

[axes.memmap]
namespace_size = ["1GiB", "16GiB", "100GiB", "1TiB"]
struct_page_size = [64, 80, 96]
align = ["4KiB", "2MiB", "1GiB"]
compound_order = ["auto", 0, 9]
mode = ["fsdax", "devdax"]
map = ["dev", "mem"]
strategy = ["slow", "template", "template_nt", "template_nt_inline"]
nvdimm_kmsan = [false, true]

[axes.copy]
struct_page_size = [56, 64, 72, 80, 96, 128]
strategy = ["memcpy", "nt_call", "nt_inline"]
inline_sizes = ["mainline", "patched"]

[axes.pfnmap]
namespace_size = { from = "64MiB", to = "4GiB", scale = "log2" }
align = ["4KiB", "2MiB", "1GiB"]
compound_order = [0, 9, 18]
access = ["lat_mem_rd_random", "memcpy_seq"]

[axes.young]
namespace_size = "8GiB"
compound_order = [4, 6, 9]
batching = ["per_pte", "batched"]
arch = ["arm64", "x86_64"]
first_pte_cont = [true, false]
"""

def run_sweep(root: Path, spec: str, name: str) -> str:
    """Run a spec for real, as `memsweep run` does, on the session's Ray (ray_local: started once per
    test process, not once per sweep) and return the sweep folder."""
    summary = run(load_spec(spec), str(root), progress=False)
    assert not summary.failed, summary.failed
    return str(root / name)


@pytest.fixture(scope="session")
def small_sweep(tmp_path_factory, ray_local) -> str:
    """The small four-model sweep, computed once per test run (once_per_run: one for every xdist worker)."""
    def make(root: Path) -> str:
        (root / "small.toml").write_text(SMALL_SPEC)
        return run_sweep(root, str(root / "small.toml"), "small")

    return once_per_run(tmp_path_factory, "small-sweep", make)


@pytest.fixture(scope="session")
def default_sweep(tmp_path_factory, ray_local) -> str:
    """The shipped `default` spec, computed once per test run (~30,000 points)."""
    return once_per_run(tmp_path_factory, "default-sweep", lambda root: run_sweep(root, "default", "default"))


@pytest.fixture(scope="session")
def seed_sweep(tmp_path_factory, ray_local) -> str:
    """The shipped `seed` spec (the published configurations), computed once per test run."""
    return once_per_run(tmp_path_factory, "seed-sweep", lambda root: run_sweep(root, "seed", "seed"))


def write_sweep(root: Path, name: str, frames: dict[str, pl.DataFrame], spec: str = "", legacy: bool = False,
                **manifest) -> str:
    """A hand-built sweep folder: one part per model with identity and provenance columns added
    (legacy: named as schema 1-2 named the manifest and spec)."""
    sweep = root / name
    parts = {}
    for model, df in frames.items():
        cid = f"c0{model}"  # a chunk id names its model, as the content hash of a real one does
        ident = {"sweep": name, "model": model, "model_version": "1", "profile": "seed", "chunk_id": cid}
        df = df.with_columns(pl.lit(v).alias(k) for k, v in ident.items() if k not in df.columns)
        if "reason" not in df.columns:
            df = df.with_columns(pl.lit(None, dtype=pl.Utf8).alias("reason"))
        if "source" not in df.columns:  # every part a run writes names its rows' source
            df = df.with_columns(pl.lit("model").alias("source"))
        if "point_id" not in df.columns:
            df = df.with_columns(pl.int_range(pl.len(), dtype=pl.UInt64).alias("point_id"))
        df = df.with_columns(pl.lit("host-a").alias("env_host"), pl.lit("CPU <X>").alias("env_cpu_model"),
                             pl.lit("0.1.0").alias("env_memsweep_version"), pl.lit("abc123").alias("env_git_sha"),
                             pl.lit("node-1").alias("env_ray_node_id"))
        (sweep / part_path(model, cid)).parent.mkdir(parents=True, exist_ok=True)
        df.write_parquet(sweep / part_path(model, cid))
        data = (sweep / part_path(model, cid)).read_bytes()  # recorded as a run records its parts
        status = dict(df["status"].value_counts().iter_rows()) if "status" in df.columns else {}
        parts[cid] = {"chunk_id": cid, "model": model, "rows": df.height, "bytes": len(data),
                      "checksum": checksum(data), "status": status}
    data = {"sweep": name, "profile": "seed", "models": {m: {"version": "1", "points": f.height}
                                                         for m, f in frames.items()},
            "chunks_expected": len(frames), "chunks_done": len(frames),
            "rows": sum(f.height for f in frames.values()), "points_expected": sum(f.height for f in frames.values()),
            "parts": parts,
            "spec": spec, "driver": {"env_host": "driver"}, "updated": "2026-01-01T00:00:00Z", **manifest}
    names = LEGACY_LAYOUT if legacy else LAYOUT
    (sweep / names.manifest).write_text(json.dumps(data))
    (sweep / names.spec).write_text(spec)
    return str(sweep)


@pytest.fixture(scope="session")
def small_report(small_sweep, tmp_path_factory) -> Path:
    """report.html of the small sweep, written once per test run (figures beside it)."""
    from analysis.report.page import write_report

    return Path(once_per_run(tmp_path_factory, "small-report",
                             lambda folder: write_report(small_sweep, str(folder / "report.html"))))
