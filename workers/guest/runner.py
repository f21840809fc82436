"""Run configurations in one QEMU guest: `run_guest(kernel, configs)` boots the kernel once with a
file-backed, label-bearing NVDIMM big enough for the largest namespace, lets /init (init.sh) create, bind,
measure and destroy one namespace per configuration, and returns a `GuestRun`.

Never a hang: a boot that does not reach /init within `boot_timeout_s`, a run past `timeout_s`, a panic
or any early exit of QEMU gives `error` results, with the console's last lines, to the configurations not
done; QEMU is killed on every exit path (and dies with its parent: workers/guest/qemu.py).

A kernel that panics before /init starts is booted again, up to BOOT_TRIES times in all: nothing of the
configurations has run then. Under TCG an unmodified Debian 6.12 has been seen to oops once in early boot
(in __kmalloc_cache_node_noprof, called from start_kernel, 1.5 s into the boot), on one CI run's host
and never in 21 boots on another: an emulation fault, not the path under test. The run says how many boots
it took and what each failed one printed (`GuestRun.boots`, `GuestRun.failed_boots`).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from workers.units import PAGE_SIZE, GiB, MiB

from . import initramfs, labels, qemu
from .exceptions import GuestSetupError
from .kernels import GuestKernel
from .records import ConfigResult, GuestConfig, GuestRun, from_guest, parse_line

ACCELS = ("auto", "tcg", "kvm")
LABEL_BYTES = 128 * 1024  # QEMU's minimum label-size (MIN_NAMESPACE_LABEL_SIZE in hw/mem/nvdimm.c)
BASE_RAM_MIB = 512  # a Debian kernel, the initramfs and the page cache, before any memmap
MAX_RAM_MIB = 4096  # a guest on a shared node stays within 4 GiB
STRUCT_PAGE_BYTES = 64  # a map=mem memmap costs 64 B of RAM per 4 KiB page of the namespace
CONSOLE_TAIL = 20
BOOT_TRIES = 2
# The first line of an oops or a panic, kept with the console's tail: the tail alone is the call trace.
OOPS_HEAD = re.compile(r"BUG:|Oops|general protection fault|invalid opcode|Kernel panic")
CMDLINE = "console=ttyS0 panic=-1 oops=panic quiet"
TMP_PREFIX = "memsweep-guest-"  # a guest's folder: <tmp>/memsweep-guest-<pid>-<random>


@dataclass(kw_only=True, slots=True)
class _Session:
    """What the watch loop saw of the guest."""

    ready: dict | None = None
    results: dict[int, dict] = field(default_factory=dict)
    done: bool = False
    fatal: str | None = None
    failure: str | None = None
    boot_s: float | None = None
    counter: tuple[tuple[int, int], ...] = ()


def run_guest(kernel: GuestKernel, configs: Sequence[GuestConfig], *, accel: str = "auto",
              boot_timeout_s: float = 60.0, timeout_s: float | None = None,
              counter_loop: bytes | None = None, qemu_args: tuple[str, ...] = ()) -> GuestRun:
    """Boot `kernel` once and run `configs` in order; a result per configuration, in the same order.
    `accel` 'auto' uses KVM when a probe shows it boots this kernel (else TCG); 'tcg' or 'kvm' force one.
    `timeout_s` bounds the whole run (default: boot_timeout_s + 30 s + 10 s per GiB of namespaces and
    bind). `counter_loop`: the counter check's program (workers.guest.counter), run once after boot.
    `qemu_args`: more QEMU options (benchmarks/kernel_cycles.py traces the executed code with `-d exec`)."""
    configs = tuple(configs)
    if accel not in ACCELS:
        raise ValueError(f"'accel' must be one of {list(ACCELS)} (got {accel!r}).")
    start = time.monotonic()
    ram_mib, too_big = _ram_mib(configs)
    runnable = [(i, c) for i, c in enumerate(configs) if i not in too_big]
    boot = bool(runnable) or counter_loop is not None
    if boot and shutil.which(qemu.QEMU) is None:
        raise GuestSetupError(f"{qemu.QEMU} is not installed: run `make guest` (or apt-get install qemu-system-x86)")
    used = "none" if not boot else accel if accel != "auto" else (
        "kvm" if qemu.kvm_works(str(kernel.image))[0] else "tcg")
    session, console, boots, failed = _Session(), [], 0, []
    if boot:
        if timeout_s is None:
            timeout_s = boot_timeout_s + 30 + 10 * sum(c.binds * c.namespace_size_bytes for _, c in runnable) / GiB
        while boots < BOOT_TRIES:
            session, console = _boot(kernel, runnable, used, ram_mib, boot_timeout_s, timeout_s, counter_loop,
                                     qemu_args)
            boots += 1
            if not _panicked_before_init(session, console):
                break
            failed.append(_oops(console))
    results = tuple(too_big.get(i) or _result(i, c, session, console, boots, failed, counted=used == "tcg")
                    for i, c in enumerate(configs))
    ready = session.ready or {}
    return GuestRun(release=ready.get("release"), cmdline=ready.get("cmdline"), accel=used, results=results,
                    boot_s=session.boot_s, wall_s=time.monotonic() - start, boots=boots, failed_boots=tuple(failed),
                    counter=session.counter)


def _panicked_before_init(s: _Session, console: list[str]) -> bool:
    return s.ready is None and s.fatal is None and any("Kernel panic" in line for line in console)


def _oops(console: list[str]) -> str:
    """A failed boot in a line: the oops's first line and the panic's."""
    first = next(line for line in console if OOPS_HEAD.search(line))
    panic = next(line for line in console if "Kernel panic" in line)
    return first if first == panic else f"{first} / {panic}"


def _ram_mib(configs: tuple[GuestConfig, ...]) -> tuple[int, dict[int, ConfigResult]]:
    """Guest RAM: the base plus the largest map=mem memmap (each configuration is torn down before the
    next), in 64 MiB steps; configurations whose memmap would not fit under MAX_RAM_MIB are errors."""
    too_big, need = {}, 0
    for i, c in enumerate(configs):
        memmap_mib = _ceil_div(c.namespace_size_bytes // PAGE_SIZE * STRUCT_PAGE_BYTES, MiB) if c.map == "mem" else 0
        if BASE_RAM_MIB + memmap_mib + 64 > MAX_RAM_MIB:
            too_big[i] = ConfigResult(config=c, status="error", reason=(
                f"its struct pages in RAM (map=mem) need {memmap_mib} MiB of guest RAM; the runner keeps "
                f"guests within {MAX_RAM_MIB} MiB (not booted)"))
        else:
            need = max(need, memmap_mib)
    return min(MAX_RAM_MIB, _ceil_div(BASE_RAM_MIB + need + 64, 64) * 64), too_big


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _boot(kernel: GuestKernel, runnable: list[tuple[int, GuestConfig]], accel: str, ram_mib: int,
          boot_timeout_s: float, timeout_s: float, counter_loop: bytes | None,
          qemu_args: tuple[str, ...] = ()) -> tuple[_Session, list[str]]:
    """Build the guest's files in a temporary folder, run QEMU and watch it; the session and the
    console's last lines. The folder (with the sparse NVDIMM file) is removed afterwards."""
    _remove_stale(Path(tempfile.gettempdir()))
    with tempfile.TemporaryDirectory(prefix=f"{TMP_PREFIX}{os.getpid()}-") as tmp:
        d = Path(tmp)
        warm = _memmap_area(c for _, c in runnable)
        (d / "initrd").write_bytes(initramfs.build(kernel, runnable, warm_up_bytes=warm, counter_loop=counter_loop))
        region = _ceil_div(max((c.namespace_size_bytes for _, c in runnable), default=GiB), GiB) * GiB
        nvdimm = qemu.Nvdimm(path=d / "nvdimm", size_bytes=region + LABEL_BYTES, label_bytes=LABEL_BYTES)
        _nvdimm_file(nvdimm, region)
        cmd = qemu.command(image=kernel.image, initrd=d / "initrd", append=CMDLINE, accel=accel,
                           ram_mib=ram_mib, nvdimm=nvdimm, console=d / "console", results=d / "results") \
            + list(qemu_args)
        session = _Session()
        proc = qemu.spawn(cmd, d / "qemu.log")
        try:
            session = _watch(proc, d, len(runnable), boot_timeout_s, timeout_s)
        finally:  # after MEMSWEEP-DONE the guest powers off by itself: give it a moment
            status = qemu.stop(proc, grace_s=10.0 if session.done else 0.0)
        if not session.done and session.failure is None:
            session.failure = f"QEMU exited (status {status}) before the guest finished"
        log = _tail(d / "qemu.log", 3)
        console = _tail(d / "console", CONSOLE_TAIL) + ([f"[qemu] {line}" for line in log] if log else [])
    return session, console


def _remove_stale(tmp: Path) -> list[Path]:
    """Remove the folders of guests whose process is gone (killed before it could clean up: a sparse
    NVDIMM file can hold a map=dev memmap, 256 MiB for 16 GiB); what was removed."""
    removed = []
    for d in tmp.glob(f"{TMP_PREFIX}*-*"):
        pid = d.name[len(TMP_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _memmap_area(configs) -> int:
    """Bytes at the start of a namespace that a map=dev bind writes: the info block and the memmap
    (nd_pfn_init(): 8 KiB + 64 B per pfn, aligned up to 2 MiB at least), the largest over `configs`."""
    dev = [c.namespace_size_bytes for c in configs if c.map == "dev"]
    if not dev:
        return 0
    return _ceil_div(8192 + max(dev) // PAGE_SIZE * STRUCT_PAGE_BYTES, 2 * MiB) * 2 * MiB


def _nvdimm_file(nvdimm: qemu.Nvdimm, region: int) -> None:
    """The NVDIMM's backing file: sparse (only the label index at its end, labels.py, and what the guest
    writes take room)."""
    with open(nvdimm.path, "wb") as f:
        f.truncate(nvdimm.size_bytes)
        f.seek(region)
        f.write(labels.label_area(nvdimm.label_bytes))


def _watch(proc, d: Path, expected: int, boot_timeout_s: float, timeout_s: float) -> _Session:
    """Read the guest's result lines (d/results) as they come until MEMSWEEP-DONE, a fatal line, QEMU's
    exit, a KVM failure that leaves QEMU paused (d/qemu.log) or a timeout."""
    s, start, offset, pending = _Session(), time.monotonic(), 0, b""
    while True:
        exited = proc.poll() is not None
        data = _read_from(d / "results", offset)
        offset += len(data)
        *lines, pending = (pending + data).split(b"\n")
        for raw in lines:
            _take(s, raw.decode(errors="replace"), start)
        if s.done or s.fatal or exited:
            return s
        qemu_says = _read_from(d / "qemu.log", 0).decode(errors="replace")
        if any(sign in qemu_says for sign in qemu.QEMU_FAILURES):
            s.failure = "QEMU stopped the guest: " + " / ".join(qemu_says.strip().splitlines()[:2])
            return s
        elapsed = time.monotonic() - start
        if s.ready is None and elapsed > boot_timeout_s:
            s.failure = f"boot timeout: /init did not start within {boot_timeout_s:g} s"
            return s
        if elapsed > timeout_s:
            s.failure = f"timeout: {len(s.results)} of {expected} configurations done after {timeout_s:g} s"
            return s
        time.sleep(0.05)


def _take(s: _Session, line: str, start: float) -> None:
    parsed = parse_line(line)
    if parsed is None:
        return
    kind, payload = parsed
    if kind == "READY":
        s.ready, s.boot_s = payload, time.monotonic() - start
    elif kind == "RESULT" and isinstance(payload, dict) and isinstance(payload.get("id"), int):
        s.results[payload["id"]] = payload
    elif kind == "COUNTER" and isinstance(payload, list):
        s.counter = tuple((int(n), int(ns)) for n, ns in payload)
    elif kind == "FATAL":
        s.fatal = str(payload)
    elif kind == "DONE":
        s.done = True


def _result(i: int, config: GuestConfig, s: _Session, console: list[str], boots: int,
            failed: list[str], *, counted: bool) -> ConfigResult:
    if i in s.results:
        return from_guest(config, s.results[i], counted=counted)
    why = s.fatal and f"the guest gave up: {s.fatal}" or s.failure or "the guest did not report it"
    if len(failed) == boots > 1:
        why += f" (in each of {boots} boots)"
    elif failed:
        why += f" (on boot {boots}; boot 1 panicked before /init: {failed[0]})"
    tail = "\n".join(console)
    return ConfigResult(config=config, status="error", reason=f"{why}; console's last lines:\n{tail}")


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read()
    except OSError:
        return b""


def _tail(path: Path, n: int) -> list[str]:
    """The last n non-empty lines of a console file, without terminal escapes and carriage returns, after
    the first line of an oops or a panic when that is further up."""
    text = _read_from(path, 0).decode(errors="replace")
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1bc", "", text).replace("\r", "")
    lines = [line for line in text.split("\n") if line.strip()]
    head = next((i for i, line in enumerate(lines) if OOPS_HEAD.search(line)), None)
    if head is None or head >= len(lines) - n:
        return lines[-n:]
    return [lines[head], "..."] + lines[-n:]
