"""Where `memsweep report`'s time and memory go, section by section, on one sweep.

    .venv/bin/python benchmarks/time_report_sections.py OUT/SWEEP

In this process: analysis.report.page.write_report with each section's function (the figures, the key
findings, every table) wrapped to time it and to read the process's peak resident memory (ru_maxrss) when it
returns. The peak is the process's so far, not the section's own: a section that raises it is where the
report's peak is. Sections run in the page's order of computation. Prints one Markdown row per section.
Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import functools
import resource
import tempfile
import time

import analysis.report.page as page

SECTIONS = ("render_all", "status_summary", "reasons", "key_findings", "published_table", "evidence_tables",
            "kernel_tables", "gain_tables", "measured_tables", "best_tables", "speedup_tables", "growth_tables",
            "declared_tables", "provenance")


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep", help="OUT/SWEEP")
    a = ap.parse_args()
    seen: list[tuple[str, float, float]] = []

    def timed(name: str, f):
        @functools.wraps(f)
        def run(*args, **kwargs):
            t0 = time.perf_counter()
            out = f(*args, **kwargs)
            seen.append((name, time.perf_counter() - t0, peak_mib()))
            return out
        return run

    for name in SECTIONS:
        setattr(page, name, timed(name, getattr(page, name)))
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memsweep-sections-") as tmp:
        page.write_report(a.sweep, f"{tmp}/")
    total = time.perf_counter() - t0
    print("| section | s | peak RSS so far MiB |")
    print("|---|---|---|")
    for name, seconds, peak in seen:
        print(f"| {name} | {seconds:.2f} | {peak:.0f} |")
    print(f"| (whole write_report) | {total:.2f} | {peak_mib():.0f} |")


if __name__ == "__main__":
    main()
