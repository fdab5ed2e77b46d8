"""The live cluster's flow record, least-privilege policies generated from it, and a diff against it.

Given a client and a web server in namespace demo, an Ingress for the web, and traffic made as a user
makes it (``kubectl exec ... wget``, ``nslookup``, ``curl`` through the ingress entry, the kubelet's
readiness probes), then ``knetsim observe -o json`` prints those flows as ``hubble observe -o json``
does; ``knetsim policy generate`` on that log writes policies whose proof holds; applied with the real
kubectl, the observed traffic still flows and an unobserved connection times out; and
``knetsim diff --after change.yaml`` compares the running knetsim with the change applied over it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import CURL, Cluster, knetsim_argv, wait_for

# This module starts clusters itself (tests/live.py marks the fixtures' users).
pytestmark = pytest.mark.live

APP = """\
apiVersion: v1
kind: Namespace
metadata: {name: demo}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: demo}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: nginx
          image: nginx:1.27
          ports: [{name: http, containerPort: 80}]
          readinessProbe: {httpGet: {path: /, port: http}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: demo}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: http}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: client, namespace: demo}
spec:
  replicas: 1
  selector: {matchLabels: {app: client}}
  template:
    metadata: {labels: {app: client}}
    spec:
      containers: [{name: c, image: busybox:1.36, command: [sleep, "3600"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: other, namespace: demo, labels: {app: other}}
spec:
  containers: [{name: c, image: busybox:1.36, command: [sleep, "3600"]}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: demo}
spec:
  ingressClassName: nginx
  rules:
    - host: demo.example.com
      http:
        paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]
"""


def knetsim(k: Cluster, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {key: v for key, v in os.environ.items() if not key.startswith("KUBE")}
    env.update(KNETSIM_STATE=str(k.state), HOME=str(k.home))
    return subprocess.run(knetsim_argv(*args), capture_output=True, text=True, env=env, timeout=120, cwd=k.workdir,
                          input=input)


def ready(k: Cluster) -> bool:
    pods = k.get_json("pods", "-n", "demo")["items"]
    return len(pods) == 3 and all(any(c["type"] == "Ready" and c["status"] == "True"
                                      for c in p.get("status", {}).get("conditions", [])) for p in pods)


@pytest.fixture(scope="module")
def demo(cluster: Cluster) -> Cluster:
    cluster.kubectl("apply", "-f", "-", input=APP)
    assert wait_for(lambda: ready(cluster), timeout=30)
    return cluster


def test_observe_prints_the_traffic_as_hubble_does(demo: Cluster) -> None:
    assert demo.sh("kubectl exec -n demo deploy/client -- wget -qO- http://web").stdout.startswith("<!DOCTYPE html>")
    demo.sh("kubectl exec -n demo deploy/client -- nslookup web")
    if CURL is not None:
        demo.sh(f"curl -s -o /dev/null -w '%{{http_code}}' -H 'Host: demo.example.com' {demo.ingress}/")
    out = knetsim(demo, "observe", "-o", "json")
    assert out.returncode == 0, out.stderr
    flows = [json.loads(line) for line in out.stdout.splitlines()]
    assert all(set(f) == {"flow", "node_name", "time"} for f in flows)

    def seen(src_pod: str, dst_port: int, protocol: str = "TCP") -> list[dict[str, Any]]:
        return [f["flow"] for f in flows if f["flow"]["source"].get("pod_name", "").startswith(src_pod)
                and f["flow"]["l4"].get(protocol, {}).get("destination_port") == dst_port]

    [connect] = seen("client-", 80)
    assert connect["verdict"] == "FORWARDED" and connect["destination"]["pod_name"].startswith("web-")
    assert connect["source"]["workloads"] == [{"name": "client", "kind": "Deployment"}]
    assert "k8s:app=client" in connect["source"]["labels"]
    lookups = [f for f in seen("client-", 53, "UDP") if f["Type"] == "L7"]
    assert {f["l7"]["dns"]["query"] for f in lookups} >= {"web.demo.svc.cluster.local."}
    assert all(f["destination"]["namespace"] == "kube-system" for f in lookups)
    probes = [f["flow"] for f in flows if f["flow"].get("Summary") == "kubelet probe"]
    assert probes and probes[0]["source"]["labels"] == ["reserved:host"]
    if CURL is not None:
        from_outside = [f["flow"] for f in flows if f["flow"]["source"].get("labels") == ["reserved:world"]]
        assert from_outside and from_outside[0]["destination"]["namespace"] == "ingress-nginx"
        assert seen("ingress-nginx-controller-", 80)
    compact = knetsim(demo, "observe", "--last", "3")
    assert compact.returncode == 0 and len(compact.stdout.splitlines()) == 3


def test_generated_policies_keep_the_observed_traffic_and_nothing_else(demo: Cluster, tmp_path: Path) -> None:
    demo.sh("kubectl exec -n demo deploy/client -- wget -qO- http://web")
    if CURL is not None:
        demo.sh(f"curl -s -o /dev/null -H 'Host: demo.example.com' {demo.ingress}/")
    log = tmp_path / "flows.json"
    log.write_text(knetsim(demo, "observe", "-o", "json").stdout)
    out = knetsim(demo, "policy", "generate", "--flows", str(log), "-n", "demo", "-o", "yaml")
    assert out.returncode == 0, out.stderr
    assert "0 with more for no reason, 0 with an observed connection denied" in out.stderr
    names = {d.split("\n")[0] for d in out.stdout.split("\nname: ")[1:]}
    assert "web-least-privilege" in out.stdout and "client-least-privilege" in out.stdout, names
    demo.kubectl("apply", "-f", "-", input=out.stdout)
    # What was observed still works, through the real kubectl's exec and the ingress entry...
    assert demo.sh("kubectl exec -n demo deploy/client -- wget -qO- -T 2 http://web").returncode == 0
    if CURL is not None:
        code = demo.sh(f"curl -s -o /dev/null -w '%{{http_code}}' -m 5 -H 'Host: demo.example.com' "
                       f"{demo.ingress}/").stdout
        assert code == "200"
    # ...and what was not, no longer does: `other` never talked to web (a drop: wget times out).
    refused = demo.sh("kubectl exec -n demo other -- wget -qO- -T 1 http://web", check=False)
    assert refused.returncode != 0 and "timed out" in refused.stderr


def test_diff_against_the_running_knetsim(demo: Cluster, tmp_path: Path) -> None:
    change = tmp_path / "typo.yaml"
    change.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: demo}\n"
                      "spec: {selector: {app: wbe}, ports: [{port: 80, targetPort: http}]}\n")
    out = knetsim(demo, "diff", "--after", str(change), "--layers", "objects,endpoints", "-o", "json",
                  "--fail-on", "lost")
    assert out.returncode == 1, out.stdout + out.stderr
    doc = json.loads(out.stdout)
    assert doc["before"] == "cluster:" and doc["after"] == f"cluster: + {change}"
    [obj] = doc["layers"]["objects"]["items"]
    assert (obj["subject"], obj["text"]) == ("Service demo/web", 'changed: spec.selector.app: "web" → "wbe"')
    [lost] = doc["layers"]["endpoints"]["items"]
    assert (lost["effect"], lost["text"]) == ("lost", "lost 1 endpoint of demo/web[Deployment] (port 80)")
    assert lost["why"] == "now the selector app=wbe matches none of its pods (labels app=web)"


def test_the_flow_record_does_not_load_the_simulation_with_the_daemon() -> None:
    """The daemon starts without the simulation (it loads with the first request); the flow record keeps it so:
    the simulation that turns what happened into flows loads with the first trace recorded, and a probe's flow
    (network.flowends) needs none of it."""
    code = ("import sys, knetsim.daemon.daemon; import knetsim.network.flowends; "
            "print(sorted(m for m in sys.modules if m.startswith(('knetsim.network.', 'knetsim.policy'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['knetsim.network.flowends']"
