"""The suite's own scheduling: the modules `make test` starts first exist (a renamed one would
silently fall back to the end of the queue)."""

from __future__ import annotations

from tests.conftest import LONGEST_FIRST, ROOT


def test_every_module_started_first_exists():
    missing = [name for name in LONGEST_FIRST if not (ROOT / "tests" / name).is_file()]
    assert missing == [] and len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
