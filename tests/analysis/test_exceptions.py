"""The analysis package's exception and warning classes."""

from __future__ import annotations

import pytest

from analysis.exceptions import AnalysisError, AnalysisWarning


def test_analysis_error_is_a_value_error():
    """Callers that catch builtins (and the CLI's usage-error handler) see a ValueError."""
    assert issubclass(AnalysisError, ValueError)
    with pytest.raises(ValueError, match="'x' must be y"):
        raise AnalysisError("'x' must be y (got 1).")


def test_analysis_warning_is_a_user_warning():
    """A figure that could not be drawn warns with a UserWarning subclass."""
    assert issubclass(AnalysisWarning, UserWarning)
