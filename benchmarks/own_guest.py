"""What benchmarks/young_kernel.py and benchmarks/pfnmap_kernel.py share: a shipped kernel spec's points run
by a model's own guest (its KernelCheck plans them), each beside the model's row, as the rows of the CSV the
model's kernel-checked labels read (the key axes, then kernel_<name> and model_<name> per exact metric)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import polars as pl

from sweeps.spec.grid import decode, grid_for
from sweeps.spec.load import load_spec
from workers import get_model
from workers.evaluate import evaluate
from workers.profiles import load_profile


def recorded_rows(spec_name: str, model_name: str, runner, key: tuple[str, ...], metrics: tuple[str, ...],
                  extra) -> tuple[list[dict], float]:
    """Every point of `spec_name` the model's guest can be (its planner returns a configuration, not a reason),
    run by `runner` (configurations -> results) and read by the model's reader: per point its `key` axes,
    the kernel's and the model's value of each of `metrics`, and `extra(run)`'s columns; and the runner's
    wall time. SystemExit when a run failed."""
    spec = load_spec(spec_name)
    model = get_model(model_name)
    grid = grid_for(spec, model.name)
    points = decode(grid, 0, grid.size)
    plans = model.kernel.plan(points, spec.settings.get("kernel"))
    keep = [i for i, c in enumerate(plans) if not isinstance(c, str)]
    points = points[keep]
    modeled = evaluate(model, points, load_profile(spec.profile_name))
    start = time.monotonic()
    runs = runner([plans[i] for i in keep])
    wall = time.monotonic() - start
    rows = []
    for point, m, run in zip(points.to_dicts(), modeled.to_dicts(), runs):
        if isinstance(run, str):
            raise SystemExit(f"the probe failed: {run}")
        k = model.kernel.read(point, run)
        rows.append({**{c: point[f"param_{c}"] for c in key}, "release": run.release, **extra(run),
                     **{f"kernel_{c.removeprefix('metric_')}": k[c] for c in metrics},
                     **{f"model_{c.removeprefix('metric_')}": m[c] for c in metrics}})
    return rows, wall


def cells(row: dict, metrics) -> list[str]:
    """Each metric's kernel value, bold with the model's beside it where they differ (a markdown cell)."""
    out = []
    for c in metrics:
        name = c.removeprefix("metric_")
        kv, mv = row[f"kernel_{name}"], row[f"model_{name}"]
        out.append(f"{kv:,}" if kv == mv else f"**{kv:,}** (model {mv:,})")
    return out


def arguments(doc: str, out: Path, root: Path) -> argparse.Namespace:
    """A recorder's command line: `--write` records its rows in `out`."""
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--write", action="store_true", help=f"record the results in {out.relative_to(root)}")
    return p.parse_args()


def write(rows: list[dict], out: Path, root: Path) -> None:
    """The rows as the CSV the model's labels read, and where they went."""
    pl.DataFrame(rows).write_csv(out)
    print(f"\nwrote {out.relative_to(root)}")
