"""The key findings several models say alike, declared as data: `Medians`.

A finding is one sentence with its numbers, computed from a sweep's ok modeled rows by
analysis/report/findings.py, which evaluates every declaration of every model in a sweep with one generic
path (so a plugin model gets its findings the way a shipped one does). A `Medians` is the median of a
metric on a slice of the rows (`where`), grouped by one column or by a condition (a `Cond`: True / False
groups); `quote` picks the groups the sentence names, with optional clauses grouped another way (`more`).

A finding or table only one model has is a function of its own package instead (workers.hooks: `Hook`),
which returns the same quoted groups.

`quote` is a tuple of (name, pick) pairs; a pick is MAX / MIN (the group with the largest / smallest
median), FIRST / LAST (the lowest / highest group value), ALL (every group, listed), or a plain group
value (a value of the column, True / False for a condition). Each name gives the sentence template
`{name}` (the median), `{name_at}` (the group's value, as its label), `{name_n}` (rows or configurations in it) and `{name_bar}` (" (±5.8%)": the
median of the rows' error bars, workers.interval; "" where they have none), and the finding's data the
same keys. Where the rows carry error bars, `{name}` has only the digits its bar supports. A placeholder
takes a format spec on the raw number (`{name_at:g}`); without one the median is
written with the declaration's `fmt` (a format spec such as ".2f", or "bytes": 24.0 GiB) and a group
value as the axis labels it ("2MiB", "80 B" for an int axis in bytes).

Columns are axis names or metric_ columns, as in workers.plots; conditions are its `Cond` / `Either`.
Nothing here reads rows: workers.contract checks the names, analysis computes.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Literal, get_args

from .plots import Cond, Either, column, cond_columns, conditions

Which = Literal["max", "min", "first", "last", "all"]
PICKS = get_args(Which)
FORMATS = ("bytes",)  # besides Python format specs (".2f", ".1%")


@dataclass(frozen=True, slots=True)
class Pick:
    """Which group(s) a quoted name stands for: `which` is one of PICKS."""

    which: Which


MAX, MIN, FIRST, LAST, ALL = (Pick(w) for w in PICKS)


Quote = tuple[tuple[str, object], ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class Clause:
    """An optional clause of a `Medians` sentence, on the same rows grouped by `by`: it fills the
    template's {more} when the sweep has at least two of its groups and every group it quotes."""

    by: str | Cond
    quote: Quote
    text: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "by", column(self.by))


@dataclass(frozen=True, kw_only=True, slots=True)
class Medians:
    """Median of `metric` on the rows satisfying every condition of `where` (Cond / Either, or a dict of
    equalities), per group of `by` (a column, or a Cond: its True and False groups); the clauses of `more`
    fill {more}."""

    id: str
    figure: str
    text: str
    metric: str
    by: str | Cond
    quote: Quote
    where: tuple[Cond | Either, ...] = ()
    more: tuple[Clause, ...] = ()
    fmt: str = ".2f"

    def __post_init__(self) -> None:
        object.__setattr__(self, "where", conditions(self.where))
        object.__setattr__(self, "by", column(self.by))




def quote_names(quote: Quote) -> set[str]:
    """The placeholders a quote gives a template."""
    return {f"{n}{s}" for n, _ in quote for s in ("", "_at", "_n", "_bar")}


def placeholders(template: str) -> set[str]:
    """The field names a template uses ("{best_at:g}" -> "best_at")."""
    return {f.split(".")[0].split("[")[0] for _, f, _, _ in string.Formatter().parse(template) if f}


def finding_columns(f: Medians) -> set[str]:
    """Every column a finding declaration names (the contract checks they are the model's)."""
    named = {f.metric}
    for by in (f.by, *(c.by for c in f.more)):
        named |= cond_columns(by) if isinstance(by, Cond) else {by}
    for c in f.where:
        named |= cond_columns(c)
    return named


def finding_templates(f: Medians) -> list[tuple[str, str, set[str]]]:
    """(field, template, the placeholders it may use) of a finding declaration."""
    out = [("text", f.text, {"more"} | quote_names(f.quote))]
    return out + [(f"more[{i}].text", c.text, quote_names(c.quote)) for i, c in enumerate(f.more)]
