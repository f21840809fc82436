"""measure() (workers/measure/measure.py): the contract columns, the discipline, and every refusal as a row."""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import replace

import polars as pl
import pytest

from workers import dataset
from workers.measure import measure as ms
from workers.measure.host import machine_arch
from workers.measure.plans import Run
from workers.measure.settings import MeasureSettings
from workers.models.copy import MODEL as COPY
from workers.models.memmap import MODEL as MEMMAP
from workers.models.memmap.measure import MemmapPlan
from workers.models.pfnmap import MODEL as PFNMAP
from workers.models.young import MODEL as YOUNG
from workers.profiles import load_profile

SEED = load_profile("seed")
TINY = MeasureSettings(repeats=2, warmup=0, span_ms=0)


def check_contract(model, points, out):
    assert out.height == points.height
    assert out.columns == ["status", "reason", *model.metric_dtypes, *dataset.MEASURE_COLUMNS]
    expected = {"status": pl.Utf8, "reason": pl.Utf8, **model.metric_dtypes,
                **{c: dataset.DTYPES[c] for c in dataset.MEASURE_COLUMNS}}
    assert dict(out.schema) == expected


def test_memmap_rows_fill_init_ms_with_the_median_and_nothing_else(points, native_cache):
    """Measured memmap rows: metric_init_ms = measure_median >= measure_min, other metrics null."""
    frame = points(MEMMAP, *[{"namespace_size": "16MiB", "mode": mode, "strategy": s}
                             for mode in ("fsdax", "devdax") for s in ("slow", "template_nt_inline")])
    out = ms.measure(MEMMAP, frame, SEED, TINY, cache_dir=native_cache)
    check_contract(MEMMAP, frame, out)
    assert out["status"].to_list() == ["ok"] * 4
    assert out["metric_init_ms"].to_list() == out["measure_median"].to_list()
    assert (out["measure_min"] <= out["measure_median"]).all() and (out["measure_min"] > 0).all()
    assert out["measure_repeats"].to_list() == [2] * 4
    assert out["measure_huge_pages"].null_count() == 4
    assert out["metric_stores"].null_count() == 4


def test_copy_rows_fill_ns_per_copy_and_gbs(points, native_cache):
    """Measured copy rows: metric_ns_per_copy is the median and metric_gbs = size / ns."""
    frame = points(COPY, {"namespace_size": "64KiB", "struct_page_size": 80, "strategy": "nt_inline",
                          "inline_sizes": "patched", "dst_offset": 3})
    out = ms.measure(COPY, frame, SEED, TINY, cache_dir=native_cache)
    check_contract(COPY, frame, out)
    row = out.row(0, named=True)
    assert row["status"] == "ok"
    assert row["metric_gbs"] == pytest.approx(80 / row["metric_ns_per_copy"])


def test_pfnmap_rows_fill_the_metric_of_their_access_pattern(points, native_cache):
    """lat_mem_rd_random fills ns per load, memcpy_seq ms per copy; 4 KiB rows are never THP-backed."""
    here = machine_arch()
    frame = points(PFNMAP, {"arch": here, "namespace_size": "4MiB", "compound_order": 0},
                   {"arch": here, "namespace_size": "4MiB", "compound_order": 9, "access": "memcpy_seq"})
    out = ms.measure(PFNMAP, frame, SEED, TINY, cache_dir=native_cache)
    check_contract(PFNMAP, frame, out)
    assert out["status"].to_list() == ["ok", "ok"]
    assert out["metric_ns_per_load"][0] > 0 and out["metric_copy_ms"][0] is None
    assert out["metric_copy_ms"][1] > 0 and out["metric_ns_per_load"][1] is None
    assert out["measure_huge_pages"][0] is False and out["measure_huge_pages"][1] is not None


def test_young_rows_are_all_infeasible_with_a_reason(points, native_cache):
    """young has no measurement: every row infeasible, the contract kept."""
    frame = points(YOUNG, {}, {"batching": "per_pte"})
    out = ms.measure(YOUNG, frame, SEED, cache_dir=native_cache)
    check_contract(YOUNG, frame, out)
    assert out["status"].to_list() == ["infeasible"] * 2
    assert "no user-space analog" in out["reason"][0]


def test_points_the_model_rejects_keep_the_models_reason(points, native_cache):
    """A point that cannot exist (P = 104 struct pages) is infeasible with the model's own reason."""
    frame = points(MEMMAP, {"struct_page_size": 104, "map": "mem", "namespace_size": "16MiB"})
    out = ms.measure(MEMMAP, frame, SEED, TINY, cache_dir=native_cache)
    assert out["status"][0] == "infeasible" and "above 96 bytes" in out["reason"][0]


def test_points_larger_than_free_memory_are_refused_with_a_reason(points, native_cache):
    """A 16 TiB namespace needs 252 GiB of struct pages: refused, not attempted."""
    frame = points(MEMMAP, {"namespace_size": "16TiB"}, {"namespace_size": "16MiB"})
    out = ms.measure(MEMMAP, frame, SEED, TINY, cache_dir=native_cache)
    assert out["status"].to_list() == ["infeasible", "ok"]
    assert out["reason"][0].startswith("needs 252.00 GiB of memory to measure")


def test_memory_refusal_keeps_a_safety_margin(tmp_path):
    """MemAvailable 10 GiB leaves 9 GiB to measure (a 10% margin, at least 512 MiB)."""
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/meminfo").write_text(f"MemAvailable: {10 * 1024 * 1024} kB\n")
    assert ms.memory_refusal(9 << 30, tmp_path) is None
    assert "minus a 1.00 GiB safety margin" in ms.memory_refusal((9 << 30) + 1, tmp_path)


def test_no_compiler_gives_infeasible_rows_with_the_reason(points, tmp_path):
    """Without a C compiler the measurable rows are infeasible ("no C compiler (cc) on this node: ...")."""
    frame = points(MEMMAP, {"namespace_size": "16MiB"}, {"struct_page_size": 104, "map": "mem"})
    out = ms.measure(MEMMAP, frame, SEED, TINY, cc="/nonexistent/cc", cache_dir=tmp_path)
    check_contract(MEMMAP, frame, out)
    assert out["status"].to_list() == ["infeasible", "infeasible"]
    assert out["reason"][0].startswith("no C compiler (cc) on this node: ")
    assert "above 96 bytes" in out["reason"][1]


def test_measure_pins_the_thread_and_restores_its_affinity(points, native_cache, monkeypatch):
    """During the runs the thread is on one CPU; afterwards it has its old affinity again."""
    before = os.sched_getaffinity(0)
    seen = []
    real = MemmapPlan.open

    def spy(self, k):
        seen.append(os.sched_getaffinity(0))
        return real(self, k)

    monkeypatch.setattr(MemmapPlan, "open", spy)
    ms.measure(MEMMAP, points(MEMMAP, {"namespace_size": "16MiB"}), SEED, replace(TINY, cpu=max(before)),
               cache_dir=native_cache)
    assert seen == [{max(before)}]
    assert os.sched_getaffinity(0) == before


def test_an_unknown_clock_is_rejected(points):
    """An unknown clock raises ValueError saying which clocks there are."""
    with pytest.raises(ValueError, match=r"'clock' must be one of \('wall', 'thread'\)"):
        ms.measure(MEMMAP, points(MEMMAP, {}), SEED, clock="tsc")


def test_the_profile_is_required(points):
    """measure() has no default profile: the caller passes the sweep's (no quiet fallback to seed)."""
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'profile'"):
        ms.measure(MEMMAP, points(MEMMAP, {}))


def test_feasibility_is_judged_with_the_profile_given(points, monkeypatch):
    """The model's own status comes from the profile the caller passes (the sweep's), not from seed."""
    host = load_profile("bare_metal")
    seen = []
    real = ms.evaluate

    def spy(model, frame, profile):
        seen.append(profile)
        return real(model, frame, profile)

    monkeypatch.setattr(ms, "evaluate", spy)
    ms.measure(YOUNG, points(YOUNG, {}), host)
    assert seen == [host]


@pytest.mark.parametrize("clock", ["wall", "thread"])
def test_both_clocks_give_positive_samples(points, native_cache, clock):
    """Wall-clock and thread-CPU timing both measure (the choice is the caller's)."""
    out = ms.measure(MEMMAP, points(MEMMAP, {"namespace_size": "16MiB"}), SEED, TINY, clock=clock,
                     cache_dir=native_cache)
    assert out["status"][0] == "ok" and out["measure_min"][0] > 0


class Recorded:
    """A plan whose runs only record the order they are sampled in (the scheduler under test)."""

    def __init__(self, name: str, log: list, memory: int = 1 << 20, fail_at: int | None = None):
        self.name, self.log, self.memory, self.fail_at = name, log, memory, fail_at

    @contextmanager
    def open(self, k):
        def sample():
            self.log.append(self.name)
            if self.fail_at is not None and self.log.count(self.name) == self.fail_at:
                raise OSError("the device went away")
            return [(1000 + len(self.log), 1)]
        yield Run(sample=sample, scale=1.0)


def test_points_are_warmed_up_then_sampled_round_robin():
    """Warm-up of each point, then repeat r of every point before repeat r + 1 of any."""
    log: list[str] = []
    out = ms.interleaved(None, [(0, Recorded("a", log)), (1, Recorded("b", log))], warmup=1, repeats=3, span_ms=0)
    assert log == ["a", "b"] + ["a", "b"] * 3
    assert [i for i, _ in out] == [0, 1] and all(len(s.values) == 3 for _, s in out)


def test_quick_points_take_more_rounds_to_span_the_time():
    """With span_ms the rounds go on past `repeats` until they last that long, at most 20 x repeats."""
    log: list[str] = []
    ((_, samples),) = ms.interleaved(None, [(0, Recorded("a", log))], warmup=0, repeats=2, span_ms=60_000)
    assert len(samples.values) == 2 * ms.MAX_ROUNDS_FACTOR


def test_a_failing_point_gets_its_error_and_the_others_go_on():
    """An OSError in one point's sample makes that point an error; the other keeps all its repeats."""
    log: list[str] = []
    out = dict(ms.interleaved(None, [(0, Recorded("a", log, fail_at=2)), (1, Recorded("b", log))],
                              warmup=0, repeats=3, span_ms=0))
    assert out[0] == "OSError: the device went away"
    assert len(out[1].values) == 3 and log.count("a") == 2


def test_batches_keep_the_points_that_fit_memory_together(tmp_path):
    """MemAvailable 10 GiB (9 GiB to measure): 4 + 4 GiB share a batch, the next 4 GiB starts another."""
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/meminfo").write_text(f"MemAvailable: {10 * 1024 * 1024} kB\n")
    todo = [(i, Recorded(str(i), [], memory=4 << 30)) for i in range(3)]
    assert [[i for i, _ in b] for b in ms.batches(todo, tmp_path)] == [[0, 1], [2]]


class Waits:
    """A plugin analog's plan that runs no routine: every run takes 2 ms (ns x 1e-6)."""

    memory = 1 << 20

    @contextmanager
    def open(self, k):
        yield Run(sample=lambda: [(2_000_000, 1)], scale=1e-6)


def plan_waits(points: pl.DataFrame) -> list:
    return [Waits() if x >= 0 else "x < 0 has no analog" for x in points["param_x"].to_list()]


def test_a_plugin_model_measures_through_its_declaration(points, native_cache):
    """A model outside workers/models declares its measurement the same way (here a function as planner):
    its plans run, the declared metric and derived column are filled, its reasons kept; a model with no
    declaration gets rows that say it has no measurement."""
    from tests.support.bad_models import GOOD, Good
    from workers.model import Measurement, Metric

    class Timed(Good):
        name = "timed"
        metrics = (Metric(column="metric_run_ms", dtype=pl.Float64, doc="time of a run", better="lower"),
                   Metric(column="metric_rate", dtype=pl.Float64, doc="x per ms", better="higher"))
        headline = "metric_run_ms"
        comparison = None
        measurement = Measurement(planner=plan_waits, metric="metric_run_ms", derived={"metric_rate": "x"})

        def evaluate(self, points, profile):
            return points.select(pl.lit(1.0).alias("metric_run_ms"), (pl.col("param_x") / 1.0).alias("metric_rate"))

    timed = Timed()
    frame = points(timed, {"x": 4}, {"x": -1})
    out = ms.measure(timed, frame, SEED, TINY, cache_dir=native_cache)
    check_contract(timed, frame, out)
    assert out["status"].to_list() == ["ok", "infeasible"] and out["reason"][1] == "x < 0 has no analog"
    assert out["metric_run_ms"][0] == pytest.approx(2.0) and out["metric_rate"][0] == pytest.approx(2.0)
    bare = ms.measure(GOOD, points(GOOD, {"x": 1}), SEED, TINY, cache_dir=native_cache)
    assert bare["status"][0] == "infeasible" and "'good' has no measurement" in bare["reason"][0]
