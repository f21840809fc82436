"""Machine profiles: loading, validation, inheritance, calibration copies, TOML round trip."""

import tomllib

import pytest

from workers.exceptions import ProfileError
from workers.profiles import (
    Quantity, available_profiles, dump_profile, load_profile, profile_from_dict,
)


def test_every_shipped_profile_loads_with_units_and_sources():
    """Each shipped profile parses, and every numeric entry has a unit and a known source."""
    assert "seed" in available_profiles()
    for name in available_profiles():
        p = load_profile(name)
        for entries in p.sections.values():
            for e in entries.values():
                if isinstance(e, Quantity):
                    assert e.unit and e.source


def test_missing_profile_lists_the_shipped_ones():
    """An unknown profile name says which profiles exist."""
    with pytest.raises(ProfileError, match="'profile' must be one of .*seed"):
        load_profile("no-such-profile")


@pytest.mark.parametrize("entry,match", [
    ({"value": 1.0, "unit": "ns"}, "must be a string or a table with value, unit, source"),
    ({"value": 1.0, "unit": "ns", "source": "guessed"}, "'x.k.source' must be one of"),
    ({"value": "fast", "unit": "ns", "source": "assumed"}, "'x.k.value' must be a number"),
    ({"value": 1.0, "unit": "ns", "source": "assumed", "colour": "red"}, "must be a string or a table"),
])
def test_malformed_entries_are_rejected_by_name(entry, match):
    """An entry without a unit or source, or with an unknown source, names its field."""
    with pytest.raises(ProfileError, match=match):
        profile_from_dict({"name": "p", "x": {"k": entry}})


def test_leave_one_out_is_a_table_of_errors_or_ranges_by_figure():
    """[leave_one_out] maps figure ids to a relative error or a [low, high] range, read as (low, high) pairs
    and written back as they came; anything else names the table."""
    table = {"memmap/fsdax/slow": -0.035, "memmap/devdax/template_nt_inline": [-0.1563, -0.0684]}
    p = profile_from_dict({"name": "p", "leave_one_out": table})
    assert p.leave_one_out == {"memmap/fsdax/slow": (-0.035, -0.035),
                               "memmap/devdax/template_nt_inline": (-0.1563, -0.0684)}
    assert "leave_one_out" not in p.sections and p.to_dict()["leave_one_out"] == table
    assert profile_from_dict(tomllib.loads(dump_profile(p))).leave_one_out == p.leave_one_out
    for bad in ("small", [-0.01, -0.02], [0.1], True):
        with pytest.raises(ProfileError, match="'leave_one_out' must be a table of figure id = relative error"):
            profile_from_dict({"name": "p", "leave_one_out": {"memmap/fsdax/slow": bad}})


def test_refits_are_a_table_of_one_or_two_cost_sets_by_figure_and_part_of_the_digest():
    """[refits] maps figure ids to one or two tables of "section.key" = cost, written back as they came; a
    change of a refit changes the digest (the rows' error bars follow from them); anything else names the
    table."""
    table = {"memmap/fsdax/slow": [{"copy.store_ns": 0.48}],
             "memmap/devdax/template_nt_inline": [{"copy.store_ns": 0.48}, {"copy.store_ns": 0.49}]}
    p = profile_from_dict({"name": "p", "refits": table})
    assert "refits" not in p.sections and p.to_dict()["refits"] == table
    assert profile_from_dict(tomllib.loads(dump_profile(p))).refits == p.refits
    moved = profile_from_dict({"name": "p", "refits": {**table, "memmap/fsdax/slow": [{"copy.store_ns": 0.47}]}})
    assert moved.digest() != p.digest()
    for bad in ([], [{}], [{"store_ns": 1.0}], [{"copy.store_ns": "x"}], [{"a.b": 1.0}] * 3, {"a.b": 1.0}):
        with pytest.raises(ProfileError, match="'refits' must be a table of figure id"):
            profile_from_dict({"name": "p", "refits": {"memmap/fsdax/slow": bad}})


def test_a_refit_of_a_cost_the_profile_lacks_is_refused_at_load(tmp_path):
    """A refit setting a cost no section holds would fail every chunk's bars: the file is refused, naming it."""
    (tmp_path / "own.toml").write_text('name = "own"\nbase = "seed"\n[refits]\n'
                                       '"memmap/fsdax/slow" = [{ "copy.nothing" = 1.0 }]\n')
    with pytest.raises(ProfileError, match="'refits.\"memmap/fsdax/slow\"' sets 'copy.nothing', which is no cost"):
        load_profile(str(tmp_path / "own.toml"))


def test_a_profile_inherits_from_its_base(tmp_path):
    """`base` fills every entry the profile does not set; its own entries win."""
    (tmp_path / "child.toml").write_text(
        'name = "child"\nbase = "seed"\n[extra]\nk = { value = 2.5, unit = "ns", source = "assumed" }\n'
    )
    child = load_profile(str(tmp_path / "child.toml"))
    seed = load_profile("seed")
    assert child.value("extra", "k") == 2.5
    assert set(seed.sections) <= set(child.sections)
    assert child.digest() != seed.digest()


def test_with_values_marks_the_source_and_changes_the_digest():
    """A calibrated copy carries the new value, source 'calibrated', and a new digest."""
    p = profile_from_dict({"name": "p", "s": {"k": {"value": 1.0, "unit": "ns", "source": "assumed"}}})
    q = p.with_values({("s", "k"): 3.0}, source="calibrated")
    assert (q.value("s", "k"), q.sections["s"]["k"].source, q.sections["s"]["k"].unit) == (3.0, "calibrated", "ns")
    assert p.value("s", "k") == 1.0 and p.digest() != q.digest()


def test_with_defaults_adds_a_plugins_costs_where_the_profile_lacks_them():
    """A plugin's own section: its costs fill the keys the profile lacks, the profile's own entries win,
    and a profile that lacks nothing is returned as it is."""
    p = profile_from_dict({"name": "p", "hvo": {"k": {"value": 1.0, "unit": "ns", "source": "measured"}}})
    costs = {"k": Quantity(value=9.0, unit="ns", source="assumed"), "j": Quantity(value=2.0, unit="ns", source="assumed")}
    q = p.with_defaults("hvo", costs)
    assert (q.value("hvo", "k"), q.value("hvo", "j")) == (1.0, 2.0) and "j" not in p.sections["hvo"]
    assert q.with_defaults("hvo", costs) is q
    assert profile_from_dict({"name": "e"}).with_defaults("hvo", costs).value("hvo", "k") == 9.0


def test_dump_and_load_round_trip(tmp_path):
    """dump_profile writes TOML that loads back to an equal profile."""
    seed = load_profile("seed")
    path = tmp_path / "again.toml"
    path.write_text(dump_profile(seed))
    assert load_profile(str(path)).to_dict() == seed.to_dict()


def test_missing_value_names_the_key():
    """A model asking for an entry the profile lacks is told which one and where to add it."""
    p = profile_from_dict({"name": "p"})
    with pytest.raises(ProfileError, match="no value 'memmap.store_ns'; add it to p.toml"):
        p.value("memmap", "store_ns")
