"""`memsweep calibrate`: fit a profile's free costs and print every figure's error.

Against the published figures (default), or with `--from OUT/SWEEP` against a
sweep's measured rows (the measure backend) of every model that declares a
measurement (workers.model.Measurement) and costs to fit, optionally holding
some namespace sizes out of the fit to see how well the profile predicts them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl

from workers import MODELS
from workers.calibrate import DEFAULT_STARTS, Calibration, FigureResult, calibrate, predict, validation_figures
from workers.dataset import filesystem, part_files, scan
from workers.exceptions import SweepFolderError
from workers.profiles import Profile, dump_profile, load_profile
from workers.units import parse_size

from .exceptions import DatasetError, UsageError


def run_calibration(profile_name: str, *, models: list[str] | None, as_json: bool, save: str | None,
                    source: str | None = None, holdout: list[str] | None = None, statistic: str | None = None,
                    starts: int = DEFAULT_STARTS) -> int:
    """Calibrate each model to its published figures, or (`source`) to a sweep's measured rows."""
    profile = load_profile(profile_name)
    if source:
        jobs, held, profile = measured_jobs(source, profile, models, holdout or [], statistic or "min")
    else:
        for flag, given in (("--holdout", holdout), ("--statistic", statistic)):
            if given:
                raise UsageError(f"'{flag}' goes with '--from': it chooses how measured rows are fit.")
        jobs = [(model, figures, model.free_params) for model, figures in published_jobs(models)]
        held = {}
    results: list[Calibration] = []
    predictions: list[FigureResult] = []
    for model, figures, free in jobs:
        validation = () if source else validation_figures(model, profile)
        cal = calibrate(model, profile, figures, free, starts=starts, validation=validation)
        profile = cal.profile  # later models keep earlier fits (they own other sections)
        results.append(cal)
        if held.get(model.name):
            predictions += _predict(model, held[model.name], profile)
    rows = [r for cal in results for r in (*cal.results, *cal.validation)]
    if as_json:
        print(json.dumps([{**r.to_dict(), "held_out": False} for r in rows]
                         + [{**r.to_dict(), "held_out": True} for r in predictions], indent=1))
    else:
        for cal in results:
            print(format_calibration(cal))
        if predictions:
            print(format_holdout(predictions))
    if save:
        Path(save).write_text(dump_profile(profile))
        if not as_json:
            print(f"fitted profile written to {save}")
    return 0


def published_jobs(models: list[str] | None) -> list[tuple]:
    """(model, figures) of every model that has published figures and profile costs to fit to them
    (a plugin model whose costs are its own defaults, with no free parameters, is not calibrated)."""
    have = sorted(n for n in MODELS if MODELS[n].figures() and MODELS[n].free_params)
    for m in models or have:
        if m not in have:
            raise UsageError(f"'--model' must be a model with published figures and free parameters, one of {have} "
                             f"(got {m!r}).")
    return [(MODELS[m], MODELS[m].figures()) for m in models or have]


def measured_jobs(sweep_dir: str, profile: Profile, models: list[str] | None, holdout: list[str],
                  statistic: str = "min"):
    """(model, figures, free parameters) to fit from a sweep's measured rows (`statistic` of each
    point's repeats), the held-out figures per model, and the profile to fit (with the host's cache
    sizes; the fit starts from neutral points, never from its values)."""
    from workers.measure.fit import figures_from_measured, host_profile

    sizes = set()
    for text in holdout:
        try:
            sizes.add(parse_size(text))
        except ValueError as e:
            raise UsageError(f"'--holdout' must be a namespace size such as '64GiB' ({e}).") from None
    jobs, held = [], {}
    for name in models or measured_models():
        frame = _measured_rows(sweep_dir, name)
        if frame is None:
            continue
        model = MODELS[name]
        figures = figures_from_measured(model, frame, statistic=statistic)
        fit_on = [f for f in figures if f.params["namespace_size"] not in sizes]
        held[name] = [f for f in figures if f.params["namespace_size"] in sizes]
        free = model.free_for_measured
        if len(fit_on) <= len(free):
            raise DatasetError(
                f"{sweep_dir} has {len(fit_on)} measured {name} figures to fit {len(free)} costs; "
                "measure more sizes or strategies (a fit needs more figures than parameters)."
            )
        profile = host_profile(profile, _facts(frame), MODELS.values())
        jobs.append((model, fit_on, free))
    if not jobs:
        raise DatasetError(f"'--from' must be a sweep with measured rows of a model that declares a measurement "
                           f"(got {sweep_dir!r}: none).")
    return jobs, held, profile


def measured_models() -> list[str]:
    """The models a fit to measured rows calibrates by default: those that declare a measurement
    (a user-space analog to run) and free parameters for it, by name."""
    return sorted(n for n, m in MODELS.items()
                  if m.measurement is not None and m.measurement.measurable and m.free_for_measured)


def _measured_rows(sweep_dir: str, model: str) -> pl.DataFrame | None:
    """The ok measured rows of one model in the sweep (None when it has none)."""
    try:
        if model not in part_files(*filesystem(sweep_dir)):
            return None
        lf = scan(sweep_dir, model)
    except SweepFolderError as e:
        raise UsageError(str(e).replace("'sweep_dir'", "'--from'", 1)) from None
    if "source" not in lf.collect_schema():  # schema 1: modeled rows only
        return None
    frame = lf.filter((pl.col("source") == "measured") & (pl.col("status") == "ok")).collect()
    return frame if frame.height else None


CACHE_FACTS = ("l1d_bytes", "l2_bytes", "l3_bytes")
LEGACY_CACHES = re.compile(r"(L1d|L2|L3) (\d+) B")  # schema 2's env_caches text: "L1d 49152 B, L2 ..."


def _facts(frame: pl.DataFrame) -> dict[str, int | None]:
    """The measuring host's cache sizes from its env_l1d_bytes, env_l2_bytes, env_l3_bytes columns
    (None when unknown). A schema-2 sweep has only the env_caches display text; that is read
    instead, so calibrating from an older sweep still uses its own host's caches."""
    first = frame.head(1)
    if all(f"env_{k}" in frame.columns for k in CACHE_FACTS):
        return {k: first[f"env_{k}"][0] if first.height else None for k in CACHE_FACTS}
    text = first["env_caches"][0] if "env_caches" in frame.columns and first.height else ""
    found = {f"{level.lower()}_bytes": int(n) for level, n in LEGACY_CACHES.findall(text or "")}
    return {k: found.get(k) for k in CACHE_FACTS}


def _predict(model, figures, profile: Profile) -> list[FigureResult]:
    values = predict(model, figures, profile)
    return [FigureResult(figure=f.id, published=f.published, model=float(v), error=float((v - f.published) / f.published),
                         loo_error=float((v - f.published) / f.published), unit=f.unit) for f, v in zip(figures, values)]


def format_holdout(rows: list[FigureResult]) -> str:
    width = max(len(r.figure) for r in rows)
    lines = [f"held out of the fit ({len(rows)} figures): predicted vs measured",
             f"  {'figure':<{width}}  {'measured':>12}  {'model':>12}  {'error':>8}"]
    lines += [f"  {r.figure:<{width}}  {r.published:>12.4g}  {r.model:>12.4g}  {r.error:>+8.1%}" for r in rows]
    lines.append(f"  max |error| {max(abs(r.error) for r in rows):.1%}")
    return "\n".join(lines)


def format_calibration(cal: Calibration) -> str:
    """Plain text: the fitted costs with their uncertainty, every figure (published, model, error,
    leave-one-out error), the starts that ended elsewhere, hand-set costs at -+20%, and the validation
    figures apart ("predicted, not fit")."""
    width = max(len(r.figure) for r in (*cal.results, *cal.validation))
    agree = len(cal.starts) - len(cal.disagreeing_starts)
    lines = [
        f"{cal.model}: {len(cal.free)} free parameters fit to {len(cal.results)} figures "
        f"(best of {len(cal.starts)} neutral starts; {agree} reach the same costs within 1%)",
        *(f"  {p.section}.{p.key} = {cal.fitted[(p.section, p.key)]:.6g}"
          + _interval(cal.uncertainty.get((p.section, p.key))) for p in cal.free),
        f"  {'figure':<{width}}  {'published':>12}  {'model':>12}  {'error':>8}  {'LOO error':>9}",
    ]
    for r in cal.results:
        lines.append(
            f"  {r.figure:<{width}}  {r.published:>12.4g}  {r.model:>12.4g}  {r.error:>+8.1%}  {r.loo_error:>+9.1%}"
        )
    lines.append(f"  max |error| {cal.max_error:.1%}, max |LOO error| {cal.max_loo_error:.1%}")
    for s in cal.disagreeing_starts:
        costs = ", ".join(f"{p.key} {v:.4g}" for p, v in zip(cal.free, s.values))
        lines.append(f"  a start ended elsewhere: {costs} (max |error| {s.max_error:.1%})")
    if cal.sensitivity:
        lines.append("  hand-set costs (source assumed), worst |error| with each at -20% / +20%:")
        lines += [f"    {h.section}.{h.key} = {h.value:.6g}: {h.max_error_low:.1%} / {h.max_error_high:.1%}"
                  for h in cal.sensitivity]
    if cal.validation:
        lines.append(f"  validation figures: predicted, not fit ({len(cal.validation)})")
        lines += [f"  {r.figure:<{width}}  {r.published:>12.4g}  {r.model:>12.4g}  {r.error:>+8.1%}"
                  for r in cal.validation]
    return "\n".join(lines)


def _interval(bounds: tuple[float, float] | None) -> str:
    """' (1.2 .. 3.4 keeps the worst error within 1 point)' for a fitted cost's linearized range."""
    if bounds is None:
        return ""
    lo, hi = (f"{b:.4g}" for b in bounds)
    return f"   [{lo} .. {hi} keeps the worst |error| within 1 point, others refit]"
