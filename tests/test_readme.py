"""The README stays true: its schema table is the code's, its Quick start is the two commands."""

import re

from sweeps.dataset.schema import markdown
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()


def test_schema_table_matches_the_models():
    """The table between the schema markers is exactly `python -m sweeps.dataset.schema`."""
    table = README.split("<!-- schema:start -->\n", 1)[1].split("\n<!-- schema:end -->", 1)[0]
    assert table == markdown()


def test_quick_start_is_two_commands_and_ci_runs_the_test_one():
    """Quick start: `make report` then `make test`; .ci/run runs `make test`."""
    block = re.search(r"## Quick start\n\n```\n(.*?)```", README, re.S).group(1)
    assert block.split("\n")[:-1] == ["make report", "make test"]
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_schema_table_names_every_column_a_part_holds():
    """Every column the task writes is documented, in the order the parts hold them."""
    from sweeps.dataset.schema import rows
    from workers.dataset import EVIDENCE_COLUMNS, IDENTITY_COLUMNS, PROVENANCE_COLUMNS
    from workers.measure.measure import MEASURE_COLUMNS

    documented = [r[0] for r in rows()]
    assert documented[: len(IDENTITY_COLUMNS)] == list(IDENTITY_COLUMNS)
    tail = [*MEASURE_COLUMNS, *EVIDENCE_COLUMNS, *PROVENANCE_COLUMNS]
    assert documented[-len(tail):] == tail
