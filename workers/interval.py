"""Error bars: how far each modeled answer can be off, as two columns per priced metric.

Every metric a model prices with the profile's costs (Model.priced) gets `lo_<name>` and `hi_<name>`
(`metric_init_ms` -> `lo_init_ms`, `hi_init_ms`), computed on the worker beside the answer:

1. **The spread over the leave-one-out fits.** `memsweep calibrate` refits the costs once per figure with
   that figure left out and the profile records each refit's costs (`[refits]`; two, a valley's ends, where
   the other figures leave a cost free). The model is evaluated again under each refit of its own figures;
   the bar runs from the least to the largest of those answers and the profile's own. At a fit figure's
   point it so covers the error of the fit that did not see that figure.
2. **Widened where no figure checked the point.** On a row whose evidence (workers.evidence, its headline's
   label) is `extrapolated` or `assumed`, the spread of a quantity with a unit (a time, a rate) is widened by
   the model's stated error on each side, lo * (1 - e) and hi * (1 + e): a point no figure tests can be off
   by as much as the worst figure a fit did not see. A ratio of two of the model's answers at one point
   (a speedup, a fraction) is not widened: the stated error is of the answers, whose errors the ratio
   shares, and its spread over the refits is its own doubt (slow's speedup over itself is 1, exactly). A what-if profile's refits are its base's, scaled to its own costs (workers.profiles): the
   bar is the base fit's doubt, widened; the what-if's own assumed values it does not bound.
3. **A model no fit can leave a figure out of** (as many costs as figures: young) has no refits. Its stated
   error is its validation figures' largest |error| (predicted, never fit), and every answer with a unit
   has that error on each side; its ratios have no bar.
4. No refit and no validation figure: no bar (null), and the error says why (`stated`).

`e`, the stated error, is the largest leave-one-out |error| of the model's figures under the profile, else
(no refits) the largest validation |error|. Bars are Float32: they carry two or three digits, and half the
bytes of Float64 on a sweep of millions of rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from .evaluate import evaluate, frame
from .dataset import unit_of
from .model import STATUS_OK, Model, figure_frame, validation_figures
from .profiles import Profile

LO, HI = "lo_", "hi_"
DTYPE = pl.Float32
RATIOS = ("", "fraction")  # units (workers.dataset.unit_of) of a ratio of two answers: not widened


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

    error: float | None  # the largest |relative error| of a figure a fit did not see; None: no statement
    basis: str  # "the largest leave-one-out error of 8 fit figures", or why there is none
    refits: tuple[Profile, ...]  # the profile with each refit's costs of this model's figures


def stated(model: Model, profile: Profile) -> Stated:
    """The model's stated error under `profile` and the refit profiles behind it (module doc)."""
    own = [f.id for f in model.calibration.figures]
    refits = tuple(_with(profile, costs) for fid in own for costs in profile.refits.get(fid, ()))
    loo = profile.loo_error(own)
    if refits and loo is not None:
        return Stated(error=loo, refits=refits,
                      basis=f"the largest leave-one-out error of its {len(own)} fit figures")
    checks = validation_figures(model, profile)
    if checks:
        out = evaluate(model, figure_frame(model, checks), profile)
        errors = [abs(out[f.metric][i] / f.published - 1) for i, f in enumerate(checks)
                  if out["status"][i] == STATUS_OK and out[f.metric][i] is not None]
        if errors:
            return Stated(error=max(errors), refits=(),
                          basis=f"the largest error of its {len(errors)} validation figures (no fit can leave "
                                f"one of its figures out)")
    return Stated(error=None, refits=(), basis=f"profile {profile.name} records no refits of {model.name} "
                                                f"and no validation figure of it: no error bar")


def _with(profile: Profile, costs) -> Profile:
    updates = {tuple(k.split(".", 1)): v for k, v in costs.items()}
    return profile.with_values(updates, source="calibrated")


def bars(model: Model, profile: Profile, rows: pl.DataFrame, evidence: pl.Series,
         state: Stated | None = None) -> pl.DataFrame:
    """The bar columns (dtypes(model)) for `rows` (param_*, status and the metrics, as workers.evaluate
    returns them) whose headline evidence is `evidence`: same height and order; null where a row is not ok."""
    state = state or stated(model, profile)
    names = model.priced
    if not names or state.error is None:
        return pl.DataFrame({c: pl.Series(c, [None] * rows.height, dtype=DTYPE) for c in dtypes(model)})
    ok = (rows["status"] == STATUS_OK).to_numpy()
    lo = {m: rows[m].cast(pl.Float64).to_numpy() for m in names}  # the answers, then the least and the largest
    hi = dict(lo)
    if state.refits and ok.any():
        points = rows.filter(pl.Series(ok)).select([a.column for a in model.axes])
        for refit in state.refits:
            again = frame(model, points, refit)
            for m in names:
                v = np.full(rows.height, np.nan)
                v[ok] = again[m].cast(pl.Float64).fill_null(np.nan).to_numpy()
                lo[m] = np.fmin(lo[m], v)
                hi[m] = np.fmax(hi[m], v)
    e = state.error
    widen = evidence.is_in(["extrapolated", "assumed"]).fill_null(False).to_numpy() if state.refits \
        else np.ones(rows.height, dtype=bool)
    out = {}
    for m in names:
        scaled = unit_of(m) not in RATIOS
        low = np.where(widen & scaled, lo[m] - np.abs(lo[m]) * e, lo[m])
        high = np.where(widen & scaled, hi[m] + np.abs(hi[m]) * e, hi[m])
        low[~ok], high[~ok] = np.nan, np.nan
        if not state.refits and not scaled:  # neither a spread nor a stated error of its own
            low[:], high[:] = np.nan, np.nan
        lo_col, hi_col = columns(m)
        out[lo_col] = pl.Series(lo_col, low, dtype=pl.Float64).fill_nan(None).cast(DTYPE)
        out[hi_col] = pl.Series(hi_col, high, dtype=pl.Float64).fill_nan(None).cast(DTYPE)
    return pl.DataFrame(out)
