"""The `memsweep` command line.

Bad input (a spec, an argument, a corrupt dataset) prints one message naming
the field and what is allowed, exits with status 2, and writes nothing.
"""

from __future__ import annotations

import argparse
import sys

from analysis.exceptions import AnalysisError
from workers.exceptions import ProfileError

from .exceptions import DatasetError, SpecError, UsageError

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer (got {text!r})")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="memsweep",
        description="Parameter sweeps of Linux device-memory paths (memmap, copy, pfnmap, young) on Ray.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("run", help="run a sweep into a Parquet dataset (resumes what exists)")
    r.add_argument("spec", nargs="?", default="default", metavar="SPEC",
                   help="a spec file, or a shipped spec: default, seed, large (default: default)")
    r.add_argument("--out", default="results", help="output folder or URI (default: ./results)")
    r.add_argument("--address", help="join a Ray cluster (auto, HOST:PORT, ray://...); default: embedded Ray")
    r.add_argument("--fresh", action="store_true", help="delete OUT/<sweep> first and start over")
    r.add_argument("--cpus", type=_positive_int, help="CPUs of the embedded Ray (default: all of this machine's)")
    r.add_argument("--no-report", action="store_true", help="do not write report/report.html at the end")
    r.add_argument("--quiet", action="store_true", help="no progress bar")

    s = sub.add_parser("submit", help="submit a sweep to a Ray cluster as a batch job (Ray Jobs)")
    s.add_argument("spec", metavar="SPEC")
    s.add_argument("--address", required=True, help="the cluster's Jobs address, http://HEAD:8265")
    s.add_argument("--out", default="results",
                   help="output folder or URI as the cluster sees it (default: results, relative to the job)")
    s.add_argument("--wait", action="store_true", help="wait for the job and print its logs")

    for name, text in (("status", "chunks done/total and failures"),
                       ("verify", "check every part, the row counts and point ids")):
        c = sub.add_parser(name, help=text)
        c.add_argument("sweep_dir", metavar="OUT/SWEEP")

    rep = sub.add_parser("report", help="figures and a self-contained report.html")
    rep.add_argument("sweep_dir", metavar="OUT/SWEEP")
    rep.add_argument("--out", help="where to write report.html (default: OUT/SWEEP/report/report.html)")

    t = sub.add_parser("table", help="a plain-text comparison table, mailing-list style")
    t.add_argument("sweep_dir", metavar="OUT/SWEEP")
    t.add_argument("--model", required=True)
    t.add_argument("--rows", required=True, metavar="AXIS")
    t.add_argument("--cols", required=True, metavar="AXIS")
    t.add_argument("--metric", help="metric column (default: the model's headline metric)")

    cal = sub.add_parser("calibrate", help="fit a profile to the published figures; per-figure and leave-one-out error")
    cal.add_argument("--profile", default="seed", help="profile name or file (default: seed)")
    cal.add_argument("--model", action="append", help="calibrate only this model (repeatable)")
    cal.add_argument("--json", action="store_true",
                     help="print a JSON list of per-figure results; 'use' is 'fit' or 'validation'")
    cal.add_argument("--starts", type=_positive_int, default=10, metavar="N",
                     help="neutral starts per fit (default 10; leave-one-out refits take 3)")
    cal.add_argument("--save", metavar="FILE", help="write the fitted profile to FILE (TOML)")
    cal.add_argument("--from", dest="source", metavar="OUT/SWEEP",
                     help="fit to this sweep's measured rows (source = measured) instead of the published figures")
    cal.add_argument("--holdout", action="append", metavar="SIZE",
                     help="with --from: keep this namespace size out of the fit and report its prediction")
    cal.add_argument("--statistic", choices=("min", "median"), default=None,
                     help="with --from: fit each point's least disturbed time (measure_min, the default) or its "
                          "median (measure_median)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (SpecError, UsageError, DatasetError, ProfileError, AnalysisError) as e:
        print(f"memsweep {args.command}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"memsweep {args.command}: interrupted; rerun the same command to resume.", file=sys.stderr)
        return 130


def cmd_run(args) -> int:
    from .runner import run
    from .spec import load_spec

    spec = load_spec(args.spec)
    if args.cpus and args.address:
        raise UsageError("'--cpus' sizes the embedded Ray; it cannot be given with '--address'.")
    summary = run(spec, args.out, address=args.address, fresh=args.fresh, progress=not args.quiet, cpus=args.cpus)
    rate = summary.points / summary.seconds if summary.seconds else 0.0
    print(
        f"{spec.name}: {summary.points} points in {summary.chunks} chunks "
        f"({summary.computed} computed, {summary.skipped} skipped, {len(summary.failed)} failed) "
        f"in {summary.seconds:.1f} s (Ray start {summary.ray_start_seconds:.1f} s, tasks {summary.exec_seconds:.1f} s "
        f"on {summary.cpus} CPUs; {rate:,.0f} points/s); status {summary.status}"
    )
    print(f"dataset: {summary.location.uri}")
    for f in summary.failed:
        print(f"failed: {f}", file=sys.stderr)
    if summary.failed:
        print("rerun the same command to retry the failed chunks.", file=sys.stderr)
        return EXIT_PROBLEMS
    if not args.no_report:
        from analysis.report import write_report

        print(f"report: {write_report(summary.location.uri)}")
    return EXIT_OK


def cmd_submit(args) -> int:
    from .submit import submit

    return submit(args.spec, args.address, args.out, wait=args.wait)


def cmd_status(args) -> int:
    from .inspect import status

    print(status(args.sweep_dir))
    return EXIT_OK


def cmd_verify(args) -> int:
    from .inspect import verify

    problems, summary = verify(args.sweep_dir)
    print(summary)
    for p in problems:
        print(f"problem: {p}")
    return EXIT_PROBLEMS if problems else EXIT_OK


def cmd_report(args) -> int:
    from analysis.report import write_report

    print(f"report: {write_report(args.sweep_dir, args.out)}")
    return EXIT_OK


def cmd_table(args) -> int:
    from analysis.tables import text_table

    print(text_table(args.sweep_dir, model=args.model, rows=args.rows, cols=args.cols, metric=args.metric))
    return EXIT_OK


def cmd_calibrate(args) -> int:
    from .calibration import run_calibration

    return run_calibration(args.profile, models=args.model, as_json=args.json, save=args.save,
                           source=args.source, holdout=args.holdout, statistic=args.statistic,
                           starts=args.starts)


COMMANDS = {
    "run": cmd_run, "submit": cmd_submit, "status": cmd_status, "verify": cmd_verify,
    "report": cmd_report, "table": cmd_table, "calibrate": cmd_calibrate,
}

if __name__ == "__main__":
    sys.exit(main())
