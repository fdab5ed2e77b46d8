"""Every doctor finding: a broken cluster that has it, and its fixed twin that does not (and connects)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.conftest import EXAMPLES

from knetsim import Cluster
from knetsim.cli.main import cli
from knetsim.cluster.build import build_cluster
from knetsim.doctor import diagnose, scan
from knetsim.model.loader import load_text

BROKEN = EXAMPLES / "broken"


def text_of(name: str) -> str:
    return "\n---\n".join(p.read_text() for p in sorted((BROKEN / name).glob("*.yaml")))


def codes(text: str) -> set[str]:
    """Codes of the warnings and errors (notes, such as pods no policy isolates, are left out)."""
    result = build_cluster(load_text(text, "t.yaml").documents)
    return {f.code for f in diagnose(result.state, result.errors).findings if f.severity != "info"}


# (example, finding it must have, replacements that fix it, (source, broken target, fixed target))
CASES = [
    ("selector-typo", "SelectorMatchesNothing", [("app: wbe", "app: web")], ("default/client", "http://web/", "http://web/")),
    ("wrong-targetport", "TargetPortNotListening", [("targetPort: 8080", "targetPort: 80")],
     ("default/client", "web:80", "web:80")),
    ("dns-egress-blocked", "DNSEgressBlocked", [("""---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: client-to-web""", """---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: allow-dns-egress
spec:
  podSelector: {}
  policyTypes: [Egress]
  egress:
    - to:
        - namespaceSelector:
            matchLabels: {kubernetes.io/metadata.name: kube-system}
      ports:
        - {protocol: UDP, port: 53}
        - {protocol: TCP, port: 53}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: client-to-web""")], ("default/client", "http://web/", "http://web/")),
    ("wrong-namespace", "ShortNameOtherNamespace", [("http://api:8080", "http://api.backend:8080")],
     ("frontend/deploy/web", "http://api:8080/", "http://api.backend:8080/")),
    ("and-or-mistake", "AndOrReadingsDiffer", [("""        - namespaceSelector:
            matchLabels: {user: alice}
        - podSelector:""", """        - namespaceSelector:
            matchLabels: {user: alice}
          podSelector:""")], None),
    ("pass-after-deny", "PassChangesNothing", [("priority: 20", "priority: 5")],
     ("tenant-a/client", "http://api.shop:8080/", "http://api.shop:8080/")),
    ("pass-after-deny", "NetworkPolicyAllowOverridden", [("priority: 20", "priority: 5")], None),
    # knetsim takes equal priorities by name, so the broken twin connects too: no probe.
    ("equal-priorities", "EqualPriorityOverlap", [("name: allow-monitoring\nspec:\n  tier: Admin\n  priority: 10",
                                                   "name: allow-monitoring\nspec:\n  tier: Admin\n  priority: 5")],
     None),
]


@pytest.mark.parametrize(("example", "code", "fixes", "probe"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_broken_example_has_the_finding_and_its_fix_removes_it(example, code, fixes, probe) -> None:
    broken = text_of(example)
    assert code in codes(broken)
    fixed = broken
    for old, new in fixes:
        assert old in fixed
        fixed = fixed.replace(old, new)
    assert code not in codes(fixed)
    if probe is not None:  # the AND/OR pair has its own traffic test below
        source, broken_target, fixed_target = probe
        assert Cluster.from_yaml(broken).trace(source, broken_target).outcome != "connected"
        assert Cluster.from_yaml(fixed).trace(source, fixed_target).outcome == "connected"


def test_and_or_fix_blocks_the_intruder_and_keeps_the_client() -> None:
    broken = Cluster.from_yaml(text_of("and-or-mistake"))
    db_ip = broken.state.pods["data/db"].pod_ip
    assert broken.trace("alice/intruder", f"{db_ip}:5432").outcome == "connected"
    fixed = Cluster.from_yaml(text_of("and-or-mistake").replace("        - podSelector:", "          podSelector:"))
    assert fixed.trace("alice/intruder", f"{db_ip}:5432").outcome == "timeout"
    assert fixed.trace("alice/client", f"{db_ip}:5432").outcome == "connected"
    assert fixed.trace("data/local-client", f"{db_ip}:5432").outcome == "timeout"


SERVICE_BASE = """
apiVersion: v1
kind: Pod
metadata: {name: api, labels: {app: api}}
spec:
  containers:
  - name: api
    image: ghcr.io/example/api:1
    ports: [{name: http, containerPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: api2, labels: {app: api}}
spec:
  containers:
  - name: api
    image: ghcr.io/example/api:1
    ports: [{name: web, containerPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: api}
spec:
  selector: {app: api}
  ports: [{name: http, port: 80, targetPort: http, protocol: TCP}]
"""


def test_named_port_missing_on_some_pods() -> None:
    assert "NamedPortMissing" in codes(SERVICE_BASE)
    fixed = SERVICE_BASE.replace("name: web, containerPort", "name: http, containerPort")
    assert "NamedPortMissing" not in codes(fixed)


def test_protocol_mismatch() -> None:
    broken = SERVICE_BASE.replace("protocol: TCP}]", "protocol: UDP}]").replace("targetPort: http", "targetPort: 8080")
    assert "ProtocolMismatch" in codes(broken)
    assert "ProtocolMismatch" not in codes(broken.replace("protocol: UDP}]", "protocol: TCP}]"))


def test_not_ready_pods() -> None:
    not_ready = "metadata: {name: api2, labels: {app: api}, annotations: {knetsim.io/ready: 'false'}}"
    broken = SERVICE_BASE.replace("metadata: {name: api2, labels: {app: api}}", not_ready)
    assert "PodsNotReady" in codes(broken)
    assert "PodsNotReady" not in codes(SERVICE_BASE)


def test_multi_port_service_without_names_is_reported_not_fatal() -> None:
    broken = SERVICE_BASE.replace("ports: [{name: http, port: 80, targetPort: http, protocol: TCP}]",
                                  "ports: [{port: 80, targetPort: 8080}, {port: 81, targetPort: 8080}]")
    result = build_cluster(load_text(broken, "t.yaml").documents)
    rejected = [f for f in diagnose(result.state, result.errors).findings if f.code == "RejectedByAPIServer"]
    # Upstream requires a name on every port once there are two: both are reported.
    assert [f.message.rsplit(": ", 2)[-2] for f in rejected] == ["spec.ports[0].name", "spec.ports[1].name"]
    finding = rejected[0]
    # The Python API reports the same finding when built leniently.
    lenient = Cluster.from_yaml(broken, strict=False)
    assert [f.code for f in lenient.doctor().findings if f.code == "RejectedByAPIServer"] == [
        "RejectedByAPIServer", "RejectedByAPIServer"]
    assert "name" in finding.fix


def test_ingress_without_controller_and_missing_backend() -> None:
    text = (EXAMPLES / "shop" / "40-ingress.yaml").read_text()
    shop = "\n---\n".join(p.read_text() for p in sorted((EXAMPLES / "shop").glob("*.yaml")))
    no_class = shop.replace("ingressClassName: nginx", "ingressClassName: traefik")
    found = codes(no_class)
    assert found & {"IngressClassNotFound", "IngressNoController", "IngressClassMissing"}, found
    missing = shop.replace("name: api\n                port:", "name: apii\n                port:")
    assert text  # the Ingress is in the example
    assert "IngressPathFails" in codes(missing) or any("Backend" in c for c in codes(missing))
    assert not {c for c in codes(shop) if c.startswith("Ingress")}


def test_scan_finds_endpoints_api_use(tmp_path: Path) -> None:
    (tmp_path / "check.sh").write_text("#!/bin/sh\nkubectl get endpoints web -n shop\necho ok\n")
    (tmp_path / "watch.py").write_text(
        "from kubernetes import client\nclient.CoreV1Api().list_namespaced_endpoints('shop')\n")
    hits = scan([str(tmp_path)])
    assert [(Path(h.file).name, h.line) for h in hits] == [("check.sh", 2), ("watch.py", 2)]
    assert hits[0].replacement == "kubectl get endpointslices -l kubernetes.io/service-name=web"
    assert "list_namespaced_endpoint_slice" in hits[1].replacement


def test_cli_exit_codes_and_subject_filter() -> None:
    runner = CliRunner()
    bad = runner.invoke(cli, ["doctor", "-f", str(BROKEN / "selector-typo")])
    assert bad.exit_code == 1 and "SelectorMatchesNothing" in bad.output
    assert ("fix: kubectl -n default patch service web --type=merge -p "
            "'{\"spec\":{\"selector\":{\"app\":\"web\"}}}'") in bad.output
    good = runner.invoke(cli, ["doctor", "-f", str(EXAMPLES / "shop")])
    assert good.exit_code == 0, good.output
    one = runner.invoke(cli, ["doctor", "web", "-n", "default", "-f", str(BROKEN / "wrong-targetport"), "-o", "json"])
    assert one.exit_code == 1 and '"TargetPortNotListening"' in one.output


def test_ebpf_without_k8s_service_host_is_the_bootstrap_problem() -> None:
    from knetsim.cluster.config import config_from_dict

    shop = "\n---\n".join(p.read_text() for p in sorted((EXAMPLES / "shop").glob("*.yaml")))
    bare = Cluster.from_yaml(shop, config=config_from_dict({"dataplane": "ebpf"}))
    assert "EbpfNoK8sServiceHost" in {f.code for f in bare.doctor().findings}
    told = Cluster.from_yaml(shop, config=config_from_dict(
        {"dataplane": "ebpf", "k8sServiceHost": "172.18.0.2", "k8sServicePort": 6443}))
    assert "EbpfNoK8sServiceHost" not in {f.code for f in told.doctor().findings}
    # No kube-proxy on an ebpf cluster, and the traffic still flows through Cilium's maps.
    assert not [p for p in told.state.pods if "kube-proxy" in p]
    assert told.trace("shop/deploy/web", "http://api:8080/").outcome == "connected"


def test_empty_selector_is_stored_as_none_and_reported() -> None:
    text = SERVICE_BASE.replace("selector: {app: api}", "selector: {}")
    assert "EmptySelector" in codes(text)
    cluster = Cluster.from_yaml(text)
    assert cluster.state.slices_for(cluster.state.services["default/api"]) == []


def test_doctor_subject_that_does_not_exist_is_bad_input() -> None:
    result = CliRunner().invoke(cli, ["doctor", "web", "-f", str(EXAMPLES / "shop")])
    assert result.exit_code == 2
    assert ('no Service, Ingress, Gateway or HTTPRoute "web" in namespace "default"; it exists in namespace shop '
            '(use -n)') in result.output
