"""No false alarm, live: healthy examples and every lab's starting state applied with the real kubectl (or
`knetsim lab start`) to `knetsim up`, then `knetsim doctor --kubeconfig` read back from the API server reports
what the offline doctor reports for the same manifests — no error but the breaks a lab means, and only the
warnings an example means (tests/doctor/test_healthy_examples.py decides which those are).

Two clusters for the module: the default one (kind's shape) holds shop, gateway/tls, ingress-nginx and the
six labs, each in its own namespaces; a second one starts with the cluster configs of examples/calico and
examples/zones together (Calico as the CNI, zones' four nodes over three zones) and holds both examples.
Each check polls the doctor until its answer settles (pods start, controllers write status) and asserts the
last answer, restricted to the namespaces of what the test applied.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from tests.doctor.test_healthy_examples import HEALTHY, LAB_BREAKS

from .conftest import Cluster, knetsim_argv, running, wait_for

pytestmark = pytest.mark.live  # starts a cluster of its own

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = {name: meant for name, _, meant in HEALTHY}


def doctor(cluster: Cluster) -> list[dict]:
    proc = subprocess.run(knetsim_argv("doctor", "--kubeconfig", cluster.kubeconfig, "-o", "json"),
                          capture_output=True, text=True, env=cluster.env(), cwd=ROOT, timeout=120)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return json.loads(proc.stdout)["findings"]  # type: ignore[no-any-return]


def namespace_of(subject: str) -> str:
    """"Service shop/web" → shop; "Namespace edge" → edge; a cluster-scoped object → ""."""
    kind, _, key = subject.partition(" ")
    if kind == "Namespace":
        return key
    return key.split("/", 1)[0] if "/" in key else ""


def alarms(findings: list[dict], namespaces: set[str]) -> set[tuple[str, str, str]]:
    return {(f["severity"], f["code"], f["subject"]) for f in findings
            if f["severity"] != "info" and (namespace_of(f["subject"]) in namespaces or
                                           (f["severity"] == "error" and namespace_of(f["subject"]) == ""))}


def settled(cluster: Cluster, namespaces: set[str], expected: set[tuple[str, str, str]],
            timeout: float = 30) -> set[tuple[str, str, str]]:
    """The doctor's alarms once they equal ``expected`` (or the last answer when they never do)."""
    last: list[set[tuple[str, str, str]]] = []

    def check() -> bool:
        last.append(alarms(doctor(cluster), namespaces))
        return last[-1] == expected
    wait_for(check, timeout=timeout, interval=1)
    return last[-1]


def namespaces_in(*paths: str) -> set[str]:
    out = set()
    for path in paths:
        for file in sorted((ROOT / path).rglob("*.yaml")) if (ROOT / path).is_dir() else [ROOT / path]:
            for doc in yaml.safe_load_all(file.read_text()):
                if isinstance(doc, dict) and doc.get("kind") != "Namespace":
                    out.add((doc.get("metadata") or {}).get("namespace") or "default")
    return out


def test_healthy_examples_read_live_raise_no_alarm(cluster: Cluster):
    examples = {"shop": "examples/shop", "gateway-tls": "examples/gateway/tls",
                "ingress-nginx": "examples/ingress-nginx"}
    for path in examples.values():
        cluster.kubectl("apply", "-f", str(ROOT / path))
    namespaces = namespaces_in(*examples.values())
    expected = set().union(*(EXPECTED[name] for name in examples))
    assert settled(cluster, namespaces, expected) == expected


def test_every_lab_start_read_live_shows_only_its_breaks(cluster: Cluster):
    from knetsim.labs.model import load_lab

    env = {**cluster.env(), "XDG_STATE_HOME": str(cluster.home / ".state")}
    namespaces: set[str] = set()
    for name in sorted(LAB_BREAKS):
        proc = subprocess.run(knetsim_argv("lab", "start", name), capture_output=True, text=True, env=env,
                              cwd=ROOT, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        lab = load_lab(name)
        namespaces |= {lab.namespace, *lab.namespaces}
    expected = set().union(*LAB_BREAKS.values())
    assert settled(cluster, namespaces, expected) == expected


def test_a_vpc_resolver_upstream_is_a_note_live(cluster: Cluster):
    """The Corefile of an EKS cluster forwards to the VPC's resolver (10.0.0.2), which knetsim has no model of:
    read live, the doctor says it could not check it, and reports no error for it."""
    from knetsim.dns.corefile import default_corefile

    cluster.use_corefile(default_corefile().replace("forward . /etc/resolv.conf", "forward . 10.0.0.2"))
    try:
        findings = wait_for(lambda: [f for f in doctor(cluster) if f["code"].startswith(("CoreDNS", "Corefile"))],
                            timeout=10, interval=0.5)
        assert [(f["severity"], f["code"]) for f in findings] == [("info", "CoreDNSUpstreamUnknown")], findings
        assert not [f for f in doctor(cluster) if f["severity"] == "error" and "kube-system" in f["subject"]]
    finally:
        cluster.use_corefile()


# Calico as the CNI (examples/calico/cluster.yaml) on the four nodes of examples/zones/cluster.yaml.
CALICO_ZONES = """\
name: zones
cni: calico
nodes:
  - {name: control-plane, ip: 172.18.0.2, controlPlane: true, zone: zone-a}
  - {name: worker, ip: 172.18.0.3, zone: zone-a, cpu: "8"}
  - {name: worker2, ip: 172.18.0.4, zone: zone-b, cpu: "8"}
  - {name: worker3, ip: 172.18.0.5, zone: zone-c, cpu: "8"}
"""


@pytest.fixture(scope="module")
def calico_zones(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(tmp_path_factory.mktemp("calico-zones"), CALICO_ZONES) as c:
        yield c


def test_calico_and_zones_read_live_raise_no_alarm(calico_zones: Cluster):
    calico_zones.kubectl("apply", "-f", str(ROOT / "examples/zones/app"))
    # Its Calico policies too: a cluster whose CNI is Calico serves projectcalico.org/v3 and enforces it.
    # kubectl applies a folder's files in name order, and the namespaces are in a later file than the policies.
    calico_zones.kubectl("apply", "-f", str(ROOT / "examples/calico/manifests"), check=False)
    calico_zones.kubectl("apply", "-f", str(ROOT / "examples/calico/manifests"))
    namespaces = namespaces_in("examples/calico/manifests", "examples/zones/app")
    expected = EXPECTED["calico"] | EXPECTED["zones"]
    assert settled(calico_zones, namespaces, expected) == expected


# What real clusters hold that knetsim does not simulate or cannot see, read back live: an Ingress of k3s's
# Traefik, one whose TLS Secret cert-manager issues, nginx serving a site from a ConfigMap on 8080, and an app
# image knetsim does not know that declares its port.
REAL_WORLD = """
apiVersion: v1
kind: Namespace
metadata: {name: realworld}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: traefik}
spec: {controller: traefik.io/ingress-controller}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: site, namespace: realworld}
data: {default.conf: "server { listen 8080; location / { return 200 ok; } }"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: realworld}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: nginx
          image: nginx:1.27
          ports: [{containerPort: 8080}]
          volumeMounts: [{name: site, mountPath: /etc/nginx/conf.d}]
      volumes: [{name: site, configMap: {name: site}}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: realworld}
spec: {selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: on-traefik, namespace: realworld}
spec:
  ingressClassName: traefik
  rules: [{host: t.example.com, http: {paths: [{path: /, pathType: Prefix,
                                                backend: {service: {name: web, port: {number: 80}}}}]}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: tls, namespace: realworld, annotations: {cert-manager.io/cluster-issuer: letsencrypt-prod}}
spec:
  ingressClassName: nginx
  tls: [{hosts: [www.example.com], secretName: www-tls}]
  rules: [{host: www.example.com, http: {paths: [{path: /, pathType: Prefix,
                                                  backend: {service: {name: web, port: {number: 80}}}}]}}]
"""


def test_what_knetsim_cannot_see_is_no_alarm_live(cluster: Cluster):
    cluster.kubectl("apply", "-f", "-", input=REAL_WORLD)
    assert settled(cluster, {"realworld"}, set()) == set()
    notes = {(f["code"], f["subject"]) for f in doctor(cluster) if f["severity"] == "info"}
    assert {("IngressClassOtherController", "Ingress realworld/on-traefik"),
            ("IngressTLSSecretIssued", "Ingress realworld/tls")} <= notes
