"""KernelSettings: which kernel the `kernel` row source boots and what it implements, the spec's `[kernel]`
table (and `memsweep run --kernel/--accel`) as a value.

A sweep builds it once (sweeps.spec.load), hashes its fields and the image's digest into the ids of its
kernel chunks (workers.source.Backend.chunk_inputs), and passes it to every kernel chunk (workers.guest.rows).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, fields
from pathlib import Path

from . import build, debian
from workers.keys import unknown_key

from .exceptions import GuestKernelError
from .kernels import GuestKernel, cached_kernel, load_build_tree, load_kernel
from .runner import ACCELS

DEBIAN = "debian:"  # image = "debian:6.1": Debian's kernel of that series, from the node's cache (make guest)
SERIES = "series:6.12"  # the seed series on Debian's 6.12, built on this node (make kernels; workers/guest/build.py)
BASE = "base:6.12"  # the same source and config without the series (make kernels): the slow path only
NAMED = tuple(DEBIAN + s for s in debian.SERIES) + (SERIES, BASE)  # the kernels a spec names rather than a path
BUILT = {SERIES: build.NAME, BASE: build.BASE}  # the named kernels this node builds
# What a patched build is read against (`references`): its base (the patches' effect) and the distribution's
# kernel of the same source (the config's effect); the kernel row's column each one's value goes in.
REFERENCES = {SERIES: (("kernel_base", BASE), ("kernel_stock", DEBIAN + "6.12"))}


@dataclass(frozen=True, kw_only=True, slots=True)
class KernelSettings:
    """The kernel under test; each field is a `[kernel]` key of a spec.

    `image`: a bzImage or vmlinux path, a kernel build folder (its arch/x86/boot/bzImage, and the modules
    it built if the pmem drivers are modules), "debian:SERIES" (Debian's kernel of that series from the cache;
    the default is Debian's 6.12) or "series:6.12" (the seed series' build, which runs every strategy).
    `modules`: its lib/modules/<release> folder ("" when the pmem drivers are built in, or for a named
    kernel). `accel`: "auto" (KVM when a probe boot works, else TCG), "tcg" or
    "kvm". `strategy` and `struct_page_size`: what the kernel implements. A stock kernel has the slow
    path and 64-byte struct pages; a patched one says which strategy it carries; a kernel that switches
    among strategies at run time (the series' build: GuestKernel.strategies) runs each point's own.
    `references`: with the series' build, also bind each point's namespace on the slow path of its base
    (base:6.12, the patches' effect) and of Debian's 6.12 (the config's), one boot each: the kernel rows'
    kernel_base and kernel_stock columns. `base`: for a user's image or build folder, its base (the same
    source and config without the patches under test, an image or build folder): booted the same way, the
    rows' kernel_base.
    `binds`: how many times each namespace is bound in one boot; `boots`: how many times the guest boots
    and binds them all again. A kernel row's samples are its boots (each boot's median over its binds):
    binds in one boot share the boot's state and are not independent samples, so compare's sampled rule
    (after LKP's, at least 3 samples a side) asks for `boots = 3`."""

    image: str = DEBIAN + debian.DEFAULT_SERIES
    modules: str = ""
    accel: str = "auto"
    strategy: str = "slow"
    struct_page_size: int = 64
    binds: int = 3
    boots: int = 1  # 3: LKP's and mmtests' least sample count for a verdict (three times the guest time)
    references: bool = True
    base: str = ""
    boot_timeout_s: int = 120  # TCG boots took 6-18 s on a busy 2-core machine

    def __post_init__(self) -> None:
        if not isinstance(self.references, bool):
            raise GuestKernelError(f"'kernel.references' must be true or false (got {self.references!r}).")
        for f in ("image", "modules", "strategy", "base"):
            if not isinstance(getattr(self, f), str):
                raise GuestKernelError(f"'kernel.{f}' must be a string (got {getattr(self, f)!r}).")
        if self.accel not in ACCELS:
            raise GuestKernelError(f"'kernel.accel' must be one of {list(ACCELS)} (got {self.accel!r}).")
        for f in ("struct_page_size", "binds", "boots", "boot_timeout_s"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise GuestKernelError(f"'kernel.{f}' must be a positive integer (got {v!r}).")
        if self.image.startswith((DEBIAN, "series:")) and self.image not in NAMED:
            raise GuestKernelError(f"'kernel.image' must be a kernel image path or one of "
                                   f"{list(NAMED)} (got {self.image!r}).")
        if self.base and (self.image in NAMED or self.base in NAMED):
            raise GuestKernelError(f"'kernel.base' must be a path, beside an image that is a path (got image "
                                   f"{self.image!r}, base {self.base!r}): the named kernels bring their own "
                                   "references.")

    @classmethod
    def from_table(cls, table: object, base: Path | None = None) -> KernelSettings:
        """The settings a spec's `[kernel]` table gives (keys it leaves out keep their defaults); relative
        image and modules paths are taken from `base` (the spec file's folder)."""
        problem = unknown_key(table, (f.name for f in fields(cls)), "kernel")
        if problem:
            raise GuestKernelError(problem)
        out = cls(**table)
        return out.resolved(base) if base is not None else out

    def resolved(self, base: Path) -> KernelSettings:
        """Image and modules paths made absolute from `base`."""
        def absolute(p: str) -> str:
            return p if not p or p in NAMED else str((base / Path(p).expanduser()).resolve())
        return KernelSettings(**{**{f.name: getattr(self, f.name) for f in fields(self)},
                                 "image": absolute(self.image), "modules": absolute(self.modules),
                                 "base": absolute(self.base)})

    def kernel(self) -> GuestKernel:
        """The kernel to boot, checked (GuestKernelError names what is missing)."""
        if self.image in NAMED and self.modules:
            raise GuestKernelError(f"'kernel.modules' must be left out for {self.image!r} (it brings its own).")
        if self.image in BUILT:
            built = build.cached_build(name=BUILT[self.image])
            if built is None:
                raise GuestKernelError(f"{self.image!r} is not built on this node: run `make kernels` or "
                                       "`python -m workers.guest build` (3-7 minutes on 2 cores, once; `memsweep run` "
                                       "builds it itself)")
            return GuestKernel(image=built.image, modules=None, release=built.release,
                               strategies=built.strategies)
        if self.image.startswith(DEBIAN):
            return cached_kernel(self.image[len(DEBIAN):])
        if Path(self.image).expanduser().is_dir():
            if self.modules:
                raise GuestKernelError("'kernel.modules' must be left out for a kernel build folder (its modules, "
                                       "if any, are the ones it built)")
            return load_build_tree(self.image)
        return load_kernel(self.image, self.modules or None)

    def switchable_strategies(self) -> tuple[str, ...]:
        """The strategies the kernel switches among at run time (its memmap_init_strategy); () for a
        kernel that has one, `strategy`."""
        return self.kernel().strategies

    def reference_settings(self) -> dict[str, KernelSettings]:
        """The kernels a row of this one is read against (REFERENCES for a named kernel, `base` for a user's), by
        the column their value goes in: each booted once, binding the slow path; none unless `references`."""
        pairs = REFERENCES.get(self.image, ()) if not self.base else (("kernel_base", self.base),)
        if not self.references:
            return {}
        return {col: KernelSettings(image=image, accel=self.accel, binds=self.binds, references=False,
                                    struct_page_size=self.struct_page_size, boot_timeout_s=self.boot_timeout_s)
                for col, image in pairs}

    def build(self) -> str:
        """The build a kernel row's counts are of (the rows' kernel_build): build_name() of the image."""
        if self.image in NAMED:
            return self.image
        k = self.kernel()
        return build_name(self.image, k.release, _digest(k))

    def identity(self) -> dict:
        """What fixes a kernel row besides the point: the settings, the release and the image's digest (and
        those of the kernels it is read against)."""
        k = self.kernel()
        out = {**{f.name: getattr(self, f.name) for f in fields(self) if f.name != "boot_timeout_s"},
               "release": k.release, "image_sha256": _digest(k)}
        refs = self.reference_settings()
        if refs:
            out["reference_sha256"] = {col: _digest(r.kernel()) for col, r in refs.items()}
        return out


def build_name(image: str, release: str, digest: str) -> str:
    """A kernel build's name: a named kernel's own ("series:6.12"), a user's image `<release>@<digest>`
    (two builds of one release, or one tree rebuilt with another config, read apart)."""
    return image if image in NAMED else f"{release}@{digest}"


def manifest_build(manifest: dict) -> str | None:
    """The build a sweep's kernel rows booted, from its manifest (the computation's identity of the spec's
    `[kernel]`: image, release, image_sha256), for rows written before schema 9 named it; None without one."""
    kernel = (((manifest.get("computation") or {}).get("identity") or {}).get("spec") or {}).get("kernel") or {}
    image, release, digest = kernel.get("image"), kernel.get("release"), kernel.get("image_sha256")
    if not image or (image not in NAMED and not (release and digest)):
        return None
    return build_name(image, release or "", digest or "")


def _digest(k: GuestKernel) -> str:
    st = k.image.stat()
    return _image_digest(str(k.image), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _image_digest(path: str, size: int, mtime_ns: int) -> str:
    """An image's sha256 (16 hex digits), read once per file version: chunk ids and the computation ask for it."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
