"""Checks of a fit's costs (workers/fitcheck.py): which ones the points identify, which no machine can have."""

from __future__ import annotations

import numpy as np

from workers.fitcheck import cost_orders, count, identify, impossible
from workers.profiles import available_profiles, load_profile, profile_from_dict
from workers.registry import shipped_models


def test_collinear_costs_are_named_and_counted_once():
    """Two costs whose sensitivities are proportional carry one number between them: 2 independent
    numbers for 3 costs, and both of the pair are named; the third, seen on its own, is not."""
    jac = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 1.0], [3.0, 6.0, 0.0], [1.0, 2.0, 5.0]])
    ident = identify(jac, np.ones(3), ["a", "b", "c"], [0.1, 0.1, 0.1])
    assert ident.independent == 2 and ident.unidentified == ("a", "b")
    assert ident.singular_values[-1] < 1e-12 * ident.singular_values[0]


def test_a_cost_free_to_move_by_ten_times_itself_is_not_identified():
    """Well-conditioned sensitivities, but a range within one point of error reaching more than ten times
    the cost either way (or a cost fit to 0, which has no relative change) leave that cost unidentified."""
    jac = np.eye(3)
    assert identify(jac, np.array([1.0, 1.0, 1.0]), ["a", "b", "c"], [2.5, 20.5, 19.5]).unidentified == ("b",)
    assert identify(jac, np.array([1.0, 0.0, 1.0]), ["a", "b", "c"], [0.5, 0.5, 0.5]).unidentified == ("b",)


def test_impossible_names_bounds_signs_and_declared_orders():
    """A value outside its bounds, a time of 0 and a DRAM RFO bandwidth above the LLC's (copy's declared
    order) are each one problem naming the entry, the rule and the value; a bool is never checked."""
    profile = profile_from_dict({"name": "p", "copy": {
        "store_ns": {"value": 9.0, "unit": "ns", "source": "calibrated", "bounds": [0.02, 5.0]},
        "call_ns": {"value": 0.0, "unit": "ns", "source": "calibrated", "bounds": [0.0, 50.0]},
        "dram_rfo_gbs": {"value": 56.0, "unit": "GB/s", "source": "calibrated"},
        "llc_gbs": {"value": 16.0, "unit": "GB/s", "source": "calibrated"},
        "warm_llc": {"value": False, "unit": "bool", "source": "assumed"}}})
    problems = [str(p) for p in impossible(profile, cost_orders(shipped_models().values()))]
    assert problems == [
        "'copy.store_ns' must be within its bounds [0.02, 5] ns (got 9).",
        "'copy.call_ns' must be positive, a time in ns (a fit stopped at 0 wanted a negative value) (got 0).",
        "'copy.dram_rfo_gbs' must be at most copy.llc_gbs = 16 GB/s: the LLC sits between the core and DRAM: "
        "an RFO it serves is no slower than one from DRAM (got 56).",
    ]


def test_every_shipped_profile_is_possible():
    """No shipped profile breaks a bound, a sign or an order the shipped models declare."""
    orders = cost_orders(shipped_models().values())
    assert {name: impossible(load_profile(name), orders) for name in available_profiles()} == {
        name: [] for name in available_profiles()}


def test_count_sets_hand_set_costs_beside_the_fitted_ones():
    """Two fitted costs and one hand-set cost whose sensitivity is the sum of theirs: 3 costs move the
    figures, which carry 2 independent numbers, so the count is over."""
    fitted = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    c = count(["s.a", "s.b"], fitted, ["s.c"], fitted.sum(axis=1, keepdims=True), 0.01)
    assert (c.costs, c.independent, c.over) == (3, 2, True)
    assert c.to_dict()["hand_set"] == ["s.c"]
    assert not count(["s.a", "s.b"], fitted, [], np.zeros((3, 0)), 0.01).over
