"""The key findings and tables a model contributes to the report, declared as data.

A finding is one sentence with its numbers, computed from a sweep's ok modeled rows by
analysis/report/findings.py, which evaluates every declaration of every model in a sweep with one generic
path (so a plugin model gets its findings the way a shipped one does). Three kinds exist:

- `Winner`: the variant of the model's `comparison` that is best (fastest) in the most
  configurations, outright (ties are no win), its median speedup over the baseline, and the axis
  value where it wins least.
- `Ratio`: the median ratio of two variants of the comparison (numerator / denominator, at the same
  configuration), grouped by some axes; `quote` picks the groups the sentence names.
- `Medians`: the median of a metric on a slice of the rows (`where`), grouped by one column or by a
  derived boolean (`Above`); `quote` picks the groups the sentence names, optionally once per value
  of another axis (`each`), with optional clauses grouped another way (`more`).

`quote` is a tuple of (name, pick) pairs; a pick is MAX / MIN (the group with the largest / smallest
median), FIRST / LAST (the lowest / highest group value), ALL (every group, listed), a `Pick` of those
restricted by a flag column, or a plain group value (a value of the column, True / False for
`Above`). Each name gives the sentence template `{name}` (the median), `{name_at}` (the group's
value, as its label), `{name_n}` (rows or configurations in it) and `{name_bar}` (" (±5.8%)": the
median of the rows' error bars, workers.interval; "" where they have none), and the finding's data the
same keys. Where the rows carry error bars, `{name}` has only the digits its bar supports. A placeholder takes a format spec on the raw number (`{name_at:g}`); without one the median is
written with the declaration's `fmt` (a format spec such as ".2f", or "bytes": 24.0 GiB) and a group
value as the axis labels it ("2MiB", "80 B" for an int axis in bytes).

A `MedianTable` is a report table: medians of some metrics per group of some columns, the other
varying axes held at one value (the `prefer`red one, else the default), except those in `over`.

Columns are param_ / metric_ names, as in workers.plots; conditions are its `Cond` / `Either`.
Nothing here reads rows: workers.contract checks the names, analysis computes.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from typing import Literal, Mapping, get_args

from .plots import Cond, Either, cond_columns, conditions

Which = Literal["max", "min", "first", "last", "all"]
PICKS = get_args(Which)
FORMATS = ("bytes",)  # besides Python format specs (".2f", ".1%")


@dataclass(frozen=True, kw_only=True, slots=True)
class Pick:
    """Which group(s) a quoted name stands for: `which` is one of PICKS; `only` / `unless` name a boolean
    column and keep the groups where it is true in some row / in no row."""

    which: Which
    only: str | None = None
    unless: str | None = None


MAX, MIN, FIRST, LAST, ALL = (Pick(which=w) for w in PICKS)


@dataclass(frozen=True, slots=True)
class Above:
    """A derived boolean grouping: `column` > `threshold` (True / False groups)."""

    column: str
    threshold: float


Quote = tuple[tuple[str, object], ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class Winner:
    """The comparison's variant that wins the most configurations (see the module doc). `text` and
    `weakest` are templates: {winner} {model} {label} {wins} {configurations} {share} {median_speedup}
    {max_speedup} {baseline}; {axis} {value} {stops_share} {count} {instead} ({instead} is the
    `instead` template, with {other} {other_n}, or "" when no other variant wins there)."""

    id: str
    figure: str
    text: str = ("{winner} is the fastest {model} {label} in {wins} of {configurations} configurations ({share}), "
                 "a median {median_speedup}x faster than {baseline} (up to {max_speedup}x).")
    weakest: str = " It wins least where {axis} = {value}: {stops_share} of those {count} configurations{instead}."
    instead: str = "; {other} is fastest in {other_n} of them"
    fmt: str = ".2f"


@dataclass(frozen=True, kw_only=True, slots=True)
class Ratio:
    """Median over configurations of `numerator` / `denominator` (two values of the comparison's axis, by
    its metric), per group of the `by` columns that vary; a group's value label is its columns' labels
    joined by spaces, {name_n} its configurations."""

    id: str
    figure: str
    text: str
    numerator: object
    denominator: object
    by: tuple[str, ...]
    quote: Quote = (("max", MAX), ("min", MIN))
    fmt: str = ".2f"


@dataclass(frozen=True, kw_only=True, slots=True)
class Clause:
    """An optional clause of a `Medians` sentence, on the same rows grouped by `by`: it fills the
    template's {more} when the sweep has at least two of its groups and every group it quotes."""

    by: str | Above
    quote: Quote
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Medians:
    """Median of `metric` (divided by the column `per` times `scale`, when given) on the rows satisfying
    every condition of `where` (Cond / Either, or a dict of equalities), per group of `by`. With `each`, the
    groups are formed per value of that axis, `clause` is written for every value that has all quoted groups
    ({each}: the value's label) and the clauses, joined by "; ", fill {clauses}; the finding's data maps each
    value to the quoted medians in order."""

    id: str
    figure: str
    text: str
    metric: str
    by: str | Above
    quote: Quote
    where: tuple[Cond | Either, ...] = ()
    per: str | None = None
    scale: float = 1.0
    each: str | None = None
    clause: str = ""
    more: tuple[Clause, ...] = ()
    fmt: str = ".2f"

    def __post_init__(self) -> None:
        object.__setattr__(self, "where", conditions(self.where))


FINDING_KINDS = (Winner, Ratio, Medians)


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a declared table: the row column, its header, and how a cell is written: "" (an
    axis value as its label, a metric with its unit, a flag as yes / no), "bytes" or a format spec."""

    column: str
    header: str
    fmt: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class MedianTable:
    """Medians of `medians` (and whether any row has each of `flags`) per group of `by`, over the ok
    rows with every varying axis not in `by` or `over` held at one value (`prefer` first). Groups
    with a missing metric are left out. The caption is `caption` and the axes held."""

    title: str
    caption: str
    by: tuple[Column, ...]
    medians: tuple[Column, ...]
    flags: tuple[Column, ...] = ()
    over: tuple[str, ...] = ()
    prefer: Mapping[str, object] = field(default_factory=dict)


def quote_names(quote: Quote) -> set[str]:
    """The placeholders a quote gives a template."""
    return {f"{n}{s}" for n, _ in quote for s in ("", "_at", "_n", "_bar")}


def placeholders(template: str) -> set[str]:
    """The field names a template uses ("{best_at:g}" -> "best_at")."""
    return {f.split(".")[0].split("[")[0] for _, f, _, _ in string.Formatter().parse(template) if f}


def finding_columns(f: Winner | Ratio | Medians) -> set[str]:
    """Every column a finding declaration names (the contract checks they are the model's)."""
    if isinstance(f, Winner):
        return set()
    quotes = [f.quote, *(c.quote for c in getattr(f, "more", ()))]
    named = {p.only or p.unless for q in quotes for _, p in q if isinstance(p, Pick)}
    if isinstance(f, Ratio):
        return {c for c in {*f.by, *named} if c}
    named |= {f.metric, f.per, f.each}
    for by in (f.by, *(c.by for c in f.more)):
        named.add(by.column if isinstance(by, Above) else by)
    for c in f.where:
        named |= cond_columns(c)
    return {c for c in named if c}


def finding_templates(f: Winner | Ratio | Medians) -> list[tuple[str, str, set[str]]]:
    """(field, template, the placeholders it may use) of a finding declaration."""
    if isinstance(f, Winner):
        head = {"winner", "model", "label", "wins", "configurations", "share", "median_speedup", "max_speedup",
                "baseline"}
        return [("text", f.text, head), ("weakest", f.weakest, {"axis", "value", "stops_share", "count", "instead"}),
                ("instead", f.instead, {"other", "other_n"})]
    if isinstance(f, Ratio):
        return [("text", f.text, quote_names(f.quote))]
    if f.each:
        out = [("text", f.text, {"clauses", "more"}), ("clause", f.clause, {"each"} | quote_names(f.quote))]
    else:
        out = [("text", f.text, {"more"} | quote_names(f.quote))]
    return out + [(f"more[{i}].text", c.text, quote_names(c.quote)) for i, c in enumerate(f.more)]
