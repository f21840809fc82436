"""The grid: mixed-radix decoding is pure, splittable, and point ids are stable."""

from __future__ import annotations

import itertools

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweeps.grid import Grid, decode, point_name
from workers.axes import ALIGN, COMPOUND_ORDER, NAMESPACE_SIZE, Axis, choice

SIZES = [1 << k for k in range(12, 45)]
MODE = choice("mode", ("fsdax", "devdax"), "fsdax", "test axis")
FRACTION = Axis(name="fraction", kind="float", unit="", default=0.0, doc="test axis")


@st.composite
def grids(draw):
    """Random small grids over size, align, order, choice and float axes."""
    sizes = draw(st.lists(st.sampled_from(SIZES), min_size=1, max_size=5, unique=True))
    aligns = draw(st.lists(st.sampled_from(SIZES[:19]), min_size=1, max_size=4, unique=True))
    orders = draw(st.lists(st.sampled_from([None, 0, 9, 18]), min_size=1, max_size=4, unique=True))
    modes = draw(st.lists(st.sampled_from(["fsdax", "devdax"]), min_size=1, max_size=2, unique=True))
    fracs = draw(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=3, unique=True))
    return Grid(
        model="m", axes=(NAMESPACE_SIZE, ALIGN, COMPOUND_ORDER, MODE, FRACTION),
        values=(tuple(sizes), tuple(aligns), tuple(orders), tuple(modes), tuple(fracs)),
    )


@settings(max_examples=60, deadline=None)
@given(grids(), st.data())
def test_decoding_a_range_equals_decoding_its_pieces(grid, data):
    """Decoding [a, c) gives the rows of [a, b) then [b, c), for any split."""
    a = data.draw(st.integers(0, grid.size))
    c = data.draw(st.integers(a, grid.size))
    b = data.draw(st.integers(a, c))
    whole = decode(grid, a, c)
    parts = pl.concat([decode(grid, a, b), decode(grid, b, c)])
    assert whole.equals(parts)
    assert whole.height == c - a


@settings(max_examples=60, deadline=None)
@given(grids())
def test_grid_is_the_cartesian_product_in_order(grid):
    """The whole grid is itertools.product of the axis values, last axis fastest, ids unique."""
    frame = decode(grid, 0, grid.size)
    expected = list(itertools.product(*grid.values))
    got = list(frame.select(a.column for a in grid.axes).iter_rows())
    assert got == expected
    assert frame["point_id"].n_unique() == grid.size


@settings(max_examples=60, deadline=None)
@given(grids(), st.sampled_from(SIZES))
def test_point_id_depends_only_on_the_point(grid, extra_size):
    """Adding a value to an axis, or reordering values, keeps every existing point's id."""
    base = decode(grid, 0, grid.size)
    sizes = grid.values[0]
    wider_values = tuple(sorted(set(sizes) | {extra_size}, reverse=True))
    wider = Grid(model=grid.model, axes=grid.axes, values=(wider_values, *grid.values[1:]))
    joined = base.join(decode(wider, 0, wider.size), on=[a.column for a in grid.axes], how="left", nulls_equal=True)
    assert joined["point_id"].to_list() == joined["point_id_right"].to_list()


def test_point_id_differs_between_models():
    """The same parameters in two models are two points."""
    g1 = Grid(model="a", axes=(NAMESPACE_SIZE,), values=((4096,),))
    g2 = Grid(model="b", axes=(NAMESPACE_SIZE,), values=((4096,),))
    assert decode(g1, 0, 1)["point_id"][0] != decode(g2, 0, 1)["point_id"][0]


def test_point_id_is_pinned():
    """A point's id never changes across releases (datasets are joined on it)."""
    g = Grid(model="memmap", axes=(NAMESPACE_SIZE, COMPOUND_ORDER), values=((100 << 30,), (None,)))
    row = decode(g, 0, 1)
    assert point_name(g, row.row(0, named=True)) == "memmap[compound_order=auto,namespace_size=100GiB]"
    assert row["point_id"][0] == 13790220966327783054


def test_out_of_range_is_an_error():
    """Asking for indices beyond the grid fails loudly instead of wrapping around."""
    g = Grid(model="m", axes=(NAMESPACE_SIZE,), values=((4096, 8192),))
    with pytest.raises(ValueError, match="outside the grid of 2 points"):
        decode(g, 0, 3)
