"""The README stays true: its schema table is the code's, its Quick start is the two commands, its dataset
examples run as printed."""

import ast
import re
import shutil

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from sweeps.schema import markdown
from workers.exceptions import SweepFolderError
from tests.analysis.conftest import small_sweep  # noqa: F401 - the fixture: a real sweep of all four models
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()
# What the README's python blocks open the dataset with, each of which must be among them: polars, pyarrow
# without and with hive partitioning, duckdb (each over the manifest's list of parts), memsweep's own reader.
EXAMPLES = ("pl.scan_parquet(parts", "ds.dataset(parts)", 'partitioning="hive"', "read_parquet({parts}",
            "analysis.scan(")


def test_schema_table_matches_the_models():
    """The table between the schema markers is exactly `python -m sweeps.schema`."""
    table = README.split("<!-- schema:start -->\n", 1)[1].split("\n<!-- schema:end -->", 1)[0]
    assert table == markdown()


def test_quick_start_is_two_commands_and_ci_runs_the_test_one():
    """Quick start: `make report` then `make test`; .ci/run runs `make test`."""
    block = re.search(r"## Quick start\n\n```\n(.*?)```", README, re.S).group(1)
    assert block.split("\n")[:-1] == ["make report", "make test"]
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_schema_table_names_every_column_a_part_holds():
    """Every column the task writes is documented, in the order the parts hold them."""
    from sweeps.schema import rows
    from workers.dataset import EVIDENCE_COLUMNS, IDENTITY_COLUMNS, PROVENANCE_COLUMNS
    from workers.dataset import BUILD_COLUMNS, MEASURE_COLUMNS, REFERENCE_COLUMNS

    documented = [r[0] for r in rows()]
    assert documented[: len(IDENTITY_COLUMNS)] == list(IDENTITY_COLUMNS)
    tail = [*MEASURE_COLUMNS, *REFERENCE_COLUMNS, *BUILD_COLUMNS, *EVIDENCE_COLUMNS, *PROVENANCE_COLUMNS]
    assert documented[-len(tail):] == tail


def python_blocks() -> list[str]:
    """The README's ```python blocks, as printed."""
    return re.findall(r"^```python\n(.*?)^```", README, re.S | re.M)


def run_as_printed(code: str, namespace: dict) -> list:
    """Run a README block statement by statement in `namespace`; return what each expression and each
    assignment gave (what a user would look at)."""
    values = []
    for node in ast.parse(code).body:
        if isinstance(node, ast.Expr):
            values.append(eval(compile(ast.Expression(node.value), "README.md", "eval"), namespace))
            continue
        exec(compile(ast.Module([node], type_ignores=[]), "README.md", "exec"), namespace)
        if isinstance(node, ast.Assign):
            values += [namespace[t.id] for t in node.targets if isinstance(t, ast.Name)]
    return values


def rows_of(value) -> int:
    """How many rows (or the count) a README example gave, whatever library it came from."""
    if isinstance(value, pl.LazyFrame):
        value = value.collect()
    if isinstance(value, duckdb.DuckDBPyRelation):
        return len(value.fetchall())
    if isinstance(value, ds.Dataset):
        return value.count_rows()
    if isinstance(value, (pl.DataFrame, pa.Table)):
        return value.height if isinstance(value, pl.DataFrame) else value.num_rows
    return int(value)


def test_the_dataset_examples_run_as_printed_against_a_real_sweep(small_sweep, tmp_path, monkeypatch):
    """Every ```python block (polars, pyarrow with and without hive partitioning, duckdb, analysis.scan) runs
    unchanged in a folder holding results/default, a real sweep of all four models, and each expression
    or assignment gives rows: a README edit or a dataset change that breaks one fails here."""
    blocks = python_blocks()
    assert all(any(e in b for b in blocks) for e in EXAMPLES), EXAMPLES
    shutil.copytree(small_sweep, tmp_path / "results" / "default")
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        values = run_as_printed(block, {})
        assert values and all(rows_of(v) > 0 for v in values if not isinstance(v, (dict, list))), block


def test_the_dataset_examples_read_only_the_recorded_parts(small_sweep, tmp_path, monkeypatch):
    """A part copied under another name in a model's folder (rows a glob over the folder would count twice):
    the examples that read the files themselves give the same rows as before, since they read the manifest's
    list of parts; memsweep's own reader refuses the folder."""
    shutil.copytree(small_sweep, tmp_path / "results" / "default")
    monkeypatch.chdir(tmp_path)
    own = [b for b in python_blocks() if "analysis.scan(" in b]
    files = [b for b in python_blocks() if "ds.dataset(parts)" in b]
    assert len(files) == 1 and own

    def counts() -> list[int]:
        return [rows_of(v) for v in run_as_printed(files[0], {}) if not isinstance(v, (dict, list))]

    before = counts()
    part = sorted((tmp_path / "results" / "default" / "model=memmap").glob("part-*.parquet"))[0]
    shutil.copy(part, part.with_name("copy.parquet"))
    assert counts() == before
    with pytest.raises(SweepFolderError, match="model=memmap/copy.parquet is not a part this sweep records"):
        run_as_printed(own[0], {})


def test_the_profile_of_your_own_example_loads_and_says_what_it_rests_on(tmp_path):
    """README "A profile of your own": its TOML loads on the seed, and memmap at 100 GiB reads as the paragraph
    quotes it: 102 ms, assumed, resting on the two entries it sets."""
    from workers import get_model
    from workers.model import points_frame
    from workers.modeled import rows
    from workers.profiles import load_profile

    section = README.split("### A profile of your own", 1)[1]
    (tmp_path / "my-box.toml").write_text(section.split("```toml\n", 1)[1].split("```", 1)[0])
    model = get_model("memmap")
    row = rows(model, points_frame(model, [dict(namespace_size="100GiB")]),
               load_profile(str(tmp_path / "my-box.toml"))).row(0, named=True)
    assert round(row["metric_init_ms"]) == 102 and row["evidence"] == "assumed"
    quoted = "profile my-box: sets copy.dram_latency_ns, copy.llc_bytes apart from the costs fit in seed (what-if)"
    assert quoted in row["evidence_note"] and " ".join(section.split()).count(quoted) == 1


def test_the_pasted_mail_blocks_fit_a_mail_and_name_their_axes():
    """The README's mail blocks (a 4-point kernel A/B and a 1,504-point comparison) as `compare --format mail`
    prints them: no line of 80 columns or more, the configuration under named axes, none cut short."""
    section = README.split("### A mail block", 1)[1].split("\n## ", 1)[0]
    blocks = [b for b in re.findall(r"```\n(.*?)```", section, re.S) if b.startswith("memsweep compare, B against A")]
    assert len(blocks) == 2
    for block in blocks:
        lines = block.splitlines()
        assert max(map(len, lines)) < 80 and not any(line.rstrip().endswith("...") for line in lines)
    kernel, big = blocks
    assert "namespace_size map           A           B    change" in kernel and kernel.count("  **\n") == 4
    assert "1,504 points compared" in big and "B/A by strategy:" in big
    assert re.search(r"^namespace_size=\S+ struct_page_size=\d+ align=\S+ mode=\S+ map=\S+$", big, re.M)
