"""What a guest run takes and gives: a configuration to bind (`GuestConfig`), one result per configuration
(`ConfigResult`) and the run (`GuestRun`), and the reading of the guest's result lines into them.

The guest (workers/guest/init.sh) prints `MEMSWEEP-READY {json}` once /init runs, one
`MEMSWEEP-RESULT {json}` per configuration, `MEMSWEEP-FATAL message` when it cannot go on, and
`MEMSWEEP-DONE`. It reports raw readings (the nr_memmap_pages counter before and after the bind, the
trace lines, the sysfs resource and size of the namespace and of its pfn/dax device, the kernel's log);
the numbers are derived here.
"""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass

from workers.units import PAGE_SIZE, format_size

from .exceptions import GuestConfigError

MODES = ("fsdax", "devdax")
MAPS = ("dev", "mem")
STATUSES = ("ok", "infeasible", "error")
PREFIX = "MEMSWEEP-"
# A function_graph line's duration: " 0) $ 1590123 us  |  memmap_init_zone_device();" (the marker, '+',
# '!', '#', '*', '@' or '$', flags durations over 10 us .. 1 s; kernel/trace/trace_functions_graph.c).
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*us\s*\|")
_DMESG_TIME = re.compile(r"^\[\s*\d+\.\d+\]\s*")
KERNEL_LINES = 6  # kernel log lines kept in a reason


@dataclass(frozen=True, kw_only=True, slots=True)
class GuestConfig:
    """A namespace to create and bind: its personality (`mode` fsdax or devdax), where its memmap goes
    (`map` dev: on the namespace, mem: in RAM), its `align_bytes` and its size; how many times it is bound
    (`binds`: unbound and bound again in between) and the `strategy` the kernel is switched to first (None:
    as it booted; a series kernel's memmap_init_strategy otherwise). Rules the kernel may refuse (an align
    outside supported_alignments, a size the region cannot hold) are left to the kernel."""

    mode: str
    map: str
    align_bytes: int
    namespace_size_bytes: int
    binds: int = 1
    strategy: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.binds, bool) or not isinstance(self.binds, int) or self.binds < 1:
            raise GuestConfigError(f"'binds' must be a positive integer (got {self.binds!r}).")
        if self.strategy is not None and not (isinstance(self.strategy, str) and self.strategy.isidentifier()):
            raise GuestConfigError(f"'strategy' must be a strategy name or None (got {self.strategy!r}).")
        if self.mode not in MODES:
            raise GuestConfigError(f"'mode' must be one of {list(MODES)} (got {self.mode!r}).")
        if self.map not in MAPS:
            raise GuestConfigError(f"'map' must be one of {list(MAPS)} (got {self.map!r}).")
        a = self.align_bytes
        if not isinstance(a, int) or a < PAGE_SIZE or a & (a - 1):
            raise GuestConfigError(f"'align_bytes' must be a power of two of at least {PAGE_SIZE} (got {a!r}).")
        s = self.namespace_size_bytes
        if not isinstance(s, int) or s <= 0 or s % PAGE_SIZE:
            raise GuestConfigError(f"'namespace_size_bytes' must be a positive multiple of {PAGE_SIZE} "
                                   f"(got {s!r}).")

    @property
    def name(self) -> str:
        """A short canonical name: 'devdax-2MiB-mem-2GiB'."""
        name = f"{self.mode}-{format_size(self.align_bytes)}-{self.map}-{format_size(self.namespace_size_bytes)}"
        return name if self.strategy is None else f"{name}-{self.strategy}"


@dataclass(frozen=True, kw_only=True, slots=True)
class ConfigResult:
    """One configuration's outcome. `status` ok: bound and measured; infeasible: the kernel refused it
    (`reason` quotes the refusal and the kernel's log lines); error: it could not be run (`reason` says
    why, with the console's last lines when the guest died). `memmap_pages_delta` is /proc/vmstat
    nr_memmap_pages across the first bind (None where the kernel has no such counter, before 6.11);
    `bind_us` per bind the summed function_graph durations of memmap_init_zone_device() in guest time
    (with `counted`, under QEMU's instruction counter: 1 ns per guest instruction), `init_us` their median;
    `data_offset_bytes` where the data starts in the namespace (the pfn/dax device's resource minus the
    namespace's)."""

    config: GuestConfig
    status: str
    reason: str | None = None
    memmap_pages_delta: int | None = None
    init_us: float | None = None
    bind_us: tuple[float, ...] = ()
    counted: bool = False
    init_calls: int = 0
    data_offset_bytes: int | None = None
    data_size_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"'status' must be one of {list(STATUSES)} (got {self.status!r}).")
        if self.status != "ok" and not self.reason:
            raise ValueError(f"a {self.status!r} result needs a reason")


@dataclass(frozen=True, kw_only=True, slots=True)
class GuestRun:
    """One boot: the guest's `uname -r` and /proc/cmdline (None when /init never ran), the accelerator
    QEMU used ('tcg' or 'kvm'; 'none' when no configuration needed a boot), a result per configuration in
    the order given, and wall times (seconds from QEMU's start to /init's first line, and to the end);
    how many boots it took (a kernel that panics before /init is booted again) and what each failed one
    printed (its oops's first line and its panic's); the counter check's runs (iterations, guest ns), when
    it was asked for (workers.guest.counter)."""

    release: str | None
    cmdline: str | None
    accel: str
    results: tuple[ConfigResult, ...]
    boot_s: float | None
    wall_s: float
    boots: int = 0
    failed_boots: tuple[str, ...] = ()
    counter: tuple[tuple[int, int], ...] = ()


def parse_line(line: str) -> tuple[str, object] | None:
    """('READY'|'RESULT'|'COUNTER'|'FATAL'|'DONE', payload) of a guest line, or None for any other line."""
    line = line.strip()
    if not line.startswith(PREFIX):
        return None
    kind, _, rest = line[len(PREFIX):].partition(" ")
    if kind in ("READY", "RESULT", "COUNTER"):
        try:
            return kind, json.loads(rest)
        except ValueError:
            return "FATAL", f"unreadable {kind} line from the guest: {rest[:200]!r}"
    if kind in ("FATAL", "DONE"):
        return kind, rest
    return None


def from_guest(config: GuestConfig, r: dict, *, counted: bool = False) -> ConfigResult:
    """A configuration's result from its MEMSWEEP-RESULT payload; `counted`: the guest ran under QEMU's
    instruction counter (TCG, workers/guest/qemu.py ICOUNT)."""
    before, after = _int(r.get("memmap_before")), _int(r.get("memmap_after"))
    durations = _durations(r.get("trace", []))
    binds = [sum(durations)] + [sum(_durations(lines)) for lines in r.get("rebinds", [])] if durations else []
    # pfn_devs.c resource_show(): the pfn/dax device's resource is nsio->res.start + start_pad + dataoff, and
    # nd_pfn_init() (6.x) leaves start_pad 0 (it trims only the end, end_trunc), so the device's resource less
    # the namespace's is dataoff: the 8 KiB info-block reserve (plus 64 B per pfn with map=dev) aligned up
    # to max(align, memremap_compat_align()). size_show() is what follows it: size - dataoff - end_trunc.
    ns_res, dev_res = _int(r.get("ns_resource"), 16), _int(r.get("dev_resource"), 16)
    numbers = dict(
        memmap_pages_delta=after - before if before is not None and after is not None else None,
        init_us=statistics.median(binds) if binds else None, bind_us=tuple(binds), init_calls=len(durations),
        data_offset_bytes=dev_res - ns_res if ns_res is not None and dev_res is not None else None,
        data_size_bytes=_int(r.get("dev_size")))
    status = r.get("status")
    if status == "ok":
        return ConfigResult(config=config, status="ok", counted=counted, **numbers)
    kernel = [_DMESG_TIME.sub("", line) for line in r.get("dmesg", [])][-KERNEL_LINES:]
    if status == "refused":
        what = {"namespace": "creating the namespace", "configure": f"configuring {r.get('device')}",
                "bind": f"binding {r.get('device')}"}.get(r.get("step"), r.get("step"))
        reason = f"the kernel refused {what}: {r.get('why')}"
        if kernel:
            reason += "; kernel: " + " | ".join(kernel)
        return ConfigResult(config=config, status="infeasible", reason=reason)
    return ConfigResult(config=config, status="error", reason=f"the guest could not run it: {r.get('why') or status}")


def _durations(lines: list) -> list[float]:
    """The function_graph durations (µs) in a bind's trace lines."""
    return [float(m.group(1)) for line in lines if isinstance(line, str) and (m := _DURATION.search(line))]


def _int(text: object, base: int = 10) -> int | None:
    try:
        return int(str(text).strip(), base)
    except ValueError:
        return None
