"""An x86 guest for huge pfnmap leaves: remap_pfn_range() through /dev/mem in the huge-pfnmap build
(workers/guest/build.py HUGEPFN: Debian's 6.12 source with workers/guest/hugepfn/*.patch).

No driver is needed: /dev/mem's mmap_mem() (drivers/char/mem.c) calls remap_pfn_range() over the physical
range it is asked for. The guest's RAM goes past PA_BASE, where `mem=` on its command line ends the kernel's
(e820 stops there: the mapping is of memory no allocator hands out), and the probe (devmem.c) maps
part of it at each configuration's physical and virtual offsets, with the build's switch (remap_pfn_pmd)
on or off, and reads back the leaves per level inside the mapping (the kernel's own dump of the process's
page tables), the page-table pages the mmap() added (VmPTE) and the instructions of mmap() and munmap()
(guest ns under QEMU's instruction counter, as every guest here). A configuration can also punch a one-page
hole (a PMD leaf there is split into PTEs) and fork with the mapping live (the child's leaves, counted by
the child). All configurations of one `run` share one boot, each in a process of its own.

What it cannot see: TLB misses. Under TCG, QEMU walks the guest's page tables in host code (a strided read
costs the same guest instructions over PMD and PTE leaves), and there is no PMU.
"""

from __future__ import annotations

import platform
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from workers.units import MiB

from . import build, cpio, qemu
from .cc import static_program
from .debian import BUSYBOX_STATIC
from .exceptions import GuestSetupError

PA_BASE = 0x40000000  # devmem.c's PA_BASE: where the kernel's RAM ends (mem=), the mapped range's start (1 GiB)
RESERVED = 128 * MiB
RAM_MIB = PA_BASE // MiB + 256  # the guest's RAM: the kernel's 1 GiB and 256 MiB past it that it never uses
CMDLINE = (f"console=ttyS0 panic=-1 oops=panic panic_on_warn=1 nokaslr norandmaps mem={PA_BASE // MiB}M "
           "rdinit=/init quiet")
PROBE_FILES = ("devmem.sh", "devmem.c")  # the guest's /init and the probe program, from this package
PAGE = 4096
GiB = 1 << 30
TIMEOUT_S = 300.0
CFLAGS = ("-O2", "-static")


@dataclass(frozen=True, kw_only=True, slots=True)
class MapConfig:
    """One mapping: `size` bytes of /dev/mem at PA_BASE + `pa_offset`, at a virtual address whose offset in
    its 1 GiB region is (pa_offset + va_offset) mod 1 GiB; `huge` the switch (PMD leaves where a whole
    aligned 2 MiB block allows); `hole` the offset of a page to unmap afterwards (-1: none); `fork` whether
    to fork with the mapping live."""

    huge: bool
    size: int
    pa_offset: int = 0
    va_offset: int = 0
    hole: int = -1
    fork: bool = False

    def problem(self) -> str | None:
        """Why the probe cannot be this configuration, or None."""
        if self.size <= 0 or self.size % PAGE or self.pa_offset % PAGE or self.va_offset % PAGE:
            return "size, pa_offset and va_offset must be whole pages (remap_pfn_range() maps page frames)"
        if not 0 <= self.pa_offset or self.pa_offset + self.size > RESERVED:
            return (f"the guest keeps {RESERVED // MiB} MiB of RAM for the mapping: pa_offset + size must be "
                    f"at most {RESERVED // MiB} MiB")
        if not 0 <= self.va_offset < GiB:
            return "va_offset must be from 0 to 1 GiB - 1"
        if self.hole != -1 and not (0 <= self.hole < self.size and self.hole % PAGE == 0):
            return "hole must be -1 or the offset of a page inside the mapping"
        return None


@dataclass(frozen=True, kw_only=True)
class MapResult:
    """What one mapping did: its leaves per level after mmap() (`pte`, `pmd`, `pud`), the page-table bytes
    mmap() added (VmPTE), the instructions of mmap() and of the final munmap(); after a hole, the leaves left
    and the instructions of the one-page munmap(); after a fork, the child's leaves (pte, pmd, pud) and its
    exit status; `after`, leaves left in the range once unmapped, and `pt_left`, VmPTE bytes not given back."""

    release: str
    config: MapConfig
    build: str = build.HUGEPFN
    va: int
    pte: int
    pmd: int
    pud: int
    pt_bytes: int
    mmap_instructions: int
    munmap_instructions: int
    hole_pte: int = 0
    hole_pmd: int = 0
    hole_instructions: int = 0
    child: tuple[int, int, int] | None = None
    child_status: int = -1
    after: int = 0
    pt_left: int = 0


@dataclass(frozen=True, kw_only=True)
class DevmemRun:
    """One boot: the kernel's release, its switch as booted ("Y", "N" or "none"), per configuration a
    MapResult or why it failed, the kernel's complaints (dmesg lines) and the console."""

    release: str
    switch: str
    results: list
    complaints: tuple[str, ...] = ()
    console: str = field(default="", repr=False)


def program(cc: str = "cc") -> bytes:
    """devmem.c built by this node's compiler, static (the guest has no libc); x86-64 only."""
    if platform.machine() not in ("x86_64", "AMD64"):
        raise GuestSetupError(f"the /dev/mem probe is an x86-64 program, built by the node's compiler; this node "
                              f"is {platform.machine()}")
    return static_program("devmem.c", "the /dev/mem probe", cc, CFLAGS, "install gcc and libc6-dev")


def conf_lines(configs: list[MapConfig]) -> str:
    """/probe.conf: "ID HUGE SIZE PA_OFFSET VA_OFFSET HOLE FORK" per configuration (devmem.c's main())."""
    return "".join(f"{i} {int(c.huge)} {c.size} {c.pa_offset} {c.va_offset} {c.hole} {int(c.fork)}\n"
                   for i, c in enumerate(configs))


def initramfs(configs: list[MapConfig], busybox: Path = BUSYBOX_STATIC) -> bytes:
    entries = [cpio.directory(d) for d in ("bin", "dev", "proc", "sys")]
    entries += [cpio.chardev("dev/console", 5, 1),
                cpio.regular("bin/busybox", busybox.read_bytes(), executable=True),
                cpio.regular("init", resources.files(__package__).joinpath("devmem.sh").read_bytes(), executable=True),
                cpio.regular("devmem", program(), executable=True),
                cpio.regular("probe.conf", conf_lines(configs).encode())]
    return cpio.archive(entries)


def kernel(cache_dir: Path | str | None = None, say=None) -> build.Build:
    """The huge-pfnmap build, built first when this node has none (minutes; `make kernels` does it ahead)."""
    return build.cached_build(cache_dir, build.HUGEPFN) or build.build(cache_dir, name=build.HUGEPFN, say=say)


def run(configs: list[MapConfig], *, image: Path | None = None, cache_dir: Path | str | None = None,
        timeout_s: float = TIMEOUT_S) -> DevmemRun:
    """Boot the huge-pfnmap build (or `image`) once and map each configuration in turn; GuestSetupError when
    a configuration is not one the probe can be, QEMU is missing, or the guest died before it finished."""
    for c in configs:
        if (why := c.problem()) is not None:
            raise GuestSetupError(f"{c}: {why}")
    if shutil.which(qemu.QEMU) is None:
        raise GuestSetupError(f"{qemu.QEMU} is not installed: run `make guest` (or apt-get install qemu-system-x86)")
    image = image or kernel(cache_dir).image
    with tempfile.TemporaryDirectory(prefix="memsweep-devmem-") as tmp:
        initrd, console = Path(tmp) / "initrd", Path(tmp) / "console"
        initrd.write_bytes(initramfs(configs))
        cmd = [qemu.QEMU, "-accel", "tcg", "-cpu", "max", "-icount", qemu.ICOUNT, *qemu.DETERMINISTIC,
               "-smp", "1", "-m", f"{RAM_MIB}M", "-kernel", str(image), "-initrd", str(initrd), "-append", CMDLINE,
               "-nodefaults", "-nographic", "-no-reboot", "-serial", f"file:{console}"]
        log = Path(tmp) / "qemu.log"
        proc = qemu.spawn(cmd, log)
        deadline = time.monotonic() + timeout_s
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        timed_out = proc.poll() is None
        qemu.stop(proc)
        text = console.read_text(errors="replace") if console.exists() else ""
        said = log.read_text(errors="replace").strip() if log.exists() else ""
    if "memsweep-devmem-release" not in text:  # no /init line: QEMU, the image or the boot failed
        why = f"no answer in {timeout_s:.0f} s" if timed_out else f"QEMU said: {said[-400:]}" if said else "no output"
        raise GuestSetupError(f"the /dev/mem probe's guest never reached /init ({image}; {why})\n" + _tail(text))
    return parse(text, configs)


def run_maps(configs: list[MapConfig], cache_dir: Path | str | None = None) -> list:
    """Each configuration's MapResult, all in one boot (a configuration asked twice is mapped once), or, for
    every one, why the guest could not run them (the `kernel` row source's runner: workers/guest/rows.py)."""
    distinct = list(dict.fromkeys(configs))
    try:
        got = run(distinct, cache_dir=cache_dir).results
    except GuestSetupError as e:
        got = [f"{type(e).__name__}: {e}"] * len(distinct)
    done = dict(zip(distinct, got))
    return [done[c] for c in configs]


ESCAPES = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|c)")  # terminal control sequences (ECMA-48 CSI, and RIS)
LINE = re.compile(r"^memsweep-devmem(-\w+)? ?(.*?)\r?$", re.M)
FIELDS = ("va", "pte", "pmd", "pud", "pt_bytes", "mmap_ns", "munmap_ns", "hole_pte", "hole_pmd", "hole_ns", "child",
          "after", "pt_left")


def parse(console: str, configs: list[MapConfig]) -> DevmemRun:
    """A DevmemRun from the guest's console; GuestSetupError with the console's tail when the guest did not
    finish (an oops or a WARN panics it: see devmem.sh) or complained."""
    info: dict[str, str] = {}
    done = False
    complaints: list[str] = []
    rows: dict[int, dict[str, str] | str] = {}
    children: dict[int, tuple[int, int, int]] = {}
    for kind, rest in LINE.findall(ESCAPES.sub("", console)):  # SeaBIOS clears the screen before /init's first line
        if kind == "":
            ident, _, values = rest.partition(" ")
            if values.startswith("error="):  # "error=STEP:strerror()", spaces and all
                rows[int(ident)] = values.removeprefix("error=")
            else:
                rows[int(ident)] = dict(kv.split("=", 1) for kv in values.split() if "=" in kv)
        elif kind == "-child":
            ident, *counts = (int(x) for x in rest.split())
            children[ident] = tuple(counts)
        elif kind == "-dmesg":
            complaints.append(rest)
        elif kind == "-done":
            done = True
        elif kind == "-fatal":
            raise GuestSetupError(f"the /dev/mem probe could not start: {rest}\n" + _tail(console))
        else:
            info[kind[1:]] = rest.strip()
    if not done or "end" not in info:
        raise GuestSetupError("the /dev/mem probe's guest did not finish (an oops or a WARN panics it)\n"
                              + _tail(console))
    if complaints:
        raise GuestSetupError("the kernel complained during the /dev/mem probe: " + "; ".join(complaints[:5]))
    release = info.get("release", "")
    results: list = []
    for i, c in enumerate(configs):
        got = rows.get(i)
        if got is None or isinstance(got, str):
            results.append(f"the /dev/mem probe failed at {got or 'an unknown step: no line'}")
            continue
        v = {k: int(got[k]) for k in FIELDS}
        results.append(MapResult(
            release=release, config=c, va=v["va"], pte=v["pte"], pmd=v["pmd"], pud=v["pud"], pt_bytes=v["pt_bytes"],
            mmap_instructions=v["mmap_ns"], munmap_instructions=v["munmap_ns"], hole_pte=v["hole_pte"],
            hole_pmd=v["hole_pmd"], hole_instructions=v["hole_ns"], child=children.get(i), child_status=v["child"],
            after=v["after"], pt_left=v["pt_left"]))
    return DevmemRun(release=release, switch=info.get("switch", "none"), results=results,
                     complaints=tuple(complaints), console=console)


def _tail(console: str, lines: int = 20) -> str:
    return "\n".join(ESCAPES.sub("", console).splitlines()[-lines:])


def text(result: MapResult) -> str:
    """One mapping in words."""
    c = result.config
    line = (f"{c.size // 1024:,} KiB at pa +{c.pa_offset:#x}, va skew {c.va_offset:#x}, PMDs "
            f"{'on' if c.huge else 'off'}: {result.pte:,} PTEs, {result.pmd:,} PMDs, {result.pud:,} PUDs; "
            f"{result.pt_bytes // PAGE:,} page-table pages; mmap {result.mmap_instructions:,} and munmap "
            f"{result.munmap_instructions:,} instructions")
    if c.hole >= 0:
        line += (f"; after a one-page hole at +{c.hole:#x}: {result.hole_pte:,} PTEs, {result.hole_pmd:,} PMDs "
                 f"({result.hole_instructions:,} instructions)")
    if c.fork:
        line += f"; forked child: {result.child} (pte, pmd, pud), exit {result.child_status}"
    return line
