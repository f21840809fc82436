"""Size parsing and formatting with binary units."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workers.units import format_size, is_power_of_two, parse_size


@pytest.mark.parametrize("text,value", [
    ("4KiB", 4096), ("2MiB", 2 << 20), ("100GiB", 100 << 30), ("16TiB", 16 << 40), ("512B", 512),
    ("4096", 4096), (" 1 GiB ", 1 << 30), (8192, 8192),
])
def test_parse_size_accepts_integers_and_binary_units(text, value):
    """Integers pass through; strings take B/KiB/MiB/GiB/TiB/PiB."""
    assert parse_size(text) == value


@pytest.mark.parametrize("bad", ["4KB", "2 megabytes", "1.5GiB", "", True, None, 3.0])
def test_parse_size_rejects_what_is_not_a_size(bad):
    """Decimal units, fractions, booleans and floats are refused with the allowed forms named."""
    with pytest.raises(ValueError, match="expected a size"):
        parse_size(bad)


@given(st.integers(1, 1 << 50))
def test_format_then_parse_round_trips(n):
    """format_size gives text that parse_size reads back exactly."""
    assert parse_size(format_size(n)) == n


def test_power_of_two():
    """Only positive powers of two qualify."""
    assert [n for n in range(-2, 10) if is_power_of_two(n)] == [1, 2, 4, 8]
