"""Machine profiles: per-operation costs and hardware sizes, each with unit and source.

A profile is a TOML data file in `workers/profiles/`. Each model reads its own
section (`[copy]`, `[memmap]`, `[pfnmap]`, `[young]`); an entry is

    store_word_ns = { value = 0.31, unit = "ns", source = "calibrated", note = "..." }

A section may also hold plain strings (e.g. `machine = "Ice Lake server guest"`).
A profile may name a `base` profile: it then holds only what differs from it.
Profiles are immutable; calibration makes a new one with `with_values`.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

from .exceptions import ProfileError

PROFILE_DIR = Path(__file__).parent / "profiles"
# computed: by a tool from the code it prices (the note names the tool and the code: llvm-mca's cycles)
SOURCES = ("published", "calibrated", "datasheet", "measured", "computed", "assumed")
ENTRY_KEYS = {"value", "unit", "source", "note", "bounds", "range"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Quantity:
    value: float | int | bool
    unit: str
    source: str
    note: str = ""
    # Where calibration may look for this cost: a fit starts inside these neutral bounds, never at `value`.
    bounds: tuple[float, float] | None = None
    # An assumed cost's doubt: the values its source allows (the note says why). Every answer spans them
    # (workers.interval), and calibrate refits the fitted costs at each end ([refits] "range:section.key").
    range: tuple[float, float] | None = None


@dataclass(frozen=True, kw_only=True)
class Profile:
    """A named machine profile; `sections[section][key]` is a Quantity or a str.

    `validation` holds published figures measured on this profile's machines that
    calibration predicts but never fits (`[[validation]]` tables: model, id,
    metric, published, unit, params, source, and a note on what was assumed).
    """

    name: str
    description: str
    sections: dict[str, dict[str, Quantity | str]] = field(default_factory=dict)
    validation: tuple[dict, ...] = ()
    # A profile built on a `base`: the base's name and the (section, key) entries it sets itself, which
    # make its answers what-ifs of the base's fitted costs (workers.evidence). Not part of the digest.
    base: str = ""
    overrides: frozenset[tuple[str, str]] = frozenset()
    # `[leave_one_out]`: published figure id -> the range (low, high) of the relative error of its prediction
    # by fits that did not see it (memsweep calibrate; refits are too slow for a report to redo): one value
    # (low == high) where the other figures identify every cost, a range where they leave one free. In TOML
    # a number or [low, high]. Not part of the digest.
    leave_one_out: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    # `[refits]`: published figure id -> the fitted costs ({"section.key": value}) of the fits behind its
    # leave-one-out error (one, or a valley's two ends); and RANGE + "section.key" of an assumed cost with a
    # `range` -> the fits with that cost at the low and at the high end of it. Every answer's error bar takes
    # in the answers under them (workers.interval), so they are part of the digest: new refits are new rows.
    # A profile with a `base` takes the base's (and its leave-one-out errors).
    refits: Mapping[str, tuple[Mapping[str, float], ...]] = field(default_factory=dict)

    def loo_error(self, figure_ids) -> float | None:
        """The largest |leave-one-out error| this profile records of the figures `figure_ids` (a model's
        stated error: workers.evidence, workers.interval); None when it records none of them."""
        ids = set(figure_ids)
        errors = [max(abs(lo), abs(hi)) for fid, (lo, hi) in self.leave_one_out.items() if fid in ids]
        return max(errors) if errors else None

    def value(self, section: str, key: str) -> float:
        """The number at section.key; ProfileError naming the key if it is missing."""
        entry = self.sections.get(section, {}).get(key)
        if not isinstance(entry, Quantity):
            raise ProfileError(
                f"profile {self.name!r} has no value '{section}.{key}'; "
                f"add it to {self.name}.toml with a value, unit and source."
            )
        return entry.value

    def text(self, section: str, key: str, default: str = "") -> str:
        entry = self.sections.get(section, {}).get(key, default)
        return entry if isinstance(entry, str) else default

    def with_defaults(self, section: str, entries: Mapping[str, Quantity]) -> Profile:
        """A copy with `entries` added to `section` where the profile lacks them (a plugin model's own
        costs, which no shipped profile holds); the profile's own entries win. Self when nothing is added."""
        have = self.sections.get(section, {})
        missing = {k: e for k, e in entries.items() if k not in have}
        if not missing:
            return self
        sections = {s: dict(e) for s, e in self.sections.items()}
        sections[section] = {**missing, **have}
        return replace(self, sections=sections)

    def with_values(self, updates: dict[tuple[str, str], float], *, source: str, note: str = "") -> Profile:
        """A copy with the given (section, key) values replaced and their source set."""
        sections = {s: dict(entries) for s, entries in self.sections.items()}
        for (section, key), v in updates.items():
            old = sections[section][key]
            sections[section][key] = Quantity(value=float(v), unit=old.unit, source=source, note=note or old.note,
                                              bounds=old.bounds, range=old.range)
        return replace(self, sections=sections)

    def bounds(self, section: str, key: str) -> tuple[float, float] | None:
        entry = self.sections.get(section, {}).get(key)
        return entry.bounds if isinstance(entry, Quantity) else None

    def to_dict(self) -> dict:
        out: dict = {"name": self.name, "description": self.description}
        for s, entries in self.sections.items():
            out[s] = {k: (e if isinstance(e, str) else _entry_dict(e)) for k, e in entries.items()}
        if self.validation:
            out["validation"] = list(self.validation)
        if self.leave_one_out:
            out[LOO] = {k: lo if lo == hi else [lo, hi] for k, (lo, hi) in self.leave_one_out.items()}
        if self.refits:
            out[REFITS] = {k: [dict(c) for c in costs] for k, costs in self.refits.items()}
        return out

    def digest(self) -> str:
        """A short content hash: changes whenever any value changes (part of chunk ids)."""
        blob = json.dumps({k: v for k, v in self.to_dict().items() if k != LOO}, sort_keys=True).encode()
        return hashlib.blake2b(blob, digest_size=8).hexdigest()


FITTED = "calibrated"  # a Quantity's source once a fit has set it
LOO = "leave_one_out"  # the profile table of leave-one-out errors
REFITS = "refits"  # the profile table of the leave-one-out fits' costs
RANGE = "range:"  # a [refits] key of the fits at the ends of an assumed cost's range: "range:young.unmap_step_ns"


def calibration_status(profile: Profile, keys) -> str:
    """How far `profile` is calibrated for the costs a fit would set (`keys`: (section, key) pairs, the
    free parameters of the models in question): all fitted, none (what-if only), or some."""
    keys = list(dict.fromkeys(keys))
    fitted = [k for k in keys if isinstance(q := profile.sections.get(k[0], {}).get(k[1]), Quantity)
              and q.source == FITTED]
    n, k = len(keys), len(fitted)
    # fitted costs a profile takes from its base (workers.profiles: `base`, `overrides`): fit on the base's
    # machines, not on this profile's
    inherited = sum(1 for key in fitted if profile.base and key not in profile.overrides)
    whose = f", {inherited} of them inherited from {profile.base}'s fits of its own machines" if inherited else ""
    if n == 0:
        return "no fitted costs (the models in question declare none)"
    if k == n:
        return f"calibrated ({k} of {n} fitted costs{whose})"
    if k == 0:
        return f"NOT calibrated (0 of {n} costs a fit sets: assumed values, what-if only)"
    return f"partly calibrated ({k} of {n} fitted costs{whose}; the others assumed)"


def _entry_dict(e: Quantity) -> dict:
    out = {"value": e.value, "unit": e.unit, "source": e.source, "note": e.note}
    if e.bounds is not None:
        out["bounds"] = list(e.bounds)
    if e.range is not None:
        out["range"] = list(e.range)
    return out


def available_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def load_profile(name_or_path: str) -> Profile:
    """A shipped profile by name, or a profile file by path."""
    path = Path(name_or_path)
    if not path.suffix:
        path = PROFILE_DIR / f"{name_or_path}.toml"
    if not path.is_file():
        raise ProfileError(
            f"'profile' must be one of {available_profiles()} or a path to a profile file "
            f"(got {name_or_path!r})."
        )
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ProfileError(f"profile file {path.name} is not valid TOML: {e}") from None
    base = data.pop("base", None)
    profile = profile_from_dict(data, origin=path.name)
    if base is not None:
        if not isinstance(base, str) or base == profile.name:
            raise ProfileError(f"{path.name}: 'base' must name another profile (got {base!r}).")
        profile = _inherit(load_profile(base), profile)
    return _checked_refits(profile, path.name)


def _checked_refits(profile: Profile, origin: str) -> Profile:
    """`profile`, if every cost its refits set is a number the profile has; else ProfileError naming it."""
    for fid, refits in profile.refits.items():
        for key in (k for costs in refits for k in costs):
            section, name = key.split(".", 1)
            if not isinstance(profile.sections.get(section, {}).get(name), Quantity):
                raise ProfileError(f"{origin}: 'refits.\"{fid}\"' sets {key!r}, which is no cost of the profile; "
                                   "a refit may set only the costs of its sections (memsweep calibrate writes them).")
    return profile


def _inherit(base: Profile, own: Profile) -> Profile:
    """`own` with every entry it does not set taken from `base` (a profile's `base` key)."""
    sections = {s: dict(entries) for s, entries in base.sections.items()}
    for s, entries in own.sections.items():
        sections.setdefault(s, {}).update(entries)
    # Validation figures are not inherited: they were measured on the machines the base profile describes.
    overrides = frozenset((s, k) for s, entries in own.sections.items() for k, e in entries.items()
                          if isinstance(e, Quantity) and _value_of(base, s, k) != e.value)
    return Profile(name=own.name, description=own.description, sections=sections, validation=own.validation,
                   base=base.name, overrides=overrides, refits=own.refits or _scaled(base, own, overrides),
                   leave_one_out=own.leave_one_out or base.leave_one_out)


def _scaled(base: Profile, own: Profile, overrides) -> dict[str, tuple[dict[str, float], ...]]:
    """The base's refits in `own`'s terms: a cost `own` sets moves by the refit's ratio to the base's value
    (the same relative doubt), the others are the base's refits as they are."""
    def scale(key: str, value: float) -> float:
        section, name = key.split(".", 1)
        if (section, name) not in overrides:
            return value
        fitted = _value_of(base, section, name)
        return value * float(_value_of(own, section, name)) / float(fitted) if fitted else value
    return {fid: tuple({k: scale(k, v) for k, v in costs.items()} for costs in refits)
            for fid, refits in base.refits.items()}


def _value_of(profile: Profile, section: str, key: str) -> object:
    entry = profile.sections.get(section, {}).get(key)
    return entry.value if isinstance(entry, Quantity) else None


def profile_from_dict(data: dict, *, origin: str = "<dict>") -> Profile:
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ProfileError(f"{origin}: 'name' must be a non-empty string (got {name!r}).")
    sections: dict[str, dict[str, Quantity | str]] = {}
    validation = _validation(origin, data.get("validation", []))
    loo = _leave_one_out(origin, data.get(LOO, {}))
    refits = _refits(origin, data.get(REFITS, {}))
    for section, entries in data.items():
        if section in ("name", "description", "validation", LOO, REFITS):
            continue
        if not isinstance(entries, dict):
            raise ProfileError(f"{origin}: '{section}' must be a table of entries (got {entries!r}).")
        sections[section] = {k: _entry(origin, f"{section}.{k}", e) for k, e in entries.items()}
    return Profile(name=name, description=str(data.get("description", "")), sections=sections,
                   validation=validation, leave_one_out=loo, refits=refits)


def _refits(origin: str, table: object) -> dict[str, tuple[dict[str, float], ...]]:
    """`[refits]`: figure id -> an array of one or two tables of "section.key" = cost."""
    def costs(v: object) -> bool:
        return isinstance(v, dict) and bool(v) and all(
            isinstance(k, str) and "." in k and isinstance(c, (int, float)) and not isinstance(c, bool)
            for k, c in v.items())

    if not isinstance(table, dict) or not all(
            isinstance(v, list) and 1 <= len(v) <= 2 and all(costs(c) for c in v) for v in table.values()):
        raise ProfileError(f"{origin}: '{REFITS}' must be a table of figure id = [{{ \"section.key\" = cost, ... }}] "
                           f"(one or two refits each; got {table!r}).")
    return {str(k): tuple({ck: float(c) for ck, c in v.items()} for v in vs) for k, vs in table.items()}


def _leave_one_out(origin: str, table: object) -> dict[str, tuple[float, float]]:
    """`[leave_one_out]`: figure id -> a relative error, or [low, high] where the other figures leave a cost
    free; as (low, high) pairs."""
    def number(v: object) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    def pair(v: object) -> tuple[float, float] | None:
        if number(v):
            return float(v), float(v)
        if isinstance(v, list) and len(v) == 2 and all(number(e) for e in v) and v[0] <= v[1]:
            return float(v[0]), float(v[1])
        return None

    pairs = {str(k): pair(v) for k, v in table.items()} if isinstance(table, dict) else None
    if pairs is None or any(p is None for p in pairs.values()):
        raise ProfileError(f"{origin}: '{LOO}' must be a table of figure id = relative error, or [low, high] "
                           f"with low <= high (got {table!r}).")
    return pairs


VALIDATION_KEYS = {"model", "id", "metric", "published", "unit", "params", "source"}
VALIDATION_OPTIONAL = {"note", "bound"}  # bound: "=" (a value, the default), ">=" ("10%+"), "<="
BOUNDS = ("=", ">=", "<=")  # a published figure's kind (workers.model.Figure.bound)


def _validation(origin: str, items: object) -> tuple[dict, ...]:
    """The `[[validation]]` figures, each checked for the keys a figure needs."""
    if not isinstance(items, list):
        raise ProfileError(f"{origin}: 'validation' must be an array of tables ([[validation]]) (got {items!r}).")
    out = []
    for i, item in enumerate(items):
        missing = VALIDATION_KEYS - set(item) if isinstance(item, dict) else VALIDATION_KEYS
        if missing:
            raise ProfileError(f"{origin}: 'validation[{i}]' must give {sorted(VALIDATION_KEYS)} and an optional "
                               f"note and bound (missing {sorted(missing)}).")
        extra = set(item) - VALIDATION_KEYS - VALIDATION_OPTIONAL
        if extra:
            raise ProfileError(f"{origin}: 'validation[{i}].{sorted(extra)[0]}' is not a validation key; "
                               f"allowed: {sorted(VALIDATION_KEYS | VALIDATION_OPTIONAL)}.")
        if item.get("bound", "=") not in BOUNDS:
            raise ProfileError(f"{origin}: 'validation[{i}].bound' must be one of {list(BOUNDS)} "
                               f"(got {item['bound']!r}).")
        if not isinstance(item["published"], (int, float)) or isinstance(item["published"], bool) \
                or not item["published"] > 0:
            raise ProfileError(f"{origin}: 'validation[{i}].published' must be a positive number "
                               f"(got {item['published']!r}).")
        if not isinstance(item["params"], dict):
            raise ProfileError(f"{origin}: 'validation[{i}].params' must be a table of axis values.")
        out.append(dict(item))
    return tuple(out)


def _entry(origin: str, field_name: str, e: object) -> Quantity | str:
    if isinstance(e, str):
        return e
    if not isinstance(e, dict) or not {"value", "unit", "source"} <= e.keys() or e.keys() - ENTRY_KEYS:
        raise ProfileError(
            f"{origin}: '{field_name}' must be a string or a table with value, unit, source "
            f"and an optional note (got {e!r})."
        )
    if e["source"] not in SOURCES:
        raise ProfileError(f"{origin}: '{field_name}.source' must be one of {SOURCES} (got {e['source']!r}).")
    if not isinstance(e["value"], (int, float, bool)):
        raise ProfileError(f"{origin}: '{field_name}.value' must be a number or boolean (got {e['value']!r}).")
    bounds = e.get("bounds")
    if bounds is not None:
        if (not isinstance(bounds, list) or len(bounds) != 2
                or not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds)
                or not bounds[0] < bounds[1]):
            raise ProfileError(f"{origin}: '{field_name}.bounds' must be [lower, upper] with lower < upper "
                               f"(got {bounds!r}).")
        bounds = (float(bounds[0]), float(bounds[1]))
    span = e.get("range")
    if span is not None:
        if (not isinstance(span, list) or len(span) != 2 or isinstance(e["value"], bool)
                or not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in span)
                or not span[0] <= e["value"] <= span[1] or not span[0] < span[1]):
            raise ProfileError(f"{origin}: '{field_name}.range' must be [low, high] with low <= value <= high and "
                               f"low < high (got {span!r} for value {e['value']!r}).")
        span = (float(span[0]), float(span[1]))
    return Quantity(value=e["value"], unit=str(e["unit"]), source=e["source"], note=str(e.get("note", "")),
                    bounds=bounds, range=span)


def dump_profile(profile: Profile) -> str:
    """TOML text of a profile (what `memsweep calibrate --save` writes)."""
    lines = [f'name = {json.dumps(profile.name)}', f'description = {json.dumps(profile.description)}']
    for section, entries in profile.sections.items():
        lines += ["", f"[{section}]"]
        for key, e in entries.items():
            if isinstance(e, str):
                lines.append(f"{key} = {json.dumps(e)}")
                continue
            v = ("true" if e.value else "false") if isinstance(e.value, bool) else repr(e.value)
            note = f", note = {json.dumps(e.note)}" if e.note else ""
            bounds = f", bounds = [{e.bounds[0]!r}, {e.bounds[1]!r}]" if e.bounds else ""
            span = f", range = [{e.range[0]!r}, {e.range[1]!r}]" if e.range else ""
            lines.append(f'{key} = {{ value = {v}, unit = {json.dumps(e.unit)}, source = "{e.source}"{bounds}{span}'
                         f'{note} }}')
    if profile.leave_one_out:
        lines += ["", f"[{LOO}]", *(f"{json.dumps(k)} = {lo!r}" if lo == hi else f"{json.dumps(k)} = [{lo!r}, {hi!r}]"
                                    for k, (lo, hi) in profile.leave_one_out.items())]
    if profile.refits:
        lines += ["", f"[{REFITS}]", *(f"{json.dumps(k)} = [" + ", ".join(
            "{ " + ", ".join(f"{json.dumps(ck)} = {c!r}" for ck, c in costs.items()) + " }" for costs in v) + "]"
            for k, v in profile.refits.items())]
    for item in profile.validation:
        lines += ["", "[[validation]]"]
        for k, v in item.items():
            if k == "params":
                inner = ", ".join(f"{pk} = {_toml_value(pv)}" for pk, pv in v.items())
                lines.append(f"params = {{ {inner} }}")
            else:
                lines.append(f"{k} = {_toml_value(v)}")
    return "\n".join(lines) + "\n"


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v))
