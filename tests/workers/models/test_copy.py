"""The copy model (workers/models/copy/__init__.py): per-copy counts, line geometry, pricing, feasibility."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workers.evaluate import evaluate
from workers.models import copy as cp
from workers.models.copy import MODEL
from workers.profiles import load_profile
from workers.model import points_frame

PROFILE = load_profile("seed")


def frame(*rows: dict) -> pl.DataFrame:
    """A points frame from partial rows (missing axes take their defaults)."""
    return points_frame(MODEL, rows)


def run(*rows: dict, profile=PROFILE) -> pl.DataFrame:
    return evaluate(MODEL, frame(*rows), profile)


def one(size, dst, strategy, patched=False) -> dict:
    ins = cp.instructions(np.array([size]), np.array([dst]), np.array([strategy]), patched)
    return {k: v.item() for k, v in ins.items()}


@pytest.mark.parametrize("size,dst,movnti,cached,calls", [
    # __memcpy_flushcache(): 64 = 2 x (4x8 loop); 72 = 2 x 32 + 1 x 8; 56 = 32 + 3 x 8
    (64, 0, 8, 0, 1), (72, 0, 9, 0, 1), (56, 0, 7, 0, 1), (88, 0, 11, 0, 1),
    # dst % 8 == 3: 5-byte cached head (memcpy + CLWB), 59 = 32 + 3 x 8 + 3-byte cached tail
    (64, 3, 7, 8, 3),
    # dst % 8 == 4: 4-byte head, 60 = 32 + 3 x 8 + one 4-byte MOVNTI, no tail
    (64, 4, 8, 4, 2),
    # 20 bytes aligned: 2 x 8 + one 4-byte MOVNTI
    (20, 0, 3, 0, 1),
])
def test_memcpy_flushcache_counts_match_the_kernel_loops(size, dst, movnti, cached, calls):
    """The out-of-line path counts MOVNTIs, cached head/tail bytes and calls as usercopy_64.c does."""
    got = one(size, dst, cp.NT_CALL)
    assert (got["movnti"], got["cached_bytes"], got["calls"], got["inline"]) == (movnti, cached, calls, False)


@pytest.mark.parametrize("size,patched,inline,movnti", [
    (4, False, True, 1), (8, False, True, 1), (16, False, True, 2), (32, False, False, 4), (64, False, False, 8),
    (32, True, True, 4), (48, True, True, 6), (64, True, True, 8), (80, True, True, 10), (96, True, True, 12),
    (72, True, False, 9), (88, True, False, 11), (128, True, False, 16),
])
def test_inline_sets_are_mainline_4_8_16_and_patched_4_to_96(size, patched, inline, movnti):
    """memcpy_flushcache() is inline for 4/8/16 (mainline) or 4..96 of patch 8 (patched); 72 and 88 call."""
    got = one(size, 0, cp.NT_INLINE, patched)
    assert (got["inline"], got["movnti"], got["calls"]) == (inline, movnti, 0 if inline else 1)


def test_memcpy_is_cached_word_moves_without_a_call():
    """A constant-size memcpy() is size/8 cached 8-byte moves (plus 4/2/1 for a remainder), no call."""
    assert one(72, 0, cp.MEMCPY) == {"inline": False, "calls": 0, "movnti": 0, "cached_stores": 9,
                                     "cached_bytes": 72, "head": 0, "tail": 0, "nt_bytes": 0, "loops": 0}
    assert one(15, 0, cp.MEMCPY)["cached_stores"] == 1 + 3  # 8 + 4 + 2 + 1


@pytest.mark.parametrize("size,dst,loops", [(64, 0, 2), (80, 0, 4), (96, 0, 3), (72, 0, 3), (76, 0, 4), (64, 4, 5)])
def test_the_out_of_line_copy_counts_its_loop_iterations(size, dst, loops):
    """__memcpy_flushcache(): 32-byte blocks, then 8-byte words, then one 4-byte store, each an iteration of
    its loop (80 bytes: 2 + 2; 96: 3; 76: 2 + 1 + 1; at dst % 8 = 4 a 4-byte head first: 60 = 1 + 3 + 1)."""
    got = one(size, dst, cp.NT_CALL)
    assert got["loops"] == loops
    assert one(size, dst, cp.MEMCPY)["loops"] == 0


def test_model_reports_the_issue_columns_for_an_aligned_64_byte_copy():
    """64 bytes, aligned, patched inline: 8 MOVNTI, no cached bytes, no RFO, one full line, no call."""
    out = run({"struct_page_size": 64, "strategy": "nt_inline", "inline_sizes": "patched"}).row(0, named=True)
    assert out["status"] == "ok"
    assert (out["metric_movnti"], out["metric_cached_bytes"], out["metric_rfo_bytes_per_copy"], out["metric_inline"],
            out["metric_lines_full"], out["metric_lines_partial_per_copy"], out["metric_calls"]) == (
        8, 0, 0.0, True, 1.0, 0.0, 0)
    assert out["metric_gbs"] == pytest.approx(64 / out["metric_ns_per_copy"])


def test_72_byte_copies_cycle_through_eight_line_phases():
    """Copies of 72 bytes start at 0, 8, ..., 56 within a line: 2 lines each; a line is wholly one copy's
    only at phase 0 ([0, 64)) and phase 56 ([64, 128) of [56, 128))."""
    out = run({"struct_page_size": 72, "strategy": "memcpy"}).row(0, named=True)
    assert out["metric_lines_written"] == pytest.approx(2.0)
    assert out["metric_lines_full"] == pytest.approx(2 / 8)
    assert out["metric_lines_partial_per_copy"] == pytest.approx(14 / 8)
    assert cp.period(72) == 8 and cp.period(64) == 1 and cp.period(80) == 4


def test_cached_copies_read_every_destination_line_for_ownership():
    """memcpy of 64-byte copies over an aligned array RFOs one line per copy; 72-byte copies 72/64 of one."""
    a, b = run({"struct_page_size": 64, "strategy": "memcpy"}, {"struct_page_size": 72, "strategy": "memcpy"}).rows(
        named=True)
    assert a["metric_rfo_bytes_per_copy"] == pytest.approx(64.0)
    assert b["metric_rfo_bytes_per_copy"] == pytest.approx(72.0, rel=1e-6)


def test_misaligned_destination_splits_stores_and_stalls_the_out_of_line_path():
    """At dst_offset 4 a 64-byte copy splits one 8-byte store; __memcpy_flushcache's cached head lands in a line
    the previous copy's MOVNTIs are still filling: one serialized miss per copy."""
    inline, call = run(
        {"struct_page_size": 64, "dst_offset": 4, "strategy": "nt_inline", "inline_sizes": "patched"},
        {"struct_page_size": 64, "dst_offset": 4, "strategy": "nt_call"},
    ).rows(named=True)
    assert (inline["metric_split_stores"], inline["metric_serial_misses_per_copy"]) == (1.0, 0.0)
    assert (call["metric_split_stores"], call["metric_serial_misses_per_copy"],
            call["metric_lines_flushed"]) == (0.0, 1.0, 1.0)
    assert call["metric_rfo_bytes_per_copy"] == pytest.approx(64.0)
    assert call["metric_ns_per_copy"] > inline["metric_ns_per_copy"] + PROFILE.value("copy", "dram_latency_ns") / 2


def test_out_of_line_call_costs_a_call_and_its_loop_iterations_more_than_inline():
    """For the same 64-byte aligned copy (8 MOVNTI either way), nt_call's compute exceeds nt_inline's by one
    call and two 32-byte loop iterations, in cycles at the core's clock."""
    inline, call = run({"strategy": "nt_inline", "inline_sizes": "patched"}, {"strategy": "nt_call"}).rows(named=True)
    v = lambda k: PROFILE.value("copy", k)  # noqa: E731
    extra = (v("call_cycles") + 2 * v("loop_cycles")) / v("clock_ghz")
    assert call["metric_compute_ns"] - inline["metric_compute_ns"] == pytest.approx(extra)


def test_a_destination_that_fits_in_the_llc_is_not_priced_as_a_dram_stream():
    """Cached copies into 1 MiB cost less per copy than into 100 GiB; without a warm LLC they cost the same."""
    small, big = run({"namespace_size": "1MiB", "strategy": "memcpy"}, {"namespace_size": "100GiB", "strategy": "memcpy"})[
        "metric_bound_ns"].to_list()
    assert small < 0.5 * big
    cold = PROFILE.with_values({("copy", "warm_llc"): 0.0}, source="assumed")
    small_c, big_c = run({"namespace_size": "1MiB", "strategy": "memcpy"},
                         {"namespace_size": "100GiB", "strategy": "memcpy"}, profile=cold)["metric_bound_ns"].to_list()
    assert small_c == pytest.approx(big_c)


def test_non_temporal_stores_go_to_dram_whatever_the_footprint():
    """Inline MOVNTI copies cost the same memory time per copy at 1 MiB and at 100 GiB."""
    rows = [{"namespace_size": s, "strategy": "nt_inline", "inline_sizes": "patched"} for s in ("1MiB", "100GiB")]
    small, big = run(*rows)["metric_bound_ns"].to_list()
    assert small == pytest.approx(big)


def test_total_smaller_than_one_copy_is_infeasible():
    """A total below one copy keeps the row, infeasible, with the reason and null metrics."""
    assert run({"namespace_size": "4KiB", "struct_page_size": 128})["metric_copies"][0] == 32
    points = frame({}).with_columns(pl.lit(32, dtype=pl.Int64).alias("param_namespace_size"))  # a hand-built frame
    bad = evaluate(MODEL, points, PROFILE)
    assert bad["status"][0] == "infeasible"
    assert "smaller than one copy" in bad["reason"][0]
    assert bad["metric_ns_per_copy"][0] is None


@settings(max_examples=60, deadline=None)
@given(size=st.integers(7, 16).map(lambda k: 8 * k), dst=st.integers(0, 4095),
       strategy=st.sampled_from(cp.STRATEGIES), inline_sizes=st.sampled_from(cp.INLINE_SETS),
       copies=st.integers(1, 1 << 20))
def test_counts_conserve_bytes_and_the_bound_never_exceeds_the_time(size, dst, strategy, inline_sizes, copies):
    """MOVNTI and cached bytes add up to the copy; full + partial lines = lines; bound <= ns per copy;
    the model's table agrees with instructions() at the point's own offset."""
    total = -(-size * copies // 4096) * 4096
    row = run({"namespace_size": total, "struct_page_size": size, "dst_offset": dst, "strategy": strategy,
               "inline_sizes": inline_sizes}).row(0, named=True)
    code = cp.STRATEGIES.index(strategy)
    ins = one(size, dst, code, inline_sizes == "patched")
    nt_bytes = 8 * ins["movnti"] - 4 * ((size - ins["head"] - ins["tail"]) % 8 == 4)
    assert nt_bytes + ins["cached_bytes"] == size
    assert (row["metric_movnti"], row["metric_cached_bytes"], row["metric_calls"]) == (
        ins["movnti"], ins["cached_bytes"], ins["calls"])
    assert row["metric_lines_full"] + row["metric_lines_partial_per_copy"] == pytest.approx(row["metric_lines_written"])
    assert row["metric_bound_ns"] <= row["metric_ns_per_copy"] + 1e-12
    assert row["metric_copies"] == total // size


def test_every_metric_is_documented():
    """Each metric column has a one-line doc for the README schema table."""
    assert all(m.doc.strip() for m in MODEL.metrics) and len(MODEL.metric_dtypes) == len(MODEL.metrics)
