"""Whether a fit's costs can be trusted: do the points identify them, and can a machine have them?

`identify()` reads the sensitivity of the fit's log residuals to a relative change of each fitted cost
at the optimum (the Jacobian, columns d log(model/measured) / d log cost): its singular values say how
many independent numbers the points carry (those above 1% of the largest), and a cost is not identified
by these points when it takes a real part in a direction they barely see (a right singular vector of a
singular value below that), or when it can move by more than ten times its own value, the others refit,
before the worst |error| grows by one point (calibrate's linearized range).

`count()` puts the fitted costs beside the hand-set ones that move the figures and counts the independent
numbers the figures carry about all of them, by the same singular values: a hand-set cost that a figure
pins is a fitted cost, so more costs that move the figures than independent numbers is a fit that hides
free parameters in its assumptions.

`impossible()` names the entries of a profile that no machine can have: a value outside its `bounds`,
a time, bandwidth or size that is not positive (a fit stopped at 0 wanted a negative value), and a
broken `CostOrder` that a model declares for its own section (a DRAM bandwidth above the LLC's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from .model import CostOrder, Model
from .profiles import Profile, Quantity

RANK_SHARE = 0.01  # a direction the points carry: a singular value above 1% of the largest
WEAK_PART = 0.3  # a cost takes part in a weak direction when its share of that singular vector is this or more
# A cost whose one-point range reaches more than ten times its value either way: the points do not pin its
# order of magnitude. (The published pfnmap fit's loosest cost, copy_tlb_miss_ns, 47.7 ns in [31.4 .. 64.2], is
# pinned; the costs a fit cannot see move by thousands of times their value.)
LOOSE = 10.0
BOUND_SLACK = 1e-9  # a fit at a bound lands there up to rounding
POSITIVE_UNITS = {"ns": "a time", "us": "a time", "ms": "a time", "s": "a time", "GB/s": "a bandwidth",
                  "bytes": "a size"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Identification:
    """What the fitted points tell about the costs: the singular values of the relative sensitivity
    (largest first), how many are above 1% of the largest, and the costs they do not pin."""

    singular_values: tuple[float, ...]
    independent: int
    unidentified: tuple[str, ...]  # cost keys, in fit order


@dataclass(frozen=True, kw_only=True, slots=True)
class Problem:
    """A profile entry no machine can have: `entry` is "section.key", `rule` what it breaks."""

    entry: str
    value: float
    rule: str

    def __str__(self) -> str:
        return f"'{self.entry}' must be {self.rule} (got {self.value:.6g})."


@dataclass(frozen=True, kw_only=True, slots=True)
class Count:
    """The costs that move the figures: every fitted one, and each hand-set one whose -20% or +20% moves
    the worst |figure error| by more than `threshold`; and how many independent numbers the figures carry
    about all of them (singular values of their relative sensitivities above 1% of the largest)."""

    fitted: tuple[str, ...]  # "section.key", in fit order
    hand_set: tuple[str, ...]  # "section.key" of the hand-set costs that move the figures
    singular_values: tuple[float, ...]
    independent: int
    threshold: float

    @property
    def costs(self) -> int:
        return len(self.fitted) + len(self.hand_set)

    @property
    def over(self) -> bool:
        """More costs move the figures than the figures carry numbers: some of them are not pinned."""
        return self.costs > self.independent

    def to_dict(self) -> dict:
        return {"costs": self.costs, "fitted": list(self.fitted), "hand_set": list(self.hand_set),
                "independent": self.independent, "singular_values": list(self.singular_values),
                "threshold": self.threshold, "over": self.over}


def _svd(rel: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Singular values (largest first), the mask of those above 1% of the largest, and the right vectors."""
    rel = np.nan_to_num(rel, nan=0.0, posinf=0.0, neginf=0.0)
    _, s, vt = np.linalg.svd(rel, full_matrices=False)
    strong = s > RANK_SHARE * s[0] if s.size and s[0] > 0 else np.zeros(len(s), dtype=bool)
    return s, strong, vt


def count(fitted: list[str], fitted_rel: np.ndarray, hand_set: list[str], hand_set_rel: np.ndarray,
          threshold: float) -> Count:
    """`fitted_rel`, `hand_set_rel`: d log residual / d log cost (figures x costs, 2-D) of the fitted costs
    and of the hand-set costs that move the figures by more than `threshold` (the caller's test)."""
    rel = np.hstack([np.asarray(fitted_rel, dtype=float), np.asarray(hand_set_rel, dtype=float)])
    s, strong, _ = _svd(rel) if rel.size else (np.zeros(0), np.zeros(0, dtype=bool), None)
    return Count(fitted=tuple(fitted), hand_set=tuple(hand_set), singular_values=tuple(float(v) for v in s),
                 independent=int(strong.sum()), threshold=threshold)


def identify(jac: np.ndarray, x: np.ndarray, keys: list[str], spans: list[float]) -> Identification:
    """`jac`: d log residual / d cost (figures x costs, more figures than costs) at the fit `x`; `spans`:
    each cost's linearized range (hi - lo) within one more point of worst error, the others refit."""
    s, strong, vt = _svd(jac * x)
    weak = (np.abs(vt[~strong]) >= WEAK_PART).any(axis=0)
    loose = [not (xi != 0 and span <= 2 * LOOSE * abs(xi)) for xi, span in zip(x, spans)]
    return Identification(singular_values=tuple(float(v) for v in s), independent=int(strong.sum()),
                          unidentified=tuple(k for k, w, lo in zip(keys, weak, loose) if w or lo))


def free_directions(jac: np.ndarray, x: np.ndarray) -> list[int]:
    """The costs the points leave free: for each direction of the relative sensitivity they barely see (a
    singular value below RANK_SHARE of the largest), the index of the cost with the largest share in it."""
    _, strong, vt = _svd(jac * x)
    return list(dict.fromkeys(int(np.argmax(np.abs(v))) for v in vt[~strong]))


def cost_orders(models: Iterable[Model]) -> list[tuple[str, CostOrder]]:
    """(section, CostOrder) of every order the models declare for their own sections."""
    return [(m.name, o) for m in models for o in m.calibration.cost_orders]


def impossible(profile: Profile, orders: list[tuple[str, CostOrder]]) -> list[Problem]:
    """Every entry of `profile` outside its bounds or not positive where it must be, then every
    declared order it breaks (entries the profile lacks are not checked)."""
    out = []
    for section, entries in profile.sections.items():
        for key, e in entries.items():
            if isinstance(e, Quantity) and not isinstance(e.value, bool):
                out += _entry(f"{section}.{key}", e)
    for section, o in orders:
        entries = profile.sections.get(section, {})
        lo, hi = entries.get(o.lower), entries.get(o.higher)
        if isinstance(lo, Quantity) and isinstance(hi, Quantity) and lo.value > hi.value:
            out.append(Problem(entry=f"{section}.{o.lower}", value=float(lo.value),
                               rule=f"at most {section}.{o.higher} = {hi.value:.6g} {hi.unit}: {o.why}"))
    return out


def _entry(entry: str, e: Quantity) -> list[Problem]:
    v = float(e.value)
    if not math.isfinite(v):
        return [Problem(entry=entry, value=v, rule="a finite number")]
    if e.unit in POSITIVE_UNITS and v <= 0:
        return [Problem(entry=entry, value=v, rule=f"positive, {POSITIVE_UNITS[e.unit]} in {e.unit} "
                                                   "(a fit stopped at 0 wanted a negative value)")]
    if e.bounds is not None:
        lo, hi = e.bounds
        slack = BOUND_SLACK * max(abs(lo), abs(hi), 1.0)
        if not lo - slack <= v <= hi + slack:
            return [Problem(entry=entry, value=v, rule=f"within its bounds [{lo:g}, {hi:g}] {e.unit}")]
    return []
