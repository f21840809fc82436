"""MeasureSettings (workers/measure/settings.py): a frozen value with the [measure] keys, checked on construction."""

from __future__ import annotations

import dataclasses

import pytest

from workers.measure.exceptions import MeasureSettingsError
from workers.measure.settings import SPAN_MS, MeasureSettings


def test_defaults_are_the_spec_defaults():
    """With no [measure] table: 5 repeats after 1 warm-up, pinned to CPU 0, rounds spanning SPAN_MS."""
    assert dataclasses.asdict(MeasureSettings()) == {"repeats": 5, "warmup": 1, "cpu": 0, "span_ms": SPAN_MS}
    assert MeasureSettings.from_table({}) == MeasureSettings()


def test_settings_are_frozen_slotted_and_keyword_only():
    """A setting cannot be changed or added after construction, nor given by position."""
    s = MeasureSettings(repeats=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.repeats = 4
    assert not hasattr(s, "__dict__")
    with pytest.raises(TypeError):
        MeasureSettings(3)
    assert hash(s) == hash(MeasureSettings(repeats=3))


@pytest.mark.parametrize("kw,match", [
    ({"repeats": 0}, r"'measure.repeats' must be an integer >= 1 \(got 0\)"),
    ({"warmup": -1}, r"'measure.warmup' must be an integer >= 0 \(got -1\)"),
    ({"cpu": True}, r"'measure.cpu' must be an integer >= 0 \(got True\)"),
    ({"span_ms": 1.5}, r"'measure.span_ms' must be an integer >= 0 \(got 1.5\)"),
])
def test_a_bad_setting_names_the_field_and_the_rule(kw, match):
    """Each out-of-range or non-integer setting raises MeasureSettingsError (a ValueError) naming it."""
    with pytest.raises(MeasureSettingsError, match=match):
        MeasureSettings(**kw)
    assert issubclass(MeasureSettingsError, ValueError)


@pytest.mark.parametrize("table,match", [
    ({"cpus": 1}, r"'measure.cpus' is not a measure key; allowed keys are \['cpu', 'repeats', 'span_ms', 'warmup'\]"),
    ([1, 2], r"'measure' must be a table with keys \['cpu', 'repeats', 'span_ms', 'warmup'\] \(got \[1, 2\]\)"),
])
def test_from_table_rejects_what_is_not_a_measure_table(table, match):
    """An unknown key or a non-table is refused with the list of allowed keys."""
    with pytest.raises(MeasureSettingsError, match=match):
        MeasureSettings.from_table(table)


def test_from_table_keeps_the_defaults_of_keys_it_leaves_out():
    """A table naming some keys sets those; the rest keep their defaults."""
    assert MeasureSettings.from_table({"repeats": 3, "span_ms": 200}) == MeasureSettings(repeats=3, span_ms=200)
