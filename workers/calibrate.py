"""Calibration: fit a profile's free costs to published figures, and say how well it did.

For each model with figures, the free parameters it names (its `calibration.free_params`)
are fit by least squares on the log of model/published (relative error,
symmetric in over- and under-prediction). A fit never starts from the values it
is asked to find: it starts from neutral points inside each cost's bounds (the
profile's `bounds`, else the model's): the middle of the box and scrambled
Sobol points, searched in a unit cube (log-scaled where the bounds span a
decade or more). The best end wins; every start that ends elsewhere is
reported. Leave-one-out refits start from the same neutral points.

Reported per model: every figure's published value, the fitted model's value,
the error and the leave-one-out error (a range where the other figures leave a
cost free: `leave_one_out`); the starts that disagree; how far each
fitted cost can move, the others refit, before the worst error grows by one
point (linearized at the fit); the costs the figures do not identify
(workers.fitcheck.identify: the singular values of the residuals' sensitivity);
the figure errors with each hand-set (`assumed`) cost at -20% and +20%; the
count of the costs that move the figures (every fitted one, and each hand-set
one whose -20% or +20% moves the worst error by more than a point) against the
independent numbers the figures carry about all of them (workers.fitcheck.count);
and the profile's validation figures, predicted by the fitted profile and never
used in any fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from .evaluate import evaluate
from .model import Figure, FreeParam, Model, figure_frame, points_frame, validation_figures, with_costs
from .exceptions import ProfileError
from .fitcheck import Count, Identification, count, free_directions, identify
from .interval import ranged
from .profiles import FITTED, RANGE, Profile, Quantity

FIT, VALIDATION = "fit", "validation"
DEFAULT_STARTS = 10
LOO_STARTS = 3
AGREE = 0.01  # starts whose costs all lie within 1% of the best's reach "the same costs"
SENSITIVITY = 0.2  # hand-set costs are moved by +-20%
# A leave-one-out refit whose figures leave a cost free (a valley of equally good fits): the refits within
# FLAT of its best cost fit those figures as well, and the held-out figure's error is the range over them,
# walked in steps of STEP of the unit cube and its edges bisected to EDGE (workers.calibrate._valley).
FLAT = 1e-6
STEP, EDGE = 0.02, 1e-5
SLACK = 0.01  # uncertainty: how far a cost moves before the worst |error| grows by one point
# A hand-set cost moves the figures when its -20% or +20% moves the worst |error| by more than one point:
# the fit's own scale of doubt (SLACK), so a cost counted here could be told apart by the figures.
MOVES = 0.01


@dataclass(frozen=True, kw_only=True, slots=True)
class FigureResult:
    figure: str
    published: float
    model: float
    error: float  # (model - published) / published
    loo_error: float  # the same, from a fit without this figure (equal to error for validation figures): of
    # loo_low .. loo_high, the end farther from 0
    unit: str
    use: str = FIT  # "fit" or "validation" (predicted, never fit)
    source: str = ""
    bound: str = "="  # the figure's kind (Figure.bound): a value, or a bound its errors are counted against
    # Where the other figures leave costs free (`loo_free`), every refit in the valley of equally good fits
    # predicts this figure, and its error is anywhere in loo_low .. loo_high; else both are loo_error.
    loo_low: float | None = None
    loo_high: float | None = None
    loo_free: tuple[str, ...] = ()
    # The costs of the refits behind loo_low and loo_high ({"section.key": value}: one where they are one
    # refit, the valley's two ends where it is a range): the error bars of every answer (workers.interval)
    # are the spread of the answers under them.
    refits: tuple[dict[str, float], ...] = ()

    @property
    def loo_range(self) -> tuple[float, float]:
        low = self.loo_error if self.loo_low is None else self.loo_low
        return low, self.loo_error if self.loo_high is None else self.loo_high

    def to_dict(self) -> dict:
        low, high = self.loo_range
        return {
            "figure": self.figure, "published": self.published, "model": self.model,
            "error": self.error, "loo_error": self.loo_error, "loo_low": low, "loo_high": high,
            "loo_free": list(self.loo_free), "unit": self.unit, "use": self.use, "bound": self.bound,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class Start:
    """Where one start of the fit ended: the costs, its worst |error|, and whether it agrees with the best."""

    values: tuple[float, ...]
    max_error: float
    agrees: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class Sensitivity:
    """A hand-set cost, and the worst |figure error| with it at -20% and +20%."""

    section: str
    key: str
    value: float
    max_error_low: float
    max_error_high: float
    moves: bool = False  # -20% or +20% moves the worst |error| by more than MOVES
    # per figure, the change of log(model/published) per unit change of log(cost), from -20% to +20%
    slope: tuple[float, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Calibration:
    model: str
    profile: Profile  # the fitted profile
    free: tuple[FreeParam, ...]
    fitted: dict[tuple[str, str], float]
    results: tuple[FigureResult, ...]
    starts: tuple[Start, ...] = ()
    uncertainty: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)
    sensitivity: tuple[Sensitivity, ...] = ()
    validation: tuple[FigureResult, ...] = ()
    identification: Identification | None = None  # which costs the figures pin (workers.fitcheck)
    count: Count | None = None  # costs that move the figures against their independent numbers
    # Each assumed cost with a range (Quantity.range) in the model's sections: "range:section.key" -> the
    # fits at its low and its high end (the fitted costs refit, the assumed one at the end), and the worst
    # |figure error| of each; the error bars span them (workers.interval).
    spans: dict[str, tuple[dict[str, float], dict[str, float]]] = field(default_factory=dict)
    span_errors: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def max_error(self) -> float:
        return max(abs(r.error) for r in self.results)

    @property
    def max_loo_error(self) -> float:
        return max(abs(r.loo_error) for r in self.results)

    @property
    def disagreeing_starts(self) -> tuple[Start, ...]:
        return tuple(s for s in self.starts if not s.agrees)


def predict(model: Model, figures, profile: Profile, frame: pl.DataFrame | None = None) -> np.ndarray:
    """The model's value for each figure; ValueError naming the figures whose point is not ok."""
    figures = tuple(figures)
    out = evaluate(model, figure_frame(model, figures) if frame is None else frame, profile)
    bad = [f"{f.id}: {r}" for f, s, r in zip(figures, out["status"], out["reason"]) if s != "ok"]
    if bad:
        raise ValueError(f"calibration figure points of {model.name!r} are not ok: {bad}")
    return np.array([out[f.metric][i] for i, f in enumerate(figures)], dtype=float)


def _apply(profile: Profile, free: tuple[FreeParam, ...], x: np.ndarray) -> Profile:
    return profile.with_values({(p.section, p.key): v for p, v in zip(free, x)}, source="calibrated")


@dataclass(frozen=True, slots=True)
class Box:
    """The free costs' bounds, and the unit cube a fit searches: u in [0, 1] per cost, log-scaled
    where the bounds are positive and span a decade or more (latencies, bandwidths, sizes)."""

    lower: np.ndarray
    upper: np.ndarray
    log: np.ndarray

    @classmethod
    def of(cls, profile: Profile, free: tuple[FreeParam, ...]) -> Box:
        pairs = [profile.bounds(p.section, p.key) or (p.lower, p.upper) for p in free]
        lo, hi = (np.array(v, dtype=float) for v in zip(*pairs)) if pairs else (np.zeros(0), np.zeros(0))
        return cls(lo, hi, (lo > 0) & (hi >= 10 * np.maximum(lo, 1e-300)))

    def value(self, u: np.ndarray) -> np.ndarray:
        u = np.clip(u, 0.0, 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            logv = np.exp(np.log(np.where(self.log, self.lower, 1.0))
                          + u * np.log(np.where(self.log, self.upper / self.lower, 1.0)))
        return np.where(self.log, logv, self.lower + u * (self.upper - self.lower))

    def unit(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            logu = np.log(np.maximum(x, 1e-300) / self.lower) / np.log(self.upper / self.lower)
        return np.where(self.log, logu, (x - self.lower) / (self.upper - self.lower))


def neutral_starts(k: int, n: int) -> np.ndarray:
    """n start points in the unit cube: its centre, then scrambled Sobol points (fixed seed, so a
    calibration is reproducible). None depends on any fitted value."""
    if n <= 1:
        return np.full((1, k), 0.5)
    from scipy.stats import qmc  # here, not at the top: report, table and compare import this module (0.35 s)

    m = max(1, math.ceil(math.log2(n - 1)))
    sobol = qmc.Sobol(d=k, scramble=True, seed=20261130).random_base2(m)[: n - 1]
    return np.vstack([np.full((1, k), 0.5), 0.02 + 0.96 * sobol])


@dataclass(frozen=True, slots=True)
class _End:
    x: np.ndarray
    cost: float
    residuals: np.ndarray


def _fit_from(model: Model, figures, profile: Profile, free, box: Box, starts: np.ndarray) -> list[_End]:
    """One least-squares run (log relative residuals) from each start, in the unit cube."""
    from scipy.optimize import least_squares  # here: only a fit needs it

    frame = figure_frame(model, figures)

    def residuals(u: np.ndarray) -> np.ndarray:
        return log_residuals(figures, predict(model, figures, _apply(profile, free, box.value(u)), frame))

    ends = []
    for u0 in starts:
        # diff_step: a relative step of 1e-4 in the cube, so costs that enter through float32 terms move
        sol = least_squares(residuals, u0, bounds=(0.0, 1.0), diff_step=1e-4, max_nfev=400)
        ends.append(_End(x=box.value(sol.x), cost=float(sol.cost), residuals=sol.fun))
    return ends


def log_residuals(figures, pred: np.ndarray) -> np.ndarray:
    """log(model / published) per figure, what a fit minimizes (symmetric in over- and under-prediction); a
    bound's only where the model falls on its wrong side (0 where the bound holds): a figure that says "50%+"
    is fit as an inequality, not as the value 0.5."""
    out = np.log(np.maximum(pred, 1e-300) / np.array([f.published for f in figures], dtype=float))
    kind = np.array([f.bound for f in figures])
    return np.where(kind == ">=", np.minimum(out, 0.0), np.where(kind == "<=", np.maximum(out, 0.0), out))


def fit(model: Model, figures, profile: Profile, free: tuple[FreeParam, ...], starts: int = DEFAULT_STARTS) -> np.ndarray:
    """Least-squares values of the free parameters: the best of `starts` neutral starts."""
    ends = _fit_from(model, tuple(figures), profile, free, Box.of(profile, free), neutral_starts(len(free), starts))
    return min(ends, key=lambda e: e.cost).x


def calibrate(model: Model, profile: Profile, figures=None, free: tuple[FreeParam, ...] | None = None, *,
              starts: int = DEFAULT_STARTS, loo_starts: int = LOO_STARTS, validation=()) -> Calibration:
    """Fit `free` (default: the model's calibration's `free_params`) to the figures (default: its published ones)
    from neutral starts; report errors, leave-one-out errors, disagreeing starts, uncertainty,
    hand-set sensitivity and the `validation` figures (predicted, never fit)."""
    figures = tuple(figures if figures is not None else model.calibration.figures)
    if free is None:
        free = model.calibration.free_params
    free = tuple(free)
    profile = with_costs(profile, (model,))  # a plugin's own section, which no profile has
    if len(free) >= len(figures):
        raise ValueError(
            f"model {model.name!r} has {len(free)} free parameters for {len(figures)} figures; "
            "a fit with as many parameters as figures proves nothing."
        )
    box = Box.of(profile, free)
    ends = _fit_from(model, figures, profile, free, box, neutral_starts(len(free), starts))
    best = min(ends, key=lambda e: e.cost)
    fitted_profile = _apply(profile, free, best.x)
    values = predict(model, figures, fitted_profile)
    jac = _jacobian(model, figures, fitted_profile, free, best)
    uncertainty = _uncertainty(jac, free, best)
    ident = identify(jac, best.x, [p.key for p in free],
                     [hi - lo for lo, hi in (uncertainty[(p.section, p.key)] for p in free)])
    loo_points = neutral_starts(len(free), loo_starts)
    results = []
    for i, f in enumerate(figures):
        ((low, x_low), (high, x_high)), left_free = _leave_out(model, figures, i, profile, free, box, loo_points,
                                                               walk=not ident.unidentified)
        refits = [x_low] if x_high is x_low else [x_low, x_high]
        results.append(FigureResult(
            figure=f.id, published=f.published, model=float(values[i]), error=_rel(values[i], f), bound=f.bound,
            loo_error=high if abs(high) > abs(low) else low, loo_low=low, loo_high=high, loo_free=left_free,
            unit=f.unit, source=f.source,
            refits=tuple({f"{p.section}.{p.key}": float(v) for p, v in zip(free, x)} for x in refits),
        ))
    sensitivity = _sensitivity(model, figures, fitted_profile, free)
    spans, span_errors = _range_fits(model, figures, fitted_profile, free, box, loo_points)
    return Calibration(
        model=model.name, profile=fitted_profile, free=free,
        fitted={(p.section, p.key): float(v) for p, v in zip(free, best.x)}, results=tuple(results),
        starts=tuple(_start(e, best) for e in ends), uncertainty=uncertainty,
        identification=ident,
        sensitivity=sensitivity, count=_count(jac, best.x, free, sensitivity),
        validation=tuple(predict_validation(model, validation, fitted_profile)),
        spans=spans, span_errors=span_errors,
    )


def _range_fits(model: Model, figures, profile: Profile, free, box: Box, starts: np.ndarray) \
        -> tuple[dict[str, tuple[dict, dict]], dict[str, tuple[float, float]]]:
    """For each assumed cost with a range in the sections the model reads, the fit with it at each end of its
    range (from the same neutral starts as a leave-one-out refit), and the worst |figure error| there."""
    spans, errors = {}, {}
    freed = {(p.section, p.key) for p in free}
    for section, key, entry in ranged(model, profile):
        if (section, key) in freed:
            continue
        ends, worst = [], []
        for end in entry.range:
            at = profile.with_values({(section, key): end}, source=entry.source)
            best = min(_fit_from(model, figures, at, free, box, starts), key=lambda e: e.cost)
            ends.append({f"{p.section}.{p.key}": float(v) for p, v in zip(free, best.x)} | {f"{section}.{key}": end})
            worst.append(float(np.max(np.abs(np.expm1(best.residuals)))))
        spans[f"{RANGE}{section}.{key}"] = tuple(ends)
        errors[f"{RANGE}{section}.{key}"] = tuple(worst)
    return spans, errors


def _leave_out(model: Model, figures, i: int, profile: Profile, free, box: Box, starts: np.ndarray,
               walk: bool = True) -> tuple[tuple[tuple[float, np.ndarray], tuple[float, np.ndarray]], tuple[str, ...]]:
    """Figure i predicted by fits to the other figures: (the low and the high end of its relative error, each
    with the refit's costs, and the costs those figures leave free). Where they identify every cost the range is one value, the best refit's. Where
    they do not (their sensitivity has a direction of singular value below 1% of the largest,
    workers.fitcheck.identify), the refits along that direction fit them as well as the best one (within
    FLAT) and predict figure i differently: the range over that valley (_valley). Reporting the best start's
    value there would report wherever the optimizer stopped, which moves with the machine's floating point
    (memmap/devdax/template_nt_inline: -10.5% and -10.8% on two machines, -15.6% from another start).
    `walk` False (the fit to every figure already leaves costs free, and calibrate says so): the costs left
    free are named, and the value is the best refit's, not a range; walking every such valley of a fit that
    is refused anyway costs minutes."""
    rest = figures[:i] + figures[i + 1:]
    best = min(_fit_from(model, rest, profile, free, box, starts), key=lambda e: e.cost)

    def held(x: np.ndarray) -> float:
        return _rel(predict(model, (figures[i],), _apply(profile, free, x))[0], figures[i])

    while True:
        weak = free_directions(_jacobian(model, rest, _apply(profile, free, best.x), free, best), best.x)
        if not weak or not walk:
            return ((held(best.x), best.x),) * 2, tuple(free[k].key for k in weak)
        walks = [_valley(model, rest, profile, free, box, best, k, held) for k in weak]
        lowest = min((end for _, end in walks), key=lambda e: e.cost)
        if lowest.cost >= best.cost * (1.0 - FLAT):
            errors = [e for found, _ in walks for e in found]
            return (min(errors, key=lambda e: e[0]), max(errors, key=lambda e: e[0])), \
                tuple(free[k].key for k in weak)
        best = lowest  # the walk found better fits than every start: walk again from the best of them


def _valley(model: Model, figures, profile: Profile, free, box: Box, best: _End, k: int,
            held) -> tuple[list[tuple[float, np.ndarray]], _End]:
    """(held(x), x) along the valley of cost k, and the best fit met on the way: from `best`, cost k stepped
    through the unit cube (STEP) each way, the other costs refit from the previous step, for as long as the
    refit's cost stays within FLAT of the best one (or the bounds end it); each edge bisected to EDGE. A
    profile of the fit along one cost (a profile likelihood)."""
    limit = best.cost * (1.0 + FLAT)
    others = [j for j in range(len(free)) if j != k]
    sub = Box(box.lower[others], box.upper[others], box.log[others])

    lowest = best

    def at(t: float, start: np.ndarray) -> tuple[_End, np.ndarray]:
        nonlocal lowest
        fixed = _apply(profile, (free[k],), box.value(np.insert(np.full(len(others), 0.5), k, t))[k:k + 1])
        end = _fit_from(model, figures, fixed, tuple(free[j] for j in others), sub, start[None, :])[0]
        x = np.insert(end.x, k, fixed.value(free[k].section, free[k].key))
        if end.cost < lowest.cost:
            lowest = _End(x=x, cost=end.cost, residuals=end.residuals)
        return end, x

    u0 = box.unit(best.x)
    out = [(held(best.x), best.x)]
    for direction in (-1.0, 1.0):
        inside, start, outside = u0[k], np.delete(u0, k), None
        while outside is None and 0.0 < inside < 1.0:
            t = float(np.clip(inside + direction * STEP, 0.0, 1.0))
            end, x = at(t, start)
            if end.cost > limit:
                outside = t
                continue
            inside, start = t, sub.unit(end.x)
            out.append((held(x), x))
        while outside is not None and abs(outside - inside) > EDGE:
            mid = 0.5 * (inside + outside)
            end, x = at(mid, start)
            if end.cost > limit:
                outside = mid
            else:
                inside, start = mid, sub.unit(end.x)
                out.append((held(x), x))
    return out, lowest


def _start(end: _End, best: _End) -> Start:
    """A start agrees when every cost it found is within 1% of the best's (and its fit is as good)."""
    close = np.all(np.abs(end.x - best.x) <= AGREE * np.maximum(np.abs(best.x), 1e-12))
    worst = float(np.max(np.abs(np.expm1(end.residuals))))
    return Start(values=tuple(float(v) for v in end.x), max_error=worst, agrees=bool(close))


def _jacobian(model: Model, figures, profile: Profile, free, best: _End) -> np.ndarray:
    """d log(model/published) / d cost at the fit (figures x costs), each cost in its own units."""
    x = best.x
    frame = figure_frame(model, figures)
    cols = []
    for i in range(len(free)):
        h = 1e-4 * max(abs(x[i]), 1e-9)
        xp = x.copy()
        xp[i] += h
        pred = predict(model, figures, _apply(profile, free, xp), frame)
        cols.append((log_residuals(figures, pred) - best.residuals) / h)
    return np.array(cols).T


def _uncertainty(jac: np.ndarray, free, best: _End) -> dict:
    """How far each cost can move, the others refit, before the worst |error| grows by one point.

    Linearized at the fit: with J the Jacobian of the log residuals in each cost's own units, moving
    cost i by d and refitting the others changes the residuals by d * (I - P) J_i, P the projection
    onto the other costs' columns; the interval is where every figure stays within the worst |error| + 1%.
    """
    x = best.x
    r0 = best.residuals
    limit = np.log1p(float(np.max(np.abs(np.expm1(r0)))) + SLACK)
    out = {}
    for i, p in enumerate(free):
        others = np.delete(jac, i, axis=1)
        col = jac[:, i]
        if others.size:
            coef, *_ = np.linalg.lstsq(others, col, rcond=None)
            col = col - others @ coef
        out[(p.section, p.key)] = (x[i] - _reach(r0, -col, limit), x[i] + _reach(r0, col, limit))
    return out


def _reach(r0: np.ndarray, slope: np.ndarray, limit: float) -> float:
    """How far d >= 0 one can go before some |r0 + d * slope| exceeds `limit`; inf when no figure responds."""
    steps = []
    for r, s in zip(r0, slope):
        if abs(s) > 1e-15:
            edge = limit if s > 0 else -limit
            steps.append(max(0.0, (edge - r) / s))
    return min(steps) if steps else math.inf


def _sensitivity(model: Model, figures, profile: Profile, free) -> tuple[Sensitivity, ...]:
    """Every hand-set number of the sections the model reads (source "assumed", or "calibrated" by another fit
    and held here, as young's call_ns), moved by -+20%:
    the worst |figure error| each way, whether that moves the figures (MOVES), and the secant slope of
    each figure's log error over the move. Entries that move no figure's error by a tenth of a point are
    left out."""
    frame = figure_frame(model, figures)
    sections = {model.name} | {p.section for p in free}
    worst_of = lambda pred: float(max(np.abs(f.error(v)) for f, v in zip(figures, pred)))  # noqa: E731
    base = worst_of(predict(model, figures, profile, frame))
    span = math.log((1.0 + SENSITIVITY) / (1.0 - SENSITIVITY))
    out = []
    freed = {(p.section, p.key) for p in free}
    for section in sorted(sections):
        for key, e in profile.sections.get(section, {}).items():
            held = e.source == "assumed" or (e.source == FITTED and (section, key) not in freed) \
                if isinstance(e, Quantity) else False
            if not held or isinstance(e.value, bool) or e.value == 0:
                continue
            preds = []
            for factor in (1.0 - SENSITIVITY, 1.0 + SENSITIVITY):
                moved = profile.with_values({(section, key): e.value * factor}, source="assumed")
                try:
                    preds.append(predict(model, figures, moved, frame))
                except (ValueError, ArithmeticError, ProfileError):
                    break  # a value the model refuses (a page size that is not one): no sensitivity to show
            if len(preds) < 2:
                continue
            worst = [worst_of(p) for p in preds]
            if any(abs(w - base) > 0.001 for w in worst):
                slope = (log_residuals(figures, preds[1]) - log_residuals(figures, preds[0])) / span
                out.append(Sensitivity(section=section, key=key, value=float(e.value),
                                       max_error_low=worst[0], max_error_high=worst[1],
                                       moves=any(abs(w - base) > MOVES for w in worst),
                                       slope=tuple(float(v) for v in slope)))
    return tuple(out)


def _count(jac: np.ndarray, x: np.ndarray, free, sensitivity: tuple[Sensitivity, ...]) -> Count:
    """The fitted costs and the hand-set ones that move the figures, against the independent numbers the
    figures carry about them all: the fitted costs' columns are the Jacobian at the fit (relative), the
    hand-set ones' their secant over -20% .. +20% (a level count or a size moves in steps)."""
    hand = [h for h in sensitivity if h.moves]
    return count([f"{p.section}.{p.key}" for p in free], jac * x, [f"{h.section}.{h.key}" for h in hand],
                 np.array([h.slope for h in hand]).T if hand else np.zeros((jac.shape[0], 0)), MOVES)


@dataclass(frozen=True, kw_only=True, slots=True)
class Work:
    """One variant at a model's work point (Calibration.work) against the comparison's baseline: how much
    faster the model says it is, how much less compute time, and how much less work the kernel does."""

    variant: str
    speedup: float  # baseline time / this time (modeled)
    compute: float  # baseline compute time / this one (modeled: the kernel's cycles on the profile's core)
    work: float  # baseline's kernel work / this one's (memmap: instructions, equal to a guest's)
    dominant: str  # what sets the time there


def work_comparison(model: Model, profile: Profile) -> tuple[dict, list[Work]]:
    """Calibration.work's point, and every variant of the comparison against the baseline there."""
    cmp, check = model.report.comparison, model.calibration.work
    if cmp is None or check is None:
        return {}, []
    axis = cmp.column.removeprefix("param_")
    variants = [v for v in model.axis(axis).choices]
    rows = evaluate(model, points_frame(model, [{**check.point, axis: v} for v in variants]), profile)
    if (rows["status"] != "ok").any():
        return dict(check.point), []
    base = variants.index(cmp.baseline)
    time, compute, work = (rows[c].cast(pl.Float64).to_list() for c in (model.headline, check.compute, check.work))
    dominant = rows[check.binds].to_list() if check.binds else [""] * len(variants)
    return dict(check.point), [Work(variant=str(v), speedup=time[base] / time[i],
                                    compute=compute[base] / compute[i], work=work[base] / work[i],
                                    dominant=dominant[i]) for i, v in enumerate(variants) if i != base]


def predict_validation(model: Model, figures, profile: Profile) -> list[FigureResult]:
    """Validation figures predicted by `profile` (use = "validation"; never part of a fit)."""
    figures = tuple(figures)
    if not figures:
        return []
    values = predict(model, figures, profile)
    return [FigureResult(figure=f.id, published=f.published, model=float(v), error=_rel(v, f), bound=f.bound,
                         loo_error=_rel(v, f), unit=f.unit, use=VALIDATION, source=f.source)
            for f, v in zip(figures, values)]


def loo_text(loo: tuple[float, float]) -> str:
    """A leave-one-out error as printed: "+1.3%", or "-15.6 .. -6.8%" where it is a range."""
    low, high = loo
    if f"{low:+.1%}" == f"{high:+.1%}":
        return f"{low:+.1%}"
    return f"{low * 100:+.1f} .. {high:+.1%}"


def _rel(value: float, figure: Figure) -> float:
    """The relative error against a figure (Figure.error: a bound's only on its wrong side)."""
    return float(figure.error(value)) if math.isfinite(value) else math.inf
