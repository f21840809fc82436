"""`memsweep calibrate`: fit a profile's free costs and print every figure's error."""

from __future__ import annotations

import json
from pathlib import Path

from workers import MODELS
from workers.calibrate import Calibration, calibrate
from workers.profiles import dump_profile, load_profile

from .exceptions import UsageError


def run_calibration(profile_name: str, *, models: list[str] | None, as_json: bool, save: str | None) -> int:
    """Calibrate each model that has published figures; print a table or JSON."""
    profile = load_profile(profile_name)
    names = models or [m for m in MODELS if MODELS[m].figures()]
    for m in names:
        if m not in MODELS or not MODELS[m].figures():
            have = sorted(n for n in MODELS if MODELS[n].figures())
            raise UsageError(f"'--model' must be a model with published figures, one of {have} (got {m!r}).")
    results: list[Calibration] = []
    for m in names:
        cal = calibrate(MODELS[m], profile)
        profile = cal.profile  # later models keep earlier fits (they own other sections)
        results.append(cal)
    if as_json:
        print(json.dumps([r.to_dict() for cal in results for r in cal.results], indent=1))
    else:
        for cal in results:
            print(format_calibration(cal))
    if save:
        Path(save).write_text(dump_profile(profile))
        if not as_json:
            print(f"fitted profile written to {save}")
    return 0


def format_calibration(cal: Calibration) -> str:
    """A plain-text table: figure, published, model, error, leave-one-out error."""
    width = max(len(r.figure) for r in cal.results)
    lines = [
        f"{cal.model}: {len(cal.free)} free parameters fit to {len(cal.results)} figures",
        *(f"  {p.section}.{p.key} = {cal.fitted[(p.section, p.key)]:.6g}" for p in cal.free),
        f"  {'figure':<{width}}  {'published':>12}  {'model':>12}  {'error':>8}  {'LOO error':>9}",
    ]
    for r in cal.results:
        lines.append(
            f"  {r.figure:<{width}}  {r.published:>12.4g}  {r.model:>12.4g}  {r.error:>+8.1%}  {r.loo_error:>+9.1%}"
        )
    lines.append(f"  max |error| {cal.max_error:.1%}, max |LOO error| {cal.max_loo_error:.1%}")
    return "\n".join(lines)
