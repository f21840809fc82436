"""Errors raised by the workers package; each derives from the nearest builtin."""


class ProfileError(ValueError):
    """A machine profile is missing, malformed, or lacks a value a model needs."""


class ModelError(RuntimeError):
    """A model broke its contract (wrong row count, unnamed metric columns, ...)."""


class SettingsError(ValueError):
    """A row source's spec table ([measure], [kernel]) has an unknown key or a bad value; the message names
    the key and the rule (sweeps.spec.load reports it as a SpecError: workers cannot import sweeps)."""


class SweepFolderError(ValueError):
    """A sweep folder cannot be read: no such folder, a bad URI, or no parts of the model asked for."""


class PluginError(ValueError):
    """A model plugin (a `memsweep.models` entry point, or a module named by a spec's `plugins`)
    does not load or breaks the model contract; the message names the plugin and the rule."""


class StoreIOError(OSError):
    """Writing or reading the dataset failed: no space, no permission, an I/O error, or an object
    store that kept failing after its retries. The CLI prints it and exits with status 3
    (workers.dataset.folder raises it)."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()
