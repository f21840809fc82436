"""Fixtures of the measure backend's tests: one build of the native routines per session, in a temp cache."""

from __future__ import annotations

import polars as pl
import pytest


@pytest.fixture(scope="session")
def native_cache(tmp_path_factory):
    """A library cache directory of this test session (never ~/.cache)."""
    return tmp_path_factory.mktemp("native-cache")


@pytest.fixture(scope="session")
def native(native_cache):
    """The native routines, built once into the session's cache."""
    from workers.measure.native import load

    return load(cache_dir=native_cache)


@pytest.fixture
def points():
    """A points frame for a model from partial rows (missing axes take their defaults)."""

    def make(model, *rows: dict) -> pl.DataFrame:
        defaults = {a.name: a.default for a in model.axes}
        return pl.DataFrame({
            a.column: pl.Series(a.column, [a.canonical({**defaults, **r}[a.name]) for r in rows], dtype=a.dtype)
            for a in model.axes
        })

    return make
