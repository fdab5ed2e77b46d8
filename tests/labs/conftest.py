"""Fixtures: ``knetsim up`` in a temp state dir on free ports, the real kubectl, and ``knetsim lab``.

One live cluster per test module (start ≈ 1 s); each test resets and restarts the lab it uses.
kubectl gets HOME in a temp dir, so its discovery cache never touches the user's.

Address plan: DESIGN defaults (nodes 172.18.0.2-4, pods 10.244.0.0/16, services 10.96.0.0/12).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from knetsim.apiserver.store import LOOP_MARK
from knetsim.cli.main import cli
from knetsim.labs import Lab, load_lab

KUBECTL = shutil.which("kubectl")


@dataclass
class LiveLab:
    state: Path
    home: Path

    @property
    def kubeconfig(self) -> str:
        return str(self.state / "kubeconfig")

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env.update(KUBECONFIG=self.kubeconfig, HOME=str(self.home), XDG_STATE_HOME=str(self.home / ".state"))
        return env

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


def knetsim(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "knetsim.cli.main", *args], capture_output=True, text=True,
                          env=env, timeout=60)


def controller_loops(log: Path, offset: int) -> list[str]:
    """The controller loops (``LOOP_MARK`` lines, see knetsim.apiserver.store) the daemon logged after ``offset``."""
    if not log.exists():
        return []
    with open(log, "rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    return [line for line in text.splitlines() if LOOP_MARK in line]


@pytest.fixture(autouse=True)
def no_controller_loop(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a test during which the cluster's controllers wrote one object in a loop (the store's write
    counter logs it: more than LOOP_BOUND writes within LOOP_WINDOW seconds, far above any legitimate
    writer). A loop the test's last command starts may be reported by the module's next test instead."""
    if "live" not in request.fixturenames:
        yield
        return
    cluster = request.getfixturevalue("live")
    log = cluster.state / "daemon.log"
    offset = log.stat().st_size if log.exists() else 0
    yield
    loops = controller_loops(log, offset)
    assert not loops, "the controllers wrote in a loop:\n" + "\n".join(loops)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveLab]:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed: the lab tests apply solutions with the real kubectl")
    base = tmp_path_factory.mktemp("lab")
    state, home = base / "state", base / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env["HOME"] = str(home)
    up = subprocess.run([sys.executable, "-c", "from knetsim.cli.main import main; main()", "up", "--port", "0",
                         "--state", str(state)], capture_output=True, text=True, env=env, timeout=60)
    if up.returncode != 0:
        pytest.fail(f"knetsim up failed:\n{up.stdout}{up.stderr}")
    try:
        yield LiveLab(state, home)
    finally:
        subprocess.run([sys.executable, "-c", "from knetsim.cli.main import main; main()", "down", "--state",
                        str(state)], capture_output=True, text=True, env=env, timeout=60)


def failed(report: dict[str, Any], task: str) -> list[dict[str, Any]]:
    t = next(t for t in report["tasks"] if t["task"] == task)
    return [c for c in t["criteria"] if not c["passed"]]


def task_result(report: dict[str, Any], task: str) -> dict[str, Any]:
    return next(t for t in report["tasks"] if t["task"] == task)


__all__ = ["KUBECTL", "LiveLab", "failed", "load_lab", "task_result"]
