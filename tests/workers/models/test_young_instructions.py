"""young.unmap_step_ns against the arm64 guest's instructions (workers.models.young.instructions): the
per-operation instructions solved from the recorded classic-LRU rows, the step time they imply at the model's
own rates, and what `memsweep calibrate` prints of it."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from workers import MODELS
from workers.hooks import resolve
from workers.models.young import COSTS
from workers.models.young.instructions import NAMES, OPERATIONS, implied_step, lines, per_operation
from workers.models.young.kernel import results
from workers.profiles import load_profile


def test_per_operation_reproduces_every_classic_row_it_was_solved_from():
    """Four rows, four operations: the solved instructions times each row's counts are its instructions."""
    per = per_operation(results())
    assert list(per) == list(NAMES) and all(v > 0 for v in per.values())
    rows = results().filter((pl.col("lru") == "classic") & pl.col("release").str.starts_with("6.12"))
    got = rows.select(OPERATIONS).to_numpy() @ np.array(list(per.values()))
    assert got == pytest.approx(rows["instructions"].to_numpy(), rel=1e-9)


def test_per_operation_refuses_rows_that_do_not_determine_it():
    """Three rows of four, or the 7.3 rows of a release that is not recorded, leave an operation free: refused."""
    with pytest.raises(ValueError, match="do not determine 4 operations: 3 rows"):
        per_operation(results().filter(~((pl.col("lru") == "classic") & (pl.col("compound_order") == 6)
                                         & (pl.col("young_fraction") == 1.0))))
    with pytest.raises(ValueError, match="0 rows"):
        per_operation(results(), release="5.10")


def test_the_implied_step_is_the_steps_instructions_at_each_rate_less_what_the_model_prices_beside_it():
    """At each rate, (unmap_step_ns + the step's other priced work) x rate is the step's instructions: one
    page reclaimed on 6.12. The other work is call_ns, six atomics and the unfold's share of PTE writes."""
    profile = load_profile("seed")
    cost = {k: profile.value("young", k) for k in COSTS}
    per, implied = implied_step(profile, results())
    beside = cost["call_ns"] + 6 * cost["pte_atomic_ns"] + cost["pte_read_ns"]
    assert [i.part for i in implied] == ["young-bit calls'", "rest of reclaim's"]
    for i in implied:
        assert (i.step_ns + beside) * i.rate == pytest.approx(per["page reclaimed"], rel=1e-9)
    assert implied[0].rate < implied[1].rate  # the calls hold fewer instructions a ns than the rest


def test_calibrate_prints_the_check_against_the_assumed_range():
    """The young model names this check (Calibration.crosscheck) and its lines say where the readings fall
    against the profile's range: below it with the seed's [53.65, 101], inside one wide enough; a profile that
    holds the cost at one value without a range gets the readings against that value."""
    profile = load_profile("seed")
    check = resolve(MODELS["young"].calibration.crosscheck)
    assert check is lines
    text = "\n".join(lines(profile))
    assert "page reclaimed 676" in text and "assumed within [53.65, 101] ns" in text
    assert "every reading below it" in text
    entry = profile.sections["young"]["unmap_step_ns"]
    wide = dataclasses.replace(profile, sections={**profile.sections, "young": {
        **profile.sections["young"], "unmap_step_ns": dataclasses.replace(entry, range=(1.0, 101.0))}})
    assert "every reading inside it" in "\n".join(lines(wide))
    _, implied = implied_step(profile, results())
    middle = (implied[0].step_ns + implied[1].step_ns) / 2
    split = dataclasses.replace(profile, sections={**profile.sections, "young": {
        **profile.sections["young"], "unmap_step_ns": dataclasses.replace(entry, range=(middle, 101.0))}})
    assert "1 of 2 readings inside it, 1 below, 0 above" in "\n".join(lines(split))
    held = dataclasses.replace(profile, sections={**profile.sections, "young": {
        **profile.sections["young"], "unmap_step_ns": dataclasses.replace(entry, value=60.0, range=None)}})
    assert "held at 60 ns, no range: 2 of 2 readings below it, 0 above" in "\n".join(lines(held))
