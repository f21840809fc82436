"""The grid: mixed-radix decoding is pure, splittable, and point ids are stable."""

from __future__ import annotations

import itertools

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweeps.spec.grid import Grid, decode
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
    axes = (NAMESPACE_SIZE, ALIGN, COMPOUND_ORDER, MODE, FRACTION)
    first = (tuple(sizes), tuple(aligns), tuple(orders), tuple(modes), tuple(fracs))
    if draw(st.booleans()):
        return Grid.single("m", axes, first)
    # a second block with the other modes: disjoint from the first, as blocks should be
    others = tuple(m for m in ("fsdax", "devdax") if m not in modes) or None
    if others is None:
        return Grid.single("m", axes, first)
    return Grid(model="m", axes=axes, blocks=(first, (tuple(sizes[:1]), tuple(aligns), (0,), others, (0.5,))))


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
    expected = [p for block in grid.blocks for p in itertools.product(*block)]
    got = list(frame.select(a.column for a in grid.axes).iter_rows())
    assert got == expected
    assert frame["point_id"].n_unique() == grid.size


@settings(max_examples=60, deadline=None)
@given(grids(), st.sampled_from(SIZES))
def test_point_id_depends_only_on_the_point(grid, extra_size):
    """Adding a value to an axis, or reordering values, keeps every existing point's id."""
    base = decode(grid, 0, grid.size)
    block = grid.blocks[0]
    wider_values = tuple(sorted(set(block[0]) | {extra_size}, reverse=True))
    wider = Grid(model=grid.model, axes=grid.axes, blocks=((wider_values, *block[1:]), *grid.blocks[1:]))
    joined = base.join(decode(wider, 0, wider.size), on=[a.column for a in grid.axes], how="left", nulls_equal=True)
    assert joined["point_id"].to_list() == joined["point_id_right"].to_list()


def test_point_id_differs_between_models():
    """The same parameters in two models are two points."""
    g1 = Grid.single("a", (NAMESPACE_SIZE,), ((4096,),))
    g2 = Grid.single("b", (NAMESPACE_SIZE,), ((4096,),))
    assert decode(g1, 0, 1)["point_id"][0] != decode(g2, 0, 1)["point_id"][0]


def test_point_id_is_pinned():
    """A point's id never changes across releases (datasets are joined on it)."""
    g = Grid.single("memmap", (NAMESPACE_SIZE, COMPOUND_ORDER), ((100 << 30,), (None,)))
    row = decode(g, 0, 1)
    assert row["point_id"][0] == 13790220966327783054


def test_out_of_range_is_an_error():
    """Asking for indices beyond the grid fails loudly instead of wrapping around."""
    g = Grid.single("m", (NAMESPACE_SIZE,), ((4096, 8192),))
    with pytest.raises(ValueError, match="outside the grid of 2 points"):
        decode(g, 0, 3)


def test_blocks_run_one_after_another():
    """A two-block grid is block 1's product, then block 2's; ranges may straddle the seam."""
    g = Grid(model="m", axes=(NAMESPACE_SIZE, MODE),
             blocks=(((4096, 8192), ("fsdax",)), ((4096,), ("devdax",))))
    frame = decode(g, 1, 3)
    assert frame.select("param_namespace_size", "param_mode").rows() == [(8192, "fsdax"), (4096, "devdax")]
    assert g.size == 3 and decode(g, 0, 3)["point_id"].n_unique() == 3
