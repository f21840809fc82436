"""`memsweep compare --format mail`: a plain-text block to paste into a mail, in the shape of mmtests'
compare-kernels (one block per metric, a configuration per line, each side's value, the change in brackets,
a mark on a significant change) with LKP's sampled rule, under 80 columns.

    memsweep compare, B against A (B/A per point)
    A: deb: profile seed; kernel debian:6.12, image 5d2c81f0, 6.12.118+deb12-amd64 (tcg); host vm
    B: k: profile seed; kernel series:6.12, image 173b5704, 6.12.118 (tcg); host vm
    paired: A at strategy=slow, B at strategy=template_nt_inline, each other axis alike

    memmap init_instructions: kernel rows, lower is better
    namespace_size  align  mode    map           A             B    change
    1GiB            4KiB   fsdax   dev   3,425,924     2,480,000  (-27.6%)

Columns: the axes that vary over the compared points, named, one configuration per line (never cut: a
table too wide for a line puts each configuration on its own line above its values). Each side's value
is rounded to what its interval allows (the spread of its samples, or a modeled value's error bar, as
`-a/+b%` beside it; tables.bar_parts) and printed whole where it has none (a count: every digit is the
computation's). `**` marks a change by the sampled rule only (ratios.RULE); a modeled value never gets it:
where both sides' error bars are apart the row says `apart` (outside both bars: two computations, not a
statistical test). More than compare.MAIL_ROWS distinct rows print B/A grouped by the axes that explain
it first, then the ratios.TOP largest changes.
"""

from __future__ import annotations

import textwrap

from analysis.tables import SMALLEST_BAR, UNIT_TEXT, as_count, bar_parts

from .axes import SEVERAL

from .compare import Block, Comparison, rule_lines, summary_line, what, words
from .ratios import BETTER, WORSE, ratio

WIDTH = 79  # a mail's line, with room for a quote mark
GAP = "  "
GROUP_ROWS = 12  # groups a grouped summary lists
SAMPLED_MARK, BARS_MARK = "**", "apart"
LEGEND = {SAMPLED_MARK: f"{SAMPLED_MARK}: a change by the sampled rule above",
          BARS_MARK: f"{BARS_MARK}: outside both error bars (each value outside the other's bar): two modeled "
                     "computations apart, not a statistical test"}


def mail(cmp: Comparison) -> str:
    out = ["memsweep compare, B against A (B/A per point)"]
    out += _wrap(f"A: {cmp.a.name}: {what(cmp.a, True)}") + _wrap(f"B: {cmp.b.name}: {what(cmp.b, True)}")
    for line in (f"only the points where {cmp.where}" if cmp.where else "",
                 f"paired: {cmp.paired}" if cmp.paired else "", cmp.chosen):
        if line:
            out += _wrap(line)
    rules = {line for bl in cmp.blocks for line in rule_lines(bl) if not _modeled_only(bl) or "modeled" in line}
    for line in sorted(rules):
        out += _wrap(line)
    for bl in cmp.blocks:
        out += ["", *_wrap(f"{bl.model} {bl.metric.removeprefix('metric_')}: {_sources(bl)}, "
                           f"{'higher' if bl.higher else 'lower'} is better")]
        if bl.categorical or not bl.compared or bl.listed.is_empty():
            out += _wrap(summary_line(bl))
            continue
        out += _wrap(summary_line(bl))
        for line in bl.references:
            out += _wrap(line)
        if bl.more:
            out += ["", *_groups(bl)]
        out += ["", *_table(bl)]
    return "\n".join(out) + "\n"


def _modeled_only(bl: Block) -> bool:
    return bool(bl.summary.get("barred")) and bl.summary.get("barred") == bl.summary.get("sampled")


def _sources(bl: Block) -> str:
    return f"{bl.source_a} rows" if bl.source_a == bl.source_b else f"{bl.source_a} (A) vs {bl.source_b} (B) rows"


def _groups(bl: Block) -> list[str]:
    """B/A by the grouping axes: each group's points, median, min and max, and its better / worse counts."""
    g, faster, slower = bl.groups, *words(bl)
    if g.is_empty():
        return []
    axes = [c for c in bl.group_axes]
    names = " and ".join(c.removeprefix("param_") for c in axes) or "all points"
    head = [c.removeprefix("param_") for c in axes] or ["group"]
    shown = g.head(GROUP_ROWS)
    rows = [[*(r[f"label_{c}"] for c in axes), *([] if axes else [r["group"]]), f"{r['n']:,}", ratio(r["median"]),
             ratio(r["min"]), ratio(r["max"]), f"{r[BETTER]:,}", f"{r[WORSE]:,}"] for r in shown.iter_rows(named=True)]
    more = f" (the first {GROUP_ROWS} of {g.height})" if g.height > GROUP_ROWS else ""
    return [f"B/A by {names}{more}:",
            *_grid([*head, "points", "median", "min", "max", faster, slower], rows, left=len(head))]


def _table(bl: Block) -> list[str]:
    """The listed rows: the configuration's axes, A and its interval, B and its interval, the change, the mark.
    Intervals all under SMALLEST_BAR of their values (a guest's binds under TCG) are said once, not shown."""
    rows = bl.listed
    cfg = [c for c in rows.columns if c.startswith("cfg_")]
    # an axis with one value over the listed rows is said once, above them (the largest changes of a big
    # comparison often share their strategy)
    same = [c for c in cfg if rows.height > 1 and rows[c].n_unique() == 1 and rows[c][0] != SEVERAL]
    axes = [c for c in cfg if c not in same]
    merged = rows["points"].max() > 1
    values = [(_value(r, "a", bl.unit), _value(r, "b", bl.unit)) for r in rows.iter_rows(named=True)]
    spreads = any(_wide(r, t) for r in rows.iter_rows(named=True) for t in "ab")
    head = [c.removeprefix("cfg_") for c in axes] + (["points"] if merged else []) + \
        (["A", "-/+", "B", "-/+"] if spreads else ["A", "B"]) + ["change", ""]
    body, marks = [], set()
    for r, (va, vb) in zip(rows.iter_rows(named=True), values):
        mark = _mark(r)
        marks.add(mark)
        change = "" if not r["a"] else f"({(r['b'] - r['a']) / abs(r['a']) * 100:+.1f}%)"
        sides = [*va, *vb] if spreads else [va[0], vb[0]]
        body.append([*(r[c] for c in axes), *([f"{r['points']:,}"] if merged else []), *sides, change, mark])
    unit = UNIT_TEXT.get(bl.unit, bl.unit)
    title = (f"each of the {rows.height} distinct rows" if not bl.more else
             f"the {rows.height} largest changes (by |log B/A|; {bl.more:,} more distinct rows)") + \
        (f", in {unit}:" if unit else ":")
    notes = [LEGEND[m] for m in (SAMPLED_MARK, BARS_MARK) if m in marks]
    if not spreads and any(x[1] for pair in values for x in pair):
        notes.insert(0, f"each side's interval is under {SMALLEST_BAR}% of its value: values rounded to it, "
                        "intervals not shown")
    elif not spreads and any(r["a_spread"] or r["b_spread"] for r in rows.iter_rows(named=True)):
        notes.insert(0, "each side's samples agree at every row (min = max): values whole, no interval")
    if merged:
        collapsed = ", ".join(c.removeprefix("param_") for c in bl.view.collapsed)
        notes.insert(0, "points: how many points a row stands for, alike in A and B"
                     + (f" (they differ in {collapsed}, which changes no value)" if collapsed else "")
                     + (f"; {SEVERAL}: they differ in that axis" if any(SEVERAL in r[:len(axes)] for r in body) else ""))
    fixed = _wrap("every row: " + " ".join(f"{c.removeprefix('cfg_')}={rows[c][0]}" for c in same)) if same else []
    return [title, *fixed, *_grid(head, body, left=len(axes)), *[line for text in notes for line in _wrap(text)]]


def _wide(r: dict, side: str) -> bool:
    """Whether a side's interval reaches SMALLEST_BAR % of its value or more on either side."""
    v = r[side]
    if not r[f"{side}_spread"] or not v:
        return False
    return max(v - r[f"{side}_lo"], r[f"{side}_hi"] - v) >= abs(v) * SMALLEST_BAR / 100


def _mark(r: dict) -> str:
    """`**` for a significant change between sampled sides; `apart` where an error bar decided it."""
    if not r["significant"]:
        return ""
    return BARS_MARK if r.get("a_bar") or r.get("b_bar") else SAMPLED_MARK


def _value(r: dict, side: str, unit: str) -> tuple[str, str]:
    """A side's value, rounded to what its interval allows, and the interval as -a/+b% of it; a value with
    no interval (or a zero one) whole; thousands separated."""
    v = r[side]
    parts = bar_parts(float(v), r[f"{side}_lo"], r[f"{side}_hi"]) if r[f"{side}_spread"] and v else None
    if parts is not None:
        text = parts[0] if unit or not float(v).is_integer() else parts[0].partition(".")[0]  # a count: no decimals
        return _thousands(text), parts[1]
    if not unit and float(v).is_integer():
        return f"{as_count(v):,}", ""
    return (_thousands(f"{v:.6g}") if isinstance(v, float) else f"{v:,}"), ""


def _thousands(text: str) -> str:
    """'10855000' -> '10,855,000'; '1234.5' -> '1,234.5' (a number as text, its digits kept)."""
    whole, dot, frac = text.partition(".")
    if "e" in text or not whole.lstrip("-").isdigit():
        return text
    return f"{int(whole):,}" + dot + frac


def _grid(head: list[str], rows: list[list[str]], *, left: int) -> list[str]:
    """A table: the first `left` columns left-aligned (the configuration), the others right-aligned; where
    it is wider than WIDTH, each row's configuration on a line of its own (`axis=value ...`) above its
    values, so nothing is ever cut."""
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]

    def line(cells, cols, first=0):
        out = ""
        for i, (c, w) in enumerate(zip(cells, cols)):
            if w:  # one space between the configuration's columns, two elsewhere
                out += ("" if not out else " " if i + first < left else GAP) + \
                    (str(c).ljust(w) if i + first < left else str(c).rjust(w))
        return out.rstrip()

    if all(len(line(r, widths)) <= WIDTH for r in (head, *rows)):
        return [line(head, widths), *(line(r, widths) for r in rows)]
    indent = "    "
    out = [indent + line(head[left:], widths[left:], left)]
    for r in rows:
        out += _wrap(" ".join(f"{h}={c}" for h, c in zip(head[:left], r[:left])))
        out.append(indent + line(r[left:], widths[left:], left))
    return out


def _wrap(line: str) -> list[str]:
    return textwrap.wrap(line, WIDTH, subsequent_indent="  ", break_on_hyphens=False) or [""]
