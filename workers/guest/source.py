"""The `kernel` row source: the real kernel path, each chunk's points bound in one guest boot on the worker."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from workers.dataset import KERNEL
from workers.evaluate import error_rows
from workers.exceptions import SettingsError
from workers.model import Model
from workers.profiles import Profile
from workers.source import SHARED, Backend, Settings

from .exceptions import GuestKernelError
from .rows import kernel_rows
from .settings import KernelSettings

# A kernel chunk is one guest boot (6-18 s under TCG on 2 cores) and then about a second per 2 GiB namespace.
CHUNK_POINTS = 24


def rows(model: Model, params: pl.DataFrame, profile: Profile, settings: KernelSettings) -> pl.DataFrame:
    """The points bound in one guest boot on this node (workers.guest.rows); a failure becomes error rows."""
    try:
        out = kernel_rows(model, params, profile, settings)
    except Exception as e:  # noqa: BLE001 - a broken guest run must not lose the chunk
        out = error_rows(model, params.height, e)
    return pl.concat([params, out], how="horizontal")


def _load(table: dict, base_dir: Path | None) -> KernelSettings:
    """The [kernel] table; relative paths from the spec file's folder (else the current one)."""
    try:
        return KernelSettings.from_table(table, base_dir or Path.cwd())
    except GuestKernelError as e:
        raise SettingsError(str(e)) from None


def _plan(settings: KernelSettings, chunks: int) -> dict:
    return {"image": settings.image, "accel": settings.accel}


def _plan_text(k: dict, secs) -> str:
    """What the kernel rows of a plan will boot: the shared guest for the models without one of their own
    (KernelCheck.guest), each own guest in the model's words."""
    from workers import get_model

    guests = {m: get_model(m).kernel.guest for m in k.get("per_model", {})}
    own = {m: text for m, text in guests.items() if text}
    shared = [m for m, text in guests.items() if not text]
    parts = [f"{k['points']:,} points in {k['chunks']:,} chunks, not booted here"]
    if shared or not own:
        parts.append(f"{', '.join(shared) + ': ' if own else ''}each chunk boots {k['image']} once in a guest "
                     f"(accel {k['accel']}; 6-18 s under TCG on 2 cores), then binds its points one by one, about "
                     "a second per 2 GiB of namespace under TCG; the points the kernel under test cannot hold are "
                     "infeasible rows at once")
    parts += [f"{m}: {text}" for m, text in own.items()]
    return "; ".join(parts) + "."


def _model_inputs(model: Model) -> dict:
    """What else fixes a model's kernel rows: its KernelCheck's `inputs` (a guest of its own)."""
    return model.kernel.guest_inputs() if model.kernel is not None else {}


# A guest is one QEMU process on one CPU (TCG), so kernel chunks share a node like model chunks.
BACKEND = Backend(
    name=KERNEL, rows=rows, chunk_points=lambda model: CHUNK_POINTS, placement=SHARED, model_inputs=_model_inputs,
    settings=Settings(table="kernel", load=_load, identity=KernelSettings.identity, plan=_plan,
                      plan_text=_plan_text),
)
