"""Fixtures: ``knetsim up`` (tests/live.py) in a temp state dir on free ports, the real kubectl, ``knetsim lab``.

One live cluster per test module (start ≈ 1 s); each test resets and restarts the lab it uses.
kubectl gets HOME in a temp dir, so its discovery cache never touches the user's.

Address plan: DESIGN defaults (nodes 172.18.0.2-4, pods 10.244.0.0/16, services 10.96.0.0/12).
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tests.live import KUBECTL, down, kube_free_env, live_fixture, up

from knetsim.cli.main import cli
from knetsim.labs import Lab, load_lab


@dataclass
class LiveLab:
    state: Path
    home: Path

    @property
    def kubeconfig(self) -> str:
        return str(self.state / "kubeconfig")

    @property
    def daemon_log(self) -> Path:
        return self.state / "daemon.log"

    def env(self) -> dict[str, str]:
        return kube_free_env(self.home, KUBECONFIG=self.kubeconfig, XDG_STATE_HOME=str(self.home / ".state"))

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        proc = subprocess.run([KUBECTL, *args], input=input, capture_output=True, text=True, env=self.env(),
                              timeout=60)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
        return proc

    def apply(self, manifest: str) -> None:
        self.kubectl("apply", "-f", "-", input=manifest)

    def solve(self, lab: Lab, *task_ids: str) -> None:
        """Run the reference solution of each task, as a learner would type it."""
        for tid in task_ids:
            for step in lab.task(tid).solution:
                if step.run:
                    args = shlex.split(step.run)
                    assert args[0] == "kubectl", step.run
                    self.kubectl(*args[1:])
                else:
                    self.apply(step.apply)

    def lab(self, *args: str) -> Any:
        """``knetsim lab ...`` in-process, with the test cluster's environment."""
        result = CliRunner().invoke(cli, ["lab", *args], env=self.env(), catch_exceptions=False)
        return result

    def check(self, lab: str, *tasks: str) -> dict[str, Any]:
        result = self.lab("check", "--lab", lab, "-o", "json", *tasks)
        assert result.exit_code in (0, 1), result.output
        return json.loads(result.output)  # type: ignore[no-any-return]

    def restart(self, lab: str) -> None:
        out = self.lab("reset", lab)
        assert out.exit_code == 0, out.output
        out = self.lab("start", lab)
        assert out.exit_code == 0, out.output


@live_fixture
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed: the lab tests apply solutions with the real kubectl")
    base = tmp_path_factory.mktemp("lab")
    state, home = base / "state", base / "home"
    home.mkdir()
    started = up(state, home)
    if started.returncode != 0:
        pytest.fail(f"knetsim up failed:\n{started.stdout}{started.stderr}")
    try:
        yield LiveLab(state, home)
    finally:
        down(state)


def policy_manifest(api_version: str, kind: str, metadata: str, spec: str) -> str:
    """A policy as a learner writes it: ``spec`` is YAML text, indented here under ``spec:``; ``metadata`` a flow
    mapping's inside (``name: x, namespace: y``)."""
    body = "\n".join("  " + line for line in spec.strip("\n").splitlines())
    return f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {{{metadata}}}\nspec:\n{body}\n"


def failed(report: dict[str, Any], task: str) -> list[dict[str, Any]]:
    t = next(t for t in report["tasks"] if t["task"] == task)
    return [c for c in t["criteria"] if not c["passed"]]


def task_result(report: dict[str, Any], task: str) -> dict[str, Any]:
    return next(t for t in report["tasks"] if t["task"] == task)


__all__ = ["KUBECTL", "LiveLab", "failed", "load_lab", "policy_manifest", "task_result"]
