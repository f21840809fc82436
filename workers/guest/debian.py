"""This node's guest tooling from Debian: QEMU and busybox-static installed with apt when missing, and
Debian's kernel packages fetched with `apt-get download` and unpacked with `dpkg-deb -x` into a per-user
cache, never installed.

The cache holds one folder per kernel release, `<cache>/<release>/` (boot/vmlinuz-<release>,
lib/modules/<release>/), with a MARKER file naming the package it came from; a folder without the marker
is an interrupted unpack and is never used. `fetch_series` does nothing when the cache already holds a
kernel of the series (pass refresh=True to look for a newer package).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .exceptions import GuestSetupError

# The kernel series a guest can boot, as Debian 12 names their unsigned image packages (KERNEL-GUEST.md).
SERIES = {
    "6.12": re.compile(r"^linux-image-6\.12\.\d+\+deb12-amd64-unsigned$"),
    "6.1": re.compile(r"^linux-image-6\.1\.0-\d+-amd64-unsigned$"),
}
DEFAULT_SERIES = "6.12"
MARKER = ".memsweep-kernel.json"
# What the runner needs on the host, and the Debian package that brings it.
HOST_TOOLS = {"qemu-system-x86_64": "qemu-system-x86", "busybox": "busybox-static"}
BUSYBOX_STATIC = Path("/bin/busybox")
APT_TIMEOUT_S = 1800


@dataclass(frozen=True, kw_only=True, slots=True)
class CachedRelease:
    """One unpacked kernel package in the cache."""

    root: Path
    release: str
    series: str
    package: str
    version: str


def default_cache_dir() -> Path:
    """${XDG_CACHE_HOME:-~/.cache}/memsweep/kernels: per user, shared by every process on the node."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memsweep" / "kernels"


def cached(series: str, cache_dir: Path | str | None = None) -> CachedRelease | None:
    """The newest complete cached kernel of `series`, or None."""
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    found = []
    for marker in root.glob(f"*/{MARKER}"):
        try:
            meta = json.loads(marker.read_text())
        except (OSError, ValueError):
            continue
        if meta.get("series") == series:
            found.append(CachedRelease(root=marker.parent, release=meta["release"], series=series,
                                       package=meta["package"], version=meta["version"]))
    if not found:
        return None
    newest = found[0]
    for c in found[1:]:
        if _version_gt(c.version, newest.version):
            newest = c
    return newest


def fetch_series(series: str, cache_dir: Path | str | None = None, *, refresh: bool = False,
                 apt: Apt | None = None) -> CachedRelease:
    """The cached kernel of `series`, fetching the newest Debian package of it when the cache has none."""
    if series not in SERIES:
        raise GuestSetupError(f"'series' must be one of {sorted(SERIES)} (got {series!r}).")
    have = cached(series, cache_dir)
    if have is not None and not refresh:
        return have
    apt = apt or Apt()
    package, version = apt.newest(SERIES[series])
    if have is not None and have.package == package and have.version == version:
        return have
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return _unpack(apt, root, series, package, version)


def ensure_host_tools(apt: Apt | None = None) -> None:
    """Install QEMU and busybox-static with apt when missing (as root); GuestSetupError otherwise."""
    missing = {pkg for tool, pkg in HOST_TOOLS.items() if shutil.which(tool) is None} \
        | ({"busybox-static"} if not _is_static(BUSYBOX_STATIC) else set())
    ensure_packages(missing, "the guest runner", "`make guest` as root", apt=apt)


def ensure_packages(missing: set[str], who: str, make: str, *, apt: Apt | None = None, install: bool = True) -> None:
    """Install the Debian packages `missing` with apt (`install`, as root); else GuestSetupError saying what
    `who` needs and the command that adds it (or `make`, the target that installs it)."""
    if not missing:
        return
    names = sorted(missing)
    if not install or os.geteuid() != 0:
        raise GuestSetupError(f"{who} needs {', '.join(names)}: run `sudo apt-get install {' '.join(names)}` "
                              f"(or {make})")
    (apt or Apt()).install(names)


class Apt:
    """apt-get and apt-cache, with the package lists updated at most once per instance. `options`: apt's
    `-o` settings of every call (PrivateApt: a state of its own)."""

    def __init__(self, options: tuple[str, ...] = ()) -> None:
        self.updated = False
        self.options = list(options)

    def update(self) -> None:
        if not self.updated:
            _run(["apt-get", *self.options, "update", "-qq"], "apt-get update")
            self.updated = True

    def can_update(self) -> bool:
        """Whether a stale list may be updated here (the system's lists: as root only)."""
        return os.geteuid() == 0

    def install(self, packages: list[str]) -> None:
        self.update()
        _run(["apt-get", *self.options, "install", "-y", "-qq", "--no-install-recommends", *packages],
             f"apt-get install {' '.join(packages)}", env={"DEBIAN_FRONTEND": "noninteractive"})

    def newest(self, pattern: re.Pattern, prefix: str = "linux-image-") -> tuple[str, str]:
        """(name, candidate version) of the newest package whose name starts with `prefix` and matches,
        updating the lists once if none does."""
        for attempt in range(2):
            names = [n for n in _run(["apt-cache", *self.options, "pkgnames", prefix], "apt-cache pkgnames").split()
                     if pattern.match(n)]
            found = [(n, v) for n in names if (v := self.candidate(n))]
            if found:
                best = found[0]
                for nv in found[1:]:
                    if _version_gt(nv[1], best[1]):
                        best = nv
                return best
            if attempt == 0 and self.can_update():
                self.update()
        raise GuestSetupError(f"no Debian package matches {pattern.pattern}: is this Debian 12 with "
                              "bookworm-security in its apt sources?")

    def candidate(self, name: str) -> str | None:
        out = _run(["apt-cache", *self.options, "policy", name], f"apt-cache policy {name}")
        m = re.search(r"^\s*Candidate:\s*(\S+)", out, re.M)
        return m.group(1) if m and m.group(1) != "(none)" else None

    def download(self, name: str, version: str, into: Path) -> Path:
        """The .deb of name=version in `into` (a stale list gets one update and a retry)."""
        for attempt in range(2):
            proc = subprocess.run(["apt-get", *self.options, "download", f"{name}={version}"], cwd=into,
                                  capture_output=True, text=True, timeout=APT_TIMEOUT_S)
            debs = list(into.glob(f"{name}_*.deb"))
            if proc.returncode == 0 and debs:
                return debs[0]
            if attempt == 0 and self.can_update():
                self.update()
        raise GuestSetupError(f"apt-get download {name}={version} failed: {proc.stderr.strip()[-500:]}")


def _unpack(apt: Apt, root: Path, series: str, package: str, version: str) -> CachedRelease:
    """Download and unpack one package into root/<release>, atomically (a temp folder renamed into place)."""
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".fetch-", dir=root))
    try:
        deb = apt.download(package, version, tmp)
        tree = tmp / "tree"
        _run(["dpkg-deb", "-x", str(deb), str(tree)], f"dpkg-deb -x {deb.name}")
        mods = [p for p in (tree / "lib" / "modules", tree / "usr" / "lib" / "modules") if p.is_dir()]
        releases = [p.name for p in mods[0].iterdir()] if mods else []
        if len(releases) != 1:
            raise GuestSetupError(f"{deb.name} holds no single lib/modules/<release> (found {releases})")
        release = releases[0]
        meta = {"series": series, "release": release, "package": package, "version": version}
        (tree / MARKER).write_text(json.dumps(meta, indent=1) + "\n")
        final = root / release
        if final.exists():
            shutil.rmtree(final)
        os.replace(tree, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return CachedRelease(root=final, release=release, series=series, package=package, version=version)


def _version_gt(a: str, b: str) -> bool:
    """Debian version order (dpkg --compare-versions)."""
    return subprocess.run(["dpkg", "--compare-versions", a, "gt", b]).returncode == 0


def _is_static(path: Path) -> bool:
    """A statically linked ELF: no PT_INTERP program header (the initramfs has no dynamic loader)."""
    try:
        data = path.read_bytes()[:4096]
    except OSError:
        return False
    if data[:4] != b"\x7fELF" or data[4] != 2:
        return False
    phoff = int.from_bytes(data[32:40], "little")
    phentsize = int.from_bytes(data[54:56], "little")
    phnum = int.from_bytes(data[56:58], "little")
    types = [int.from_bytes(data[phoff + i * phentsize:phoff + i * phentsize + 4], "little") for i in range(phnum)]
    return 3 not in types  # PT_INTERP


def _run(args: list[str], what: str, env: dict | None = None) -> str:
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=APT_TIMEOUT_S,
                              env={**os.environ, **(env or {})})
    except (OSError, subprocess.TimeoutExpired) as e:
        raise GuestSetupError(f"{what} failed: {e}") from None
    if proc.returncode != 0:
        raise GuestSetupError(f"{what} failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    return proc.stdout
