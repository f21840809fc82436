"""Plot plumbing: binary size labels, size ticks, value picking, saving PNG + SVG."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis.figures.plotting import binary_size, log_if_wide, save, size_axis, size_ticks
from analysis.metrics import pick


@pytest.mark.parametrize("n, text", [(1 << 30, "1GiB"), (16 << 40, "16TiB"), (4096, "4KiB"), (512, "512B"),
                                     (3 << 19, "1.5MiB"), (0, "0")])
def test_binary_size_labels(n, text):
    """Bytes print with the largest binary unit: 1GiB, 16TiB, 1.5MiB."""
    assert binary_size(n) == text


@given(lo=st.integers(0, 40), span=st.integers(0, 30))
def test_size_ticks_are_powers_of_two_within_range_and_few(lo, span):
    """At most 8 ticks, all powers of two between the bounds."""
    ticks = size_ticks(2.0 ** lo, 2.0 ** (lo + span))
    assert 1 <= len(ticks) <= 8
    assert all(2.0 ** lo <= t <= 2.0 ** (lo + span) for t in ticks)
    assert all(t == 2.0 ** round(math.log2(t)) for t in ticks)


def test_pick_keeps_requested_values_and_spreads_the_rest():
    """pick() keeps `keep` values, fills evenly, returns them sorted as given."""
    assert pick([56, 64, 72, 80, 88, 96, 128], 4, keep=(64, 80, 96)) == [56, 64, 80, 96]
    assert pick([1, 2, 3], 5) == [1, 2, 3]
    assert pick(list(range(10)), 3) == [0, 4, 9]


def test_size_axis_goes_log2_only_for_wide_ranges():
    """A byte axis spanning more than 4x is log base 2 with binary labels; a narrow one stays linear."""
    fig, (a, b) = plt.subplots(1, 2)
    size_axis(a, "x", 1 << 20, 1 << 40)
    size_axis(b, "x", 1 << 20, 2 << 20)
    assert a.get_xscale() == "log" and b.get_xscale() == "linear"
    assert a.xaxis.get_major_formatter()(1 << 30, 0) == "1GiB"
    assert log_if_wide(b, "y", 1.0, 1000.0) and b.get_yscale() == "log"
    plt.close(fig)


def test_save_writes_png_and_svg(tmp_path):
    """save() writes <id>.png and <id>.svg and returns their paths."""
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4])
    r = save(fig, tmp_path / "figs", "a/b", "T", "C")
    assert r.png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert r.svg.read_text().lstrip().startswith("<?xml") and r.png.name == "a_b.png"


def test_panel_counts_find_panels_without_data():
    """Colour bars and hidden axes are no panels; a text-only panel, an empty scatter (a legend proxy),
    a reference line and an all-NaN heatmap are empty; a line, a marker or one heatmap value is data."""
    import numpy as np
    import seaborn as sns

    from analysis.figures.plotting import panel_counts

    fig, axes = plt.subplots(2, 4)
    axes[0][0].plot([1, 2], [3, 4])
    axes[0][1].scatter([], [])
    axes[0][1].axvline(1.0)
    axes[0][1].text(0.5, 0.5, "no feasible points")
    sns.heatmap(np.full((2, 2), np.nan), ax=axes[0][2], vmin=0, vmax=1)
    sns.heatmap(np.array([[1.0, np.nan], [np.nan, np.nan]]), ax=axes[0][3])
    axes[1][0].scatter([1], [2])
    axes[1][1].bar([1], [2])
    axes[1][2].plot([np.nan], [np.nan])
    axes[1][3].set_visible(False)
    assert panel_counts(fig) == (7, 3)
    plt.close(fig)


def test_save_records_panels_and_empty_panels(tmp_path):
    """save() counts a figure's panels and its empty ones into Rendered."""
    fig, (a, b) = plt.subplots(1, 2)
    a.plot([1, 2], [1, 2])
    r = save(fig, tmp_path, "two", "Two", "caption")
    assert (r.panels, r.empty_panels) == (2, 1) and r.png.is_file() and r.svg.is_file()


def test_coinciding_groups_series_that_hide_one_another():
    """Series equal within COINCIDE_REL at every x of the shorter (zeros included) are one group, in the
    given order; a series that differs at one x, or only shares some x, stands alone."""
    from analysis.figures.plotting import COINCIDE_REL, coinciding

    series = {"slow": ([1, 2, 3], [1.0, 2.0, 0.0]), "template": ([1, 2, 3], [1.0, 2.0 * (1 + COINCIDE_REL / 2), 0.0]),
              "nt": ([1, 2, 3], [1.0, 2.1, 0.0]), "one": ([2], [2.0]), "apart": ([3, 4], [0.0, 5.0]),
              "none": ([1], [float("nan")])}
    assert coinciding(series) == [["slow", "template", "one"]]
    assert coinciding({"a": ([1], [1.0]), "b": ([2], [1.0])}) == []


def test_stripe_draws_each_colour_in_turn_along_the_shared_path():
    """k coinciding lines are drawn again with one dash pattern at k offsets; one-point lines as rings."""
    from analysis.figures.plotting import STRIPE, stripe

    fig, ax = plt.subplots()
    stripe(ax, [([1, 2, 3], [1, 2, 3], "red"), ([1, 2, 3], [1, 2, 3], "blue"), ([1, 2, 3], [1, 2, 3], "green")])
    stripe(ax, [([1], [4], "red"), ([1], [4], "blue")])
    lines = ax.get_lines()
    assert [line.get_color() for line in lines] == ["red", "blue", "green", "red", "blue"]
    offsets = [line._unscaled_dash_pattern[0] for line in lines[:3]]
    assert offsets == [0, STRIPE, 2 * STRIPE]
    assert [line.get_marker() for line in lines] == ["None", "None", "None", "o", "o"]
    assert lines[3].get_markersize() > lines[4].get_markersize()
    plt.close(fig)
