"""A kernel a guest can boot (`GuestKernel`): Debian's, from the cache that `fetch` fills, or a user's own,
checked once when loaded (`load_kernel`): the image is an x86-64 bzImage or ELF, and the modules folder
holds the pmem drivers (or lists them in modules.builtin). Also the modules the guest loads, in dependency
order (`pmem_modules`). `fetch` readies a node: `python -m workers.guest fetch` (the Makefile's `make guest`).
"""

from __future__ import annotations

import dataclasses

import gzip
import lzma
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import debian
from .exceptions import GuestKernelError

# The drivers a pmem/dax bind needs (KERNEL-GUEST.md): built in or modules, in this load order (from each
# module's depends=: nd_pmem needs libnvdimm and nd_btt; nd_e820, dax_pmem, nd_btt and nfit need libnvdimm).
PMEM_DRIVERS = ("libnvdimm", "nfit", "nd_btt", "nd_pmem", "nd_e820", "dax_pmem", "device_dax")
MODULE_SUFFIXES = (".ko.xz", ".ko.gz", ".ko.zst", ".ko")
STRATEGY_NAMES = ("slow", "template", "template_nt", "template_nt_inline")  # 0009's enum, in its order
# The Kconfig symbol that builds each of them (drivers/nvdimm, drivers/acpi/nfit, drivers/dax Makefiles).
DRIVER_OPTIONS = {"libnvdimm": "LIBNVDIMM", "nfit": "ACPI_NFIT", "nd_btt": "ND_BTT", "nd_pmem": "BLK_DEV_PMEM",
                  "nd_e820": "X86_PMEM_LEGACY", "dax_pmem": "DEV_DAX_PMEM", "device_dax": "DEV_DAX"}
# arch/x86/boot/header.S: the setup header. 0x1fe boot_flag 0xaa55, 0x202 "HdrS", 0x206 protocol version,
# 0x20e kernel_version (offset of the version string - 0x200), 0x236 xloadflags (bit 0: XLF_KERNEL_64).
BZ_BOOT_FLAG, BZ_MAGIC, BZ_VERSION, BZ_KVER, BZ_XLOADFLAGS = 0x1FE, 0x202, 0x206, 0x20E, 0x236
EM_X86_64 = 62


@dataclass(frozen=True, kw_only=True, slots=True)
class GuestKernel:
    """A bootable kernel: its image (bzImage or ELF vmlinux), its modules folder (lib/modules/<release>;
    None when the pmem drivers are built in), its release string (`uname -r`) and the memmap init
    strategies it switches among at run time (the series' build, workers/guest/build.py; () for a kernel
    with one)."""

    image: Path
    modules: Path | None
    release: str
    strategies: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class Module:
    """A kernel module the guest loads: its name, its file (any MODULE_SUFFIXES) and its dependencies."""

    name: str
    path: Path
    depends: tuple[str, ...]
    vermagic: str | None = None

    def load_bytes(self) -> bytes:
        """The module decompressed, as busybox insmod takes it."""
        return _decompress(self.path)


def load_kernel(image: Path | str, modules: Path | str | None = None) -> GuestKernel:
    """A user's kernel, checked: GuestKernelError names the path and what is wrong."""
    image = Path(image).expanduser()
    if not image.is_file():
        raise GuestKernelError(f"'image' must be an existing kernel image file (got {str(image)!r}: no such file)")
    release = image_release(image)
    if modules is None:
        return GuestKernel(image=image, modules=None, release=release or image.name)
    mods = Path(modules).expanduser()
    if not mods.is_dir():
        raise GuestKernelError(f"'modules' must be an existing lib/modules/<release> folder "
                               f"(got {str(mods)!r}: no such folder)")
    modules_list = pmem_modules(mods)  # raises when a driver is missing
    for m in modules_list:  # insmod refuses a module built for another kernel: say so before a boot
        built_for = (m.vermagic or "").split(" ")[0]
        if release and built_for and built_for != release:
            raise GuestKernelError(f"'modules' must be built for the image's release {release} (got "
                                   f"{str(m.path)!r}, built for {built_for})")
    return GuestKernel(image=image, modules=mods, release=release or mods.name)


def load_build_tree(tree: Path | str) -> GuestKernel:
    """A kernel build folder as `make` left it, the way virtme-ng boots one: arch/x86/boot/bzImage, its
    .config and include/config/kernel.release; the pmem drivers built in (=y in .config: no modules) or
    built as modules in the tree (=m, with modules.order: the .ko files where make wrote them and
    modules.builtin, read as a lib/modules folder is). GuestKernelError names what is missing."""
    tree = Path(tree).expanduser()
    image = tree / "arch" / "x86" / "boot" / "bzImage"
    what = f"a kernel build folder (got {str(tree)!r}"
    if not image.is_file():
        raise GuestKernelError(f"'image' must be a kernel image file or {what}: no arch/x86/boot/bzImage; "
                               "run `make bzImage` in it)")
    try:
        config = dict(line.split("=", 1) for line in (tree / ".config").read_text().splitlines()
                      if line.startswith("CONFIG_") and "=" in line)
    except OSError:
        raise GuestKernelError(f"'image' must be {what}: no .config beside its bzImage)") from None
    state = {d: config.get(f"CONFIG_{opt}") for d, opt in DRIVER_OPTIONS.items()}
    absent = [f"CONFIG_{DRIVER_OPTIONS[d]}" for d, v in state.items() if v not in ("y", "m")]
    if absent:
        raise GuestKernelError(f"'image' must be {what} with the pmem drivers: its .config has "
                               f"{', '.join(absent)} neither =y nor =m)")
    strategies = switched_strategies(tree / "System.map")
    if all(v == "y" for v in state.values()):
        release_file = tree / "include" / "config" / "kernel.release"
        release = release_file.read_text().strip() if release_file.is_file() else image_release(image) or tree.name
        return GuestKernel(image=image, modules=None, release=release, strategies=strategies)
    if not (tree / "modules.order").is_file():
        modular = ", ".join(f"CONFIG_{DRIVER_OPTIONS[d]}" for d, v in state.items() if v == "m")
        raise GuestKernelError(f"'image' must be {what} with its modules built: {modular} are =m and there "
                               "is no modules.order; run `make modules` in it)")
    return dataclasses.replace(load_kernel(image, tree), strategies=strategies)


def switched_strategies(system_map: Path) -> tuple[str, ...]:
    """The memmap init strategies a kernel switches among at run time: all four when its System.map has
    memsweep's module parameter (workers/guest/series/0009: `__param_memmap_init_strategy`), else none."""
    try:
        with open(system_map, "rb") as f:
            found = any(line.rstrip().endswith(b" __param_memmap_init_strategy") for line in f)
    except OSError:
        return ()
    return STRATEGY_NAMES if found else ()


def image_release(image: Path) -> str | None:
    """The release string in an x86-64 bzImage's header (None for an ELF vmlinux); GuestKernelError when
    the file is neither."""
    with open(image, "rb") as f:  # the setup code, where kernel_version points, is at most 64 KiB
        head = f.read(0x10000)
    if head[:4] == b"\x7fELF":
        machine = int.from_bytes(head[18:20], "little") if len(head) >= 20 else 0
        if head[4] != 2 or machine != EM_X86_64:
            raise GuestKernelError(f"'image' must be an x86-64 kernel (got {str(image)!r}: an ELF file for "
                                   f"machine {machine}, {32 if head[4] == 1 else 64}-bit; x86-64 is machine 62)")
        return None
    if len(head) < 0x240 or head[BZ_BOOT_FLAG:BZ_BOOT_FLAG + 2] != b"\x55\xaa" \
            or head[BZ_MAGIC:BZ_MAGIC + 4] != b"HdrS":
        raise GuestKernelError(f"'image' must be an x86-64 bzImage or ELF vmlinux (got {str(image)!r}: "
                               f"no 'HdrS' setup header at 0x202 and no ELF magic; first bytes {head[:8]!r})")
    version = int.from_bytes(head[BZ_VERSION:BZ_VERSION + 2], "little")
    if version < 0x20C or not head[BZ_XLOADFLAGS] & 1:
        raise GuestKernelError(f"'image' must be a 64-bit x86 bzImage (got {str(image)!r}: boot protocol "
                               f"{version >> 8}.{version & 0xff} without XLF_KERNEL_64)")
    kver = int.from_bytes(head[BZ_KVER:BZ_KVER + 2], "little")
    text = head[0x200 + kver:0x200 + kver + 256] if kver else b""
    word = text.split(b"\0")[0].split(b" ")[0].decode(errors="replace")
    return word or None


def pmem_modules(modules: Path) -> list[Module]:
    """The modules the guest loads for PMEM_DRIVERS, with their dependencies, in load order; drivers
    listed in modules.builtin need none. GuestKernelError names what is missing."""
    files = _module_files(modules)
    builtin = _builtin(modules)
    missing = [d for d in PMEM_DRIVERS if d not in files and d not in builtin]
    if missing:
        raise GuestKernelError(f"'modules' must hold the pmem drivers {', '.join(PMEM_DRIVERS)} as modules or "
                               f"in modules.builtin (got {str(modules)!r}: missing {', '.join(missing)})")
    order: list[Module] = []

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if name in builtin or any(m.name == name for m in order):
            return
        if name not in files:
            raise GuestKernelError(f"'modules' must hold {name}, which {chain[-1]} depends on "
                                   f"(got {str(modules)!r}: no {name}.ko)")
        if name in chain:
            raise GuestKernelError(f"module dependency loop in {str(modules)!r}: {' -> '.join((*chain, name))}")
        info = _modinfo(files[name])
        mod = Module(name=name, path=files[name], vermagic=info.get("vermagic"),
                     depends=tuple(d.replace("-", "_") for d in info.get("depends", "").split(",") if d))
        for dep in mod.depends:
            visit(dep, (*chain, name))
        order.append(mod)

    for driver in PMEM_DRIVERS:
        visit(driver, ())
    return order


def cached_kernel(series: str = debian.DEFAULT_SERIES, cache_dir: Path | str | None = None) -> GuestKernel:
    """Debian's kernel of `series` from the cache; GuestKernelError when it was never fetched."""
    found = debian.cached(series, cache_dir)
    if found is None:
        raise GuestKernelError(f"no Debian {series} kernel in {cache_dir or debian.default_cache_dir()}: run "
                               f"`make guest` or `python -m workers.guest fetch`")
    return load_kernel(found.root / "boot" / f"vmlinuz-{found.release}",
                       found.root / "lib" / "modules" / found.release)


def fetch(series: tuple[str, ...] = tuple(debian.SERIES), cache_dir: Path | str | None = None, *,
          refresh: bool = False) -> list[GuestKernel]:
    """Make this node ready to boot guests: QEMU and busybox-static installed, Debian's kernels of
    `series` in the cache. Quick when everything is there already."""
    apt = debian.Apt()
    debian.ensure_host_tools(apt)
    for s in series:
        debian.fetch_series(s, cache_dir, refresh=refresh, apt=apt)
    return [cached_kernel(s, cache_dir) for s in series]


def _module_files(modules: Path) -> dict[str, Path]:
    """Module name (dashes as underscores, as the kernel names it) -> file."""
    files: dict[str, Path] = {}
    for path in sorted(modules.rglob("*.ko*")):
        for suffix in MODULE_SUFFIXES:
            if path.name.endswith(suffix):
                files.setdefault(path.name[:-len(suffix)].replace("-", "_"), path)
                break
    return files


def _builtin(modules: Path) -> set[str]:
    try:
        lines = (modules / "modules.builtin").read_text().split()
    except OSError:
        return set()
    return {Path(line).name.removesuffix(".ko").replace("-", "_") for line in lines}


def _modinfo(path: Path) -> dict[str, str]:
    """The module's .modinfo strings ("key=value", NUL-separated) that matter here: depends= and vermagic=."""
    data, out = _decompress(path), {}
    for key in ("depends", "vermagic"):
        at = data.find(b"\0" + key.encode() + b"=")
        if at >= 0:
            start = at + len(key) + 2
            out[key] = data[start:data.index(b"\0", start)].decode(errors="replace")
    return out


def _decompress(path: Path) -> bytes:
    name = path.name
    if name.endswith(".xz"):
        return lzma.decompress(path.read_bytes())
    if name.endswith(".gz"):
        return gzip.decompress(path.read_bytes())
    if name.endswith(".zst"):
        if shutil.which("zstd") is None:
            raise GuestKernelError(f"{str(path)!r} is zstd-compressed: install zstd to unpack it")
        return subprocess.run(["zstd", "-dc", str(path)], capture_output=True, check=True).stdout
    return path.read_bytes()
