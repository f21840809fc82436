"""Chunks sized by what they cost (sweeps.run.cost): the sizes, the longest-first schedule, the recorded
seconds, and a resume across two chunkings of one grid."""

from __future__ import annotations

import json

import polars as pl
import pytest

import sweeps.run.cost as cost
from sweeps.run.chunks import plan
from sweeps.run.cost import (CHUNKS_PER_CPU, MIN_PART_ROWS, TARGET_SECONDS, Cost, Costs, efficiency, longest_first,
                             makespan, recorded, sizes)
from sweeps.run.driver import run
from sweeps.run.inspect import verify
from sweeps.spec.load import load_spec, parse_spec

PROBE = ('name = "rt"\nmodels = ["probe"]\nplugins = ["tests.support.probe"]\n'
         "[axes.probe]\ni = { from = 0, to = 99, step = 1 }\n")


def uniform(spec, per_point: float) -> Costs:
    return Costs(of={(m, "model"): Cost(per_point=per_point) for m in spec.models}, basis="test")


def tiles(chunks, size: int) -> bool:
    """The chunks cover [0, size) once, in order."""
    return [c.start for c in chunks] == [0, *[c.stop for c in chunks[:-1]]] and chunks[-1].stop == size


@pytest.mark.parametrize("cpus", [2, 16, 256])
def test_chunks_are_about_target_seconds_at_least_4_per_cpu_and_never_tiny(cpus):
    """`large` at 5 us a point (57 s of work): on 2 CPUs chunks of at most TARGET_SECONDS; on 16, smaller so that
    there are 4 per CPU; on 256, as many as the MIN_PART_ROWS floor allows (it wins over 4 per CPU)."""
    spec = load_spec("large")
    costs = uniform(spec, 5e-6)
    n = sizes(spec, costs, cpus)
    chunks = plan(spec, n)
    seconds = [costs.seconds(c) for c in chunks]
    assert max(seconds) <= TARGET_SECONDS + 1e-9
    assert min(c.points for c in chunks) >= MIN_PART_ROWS
    if sum(seconds) / (CHUNKS_PER_CPU * cpus) >= MIN_PART_ROWS * 5e-6:
        assert len(chunks) >= CHUNKS_PER_CPU * cpus
    else:  # the floor wins: chunks of MIN_PART_ROWS .. twice that
        assert max(c.points for c in chunks) < 2 * MIN_PART_ROWS
    for m in spec.models:
        mine = [c for c in chunks if c.model == m]
        assert tiles(mine, spec.points(m)) and max(c.points for c in mine) - min(c.points for c in mine) < len(mine)


def test_a_grid_smaller_than_a_part_is_one_chunk():
    spec = load_spec("default")
    assert [c.model for c in plan(spec, sizes(spec, uniform(spec, 1e-3), 64))] == list(spec.models)


def test_longest_first_on_16_cpus_keeps_them_busy():
    """Unequal chunks (each model's last is short) scheduled longest first: within 20% of the perfect spread."""
    spec = load_spec("large")
    costs = Costs(of={("memmap", "model"): Cost(per_point=9e-6), ("copy", "model"): Cost(per_point=2e-6),
                      ("pfnmap", "model"): Cost(per_point=20e-6, per_chunk=0.05),
                      ("young", "model"): Cost(per_point=8e-6)}, basis="test")
    chunks = longest_first(plan(spec, sizes(spec, costs, 16)), costs)
    seconds = [costs.seconds(c) for c in chunks]
    assert seconds == sorted(seconds, reverse=True)
    span, busy = efficiency(seconds, 16)
    assert busy >= 0.8 and span <= 1.25 * sum(seconds) / 16
    assert makespan([4.0, 1.0, 1.0, 1.0, 1.0], 2) == 4.0 and efficiency([4.0, 1.0, 1.0, 1.0, 1.0], 2)[1] == 1.0


def test_recorded_costs_are_each_models_seconds_over_its_rows():
    manifest = {"parts": {
        "a": {"model": "memmap", "source": "model", "rows": 100, "seconds": 1.0, "bytes": 1000},
        "b": {"model": "memmap", "source": "model", "rows": 300, "seconds": 2.0, "bytes": 3000},
        "c": {"model": "young", "source": "model", "rows": 50, "seconds": 0.5, "bytes": 100}}}
    got = recorded(manifest, [("memmap", "model"), ("young", "model")])
    assert got.of[("memmap", "model")] == Cost(per_point=3.0 / 400, bytes_per_row=10.0)
    assert got.of[("young", "model")].per_point == pytest.approx(0.01)
    assert recorded(manifest, [("pfnmap", "model")]) is None  # a model with no recorded part: measure it
    assert recorded({"parts": {"a": {"model": "memmap", "rows": 10}}}, [("memmap", "model")]) is None  # older folder


def test_plan_keeps_a_folders_chunks_and_chunks_only_the_rest():
    """Chunks of another size that a folder holds stay as they are; the gaps around them are chunked anew."""
    spec = parse_spec(PROBE)
    old = plan(spec, {("probe", "model"): 30})
    held = [old[1], old[3]]  # [30, 60) and [90, 100)
    new = plan(spec, {("probe", "model"): 25}, existing=held)
    assert tiles(new, 100) and held[0] in new and held[1] in new
    assert [(c.start, c.stop) for c in new] == [(0, 25), (25, 30), (30, 60), (60, 85), (85, 90), (90, 100)]
    other = parse_spec(PROBE.replace("to = 99", "to = 98"))  # another grid: the old ids are not its chunks
    assert not {c.chunk_id for c in held} & {c.chunk_id for c in plan(other, {("probe", "model"): 25}, held)}


def test_a_run_records_seconds_and_a_rerun_that_chunks_otherwise_resumes(ray_local, tmp_path, monkeypatch):
    """Each part's record has the task's seconds. A rerun that sizes chunks otherwise (another machine) keeps
    the folder's parts, also those its manifest does not list yet (a run killed before its manifest), and
    computes only the ranges no part holds."""
    spec = parse_spec(PROBE)
    monkeypatch.setattr(cost, "sizes", lambda spec, costs, cpus: {("probe", "model"): 30})
    first = run(spec, str(tmp_path), progress=False)
    assert (first.computed, first.skipped) == (4, 0)
    folder = tmp_path / "rt"
    manifest = json.loads((folder / "_manifest.json").read_text())
    assert all(p["seconds"] > 0 for p in manifest["parts"].values())
    by_start = {p["start"]: p["chunk_id"] for p in manifest["parts"].values()}
    (folder / "model=probe" / f"part-{by_start[60]}.parquet").unlink()
    del manifest["parts"][by_start[60]]  # neither its part nor its record: a range no part holds
    del manifest["parts"][by_start[30]]  # its part is there, its record is not
    (folder / "_manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setattr(cost, "sizes", lambda spec, costs, cpus: {("probe", "model"): 25})
    second = run(spec, str(tmp_path), progress=False)
    assert (second.computed, second.skipped) == (2, 3)  # [60, 85) and [85, 90) in the gap; [0, 30) .. kept
    assert verify(str(folder))[0] == []
    rows = pl.read_parquet(f"{folder}/model=probe/*.parquet", hive_partitioning=False)
    assert rows.height == rows["point_id"].n_unique() == 100
