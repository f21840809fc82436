"""Build the native routines (workers/native/*.c) into a shared library, cached per sources and compiler.

The library lands in `<cache_dir>/<key>/libmemsweep.so`, key = hash of the
sources, the compiler (resolved path, `--version`, `-dumpmachine`), the flags
and this module's format; a build removes all but the KEEP_BUILDS newest. It is built on first use when missing (a node that
received the project only as a Ray working directory compiles it there), in a
temporary directory renamed into place, so two processes building at once
both end with a complete library. `python -m workers.measure.build` builds it
ahead of time (the install step).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .exceptions import BuildError, CompilerNotFound

NATIVE_DIR = Path(__file__).resolve().parent.parent / "native"
LIB_NAME = "libmemsweep.so"
FORMAT = "1"  # bump when the build recipe changes
KEEP_BUILDS = 4  # builds a cache keeps (other source versions or compilers); older ones are removed
COMMON_FLAGS = ("-O2", "-fPIC", "-std=gnu11", "-fno-strict-aliasing", "-Wall")
# arch/x86/Makefile builds the kernel with -mno-sse -mno-mmx -mno-sse2 -mno-avx: the analogs of kernel code
# are built the same way, so constant-size memcpy() becomes 8-byte moves as in the kernel. A source says
# it is one with this line in its header comment.
KERNEL_LIKE_MARK = "memsweep-build: kernel-flags"
X86_KERNEL_FLAGS = ("-mno-sse", "-mno-sse2", "-mno-mmx", "-mno-avx")


@dataclass(frozen=True, kw_only=True, slots=True)
class Compiler:
    """A C compiler found on this node: what `cc` resolved to and what it targets."""

    path: str
    version: str
    target: str

    @property
    def x86_64(self) -> bool:
        return self.target.startswith(("x86_64", "amd64"))


def default_cache_dir() -> Path:
    """~/.cache/memsweep/native: per user, shared by every process on the node."""
    return Path.home() / ".cache" / "memsweep" / "native"


def find_compiler(cc: str = "cc") -> Compiler:
    """The compiler `cc` names (a command on PATH or a path); CompilerNotFound if there is none."""
    path = shutil.which(cc)
    if path is None:
        raise CompilerNotFound(f"no C compiler (cc) on this node: {cc!r} is not an executable on PATH; "
                               "install gcc or clang (or pass cc=... naming one) to measure here")
    try:
        version = _run([path, "--version"]).splitlines()[0].strip()
        target = _run([path, "-dumpmachine"]).strip()
    except (OSError, subprocess.CalledProcessError) as e:
        raise CompilerNotFound(f"no C compiler (cc) on this node: {path} does not run ({e})") from None
    return Compiler(path=path, version=version, target=target)


def sources() -> list[Path]:
    """The C sources and headers, in a stable order."""
    return sorted(p for p in NATIVE_DIR.iterdir() if p.suffix in (".c", ".h"))


def flags(compiler: Compiler, source: Path) -> tuple[str, ...]:
    """Compiler flags for one source file."""
    extra = X86_KERNEL_FLAGS if compiler.x86_64 and KERNEL_LIKE_MARK in source.read_text() else ()
    return (*COMMON_FLAGS, *extra)


def build_key(compiler: Compiler) -> str:
    """Hash of the sources, the compiler and the flags: a new key whenever any of them changes."""
    h = hashlib.blake2b(digest_size=10)
    for part in (FORMAT, compiler.path, compiler.version, compiler.target):
        h.update(part.encode() + b"\0")
    for src in sources():
        h.update(src.name.encode() + b"\0" + src.read_bytes() + b"\0")
        h.update(" ".join(flags(compiler, src)).encode() + b"\0")
    return f"{compiler.target}-{h.hexdigest()}"


def library_path(cc: str = "cc", cache_dir: Path | str | None = None) -> Path:
    """The built library for this compiler, building it first when the cache does not hold it."""
    return build(cc=cc, cache_dir=cache_dir, force=False)


def build(cc: str = "cc", cache_dir: Path | str | None = None, force: bool = False) -> Path:
    """Compile and link the routines unless the cache holds them (or `force`); returns the library path."""
    compiler = find_compiler(cc)
    root = _writable(Path(cache_dir) if cache_dir is not None else default_cache_dir())
    final = root / build_key(compiler) / LIB_NAME
    if final.is_file() and not force:
        prune(root, current=final.parent)
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=final.parent))
    try:
        objects = []
        for src in sources():
            if src.suffix != ".c":
                continue
            obj = tmp / (src.stem + ".o")
            _compile(compiler, [*flags(compiler, src), "-I", str(NATIVE_DIR), "-c", str(src), "-o", str(obj)],
                     what=f"compiling {src.name}")
            objects.append(str(obj))
        _compile(compiler, ["-shared", "-o", str(tmp / LIB_NAME), *objects], what=f"linking {LIB_NAME}")
        os.replace(tmp / LIB_NAME, final)  # atomic: a concurrent build replaces a complete file
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    prune(root, current=final.parent)
    return final


def prune(root: Path, current: Path, keep: int = KEEP_BUILDS) -> list[Path]:
    """Remove all builds under root but `current` and the keep - 1 newest others (by library mtime);
    returns what was removed. A process that loaded a removed library keeps its mapping; one that asks
    for it again rebuilds it."""
    others = sorted((d for d in root.iterdir() if d != current and not d.name.startswith(".")
                     and (d / LIB_NAME).is_file()), key=lambda d: (d / LIB_NAME).stat().st_mtime, reverse=True)
    for old in others[keep - 1:]:
        shutil.rmtree(old, ignore_errors=True)
    return others[keep - 1:]


def _compile(compiler: Compiler, args: list[str], *, what: str) -> None:
    proc = subprocess.run([compiler.path, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"{what} with {compiler.path} ({compiler.version}) failed "
                         f"(exit {proc.returncode}):\n{proc.stderr.strip()}")


def _run(args: list[str]) -> str:
    return subprocess.run(args, capture_output=True, text=True, check=True, timeout=60).stdout


def _writable(root: Path) -> Path:
    """`root`, created; or a per-user directory under the system temp dir when `root` cannot be written."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        if os.access(root, os.W_OK):
            return root
    except OSError:
        pass
    fallback = Path(tempfile.gettempdir()) / f"memsweep-native-{os.getuid()}"
    fallback.mkdir(parents=True, exist_ok=True)
    return fallback


def main(argv: list[str] | None = None) -> int:
    """Build the routines now (the install step); print where the library is."""
    parser = argparse.ArgumentParser(prog="python -m workers.measure.build", description=main.__doc__)
    parser.add_argument("--cc", default="cc", help="the C compiler to use (default: cc)")
    parser.add_argument("--cache-dir", default=None,
                        help=f"where to cache the library (default: {default_cache_dir()})")
    parser.add_argument("--force", action="store_true", help="rebuild even when the cache holds the library")
    args = parser.parse_args(argv)
    try:
        path = build(cc=args.cc, cache_dir=args.cache_dir, force=args.force)
    except (CompilerNotFound, BuildError) as e:
        parser.exit(2, f"memsweep: {e}\n")
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
