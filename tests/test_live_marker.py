"""Every test module that starts a cluster itself is marked ``live``, so ``pytest -m "not live"`` runs the
in-process suite alone (the tests using tests/live.py's fixtures are marked at collection, tests/conftest.py).

Read from the sources: a module that calls one of tests/live.py's starters (``start_server``, ``start_live``,
``start``, ``up``), or runs ``knetsim up`` through an argv holding ``"up"`` and ``"--state"``, must say
``pytestmark = pytest.mark.live`` (alone or in a list). Not counted: a ``@live_fixture`` (its users are marked
at collection) and a test whose name says it refuses (``test_up_refuses_...``: it checks nothing starts).
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
STARTERS = {"start_server", "start_live", "start", "up"}


def _starts_a_cluster(tree: ast.Module) -> bool:
    imported = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and (node.module or "").split(".")[-1] in ("conftest", "live") for alias in node.names
                if alias.name in STARTERS}
    scanned = [top for top in tree.body if not (
        isinstance(top, ast.FunctionDef) and ("refuse" in top.name
                                              or any(ast.unparse(d) == "live_fixture" for d in top.decorator_list)))]
    for node in (n for top in scanned for n in ast.walk(top)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in imported:
            return True
        if isinstance(node, ast.Call | ast.List):
            parts = node.args if isinstance(node, ast.Call) else node.elts
            words = [p.value for p in parts if isinstance(p, ast.Constant)]
            if "up" in words and "--state" in words:
                return True
    return False


def _marked_live(source: str) -> bool:
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets):
            return "pytest.mark.live" in ast.unparse(node.value)
    return False


def test_every_module_that_starts_a_cluster_itself_is_marked_live() -> None:
    unmarked = []
    for path in sorted(TESTS.rglob("test_*.py")):
        source = path.read_text()
        if _starts_a_cluster(ast.parse(source)) and not _marked_live(source):
            unmarked.append(str(path.relative_to(TESTS)))
    assert not unmarked, "start a cluster but are not marked live (pytestmark = pytest.mark.live): " + \
        ", ".join(unmarked)


def test_the_reader_finds_the_modules_that_start_clusters() -> None:
    """A guard against the reader above matching nothing."""
    starting = [p for p in TESTS.rglob("test_*.py") if _starts_a_cluster(ast.parse(p.read_text()))]
    assert len(starting) >= 10
