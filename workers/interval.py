"""Error bars: how far each modeled answer can be off, as two columns per priced metric, and how often a
figure the fit did not see falls inside them.

Every metric a model prices with the profile's costs (Model.priced) gets `lo_<name>` and `hi_<name>`
(`metric_init_ms` -> `lo_init_ms`, `hi_init_ms`), computed on the worker beside the answer:

1. **The refits' answers.** `memsweep calibrate` refits the costs once per figure with that figure left
   out, and the profile records each refit's costs (`[refits]`; a valley's two ends where the other figures
   leave a cost free). The model is evaluated under each: the bar spans their answers at the row's point,
   what the fit's costs leave open.
2. **The held-out residuals of the answer's kind, on both sides.** The leave-one-out errors of the model's
   figures of that metric, signed (Figure.error, model over published; a bound's are left out: one that holds
   says nothing of how far off an answer is); for a ratio of two of the model's answers with no figure of its
   own (a speedup), the errors of the ratios the figures' pairs give, each predicted by the refits that left
   one of the pair out (ratio_residuals()); for any other metric (or one whose figures are all bounds), all
   of the model's. The answer is moved by the most negative and by the most positive of them to where the
   figure would lie (answer / (1 + error)), and by neither past itself: the bar reaches from
   answer / (1 + the largest over-prediction) to answer / (1 + the largest under-prediction) (`Stated.sides`).
   A new figure's residual, exchangeable with the n held out, lies between their least and their largest at
   rate (n - 1) / (n + 1) (`Stated.rate`; conformal prediction with signed residuals, cf. the jackknife+ of
   Barber, Candes, Ramdas, Tibshirani 2021, whose coverage is at least 1 - 2a). The signs matter: a model
   that over-predicts one mode and under-predicts another has a bar on both sides; one that errs on one side
   only is not widened on the other, so the bar is no wider than the two worst misses (at a fit figure, at
   most about twice its model's largest leave-one-out error) and no narrower than any one of them.
   `coverage()` counts how many figures fall inside: each fit figure against the bar the fit that left it
   out would give it (that refit's answer moved by the others' residuals, with the other refits' answers),
   each validation figure against the bar stored at its point.
3. **Widened by distance.** A row whose answer no figure checks (evidence `extrapolated` or `assumed`) is
   widened by half of q, the kind's largest |residual|, more on each side (FAR_WIDENING): a point past the
   figures can be off by more than one among them, by how much no figure says.
4. **Spanning the assumptions.** Each assumed cost with a `range` in the profile (the values its source
   allows) moves the answers to each end of it, with the fitted costs refit there (`[refits]` "range:"
   entries; a cost the figures do not see is moved alone): the bar takes in those answers too.

A model with no refits but validation figures states their largest |error| as q either side of its answer;
one with neither has no bar (null), and `Stated.basis` says why. Bars are Float32: they carry two or three
digits, and half the bytes of Float64 on a sweep of millions of rows.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import polars as pl

from .dataset import unit_of
from .evaluate import evaluate, priced
from .model import STATUS_OK, Figure, Model, figure_frame, validation_figures
from .profiles import RANGE, Profile, Quantity

LO, HI = "lo_", "hi_"
DTYPE = pl.Float32
RATIOS = ("", "fraction")  # units (workers.dataset.unit_of) of a ratio of two answers
FAR = ("extrapolated", "assumed")  # the evidence of an answer no figure checks: widened (3.)
# How much more (3.): half the held-out residual again on each side. Hand-set: no figure lies past the others
# far enough to check it (the figures' own leave-one-out errors, of points among the others, are q itself).
FAR_WIDENING = 0.5


def columns(metric: str) -> tuple[str, str]:
    """The bar columns of a priced metric: metric_init_ms -> (lo_init_ms, hi_init_ms)."""
    name = metric.removeprefix("metric_")
    return LO + name, HI + name


def dtypes(model: Model) -> dict[str, pl.DataType]:
    """Every bar column of the model, in the order of its priced metrics."""
    return {c: DTYPE for m in model.priced for c in columns(m)}


@dataclass(frozen=True, kw_only=True, slots=True)
class Stated:
    """How far the model states its answers under a profile can be off, and on what that rests."""

    q: dict[str, float]  # priced metric -> its largest held-out |residual| (2., 3.)
    n: dict[str, int]  # priced metric -> how many held-out figures (or ratios) its residuals are of
    error: float | None  # the largest residual: the model's stated error; None: no statement
    basis: str  # "the largest leave-one-out error of its 8 fit figures", or why there is none
    refits: tuple[Profile, ...]  # the profile with each refit's costs of this model's figures (1.)
    spans: tuple[tuple[str, Profile], ...]  # (the assumed cost, the profile at one end of its range) (4.)
    # priced metric -> (low, high): the factors the answer is multiplied by at the bar's two ends (2.)
    sides: dict[str, tuple[float, float]] = dataclasses.field(default_factory=dict)

    @property
    def alternatives(self) -> tuple[Profile, ...]:
        return self.refits + tuple(p for _, p in self.spans)

    def rate(self, metric: str) -> float | None:
        """The share of figures the fit did not see that a bar of `metric` claims to hold: (n - 1) / (n + 1),
        a new residual neither below the least nor above the largest of n (2.)."""
        n = self.n.get(metric)
        return (n - 1) / (n + 1) if n else None


def sides(errors: list[float]) -> tuple[float, float]:
    """The factors that move an answer to where a figure would lie if the answer erred as the most
    over-predicting and the most under-predicting of `errors` (model over published, signed), never past the
    answer itself: (1 / (1 + largest over-prediction), 1 / (1 + largest under-prediction))."""
    return 1.0 / (1.0 + max([0.0, *errors])), 1.0 / (1.0 + min([0.0, *errors]))


_STATED: dict[tuple, Stated] = {}


def stated(model: Model, profile: Profile) -> Stated:
    """The model's stated errors under `profile` and the profiles behind them (module doc), worked out once
    per model and profile (every chunk of a sweep asks, and the ratios' residuals evaluate the model)."""
    key = (model.name, model.version, profile.name, profile.digest(), tuple(sorted(profile.leave_one_out.items())))
    if key not in _STATED:
        _STATED[key] = _stated(model, profile)
    return _STATED[key]


def _stated(model: Model, profile: Profile) -> Stated:
    figures = model.calibration.figures
    refits = tuple(_with(profile, costs) for f in figures for costs in profile.refits.get(f.id, ()))
    spans = _spans(model, profile)
    loo = {f.id: profile.leave_one_out[f.id] for f in figures if f.id in profile.leave_one_out}
    if refits and loo:
        pools: dict[str, list[float]] = defaultdict(list)  # kind -> signed held-out errors
        counts: dict[str, int] = defaultdict(int)  # kind -> figures held out
        for f in figures:
            if f.id in loo and f.bound == "=":  # a bound that holds says nothing of how far off an answer is
                pools[f.metric] += sorted(set(loo[f.id]))
                counts[f.metric] += 1
        ratios = ratio_residuals(model, profile)
        every = [e for v in pools.values() for e in v]

        def pool(m: str) -> tuple[list[float], int]:
            if m in pools:
                return pools[m], counts[m]
            if ratios and unit_of(m) in RATIOS:
                return ratios, len(ratios)
            return every, sum(counts.values())
        still = _unmoved(model, profile, refits)
        q = {m: 0.0 if m in still else max(map(abs, pool(m)[0])) for m in model.priced}
        return Stated(q=q, n={m: 0 if m in still else pool(m)[1] for m in model.priced},
                      error=max(map(abs, every)), refits=refits, spans=spans,
                      sides={m: (1.0, 1.0) if m in still else sides(pool(m)[0]) for m in model.priced},
                      basis=f"the largest leave-one-out error of its {len(loo)} fit figures, by kind")
    checks = validation_figures(model, profile)
    if checks:
        out = evaluate(model, figure_frame(model, checks), profile)
        errors = [abs(float(f.error(out[f.metric][i]))) for i, f in enumerate(checks)
                  if out["status"][i] == STATUS_OK and out[f.metric][i] is not None]
        if errors:
            e = max(errors)
            return Stated(q={m: e for m in model.priced}, n={}, error=e, refits=(), spans=spans,
                          sides={m: (1.0 - e, 1.0 + e) for m in model.priced},
                          basis=f"the largest error of its {len(errors)} validation figures (no refits recorded)")
    return Stated(q={}, n={}, error=None, refits=(), spans=(),
                  basis=f"profile {profile.name} records no refits of {model.name} and no validation figure of it: "
                        "no error bar")


_AT_FIGURES: dict[tuple, pl.DataFrame] = {}
_AT_FIGURES_MAX = 4096  # entries: a few thousand frames of a few rows each


def at_figures(model: Model, figures: tuple[Figure, ...], profile: Profile) -> pl.DataFrame:
    """evaluate() of the model at `figures`' points under `profile`, remembered: coverage() states the bars
    once per figure left out, and each statement evaluates the same figures under the same refits again
    (_unmoved, ratio_residuals), so without it the figures are evaluated n^2 times. Keyed by what an answer
    reads of a profile, its name and its values, not its refits' table, which a left-out statement changes."""
    key = (model.name, model.version, tuple((f.id, tuple(sorted((k, str(v)) for k, v in f.params.items())))
                                            for f in figures), profile.name, _values(profile))
    if key not in _AT_FIGURES:
        if len(_AT_FIGURES) >= _AT_FIGURES_MAX:
            _AT_FIGURES.clear()
        _AT_FIGURES[key] = evaluate(model, figure_frame(model, figures), profile)
    return _AT_FIGURES[key]


def _values(profile: Profile) -> tuple:
    """Every entry of the profile's sections as a value a key can hold."""
    return tuple((s, k, e if isinstance(e, str) else (e.value, e.unit))
                 for s, entries in sorted(profile.sections.items()) for k, e in sorted(entries.items()))


def _unmoved(model: Model, profile: Profile, refits: tuple[Profile, ...]) -> set[str]:
    """The priced metrics no refit moves at any figure's point: they do not rest on the fitted costs (pfnmap's
    share of huge leaves is the mapping's geometry), so the fit's errors are not theirs."""
    figures = model.calibration.figures
    base = at_figures(model, figures, profile)
    still = set(model.priced)
    for refit in refits:
        again = at_figures(model, figures, refit)
        still = {m for m in still if base[m].equals(again[m])}
    return still


def _with(profile: Profile, costs) -> Profile:
    updates = {tuple(k.split(".", 1)): v for k, v in costs.items()}
    return profile.with_values(updates, source="calibrated")


def sections(model: Model) -> set[str]:
    """The profile sections a model's answers read: its own and those of the costs it fits."""
    cal = model.calibration
    return {model.name} | {p.section for p in (*cal.free_params, *cal.free_for_measured)}


def ranged(model: Model, profile: Profile) -> list[tuple[str, str, Quantity]]:
    """The assumed costs with a range in the sections the model reads: (section, key, entry)."""
    return [(s, k, e) for s in sorted(sections(model)) for k, e in profile.sections.get(s, {}).items()
            if isinstance(e, Quantity) and e.range is not None]


def _spans(model: Model, profile: Profile) -> tuple[tuple[str, Profile], ...]:
    """Each ranged cost's ends, with the fits calibrate recorded there, else the cost alone moved."""
    out = []
    for section, key, e in ranged(model, profile):
        name = f"{section}.{key}"
        fits = profile.refits.get(RANGE + name) or tuple({name: end} for end in e.range)
        out += [(name, _with(profile, costs)) for costs in fits]
    return tuple(out)


def ratio_residuals(model: Model, profile: Profile) -> list[float]:
    """Held-out errors of the ratios the model's figures pair into: for the figures of its comparison's
    metric at the same point but the comparison axis, the baseline's over each other's (a speedup), as
    predicted by each refit that left one of the pair out, against the published ratio."""
    cmp = model.report.comparison
    if cmp is None:
        return []
    metric = cmp.metric or model.headline
    axis = cmp.column.removeprefix("param_")
    figures = [f for f in model.calibration.figures if f.metric == metric and f.bound == "="]
    groups: dict[tuple, dict[str, Figure]] = defaultdict(dict)
    for f in figures:
        rest = tuple(sorted((k, str(v)) for k, v in f.params.items() if k != axis))
        groups[rest][str(f.params.get(axis))] = f
    out = []
    for group in groups.values():
        base = group.get(str(cmp.baseline))
        for other in (f for f in group.values() if base is not None and f is not base):
            pair = (base, other)
            published = base.published / other.published
            for f in pair:
                for costs in profile.refits.get(f.id, ()):
                    v = at_figures(model, pair, _with(profile, costs))[metric].to_list()
                    if None not in v and v[1]:
                        out.append(v[0] / v[1] / published - 1.0)
    return out


def bars(model: Model, profile: Profile, rows: pl.DataFrame, evidence: pl.Series,
         state: Stated | None = None) -> pl.DataFrame:
    """The bar columns (dtypes(model)) for `rows` (param_*, status and the metrics, as workers.evaluate
    returns them) whose headline evidence is `evidence`: same height and order; null where a row is not ok."""
    state = state or stated(model, profile)
    names = model.priced
    if not names or state.error is None:
        return pl.DataFrame({c: pl.Series(c, [None] * rows.height, dtype=DTYPE) for c in dtypes(model)})
    ok = (rows["status"] == STATUS_OK).to_numpy()
    lo, hi = spread(model, rows, ok, [(None, state.sides), *((alt, None) for alt in state.alternatives)])
    far = evidence.is_in(FAR).fill_null(False).to_numpy() if state.refits else np.zeros(rows.height, dtype=bool)
    itself = _baseline(model, rows)  # a ratio of the baseline's answer to itself has no doubt: 1, or 0 saved
    out = {}
    for m in names:
        exact = itself if unit_of(m) in RATIOS else np.zeros(rows.height, dtype=bool)
        low, high = np.where(exact, rows[m].cast(pl.Float64).to_numpy(), lo[m]), \
            np.where(exact, rows[m].cast(pl.Float64).to_numpy(), hi[m])
        wide = np.where(exact, 0.0, state.q[m] * FAR_WIDENING)
        low, high = np.where(far, low - np.abs(low) * wide, low), np.where(far, high + np.abs(high) * wide, high)
        low[~ok], high[~ok] = np.nan, np.nan
        lo_col, hi_col = columns(m)
        out[lo_col] = pl.Series(lo_col, low, dtype=pl.Float64).fill_nan(None).cast(DTYPE)
        out[hi_col] = pl.Series(hi_col, high, dtype=pl.Float64).fill_nan(None).cast(DTYPE)
    return pl.DataFrame(out)


def _baseline(model: Model, rows: pl.DataFrame) -> np.ndarray:
    """Rows at the model's comparison baseline (slow, per_pte): their ratios to the baseline are exact."""
    cmp = model.report.comparison
    if cmp is None or cmp.column not in rows.columns:
        return np.zeros(rows.height, dtype=bool)
    return (rows[cmp.column] == cmp.baseline).fill_null(False).to_numpy()


WHOLE_FRAME = 0.9  # spread(): the share of ok rows from which refits price every row


def spread(model: Model, rows: pl.DataFrame, ok: np.ndarray, alternatives, answers=None) -> tuple[dict, dict]:
    """Per priced metric, the least and the largest answer over `alternatives`, (profile, sides) pairs: None
    is the rows' own answers; sides, per metric the two factors an answer is moved by (Stated.sides), or None
    for the answer alone. NaN where a row is not ok. `answers(profile)`: the ok rows' metrics under an
    alternative, where the caller has them (default: the model evaluated at those rows' points)."""
    lo = {m: np.full(rows.height, np.nan) for m in model.priced}
    hi = {m: np.full(rows.height, np.nan) for m in model.priced}
    # Where nearly every row is ok, the refits take every row's point: the frame the rows were evaluated on,
    # whose counts the model has cached (LastPoints), so that no refit derives them again; elsewhere pricing
    # the rows that are not ok would cost more than that derivation (memmap's large grid: 44% ok).
    whole = bool(ok.size) and ok.mean() >= WHOLE_FRAME
    axes = rows.select([a.column for a in model.axes])
    points = None if not ok.any() else axes if whole else axes.filter(pl.Series(ok))
    for alt, by in alternatives:
        if alt is not None and points is None:
            continue
        again = None if alt is None else answers(alt) if answers is not None else priced(model, points, alt)
        for m in model.priced:
            v = np.full(rows.height, np.nan)
            if alt is None:
                v = rows[m].cast(pl.Float64).to_numpy()  # a null is NaN
            elif answers is not None:  # the ok rows' answers
                v[ok] = again[m].cast(pl.Float64).to_numpy()
            else:  # priced() at `points`
                v[ok] = again[m][ok] if whole else again[m]
            down, up = by[m] if by is not None else (1.0, 1.0)
            lo[m] = np.fmin(lo[m], np.fmin(v * down, v * up))
            hi[m] = np.fmax(hi[m], np.fmax(v * down, v * up))
    return lo, hi


@dataclass(frozen=True, kw_only=True, slots=True)
class Held:
    """One published figure against a bar: the bar's ends and whether the figure lies inside."""

    figure: str
    use: str  # "fit" (against the bar built without its own refit and residual), "validation" or "stored"
    published: float
    bound: str
    low: float
    high: float

    @property
    def inside(self) -> bool:
        if self.bound == ">=":
            return self.high >= self.published
        if self.bound == "<=":
            return self.low <= self.published
        return self.low <= self.published <= self.high


def coverage(model: Model, profile: Profile) -> list[Held]:
    """Each figure of the model against a bar (module doc, 2.): a fit figure against the bar its point would
    have had if the figure had never been seen (the answer of the refit that left it out, moved by the other
    figures' residuals, and every other refit's answer), a validation figure against the bar its point carries
    (bars() at a checked point)."""
    state = stated(model, profile)
    if state.error is None:
        return []
    figures = model.calibration.figures
    out = []
    for f in figures:
        others = [g for g in figures if g.id != f.id and g.id in profile.leave_one_out]
        left = _stated(model, dataclasses.replace(
            profile, leave_one_out={g.id: profile.leave_one_out[g.id] for g in others},
            refits={k: v for k, v in profile.refits.items() if k != f.id}))
        rows = at_figures(model, (f,), _with(profile, profile.refits[f.id][0]) if f.id in profile.refits
                          else profile)
        i = figures.index(f)  # every figure under each alternative at once: n evaluations, not n^2
        lo, hi = spread(model, rows, np.ones(1, dtype=bool),
                        [(None, left.sides), *((alt, None) for alt in left.alternatives)],
                        answers=lambda alt, i=i: at_figures(model, figures, alt).slice(i, 1))
        out.append(_held(f, "fit", lo[f.metric][0], hi[f.metric][0]))
    checks = validation_figures(model, profile)
    if checks:
        rows = evaluate(model, figure_frame(model, checks), profile)
        stored = bars(model, profile, rows, pl.Series(["fit"] * len(checks)), state)
        for i, f in enumerate(checks):
            lo_col, hi_col = columns(f.metric)
            if lo_col in stored.columns:
                out.append(_held(f, "validation", stored[lo_col][i], stored[hi_col][i]))
    return out


def stored(model: Model, profile: Profile) -> list[Held]:
    """Each fit figure against the bar its own point's row carries (bars() there, the fit having seen it),
    beside coverage()'s left-out check of the claim."""
    if stated(model, profile).error is None:
        return []
    figures = model.calibration.figures
    rows = at_figures(model, figures, profile)  # coverage() has evaluated them under the profile already
    bar = bars(model, profile, rows, pl.Series(["fit"] * len(figures)))
    return [_held(f, "stored", bar[columns(f.metric)[0]][i], bar[columns(f.metric)[1]][i])
            for i, f in enumerate(figures) if columns(f.metric)[0] in bar.columns]


def _held(f: Figure, use: str, low, high) -> Held:
    return Held(figure=f.id, use=use, published=f.published, bound=f.bound,
                low=float("nan") if low is None else float(low), high=float("nan") if high is None else float(high))
