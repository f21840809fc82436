"""Errors of the analysis package; each derives from workers.exceptions.MemsweepError and the nearest builtin.

Messages follow one template: "'{field}' must be {rule} (got {value!r})." plus,
where it helps, what to do. The CLI prints them and exits with status 2.
"""


from workers.exceptions import MemsweepError


class AnalysisError(MemsweepError, ValueError):
    """A sweep folder, model, axis or metric given to the analysis cannot be used."""


class AnalysisWarning(UserWarning):
    """A figure or table could not be produced from a sweep that is otherwise readable."""
