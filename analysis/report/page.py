"""`memsweep report`: one self-contained report.html per sweep (figures embedded, no network).

The page holds the sweep's name and description, a summary of points by status
and of infeasible / failed points by reason, provenance, the figures (PNG as
base64 data URIs; PNG and SVG files are also written beside the page), the key
tables, and the spec as run. Every piece of text from the dataset is escaped.
"""

from __future__ import annotations

import base64
import html
import tempfile
import time
from pathlib import Path

from analysis.figures.index import render_all
from analysis.figures.plotting import Rendered, Skipped
from analysis.metrics import PER_VARIANT
from analysis.read import Sweep
from workers.dataset.folder import at, check_inside, write_files

from .findings import findings_html, key_findings
from .overview import (
    Table,
    best_tables,
    declared_tables,
    evidence_tables,
    gain_tables,
    growth_tables,
    kernel_tables,
    measured_tables,
    provenance,
    published_table,
    reasons,
    reference_tables,
    speedup_tables,
    status_summary,
)

REPORT_FILE = "report.html"
CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1380px;
       padding: 0 24px 48px; color: #1d1d1f; line-height: 1.45; }
h1 { margin-top: 28px; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 40px; }
h3 { margin-bottom: 4px; }
nav a { margin-right: 14px; }
table { border-collapse: collapse; margin: 8px 0 4px; font-size: 13px; }
th, td { border: 1px solid #d0d0d0; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f2f2f4; } tr:nth-child(even) td { background: #fafafa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.caption { color: #555; font-size: 13px; margin: 2px 0 10px; max-width: 1100px; }
figure { margin: 26px 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 13px; color: #444; max-width: 1100px; }
pre { background: #f6f6f8; padding: 12px; overflow-x: auto; font-size: 12px; border: 1px solid #e2e2e2; }
.skipped { color: #7a4b00; } .note { color: #7a4b00; font-size: 13px; }
.evidence { color: #555; font-size: 12.5px; }
"""


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def html_table(table: Table) -> str:
    """A Table as a titled, captioned <table>; numeric-looking cells right-aligned."""
    df = table.frame
    head = "".join(f"<th>{esc(c)}</th>" for c in df.columns)
    body = []
    for row in df.iter_rows():
        cells = "".join(f'<td class="{"num" if _numeric(v) else "txt"}">{esc(v)}</td>' for v in row)
        body.append(f"<tr>{cells}</tr>")
    rows = "".join(body) or f'<tr><td colspan="{max(df.width, 1)}">(none)</td></tr>'
    return (f"<h3>{esc(table.title)}</h3><p class=\"caption\">{esc(table.caption)}</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")


def _numeric(v: object) -> bool:
    s = str(v).replace(",", "").replace("%", "").replace("x", "").split(" ")[0].lstrip("+-")
    return s.replace(".", "", 1).isdigit()


def html_figure(fig: Rendered) -> str:
    """A figure as <figure>, its PNG inline; data-panels / data-empty-panels carry how many panels it
    has and how many of them show no data (counted when it was drawn)."""
    data = base64.b64encode(fig.png.read_bytes()).decode("ascii")
    return (f'<figure id="fig-{esc(fig.id)}" class="memsweep-figure" data-panels="{fig.panels}" '
            f'data-empty-panels="{fig.empty_panels}">'
            f'<img src="data:image/png;base64,{data}" alt="{esc(fig.title)}">'
            f"<figcaption><strong>{esc(fig.title)}.</strong> {esc(fig.caption)} "
            f"<em>Files: {esc(fig.png.name)}, {esc(fig.svg.name)}.</em></figcaption></figure>")


def render_html(sweep: Sweep, figures: list[Rendered | Skipped], seconds: float | None = None) -> str:
    """The whole page as a string (pure: reads the sweep and the rendered PNGs, writes nothing)."""
    drawn = [f for f in figures if isinstance(f, Rendered)]
    skipped = [f for f in figures if isinstance(f, Skipped)]
    status = sweep.profile_status()
    uncalibrated = [f"Profile {status}: every number of this report rests on its assumed costs."] \
        if "NOT calibrated" in status else []
    changed = [c] if (c := sweep.profile_change()) else []
    notes = "".join(f'<p class="note">{esc(n)}</p>' for n in (*uncalibrated, *changed, *sweep.plugin_errors))
    summary = [status_summary(sweep), reasons(sweep)]
    # the key findings and the best and speedup tables share metrics.per_variant's frames (one row per
    # configuration, 0.2 GB on `large`); let go of them before the growth fits, which need as much again
    found = key_findings(sweep)
    tables = [published_table(sweep), *evidence_tables(sweep), *kernel_tables(sweep), *gain_tables(sweep),
              *reference_tables(sweep), *measured_tables(sweep), *best_tables(sweep), *speedup_tables(sweep)]
    sweep.forget(PER_VARIANT)
    tables += [*growth_tables(sweep), *declared_tables(sweep)]
    skipped_html = "".join(f"<li><strong>{esc(s.title)}</strong>: {esc(s.reason)}</li>" for s in skipped)
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>memsweep report: {esc(sweep.name)}</title><style>{CSS}</style></head>",
        f'<body data-figure-count="{len(drawn)}">',
        f"<h1>memsweep report: {esc(sweep.name)}</h1>",
        f'<p class="description">{esc(sweep.description) or "<em>(no description)</em>"}</p>',
        '<nav><a href="#findings">Key findings</a><a href="#summary">Summary</a><a href="#provenance">Provenance</a>'
        '<a href="#figures">Figures</a><a href="#tables">Tables</a><a href="#spec">Spec</a></nav>', notes,
        f'<section id="key-findings">{findings_html(found, {f.id for f in drawn}, esc)}</section>',
        '<section id="summary"><h2>Summary</h2>', *(html_table(t) for t in summary), "</section>",
        f'<section id="provenance">{html_table(provenance(sweep)).replace("<h3>", "<h2>").replace("</h3>", "</h2>")}'
        "</section>",
        '<section id="figures"><h2>Figures</h2>',
        f'<p id="figure-count" data-count="{len(drawn)}">{len(drawn)} figures; {len(skipped)} skipped.</p>',
        *(html_figure(f) for f in drawn),
        f'<h3>Skipped figures</h3><ul class="skipped">{skipped_html}</ul>' if skipped else "",
        "</section>",
        '<section id="tables"><h2>Tables</h2>', *(html_table(t) for t in tables), "</section>",
        f'<section id="spec"><h2>Spec as run</h2><pre>{esc(sweep.spec_text)}</pre></section>',
        f'<footer class="caption">Generated by memsweep analysis from {esc(sweep.uri)} at '
        f'{esc(time.strftime("%Y-%m-%d %H:%M:%S %Z"))}'
        + (f" in {seconds:.1f} s" if seconds is not None else "") + ".</footer>",
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p)


def write_report(sweep_dir: str, out: str | None = None) -> str:
    """Write report.html (and the figures as PNG and SVG beside it); return the page's path.

    Default: OUT/SWEEP/_report/report.html (report/ in a folder of schema 1-2; also for a sweep on an
    object store: the page and figures are uploaded there). `out` is a file path, or a folder to put
    report.html in."""
    t0 = time.perf_counter()
    sweep = Sweep(sweep_dir)
    if out is not None:
        target = Path(out)
        if target.is_dir() or str(out).endswith("/"):
            target = target / REPORT_FILE
        target.parent.mkdir(parents=True, exist_ok=True)
        loc, folder, name, shown = at(str(target.parent)), str(target.parent.resolve()), target.name, str(target)
    else:
        loc, folder, name = sweep.loc, f"{sweep.root}/{sweep.layout.report}", REPORT_FILE
        base, sep, query = sweep.uri.partition("?")  # keep the URI's options last
        shown = (str(Path(folder) / REPORT_FILE) if loc.is_local
                 else f"{base}/{sweep.layout.report}/{REPORT_FILE}{sep}{query}")
    check_inside(loc, f"{folder}/{name}")  # a _report linked out of the sweep: refused before rendering
    with tempfile.TemporaryDirectory(prefix="memsweep-report-") as tmp:
        work = Path(tmp)
        figures = render_all(sweep, work)
        (work / name).write_text(render_html(sweep, figures, time.perf_counter() - t0), encoding="utf-8")
        # each file is written whole (temporary name and rename, or one PUT), the page last: a failure
        # (no space, no permission) leaves the old report as it was, nothing half-written
        write_files(loc, folder, sorted(work.iterdir(), key=lambda f: f.name == name))
    return shown
