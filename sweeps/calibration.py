"""`memsweep calibrate`: fit a profile's free costs and print every figure's error.

Against the published figures (default), or with `--from OUT/SWEEP` against a
sweep's measured rows (the measure backend), optionally holding some
namespace sizes out of the fit to see how well the profile predicts them.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import polars as pl
from pyarrow.fs import FileSelector

from workers import MODELS
from workers.calibrate import DEFAULT_STARTS, Calibration, FigureResult, calibrate, predict, validation_figures
from workers.profiles import Profile, dump_profile, load_profile
from workers.units import parse_size

from .exceptions import DatasetError, UsageError
from .store import exists, locate


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
    names = models or [m for m in MODELS if MODELS[m].figures()]
    for m in names:
        if m not in MODELS or not MODELS[m].figures():
            have = sorted(n for n in MODELS if MODELS[n].figures())
            raise UsageError(f"'--model' must be a model with published figures, one of {have} (got {m!r}).")
    return [(MODELS[m], MODELS[m].figures()) for m in names]


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
    for name in models or ["memmap", "pfnmap"]:
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
        profile = host_profile(profile, _facts(frame))
        jobs.append((model, fit_on, free))
    if not jobs:
        raise DatasetError(f"'--from' must be a sweep with measured memmap or pfnmap rows (got {sweep_dir!r}: none).")
    return jobs, held, profile


def _measured_rows(sweep_dir: str, model: str) -> pl.DataFrame | None:
    loc = locate(sweep_dir)
    folder = loc.path(f"model={model}")
    if not exists(loc, folder):
        return None
    parts = [i.path for i in loc.fs.get_file_info(FileSelector(folder)) if i.path.endswith(".parquet")]
    frame = pl.concat([pl.read_parquet(io.BytesIO(loc.fs.open_input_file(p).read())) for p in parts],
                      how="vertical_relaxed")
    frame = frame.filter((pl.col("source") == "measured") & (pl.col("status") == "ok")) if "source" in frame.columns \
        else frame.clear()
    return frame if frame.height else None


def _facts(frame: pl.DataFrame) -> dict[str, str]:
    """The measuring host's cache sizes from the env_caches provenance ("L1d 49152 B, L2 ..., L3 ... B")."""
    text = frame["env_caches"][0] if "env_caches" in frame.columns and frame.height else ""
    found = dict(re.findall(r"(L1d|L2|L3) (\d+|unknown) B", text or ""))
    return {"l1d_bytes": found.get("L1d", "unknown"), "l2_bytes": found.get("L2", "unknown"),
            "l3_bytes": found.get("L3", "unknown")}


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
