"""Building the native routines (workers/measure/build.py): cache, concurrency, missing or broken compilers."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workers.measure import build
from workers.measure.exceptions import BuildError, CompilerNotFound

ROOT = Path(__file__).resolve().parents[3]


def test_a_second_build_reuses_the_cached_library(native_cache, native, monkeypatch):
    """With the library cached, build() returns it without running the compiler again."""
    first = build.library_path(cache_dir=native_cache)
    stamp = first.stat().st_mtime_ns
    monkeypatch.setattr(build, "_compile", lambda *a, **k: pytest.fail("the compiler ran again"))
    assert build.build(cache_dir=native_cache) == first
    assert first.stat().st_mtime_ns == stamp
    assert first == native.path


def test_the_cache_key_changes_with_the_compiler():
    """A different compiler version or target is a different library."""
    a = build.Compiler(path="/usr/bin/cc", version="gcc 12.2", target="x86_64-linux-gnu")
    b = build.Compiler(path="/usr/bin/cc", version="gcc 13.1", target="x86_64-linux-gnu")
    c = build.Compiler(path="/usr/bin/cc", version="gcc 12.2", target="aarch64-linux-gnu")
    assert len({build.build_key(a), build.build_key(b), build.build_key(c)}) == 3


def test_kernel_analogs_are_built_without_sse_on_x86_only():
    """memmap.c/copy.c/ntcopy.c (marked kernel-like) get the kernel's -mno-sse flags on x86_64; other files
    and arches do not."""
    x86 = build.Compiler(path="cc", version="v", target="x86_64-linux-gnu")
    arm = build.Compiler(path="cc", version="v", target="aarch64-linux-gnu")
    assert "-mno-sse" in build.flags(x86, build.NATIVE_DIR / "memmap.c")
    assert "-mno-sse" not in build.flags(x86, build.NATIVE_DIR / "ntvec.c")
    assert "-mno-sse" not in build.flags(arm, build.NATIVE_DIR / "memmap.c")
    # the sources say so themselves (the header-comment mark), so a new analog needs no list edited here
    marked = {p.name for p in build.sources() if "-mno-sse" in build.flags(x86, p)}
    assert marked == {"memmap.c", "copy.c", "ntcopy.c"}


def test_a_missing_compiler_raises_a_clear_error(tmp_path):
    """A compiler that does not exist raises CompilerNotFound naming it."""
    with pytest.raises(CompilerNotFound, match=r"no C compiler \(cc\) on this node: '/nonexistent/cc'"):
        build.build(cc="/nonexistent/cc", cache_dir=tmp_path)


def test_a_failing_compiler_raises_build_error_with_its_output(tmp_path):
    """A compiler that runs but fails gives BuildError with its stderr, and leaves no library behind."""
    fake = tmp_path / "fakecc"
    fake.write_text('#!/bin/sh\ncase "$1" in --version) echo fakecc 1.0;; -dumpmachine) echo x86_64-linux-gnu;;\n'
                    '*) echo "fakecc: no such luck" >&2; exit 3;; esac\n')
    fake.chmod(0o755)
    with pytest.raises(BuildError, match="no such luck"):
        build.build(cc=str(fake), cache_dir=tmp_path / "cache")
    assert not list((tmp_path / "cache").rglob(build.LIB_NAME))
    assert not list((tmp_path / "cache").rglob(".build-*"))


def test_two_processes_building_at_once_both_get_a_complete_library(tmp_path):
    """Concurrent first builds into one empty cache both succeed and the library loads."""
    cmd = [sys.executable, "-m", "workers.measure.build", "--cache-dir", str(tmp_path)]
    procs = [subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    paths = {out.strip() for out, _ in outs}
    assert len(paths) == 1
    lib = ctypes.CDLL(paths.pop())
    assert lib.ms_memmap_supported(64) == 1


def test_the_build_command_reports_a_missing_compiler(tmp_path):
    """`python -m workers.measure.build --cc /nonexistent` exits 2 with the reason."""
    proc = subprocess.run([sys.executable, "-m", "workers.measure.build", "--cc", "/nonexistent/cc",
                           "--cache-dir", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "no C compiler (cc) on this node" in proc.stderr


def test_a_build_keeps_only_the_newest_builds(tmp_path):
    """Builds of other sources are pruned when the library is built or found: the current one and the
    KEEP_BUILDS - 1 newest others stay."""
    cache = tmp_path / "cache"
    for i in range(build.KEEP_BUILDS + 2):  # stale builds of earlier sources, oldest first
        old = cache / f"x86_64-linux-gnu-old{i}" / build.LIB_NAME
        old.parent.mkdir(parents=True)
        old.write_bytes(b"stale")
        os.utime(old, (1_000_000 + i, 1_000_000 + i))
    fresh = build.build(cache_dir=cache)
    newest = {f"x86_64-linux-gnu-old{i}" for i in range(3, build.KEEP_BUILDS + 2)}
    assert fresh.is_file() and {d.name for d in cache.iterdir()} == {fresh.parent.name} | newest
