"""The guest's initramfs, built on the fly: busybox-static, the pmem modules decompressed (busybox insmod
takes plain .ko files), /init (workers/guest/init.sh) and the list of configurations to run, as one newc
cpio (workers/guest/cpio.py).

Layout: /bin/busybox (init.sh installs its applets), /lib/modules/<name>.ko, /memsweep/modules (module
names in load order), /memsweep/configs (one line per configuration: "ID MODE MAP ALIGN SIZE BINDS STRATEGY", bytes), /memsweep/warmup
("SIZE MIB": a namespace size and how many MiB at its start to write once before measuring; optional),
/bin/memsweep-loop (the counter check's loop; optional), /init, and /dev/console for the kernel to open before /init mounts devtmpfs.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Sequence

from . import cpio
from .debian import BUSYBOX_STATIC
from .kernels import GuestKernel, pmem_modules
from .records import GuestConfig

DIRS = ("bin", "dev", "proc", "sys", "tmp", "lib", "lib/modules", "memsweep")
CONSOLE = (5, 1)  # Documentation/admin-guide/devices.txt: /dev/console


def init_script() -> bytes:
    return resources.files(__package__).joinpath("init.sh").read_bytes()


def config_lines(configs: Sequence[tuple[int, GuestConfig]]) -> str:
    """/memsweep/configs: "ID MODE MAP ALIGN SIZE BINDS STRATEGY" per configuration, in order ("-": the
    kernel's strategy as it booted)."""
    return "".join(f"{i} {c.mode} {c.map} {c.align_bytes} {c.namespace_size_bytes} {c.binds} {c.strategy or '-'}\n"
                   for i, c in configs)


def build(kernel: GuestKernel, configs: Sequence[tuple[int, GuestConfig]], *, warm_up_bytes: int = 0,
          busybox: Path = BUSYBOX_STATIC, counter_loop: bytes | None = None) -> bytes:
    """The initramfs (newc cpio bytes) that runs `configs` (id, config) on `kernel`, after writing the first
    `warm_up_bytes` of the region once (init.sh warm_up) when that is not 0, and after running the counter
    check's loop (bin/memsweep-loop, workers.guest.counter) when one is given."""
    modules = pmem_modules(kernel.modules) if kernel.modules is not None else []
    entries = [cpio.directory(d) for d in DIRS]
    entries.append(cpio.chardev("dev/console", *CONSOLE))
    entries.append(cpio.regular("bin/busybox", busybox.read_bytes(), executable=True))
    entries.append(cpio.symlink("bin/sh", "busybox"))
    entries += [cpio.regular(f"lib/modules/{m.name}.ko", m.load_bytes()) for m in modules]
    entries.append(cpio.regular("memsweep/modules", "".join(f"{m.name}\n" for m in modules).encode()))
    entries.append(cpio.regular("memsweep/configs", config_lines(configs).encode()))
    if warm_up_bytes:
        size = max(c.namespace_size_bytes for _, c in configs)
        entries.append(cpio.regular("memsweep/warmup", f"{size} {-(-warm_up_bytes // (1 << 20))}\n".encode()))
    if counter_loop is not None:
        entries.append(cpio.regular("bin/memsweep-loop", counter_loop, executable=True))
    entries.append(cpio.regular("init", init_script(), executable=True))
    return cpio.archive(entries)
