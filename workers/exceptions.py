"""Errors raised by the workers package, and the root of every memsweep error; each derives from MemsweepError
and the nearest builtin."""


class MemsweepError(Exception):
    """What memsweep raises on purpose: a message a person can act on, never a traceback. The command line
    prints it and exits with `exit_status`: 2 for bad input (a spec, an argument, a folder, a profile, a
    plugin), 1 for a machine that cannot do the work (RayStartError, GuestSetupError, MeasureError), 3 for a
    failed read or write of the dataset (StoreIOError). Every package's exceptions.py derives from it."""

    exit_status = 2


class ProfileError(MemsweepError, ValueError):
    """A machine profile is missing, malformed, or lacks a value a model needs."""


class ModelError(MemsweepError, RuntimeError):
    """A model broke its contract (wrong row count, unnamed metric columns, ...)."""


class SettingsError(MemsweepError, ValueError):
    """A row source's spec table ([measure], [kernel]) has an unknown key or a bad value; the message names
    the key and the rule (sweeps.spec.load reports it as a SpecError: workers cannot import sweeps)."""


class SweepFolderError(MemsweepError, ValueError):
    """A sweep folder cannot be read: no such folder, a bad URI, or no parts of the model asked for."""


class PluginError(MemsweepError, ValueError):
    """A model plugin (a `memsweep.models` entry point, or a module named by a spec's `plugins`)
    does not load or breaks the model contract; the message names the plugin and the rule."""


class StoreIOError(MemsweepError, OSError):
    """Writing or reading the dataset failed: no space, no permission, an I/O error, or an object
    store that kept failing after its retries. The CLI prints it and exits with status 3
    (workers.dataset.folder raises it)."""

    exit_status = 3

    def __str__(self) -> str:
        return self.strerror or super().__str__()
