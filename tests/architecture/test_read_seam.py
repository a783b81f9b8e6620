"""One read seam: no product module outside ingest names an ingest table or SQL function in SQL.

The names come from Django's app registry (every ingest model's table) and from
``ingest.history`` (the history tables and the ``ingest_gpu_rows`` / ``ingest_ib_rows``
readers of migration 0014); every string literal of every product module outside ingest
(docstrings aside, migrations excluded) is searched for them as whole words. Reads of ingest's
tables go through ``ingest.selectors`` instead.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from django.apps import apps

from ingest.history import HISTORIES

ROOT = Path(__file__).resolve().parents[2]
#: The product packages besides ingest (``runs`` once it exists).
PACKAGES = ("config", "core", "alerts", "dashboard", "simulator", "runs")
#: Modules still allowed to name ingest tables, relative to the repository root.
ALLOWED: set[str] = set()


def ingest_sql_names() -> set[str]:
    """Every table of the ingest app and every SQL function ingest defines."""
    tables = {model._meta.db_table for model in apps.get_app_config("ingest").get_models()}
    for history in HISTORIES.values():
        tables |= {history.hot, history.history, history.function}
    return tables


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the Constant nodes that are module, class or function docstrings."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def names_in_strings(source: str, names: Iterable[str]) -> list[tuple[int, str]]:
    """(line, name) of each of ``names`` that a string literal of ``source`` holds as a whole word.

    f-strings count by their literal parts; docstrings and comments are not searched.
    """
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names))) + r")\b")
    tree = ast.parse(source)
    skip = _docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            hits += [(node.lineno, match) for match in pattern.findall(node.value)]
    return sorted(set(hits))


def product_modules() -> Iterator[Path]:
    """Every Python module of the product packages outside ingest, migrations excluded."""
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.relative_to(ROOT).parts:
                yield path


def test_the_names_include_the_sample_tables_and_their_readers() -> None:
    names = ingest_sql_names()
    assert {"ingest_node", "ingest_gpusample", "ingest_ibsample", "ingest_noderollup",
            "ingest_gpuhistory", "ingest_gpu_rows", "ingest_ib_rows"} <= names  # fmt: skip
    assert all(name.startswith("ingest_") for name in names)


def test_the_scanner_finds_a_table_named_in_sql() -> None:
    source = '''
"""Reads ingest_gpusample (a docstring: not SQL)."""
# ingest_node in a comment is no SQL either
SQL = "SELECT n.name FROM ingest_node n JOIN ingest_ibport p ON p.node_id = n.id"
NOT_A_TABLE = "ingest_node_id ingest_cycle"
def read(lo):
    """ingest_ibsample in a docstring."""
    return f"SELECT * FROM ingest_gpu_rows({lo}, now()) s"
'''
    assert names_in_strings(source, ingest_sql_names()) == [
        (4, "ingest_ibport"),
        (4, "ingest_node"),
        (8, "ingest_gpu_rows"),
    ]


def test_the_scanner_finds_nothing_in_sql_over_other_tables() -> None:
    source = 'SQL = "SELECT * FROM alerts_alert WHERE rule = %s"\n'
    assert names_in_strings(source, ingest_sql_names()) == []


def test_no_module_outside_ingest_names_an_ingest_table_in_sql() -> None:
    names = ingest_sql_names()
    scanned, found = 0, {}
    for path in product_modules():
        relative = str(path.relative_to(ROOT))
        scanned += 1
        hits = names_in_strings(path.read_text(), names)
        if hits and relative not in ALLOWED:
            found[relative] = hits
    assert scanned > 100  # the packages were found
    assert found == {}


def test_every_allowed_module_still_needs_its_exception() -> None:
    names = ingest_sql_names()
    still = {
        relative
        for relative in ALLOWED
        if (ROOT / relative).exists() and names_in_strings((ROOT / relative).read_text(), names)
    }
    # A module that no longer names ingest's tables (or is gone) leaves the list.
    assert still == {r for r in ALLOWED if (ROOT / r).exists()}
