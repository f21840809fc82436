"""Which points and axes `memsweep compare` shows: `--where` filters, `--by` groupings, and the axes
collapsed because they change no value.

`--where AXIS=VALUE` keeps the points whose axis has that value (the value read as the axis reads a
spec's, `Axis.canonical`: `4TiB`, `auto`, `true`); several values of one axis are either, different
axes all. `--pair AXIS=A_VALUE:B_VALUE` compares A's rows at one value of the axis with B's at another,
on every other axis (a path against a path: the series' shipped strategy against a stock kernel's slow
one; two specs that differ in one value). `--by AXIS[,AXIS]` groups the summary by those axes. A model
that lacks one of the named axes is left out. An axis along which neither A's nor B's value changes
anywhere (pfnmap's `arch` for the time of a load) would repeat every listed row once per value: it is
collapsed. One that changes no value at some values of the other axes only (`medium` under map=mem:
that memmap is in DRAM whatever the medium) is merged where so: a listed row's points share A and B and
differ in it (`*`), and the row says how many points it stands for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from analysis.exceptions import AnalysisError
from analysis.read import ModelRows, Sweep, axis_value, value_expr

# Listed rows whose A and B differ by less than this are one row: they print alike at the listing's digits
# (large's start_offset moves a 16 TiB memmap's 59019.0 ms by 0.1 ms), and ten of them would fill a top-10.
SHOWN_REL = 1e-4
SHOWN_DIGITS = 5  # significant digits of A and B that tell listed rows apart (SHOWN_REL's)
BY, WHERE, PAIR = "--by", "--where", "--pair"
SEVERAL = "*"  # a listed row's points differ in this axis
MAX_ROWS = 100_000  # points a one-row-per-configuration table may merge into its rows


@dataclass(frozen=True, kw_only=True, slots=True)
class Selection:
    """What --where and --by ask of one model: the filter on its param columns and the grouping axes
    (None: the default grouping)."""

    where: pl.Expr
    by: tuple[str, ...] | None
    pair: Pairing | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Pairing:
    """`--pair`: A's rows where `a` holds, B's where `b` holds, joined on every axis but `axes`; `text`
    says it for a header ("A at strategy=slow, B at strategy=template_nt_inline")."""

    axes: tuple[str, ...]
    a: pl.Expr
    b: pl.Expr
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class View:
    """The axes a block's tables show: those varying over the compared points less the `collapsed` ones
    (no value of A or B changes along them anywhere); `some` change no value at some of the other axes'
    values (medium under map=mem): a listed row's points may differ in them. A row stands for at most
    `mult` points."""

    shown: tuple[str, ...]
    collapsed: tuple[str, ...] = ()
    some: tuple[str, ...] = ()
    mult: int = 1

    def note(self) -> list[str]:
        """What was collapsed, in a line or two (none when nothing was)."""
        out = []
        if self.collapsed:
            names = ", ".join(c.removeprefix("param_") for c in self.collapsed)
            out.append(f"collapsed, no value of A or B changes along them (by more than 0.01%): {names}")
        if self.some:
            names = ", ".join(c.removeprefix("param_") for c in self.some)
            out.append(f"each row is shown once: '{SEVERAL}' where a row's points (same A and B) differ in the axis "
                       f"({names}: they change no value by more than 0.01% at some values of the others)")
        return out


def parse_by(text: str | list[str] | tuple[str, ...] | None) -> list[str] | None:
    """`namespace_size,arch` -> ["namespace_size", "arch"]; None: the default grouping."""
    if text is None:
        return None
    names = [n.strip() for n in text.split(",")] if isinstance(text, str) else list(text)
    if not names or any(not n for n in names):
        raise AnalysisError(f"'{BY}' must be AXIS[,AXIS] (got {text!r}).")
    return names


def parse_pair(items: list[str] | tuple[str, ...] | None) -> list[tuple[str, str, str]]:
    """["strategy=slow:template_nt_inline"] -> [("strategy", "slow", "template_nt_inline")]."""
    out = []
    for item in items or ():
        name, sep, values = item.partition("=")
        a, colon, b = values.partition(":")
        if not sep or not colon or not name.strip() or not a.strip() or not b.strip():
            raise AnalysisError(f"'{PAIR}' must be AXIS=A_VALUE:B_VALUE, e.g. strategy=slow:template_nt_inline "
                                f"(got {item!r}).")
        out.append((name.strip(), a.strip(), b.strip()))
    if len({n for n, _, _ in out}) < len(out):
        raise AnalysisError(f"'{PAIR}' names an axis once (got {list(items or ())}).")
    return out


def _column(name: str) -> str:
    return name if name.startswith("param_") else f"param_{name}"


def select(a: Sweep, b: Sweep, models: list[str], by: list[str] | None, where: list[tuple[str, str]],
           pair: list[tuple[str, str, str]] = ()) -> tuple[dict[str, Selection], list[str]]:
    """Each model that has every axis named, with its Selection; and the models left out (lacking one).
    An axis no model has, or a value the sweeps do not have, raises AnalysisError naming what is allowed."""
    params = {m: [c for c in a.params(m) if c in b.params(m)] for m in models}
    allowed = sorted({c.removeprefix("param_") for cols in params.values() for c in cols})
    scope = f"model {models[0]!r}" if len(models) == 1 else "a model compared"
    named = ([(BY, n, n) for n in by or ()] + [(WHERE, n, f"{n}={v}") for n, v in where]
             + [(PAIR, n, f"{n}={x}:{y}") for n, x, y in pair])
    for flag, name, shown in named:
        if not any(_column(name) in cols for cols in params.values()):
            raise AnalysisError(f"'{flag}' must name an axis of {scope}, one of {allowed} (got {shown!r}).")
    if {_column(n) for n, _ in where} & {_column(n) for n, _, _ in pair}:
        raise AnalysisError(f"'{WHERE}' and '{PAIR}' must name different axes: '{PAIR}' sets the values it "
                            f"compares (got {WHERE} {where_text(where)} and {PAIR} {[n for n, _, _ in pair]}).")
    wanted = {_column(n) for _, n, _ in named}
    kept = [m for m in models if wanted <= set(params[m])]
    if not kept:
        have = "; ".join(f"{m}: {[c.removeprefix('param_') for c in params[m]]}" for m in models)
        raise AnalysisError(f"'{BY}', '{WHERE}' and '{PAIR}' must name axes one model has together (got "
                            f"{sorted(n.removeprefix('param_') for n in wanted)}; axes: {have}).")
    out = {}
    for m in kept:
        chosen: dict[str, list] = {}
        for name, text in where:
            chosen.setdefault(_column(name), []).append(axis_value((a.rows(m), b.rows(m)), _column(name), text,
                                                                   f"{WHERE} {name.removeprefix('param_')}"))
        expr = pl.all_horizontal([pl.any_horizontal([value_expr(c, v) for v in vs]) for c, vs in chosen.items()]) \
            if chosen else pl.lit(True)
        out[m] = Selection(where=expr, by=tuple(_column(n) for n in by) if by is not None else None,
                           pair=_pairing(a, b, m, pair) if pair else None)
    return out, [m for m in models if m not in kept]


def _pairing(a: Sweep, b: Sweep, model: str, pair: list[tuple[str, str, str]]) -> Pairing:
    """The Pairing of `model`: each side's value read against that side's own rows."""
    cols = [_column(n) for n, _, _ in pair]
    va = [axis_value((a.rows(model),), c, x, f"{PAIR} {n} (A's value)") for c, (n, x, _) in zip(cols, pair)]
    vb = [axis_value((b.rows(model),), c, y, f"{PAIR} {n} (B's value)") for c, (n, _, y) in zip(cols, pair)]
    ra = a.rows(model)
    says = [(" ".join(f"{c.removeprefix('param_')}={ra.label(c, v)}" for c, v in zip(cols, side)))
            for side in (va, vb)]
    return Pairing(axes=tuple(cols), a=pl.all_horizontal([value_expr(c, v) for c, v in zip(cols, va)]),
                   b=pl.all_horizontal([value_expr(c, v) for c, v in zip(cols, vb)]),
                   text=f"A at {says[0]}, B at {says[1]}")


def where_text(where: list[tuple[str, str]]) -> str:
    """`namespace_size=4TiB, arch=arm64 or x86_64`: the --where filters as one line."""
    chosen: dict[str, list[str]] = {}
    for name, text in where:
        chosen.setdefault(name.removeprefix("param_"), []).append(text)
    return ", ".join(f"{n}={' or '.join(vs)}" for n, vs in chosen.items())


def numeric_same(column: str) -> pl.Expr:
    """Whether a group's values of `column` are one number as listed (within SHOWN_REL)."""
    c = pl.col(column)
    return (c.max() - c.min()) <= SHOWN_REL * pl.max_horizontal(c.max().abs(), c.min().abs())


def categorical_same(column: str) -> pl.Expr:
    """Whether a group's values of `column` are one value (compared by hash: cheaper than n_unique)."""
    h = pl.col(column).hash()
    return h.min() == h.max()


def _same(categorical: bool) -> pl.Expr:
    """A group's points have one A, one B and one verdict (a measured spread may change the verdict)."""
    same = categorical_same if categorical else numeric_same
    return same("a") & same("b") & categorical_same("verdict")


def collapsible(j: pl.LazyFrame, axes: list[str], distinct: dict[str, int], categorical: bool) -> View:
    """The View of `axes` over the compared points `j`: an axis is collapsed when, at every combination
    of the other axes that has two or more of its values, they all give the same A, B and verdict; it is
    in `some` when that holds at some combinations only."""
    if not axes:
        return View(shown=())
    checks = [j.group_by([c for c in axes if c != x] or pl.lit(0)).agg(_same(categorical).alias("s"),
                                                                       pl.len().alias("k"))
              .select(((pl.col("s") | (pl.col("k") < 2)).all() & (pl.col("k") > 1).any()).alias("flat"),
                      (pl.col("s") & (pl.col("k") > 1)).any().alias("some"))
              for x in axes]
    found = dict(zip(axes, pl.collect_all(checks, engine="streaming")))
    flat = tuple(x for x in axes if found[x]["flat"][0])
    # a category is coarse: rows merged across such axes would be the table of changes again
    some = () if categorical else tuple(x for x in axes if found[x]["some"][0] and x not in flat)
    return View(shown=tuple(c for c in axes if c not in flat), collapsed=flat, some=some,
                mult=math.prod(distinct[c] for c in (*flat, *some)))


def merged(j: pl.LazyFrame, view: View) -> pl.LazyFrame:
    """The compared points `j` as the rows a listing shows: points with the same A, B, verdict and values of
    the shown axes other than `view.some` are one row, `points` of them (point_id: the lowest); an axis of
    `view.some` whose values differ among them is flagged `_several_<axis>` and reads SEVERAL."""
    if not view.collapsed and not view.some:
        return j.with_columns(pl.lit(1, dtype=pl.UInt32).alias("points"))
    schema = j.collect_schema()
    shown = [c for c in view.shown if c not in view.some]
    # A and B as listed: numbers to SHOWN_DIGITS significant digits, so values that print alike are one row
    values = [pl.col(c).round_sig_figs(SHOWN_DIGITS).alias(f"_{c}") if schema[c].is_numeric() else pl.col(c).alias(f"_{c}")
              for c in ("a", "b")]
    rest = [c for c in schema.names() if c not in shown and c != "point_id"]
    return j.group_by(*shown, *values, "verdict").agg(
        pl.len().alias("points"), pl.col("point_id").min(), *(pl.col(c).first() for c in rest if c != "verdict"),
        *((pl.col(c).n_unique() > 1).alias(f"_several_{c}") for c in view.some)).drop("_a", "_b")


def cells(rows: ModelRows, listed: pl.DataFrame, view: View) -> dict[str, list[str]]:
    """The configuration columns of listed rows: each shown axis' labels (SEVERAL where a row's points
    differ in it), then how many points each row stands for when a row may stand for several; the
    point_id when no axis is shown."""
    out = {} if view.shown else {"point_id": [str(v) for v in listed["point_id"].to_list()]}
    for c in view.shown:
        several = listed[f"_several_{c}"].to_list() if f"_several_{c}" in listed.columns else [False] * listed.height
        out[c.removeprefix("param_")] = [SEVERAL if m else rows.label(c, v)
                                         for v, m in zip(listed[c].to_list(), several)]
    if view.collapsed or view.some:
        out["points"] = [f"{v:,}" for v in listed["points"].to_list()]
    return out
