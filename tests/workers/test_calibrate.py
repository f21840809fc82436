"""Calibration: least squares on relative error, honest leave-one-out, refusal to overfit."""

import math

import polars as pl
import pytest

from workers.axes import Axis
from workers.calibrate import calibrate
from workers.model import Figure, FreeParam, Model, status_columns
from workers.profiles import profile_from_dict

X = Axis(name="x", kind="float", unit="", default=1.0, doc="work units")


class Line(Model):
    """time = per_unit * x + fixed: two free costs."""

    name = "line"
    axes = (X,)
    metrics = {"metric_time_ms": pl.Float64}
    free_params = (FreeParam(section="line", key="per_unit", lower=0.0, upper=100.0),
                   FreeParam(section="line", key="fixed", lower=0.0, upper=100.0))

    def __init__(self, published):
        self.published = published

    def evaluate(self, points, profile):
        t = profile.value("line", "per_unit") * pl.col("param_x") + profile.value("line", "fixed")
        return points.select(*status_columns(pl.lit(None, dtype=pl.Utf8)), t.alias("metric_time_ms"))

    def figures(self):
        return tuple(Figure(id=f"line/{x}", model="line", metric="metric_time_ms", published=y, unit="ms",
                            params={"x": x}, source="test") for x, y in self.published)


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


def test_as_many_parameters_as_figures_is_refused():
    """Two costs for two figures prove nothing: calibrate says so."""
    with pytest.raises(ValueError, match="2 free parameters for 2 figures"):
        calibrate(Line([(1.0, 5.0), (2.0, 8.0)]), PROFILE)
