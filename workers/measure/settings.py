"""MeasureSettings: how the measure backend samples each point, the spec's `[measure]` table as a value.

A sweep builds it once (sweeps.spec.load), hashes its fields into the ids of its measured chunks (sweeps.run.chunks)
and passes it to every measured chunk's `measure()` call.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from workers.keys import unknown_key

from .exceptions import MeasureSettingsError

# Noise on a shared host comes in bursts, from under a second to minutes (benchmarks/RESULTS.md): the rounds
# of one batch of points last at least this long, so quick points are not all sampled inside one short burst.
SPAN_MS = 2000
LEAST = {"repeats": 1, "warmup": 0, "cpu": 0, "span_ms": 0}  # each setting's least allowed value


@dataclass(frozen=True, kw_only=True, slots=True)
class MeasureSettings:
    """The sampling discipline of measured rows; each field is a `[measure]` key of a spec."""

    repeats: int = 5  # samples per point, at least: the row holds their median (and floor, measure_min)
    warmup: int = 1  # untimed runs per point before its samples
    cpu: int = 0  # the CPU to pin to (one outside the process's affinity: the lowest allowed one)
    span_ms: int = SPAN_MS  # the least time the round-robin of a chunk's samples lasts (measure.interleaved)

    def __post_init__(self) -> None:
        for f in fields(self):
            v, least = getattr(self, f.name), LEAST[f.name]
            if isinstance(v, bool) or not isinstance(v, int) or v < least:
                raise MeasureSettingsError(f"'measure.{f.name}' must be an integer >= {least} (got {v!r}).")

    @classmethod
    def from_table(cls, table: object) -> MeasureSettings:
        """The settings a spec's `[measure]` table gives (keys it leaves out keep their defaults)."""
        problem = unknown_key(table, (f.name for f in fields(cls)), "measure")
        if problem:
            raise MeasureSettingsError(problem)
        return cls(**table)

