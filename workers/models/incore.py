"""In-core cycles of the kernel's own code on a named core (kernel_cycles.toml beside this module).

benchmarks/kernel_cycles.py traces a kernel build in a guest (QEMU's `-d in_asm,exec`), cuts the executed
instructions into memmap_init_zone_device()'s operations (the ones workers/models/memmap/work.py counts) and
prices each with llvm-mca for a core (`-mcpu`): cycles per operation when the core runs it in a loop, limited
by its issue width, ports and dependencies, with no memory stall (the memory side is priced apart). From the
same copies it prices the struct-page copy's elements: a store (with its load), an out-of-line
__memcpy_flushcache() call and one iteration of its copy loop beyond the stores. A modeled time divides
cycles by a profile's clock ([copy] clock_ghz). The copy model and memmap's struct page sizes other than the
build's read the elements; memmap's operations read the rest (workers/models/memmap).
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, fields
from importlib import resources

from workers.exceptions import ProfileError

FILE = "kernel_cycles.toml"
OPS = ("call", "head_slow", "tail_slow", "compound", "pageblock")  # one number each; copies per strategy below
ELEMENTS = ("copy_store", "copy_call", "copy_loop")


@dataclass(frozen=True, kw_only=True, slots=True)
class Cycles:
    """The recorded cycles of one build on one core: per operation (memmap work.OPS; head_copy and tail_copy
    per template strategy: template, template_nt, template_nt_inline) and per copy element (ELEMENTS), for
    64-byte struct pages, what the build has. `tool` says how they were priced."""

    build: str
    cpu: str
    tool: str
    digest: str  # the build's digest (workers.guest.build): the code that was traced
    call: float
    head_slow: float
    tail_slow: float
    compound: float
    pageblock: float
    head_copy: tuple[float, float, float]
    tail_copy: tuple[float, float, float]
    copy_store: float
    copy_call: float
    copy_loop: float


@functools.cache
def _tables() -> dict:
    return tomllib.loads(resources.files(__package__).joinpath(FILE).read_text())


def recorded(build: str, cpu: str) -> Cycles:
    """The cycles recorded for `build` on `cpu`; ProfileError naming the cores there are when there are none."""
    table = _tables().get(build, {}).get(cpu)
    if table is None:
        have = sorted(_tables().get(build, {}))
        raise ProfileError(f"'copy.cpu' must name a core whose cycles of build {build} are recorded in "
                           f"workers/models/{FILE}, one of {have} (got {cpu!r}); record it with "
                           "benchmarks/kernel_cycles.py")
    values = {f.name: table[f.name] for f in fields(Cycles) if f.name in table}
    return Cycles(build=build, cpu=cpu, digest=values.pop("build"),
                  **{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})
