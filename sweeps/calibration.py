"""`memsweep calibrate`: fit a profile's free costs and print every figure's error.

Against the published figures (default), or with `--from OUT/SWEEP` against a
sweep's measured rows (the measure backend) of every model that declares a
measurement (workers.model.Measurement) and costs to fit, optionally holding
some namespace sizes out of the fit to see how well the profile predicts them.
A sweep's kernel rows with a count of the kernel's work (memmap's instructions
under TCG) fit that build's instructions per operation (KernelCheck.fitter),
which `--save` writes into the profile: modeled rows run with it price that
build and name it (kernel_build).
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import polars as pl

from workers import MODELS
from workers.calibrate import (
    DEFAULT_STARTS, LOO_STARTS, Calibration, FigureResult, calibrate, loo_text, predict, validation_figures,
    work_comparison,
)
from workers.dataset import KERNEL, MEASURED
from workers.dataset.folder import Location, at, read_manifest, scan_parts
from workers.dataset.parts import checked_parts
from workers.exceptions import SweepFolderError
from workers.fitcheck import cost_orders, impossible
from workers.guest.settings import manifest_build
from workers.hooks import resolve
from workers.dataset import unit_of
from workers.interval import RATIOS, coverage, stated, stored
from workers.profiles import RANGE, Profile, dump_profile, load_profile
from workers.units import parse_size

from .exceptions import DatasetError, FitError, UsageError


def run_calibration(profile_name: str, *, models: list[str] | None, as_json: bool, save: str | None,
                    source: str | None = None, holdout: list[str] | None = None, statistic: str | None = None,
                    starts: int = DEFAULT_STARTS, loo_starts: int = LOO_STARTS,
                    fix: list[str] | None = None) -> int:
    """Calibrate each model to its published figures, or (`source`) to a sweep's measured rows; `fix`: costs
    ("section.key") kept at the profile's values. Costs the figures do not identify, or that no machine can
    have, are warned about; with `save` they are refused (FitError) and nothing is written."""
    start = load_profile(profile_name)
    measured, builds = None, []
    if source:
        builds = build_fits(source, models)
        measured = measured_jobs(source, start, models, holdout or [], statistic or "min", required=not builds)
        jobs, held, profile = (measured.jobs, measured.held, measured.profile) if measured else ([], {}, start)
        if measured is None and (holdout or statistic):
            raise UsageError(f"'{'--holdout' if holdout else '--statistic'}' chooses how measured rows are fit, "
                             f"and {source} has kernel rows only.")
    else:
        for flag, given in (("--holdout", holdout), ("--statistic", statistic)):
            if given:
                raise UsageError(f"'{flag}' goes with '--from': it chooses how measured rows are fit.")
        jobs = [(model, figures, model.calibration.free_params) for model, figures in published_jobs(models)]
        held, profile = {}, start
    results, predictions = _fit_all(_unfixed(jobs, fix or [], source), profile, held, (starts, loo_starts), source)
    profile = results[-1].profile if results else profile  # later models keep earlier fits (own sections)
    _print(results, predictions, as_json, builds)
    problems = "\n".join(filter(None, [fit_problems(results) if results else "",
                                        *(f"{b.build}'s instructions: {b.problem}" for b in builds if b.problem)]))
    if problems and save:
        raise FitError(f"'--save' must get a fit whose costs are identified and possible; not writing {save}:\n"
                       + problems)
    if problems:
        print(f"memsweep calibrate: warning: {problems}", file=sys.stderr)
    if save:
        fitted = saved_profile(profile, start, results, save, measured) if results else start
        Path(save).write_text(dump_profile(with_builds(fitted, builds, source, save if not results else "")))
        if not as_json:
            print(f"fitted profile written to {save}")
    return 0


def build_fits(sweep_dir: str, models: list[str] | None) -> list:
    """Each kernel build's instruction costs fit to a sweep's kernel rows (KernelCheck.fitter: memmap's
    work.py costs, for a model whose `work` metrics a guest counted), one per model and build."""
    loc, parts = _checked(sweep_dir)
    out = []
    for name in models or sorted(MODELS):
        model = MODELS.get(name)
        check = getattr(model, "kernel", None)
        if check is None or check.fitter is None or not parts.get(name):
            continue
        lf = scan_parts(loc.fs, parts[name])
        schema = lf.collect_schema()
        if "source" not in schema or not all(m in schema for m in check.work):
            continue
        rows = lf.filter((pl.col("source") == KERNEL) & (pl.col("status") == "ok")
                         & pl.all_horizontal(pl.col(m).is_not_null() for m in check.work)).collect()
        if "kernel_build" not in schema:  # before schema 9: the build the manifest's spec booted
            rows = rows.with_columns(pl.lit(manifest_build(read_manifest(loc)) or None, dtype=pl.Utf8)
                                     .fill_null(pl.col("env_guest_kernel")).alias("kernel_build"))
        for _, group in sorted(rows.group_by("kernel_build"), key=lambda kv: str(kv[0])):
            out.append(check.fit_build(group))
    return out


def with_builds(profile: Profile, builds: list, source: str | None, save: str) -> Profile:
    """`profile` with each build fit's table (its section: the build's instructions per operation), and a
    description that says so; `save`: the file's name names the profile when nothing else was fit."""
    if not builds:
        return profile
    sections = {**profile.sections, **{b.section: b.entries for b in builds}}
    today = datetime.now(timezone.utc).date().isoformat()
    what = "; ".join(f"the instructions per operation of build {b.build} fit by memsweep calibrate on {today} UTC "
                     f"to {source}'s kernel rows (worst leave-one-out error {b.loo_error:.2%})" for b in builds)
    if save:  # the other costs, their figures and refits are the starting profile's, unchanged
        return replace(profile, name=Path(save).stem, sections=sections,
                       description=f"{what}. Every other entry is {profile.name}'s "
                                   f"({profile.description or 'no description'})")
    return replace(profile, sections=sections, description=f"{profile.description} And {what}.")


def _fit_all(jobs, profile: Profile, held: dict, starts: tuple[int, int], source: str | None):
    """Calibrate each job in turn (a later model starts from the earlier fits: they own other sections);
    the calibrations, and the held-out figures predicted by the fitted profile. `starts`: neutral starts of
    the fit and of each leave-one-out refit."""
    results: list[Calibration] = []
    predictions: list[FigureResult] = []
    for model, figures, free in jobs:
        validation = () if source else validation_figures(model, profile)
        cal = calibrate(model, profile, figures, free, starts=starts[0], loo_starts=starts[1], validation=validation)
        profile = cal.profile
        results.append(cal)
        if held.get(model.name):
            predictions += _predict(model, held[model.name], profile)
    return results, predictions


def _print(results: list[Calibration], predictions: list[FigureResult], as_json: bool, builds: list) -> None:
    if as_json:  # each figure row carries its model's count of the costs that move the figures
        print(json.dumps([{**r.to_dict(), "held_out": False, "count": cal.count.to_dict() if cal.count else None}
                          for cal in results for r in (*cal.results, *cal.validation)]
                         + [{**r.to_dict(), "held_out": True} for r in predictions]
                         + [{"build": b.build, "section": b.section, "loo_error": b.loo_error, "problem": b.problem,
                             "costs": {k: getattr(v, "value", v) for k, v in b.entries.items()}} for b in builds],
                         indent=1))
        return
    for b in builds:
        print(format_build(b))
    for cal in results:
        print(format_calibration(cal))
        print(format_coverage(cal))
        work = format_work(cal)
        if work:
            print(work)
        check = MODELS[cal.model].calibration.crosscheck
        if check:
            print("\n".join(f"  {line}" for line in resolve(check)(cal.profile)))
    if predictions:
        print(format_holdout(predictions))


def _unfixed(jobs: list[tuple], fix: list[str], source: str | None) -> list[tuple]:
    """The jobs without the `--fix` costs, each with more figures than costs to fit."""
    names = sorted({f"{p.section}.{p.key}" for _, _, free in jobs for p in free})
    for name in fix:
        if name not in names:
            raise UsageError(f"'--fix' must be one of the costs this calibration fits, {names} (got {name!r}).")
    out = []
    for model, figures, free in jobs:
        free = tuple(p for p in free if f"{p.section}.{p.key}" not in fix)
        if not free:
            raise UsageError(f"'--fix' must leave {model.name} a cost to fit (got all of them: {fix}).")
        if len(figures) <= len(free):
            where = f"{source} has" if source else "there are"
            raise DatasetError(
                f"{where} {len(figures)} {'measured ' if source else ''}{model.name} figures to fit {len(free)} "
                "costs; measure more sizes or strategies, or fit fewer costs ('--fix SECTION.KEY'): a fit needs "
                "more figures than parameters."
            )
        out.append((model, figures, free))
    return out


FIX_ADVICE = ("To proceed: measure more points (other sizes, struct page sizes or strategies), fit fewer costs "
              "('--fix SECTION.KEY' keeps one at the profile's value), with '--from' hold fewer sizes out "
              "('--holdout'), or narrow the costs' bounds in a profile of your own ('--profile FILE').")


def fit_problems(results: list[Calibration]) -> str:
    """Why this fit is not fit to save, one line each: the costs each model's figures do not identify, and
    every entry of the fitted profile no machine can have (workers.fitcheck); then how to proceed. Empty
    when there is nothing to say."""
    lines = []
    for cal in results:
        ident = cal.identification
        for p in (p for p in cal.free if ident and p.key in ident.unidentified):
            lo, hi = cal.uncertainty[(p.section, p.key)]
            lines.append(f"  '{p.section}.{p.key}' must be identified by the fitted points "
                         f"(got {cal.fitted[(p.section, p.key)]:.4g}, free to move over [{lo:.3g} .. {hi:.3g}] for "
                         f"one more point of error: {cal.model}'s {len(cal.results)} figures carry "
                         f"{ident.independent} independent numbers for {len(cal.free)} fitted costs).")
    lines += [f"  {problem}" for problem in impossible(results[-1].profile, cost_orders(MODELS.values()))]
    return "\n".join(["this fit has costs that cannot be trusted:", *lines, FIX_ADVICE]) if lines else ""


def saved_profile(profile: Profile, start: Profile, results: list[Calibration], save: str,
                  measured: Measured | None) -> Profile:
    """The fitted profile as `--save` writes it: named for the host that measured the rows (else for the
    file), described by what it was fit to, when (UTC date) and which costs."""
    today = datetime.now(timezone.utc).date().isoformat()
    fitted = "; ".join(f"{cal.model}: " + ", ".join(f"{p.section}.{p.key}" for p in cal.free) for cal in results)
    counts = ", ".join(f"{len(cal.results)} {cal.model}" for cal in results)
    rest = f"Every other entry is {start.name}'s ({start.description or 'no description'})."
    if measured is None:
        loo = {r.figure: r.loo_range for cal in results for r in cal.results}
        refits = {r.figure: r.refits for cal in results for r in cal.results if r.refits}
        refits |= {name: fits for cal in results for name, fits in cal.spans.items()}
        return Profile(name=Path(save).stem, sections=profile.sections, validation=profile.validation,
                       description=f"Costs fit by memsweep calibrate on {today} UTC to the published figures "
                                   f"({counts}): {fitted}. {rest}", leave_one_out=loo, refits=refits)
    held = f"; held out: {', '.join(measured.holdout)}" if measured.holdout else ""
    machine = ", ".join(f"{cpu or 'unknown CPU'} (host {host or 'unknown'})" for host, cpu in measured.hosts)
    names = {host for host, _ in measured.hosts if host}
    return _relabelled(Profile(
        name=names.pop() if len(names) == 1 else Path(save).stem, sections=profile.sections, validation=(),
        description=f"{machine or 'This host'}: costs fit by memsweep calibrate on {today} UTC to the measured rows "
                    f"of {measured.sweep} ({counts} points, {measured.statistic}{held}): {fitted}. {rest}",
    ), results, f"{machine or 'this host'} on {today}")


def _relabelled(profile: Profile, results: list[Calibration], where: str) -> Profile:
    """`profile` with the `machine` text of each section a fit touched (the models' own, and the free costs')
    saying where and which costs were fit. (The starting profile's validation figures are already dropped:
    they were published on other machines.)"""
    sections = {s: dict(entries) for s, entries in profile.sections.items()}
    for cal in results:
        keys = ", ".join(f"{p.section}.{p.key}" for p in cal.free)
        for section in {cal.model} | {p.section for p in cal.free}:
            if isinstance(sections.get(section, {}).get("machine"), str):
                sections[section]["machine"] = (f"{where}: memsweep calibrate fit {keys} to measured rows (see the "
                                                "description); every other entry is the starting profile's")
    return Profile(name=profile.name, description=profile.description, sections=sections,
                   validation=profile.validation)


def published_jobs(models: list[str] | None) -> list[tuple]:
    """(model, figures) of every model that has published figures and profile costs to fit to them
    (a plugin model whose costs are its own defaults, with no free parameters, is not calibrated)."""
    have = sorted(n for n, m in MODELS.items() if m.calibration.figures and m.calibration.free_params)
    for m in models or have:
        if m not in have:
            raise UsageError(f"'--model' must be a model with published figures and free parameters, one of {have} "
                             f"(got {m!r}).")
    return [(MODELS[m], MODELS[m].calibration.figures) for m in models or have]


@dataclass(frozen=True, kw_only=True)
class Measured:
    """What `--from` fits: (model, figures, free parameters) per model, the held-out figures per model,
    the profile to fit (with the host's cache sizes), and where the rows come from: the hosts that
    measured them ((env_host, env_cpu_model) pairs), the sweep folder, the statistic and the held-out sizes."""

    jobs: list[tuple]
    held: dict[str, list]
    profile: Profile
    hosts: tuple[tuple[str, str], ...]
    sweep: str
    statistic: str
    holdout: tuple[str, ...]


def measured_jobs(sweep_dir: str, profile: Profile, models: list[str] | None, holdout: list[str],
                  statistic: str = "min", required: bool = True) -> Measured | None:
    """The models to fit from a sweep's measured rows (`statistic` of each point's repeats), with the
    profile to fit (the fit starts from neutral points, never from its values) and the rows' provenance."""
    from workers.measure.fit import STATISTICS, figures_from_measured, host_profile

    sizes = set()
    for text in holdout:
        try:
            sizes.add(parse_size(text))
        except ValueError as e:
            raise UsageError(f"'--holdout' must be a namespace size such as '64GiB' ({e}).") from None
    jobs, held, hosts = [], {}, set()
    loc, parts = _checked(sweep_dir)
    for name in models or measured_models():
        frame = _measured_rows(loc, parts.get(name))
        if frame is None:
            continue
        model = MODELS[name]
        figures = figures_from_measured(model, frame, statistic=statistic)
        fit_on = [f for f in figures if f.params["namespace_size"] not in sizes]
        held[name] = [f for f in figures if f.params["namespace_size"] in sizes]
        profile = host_profile(profile, _facts(frame), MODELS.values())
        free = model.calibration.free_for_measured
        jobs.append((model, fit_on, free))
        hosts |= _hosts(frame)
    if not jobs and not required:
        return None
    if not jobs:
        raise DatasetError(f"'--from' must be a sweep with measured rows of a model that declares a measurement, "
                           f"or kernel rows with a count of the kernel's work (got {sweep_dir!r}: none).")
    return Measured(jobs=jobs, held=held, profile=profile, hosts=tuple(sorted(hosts)), sweep=sweep_dir,
                    statistic=STATISTICS[statistic], holdout=tuple(holdout))


def measured_models() -> list[str]:
    """The models a fit to measured rows calibrates by default: those that declare a measurement
    (a user-space analog to run) and free parameters for it, by name."""
    return sorted(n for n, m in MODELS.items()
                  if m.measurement is not None and m.measurement.measurable
                  and m.calibration.free_for_measured)


def _checked(sweep_dir: str) -> tuple[Location, dict[str, list[str]]]:
    """The sweep folder of --from and its parts, once they match its manifest (workers.dataset.parts)."""
    try:
        loc = at(sweep_dir, field="--from")
        manifest = read_manifest(loc)
        if manifest is None:
            raise SweepFolderError(f"'--from' must be a sweep folder written by 'memsweep run' (got {sweep_dir!r}: "
                                   "no manifest there).")
        return loc, checked_parts(loc, manifest)
    except SweepFolderError as e:
        raise UsageError(str(e)) from None


def _measured_rows(loc: Location, parts: list[str] | None) -> pl.DataFrame | None:
    """The ok measured rows of one model's `parts` (None when it has none)."""
    if not parts:
        return None
    lf = scan_parts(loc.fs, parts)
    if "source" not in lf.collect_schema():  # schema 1: modeled rows only
        return None
    frame = lf.filter((pl.col("source") == MEASURED) & (pl.col("status") == "ok")).collect()
    return frame if frame.height else None


CACHE_FACTS = ("l1d_bytes", "l2_bytes", "l3_bytes")
LEGACY_CACHES = re.compile(r"(L1d|L2|L3) (\d+) B")  # schema 2's env_caches text: "L1d 49152 B, L2 ..."


def _hosts(frame: pl.DataFrame) -> set[tuple[str, str]]:
    """The (env_host, env_cpu_model) pairs of the hosts that measured these rows ("" where unknown)."""
    cols = [pl.col(c).cast(pl.Utf8).fill_null("") if c in frame.columns else pl.lit("").alias(c)
            for c in ("env_host", "env_cpu_model")]
    return set(frame.select(cols).unique().rows())


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
    return [FigureResult(figure=f.id, published=f.published, model=float(v), error=float(f.error(v)),
                         loo_error=float(f.error(v)), unit=f.unit) for f, v in zip(figures, values)]


def format_build(b) -> str:
    """Plain text: a build's instructions per operation fit to its kernel rows, each configuration's
    leave-one-out error (predicted by the fit to the others) and the worst of them."""
    return "\n".join([f"instructions of build {b.build}: {b.costs.fit}",
                      *(f"  {line}" for line in b.lines),
                      f"  worst leave-one-out error {b.loo_error:.2%}: a count of this build at a configuration no fit "
                      "saw has been this far off"])


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
    unidentified = cal.identification.unidentified if cal.identification else ()
    lines = [
        f"{cal.model}: {len(cal.free)} free parameters fit to {len(cal.results)} figures "
        f"(best of {len(cal.starts)} neutral starts; {agree} reach the same costs within 1%)",
        *(f"  {p.section}.{p.key} = {cal.fitted[(p.section, p.key)]:.6g}"
          + ("   (not identified by these points)" if p.key in unidentified
             else _interval(cal.uncertainty.get((p.section, p.key)))) for p in cal.free),
        *_identification(cal),
        f"  {'figure':<{width}}  {'published':>12}  {'model':>12}  {'error':>8}  {'LOO error':>15}",
    ]
    for r in cal.results:
        lines.append(f"  {r.figure:<{width}}  {published_text(r):>12}  {r.model:>12.4g}  {r.error:>+8.1%}  "
                     f"{loo_text(r.loo_range):>15}")
    lines.append(f"  max |error| {cal.max_error:.1%}, max |LOO error| {cal.max_loo_error:.1%}")
    for r in (r for r in cal.results if r.loo_free and r.loo_low != r.loo_high):
        lines.append(f"  {r.figure}: the other {len(cal.results) - 1} figures leave {', '.join(r.loo_free)} free; "
                     f"the fits to them that are as good as the best predict it at {loo_text(r.loo_range)}")
    for s in cal.disagreeing_starts:
        costs = ", ".join(f"{p.key} {v:.4g}" for p, v in zip(cal.free, s.values))
        lines.append(f"  a start ended elsewhere: {costs} (max |error| {s.max_error:.1%})")
    if cal.sensitivity:
        lines.append("  hand-set costs (assumed, or fit elsewhere and held), worst |error| with each at -20% / +20%:")
        lines += [f"    {h.section}.{h.key} = {h.value:.6g}: {h.max_error_low:.1%} / {h.max_error_high:.1%}"
                  for h in cal.sensitivity]
    for name, (low, high) in cal.span_errors.items():
        lines.append(f"  {name.removeprefix(RANGE)} assumed within {_range_text(cal, name)}: the fits at its ends "
                     f"reach a worst |error| of {low:.1%} and {high:.1%}; every answer spans them")
    if cal.validation:
        lines.append(f"  validation figures: predicted, not fit ({len(cal.validation)})")
        lines += [f"  {r.figure:<{width}}  {published_text(r):>12}  {r.model:>12.4g}  {r.error:>+8.1%}"
                  for r in cal.validation]
    if any(r.bound != "=" for r in (*cal.results, *cal.validation)):
        lines.append("  a figure marked >= is a lower bound (\"50%+\"): its error counts only how far the model "
                     "falls below it")
    return "\n".join(lines)


def _range_text(cal: Calibration, name: str) -> str:
    section, key = name.removeprefix(RANGE).split(".", 1)
    lo, hi = cal.profile.sections[section][key].range
    return f"[{lo:.6g}, {hi:.6g}]"


def format_coverage(cal: Calibration) -> str:
    """How often the figures fall inside the error bars the rows carry (workers.interval.coverage()), per kind
    of figure, and the rate the bars claim."""
    profile = replace(cal.profile, leave_one_out={r.figure: r.loo_range for r in cal.results},
                      refits={**{r.figure: r.refits for r in cal.results if r.refits}, **cal.spans})
    held = coverage(MODELS[cal.model], profile)
    if not held:
        return f"  error bars: none ({stated(MODELS[cal.model], profile).basis})"
    state = stated(MODELS[cal.model], profile)
    figures = MODELS[cal.model].calibration.figures
    own = dict.fromkeys([*(f.metric for f in figures if f.bound == "="),  # the kinds with figures, then ratios
                         *(m for m in state.n if unit_of(m) in RATIOS and m not in {f.metric for f in figures})])
    kinds = {m.removeprefix("metric_"): (state.rate(m), state.n[m]) for m in own if state.rate(m) is not None}
    claim = "; ".join((f"{m} {rate:.0%}" if n > 1 else f"{m} no rate") +
                      f" ({n} held out, {_sides(state.sides[f'metric_{m}'])})" for m, (rate, n) in kinds.items())
    lines = [f"  error bars claim that a figure no fit saw falls inside at (n - 1) / (n + 1) of the held-out figures "
             f"of its kind or more (between the least and the largest of n signed residuals, workers/interval.py): "
             f"{claim}; any other answer by all of its model's figures; checked:"] if kinds else \
        ["  error bars (the validation figures' largest error; no refits recorded): checked:"]
    held += stored(MODELS[cal.model], profile)
    for use, what in (("fit", "fit figures, each left out of its own bar"),
                      ("validation", "validation figures, never fit, against the bar at their point"),
                      ("stored", "fit figures against the bar stored at their point (the fit saw them)")):
        some = [h for h in held if h.use == use]
        if some:
            inside = sum(h.inside for h in some)
            lines.append(f"    {what}: {inside} of {len(some)} inside ({inside / len(some):.0%})")
            lines += [f"      outside: {h.figure} {h.bound if h.bound != '=' else ''}{h.published:.4g} against "
                      f"[{h.low:.4g}, {h.high:.4g}]" for h in some if not h.inside]
    return "\n".join(lines)


def _sides(factors: tuple[float, float]) -> str:
    """A bar's two factors as the errors they stand for: "answer -12.7%/+14.2%"."""
    low, high = factors
    return f"answer {low - 1:+.1%}/{high - 1:+.1%}"


def format_work(cal: Calibration) -> str:
    """Where compute binds (Calibration.work), each variant's modeled speedup beside the kernel's own work:
    the speedup follows the in-core cycles of the kernel's code, which follow its instructions unless the
    cycles per instruction differ (workers.models.incore)."""
    model = MODELS[cal.model]
    point, rows = work_comparison(model, cal.profile)
    if not rows:
        return ""
    cmp = model.report.comparison
    where = ", ".join(f"{k} {v}" for k, v in point.items())
    metric = model.calibration.work.work.removeprefix("metric_").replace("_", " ")
    width = max(len(r.variant) for r in rows)
    lines = [f"  at {where}, over {cmp.baseline} (modeled time; its in-core part, the kernel's cycles; the "
             f"kernel's {metric}):"]
    lines += [f"    {r.variant:<{width}}  time {r.speedup:.2f}x  cycles {r.compute:.2f}x  {metric} {r.work:.2f}x"
              f"  ({r.dominant} binds)" for r in rows]
    return "\n".join(lines)


def published_text(r: FigureResult) -> str:
    """A published figure as printed: its value, marked ">=" or "<=" where it is a bound."""
    return f"{'' if r.bound == '=' else r.bound}{r.published:.4g}"


def _identification(cal: Calibration) -> list[str]:
    """How many independent numbers the figures carry for the fitted costs, and the costs they leave free."""
    ident = cal.identification
    if ident is None:
        return []
    lines = [f"  the {len(cal.results)} figures carry {ident.independent} independent numbers (singular values "
             f"above 1% of the largest) for {len(cal.free)} fitted costs"]
    if ident.unidentified:
        lines.append(f"  not identified by these points: {', '.join(ident.unidentified)}")
    return lines + _count(cal)


def _count(cal: Calibration) -> list[str]:
    """The costs that move the figures (fitted, and hand-set ones whose -20% / +20% moves the worst error by
    more than the threshold) against the independent numbers the figures carry about them all."""
    c = cal.count
    if c is None:
        return []
    values = ", ".join(f"{v:.3g}" for v in c.singular_values)
    lines = [f"  {c.costs} costs move the figures ({len(c.fitted)} fitted, {len(c.hand_set)} hand-set); the figures "
             f"carry {c.independent} independent numbers (singular values {values}; a hand-set cost moves them "
             f"when -20% or +20% of it moves the worst |error| by more than {c.threshold:.0%})"]
    if c.hand_set:
        lines.append(f"  hand-set costs that move the figures: {', '.join(c.hand_set)}")
    if c.over:
        lines.append(f"  more costs move the figures than they carry independent numbers ({c.costs} > "
                     f"{c.independent}): a hand-set cost that a figure pins is a fitted cost; take it from a "
                     "datasheet, fit it, or fit fewer costs")
    return lines


def _interval(bounds: tuple[float, float] | None) -> str:
    """' (1.2 .. 3.4 keeps the worst error within 1 point)' for a fitted cost's linearized range."""
    if bounds is None:
        return ""
    lo, hi = (f"{b:.4g}" for b in bounds)
    return f"   [{lo} .. {hi} keeps the worst |error| within 1 point, others refit]"
