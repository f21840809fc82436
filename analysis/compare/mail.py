"""`memsweep compare --format mail`: a plain-text block to paste into a mail, in the manner of LKP's
comparison tables (each side's value with its spread, the %change, a mark on the significant rows) and
mmtests' compare-kernels (`**` on a significant change), under 80 columns.

    memsweep compare A B, B against A
    A: <sweep>: profile seed; kernel 6.12.118+deb12-amd64 (tcg); host vm
    B: ...
    rule: a sampled point changes when ... (ratios.RULE)

    memmap init_instructions, kernel rows (lower is better)
               A      -/+%   %change             B      -/+%  configuration
        13235880     0.011    +31.0% **   17340840         0  1GiB 2MiB devdax dev

`-/+%` is a side's interval, how far below and above its value it reaches in % of the value: the spread of
its samples ([least, median]) or a modeled value's error bar as stored (workers.interval); one number where
both read the same; blank for a value with neither (a count). `**` marks a
significant change by the rules; a change between rows with no interval has no mark (the computation
changed, every digit of it). At most compare.MAIL_ROWS rows: every point of a
small comparison, else the changes (significant ones, where a side rests on samples) largest first.
"""

from __future__ import annotations

import textwrap

from analysis.tables import as_count, format_value

from .compare import Block, Comparison, rule_lines, summary_line, what

WIDTH = 79  # a mail's line, with room for a quote mark
CONFIG = WIDTH - 60  # columns left for the configuration beside the values, their intervals and the change


def mail(cmp: Comparison) -> str:
    out = ["memsweep compare, B against A (B/A per point)"]
    out += _wrap(f"A: {cmp.a.name}: {what(cmp.a)}") + _wrap(f"B: {cmp.b.name}: {what(cmp.b)}")
    if cmp.where:
        out += _wrap(f"only the points where {cmp.where}")
    rules = {line for bl in cmp.blocks for line in rule_lines(bl)}
    for line in sorted(rules):
        out += _wrap(line)
    for bl in cmp.blocks:
        out += ["", *_wrap(f"{bl.model} {bl.metric.removeprefix('metric_')}, {_sources(bl)} "
                           f"({'higher' if bl.higher else 'lower'} is better)")]
        if bl.categorical or not bl.compared:
            out += _wrap(summary_line(bl))
            continue
        out += _table(bl)
        out += _wrap(summary_line(bl))
    return "\n".join(out) + "\n"


def _sources(bl: Block) -> str:
    return f"{bl.source_a} rows" if bl.source_a == bl.source_b else f"{bl.source_a} (A) vs {bl.source_b} (B) rows"


def _table(bl: Block) -> list[str]:
    rows = bl.listed
    if rows.is_empty():
        return ["no point changed significantly"] if bl.summary.get("sampled") else []
    head = f"{'A':>12} {'-/+%':>9} {'%change':>9}    {'B':>12} {'-/+%':>9}  configuration"
    out = [head]
    for r in rows.iter_rows(named=True):
        mark = "**" if r["significant"] else "  "
        change = "" if r["a"] == 0 else f"{(r['b'] - r['a']) / abs(r['a']) * 100:+.1f}%"
        config = r["configuration"]
        if len(config) > CONFIG:
            config = config[:CONFIG - 3] + "..."
        out.append(f"{_value(r['a'], bl.unit):>12} {_spread(r, 'a'):>9} {change:>9} "
                   f"{mark} {_value(r['b'], bl.unit):>12} {_spread(r, 'b'):>9}  {config}")
    if bl.more:
        out.append(f"... and {bl.more:,} more changes (the largest are listed)")
    return out


def _value(v: float, unit: str) -> str:
    return format_value(as_count(v) if not unit else v, unit)


def _spread(r: dict, side: str) -> str:
    """A side's -/+%: the distances from its value down and up to its interval's ends, in % of the value
    ("4.1/6.5"; one number where both read the same)."""
    v, lo, hi = r[side], r[f"{side}_lo"], r[f"{side}_hi"]
    if not r[f"{side}_spread"] or not v:
        return ""
    low, high = (f"{pct:.2g}" if pct < 100 else f"{pct:.0f}"
                 for pct in (max(0.0, v - lo) / abs(v) * 100, max(0.0, hi - v) / abs(v) * 100))
    return low if low == high else f"{low}/{high}"


def _wrap(line: str) -> list[str]:
    return textwrap.wrap(line, WIDTH, subsequent_indent="  ", break_on_hyphens=False) or [""]
