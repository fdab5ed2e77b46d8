"""``knetsim up --kernel``: kubectl exec runs real tools in the pod's namespace; policy follows kubectl apply.

Given a live cluster in kernel mode with two nginx pods behind Service web and a busybox
client, then the client's real ``wget`` fetches the page through the real kube-proxy rules,
its real ``nslookup`` asks the kube-dns ClusterIP, a NetworkPolicy applied with kubectl
drops the next connection (the kernel's rules changed within a second), deleting it opens
the way again, and ``knetsim down`` leaves no namespace behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest
from tests.kernel.conftest import needs_kernel

from knetsim.kernel.netns import PREFIX, list_netns

pytestmark = [pytest.mark.live, needs_kernel,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
              pytest.mark.skipif(shutil.which("busybox") is None, reason="busybox is not installed (Debian: busybox)")]

DENY = """apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-web}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
"""


@pytest.fixture
def live(tmp_path):
    state = tmp_path / "state"
    knetsim = [sys.executable, "-m", "knetsim.cli.main"]
    up = subprocess.run([*knetsim, "up", "--kernel", "--port", "0", "--state", str(state)], capture_output=True,
                        text=True, timeout=60)
    assert up.returncode == 0, up.stderr
    # Namespaces carry the owning process's pid: only this daemon's count (other runs may be building theirs).
    mine = f"{PREFIX}{json.loads((state / 'ready.json').read_text())['pid']}."
    env = {**os.environ, "KUBECONFIG": str(state / "kubeconfig")}

    def kubectl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["kubectl", *args], capture_output=True, text=True, env=env, input=stdin, timeout=60)
    try:
        yield kubectl
    finally:
        subprocess.run([*knetsim, "down", "--state", str(state)], capture_output=True, timeout=60)
    assert not [n for n in list_netns() if n.startswith(mine)]


def _until(check, seconds: float = 5.0):
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if result.returncode == 0 or time.monotonic() > deadline:
            return result
        time.sleep(0.1)


def test_real_tools_and_live_policy(live):
    assert live("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2").returncode == 0
    assert live("expose", "deployment", "web", "--port=80").returncode == 0
    assert live("run", "client", "--image=busybox:1.36", "--restart=Never", "--", "sleep", "3600").returncode == 0
    got = _until(lambda: live("exec", "client", "--", "wget", "-qO-", "-T", "2", "http://web"))
    assert got.returncode == 0, got.stderr
    assert "<h1>Welcome to nginx!</h1>" in got.stdout and "served by pod default/web-" in got.stdout
    # busybox's nslookup asks once per type and gives up after its timeout: under a loaded CI machine one UDP answer
    # can come late, so it is asked again as a user would (the answer itself must be the cluster's).
    ns = _until(lambda: live("exec", "client", "--", "nslookup", "web"))
    assert "Server:\t\t10.96.0.10" in ns.stdout and "Name:\tweb.default.svc.cluster.local" in ns.stdout
    assert live("apply", "-f", "-", stdin=DENY).returncode == 0
    time.sleep(1.0)  # "within a second"
    blocked = live("exec", "client", "--", "wget", "-qO-", "-T", "2", "http://web")
    assert blocked.returncode != 0 and "wget: download timed out" in blocked.stderr
    assert live("delete", "networkpolicy", "deny-web").returncode == 0
    again = _until(lambda: live("exec", "client", "--", "wget", "-qO-", "-T", "2", "http://web"))
    assert again.returncode == 0, again.stderr
