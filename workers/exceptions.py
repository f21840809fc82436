"""Errors raised by the workers package; each derives from the nearest builtin."""


class ProfileError(ValueError):
    """A machine profile is missing, malformed, or lacks a value a model needs."""


class ModelError(RuntimeError):
    """A model broke its contract (wrong row count, unnamed metric columns, ...)."""
