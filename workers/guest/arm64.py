"""An arm64 guest for the young model's kernel path: contpte young-bit clearing in reclaim (KERNEL-GUEST.md).

Debian's arm64 kernels boot under `qemu-system-aarch64` (TCG, QEMU's instruction counter, as the x86 guest),
fetched without touching the node's apt: `apt-get` with a private state for arm64 under the kernel cache
(`<cache>/arm64/apt`), `apt-get download`, `dpkg-deb -x`. Two kernels: bookworm's 6.12 (before the seed
series: one young-bit call per PTE) and trixie-backports' 7.3 cloud kernel, which carries the series'
batched contpte_test_and_clear_young_ptes() (after). Only the newest 7.x versions keep their packages in the
index, so the unpacked kernels stay in the cache.

`reclaim(kernel, ...)` boots one with an XFS disk holding one file (written onto a RAM disk, brd, by the
guest: no I/O completes at a time the host picks, so a rerun repeats every count and instruction), maps the
file in a memory cgroup (reclaim.c), asks the cgroup to reclaim part of it and counts, with kprobe events and
hist triggers (reclaim.sh), the young-bit calls of the reclaim scan, the pages each call covers, the young
ones found and folio_referenced_one()'s visits, with the file pages scanned and reclaimed and the
instructions of the reclaim (guest ns under the counter). Large file folios come from XFS readahead:
`readahead_kb` pins their size (128 KiB: 32-page folios, two contpte blocks each); with Debian's default the
7.3 kernel made 2 MiB PMD folios, and no contpte code ran. benchmarks/RESULTS.md has the four runs.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from workers.units import MiB

from . import cpio, qemu
from .cc import static_program
from .debian import APT_TIMEOUT_S, MARKER, Apt, default_cache_dir, ensure_packages
from .exceptions import GuestSetupError

QEMU = "qemu-system-aarch64"
CC = "aarch64-linux-gnu-gcc"
# What the arm64 guest needs on the host, and the Debian package that brings each.
HOST_TOOLS = {QEMU: "qemu-system-arm", "mkfs.xfs": "xfsprogs", CC: "gcc-aarch64-linux-gnu"}
HOST_FILES = {"/usr/aarch64-linux-gnu/lib/libc.a": "libc6-dev-arm64-cross"}
# Debian's archives an arm64 kernel comes from, in the private apt state (bookworm's own keyring signs both).
SOURCES = ("bookworm main", "bookworm-updates main", "trixie main", "trixie-backports main")
SECURITY = ("bookworm-security main",)
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# The kernels, by series: the packages that make one (image and modules), each a pattern of its name.
KERNELS = {
    "6.12": (re.compile(r"^linux-image-6\.12\.\d+\+deb12-arm64-unsigned$"),),
    "7.3": (re.compile(r"^linux-binary-7\.3\.\d+\+deb13-cloud-arm64$"),
            re.compile(r"^linux-modules-7\.3\.\d+\+deb13-cloud-arm64$")),
}
BUSYBOX = "busybox-static"
# The modules the probe loads, in this order: those the kernel builds in are not in its tree.
PROBE_FILES = ("reclaim.sh", "reclaim.c")  # the guest's /init and the probe program, from this package
MODULES = ("brd", "crc32c_generic", "libcrc32c", "xfs")
LRUS = ("mglru", "classic")
XFS_MIN_MIB = 300  # mkfs.xfs refuses a file system under 300 MB without --unsupported
RAM_MIB = 1024
CMDLINE = "console=ttyAMA0 panic=-1 oops=panic nokaslr rdinit=/init quiet"
TIMEOUT_S = 300.0  # 10-20 s per run on an idle 2-core machine under TCG


@dataclass(frozen=True, kw_only=True, slots=True)
class Arm64Kernel:
    """One unpacked arm64 kernel in the cache: its Image, its lib/modules/<release> folder, the packages."""

    image: Path
    modules: Path
    release: str
    series: str
    packages: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ReclaimRun:
    """What one reclaim in the guest did. `young`: calls of the young-bit function by its result (1: the
    range had a young PTE); `pages`: calls by the pages they cover (the batched function only; one page a
    call before it); `visits`: folio_referenced_one() calls; scanned and reclaimed file pages; `instructions`:
    those of the reclaim (its memory.reclaim write, guest ns under the instruction counter) done again with
    no probe, after the counted one, on the same layout (checked: the same folios, pages scanned and
    reclaimed); `probed_instructions`: the counted write's, the probes' own work included; `folios`: the
    mapped folios by order before the reclaim (31: a run of pages no power of two long)."""

    release: str
    function: str
    lru: str
    readahead_kb: int
    mapped_bytes: int
    reclaim_bytes: int
    young: dict[int, int] = field(default_factory=dict)
    pages: dict[int, int] = field(default_factory=dict)
    visits: int = 0
    scanned: int = 0
    reclaimed: int = 0
    instructions: int = 0
    probed_instructions: int = 0
    folios: dict[int, int] = field(default_factory=dict)
    console: str = ""

    @property
    def calls(self) -> int:
        return sum(self.young.values())

    @property
    def build(self) -> str:
        """The kernel a row of this run names (kernel_build): Debian's package, by its release."""
        return self.release


def ensure_host_tools(*, install: bool = True) -> None:
    """QEMU for arm64, xfsprogs and the aarch64 cross compiler, installed with apt when missing (as root);
    GuestSetupError naming the install otherwise."""
    missing = {pkg for tool, pkg in HOST_TOOLS.items() if shutil.which(tool) is None} \
        | {pkg for path, pkg in HOST_FILES.items() if not Path(path).is_file()}
    ensure_packages(missing, "the arm64 guest", "`make guest` as root", install=install)


def cache_root(cache_dir: Path | str | None = None) -> Path:
    return (Path(cache_dir) if cache_dir is not None else default_cache_dir()) / "arm64"


def cached(series: str, cache_dir: Path | str | None = None) -> Arm64Kernel | None:
    """The cached arm64 kernel of `series`, or None (a folder without its marker is an interrupted unpack)."""
    for marker in sorted(cache_root(cache_dir).glob(f"*/{MARKER}")):
        try:
            meta = json.loads(marker.read_text())
        except (OSError, ValueError):
            continue
        if meta.get("series") == series:
            root = marker.parent
            return Arm64Kernel(image=root / meta["image"], modules=root / meta["modules"], release=meta["release"],
                               series=series, packages=tuple(meta["packages"]))
    return None


def fetch(series: str, cache_dir: Path | str | None = None) -> Arm64Kernel:
    """The cached arm64 kernel of `series`, fetched from Debian's archive when the cache has none."""
    if series not in KERNELS:
        raise GuestSetupError(f"'series' must be one of {sorted(KERNELS)} (got {series!r}).")
    have = cached(series, cache_dir)
    if have is not None:
        return have
    root = cache_root(cache_dir)
    apt = PrivateApt(root / "apt")
    packages = [apt.newest(pattern) for pattern in KERNELS[series]]
    tmp = Path(tempfile.mkdtemp(prefix=".fetch-", dir=root))
    try:
        tree = tmp / "tree"
        for name, version in packages:
            deb = apt.download(name, version, tmp)
            _run(["dpkg-deb", "-x", str(deb), str(tree)], f"dpkg-deb -x {deb.name}")
        found = [p for base in (tree / "lib" / "modules", tree / "usr" / "lib" / "modules") if base.is_dir()
                 for p in base.iterdir()]
        if len(found) != 1:
            raise GuestSetupError(f"the {series} arm64 packages hold no single lib/modules/<release> ({found})")
        modules, release = found[0], found[0].name
        image = next((p for p in (tree / "boot" / f"vmlinuz-{release}", modules / "vmlinuz") if p.is_file()), None)
        if image is None:
            raise GuestSetupError(f"the {series} arm64 packages hold no kernel image for {release}")
        meta = {"series": series, "release": release, "image": str(image.relative_to(tree)),
                "modules": str(modules.relative_to(tree)), "packages": [f"{n}={v}" for n, v in packages]}
        (tree / MARKER).write_text(json.dumps(meta, indent=1) + "\n")
        final = root / f"{release}"
        if final.exists():
            shutil.rmtree(final)
        os.replace(tree, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = cached(series, cache_dir)
    assert out is not None
    return out


def busybox(cache_dir: Path | str | None = None) -> Path:
    """Debian's static busybox for arm64, from the cache (fetched once)."""
    root = cache_root(cache_dir) / "busybox"
    path = root / "busybox"
    if path.is_file():
        return path
    apt = PrivateApt(cache_root(cache_dir) / "apt")
    name, version = apt.newest(re.compile(rf"^{BUSYBOX}$"), BUSYBOX)
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        deb = apt.download(name, version, Path(tmp))
        _run(["dpkg-deb", "-x", str(deb), f"{tmp}/tree"], f"dpkg-deb -x {deb.name}")
        tree = Path(tmp) / "tree"
        found = next((p for p in (tree / "bin" / "busybox", tree / "usr" / "bin" / "busybox") if p.is_file()), None)
        if found is None:
            raise GuestSetupError(f"{deb.name} holds no busybox")
        os.replace(found, path)
    return path


class PrivateApt(Apt):
    """apt-get for arm64 packages with a state of its own (lists, cache, sources) under `root`, so the node's
    apt and dpkg never learn of a foreign architecture (no `dpkg --add-architecture`)."""

    def __init__(self, root: Path) -> None:
        super().__init__(("-o", "APT::Architecture=arm64", "-o", "APT::Architectures::=arm64",
                          "-o", f"Dir::State={root / 'state'}", "-o", f"Dir::Cache={root / 'cache'}",
                          "-o", f"Dir::Etc::SourceList={root / 'sources.list'}",
                          "-o", "Dir::Etc::SourceParts=/dev/null"))
        self.root = root

    def update(self) -> None:
        if self.updated:
            return
        for sub in ("state/lists/partial", "cache/archives/partial"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        lines = [f"deb [arch=arm64 signed-by={KEYRING}] http://deb.debian.org/debian {s}" for s in SOURCES]
        lines += [f"deb [arch=arm64 signed-by={KEYRING}] http://deb.debian.org/debian-security {s}" for s in SECURITY]
        (self.root / "sources.list").write_text("\n".join(lines) + "\n")
        super().update()

    def can_update(self) -> bool:
        return True  # its own lists: anyone who can write the cache

    def newest(self, pattern: re.Pattern, prefix: str = "") -> tuple[str, str]:
        self.update()  # a fresh state has no lists to look in
        return super().newest(pattern, prefix)


def program(cc: str = CC) -> bytes:
    """reclaim.c built by the aarch64 cross compiler, static (the guest has no libc)."""
    return static_program("reclaim.c", "the reclaim probe", cc, ("-O2", "-static"),
                          "run `make guest`: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross")


def disk_mib(file_mib: int) -> int:
    """The XFS disk's size for a file of `file_mib`: room for it and the file system's own metadata."""
    return file_mib * 3 // 2 + 16


def disk(file_mib: int, cache_dir: Path | str | None = None) -> Path:
    """An XFS disk image holding `data`, `file_mib` MiB of zeros (the page cache does not look at them),
    gzip-compressed: the guest writes it onto a RAM disk. Made once, with mkfs.xfs's prototype file (no
    loop mount, no root)."""
    root = cache_root(cache_dir)
    path = root / f"xfs-{file_mib}MiB-{disk_mib(file_mib)}MiB.img.gz"
    if path.is_file():
        return path
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root) as tmp:
        data = Path(tmp) / "data"
        with open(data, "wb") as f:
            f.write(bytes(file_mib * MiB))
        proto = Path(tmp) / "proto"
        proto.write_text(f"/dev/null\n0 0\nd--755 0 0\ndata ---644 0 0 {data}\n$\n")
        image = Path(tmp) / "disk.img"
        with open(image, "wb") as f:
            f.truncate(disk_mib(file_mib) * MiB)
        # under XFS_MIN_MIB mkfs.xfs asks for --unsupported (its floor for a production file system since
        # xfsprogs 5.19; the kernel mounts any size): a small disk is a short write onto the guest's RAM disk
        small = ["--unsupported", "-d", "agcount=1"] if disk_mib(file_mib) < XFS_MIN_MIB else []
        _run(["mkfs.xfs", "-q", *small, "-p", str(proto), str(image)], "mkfs.xfs")
        with open(image, "rb") as src, gzip.open(Path(tmp) / "disk.img.gz", "wb", compresslevel=6) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.replace(Path(tmp) / "disk.img.gz", path)
    return path


@dataclass(frozen=True, kw_only=True, slots=True)
class ReclaimConfig:
    """One reclaim in its own boot of the arm64 kernel of `series` (KERNELS): `reclaim()`'s arguments."""

    series: str
    lru: str
    readahead_kb: int
    mapped_bytes: int
    reclaim_bytes: int
    align_bytes: int
    young_bytes: int


def run_reclaims(configs: list[ReclaimConfig], cache_dir: Path | str | None = None,
                 timeout_s: float = TIMEOUT_S) -> list[ReclaimRun | str]:
    """Each configuration's reclaim, one boot each (the same configuration twice: one boot), in order; a
    configuration whose kernel cannot be fetched or whose probe fails gets the reason instead."""
    done: dict[ReclaimConfig, ReclaimRun | str] = {}
    for c in dict.fromkeys(configs):
        try:
            done[c] = reclaim(fetch(c.series, cache_dir), lru=c.lru, mapped_bytes=c.mapped_bytes,
                              reclaim_bytes=c.reclaim_bytes, readahead_kb=c.readahead_kb, align_bytes=c.align_bytes,
                              young_bytes=c.young_bytes, cache_dir=cache_dir, timeout_s=timeout_s)
        except GuestSetupError as e:
            done[c] = f"{type(e).__name__}: {e}"
    return [done[c] for c in configs]


def identity(cache_dir: Path | str | None = None) -> dict:
    """What fixes a reclaim's counts besides its configuration: each series' kernel packages, where cached
    (a node fetches the newest when it has none)."""
    return {s: list(k.packages) for s in sorted(KERNELS) if (k := cached(s, cache_dir)) is not None}


HEAD = 2 * MiB  # the file's first bytes, dropped before the mapping: readahead's first, smaller folios are there


def reclaim(kernel: Arm64Kernel, *, lru: str = "mglru", mapped_bytes: int = 64 * MiB, reclaim_bytes: int = 48 * MiB,
            readahead_kb: int = 128, align_bytes: int = 2 * MiB, young_bytes: int = 0,
            cache_dir: Path | str | None = None, timeout_s: float = TIMEOUT_S) -> ReclaimRun:
    """Boot `kernel` once: lay out a file's folios (reclaim.c: `readahead_kb` each, `mapped_bytes` of them
    mapped `align_bytes` past a 2 MiB boundary, the first `young_bytes` of the mapping young, the rest old),
    reclaim `reclaim_bytes` from the mapping's memory cgroup under `lru` (MGLRU or the classic LRU), and read
    back what the reclaim did."""
    if lru not in LRUS:
        raise ValueError(f"'lru' must be one of {list(LRUS)} (got {lru!r}).")
    if mapped_bytes % MiB:
        raise ValueError(f"'mapped_bytes' must be a whole number of MiB (got {mapped_bytes}).")
    if shutil.which(QEMU) is None:
        raise GuestSetupError(f"{QEMU} is not installed: run `make guest` (or apt-get install qemu-system-arm)")
    file_mib = (HEAD + mapped_bytes) // MiB
    # fixed width: the initramfs is the same size whatever the values, so the guest's memory is laid out alike
    # (7.3's classic-LRU counts were seen to move with the initramfs's length)
    conf = " ".join(f"{v:>12}" for v in (lru, readahead_kb, HEAD, mapped_bytes, align_bytes, young_bytes,
                                          reclaim_bytes))
    with tempfile.TemporaryDirectory(prefix="memsweep-arm64-") as tmp:
        initrd, console = Path(tmp) / "initrd", Path(tmp) / "console"
        initrd.write_bytes(initramfs(kernel, conf, file_mib, cache_dir))
        cmd = [QEMU, "-machine", "virt", "-accel", "tcg", "-cpu", "max,pauth-impdef=on", "-smp", "1",
               "-m", str(RAM_MIB + disk_mib(file_mib)), "-icount", qemu.ICOUNT, *qemu.DETERMINISTIC,
               "-kernel", str(kernel.image), "-initrd", str(initrd), "-append", CMDLINE, "-nodefaults",
               "-nographic", "-no-reboot", "-serial", f"file:{console}"]
        proc = qemu.spawn(cmd, Path(tmp) / "qemu.log")
        deadline = time.monotonic() + timeout_s
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        qemu.stop(proc)
        text = console.read_text(errors="replace") if console.exists() else ""
    return parse(text, lru=lru, readahead_kb=readahead_kb, reclaim_bytes=reclaim_bytes)


def initramfs(kernel: Arm64Kernel, conf: str, file_mib: int, cache_dir: Path | str | None = None) -> bytes:
    """The guest's root: busybox, reclaim.sh as /init, the probe program, its configuration, the XFS disk
    (compressed), the modules (brd sized for the disk)."""
    mods = {p.name.split(".ko")[0]: p for p in kernel.modules.rglob("*.ko*")}
    entries = [cpio.directory(d) for d in ("bin", "dev", "proc", "sys", "mnt", "modules")]
    entries += [cpio.regular("bin/busybox", busybox(cache_dir).read_bytes(), executable=True),
                cpio.regular("init", resources.files(__package__).joinpath("reclaim.sh").read_bytes(), executable=True),
                cpio.regular("reclaim", program(), executable=True),
                cpio.regular("probe.conf", f"{conf}\n".encode()),
                cpio.regular("disk.img.gz", disk(file_mib, cache_dir).read_bytes())]
    for i, name in enumerate(m for m in MODULES if m in mods):
        entries.append(cpio.regular(f"modules/{i:02d}-{name}.ko", _module_bytes(mods[name])))
        if name == "brd":  # one RAM disk the size of the XFS disk (rd_size in KiB)
            entries.append(cpio.regular(f"modules/{i:02d}-{name}.ko.args",
                                        f"rd_nr=1 rd_size={disk_mib(file_mib) * 1024}\n".encode()))
    return cpio.archive(entries)


def _module_bytes(path: Path) -> bytes:
    import lzma

    data = path.read_bytes()
    return lzma.decompress(data) if path.name.endswith(".xz") else data


LINE = re.compile(r"^memsweep-(reclaim|error) (.*)$", re.M)


def parse(console: str, *, lru: str, readahead_kb: int, reclaim_bytes: int) -> ReclaimRun:
    """A ReclaimRun from the guest's console; GuestSetupError with the console's tail when the probe failed."""
    values: dict[str, str] = {}
    young: dict[int, int] = {}
    pages: dict[int, int] = {}
    folios: dict[int, int] = {}
    visits = 0
    clean: dict[int, int] = {}  # the unprobed pass's folios by order
    for kind, rest in LINE.findall(console):
        if kind == "error":
            raise GuestSetupError(f"the arm64 reclaim probe failed: {rest}\n" + _tail(console))
        key, _, value = rest.partition(" ")
        if key == "clean_folio":
            k, n = (int(x) for x in value.split())
            clean[k] = clean.get(k, 0) + n
        elif key in ("calls", "pages", "visits", "folio"):
            k, n = (int(x) for x in value.split())
            if key == "calls":
                young[k] = young.get(k, 0) + n
            elif key == "pages":
                pages[k] = pages.get(k, 0) + n
            elif key == "folio":
                folios[k] = folios.get(k, 0) + n
            else:
                visits += n
        else:
            values[key] = value.strip()
    if "done" not in values:
        raise GuestSetupError("the arm64 reclaim probe did not finish\n" + _tail(console))
    dropped = [k for k in values if k.startswith("dropped_") and values[k] != "0"]
    if dropped:
        raise GuestSetupError(f"the arm64 reclaim probe's hist triggers dropped events ({dropped})")
    def delta(prefix: str, name: str) -> int:
        return int(values[f"{prefix}after_{name}"]) - int(values[f"{prefix}before_{name}"])

    run = ReclaimRun(release=values["release"], function=values["function"], lru=lru, readahead_kb=readahead_kb,
                     mapped_bytes=int(values["mapped"]), reclaim_bytes=reclaim_bytes, young=young, pages=pages,
                     visits=visits, scanned=delta("", "pgscan_file"), reclaimed=delta("", "pgsteal_file"),
                     probed_instructions=int(values["instructions"]),
                     instructions=int(values["clean_instructions"]), folios=folios, console=console)
    # the unprobed pass stands for the probed one's work only where it laid out and reclaimed the same
    again = (clean, delta("clean_", "pgscan_file"), delta("clean_", "pgsteal_file"))
    if again != (folios, run.scanned, run.reclaimed):
        raise GuestSetupError(f"the reclaim without probes differed from the probed one: folios {clean}, scanned "
                              f"{again[1]:,}, reclaimed {again[2]:,} against {folios}, {run.scanned:,}, "
                              f"{run.reclaimed:,}")
    return run


def _tail(console: str, lines: int = 20) -> str:
    return "\n".join(console.splitlines()[-lines:])


def _run(args: list[str], what: str, cwd: Path | None = None) -> str:
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=APT_TIMEOUT_S, cwd=cwd)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise GuestSetupError(f"{what} failed: {e}") from None
    if proc.returncode != 0:
        raise GuestSetupError(f"{what} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    return proc.stdout


def text(run: ReclaimRun) -> str:
    """A run in words, one line per count."""
    pages = ", ".join(f"{n} pages: {c:,}" for n, c in sorted(run.pages.items())) or "one page a call"
    folios = ", ".join(f"order {o}: {c:,}" for o, c in sorted(run.folios.items()))
    return "\n".join([
        f"mapped folios: {folios}",
        f"{run.release}, {run.lru}, readahead {run.readahead_kb} KiB: reclaimed {run.reclaimed:,} of "
        f"{run.mapped_bytes // 4096:,} mapped file pages (asked {run.reclaim_bytes // 4096:,}; "
        f"scanned {run.scanned:,})",
        f"{run.function}: {run.calls:,} calls, {run.young.get(1, 0):,} found an accessed PTE; calls by pages: "
        f"{pages}",
        f"folio_referenced_one: {run.visits:,} calls",
        f"the reclaim: {run.instructions:,} instructions (guest ns under QEMU's instruction counter) without "
        f"probes, {run.probed_instructions:,} with them"])
