"""docs/e2e.md's table of restated Kubernetes e2e tests names knetsim tests that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_test_the_e2e_table_names_exists() -> None:
    text = (ROOT / "docs" / "e2e.md").read_text()
    named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", text)
    assert len(named) >= 8  # a guard against this reader silently matching nothing
    for path, function in named:
        tree = ast.parse((ROOT / path).read_text())
        defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert function in defined, f"docs/e2e.md names {path}::{function}, which does not exist"
