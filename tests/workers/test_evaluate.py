"""The evaluate wrapper: models are held to their contract; a raising model yields error rows."""

import polars as pl
import pytest

from tests.support.probe import ProbeModel
from workers import evaluate
from workers.profiles import load_profile

PROFILE = load_profile("seed")


def points(n=3, explode=False):
    return pl.DataFrame({"param_i": list(range(n)), "param_delay_ms": [0.0] * n, "param_explode": [explode] * n})


def test_ok_rows_keep_the_points_and_append_status_and_metrics():
    """Output = the points, then status, reason and the declared metrics, same order."""
    out = evaluate(ProbeModel(), points(), PROFILE)
    assert out.columns == ["param_i", "param_delay_ms", "param_explode", "status", "reason",
                           "metric_i_squared", "metric_half_i"]
    assert out["metric_i_squared"].to_list() == [0, 1, 4]


def test_a_raising_model_gives_error_rows_with_the_message_and_null_metrics():
    """An exception inside evaluate becomes status 'error' with type, message and place."""
    out = evaluate(ProbeModel(), points(explode=True), PROFILE)
    assert out["status"].to_list() == ["error"] * 3
    assert out["reason"][0].startswith("RuntimeError: the probe model was asked to explode at probe.py:")
    assert out.schema["metric_i_squared"] == pl.Int64 and out["metric_i_squared"].is_null().all()


class Undeclared(ProbeModel):
    metrics = ProbeModel.metrics[:1]


class WrongType(ProbeModel):
    def evaluate(self, points, profile):
        return {"metric_i_squared": ["one", "two", "three"], "metric_half_i": [0.0, 0.5, 1.0]}


class Short(ProbeModel):
    def evaluate(self, points, profile):
        return super().evaluate(points, profile).head(1)


@pytest.mark.parametrize("model,match", [
    (Undeclared(), "returned columns .* declared"),
    (WrongType(), "declared dtypes cannot hold"),
    (Short(), "returned 1 rows for 3 points"),
])
def test_contract_breaches_become_error_rows(model, match):
    """Undeclared columns, values the declared dtypes cannot hold or a wrong row count are ModelError rows."""
    out = evaluate(model, points(), PROFILE)
    assert (out["status"] == "error").all()
    assert out["reason"].str.contains("ModelError").all() and out["reason"].str.contains(match).all()


def test_metrics_of_rows_that_are_not_ok_are_nulled():
    """An infeasible row keeps no metric, even one the model computed for it."""
    out = evaluate(ProbeModel(), pl.DataFrame({"param_i": [-2, 4], "param_delay_ms": [0.0, 0.0],
                                               "param_explode": [False, False]}), PROFILE)
    assert out["status"].to_list() == ["infeasible", "ok"]
    assert out["metric_half_i"].to_list() == [None, 2.0]


@pytest.mark.parametrize("name", ["memmap", "copy", "pfnmap", "young"])
def test_a_refits_priced_answers_are_the_row_frames_priced_metrics(name):
    """priced() (an error bar's refit: the priced metrics alone, no row frame) gives each shipped model's priced
    metrics exactly as evaluate() gives them at the same ok points, NaN where evaluate gives null."""
    from tests.support.grids import sampled
    from workers import get_model
    from workers.evaluate import priced

    model = get_model(name)
    rows = evaluate(model, sampled(name, 3000), PROFILE).filter(pl.col("status") == "ok")
    assert rows.height > 100
    at = rows.select([a.column for a in model.axes])
    got = priced(model, at, PROFILE)
    assert list(got) == list(model.priced)
    for m in model.priced:
        assert got[m].dtype == "float64"
        assert got[m].tolist() == pytest.approx(rows[m].cast(pl.Float64).to_numpy().tolist(), nan_ok=True, rel=0)


def test_a_refit_that_returns_the_wrong_number_of_values_is_refused():
    """A model whose refit answers fewer values than points is a ModelError naming the metric."""
    from workers.evaluate import priced
    from workers.exceptions import ModelError

    class ShortPriced(ProbeModel):
        priced = ("metric_half_i",)

        def evaluate(self, points, profile):
            return {"metric_i_squared": [0], "metric_half_i": [0.0]}

    with pytest.raises(ModelError, match="returned 1 rows of metric_half_i for 3 points"):
        priced(ShortPriced(), points(), PROFILE)
