"""The public surface: the Python API's exports, and `kubectl knetsim` as a kubectl plugin."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import EXAMPLES

import knetsim


def test_exported_names_are_exactly_the_public_api() -> None:
    assert sorted(knetsim.__all__) == ["Cluster", "InputError", "__version__"]
    public = {"trace", "dns", "policy_check", "matrix", "route", "doctor", "endpoints", "overview", "render", "packet",
              "from_paths", "from_yaml", "from_documents"}
    assert public <= set(dir(knetsim.Cluster))


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_finds_the_plugin(tmp_path: Path) -> None:
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "kubectl-knetsim").exists(), "the package installs the kubectl-knetsim console script"
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", HOME=str(tmp_path),
               KUBECONFIG=str(tmp_path / "none"))
    result = subprocess.run(["kubectl", "knetsim", "validate", "-f", str(EXAMPLES / "shop")],
                            capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("objects valid")
