"""The recorded in-core cycles (workers/models/kernel_cycles.toml) are what llvm-mca gives the recorded
instructions (benchmarks/kernel_cycles/*.s) today: a reviewer's rerun, done by the suite."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from workers.models import incore
from workers.models.memmap.work import PRICED

pytestmark = pytest.mark.mca

ROOT = Path(__file__).resolve().parents[3]


def _kernel_cycles():
    spec = importlib.util.spec_from_file_location("kernel_cycles", ROOT / "benchmarks" / "kernel_cycles.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_llvm_mca_prices_the_recorded_instructions_at_the_recorded_cycles():
    """Each operation's and copy element's cycles, priced again from the .s files by the same llvm-mca and
    rewrites, equal the recorded ones to the recorded digits (3 decimals); the traced instructions per
    operation are within half an instruction of the costs fit to the guest's counter, the compound aside
    (the fit shares its work with the call and the pageblocks)."""
    kc = _kernel_cycles()
    ops, parts = kc.recorded_streams()
    ins, cyc = kc.costs(ops, parts, kc.mca_binary(), kc.CPU)
    recorded = incore.recorded(PRICED, kc.CPU)
    for name in ("call", "head_slow", "tail_slow", "compound", "pageblock", "copy_store", "copy_call", "copy_loop"):
        assert round(cyc[name], 3) == pytest.approx(getattr(recorded, name), abs=1e-9), name
    for kind in ("head", "tail"):
        again = [round(cyc[f"{kind}_copy[{s}]"], 3) for s in kc.STRATEGIES[1:]]
        assert again == pytest.approx(list(getattr(recorded, f"{kind}_copy")), abs=1e-9), kind
    fitted = kc.work.recorded_costs(PRICED)
    for name, n in ins.items():
        if name not in ("call", "compound"):
            assert n == pytest.approx(kc.fitted_value(fitted, name), abs=0.5), name
