"""`python -m workers.guest fetch`: ready this node for guests (QEMU, busybox-static and Debian's kernels in
the cache); what `make guest` runs. Quick when everything is there already. `python -m workers.guest
check-counter`: boot a kernel with a loop of known length and print what one guest instruction costs in
guest time (1.0 ns: the instruction counter counts instructions; workers/guest/counter.py). `python -m
workers.guest build`: build the seed series' kernel ("series:6.12", workers/guest/build.py), its base
("base:6.12": the same source and config without the patches) and the huge-pfnmap build (hugepfn-6.12)
unless this node has them; what `make kernels` runs. `python -m workers.guest fetch-arm64`: the arm64 guest's tools and Debian's arm64 6.12 and 7.3
kernels (workers/guest/arm64.py; `make guest` runs it too). `python -m workers.guest reclaim`: boot one and
print what a reclaim of a mapped XFS file did to young bits. `python -m workers.guest devmem`: boot the
huge-pfnmap build (built first when missing) and map /dev/mem with the RFC off and on: leaves, page tables
and instructions (workers/guest/devmem.py)."""

from __future__ import annotations

import argparse

from workers.units import MiB

from . import arm64, build, counter, debian, devmem
from .exceptions import GuestKernelError, GuestSetupError
from .kernels import cached_kernel, fetch


def main(argv: list[str] | None = None) -> int:
    """Fetch Debian's guest kernels (and QEMU, busybox-static) for the guest runner; print what is cached."""
    parser = argparse.ArgumentParser(prog="python -m workers.guest", description=main.__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fetch", help="install QEMU and busybox-static if missing; fetch the kernels if missing")
    f.add_argument("--series", action="append", choices=sorted(debian.SERIES),
                   help="a kernel series to fetch (repeatable; default: all)")
    f.add_argument("--cache-dir", default=None, help=f"default: {debian.default_cache_dir()}")
    f.add_argument("--refresh", action="store_true", help="look for newer packages even when cached")
    c = sub.add_parser("check-counter", help="boot a Debian kernel under TCG with QEMU's instruction counter and "
                                              "time a loop of known length: guest ns per instruction")
    c.add_argument("--series", default=debian.DEFAULT_SERIES, choices=sorted(debian.SERIES))
    b = sub.add_parser("build", help="build the seed series' kernel (series:6.12), its base (base:6.12: the same "
                                     "source and config without the patches) and the huge-pfnmap build (the RFC's "
                                     "patches, workers/guest/hugepfn/) unless cached: Debian's 6.12 source, a small "
                                     "config")
    b.add_argument("--cache-dir", default=None, help=f"default: {build.builds_dir().parent}")
    b.add_argument("-j", "--jobs", type=int, default=None, help="make's parallel jobs (default: all cores)")
    a = sub.add_parser("fetch-arm64", help="install qemu-system-arm, xfsprogs and the aarch64 cross compiler if "
                                           "missing; fetch Debian's arm64 6.12 and 7.3 kernels if missing")
    a.add_argument("--cache-dir", default=None, help=f"default: {debian.default_cache_dir()}")
    r = sub.add_parser("reclaim", help="boot an arm64 kernel under TCG, map an XFS file, reclaim part of it and "
                                       "print the young-bit calls the scan made")
    r.add_argument("--series", default="6.12", choices=sorted(arm64.KERNELS))
    r.add_argument("--lru", default="mglru", choices=arm64.LRUS)
    r.add_argument("--readahead-kb", type=int, default=128, help="the file's folio size (default 128: 32 pages)")
    r.add_argument("--mapped-mib", type=int, default=64, help="MiB of the file mapped (default 64)")
    r.add_argument("--reclaim-mib", type=int, default=48, help="MiB reclaimed (default 48)")
    r.add_argument("--accessed-mib", type=int, default=0, help="MiB at the mapping's start touched again after its "
                                                            "young bits are cleared (default 0: every folio old)")
    d = sub.add_parser("devmem", help="boot the huge-pfnmap build under TCG, map /dev/mem with the RFC off and on, "
                                      "and print the leaves, page tables and instructions of each mapping")
    d.add_argument("--mib", type=int, default=64, help="MiB mapped (default 64)")
    d.add_argument("--pa-kib", type=int, default=0, help="KiB past the reserved range's 1 GiB-aligned start "
                                                         "(default 0)")
    d.add_argument("--skew-kib", type=int, default=0, help="(va - pa) modulo 1 GiB in KiB (default 0: whole "
                                                           "aligned blocks become PMDs)")
    d.add_argument("--hole-kib", type=int, default=-1, help="unmap the page at this offset afterwards (default: none)")
    d.add_argument("--fork", action="store_true", help="fork with the mapping live; the child counts its leaves")
    args = parser.parse_args(argv)
    try:
        if args.command == "fetch-arm64":
            arm64.ensure_host_tools()
            for s in sorted(arm64.KERNELS):
                k = arm64.fetch(s, args.cache_dir)
                print(f"{k.release}\t{k.image}")
            print(f"busybox\t{arm64.busybox(args.cache_dir)}")
            return 0
        if args.command == "reclaim":
            run = arm64.reclaim(arm64.fetch(args.series), lru=args.lru, readahead_kb=args.readahead_kb,
                                mapped_bytes=args.mapped_mib * MiB, reclaim_bytes=args.reclaim_mib * MiB,
                                young_bytes=args.accessed_mib * MiB)
            print(arm64.text(run))
            return 0
        if args.command == "devmem":
            configs = [devmem.MapConfig(huge=huge, size=args.mib * MiB, pa_offset=args.pa_kib * 1024,
                                        va_offset=args.skew_kib * 1024,
                                        hole=args.hole_kib * 1024 if args.hole_kib >= 0 else -1, fork=args.fork)
                       for huge in (False, True)]
            run = devmem.run(configs)
            print(f"{run.release}, remap_pfn_pmd as booted: {run.switch}")
            for r in run.results:
                print(r if isinstance(r, str) else devmem.text(r))
            return 0
        if args.command == "build":
            for built in build.build_all(args.cache_dir, jobs=args.jobs):
                print(f"{built.name}\t{built.release}\t{built.image}")
            return 0
        if args.command == "check-counter":
            print(counter.check(cached_kernel(args.series)).text())
            return 0
        kernels = fetch(tuple(args.series or debian.SERIES), args.cache_dir, refresh=args.refresh)
    except (GuestSetupError, GuestKernelError) as e:
        parser.exit(2, f"memsweep: {e}\n")
    for k in kernels:
        print(f"{k.release}\t{k.image}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
