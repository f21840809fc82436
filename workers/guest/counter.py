"""The guest's instruction counter, checked: a loop of known length (workers/guest/counter.c) run in a
guest under QEMU's `-icount shift=0` must read 1 ns of guest time per instruction it executes.

`loop_program()` builds the loop with this node's C compiler (freestanding: the guest has no libc);
`check(kernel)` boots `kernel` once with it and returns a `CounterCheck`: per run, the iterations and the
guest nanoseconds. What else runs inside a run (a clock_gettime() call, a timer interrupt, a kworker it
wakes) only adds to its time, so the quietest run's guest ns per loop instruction is the counter's rate:
1.0 when the guest clock counts instructions, and moved by the host's speed and load when it is a clock.
`python -m workers.guest check-counter` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .cc import static_program
from .exceptions import GuestSetupError

LOOP_INSTRUCTIONS = 2  # counter.c spin(): `dec` and `jnz` per iteration
CFLAGS = ("-O2", "-static", "-nostdlib", "-ffreestanding", "-fno-stack-protector", "-fno-pie", "-no-pie")


@dataclass(frozen=True, kw_only=True, slots=True)
class CounterCheck:
    """The loop's runs in one guest: (iterations, guest ns) each, and the accelerator QEMU used."""

    runs: tuple[tuple[int, int], ...]
    accel: str

    @property
    def ns_per_instruction(self) -> float:
        """Guest ns per loop instruction in the quietest run (1.0: an instruction counter)."""
        return min(t / (n * LOOP_INSTRUCTIONS) for n, t in self.runs)

    def text(self) -> str:
        runs = ", ".join(f"{n:,}: {t:,} ns" for n, t in self.runs)
        return (f"{self.ns_per_instruction:.5f} guest ns per instruction in the quietest run (iterations of "
                f"{LOOP_INSTRUCTIONS} instructions: {runs}; accel {self.accel})")


def loop_program(cc: str = "cc") -> bytes:
    """counter.c built by `cc` as a static x86-64 executable; GuestSetupError when it cannot be."""
    return static_program("counter.c", "the counter check's loop", cc, CFLAGS, "install gcc")


def check(kernel, *, accel: str = "tcg", boot_timeout_s: float = 120.0) -> CounterCheck:
    """Boot `kernel` once with the loop and no configuration; GuestSetupError when the guest gave no reading."""
    from .runner import run_guest

    run = run_guest(kernel, [], accel=accel, boot_timeout_s=boot_timeout_s, counter_loop=loop_program())
    if not run.counter:
        raise GuestSetupError(f"the guest gave no counter reading (accel {run.accel}, {run.boots} boot(s))")
    return CounterCheck(runs=run.counter, accel=run.accel)
