"""The seed series' kernel, built on this node: Debian's 6.12 source (`linux-source-6.12`, fetched with
`apt-get download`, never installed), the patches in workers/guest/series/ (the v10 series backported,
then memsweep's own 0009 that chooses the strategy at boot or run time), a small config with everything
the guest needs built in, and Debian's toolchain. Beside it, its base: the same source, config and
compiler without the patches (BASE), so that what the patches change and what the config changes are two
numbers: the series' build against its base is the patches, the base against Debian's own 6.12 kernel
the config. A third build carries the huge-pfnmap RFC instead (HUGEPFN: workers/guest/hugepfn/, written
from the RFC v2's code paths, with a switch that turns it off), and what the /dev/mem probe needs
(workers/guest/devmem.py): the memmap series' rows never boot it.

One build per node: the result is cached under <cache>/builds/<name>-<digest>/, where the digest covers the
source package, the patches, the config options and the compiler's version, so a changed patch builds
again and an unchanged one never does. The folder holds what a guest and a reader need (bzImage, .config,
System.map, kernel.release, build.json) and appears only when the build is complete (a temp folder renamed
into place). `python -m workers.guest build` (and `make kernels`) run it; a step that fails raises
GuestSetupError naming the step and the log file it left.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import debian
from .kernels import STRATEGY_NAMES
from .exceptions import GuestSetupError

SOURCE_PACKAGE, SOURCE_VERSION = "linux-source-6.12", "6.12.118-1~deb12u1"  # the patches apply to this
PATCHES = Path(__file__).with_name("series")
NAME = "series-6.12"
BASE = "base-6.12"  # the same source and config without the patches: the slow path only
HUGEPFN = "hugepfn-6.12"  # remap_pfn_range() with PMD leaves, switched at boot or run time (remap_pfn_pmd)
VARIANTS = (NAME, BASE, HUGEPFN)
PATCH_DIRS = {NAME: PATCHES, HUGEPFN: Path(__file__).with_name("hugepfn")}
# memmap_init_strategy's values (0009), in the series' order: slow is the code before 4/8.
STRATEGIES = STRATEGY_NAMES
# `make tinyconfig`, then these (shared KERNEL-GUEST.md: what the guest runner needs, all built in, so the
# build has no modules). -O2 as Debian builds its kernels, not tinyconfig's -Os: instruction counts of a
# size-optimized build were 1.17-1.25x Debian's for the same binds.
ENABLE = tuple(("64BIT PRINTK TTY SERIAL_8250 SERIAL_8250_CONSOLE BLK_DEV_INITRD RD_GZIP BINFMT_ELF BINFMT_SCRIPT "
          "PROC_FS SYSFS DEVTMPFS DEVTMPFS_MOUNT MULTIUSER BLOCK ACPI PCI SPARSEMEM_VMEMMAP MEMORY_HOTPLUG "
          "MEMORY_HOTREMOVE ZONE_DEVICE TRANSPARENT_HUGEPAGE LIBNVDIMM BLK_DEV_PMEM NVDIMM_PFN NVDIMM_DAX DAX "
          "DEV_DAX DEV_DAX_PMEM FS_DAX ACPI_NFIT X86_PMEM_LEGACY FTRACE FUNCTION_TRACER FUNCTION_GRAPH_TRACER "
          "DYNAMIC_FTRACE DEBUG_FS TRACING CC_OPTIMIZE_FOR_PERFORMANCE").split())
DISABLE = ("CC_OPTIMIZE_FOR_SIZE",)
# A variant's options beyond those (enabled, disabled): the /dev/mem probe maps any physical range
# (STRICT_DEVMEM off) and reads its page tables from /sys/kernel/debug/page_tables (PTDUMP_DEBUGFS, which
# needs DEBUG_KERNEL).
EXTRA = {HUGEPFN: (("DEVMEM", "DEBUG_KERNEL", "PTDUMP_DEBUGFS"), ("STRICT_DEVMEM",))}
# Commands and headers the build needs, and the Debian package of each.
TOOLCHAIN = {"gcc": "gcc", "make": "make", "flex": "flex", "bison": "bison", "bc": "bc", "cpio": "cpio",
             "xz": "xz-utils", "perl": "perl"}
HEADERS = {"/usr/include/libelf.h": "libelf-dev", "/usr/include/openssl/ssl.h": "libssl-dev"}
MARKER = "build.json"


@dataclass(frozen=True, kw_only=True, slots=True)
class Build:
    """A complete cached build."""

    root: Path
    image: Path
    release: str
    digest: str
    strategies: tuple[str, ...] = STRATEGIES
    name: str = NAME


def builds_dir(cache_dir: Path | str | None = None) -> Path:
    """<cache>/builds, beside the Debian kernels' folder (debian.default_cache_dir)."""
    return (Path(cache_dir) if cache_dir is not None else debian.default_cache_dir().parent) / "builds"


def digest(name: str = NAME) -> str:
    """What decides the build: the source package, each patch's bytes (none for the base), the config
    options and the compiler. Twelve hex digits name the cached folder."""
    h = hashlib.sha256()
    h.update(f"{SOURCE_PACKAGE}={SOURCE_VERSION}\n".encode())
    for p in _patches(name):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    h.update(" ".join(_enable(name) + ("-",) + _disable(name)).encode())
    h.update(_compiler().encode())
    return h.hexdigest()[:12]


def patches() -> list[Path]:
    return sorted(PATCHES.glob("*.patch"))


def _patches(name: str) -> list[Path]:
    """The patches a variant applies: the series', the huge-pfnmap RFC's, or none for the series' base."""
    if name not in VARIANTS:
        raise ValueError(f"a build is one of {list(VARIANTS)} (got {name!r})")
    return patches() if name == NAME else sorted(PATCH_DIRS[name].glob("*.patch")) if name in PATCH_DIRS else []


def _enable(name: str) -> tuple[str, ...]:
    return ENABLE + EXTRA.get(name, ((), ()))[0]


def _disable(name: str) -> tuple[str, ...]:
    return DISABLE + EXTRA.get(name, ((), ()))[1]


def _strategies(name: str) -> tuple[str, ...]:
    """The strategies a variant switches among: the series' four (0009), none for its base (the slow path)."""
    return STRATEGIES if name == NAME else ()


def cached_build(cache_dir: Path | str | None = None, name: str = NAME) -> Build | None:
    """The build of the current patches and config, when this node has it whole (a folder that lost its
    bzImage or marker is no build: the next build replaces it)."""
    root = builds_dir(cache_dir) / f"{name}-{digest(name)}"
    try:
        meta = json.loads((root / MARKER).read_text())
    except (OSError, ValueError):
        return None
    if not (root / "bzImage").is_file() or not isinstance(meta, dict) or "release" not in meta:
        return None
    return Build(root=root, image=root / "bzImage", release=meta["release"], digest=meta["digest"],
                 strategies=_strategies(name), name=name)


def build_all(cache_dir: Path | str | None = None, *, jobs: int | None = None, say=None,
              install: bool = True) -> list[Build]:
    """The series' build, its base and the huge-pfnmap build (`make kernels`): each built unless cached."""
    return [build(cache_dir, jobs=jobs, say=say, install=install, name=n) for n in VARIANTS]


def build(cache_dir: Path | str | None = None, *, jobs: int | None = None, say=None,
          install: bool = True, name: str = NAME) -> Build:
    """The series' kernel, built if this node has no build of the current patches (193 s on an idle 2-core
    machine, 432 s on a busy one, 18 s of it fetching and unpacking the source; make -j2 with Debian's gcc
    12.2). `say(line)` reports each step.
    A missing toolchain is installed with apt (`install`, as root) or GuestSetupError names the command."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    have = cached_build(cache_dir, name)
    if have is not None:
        say(f"memsweep: {name} is built: {have.image}")
        return have
    ensure_toolchain(install=install)
    d = digest(name)
    root = builds_dir(cache_dir)
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".build-{name}-", dir=root))
    try:
        return _build_in(work, root, d, jobs, _Steps(say, root / f"{name}-{d}.log", name), name)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _build_in(work: Path, root: Path, d: str, jobs: int | None, steps: _Steps, name: str = NAME) -> Build:
    """The steps of one build in the temp folder `work`; the result renamed into root/<name>-<digest>."""
    log = steps.log
    tree = _source_tree(steps, work, root)
    for p in _patches(name):
        steps.run(f"patch {p.name}", ["patch", "-p1", "--forward", "--batch", "-i", str(p)], cwd=tree)
    steps.run("make tinyconfig", ["make", "-s", "tinyconfig"], cwd=tree)
    steps.run("scripts/config", ["./scripts/config", *[a for o in _enable(name) for a in ("-e", o)],
                                 *[a for o in _disable(name) for a in ("-d", o)]], cwd=tree)
    steps.run("make olddefconfig", ["make", "-s", "olddefconfig"], cwd=tree)
    _check_config(tree / ".config", log, name)
    steps.run(f"make bzImage (-j{jobs or os.cpu_count()}; 3-7 minutes on 2 cores)",
              ["make", f"-j{jobs or os.cpu_count()}", "bzImage"], cwd=tree, ticker=True)
    out = work / "out"
    out.mkdir()
    for src, dst in (("arch/x86/boot/bzImage", "bzImage"), (".config", "config"), ("System.map", "System.map"),
                     ("include/config/kernel.release", "kernel.release")):
        shutil.copy2(tree / src, out / dst)
    release = (out / "kernel.release").read_text().strip()
    strategies = _strategies(name)
    meta = {"name": name, "digest": d, "release": release, "source": f"{SOURCE_PACKAGE}={SOURCE_VERSION}",
            "patches": [p.name for p in _patches(name)], "compiler": _compiler(), "strategies": list(strategies),
            "seconds": round(steps.elapsed(), 1)}
    (out / MARKER).write_text(json.dumps(meta, indent=1) + "\n")
    final = root / f"{name}-{d}"
    shutil.rmtree(final, ignore_errors=True)
    os.replace(out, final)
    steps.say(f"memsweep: built {name} ({release}) in {steps.elapsed():.0f} s: {final / 'bzImage'}")
    return Build(root=final, image=final / "bzImage", release=release, digest=d, strategies=strategies, name=name)


def ensure_toolchain(apt: debian.Apt | None = None, *, install: bool = True) -> None:
    """Install what the build needs with apt when missing (`install`, as root); GuestSetupError with the
    command otherwise."""
    missing = {pkg for cmd, pkg in TOOLCHAIN.items() if shutil.which(cmd) is None} \
        | {pkg for path, pkg in HEADERS.items() if not Path(path).exists()}
    debian.ensure_packages(missing, "building the series' kernel", "`make kernels`, which installs them as root "
                           "and builds", apt=apt, install=install)


class _Steps:
    """Runs each step with its output appended to one log; a failure names the step and the log."""

    def __init__(self, say, log: Path, name: str = NAME) -> None:
        self.say, self.log, self.start, self.name = say, log, time.monotonic(), name
        log.write_text("")

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def run(self, step: str, args: list[str], *, cwd: Path, ticker: bool = False) -> None:
        self.say(f"memsweep: [{self.elapsed():5.0f} s] {step}")
        with self.log.open("a") as f:
            f.write(f"\n### {step}: {' '.join(args)}\n")
            f.flush()
            proc = subprocess.Popen(args, cwd=cwd, stdout=f, stderr=subprocess.STDOUT)
            while True:
                try:
                    rc = proc.wait(timeout=30)
                    break
                except subprocess.TimeoutExpired:
                    if ticker:
                        self.say(f"memsweep: [{self.elapsed():5.0f} s]   ... {_objects(cwd)} objects compiled")
        if rc != 0:
            raise GuestSetupError(f"building {self.name} failed at step '{step}' (exit {rc}); its output is in "
                                  f"{self.log}")


def _source_tree(steps: _Steps, work: Path, root: Path) -> Path:
    """Debian's source tarball unpacked in `work` (the .deb kept in <builds>/src for the next build)."""
    src = root / "src"
    src.mkdir(exist_ok=True)
    debs = list(src.glob(f"{SOURCE_PACKAGE}_*.deb"))
    if not debs:
        steps.say(f"memsweep: [{steps.elapsed():5.0f} s] apt-get download {SOURCE_PACKAGE}={SOURCE_VERSION} (150 MB)")
        debs = [debian.Apt().download(SOURCE_PACKAGE, SOURCE_VERSION, src)]
    steps.run(f"dpkg-deb -x {debs[0].name}", ["dpkg-deb", "-x", str(debs[0]), str(work / "deb")], cwd=work)
    tarballs = list((work / "deb" / "usr" / "src").glob("linux-source-*.tar.xz"))
    if len(tarballs) != 1:
        raise GuestSetupError(f"{debs[0].name} holds no single usr/src/linux-source-*.tar.xz (found {tarballs})")
    steps.run(f"tar -xf {tarballs[0].name}", ["tar", "-xf", str(tarballs[0])], cwd=work)
    shutil.rmtree(work / "deb")
    trees = [p for p in work.iterdir() if p.is_dir() and p.name.startswith("linux-source-")]
    return trees[0]


def _check_config(config: Path, log: Path, name: str = NAME) -> None:
    """Every option asked for is =y after olddefconfig (a dependency it lacks drops it silently), and every
    option turned off is not (a default that selects it would bring it back)."""
    have = {line.split("=", 1)[0][len("CONFIG_"):] for line in config.read_text().splitlines()
            if line.startswith("CONFIG_") and line.endswith("=y")}
    lost = [o for o in _enable(name) if o not in have]
    if lost:
        raise GuestSetupError(f"building {name} failed at step 'make olddefconfig': it dropped "
                              f"{', '.join(lost)} (see {config}; log {log})")
    back = [o for o in _disable(name) if o in have]
    if back:
        raise GuestSetupError(f"building {name} failed at step 'make olddefconfig': it turned "
                              f"{', '.join(back)} back on (see {config}; log {log})")


def _objects(tree: Path) -> int:
    """How many object files the build has written so far (a progress count for the long step)."""
    return sum(1 for _ in tree.rglob("*.o"))


@functools.cache  # digest() runs on every KernelSettings.kernel(): one gcc process per Python process
def _compiler() -> str:
    try:
        return subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        return "gcc: none"
