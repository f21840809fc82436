"""QEMU processes: the command line of a guest, a child that cannot outlive its parent, and the probe that
says whether KVM works on this node.

A QEMU child runs in its own process group (so killing the group takes any helper with it) and with
PR_SET_PDEATHSIG = SIGKILL (prctl(2), set through ctypes in the child before exec), so it dies when the
thread that started it dies, even by SIGKILL; `stop` kills the group on every exit path of the caller.
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

QEMU = "qemu-system-x86_64"
# QEMU's `-icount` (qemu-options.hx): shift=0 is 2^0 ns of guest time per instruction; sleep=off lets an idle
# guest's clock jump to its next timer instead of waiting in real time. A guest time of N ns is then N guest
# instructions (KERNEL-GUEST.md; workers.guest.counter checks it with a loop of known length).
ICOUNT = "shift=0,sleep=off"
# What else a TCG guest would take from the host: RDRAND/RDSEED and its RNG (`-seed`: a fixed pseudo-random
# sequence) and the RTC (`clock=vm` from a fixed date: the guest clock). With them the same guest repeats
# the same instructions.
DETERMINISTIC = ("-seed", "1", "-rtc", "base=2026-01-01T00:00:00,clock=vm")
PR_SET_PDEATHSIG = 1  # include/uapi/linux/prctl.h
KVM_PROBE_TIMEOUT_S = 15.0
# Signs in QEMU's own output that it cannot run the guest; under nested KVM (KERNEL-GUEST.md) QEMU prints
# "KVM internal error ... emulation failure" and stays alive with the guest paused, or (-cpu host) fails an
# assertion on an MSR and aborts.
QEMU_FAILURES = ("KVM internal error", "emulation failure", "failed to set MSR", "Could not access KVM",
                 "failed to initialize kvm", "Assertion")
# Resolved here, in the parent: the child, between fork and exec, only calls it (no dlopen there, which could
# wait forever on a lock another thread of the parent held at fork time).
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl
_PRCTL.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)


@dataclass(frozen=True, kw_only=True, slots=True)
class Nvdimm:
    """A file-backed, label-bearing NVDIMM: `size_bytes` of the file, of which the last `label_bytes`
    hold the namespace labels (hw/mem/nvdimm.c)."""

    path: Path
    size_bytes: int
    label_bytes: int


def command(*, image: Path, initrd: Path, append: str, accel: str, ram_mib: int, nvdimm: Nvdimm,
            console: Path, results: Path) -> list[str]:
    """QEMU for one guest: one vCPU, the kernel console on the first serial port, /init's results on the
    second, no reboot (a panic with panic=-1 ends QEMU), no default devices (no NIC ROM to boot)."""
    # -cpu max under TCG has pdpe1gb, so the guest offers 1 GiB alignments (has_transparent_pud_hugepage()).
    # Under TCG, QEMU's instruction counter (ICOUNT) makes the guest clock advance 1 ns per guest
    # instruction: the guest's times are then counts of its instructions, whatever the host's load.
    cpu = ["-accel", "tcg", "-cpu", "max", "-icount", ICOUNT, *DETERMINISTIC] if accel == "tcg" \
        else ["-accel", "kvm", "-cpu", "host"]
    nv_gib = -(-nvdimm.size_bytes // (1 << 30))
    return [
        QEMU, *cpu, "-smp", "1", "-machine", "pc,nvdimm=on",
        "-m", f"{ram_mib}M,slots=1,maxmem={ram_mib + (nv_gib + 1) * 1024}M",
        "-object", f"memory-backend-file,id=nv0,share=on,mem-path={nvdimm.path},size={nvdimm.size_bytes}",
        "-device", f"nvdimm,id=nvdimm0,memdev=nv0,label-size={nvdimm.label_bytes}",
        "-kernel", str(image), "-initrd", str(initrd), "-append", append,
        "-nodefaults", "-nographic", "-no-reboot", "-monitor", "none",
        "-serial", f"file:{console}", "-serial", f"file:{results}",
    ]


def spawn(cmd: list[str], log: Path) -> subprocess.Popen:
    """Start `cmd` in a new process group, dying with its parent; its stdout and stderr go to `log`."""
    parent = os.getpid()
    with open(log, "wb") as out:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=functools.partial(_die_with_parent, parent))


def stop(proc: subprocess.Popen, grace_s: float = 0.0) -> int:
    """Wait up to `grace_s` for `proc` to end, then SIGKILL its process group; its exit status."""
    try:
        return proc.wait(timeout=grace_s) if grace_s > 0 else _kill(proc)
    except subprocess.TimeoutExpired:
        return _kill(proc)


def _kill(proc: subprocess.Popen) -> int:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return proc.wait()


def _die_with_parent(parent: int) -> None:
    """In the child, before exec: SIGKILL when the parent dies; and now, if it died already. (The death
    signal follows the thread that forked: run guests from a thread that outlives them.)"""
    if _PRCTL(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        os._exit(126)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)


@functools.lru_cache(maxsize=8)
def kvm_works(image: str, timeout_s: float = KVM_PROBE_TIMEOUT_S) -> tuple[bool, str]:
    """(whether KVM boots `image` to its kernel, why): the image runs under KVM with no root and no
    initramfs, which must end in the kernel's "no root" panic. /dev/kvm opening is not enough (nested
    KVM opens, creates a VM and then fails in the decompressor), so it boots; QEMU's own failure messages
    end the probe at once. Cached per image in this process."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False, "no read-write access to /dev/kvm"
    with tempfile.TemporaryDirectory(prefix="memsweep-kvm-probe-") as tmp:
        console, log = Path(tmp) / "console", Path(tmp) / "qemu.log"
        cmd = [QEMU, "-accel", "kvm", "-cpu", "host", "-smp", "1", "-m", "256M", "-kernel", image,
               "-append", "console=ttyS0 panic=-1", "-nodefaults", "-nographic", "-no-reboot",
               "-monitor", "none", "-serial", f"file:{console}"]
        proc = spawn(cmd, log)
        try:
            return _watch_probe(proc, console, log, timeout_s)
        finally:
            stop(proc)


def _watch_probe(proc: subprocess.Popen, console: Path, log: Path, timeout_s: float) -> tuple[bool, str]:
    deadline = time.monotonic() + timeout_s
    while True:
        exited = proc.poll() is not None  # before reading, so a panic written just before the exit is seen
        if "Kernel panic" in _read(console):
            return True, "KVM booted the kernel to its no-root panic"
        qemu_says = _read(log)
        if exited or any(s in qemu_says for s in QEMU_FAILURES):
            lines = [line for line in qemu_says.splitlines() if line.strip()][:2]
            return False, f"QEMU under KVM: {' / '.join(lines) or f'exited with status {proc.returncode}'}"
        if time.monotonic() > deadline:
            return False, f"KVM did not boot the kernel within {timeout_s:.0f} s"
        time.sleep(0.05)


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode(errors="replace")
    except OSError:
        return ""
