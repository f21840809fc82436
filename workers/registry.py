"""The model registry: a plain dict from name to model object.

Adding a model is one new file in `workers/models/` and one line here.
`load_plugins` imports extra modules that call `register` (used by a spec's
`plugins` key, e.g. test-only models), on the driver and on every worker.
"""

from __future__ import annotations

import importlib

from .model import Model

MODELS: dict[str, Model] = {}

# The shipped models: each module defines `MODEL`.
SHIPPED_MODULES: tuple[str, ...] = ("workers.models.young", "workers.models.copy", "workers.models.memmap",
                                    "workers.models.pfnmap")


def register(model: Model) -> Model:
    """Add a model under its name; re-registering the same class is a no-op."""
    old = MODELS.get(model.name)
    if old is not None and type(old) is not type(model):
        raise ValueError(f"a different model is already registered as {model.name!r}")
    MODELS[model.name] = model
    return model


def load_plugins(modules: tuple[str, ...] | list[str]) -> None:
    """Import each module (each registers its models when imported)."""
    for name in modules:
        importlib.import_module(name)


def shipped_models() -> dict[str, Model]:
    """The models memsweep ships (not plugins registered at run time)."""
    return {m.name: m for m in (importlib.import_module(n).MODEL for n in SHIPPED_MODULES)}


def get_model(name: str) -> Model:
    try:
        return MODELS[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known: {sorted(MODELS)}") from None


for _name in SHIPPED_MODULES:
    register(importlib.import_module(_name).MODEL)
