"""Errors of the sweeps package; each derives from workers.exceptions.MemsweepError and the nearest builtin.

Every message follows one template: "'{field}' must be {rule} (got {value!r})."
plus, where it helps, what to do. The CLI prints it and exits with status 2 (3 for StoreIOError, 1 for RayStartError).
"""

from workers.exceptions import MemsweepError

OUT_RULE = "a folder or a filesystem URI such as s3://bucket/prefix"  # what --out may be (run, plan, submit)


class SpecError(MemsweepError, ValueError):
    """A sweep spec (or a command-line argument standing for one) is invalid."""


class UsageError(MemsweepError, ValueError):
    """A command was given arguments that cannot work (bad path, conflicting flags)."""


class FitError(UsageError):
    """`calibrate --save` was asked to write a fit whose costs the points do not identify, or that no
    machine can have; the message names each cost and what to do."""


class DatasetError(MemsweepError, RuntimeError):
    """A dataset on disk is missing, corrupt, or belongs to a different spec."""


class LeaseError(MemsweepError, RuntimeError):
    """Another driver holds the sweep's lease (or took it over from this one)."""


class RayStartError(MemsweepError, RuntimeError):
    """The embedded Ray did not start, after every try; the message says why, as Ray said it."""

    exit_status = 1
