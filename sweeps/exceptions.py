"""Errors of the sweeps package; each derives from the nearest builtin.

Every message follows one template: "'{field}' must be {rule} (got {value!r})."
plus, where it helps, what to do. The CLI prints it and exits with status 2.
"""


class SpecError(ValueError):
    """A sweep spec (or a command-line argument standing for one) is invalid."""


class UsageError(ValueError):
    """A command was given arguments that cannot work (bad path, conflicting flags)."""


class DatasetError(RuntimeError):
    """A dataset on disk is missing, corrupt, or belongs to a different spec."""
