"""No product code outside a model's own files names the model: everything the rest of memsweep knows
about a model it reads from the model's declarations (workers.model: metrics, and its report, calibration
and measurement parts), so a plugin model is served like a shipped one.

Product code is workers/, sweeps/ and analysis/; a model's own files are workers/models/ (its module
and the helper modules beside it). Checked in the Python syntax tree: no string literal there is a
shipped model's name, mentions one as a word, or is a column only one model has (its metrics and
its own axes); no import reaches into a model module. Docstrings and documentation arguments
(doc=, description=, help=) may mention models: they explain, they do not branch.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import workers.axes as shared_axes
from tests.conftest import ROOT
from workers import get_model
from workers.axes import Axis

PACKAGES = ("workers", "sweeps", "analysis")
SHIPPED = ("memmap", "copy", "pfnmap", "young")
PROSE = ("doc", "description", "help")


def own_columns() -> set[str]:
    """Columns only the shipped models have: their metric columns and the columns of their own axes."""
    shared = {v.column for v in vars(shared_axes).values() if isinstance(v, Axis)}
    out: set[str] = set()
    for name in SHIPPED:
        model = get_model(name)
        out |= {m.column for m in model.metrics} | {a.column for a in model.axes if a.column not in shared}
    return out


def product_files() -> list[Path]:
    return [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))
            if p.relative_to(ROOT).parts[:2] != ("workers", "models")]


def prose_ids(tree: ast.AST) -> set[int]:
    """ids of the string nodes that are docstrings or documentation keyword arguments."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
        if isinstance(node, ast.keyword) and node.arg in PROSE:
            out |= {id(n) for n in ast.walk(node.value) if isinstance(n, ast.Constant)}
    return out


def namings(source: str, where: str, columns: set[str]) -> list[str]:
    """Every place in `source` (the file `where`) that names a shipped model (see the module doc)."""
    word = re.compile(r"\b(" + "|".join(SHIPPED) + r")\b")
    tree = ast.parse(source, filename=where)
    prose = prose_ids(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            v = node.value
            if v in SHIPPED or word.search(v) or v in columns:
                found.append(f"{where}:{node.lineno}: {v[:80]!r}")
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names = [module.rsplit(".", 1)[-1]] + [a.name for a in node.names]
            if (module == "models" or module.endswith(".models") or ".models." in f"{module}.") and \
                    any(n in SHIPPED for n in names):
                found.append(f"{where}:{node.lineno}: from {'.' * node.level}{module} import ...")
    return found


def test_no_product_code_outside_a_models_own_files_names_a_model():
    columns = own_columns()
    found = [hit for path in product_files()
             for hit in namings(path.read_text(), str(path.relative_to(ROOT)), columns)]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("source, hit", [
    ('if model.name == "pfnmap":\n    pass\n', "'pfnmap'"),
    ('HEADLINE = {"memmap": 1}\n', "'memmap'"),
    ('x = "metric_scan_ms"\n', "'metric_scan_ms'"),
    ('title = f"young: {n}"\n', "'young: '"),
    ("from workers.models.copy import MODEL\n", "from workers.models.copy import ..."),
    ("from ..models import memmap as mm\n", "from ..models import ..."),
])
def test_the_check_catches_a_model_named_in_code(source, hit):
    """Each way of naming a model the rule forbids is caught (the check is not vacuous)."""
    found = namings(source, "probe.py", own_columns())
    assert len(found) == 1 and hit in found[0], found


def test_documentation_may_mention_models():
    """Docstrings and doc=/description= arguments explain; they are not flagged."""
    source = ('"""The memmap and pfnmap figures."""\n'
              'AXIS = Axis(name="size", doc="namespace size (memmap), mapping length (pfnmap)")\n'
              'parser = Parser(description="sweeps of memmap, copy, pfnmap, young")\n')
    assert namings(source, "probe.py", own_columns()) == []
