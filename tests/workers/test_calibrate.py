"""Calibration: least squares on relative error, honest leave-one-out, refusal to overfit."""

import math

import polars as pl
import pytest

from workers.axes import Axis
from workers.calibrate import calibrate
from workers.model import Calibration, Figure, FreeParam, Metric, Model
from workers.profiles import profile_from_dict

X = Axis(name="x", kind="float", unit="", default=1.0, doc="work units")


class Line(Model):
    """time = per_unit * x + fixed: two free costs."""

    name = "line"
    axes = (X,)
    metrics = (Metric(column="metric_time_ms", dtype=pl.Float64, doc="per_unit * x + fixed", better="lower"),)
    headline = "metric_time_ms"
    FREE = (FreeParam(section="line", key="per_unit", lower=0.0, upper=100.0),
            FreeParam(section="line", key="fixed", lower=0.0, upper=100.0))

    def __init__(self, published, free=FREE):
        self.calibration = Calibration(free_params=free, figures=tuple(
            Figure(id=f"line/{x}", model="line", metric="metric_time_ms", published=y, unit="ms", params={"x": x},
                   source="test") for x, y in published))

    def evaluate(self, points, profile):
        t = profile.value("line", "per_unit") * pl.col("param_x") + profile.value("line", "fixed")
        return points.select(t.alias("metric_time_ms"))


PROFILE = profile_from_dict({"name": "p", "line": {
    "per_unit": {"value": 1.0, "unit": "ms", "source": "assumed"},
    "fixed": {"value": 1.0, "unit": "ms", "source": "assumed"}}})


def test_exact_data_is_fit_exactly_and_predicted_out_of_sample():
    """Figures on a line: the fit recovers it; every leave-one-out error is ~0."""
    cal = calibrate(Line([(x, 3.0 * x + 2.0) for x in (1.0, 2.0, 4.0, 8.0)]), PROFILE)
    assert cal.fitted[("line", "per_unit")] == pytest.approx(3.0, rel=1e-6)
    assert cal.fitted[("line", "fixed")] == pytest.approx(2.0, rel=1e-5)
    assert cal.max_error < 1e-6 and cal.max_loo_error < 1e-5
    assert cal.profile.sections["line"]["per_unit"].source == "calibrated"


def test_an_outlier_shows_in_its_leave_one_out_error():
    """A figure off the line is predicted worse by a fit that did not see it than by one that did."""
    cal = calibrate(Line([(1.0, 5.0), (2.0, 8.0), (4.0, 14.0), (8.0, 40.0)]), PROFILE)
    outlier = cal.results[-1]
    assert abs(outlier.loo_error) > abs(outlier.error) > 0.01
    assert all(math.isfinite(r.loo_error) for r in cal.results)


class Bump(Line):
    """time = per_unit * x + fixed, plus `bump` at x = 8 only: a third cost only that figure sees."""

    FREE = (*Line.FREE, FreeParam(section="line", key="bump", lower=0.0, upper=100.0))

    def __init__(self, published):
        super().__init__(published, self.FREE)

    def evaluate(self, points, profile):
        out = super().evaluate(points, profile)
        bump = pl.when(points["param_x"] == 8.0).then(profile.value("line", "bump")).otherwise(0.0)
        return out.with_columns(pl.col("metric_time_ms") + points.select(bump).to_series())


def test_a_figure_whose_cost_the_others_leave_free_gets_the_range_of_every_equally_good_fit():
    """Without the x = 8 figure the others say nothing of `bump`: every bump in its bounds (0 .. 100) fits them
    as well, so the leave-one-out error is the range those fits predict (26 .. 126 ms against 31), whichever
    start the refit took; the other figures' leave-one-out errors stay single values."""
    profile = profile_from_dict({"name": "p", "line": {
        **{k: {"value": 1.0, "unit": "ms", "source": "assumed"} for k in ("per_unit", "fixed")},
        "bump": {"value": 50.0, "unit": "ms", "source": "assumed"}}})
    model = Bump([(1.0, 5.0), (2.0, 8.0), (4.0, 14.0), (8.0, 31.0)])
    for loo_starts in (1, 3):
        cal = calibrate(model, profile, loo_starts=loo_starts)
        *others, eight = cal.results
        assert eight.loo_free == ("bump",)
        assert eight.loo_range == pytest.approx((26.0 / 31.0 - 1.0, 126.0 / 31.0 - 1.0), abs=1e-4)
        assert eight.loo_error == eight.loo_range[1]  # the end farther from 0
        assert all(r.loo_free == () and r.loo_low == r.loo_high == r.loo_error for r in others)


def test_as_many_parameters_as_figures_is_refused():
    """Two costs for two figures prove nothing: calibrate says so."""
    with pytest.raises(ValueError, match="2 free parameters for 2 figures"):
        calibrate(Line([(1.0, 5.0), (2.0, 8.0)]), PROFILE)


def test_the_fit_does_not_start_from_the_profile_values():
    """Two profiles that differ only in the stored values of the free costs fit to the same costs."""
    model = Line([(1.0, 3.0), (2.0, 5.0), (3.0, 7.5)])
    far = PROFILE.with_values({("line", "per_unit"): 90.0, ("line", "fixed"): 0.01}, source="assumed")
    a, b = calibrate(model, PROFILE), calibrate(model, far)
    assert a.fitted == pytest.approx(b.fitted, rel=1e-6)
    assert a.max_loo_error == pytest.approx(b.max_loo_error, rel=1e-6)


def test_every_start_is_reported_and_agrees_on_a_convex_fit():
    """A linear model has one minimum: all ten neutral starts reach it, none is reported as elsewhere."""
    cal = calibrate(Line([(1.0, 3.0), (2.0, 5.0), (3.0, 7.0)]), PROFILE, starts=10)
    assert len(cal.starts) == 10 and not cal.disagreeing_starts


def test_profile_bounds_confine_the_fit():
    """A cost's `bounds` in the profile replace the model's: the fit stays inside them."""
    bounded = profile_from_dict({"name": "p", "line": {
        "per_unit": {"value": 1.0, "unit": "ms", "source": "assumed", "bounds": [0.0, 1.5]},
        "fixed": {"value": 1.0, "unit": "ms", "source": "assumed"}}})
    cal = calibrate(Line([(1.0, 3.0), (2.0, 5.0), (3.0, 7.0)]), bounded)
    assert cal.fitted[("line", "per_unit")] == pytest.approx(1.5)


def test_uncertainty_brackets_each_fitted_cost():
    """The interval within which the worst error grows by at most one point contains the fitted value."""
    cal = calibrate(Line([(1.0, 3.0), (2.0, 5.1), (3.0, 6.9)]), PROFILE)
    for key, value in cal.fitted.items():
        lo, hi = cal.uncertainty[key]
        assert lo < value < hi


def test_hand_set_costs_are_shown_at_plus_and_minus_20_percent():
    """An assumed cost that moves the figures is listed with the worst error at 0.8x and 1.2x of it."""
    model = Line([(1.0, 3.0), (2.0, 5.0), (3.0, 7.0)], free=Line.FREE[:1])  # fit per_unit only; `fixed` stays hand-set
    cal = calibrate(model, PROFILE)
    (hand,) = cal.sensitivity
    assert (hand.key, hand.value) == ("fixed", 1.0)
    assert hand.max_error_low > cal.max_error and hand.max_error_high > cal.max_error


def test_validation_figures_are_predicted_and_never_fit():
    """A validation figure far off the line is reported with use 'validation' and does not move the fit."""
    model = Line([(1.0, 3.0), (2.0, 5.0), (3.0, 7.0)])
    far = Figure(id="line/validation/10", model="line", metric="metric_time_ms", published=100.0, unit="ms",
                 params={"x": 10.0}, source="test")
    cal = calibrate(model, PROFILE, validation=(far,))
    assert cal.fitted == pytest.approx(calibrate(model, PROFILE).fitted)
    (v,) = cal.validation
    assert v.use == "validation" and v.model == pytest.approx(21.0, rel=1e-4)
    assert all(r.use == "fit" for r in cal.results)


class Offsets(Model):
    """time = per_unit * x + fixed + setup + probe / 10000: two constant offsets the figures cannot tell
    apart, and one too small to move them."""

    name = "offsets"
    axes = (X,)
    metrics = Line.metrics
    headline = "metric_time_ms"

    def __init__(self, free):
        self.calibration = Calibration(free_params=free, figures=tuple(
            Figure(id=f"offsets/{x}", model="offsets", metric="metric_time_ms", published=3.0 * x + 2.0, unit="ms",
                   params={"x": x}, source="test") for x in (1.0, 2.0, 3.0, 4.0)))

    def evaluate(self, points, profile):
        v = lambda key: profile.value("offsets", key)  # noqa: E731
        t = v("per_unit") * pl.col("param_x") + v("fixed") + v("setup") + v("probe") / 1e4
        return points.select(t.alias("metric_time_ms"))


OFFSETS = profile_from_dict({"name": "p", "offsets": {
    key: {"value": 1.0, "unit": "ms", "source": "assumed"} for key in ("per_unit", "fixed", "setup", "probe")}})


def _free(*keys):
    return tuple(FreeParam(section="offsets", key=k, lower=0.0, upper=100.0) for k in keys)


def test_hand_set_costs_that_move_the_figures_are_counted_against_their_independent_numbers():
    """Figures on a line carry 2 numbers (slope, intercept). Fitting the slope with two hand-set offsets
    that each move the figures makes 3 costs for 2 numbers, flagged; the probe, which moves no figure by a
    point, is not counted."""
    cal = calibrate(Offsets(_free("per_unit")), OFFSETS)
    c = cal.count
    assert (c.fitted, c.hand_set) == (("offsets.per_unit",), ("offsets.fixed", "offsets.setup"))
    assert (c.costs, c.independent, c.over) == (3, 2, True)
    assert c.singular_values[-1] < 1e-6 * c.singular_values[0]


def test_fitting_an_offset_leaves_as_many_costs_as_numbers():
    """Fitting the slope and one offset, with the other offset at a value too small to move the figures,
    counts 2 costs for the 2 numbers the line carries: not flagged."""
    small = OFFSETS.with_values({("offsets", "setup"): 1e-4}, source="assumed")
    c = calibrate(Offsets(_free("per_unit", "fixed")), small).count
    assert (c.fitted, c.hand_set, c.independent, c.over) == (("offsets.per_unit", "offsets.fixed"), (), 2, False)
