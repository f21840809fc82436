"""The model registry: every model, found through the `memsweep.models` entry-point group.

memsweep's own models are entry points of its own distribution (pyproject.toml), found the same
way as a third-party package's (as xarray finds its backends): adding a model is a module with a
`MODEL` and one entry-point line. `MODELS` is a read-only mapping from name to model that discovers
the entry points on first use, not at import, so a broken plugin surfaces as one PluginError inside
the command that needed the models. Every model loaded is held to the contract (workers.contract);
two models of one name are refused, and so is a model that writes a column another model writes with
another dtype (a folder of both would not open as one dataset).

A spec's `plugins` key names modules to import on the driver and on every worker: models that are
not installed packages (test-only models). Each calls `register`, which checks its model the same way.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from .contract import check_model, one_line
from .exceptions import PluginError
from .model import Model

GROUP = "memsweep.models"
SHIPPED_DIST = "memsweep"  # the distribution whose entry points are the shipped models


@dataclass(frozen=True, slots=True)
class Plugin:
    """Where a model came from, as messages name it: an entry point (name, `module:attr` value, and
    the distribution that declares it when known) or a module imported for a spec's `plugins`."""

    name: str
    value: str = ""  # "module:attr" for an entry point; "" for a `plugins` module
    dist: str | None = None

    @property
    def is_entry_point(self) -> bool:
        return bool(self.value)

    def __str__(self) -> str:
        if not self.is_entry_point:
            return f"plugin module {self.name!r}"
        package = f" of package {self.dist!r}" if self.dist else ""
        return f"{GROUP} entry point {self.name!r} = {self.value!r}{package}"

    def advice(self) -> str:
        if not self.is_entry_point:
            return "fix the module or take it out of the spec's 'plugins'"
        if self.dist and _normal(self.dist) == SHIPPED_DIST:
            return "reinstall memsweep (pip install -e .)"
        return f"fix the plugin or uninstall it (pip uninstall {self.dist})" if self.dist else \
            "fix the plugin or uninstall its package"


def _normal(dist: str) -> str:
    return dist.lower().replace("_", "-").replace(".", "-")


def _error(plugin: Plugin, rule: str) -> PluginError:
    return PluginError(f"{plugin}: {rule} To go on: {plugin.advice()}.")


def _dist_name(ep: importlib.metadata.EntryPoint) -> str | None:
    dist = getattr(ep, "dist", None)
    return dist.metadata["Name"] if dist is not None else None


def entry_points() -> tuple[importlib.metadata.EntryPoint, ...]:
    """The installed `memsweep.models` entry points (the discovery the registry uses; tests replace it).

    PluginError when memsweep's own are missing: its package metadata is absent or predates them."""
    eps = tuple(importlib.metadata.entry_points(group=GROUP))
    if not any(_normal(_dist_name(ep) or "") == SHIPPED_DIST for ep in eps):
        raise PluginError(f"no {GROUP} entry points of memsweep itself are installed, so no shipped model can "
                          "be found: its package metadata is missing or older than its models; reinstall it "
                          "(pip install -e .).")
    return eps


def load_entry_point(ep: importlib.metadata.EntryPoint) -> tuple[Model, Plugin]:
    """The model an entry point names, held to the contract; PluginError naming the entry point."""
    plugin = Plugin(name=ep.name, value=ep.value, dist=_dist_name(ep))
    try:
        model = ep.load()
    except (Exception, SystemExit, KeyboardInterrupt) as e:  # noqa: BLE001 - whatever a plugin raises on import,
        # an exit or an interrupt too, is reported as its failure
        raise _error(plugin, f"it does not load ({type(e).__name__}: {one_line(e)}).") from None
    problem = check_model(model)
    if problem is None and ep.name != model.name:
        problem = f"the entry point's name must be the model's name {model.name!r} (got {ep.name!r})."
    if problem is not None:
        raise _error(plugin, problem)
    return model, plugin


def _add(table: dict[str, tuple[Model, Plugin]], model: Model, plugin: Plugin) -> None:
    """Put `model` in `table`; the same model again is a no-op, another of the same name is refused."""
    old = table.get(model.name)
    if old is not None and old[0] is model:
        return  # where it was found first stays its origin
    if old is not None and type(old[0]) is not type(model):
        raise PluginError(f"two plugins declare a model named {model.name!r}: {old[1]} and {plugin}. "
                          "Model names must be unique: uninstall one, or rename its model.")
    clash = _dtype_clash(model, [m for name, (m, _) in table.items() if name != model.name])
    if clash is not None:
        raise _error(plugin, clash)
    table[model.name] = (model, plugin)  # new, or the same class again (its module was reloaded)


def column_dtypes(model: Model) -> dict[str, object]:
    """Every param_* and metric_* column `model` writes -> its polars dtype."""
    return {**{a.column: a.dtype for a in model.axes}, **model.metric_dtypes}


def _dtype_clash(model: Model, others: list[Model]) -> str | None:
    """The rule `model` breaks when it writes a column another model writes with another dtype, else None:
    one column, one dtype across models, so that one scan of a sweep folder (polars' scan_parquet of
    **/*.parquet, a pyarrow dataset) reads every model's parts."""
    mine = column_dtypes(model)
    for other in others:
        for column, dtype in column_dtypes(other).items():
            if column in mine and mine[column] != dtype:
                return (f"column {column!r} must have one dtype in every model: model {other.name!r} writes it "
                        f"as {dtype} (got {mine[column]} in model {model.name!r}); give one of them another name.")
    return None


class Registry(Mapping[str, Model]):
    """name -> Model: the entry points' models, discovered on first use, and the registered ones."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._registered: dict[str, tuple[Model, Plugin]] = {}
        self._table: dict[str, tuple[Model, Plugin]] | None = None  # None until discovered

    def _loaded(self) -> dict[str, tuple[Model, Plugin]]:
        with self._lock:
            if self._table is None:
                table: dict[str, tuple[Model, Plugin]] = {}
                for ep in entry_points():
                    _add(table, *load_entry_point(ep))
                for model, plugin in self._registered.values():
                    _add(table, model, plugin)
                self._table = table  # only a whole, consistent discovery is kept
            return self._table

    def load(self) -> Registry:
        """Discover now (a command calls this first, so a broken plugin stops it before any work)."""
        self._loaded()
        return self

    def reload(self) -> None:
        """Forget the discovered entry points (e.g. after installing a plugin into this process's
        environment); the next lookup discovers them again. Registered models are kept."""
        with self._lock:
            self._table = None

    def register(self, model: Model, plugin: Plugin) -> None:
        """Add a model from `plugin` (a `plugins` module), held to the contract. Before discovery a clash
        with an entry point's model is found at discovery; after it, here."""
        problem = check_model(model)
        if problem is not None:
            raise _error(plugin, problem)
        with self._lock:
            if self._table is not None:
                _add(self._table, model, plugin)
            _add(self._registered, model, plugin)

    def plugin(self, name: str) -> Plugin:
        """Where the model `name` came from."""
        return self._loaded()[name][1]

    def __getitem__(self, name: str) -> Model:
        return self._loaded()[name][0]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())

    def __repr__(self) -> str:
        return f"<memsweep model registry: {sorted(self._table) if self._table is not None else 'not yet discovered'}>"


MODELS = Registry()


def register(model: Model) -> Model:
    """Add a model from a `plugins` module (held to the contract); the same model again is a no-op."""
    MODELS.register(model, Plugin(name=type(model).__module__))
    return model


def load_plugins(modules: tuple[str, ...] | list[str]) -> None:
    """Import each module (each registers its models when imported)."""
    for name in modules:
        importlib.import_module(name)


def shipped_models() -> dict[str, Model]:
    """The models memsweep ships: its own distribution's entry points (not third-party plugins, which
    are neither loaded nor checked here)."""
    table: dict[str, tuple[Model, Plugin]] = {}
    for ep in entry_points():
        if _normal(_dist_name(ep) or "") == SHIPPED_DIST:
            _add(table, *load_entry_point(ep))
    return {name: model for name, (model, _) in table.items()}


def get_model(name: str) -> Model:
    try:
        return MODELS[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known: {sorted(MODELS)}") from None
