"""Calibration: fit a profile's free costs to published figures, and say how well it did.

For each model with figures, the free parameters it names (`Model.free_params`)
are fit by least squares on the log of model/published (relative error,
symmetric in over- and under-prediction). Every figure is reported with the
published value, the fitted model's value, the relative error, and the
leave-one-out error: the figure predicted by a fit that did not see it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy.optimize import least_squares

from .evaluate import evaluate
from .model import Figure, FreeParam, Model, points_frame
from .profiles import Profile


@dataclass(frozen=True, kw_only=True, slots=True)
class FigureResult:
    figure: str
    published: float
    model: float
    error: float  # (model - published) / published
    loo_error: float  # the same, from a fit without this figure
    unit: str

    def to_dict(self) -> dict:
        return {
            "figure": self.figure, "published": self.published, "model": self.model,
            "error": self.error, "loo_error": self.loo_error, "unit": self.unit,
        }


@dataclass(frozen=True, kw_only=True)
class Calibration:
    model: str
    profile: Profile  # the fitted profile
    free: tuple[FreeParam, ...]
    fitted: dict[tuple[str, str], float]
    results: tuple[FigureResult, ...]

    @property
    def max_error(self) -> float:
        return max(abs(r.error) for r in self.results)

    @property
    def max_loo_error(self) -> float:
        return max(abs(r.loo_error) for r in self.results)


def figure_frame(model: Model, figures: tuple[Figure, ...] | list[Figure]) -> pl.DataFrame:
    """The figures' points as a points frame the model can evaluate."""
    return points_frame(model, (f.params for f in figures))


def predict(model: Model, figures, profile: Profile) -> np.ndarray:
    """The model's value for each figure (NaN where the point is not ok)."""
    out = evaluate(model, figure_frame(model, figures), profile)
    bad = out.filter(pl.col("status") != "ok")
    if bad.height:
        raise ValueError(f"calibration figure points of {model.name!r} are not ok: {bad['reason'].to_list()}")
    return np.array([out[f.metric][i] for i, f in enumerate(figures)], dtype=float)


def _apply(profile: Profile, free: tuple[FreeParam, ...], x: np.ndarray) -> Profile:
    return profile.with_values({(p.section, p.key): v for p, v in zip(free, x)}, source="calibrated")


def fit(model: Model, figures, profile: Profile, free: tuple[FreeParam, ...]) -> np.ndarray:
    """Least-squares values of the free parameters (log relative residuals)."""
    published = np.array([f.published for f in figures], dtype=float)
    x0 = np.array([float(profile.value(p.section, p.key)) for p in free])
    lower = np.array([p.lower for p in free])
    upper = np.array([p.upper for p in free])
    x0 = np.clip(x0, lower + 1e-12 * (upper - lower), upper - 1e-12 * (upper - lower))

    def residuals(x: np.ndarray) -> np.ndarray:
        pred = predict(model, figures, _apply(profile, free, x))
        return np.log(np.maximum(pred, 1e-300) / published)

    sol = least_squares(residuals, x0, bounds=(lower, upper), x_scale="jac", max_nfev=2000)
    return sol.x


def calibrate(model: Model, profile: Profile, figures=None, free: tuple[FreeParam, ...] | None = None) -> Calibration:
    """Fit `free` (default: `model.free_params`) to the figures (default: the model's published ones);
    report errors and leave-one-out errors."""
    figures = tuple(figures if figures is not None else model.figures())
    free = model.free_params if free is None else tuple(free)
    if len(free) >= len(figures):
        raise ValueError(
            f"model {model.name!r} has {len(free)} free parameters for {len(figures)} figures; "
            "a fit with as many parameters as figures proves nothing."
        )
    x = fit(model, figures, profile, free)
    fitted_profile = _apply(profile, free, x)
    values = predict(model, figures, fitted_profile)
    results = []
    for i, f in enumerate(figures):
        rest = figures[:i] + figures[i + 1:]
        x_loo = fit(model, rest, profile, free)
        loo = predict(model, (f,), _apply(profile, free, x_loo))[0]
        results.append(FigureResult(
            figure=f.id, published=f.published, model=float(values[i]),
            error=_rel(values[i], f.published), loo_error=_rel(loo, f.published), unit=f.unit,
        ))
    return Calibration(
        model=model.name, profile=fitted_profile, free=free,
        fitted={(p.section, p.key): float(v) for p, v in zip(free, x)}, results=tuple(results),
    )


def _rel(value: float, published: float) -> float:
    return float((value - published) / published) if math.isfinite(value) else math.inf
