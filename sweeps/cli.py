"""The `memsweep` command line.

Bad input (a spec, an argument, a corrupt dataset) prints one message naming
the field and what is allowed, exits with status 2, and writes nothing; so does
a sweep another driver is running (its lease), and a model plugin that does not
load or breaks the model contract (named, with the rule it breaks). A failed
write (no space, no permission, an I/O error, an object store that keeps
failing) prints one line and exits with status 3.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from workers.exceptions import MemsweepError, StoreIOError
from workers.registry import MODELS

from .exceptions import OUT_RULE, UsageError

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_IO = 0, 1, 2, 3
# Commands that read the models: they discover the memsweep.models plugins first, so a broken one
# stops them (exit 2, one line naming it) before anything is started or written.
NEEDS_MODELS = {"run", "plan", "submit", "report", "table", "compare", "calibrate"}
SWEEP_RULE = "a sweep folder written by 'memsweep run'"
PAGE_RULE = "a file to write the page to, or a folder to put it in"
SAVE_RULE = "a file to write the fitted profile to, in a folder that exists"
NAME_MAX = 255  # bytes in one name of a path, on Linux's filesystems (NAME_MAX in limits.h)
# The arguments that name a sweep folder or where to write, per command: (attribute, the name the user knows,
# the rule, whether it must be a folder). None is an option not given. A folder argument that is an existing
# file is refused as bad input, not left to fail as I/O later; submit's --out is checked by the submit path
# (Ray Jobs: a path as the cluster sees it; Slurm: sweeps.cluster.slurm.check_out_folder), and report's and
# compare's --out may be a file.
PATH_ARGUMENTS = {
    "run": (("out", "--out", OUT_RULE, True),),
    "plan": (("out", "--out", OUT_RULE, True),),
    "submit": (("out", "--out", OUT_RULE, False),),
    "status": (("sweep_dir", "OUT/SWEEP", SWEEP_RULE, True),),
    "verify": (("sweep_dir", "OUT/SWEEP", SWEEP_RULE, True),),
    "report": (("sweep_dir", "OUT/SWEEP", SWEEP_RULE, True), ("out", "--out", PAGE_RULE, False)),
    "table": (("sweep_dir", "OUT/SWEEP", SWEEP_RULE, True),),
    "compare": (("a", "A", SWEEP_RULE, True), ("b", "B", SWEEP_RULE, True), ("out", "--out", PAGE_RULE, False)),
    "calibrate": (("source", "--from", SWEEP_RULE, True), ("save", "--save", SAVE_RULE, False)),
}


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer (got {text!r})")
    return value


def check_paths(args: argparse.Namespace) -> None:
    """Refuse (UsageError, exit 2) an empty sweep folder or output argument, and a folder argument that is
    an existing file, before the command reads or writes anything: an empty --out was the current folder,
    and a file failed later as an I/O error (exit 3)."""
    for attr, field, rule, folder in PATH_ARGUMENTS.get(args.command, ()):
        value = getattr(args, attr)
        if value is None:
            continue
        if not value.strip():
            raise UsageError(f"'{field}' must be {rule} (got {value!r}).")
        if "://" in value:
            continue
        if folder and os.path.exists(value) and not os.path.isdir(value):
            raise UsageError(f"'{field}' must be {rule} (got {value!r}: a file).")
        if folder and os.path.islink(value) and not os.path.exists(value):
            raise UsageError(f"'{field}' must be {rule} (got {value!r}: a link to {os.readlink(value)!r}, "
                             "which does not exist).")
        long = next((p for p in Path(value).parts if len(p.encode()) > NAME_MAX), None)
        if long is not None:
            raise UsageError(f"'{field}' must be {rule} (got a name of {len(long.encode())} bytes in it, "
                             f"{long[:20]}...: a filesystem takes at most {NAME_MAX}).")
    if getattr(args, "save", None):  # calibrate writes it after a fit of minutes: a path it cannot write fails now
        where = os.path.dirname(os.path.abspath(args.save))
        why = ("a folder" if os.path.isdir(args.save) else f"no folder {where}" if not os.path.isdir(where)
               else f"{where} is not writable" if not os.access(where, os.W_OK) else None)
        if why:
            raise UsageError(f"'--save' must be {SAVE_RULE} (got {args.save!r}: {why}).")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="memsweep",
        description="Parameter sweeps of Linux device-memory paths (memmap, copy, pfnmap, young) on Ray.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_run, _add_plan, _add_submit, _add_status_verify, _add_report, _add_table, _add_compare,
                _add_calibrate):  # the order `memsweep --help` lists them in
        add(sub)
    return p


def _add_run(sub) -> None:
    """`memsweep run SPEC`: compute a sweep, or resume it."""
    r = sub.add_parser("run", help="run a sweep into a Parquet dataset (resumes what exists)")
    r.add_argument("spec", nargs="?", default="default", metavar="SPEC",
                   help="a spec file, or a shipped spec: default, seed, large (default: default)")
    r.add_argument("--out", default="results", help="output folder or URI (default: ./results)")
    r.add_argument("--address", help="join a Ray cluster (auto, HOST:PORT, ray://...); default: embedded Ray")
    r.add_argument("--fresh", action="store_true", help="delete OUT/<sweep> first and start over")
    r.add_argument("--cpus", type=_positive_int, help="CPUs of the embedded Ray (default: all of this machine's)")
    r.add_argument("--no-report", action="store_true", help="do not write _report/report.html at the end")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.add_argument("--wait-lease", action="store_true",
                   help="if another driver is running this sweep, wait for it to end instead of refusing")
    r.add_argument("--verbose", action="store_true", help="show Ray's own logs and the workers' output")
    _kernel_arguments(r)


def _add_plan(sub) -> None:
    """`memsweep plan SPEC`: what `run` would do, without doing it."""
    dry = sub.add_parser("plan", help="dry run of `run`: points, chunks, feasible counts, dataset size, time")
    dry.add_argument("spec", metavar="SPEC", help="a spec file, or a shipped spec: default, seed, large, measure")
    dry.add_argument("--out", default="results", help="where run would write (default: ./results); nothing is written")
    dry.add_argument("--cpus", type=_positive_int, help="CPUs to estimate the time on (default: this machine's)")
    dry.add_argument("--nodes", type=_positive_int, default=1,
                     help="nodes of --cpus CPUs each to estimate the time on (default 1); says when they would not help")
    dry.add_argument("--json", action="store_true", help="print the same numbers as JSON")
    dry.add_argument("--quiet", action="store_true", help="no progress bar")
    _kernel_arguments(dry)


def _kernel_arguments(p) -> None:
    """The kernel kernel rows boot, over the spec's [kernel] table (a spec with source 'kernel')."""
    p.add_argument("--kernel", metavar="IMAGE",
                   help="kernel rows boot this bzImage or vmlinux, a kernel build folder (its bzImage and the "
                        "modules it built), debian:6.12 / debian:6.1, or series:6.12 (the seed series' build: "
                        "make kernels) (default: the spec's [kernel] image, else debian:6.12)")
    p.add_argument("--modules", metavar="DIR", help="its lib/modules/<release> folder (none: drivers built in)")
    p.add_argument("--accel", choices=("auto", "tcg", "kvm"),
                   help="the guest's accelerator (default auto: KVM when a probe boot works, else TCG)")


def _add_submit(sub) -> None:
    """`memsweep submit SPEC`: `run` as a batch job (Ray Jobs, or Slurm with --slurm)."""
    s = sub.add_parser("submit", help="submit a sweep as a batch job: to a Ray cluster (Ray Jobs) or to Slurm")
    s.add_argument("spec", metavar="SPEC")
    s.add_argument("--address", help="the cluster's Jobs address, http://HEAD:8265 (without --slurm)")
    s.add_argument("--out", help="output folder or URI as the cluster sees it (Ray Jobs default: results, "
                                 "relative to the job; required with --slurm: a shared folder or URI)")
    s.add_argument("--wait", action="store_true", help="wait for the job to end (and print its logs: Ray Jobs)")
    s.add_argument("--slurm", action="store_true",
                   help="submit with sbatch: the job starts a Ray head and workers in its allocation")
    s.add_argument("--nodes", type=int, help="--slurm: nodes to allocate (default 1)")
    s.add_argument("--cpus-per-node", type=int, metavar="N",
                   help="--slurm: CPUs per node, each Ray node's CPUs (default: the whole node, --exclusive)")
    s.add_argument("--mem", metavar="SIZE", help="--slurm: memory per node, as sbatch --mem takes it (e.g. 16G)")
    s.add_argument("--partition", help="--slurm: the partition")
    s.add_argument("--time", help="--slurm: the time limit, as sbatch takes it")
    s.add_argument("--account", help="--slurm: the account to charge")
    s.add_argument("--sbatch-arg", action="append", default=[], metavar="ARG",
                   help="--slurm: one more sbatch option, e.g. --sbatch-arg=--exclusive (repeatable)")
    s.add_argument("--dry-run", action="store_true", help="--slurm: print the batch script; submit nothing")


def _add_status_verify(sub) -> None:
    """`memsweep status` and `memsweep verify`: one sweep folder each."""
    for name, text in (("status", "chunks done/total and failures"),
                       ("verify", "check every part, the row counts and point ids")):
        c = sub.add_parser(name, help=text)
        c.add_argument("sweep_dir", metavar="OUT/SWEEP")


def _add_report(sub) -> None:
    """`memsweep report OUT/SWEEP`: report.html."""
    rep = sub.add_parser("report", help="figures and a self-contained report.html")
    rep.add_argument("sweep_dir", metavar="OUT/SWEEP")
    rep.add_argument("--out", help="where to write report.html (default: OUT/SWEEP/_report/report.html)")


def _add_table(sub) -> None:
    """`memsweep table OUT/SWEEP`: one model's metric, rows x cols, as text."""
    t = sub.add_parser("table", help="a plain-text comparison table, mailing-list style")
    t.add_argument("sweep_dir", metavar="OUT/SWEEP")
    t.add_argument("--model", required=True)
    t.add_argument("--rows", required=True, metavar="AXIS")
    t.add_argument("--cols", required=True, metavar="AXIS")
    t.add_argument("--metric", help="metric column (default: the model's headline metric)")
    t.add_argument("--baseline", metavar="VALUE",
                   help="the --cols value the others are compared with (default: its first value as the spec lists "
                        "them, e.g. per_pte before batched)")
    t.add_argument("--where", action="append", default=[], metavar="AXIS=VALUE",
                   help="tabulate only the points where AXIS has VALUE, read as a spec value (e.g. "
                        "namespace_size=4TiB); repeatable: values of one axis are either, different axes all")


def _add_compare(sub) -> None:
    """`memsweep compare A B`: B/A per point, as text and a page."""
    cmp = sub.add_parser("compare", help="two sweeps side by side: B/A per point, '~' not a change by the rule")
    cmp.add_argument("a", metavar="A", help="the baseline sweep folder (OUT/SWEEP)")
    cmp.add_argument("b", metavar="B", help="the sweep compared with it (may be A itself, with --sources)")
    cmp.add_argument("--metric", help="metric column (default: each model's headline metric)")
    cmp.add_argument("--model", help="compare only this model (default: every model both sweeps have)")
    cmp.add_argument("--sources", metavar="A_SOURCE:B_SOURCE",
                     help="rows compared, e.g. measured:model (A's measured rows vs B's modeled ones); "
                          "default: like with like (model vs model, measured vs measured)")
    cmp.add_argument("--by", metavar="AXIS[,AXIS]",
                     help="group the summary by these axes (default: the one or two that explain most of B/A)")
    cmp.add_argument("--where", action="append", default=[], metavar="AXIS=VALUE",
                     help="compare only the points where AXIS has VALUE, read as a spec value (e.g. "
                          "namespace_size=4TiB); repeatable: values of one axis are either, different axes all")
    cmp.add_argument("--pair", action="append", default=[], metavar="AXIS=A_VALUE:B_VALUE",
                     help="compare A's rows at one value of AXIS with B's at another, each other axis alike "
                          "(e.g. strategy=slow:template_nt_inline: a stock kernel's path against the series'); "
                          "repeatable, one per axis")
    cmp.add_argument("--out", metavar="FILE", help="the HTML comparison (default: B/_report/compare-<A name>.html)")
    cmp.add_argument("--format", choices=("text", "mail"), default="text",
                     help="text: the full comparison; mail: a plain block under 80 columns to paste into a mail "
                          "(each side's value and spread, %%change, ** on a significant change)")


def _add_calibrate(sub) -> None:
    """`memsweep calibrate`: fit a profile to published figures or to a sweep's measurements."""
    cal = sub.add_parser("calibrate", help="fit a profile to the published figures; per-figure and leave-one-out error")
    cal.add_argument("--profile", default="seed", help="profile name or file (default: seed)")
    cal.add_argument("--model", action="append", help="calibrate only this model (repeatable)")
    cal.add_argument("--json", action="store_true",
                     help="print a JSON list of per-figure results; 'use' is 'fit' or 'validation'")
    cal.add_argument("--starts", type=_positive_int, default=10, metavar="N",
                     help="neutral starts of the fit (default 10)")
    cal.add_argument("--loo-starts", type=_positive_int, default=3, metavar="N",
                     help="neutral starts of each leave-one-out refit, one per fitted figure (default 3)")
    cal.add_argument("--save", metavar="FILE",
                     help="write the fitted profile to FILE (TOML); refused (exit 2) when a fitted cost is not "
                          "identified by the figures or no machine can have it")
    cal.add_argument("--from", dest="source", metavar="OUT/SWEEP",
                     help="fit to this sweep's measured rows (source = measured) instead of the published figures; "
                          "its kernel rows' instruction counts (a guest under TCG) fit that kernel build's "
                          "instructions per operation")
    cal.add_argument("--holdout", action="append", metavar="SIZE",
                     help="with --from: keep this namespace size out of the fit and report its prediction")
    cal.add_argument("--statistic", choices=("min", "median"), default=None,
                     help="with --from: fit each point's least disturbed time (measure_min, the default) or its "
                          "median (measure_median)")
    cal.add_argument("--fix", action="append", metavar="SECTION.KEY",
                     help="keep this cost at the profile's value instead of fitting it (repeatable)")


def main(argv: list[str] | None = None) -> int:
    """The `memsweep` program (argv None: sys.argv); called with a list, as a library (tests), it leaves
    pyarrow's S3 client alone: a finalized client cannot be started again in the same process."""
    try:
        return _main(argv)
    finally:
        if argv is None:
            _finalize_s3()


def _finalize_s3() -> None:
    """Shut pyarrow's S3 client down now, while the interpreter is whole: left to pyarrow's atexit
    hook, a process that used s3:// sometimes aborts at exit ("terminate called without an active
    exception", apache/arrow#34314) after its work succeeded."""
    fs = sys.modules.get("pyarrow.fs")
    if fs is not None and hasattr(fs, "ensure_s3_finalized"):
        import gc

        gc.collect()  # the S3FileSystem objects of the command are gone by now
        fs.ensure_s3_finalized()


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "run":  # SIGTERM (kill, ray job stop) and SIGHUP end a run as Ctrl-C does: lease released
        signal.signal(signal.SIGTERM, _interrupt)
        signal.signal(signal.SIGHUP, _interrupt)
    try:
        check_paths(args)
        if args.command in NEEDS_MODELS:
            MODELS.load()
        return COMMANDS[args.command](args)
    except BrokenPipeError:  # the reader of the output went away (`| head -1`): end quietly, as a Unix tool
        # does on SIGPIPE; what is left to flush goes nowhere, or Python reports the broken pipe again at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except MemsweepError as e:  # every error memsweep raises on purpose, with the status it names
        what = "I/O failure" if isinstance(e, OSError) else "error"  # StoreIOError from the dataset
        print(f"memsweep {args.command}: {what}: {e}", file=sys.stderr)
        return e.exit_status
    except OSError as e:  # any other failed write (the report)
        print(f"memsweep {args.command}: I/O failure: {_os_error_line(e)}", file=sys.stderr)
        return EXIT_IO
    except KeyboardInterrupt as e:
        print(f"memsweep {args.command}: interrupted; rerun the same command to resume.", file=sys.stderr)
        return 129 if isinstance(e, Hangup) else 130


class Hangup(KeyboardInterrupt):
    """SIGHUP (the terminal closed): the run stops as on Ctrl-C, lease released, and exits 129."""


def _interrupt(signum, frame) -> None:
    raise Hangup if signum == signal.SIGHUP else KeyboardInterrupt


def _os_error_line(e: OSError) -> str:
    """One line for an OSError raised outside the dataset store (the report's files)."""
    from workers.dataset.folder import describe_os_error

    where = f" {e.filename}" if e.filename else ""
    return f"writing{where} failed: {describe_os_error(e)}; nothing was left half-written."


def cmd_run(args) -> int:
    from workers.dataset import REPORT_DIR

    from .run.driver import run
    from .spec.load import load_spec, with_kernel

    spec = with_kernel(load_spec(args.spec), args.kernel, args.modules, args.accel, build=True)
    if args.cpus and args.address:
        raise UsageError("'--cpus' sizes the embedded Ray; it cannot be given with '--address'.")
    report = () if args.no_report else (REPORT_DIR,)  # refused with the run's own writes, before any
    summary = run(spec, args.out, address=args.address, fresh=args.fresh, progress=not args.quiet, cpus=args.cpus,
                  wait_lease=args.wait_lease, verbose=args.verbose, also_writes=report)
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
        from analysis.report.page import write_report

        try:
            print(f"report: {write_report(summary.location.uri)}")
        except OSError as e:
            raise StoreIOError(e.errno, "the sweep is complete but its report is not: "
                               + _os_error_line(e)) from None
    said = summary.error_lines()  # last, where a user looks: the rows that are not results, and why
    if said:
        print(f"memsweep run: {said[0]}", *said[1:], "mend the cause and rerun the same command: parts holding "
              "error rows are computed again.", sep="\n", file=sys.stderr)
        return EXIT_PROBLEMS
    return EXIT_OK


def cmd_plan(args) -> int:
    from .run.dryrun import as_dict, dry_run, format_text
    from .spec.load import load_spec, with_kernel

    spec = with_kernel(load_spec(args.spec), args.kernel, args.modules, args.accel)
    result = dry_run(spec, args.out, cpus=args.cpus, nodes=args.nodes, progress=not args.quiet)
    print(json.dumps(as_dict(result), indent=1) if args.json else format_text(result))
    return EXIT_OK


def cmd_submit(args) -> int:
    slurm_only = [f"--{n.replace('_', '-')}" for n in ("nodes", "cpus_per_node", "mem", "partition", "time", "account",
                                                       "sbatch_arg", "dry_run")
                  if getattr(args, n) not in (None, [], False)]
    if args.slurm:
        from .cluster.slurm import SlurmOptions, submit_slurm

        if args.address:
            raise UsageError("'--address' cannot be given with '--slurm': the Slurm job starts its own Ray cluster.")
        options = SlurmOptions(nodes=1 if args.nodes is None else args.nodes, cpus_per_node=args.cpus_per_node,
                               mem=args.mem, partition=args.partition, time=args.time, account=args.account,
                               sbatch_args=tuple(args.sbatch_arg))
        return submit_slurm(args.spec, args.out, options, wait=args.wait, dry_run=args.dry_run)
    if slurm_only:
        raise UsageError(f"'{slurm_only[0]}' must come with '--slurm' (got it without).")
    if not args.address:
        raise UsageError("'--address' must be given: the Ray cluster's Jobs address, http://HEAD:8265 "
                         "(or submit to Slurm with '--slurm').")
    from .cluster.jobs import submit

    return submit(args.spec, args.address, args.out or "results", wait=args.wait)


def cmd_status(args) -> int:
    from .cluster.slurm import status_lines
    from .run.inspect import status
    from .run.store import locate

    print(status(args.sweep_dir, slurm=status_lines(locate(args.sweep_dir))))
    return EXIT_OK


def cmd_verify(args) -> int:
    from .run.inspect import verify

    problems, summary = verify(args.sweep_dir)
    print(summary)
    for p in problems:
        print(f"problem: {p}")
    return EXIT_PROBLEMS if problems else EXIT_OK


def cmd_report(args) -> int:
    from analysis.report.page import write_report

    print(f"report: {write_report(args.sweep_dir, args.out)}")
    return EXIT_OK


def cmd_table(args) -> int:
    from analysis.tables import text_table

    print(text_table(args.sweep_dir, model=args.model, rows=args.rows, cols=args.cols, metric=args.metric,
                     where=args.where, baseline=args.baseline))
    return EXIT_OK


def cmd_compare(args) -> int:
    from analysis.compare.compare import compare, text
    from analysis.compare.page import write

    result = compare(args.a, args.b, metric=args.metric, model=args.model, sources=args.sources, by=args.by,
                     where=args.where, pair=args.pair)
    if args.format == "mail":  # the block alone on stdout, to paste as it is
        from analysis.compare.mail import mail

        print(mail(result), end="")
        print(f"comparison: {write(result, args.out)}", file=sys.stderr)
        return EXIT_OK
    print(text(result))
    print(f"\ncomparison: {write(result, args.out)}")
    return EXIT_OK


def cmd_calibrate(args) -> int:
    from .calibration import run_calibration

    return run_calibration(args.profile, models=args.model, as_json=args.json, save=args.save,
                           source=args.source, holdout=args.holdout, statistic=args.statistic,
                           starts=args.starts, loo_starts=args.loo_starts, fix=args.fix)


COMMANDS = {
    "run": cmd_run, "plan": cmd_plan, "submit": cmd_submit, "status": cmd_status, "verify": cmd_verify,
    "report": cmd_report, "table": cmd_table, "compare": cmd_compare, "calibrate": cmd_calibrate,
}

if __name__ == "__main__":
    sys.exit(main())
