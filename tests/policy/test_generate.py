"""``knetsim policy generate``: least-privilege policies from observed or declared connections, then proven.

Given the shop's intended connections (or Hubble's flows of them), then one policy per workload is
written, ready for ``kubectl apply`` (admitted by the same admission), naming the pods' own port names
and namespaces by ``kubernetes.io/metadata.name``, DNS included, a comment per rule naming what it
admits; the matrix of the generated set alone allows every connection and nothing the report does not
explain; and the diff against the shop's own policies says what the generated set would newly deny.

Address plan: examples/shop (DESIGN.md defaults); external clients 203.0.113.0/24.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.conftest import EXAMPLES
from tests.helpers import knetsim as run

from knetsim import Cluster
from knetsim.model.flows import read_hubble
from knetsim.policy.generate import from_flows

SHOP = str(EXAMPLES / "shop")
INTENDED = """\
connections:
  - {from: ingress-nginx/ingress-nginx-controller, to: shop/web, port: http-web}
  - {from: ingress-nginx/ingress-nginx-controller, to: shop/api, port: 8080}
  - {from: 203.0.113.0/24, to: shop/web, port: 80}
  - {from: shop/web, to: shop/api, port: http}
  - {from: shop/api, to: shop/db, port: 5432}
  - {from: shop/web, to: kube-system/coredns, port: 53, protocol: UDP}
"""



@pytest.fixture(scope="module")
def intended(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("generate") / "intended.yaml"
    path.write_text(INTENDED)
    return path


@pytest.fixture(scope="module")
def generated(intended: Path) -> dict[str, Any]:
    result = run("policy", "generate", "-f", SHOP, "--connections", str(intended), "-o", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_one_policy_per_workload_and_the_yaml_is_admitted(intended: Path, tmp_path: Path) -> None:
    result = run("policy", "generate", "-f", SHOP, "--connections", str(intended), "-o", "yaml")
    assert result.exit_code == 0, result.output
    out = tmp_path / "generated.yaml"
    out.write_text(result.stdout)
    docs = list(yaml.safe_load_all(result.stdout))
    assert [(d["kind"], d["metadata"]["namespace"], d["metadata"]["name"]) for d in docs] == [
        ("NetworkPolicy", "shop", f"{name}-least-privilege") for name in ("api", "db", "web")]
    check = run("validate", "--strict", "-f", str(EXAMPLES / "shop" / "00-namespace.yaml"), "-f", str(out))
    assert check.exit_code == 0, check.output
    assert "proof: 8 pair(s): 5 exactly as observed, 3 with more for the reason given, 0 with more for no " \
           "reason, 0 with an observed connection denied" in result.stderr


def test_readable_rules_named_ports_namespaces_by_name_dns_and_comments(generated: dict[str, Any],
                                                                         intended: Path) -> None:
    web = next(p for p in generated["policies"] if p["metadata"]["name"] == "web-least-privilege")
    assert web["spec"]["podSelector"] == {"matchLabels": {"app": "web"}}
    assert web["spec"]["policyTypes"] == ["Ingress", "Egress"]
    ingress = {json.dumps(r["from"], sort_keys=True): r["ports"] for r in web["spec"]["ingress"]}
    controller = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}},
                   "podSelector": {"matchLabels": {"app.kubernetes.io/component": "controller",
                                                   "app.kubernetes.io/instance": "ingress-nginx",
                                                   "app.kubernetes.io/name": "ingress-nginx"}}}]
    assert ingress[json.dumps(controller, sort_keys=True)] == [{"protocol": "TCP", "port": "http-web"}]
    assert ingress[json.dumps([{"ipBlock": {"cidr": "203.0.113.0/24"}}])] == [{"protocol": "TCP", "port": "http-web"}]
    egress = web["spec"]["egress"]
    assert egress[0] == {"to": [{"podSelector": {"matchLabels": {"app": "api"}}}],
                         "ports": [{"protocol": "TCP", "port": "http"}]}
    assert egress[-1]["ports"] == [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
    db = next(p for p in generated["policies"] if p["metadata"]["name"] == "db-least-privilege")
    assert [r["from"] for r in db["spec"]["ingress"]] == [[{"podSelector": {"matchLabels": {"app": "api"}}}]]
    text = run("policy", "generate", "-f", SHOP, "--connections", str(intended), "-o", "yaml").stdout
    assert "    # from shop/api[Deployment]:\n    #   TCP 5432: declared in " in text


def test_the_proof_allows_every_connection_and_explains_every_extra(generated: dict[str, Any]) -> None:
    proof = generated["proof"]
    assert proof["holds"]
    verdicts = {(p["from"], p["to"]): (p["verdict"], p["why"]) for p in proof["pairs"]}
    assert verdicts[("shop/api[Deployment]", "shop/db[StatefulSet]")] == ("exact", "")
    assert verdicts[("203.0.113.0/24", "shop/web[Deployment]")] == ("exact", "")
    assert verdicts[("shop/web[Deployment]", "kube-system/coredns[Deployment]")] == (
        "extra", "DNS over TCP, allowed with UDP 53 for answers too large for UDP")
    assert {v for v, _ in verdicts.values()} == {"exact", "extra"}


def test_against_the_deployed_policies_the_diff_names_what_is_newly_denied(generated: dict[str, Any]) -> None:
    lost = {i["subject"]: i for i in generated["diff"]["layers"]["reachability"]["items"] if i["effect"] == "lost"}
    # The shop admits the whole Internet on TCP 80 today; the generated set, the observed clients only.
    assert "10.245.0.0-203.0.112.255 → shop/web[Deployment]" in lost
    assert "203.0.113.0/24 → shop/web[Deployment]" not in lost
    assert "denied, isolated by NetworkPolicy shop/web-least-privilege" in \
           lost["10.245.0.0-203.0.112.255 → shop/web[Deployment]"]["after"]["rule"]["decision"]
    assert not [i for i in generated["diff"]["layers"]["reachability"]["items"] if i["effect"] == "gained"]


def test_the_admin_tier_writes_cluster_policies_that_admission_takes(intended: Path, tmp_path: Path) -> None:
    result = run("policy", "generate", "-f", SHOP, "--connections", str(intended), "--tier", "admin",
                 "--priority", "30", "-o", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    api = next(p for p in doc["policies"] if p["metadata"]["name"] == "shop-api-least-privilege")
    assert (api["kind"], api["spec"]["tier"], api["spec"]["priority"]) == ("ClusterNetworkPolicy", "Admin", 30)
    assert [r["action"] for r in api["spec"]["ingress"]] == ["Accept", "Accept", "Deny"]
    assert api["spec"]["ingress"][0]["protocols"] == [{"destinationNamedPort": "http"}]
    assert doc["proof"]["holds"]
    out = tmp_path / "cnp.yaml"
    out.write_text(yaml.safe_dump_all(doc["policies"]))
    assert run("validate", "--strict", "-f", str(out)).exit_code == 0


# --- from Hubble flows ------------------------------------------------------------------------------------

# As `hubble observe -o json` prints them (fields knetsim does not read included): a SYN seen leaving web,
# its reply, a dropped attempt, a DNS lookup and a ping.
HUBBLE = [
    {"flow": {"time": "2026-12-04T10:00:00.100Z", "uuid": "5a1f", "verdict": "FORWARDED",
              "ethernet": {"source": "aa:bb", "destination": "cc:dd"},
              "IP": {"source": "10.244.2.4", "destination": "10.244.1.2", "ipVersion": "IPv4"},
              "l4": {"TCP": {"source_port": 51234, "destination_port": 8080, "flags": {"SYN": True}}},
              "source": {"ID": 1201, "identity": 31462, "namespace": "shop",
                         "labels": ["k8s:app=web", "k8s:io.kubernetes.pod.namespace=shop", "k8s:tier=frontend"],
                         "pod_name": "web-7c8c4869fb-knbt7", "workloads": [{"name": "web", "kind": "Deployment"}]},
              "destination": {"ID": 880, "identity": 8744, "namespace": "shop", "labels": ["k8s:app=api"],
                              "pod_name": "api-867b78f88-b5xt6"},
              "Type": "L3_L4", "node_name": "kind-worker2", "event_type": {"type": 4, "sub_type": 3},
              "traffic_direction": "EGRESS", "trace_observation_point": "TO_STACK", "is_reply": False,
              "Summary": "TCP Flags: SYN"}, "node_name": "kind-worker2", "time": "2026-12-04T10:00:00.100Z"},
    {"flow": {"time": "2026-12-04T10:00:00.101Z", "verdict": "FORWARDED",
              "IP": {"source": "10.244.1.2", "destination": "10.244.2.4", "ipVersion": "IPv4"},
              "l4": {"TCP": {"source_port": 8080, "destination_port": 51234, "flags": {"SYN": True, "ACK": True}}},
              "source": {"namespace": "shop", "pod_name": "api-867b78f88-b5xt6"},
              "destination": {"namespace": "shop", "pod_name": "web-7c8c4869fb-knbt7"},
              "Type": "L3_L4", "traffic_direction": "INGRESS", "is_reply": True}},
    {"flow": {"time": "2026-12-04T10:00:01Z", "verdict": "DROPPED", "drop_reason_desc": "POLICY_DENIED",
              "IP": {"source": "10.244.2.4", "destination": "10.244.2.3", "ipVersion": "IPv4"},
              "l4": {"TCP": {"source_port": 40000, "destination_port": 5432}},
              "source": {"namespace": "shop", "pod_name": "web-7c8c4869fb-knbt7"},
              "destination": {"namespace": "shop", "pod_name": "db-0"}, "Type": "L3_L4", "is_reply": False}},
    {"flow": {"time": "2026-12-04T10:00:02Z", "verdict": "FORWARDED",
              "IP": {"source": "10.244.2.4", "destination": "10.244.0.2", "ipVersion": "IPv4"},
              "l4": {"UDP": {"source_port": 35000, "destination_port": 53}},
              "source": {"namespace": "shop", "pod_name": "web-7c8c4869fb-knbt7"},
              "destination": {"namespace": "kube-system", "pod_name": "coredns-756bc579b5-7jgqj"},
              "Type": "L7", "l7": {"type": "REQUEST", "dns": {"query": "api.shop.svc.cluster.local.", "qtypes": ["A"]}},
              "is_reply": False}},
    {"flow": {"time": "2026-12-04T10:00:03Z", "verdict": "FORWARDED",
              "IP": {"source": "10.244.2.4", "destination": "10.244.1.2", "ipVersion": "IPv4"},
              "l4": {"ICMPv4": {"type": 8}}, "source": {"namespace": "shop", "pod_name": "web-7c8c4869fb-knbt7"},
              "destination": {"namespace": "shop", "pod_name": "api-867b78f88-b5xt6"}, "Type": "L3_L4"}},
    {"lost_events": {"source": "HUBBLE_RING_BUFFER", "num_events_lost": "3"}, "node_name": "kind-worker2"},
]


def test_hubble_flows_become_the_connections_they_show() -> None:
    lines = [json.dumps(h) for h in HUBBLE]
    flows, problems = read_hubble(lines, "flows.json")
    assert problems == [] and len(flows) == 5
    observed = from_flows(Cluster.from_paths([SHOP]).state, flows)
    assert [(c.src.name, c.dst.name, c.protocol, c.port, c.evidence) for c in observed.connections] == [
        ("shop/web[Deployment]", "kube-system/coredns[Deployment]", "UDP", 53, "1 flow, 2026-12-04T10:00:02Z"),
        ("shop/web[Deployment]", "shop/api[Deployment]", "TCP", 8080, "1 flow, 2026-12-04T10:00:00.100Z")]
    assert observed.notes == [
        "1 flow(s) not used: ICMPv4 (NetworkPolicy names TCP, UDP and SCTP ports only)",
        "1 flow(s) not used: dropped (give --include-dropped to allow what was tried)"]
    tried = from_flows(Cluster.from_paths([SHOP]).state, flows, include_dropped=True)
    assert ("shop/web[Deployment]", "shop/db[StatefulSet]", 5432) in {
        (c.src.name, c.dst.name, c.port) for c in tried.connections}


def test_generate_from_a_flow_log_and_bad_lines(tmp_path: Path) -> None:
    log = tmp_path / "flows.json"
    log.write_text("\n".join(json.dumps(h) for h in HUBBLE) + "\n")
    result = run("policy", "generate", "-f", SHOP, "--flows", str(log), "-o", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["proof"]["holds"]
    assert [p["metadata"]["name"] for p in doc["policies"]] == [
        "api-least-privilege", "db-least-privilege", "web-least-privilege"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(HUBBLE[0]) + "\n{not json\n" + json.dumps({"flow": {"l4": {}}}) + "\n")
    refused = run("policy", "generate", "-f", SHOP, "--flows", str(bad))
    assert refused.exit_code == 2
    assert (f"error: {bad}, line 2: not JSON (Expecting property name enclosed in double quotes, column 2); "
            f"{bad}, line 3: flow.IP: a flow needs source and destination addresses") in refused.stderr


def test_a_declared_connection_to_nothing_is_exit_2(tmp_path: Path) -> None:
    wrong = tmp_path / "intended.yaml"
    wrong.write_text("connections:\n  - {from: shop/web, to: shop/apii, port: 8080}\n")
    result = run("policy", "generate", "-f", SHOP, "--connections", str(wrong))
    assert result.exit_code == 2
    assert (f"error: {wrong}, connections[0].to: shop/apii names no workload or pod of this cluster (in shop: "
            "shop/api[Deployment], shop/db[StatefulSet], shop/web[Deployment])") in result.stderr
    unnamed = tmp_path / "port.yaml"
    unnamed.write_text("connections:\n  - {from: shop/web, to: shop/api, port: grpc}\n")
    result = run("policy", "generate", "-f", SHOP, "--connections", str(unnamed))
    assert result.exit_code == 2 and "do not all name a TCP port 'grpc'" in result.stderr


def test_the_proof_the_docs_show_is_what_the_command_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(EXAMPLES.parent)
    text = Path("docs/policy.md").read_text()
    shown = text.split("the proof reads:\n\n```\n", 1)[1].split("\n```", 1)[0]
    out = run("policy", "generate", "-f", "examples/shop", "--connections", "examples/intended/shop.yaml").stdout
    assert shown in out
