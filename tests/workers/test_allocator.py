"""workers.allocator: polars' jemalloc gets the project's decay setting, in a fresh interpreter each time
(jemalloc reads it once, when polars is first imported)."""

from __future__ import annotations

import os
import subprocess
import sys

from workers.allocator import CONF

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHOW = "import os, {0}; import polars; print(os.environ['_RJEM_MALLOC_CONF'])"


def conf_after(module: str, env: dict | None = None) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    out = subprocess.run([sys.executable, "-c", SHOW.format(module)], cwd=ROOT, env={**clean, **(env or {})},
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_the_command_line_and_the_library_set_it_before_polars_reads_it():
    # polars appends what the environment holds to its own setting; the last of an option wins
    for module in ("sweeps.cli", "analysis", "workers"):
        assert conf_after(module).endswith("," + CONF), module


def test_a_setting_of_the_users_own_is_kept():
    assert conf_after("sweeps.cli", {"_RJEM_MALLOC_CONF": "dirty_decay_ms:7000"}).endswith(",dirty_decay_ms:7000")
