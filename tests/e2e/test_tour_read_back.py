"""The live reader equals what kubectl shows, after the README's tour (issue 34: the general guard).

The tour's kubectl lines run against `knetsim up` — a Deployment exposed, a client pod, a rollout, and
`kubectl debug -i POD --image=busybox:1.36 --target=nginx`, which leaves the pod with an ephemeral
container — and `examples/gateway/tls` is applied. Then every kind the reader lists is read back through
``--kubeconfig`` (as any cluster is) and compared with `kubectl get -A -o json`: the same names, and for
pods the same node, IP and phase, for Services the same ClusterIPs, for EndpointSlices the same addresses.
The doctor reads the same cluster without an error.
"""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner
from tests.conftest import EXAMPLES
from tests.e2e.conftest import Cluster, wait_for

from knetsim.apiserver import resources
from knetsim.cli.main import cli
from knetsim.sources.live import READ

# What identifies an object of each kind as kubectl prints it, beyond its namespace and name.
FACTS = {
    "Pod": lambda o: (o["spec"].get("nodeName"), o["status"].get("podIP"), o["status"].get("phase"),
                      sorted(c["name"] for c in o["spec"].get("ephemeralContainers") or [])),
    "Service": lambda o: (o["spec"].get("clusterIP"), o["spec"].get("type")),
    "EndpointSlice": lambda o: sorted(a for e in o.get("endpoints") or [] for a in e.get("addresses") or []),
    "Node": lambda o: sorted(a["address"] for a in o["status"].get("addresses") or []),
    "Deployment": lambda o: o["spec"].get("replicas"),
    "ReplicaSet": lambda o: o["spec"].get("replicas"),
}


def _facts(kind: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    fact = FACTS.get(kind, lambda o: None)
    return {f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}": fact(o) for o in items}


def _kubectl_view(k: Cluster, plural: str) -> list[dict[str, Any]]:
    return k.get_json(plural, "-A")["items"]  # type: ignore[no-any-return]


def _knetsim_view(k: Cluster, plural: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(cli, ["get", plural, "-A", "-o", "json", "--kubeconfig", k.kubeconfig],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    return data.get("items", [data])  # type: ignore[no-any-return]


def _pods_settled(k: Cluster) -> bool:
    pods = _kubectl_view(k, "pods")
    return all(p["status"].get("phase") in ("Running", "Succeeded") and not p["metadata"].get("deletionTimestamp")
               for p in pods) and len(_web_pods(pods)) == 2


def _web_pods(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods
                  if p["metadata"]["namespace"] == "default" and p["metadata"]["name"].startswith("web-"))


def test_the_live_reader_equals_kubectl_after_the_readme_tour(k: Cluster) -> None:
    k.sh("kubectl create deployment web --image=nginx:1.27 --replicas=2 && kubectl expose deployment web --port=80")
    k.kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    client = k.kubectl("run", "tmp", "--rm", "-i", "--image=busybox:1.36", "--restart=Never", "--",
                       "wget", "-qO-", "http://web", timeout=90)
    assert "Welcome to nginx!" in client.stdout
    k.kubectl("set", "image", "deployment/web", "nginx=nginx:1.28")
    k.kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    k.kubectl("apply", "-f", str(EXAMPLES / "gateway" / "tls"))
    assert wait_for(lambda: _pods_settled(k), timeout=90)
    pod = _web_pods(_kubectl_view(k, "pods"))[0]
    debug = k.kubectl("debug", "-i", pod, "--image=busybox:1.36", "--target=nginx", "--", "sh",
                      input="wget -qO- localhost | grep -o '<title>.*</title>'\nexit\n", timeout=90)
    assert "<title>Welcome to nginx!</title>" in debug.stdout
    assert wait_for(lambda: _pods_settled(k), timeout=60)

    compared = set()
    try:
        # A custom kind the cluster does not serve is not read (tests/sources), nor are the kinds of a CNI this
        # cluster does not run. Every kind in one request each way, as `kubectl get a,b,c` asks: kubectl, the
        # reader, kubectl again.
        served = {(r.group, r.kind) for r in resources.served(None)}
        infos = [i for i in READ
                 if (not i.crd or i.group == "gateway.networking.k8s.io") and (i.group, i.kind) in served]
        plurals = ",".join(i.qualified_plural for i in infos)
        before_all, read_all = _kubectl_view(k, plurals), _knetsim_view(k, plurals)
        after_all = _kubectl_view(k, plurals)
        for info in infos:
            before = _facts(info.kind, [o for o in before_all if o["kind"] == info.kind])
            read = _facts(info.kind, [o for o in read_all if o["kind"] == info.kind])
            after = _facts(info.kind, [o for o in after_all if o["kind"] == info.kind])
            if before != after:
                continue  # the cluster moved while it was read (a controller's write): nothing to compare
            assert read == before, f"{info.kind}: the live reader differs from kubectl"
            compared.add(info.kind)
        assert {"Pod", "Service", "EndpointSlice", "Deployment", "ReplicaSet", "Node", "Namespace", "Secret",
                "Gateway", "HTTPRoute"} <= compared
        debugged = _facts("Pod", _knetsim_view(k, "pods"))[f"default/{pod}"]
        assert debugged[3] and debugged[1]  # its ephemeral container, at its own IP

        doctor = CliRunner().invoke(cli, ["doctor", "--kubeconfig", k.kubeconfig], catch_exceptions=False)
        assert "RejectedByAPIServer" not in doctor.output, doctor.output
        assert "must be of type kubernetes.io/tls" not in doctor.output and "not found" not in doctor.output
        route = CliRunner().invoke(cli, ["route", "--gateway", "edge/edge", "--protocol", "https", "--host",
                                         "www.shop.example", "--kubeconfig", k.kubeconfig], catch_exceptions=False)
        assert route.exit_code == 0, route.output
    finally:
        k.kubectl("delete", "-f", str(EXAMPLES / "gateway" / "tls"), "--wait=false", check=False)
