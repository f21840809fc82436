"""The `kernel` row source's compute step: a chunk's points bound as namespaces in one guest boot.

`kernel_rows(model, points, profile, settings)` asks the model's KernelCheck (workers.model) which points
the kernel under test can hold and as which namespace, boots the kernel once for all of them
(workers.guest.runner), and reads each ok result back into the model's metric columns. A point the
planner rules out is infeasible with its reason and never booted; a bind the kernel refuses is
infeasible with the kernel's message; a guest that dies or hangs gives error rows with its console's last
lines. Every row the guest ran carries its release, command line and accelerator (GUEST_COLUMNS); a row
the planner ruled out has them null. The series' build's rows are read against its base and Debian's
kernel of the same source (KernelSettings.references): each booted once more, binding each ok point's
namespace on the slow path.
"""

from __future__ import annotations

import dataclasses
import statistics

import polars as pl

from workers.dataset import BUILD_COLUMNS, DTYPES, GUEST_COLUMNS, MEASURE_COLUMNS, REFERENCE_COLUMNS
from workers.model import STATUS_ERROR, STATUS_INFEASIBLE, STATUS_OK, Model
from workers.profiles import Profile

from . import arm64, devmem
from .exceptions import GuestKernelError, GuestSetupError
from .records import GuestConfig
from .runner import run_guest
from .settings import KernelSettings

BOOTS = "boots"  # a row's values: each boot's value of the sampled metric


def kernel_rows(model: Model, points: pl.DataFrame, profile: Profile, settings: KernelSettings) -> pl.DataFrame:
    """Rows ["status", "reason", *model.metric_dtypes, *MEASURE_COLUMNS, *REFERENCE_COLUMNS, kernel_build,
    *GUEST_COLUMNS] for `points`, same height and order; the measure_* columns summarize the check's
    `sampled` metric over the boots (`settings.boots`; a boot's value is the median of its binds, the
    reader's); kernel_base and kernel_stock hold its value on the kernels a patched build is read against
    (settings.references); kernel_build names the build booted (settings.build()). `profile` is unused: a
    kernel row is what the kernel did, whatever the costs."""
    n = points.height
    status, reason = [STATUS_INFEASIBLE] * n, [""] * n
    values: list[dict] = [{} for _ in range(n)]
    guest: list[dict] = [{} for _ in range(n)]  # the guest's columns: only on rows a guest ran
    if model.kernel is None:
        reason = [f"model {model.name!r} declares no kernel check (workers.model.KernelCheck)"] * n
        return _frame(model, status, reason, values, guest)
    plans = model.kernel.plan(points, settings)
    own = next((OWN_GUESTS[type(c)] for c in plans if type(c) in OWN_GUESTS), None)
    if own is not None:
        return _own_rows(model, points, plans, *own, settings.boots)
    todo = [(i, c) for i, c in enumerate(plans) if isinstance(c, GuestConfig)]
    for i, c in enumerate(plans):
        if not isinstance(c, GuestConfig):
            reason[i] = c
    rows = points.to_dicts()
    build = settings.build() if todo else None
    for boot in range(settings.boots if todo else 0):
        try:
            run = run_guest(settings.kernel(), [c for _, c in todo], accel=settings.accel,
                            boot_timeout_s=settings.boot_timeout_s)
        except (GuestKernelError, GuestSetupError) as e:  # this node cannot boot it: every planned row says why
            for i, _ in todo:
                status[i], reason[i] = STATUS_ERROR, f"{type(e).__name__}: {e}" + _of(boot, settings.boots)
            return _frame(model, status, reason, values, guest)
        booted = {"env_guest_kernel": run.release, "env_guest_cmdline": run.cmdline, "env_accel": run.accel,
                  "kernel_build": build}
        for (i, _), r in zip(todo, run.results):
            if boot and status[i] != STATUS_OK:  # a bind the first boot refused: its reason stands
                continue
            if r.status != STATUS_OK:
                status[i], reason[i], guest[i], values[i] = r.status, (r.reason or "") + _of(boot, settings.boots), \
                    booted, {}
                continue
            status[i], guest[i] = STATUS_OK, booted
            values[i] = _boot(model, values[i], model.kernel.read(rows[i], r))
    ok = [(i, c) for i, c in todo if status[i] == STATUS_OK]
    for col, ref in settings.reference_settings().items() if ok else ():
        for i, v in _reference(model, ref, ok, rows).items():
            values[i][col] = v
    return _frame(model, status, reason, values, guest)


# Guests of a model's own, by the configuration type its planner returns: the runner (configurations -> per
# configuration a result with its `release` and `build`, or why it failed) and the guest's command line.
OWN_GUESTS = {arm64.ReclaimConfig: (arm64.run_reclaims, arm64.CMDLINE),
              devmem.MapConfig: (devmem.run_maps, devmem.CMDLINE)}


def _own_rows(model: Model, points: pl.DataFrame, plans: list, runner, cmdline: str, boots: int) -> pl.DataFrame:
    """Kernel rows of points a model's own guest runs (the arm64 reclaim probe, the x86 /dev/mem probe);
    [kernel]'s image, base and references are the pmem guest's and play no part. A model whose check samples a
    metric (instructions) runs `boots` times, each run a sample of it (the first run's counts stand: they
    repeat); one whose rows are all exact counts runs once. A result the reader turns down (a string: the
    kernel made another layout than the point's) makes the row infeasible with it."""
    n = points.height
    status, reason = [STATUS_INFEASIBLE] * n, [c if isinstance(c, str) else "" for c in plans]
    values: list[dict] = [{} for _ in range(n)]
    guest: list[dict] = [{} for _ in range(n)]
    todo = [i for i, c in enumerate(plans) if not isinstance(c, str)]
    rows = points.to_dicts()
    for boot in range(boots if model.kernel.sampled else 1):
        for i, run in zip(todo, runner([plans[i] for i in todo])):
            if boot and status[i] != STATUS_OK:  # what the first run said of this point stands
                continue
            if isinstance(run, str):
                status[i], reason[i], values[i] = STATUS_ERROR, run + _of(boot, boots), {}
                continue
            got = model.kernel.read(rows[i], run)
            if isinstance(got, str):
                status[i], reason[i] = STATUS_INFEASIBLE, got
            else:
                status[i], values[i] = STATUS_OK, _boot(model, values[i], got)
            guest[i] = {"env_guest_kernel": run.release, "env_guest_cmdline": cmdline, "env_accel": "tcg",
                        "kernel_build": run.build}
    return _frame(model, status, reason, values, guest)


def _reference(model: Model, ref: KernelSettings, ok: list[tuple[int, GuestConfig]], rows: list[dict]) -> dict:
    """Each ok point's sampled metric on a reference kernel (its base, the distribution's kernel), one boot:
    the point's namespace bound on the slow path (points that differ only in strategy are one namespace).
    A namespace the reference kernel refuses, or a boot that fails, leaves its points' values null: the
    kernel row itself stands."""
    configs = {i: dataclasses.replace(c, strategy=None) for i, c in ok}
    distinct = list(dict.fromkeys(configs.values()))
    try:
        run = run_guest(ref.kernel(), distinct, accel=ref.accel, boot_timeout_s=ref.boot_timeout_s)
    except (GuestKernelError, GuestSetupError):
        return {}
    found = {c: r for c, r in zip(distinct, run.results) if r.status == STATUS_OK}
    sampled = model.kernel.sampled
    return {i: model.kernel.read(rows[i], found[c]).get(sampled) for i, c in configs.items() if c in found}


def _of(boot: int, boots: int) -> str:
    return f" (boot {boot + 1} of {boots})" if boots > 1 else ""


def _boot(model: Model, before: dict, now: dict) -> dict:
    """A row's values after one more boot: the first boot's, with the sampled metric's boots collected
    (BOOTS: each boot's own value of it, the median of that boot's binds) and the metric the median of
    them (statistics.median_low: a value a boot measured)."""
    sampled = model.kernel.sampled
    boots = [*before.get(BOOTS, []), *([now[sampled]] if now.get(sampled) is not None else [])]
    out = {**(before or now), BOOTS: boots}
    if boots:
        out[sampled] = statistics.median_low(boots)
    return out


def _frame(model: Model, status: list, reason: list, values: list[dict], guest: list[dict]) -> pl.DataFrame:
    cols: dict[str, pl.Series] = {
        "status": pl.Series(status, dtype=pl.Utf8),
        "reason": pl.Series([r or None for r in reason], dtype=pl.Utf8),
    }
    for c, dt in model.metric_dtypes.items():
        cols[c] = pl.Series([v.get(c) for v in values], dtype=dt)
    samples = [_samples(v.get(BOOTS) or []) for v in values]
    for c in MEASURE_COLUMNS:
        cols[c] = pl.Series([s.get(c) for s in samples], dtype=DTYPES[c])
    for c in REFERENCE_COLUMNS:
        cols[c] = pl.Series([None if v.get(c) is None else float(v[c]) for v in values], dtype=DTYPES[c])
    for c in (*BUILD_COLUMNS, *GUEST_COLUMNS):
        cols[c] = pl.Series([g.get(c) for g in guest], dtype=pl.Utf8)
    return pl.DataFrame(cols)


def _samples(values: list) -> dict:
    """The measure_* columns of a row's boots (each boot's value of the KernelCheck's `sampled` metric);
    none without."""
    if not values:
        return {}
    return {"measure_repeats": len(values), "measure_min": float(min(values)),
            "measure_median": float(statistics.median(values)), "measure_max": float(max(values))}
