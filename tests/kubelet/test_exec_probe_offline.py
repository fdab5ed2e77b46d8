"""Exec probes offline judged as the live kubelet's run of them in the simulated shell ends: a file test of a path
nothing creates fails (the pod is not Ready, busybox's message says why), a command knetsim cannot judge offline is
taken as passing and the doctor says so. test_exec_probe_live.py checks the live kubelet agrees."""

from __future__ import annotations

import pytest
from tests.helpers import knetsim as run

from knetsim import Cluster as Offline


def pod(name: str, probe: list[str], command: str = "sleep 3600", image: str = "busybox:1.36") -> str:
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}, labels: {{app: {name}}}}}
spec:
  containers:
  - name: app
    image: {image}
    command: ["sh", "-c", "{command}"]
    readinessProbe:
      exec: {{command: {probe!r}}}
      periodSeconds: 1
"""


MISSING_FILE = pod("nofile", ["cat", "/tmp/healthy"])
TOUCHED_FILE = pod("touched", ["cat", "/tmp/healthy"], "touch /tmp/healthy; sleep 3600")
TEST_F = pod("testf", ["test", "-f", "/tmp/ready"])
ALWAYS = pod("always", ["true"])
UNKNOWN_TOOL = pod("pgrep", ["pgrep", "myapp"])


def test_a_file_nothing_creates_fails_the_probe(tmp_path) -> None:
    cluster = Offline.from_yaml(MISSING_FILE)
    p = cluster.state.pods["default/nofile"]
    assert not p.ready
    assert "readiness probe of container 'app' failed: cat: can't open '/tmp/healthy': No such file or directory" \
        in (p.not_ready_reason or ""), p.not_ready_reason
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(MISSING_FILE)
    rows = run("get", "pods", "-f", str(manifest)).output.splitlines()
    assert rows[1].split()[:3] == ["nofile", "0/1", "Running"], rows
    assert not Offline.from_yaml(TEST_F).state.pods["default/testf"].ready
    assert "ExecProbeNotJudged" not in [f.code for f in cluster.doctor().findings]


@pytest.mark.parametrize("text,name", [(TOUCHED_FILE, "touched"), (UNKNOWN_TOOL, "pgrep")])
def test_what_knetsim_cannot_judge_is_ready_with_a_caveat(text: str, name: str) -> None:
    cluster = Offline.from_yaml(text)
    assert cluster.state.pods[f"default/{name}"].ready
    caveats = [f for f in cluster.doctor().findings if f.code == "ExecProbeNotJudged"]
    assert len(caveats) == 1 and caveats[0].subject == f"Pod default/{name}" and caveats[0].severity == "info"


def test_true_passes_without_a_caveat() -> None:
    cluster = Offline.from_yaml(ALWAYS)
    assert cluster.state.pods["default/always"].ready
    assert "ExecProbeNotJudged" not in [f.code for f in cluster.doctor().findings]
