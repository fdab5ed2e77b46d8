"""Where the upstream reference data is: ../shared/upstream from the repository root (test data only).

A git worktree sits elsewhere than its main checkout; the data is found beside the main checkout then.
Tests that need it skip, saying why, where it is absent (KNETSIM_UPSTREAM names another place).
"""

from __future__ import annotations

import copy
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def _main_checkout(root: Path) -> Path:
    """The main checkout of a worktree (whose .git is a file naming .../.git/worktrees/NAME), else root."""
    git = root / ".git"
    if git.is_file():
        text = git.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            gitdir = Path(text.split(":", 1)[1].strip())
            if gitdir.parent.name == "worktrees":
                return gitdir.parent.parent.parent
    return root


def upstream_dir() -> Path | None:
    wanted = os.environ.get("KNETSIM_UPSTREAM")
    candidates = [Path(wanted)] if wanted else [ROOT.parent / "shared" / "upstream",
                                                _main_checkout(ROOT).parent / "shared" / "upstream"]
    return next((c for c in candidates if c.is_dir()), None)


def require_upstream() -> Path:
    found = upstream_dir()
    if found is None:
        pytest.skip("the upstream reference CRDs (../shared/upstream) are not here: this comparison needs them")
    return found


def upstream_crds(*folders: str) -> dict[str, dict[str, Any]]:
    """The CustomResourceDefinitions of these folders of the reference data, by name (a copy: callers may change
    them)."""
    base = require_upstream()
    return copy.deepcopy(_parsed(base, folders))


@cache
def _parsed(base: Path, folders: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the files are megabytes: libyaml's parser if present
    out: dict[str, dict[str, Any]] = {}
    for folder in folders:
        for path in sorted((base / folder).glob("*.yaml")):
            for doc in yaml.load_all(path.read_text(encoding="utf-8"), Loader=loader):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    out[doc["metadata"]["name"]] = doc
    return out


STANDARD = ("gateway-api-v1.6.1/standard", "network-policy-api-v0.2.0/standard", "network-policy-api-v0.1.8/standard")
EXPERIMENTAL = ("network-policy-api-v0.2.0/experimental",)
