"""Errors raised by the measure backend; each derives from workers.exceptions.MemsweepError and the nearest
builtin."""

from workers.exceptions import MemsweepError, SettingsError


class MeasureError(MemsweepError, RuntimeError):
    """The measure backend could not build, load or run its native routines."""

    exit_status = 1


class CompilerNotFound(MeasureError):
    """No C compiler on this node: measured rows become infeasible with this message."""


class BuildError(MeasureError):
    """The C compiler exists but failed to build the routines (a bug, not a property of the node)."""


class MeasureSettingsError(SettingsError):
    """A measure setting (the spec's [measure] table) is unknown or out of range; sweeps.spec.load reports it
    as a SpecError (workers cannot import sweeps)."""
