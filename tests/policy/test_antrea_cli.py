"""Every command names Antrea's verdict chain: the CNI, the tier (and its priority), the policy's priority and the
rule that decided (trace, policy check, policy describe, matrix); Reject is a refusal, Drop a timeout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from knetsim import Cluster
from knetsim.cli.main import cli

from .test_antrea_reachability import acnp, labels, rule, world

REJECT_Z = acnp("drop-z-to-x", 10, [{"namespaceSelector": labels(ns="x")}], tier="securityops",
                ingress=[rule("Reject", [{"namespaceSelector": labels(ns="z")}], name="no-z")])
ANNP = {"apiVersion": "crd.antrea.io/v1beta1", "kind": "NetworkPolicy",
        "metadata": {"name": "only-b", "namespace": "y"},
        "spec": {"priority": 3, "appliedTo": [{"podSelector": labels(pod="a")}],
                 "ingress": [rule("Allow", [{"podSelector": labels(pod="b")}], None, name="from-b"),
                             rule("Drop", None, None, name="the-rest")]}}


@pytest.fixture()
def cluster(tmp_path: Path) -> str:
    path = tmp_path / "antrea.yaml"
    path.write_text(yaml.safe_dump_all([*world(), REJECT_Z, ANNP], sort_keys=False))
    return str(path)


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_policy_check_names_cni_tier_priority_and_rule(cluster: str) -> None:
    result = run("policy", "check", "-f", cluster, "--from", "z/a", "--to", "x/a", "--port", "80")
    assert result.exit_code == 1
    text = result.output
    assert ("ingress of x/a: rejected (the client is refused) by ClusterNetworkPolicy.crd.antrea.io `drop-z-to-x` "
            "ingress[0] `no-z` (Reject; Antrea tier `securityops` priority 100, policy priority 10)") in text
    assert "result: rejected: the client gets a refusal (a TCP RST), so it sees 'connection refused'" in text
    assert "cni: CNI Antrea (inferred from ClusterNetworkPolicy.crd.antrea.io drop-z-to-x" in text
    doc = json.loads(run("policy", "check", "-f", cluster, "--from", "z/a", "--to", "x/a", "--port", "80",
                         "-o", "json").output)
    assert doc["ingress"]["antrea"]["decidedBy"] == {
        "tier": "securityops", "tierPriority": 100, "kind": "ClusterNetworkPolicy.crd.antrea.io",
        "policy": "drop-z-to-x", "priority": 10, "direction": "ingress", "rule": 0, "ruleName": "no-z",
        "action": "Reject"}
    assert doc["ingress"]["antrea"]["rejected"] is True and doc["caveats"] == []


def ip(cluster: str, pod: str) -> str:
    return str(Cluster.from_yaml(Path(cluster).read_text()).state.pods[pod].pod_ip)


def test_trace_refuses_on_reject_and_times_out_on_drop(cluster: str) -> None:
    rejected = run("trace", "-f", cluster, "--from", "z/a", f"{ip(cluster, 'x/a')}:80").output
    assert "Outcome: refused" in rejected
    assert "Antrea tier `securityops` priority 100" in rejected and "the client is refused (TCP RST)" in rejected
    dropped = run("trace", "-f", cluster, "--from", "y/c", f"{ip(cluster, 'y/a')}:80").output
    assert "Outcome: timeout" in dropped
    assert "NetworkPolicy.crd.antrea.io `y/only-b` ingress[1] `the-rest` (Drop; Antrea tier `application`" in dropped


def test_policy_describe_an_acnp_and_an_annp(cluster: str) -> None:
    text = run("policy", "describe", "-f", cluster, "acnp/drop-z-to-x").output
    assert "Kind:         ClusterNetworkPolicy.crd.antrea.io\n" in text
    assert "CNI:          CNI Antrea (inferred" in text
    assert "Tier:         securityops (tier priority 100; before Kubernetes NetworkPolicy)\n" in text
    assert "Priority:     10\n" in text and "Selects:      3 pod(s): x/a, x/b, x/c\n" in text
    assert "  Rule 1 (spec.ingress[0] `no-z`): Reject from namespaces ns=z; TCP port 80\n" in text
    assert run("policy", "describe", "-f", cluster, "clusternetworkpolicy/drop-z-to-x").output == text
    annp = run("policy", "describe", "-f", cluster, "-n", "y", "only-b").output
    assert "Kind:         NetworkPolicy.crd.antrea.io\n" in annp and "Namespace:    y\n" in annp
    assert "  Rule 2 (spec.ingress[1] `the-rest`): Drop from any peer; any port\n" in annp
    doc = json.loads(run("policy", "describe", "-f", cluster, "-n", "y", "only-b", "-o", "json").output)
    assert doc["tier"] == "application" and doc["tierPriority"] == 250 and doc["selectedPods"] == ["y/a"]


def test_matrix_follows_antrea_pair_by_pair(cluster: str) -> None:
    doc = json.loads(run("matrix", "-f", cluster, "--pods", "-o", "json").output)
    allowed = {(c["from"], c["to"]): c["allowed"] for c in doc["connections"]}
    # The Reject rule names TCP 80 only: every other port of z/a -> x/a stays open.
    assert allowed[("z/a", "x/a")] == [{"protocol": "SCTP", "ports": [[1, 65535]]},
                                       {"protocol": "TCP", "ports": [[1, 79], [81, 65535]]},
                                       {"protocol": "UDP", "ports": [[1, 65535]]}]
    assert allowed[("x/a", "z/a")] == "all"
    assert allowed[("y/b", "y/a")] == "all" and ("y/c", "y/a") not in allowed
    assert "evaluated pair by pair under Antrea's tiers" in doc["notes"]


def test_validate_says_the_kinds_are_read_as_antrea_does(cluster: str) -> None:
    result = CliRunner().invoke(cli, ["validate", "-f", cluster])
    assert "is Antrea's and its CustomResourceDefinition is not in the input: checked by Antrea's fields as knetsim " \
           "declares them; policy answers read it as Antrea does" in result.output
    assert "kept but not simulated" not in result.output


def test_the_fix_of_a_baseline_drop_is_a_networkpolicy() -> None:
    from knetsim.policy import evaluate

    from .test_antrea_reachability import build

    s = build(acnp("base", 1, [{"namespaceSelector": labels(ns="x")}], tier="baseline", ingress=[rule("Drop")]))
    side = evaluate(s, "y/a", "x/a", 80).ingress
    assert side.fix("TCP/80").endswith("a NetworkPolicy of its namespace that selects it and allows this traffic "
                                       "(TCP/80) comes before the baseline tier")
    s = build(REJECT_Z)
    assert evaluate(s, "z/a", "x/a", 80).ingress.fix("TCP/80").endswith(
        "add an Allow (or Pass) rule for this traffic (TCP/80) in a tier evaluated before it, or in its tier at a "
        "lower priority")


def test_to_services_drops_traffic_to_the_cluster_ip_and_not_to_the_endpoint(tmp_path: Path) -> None:
    """docs/antrea-network-policy.md, "ACNP for toServices rule" and "toServices egress rules": the rule matches the
    Service's cluster IP (AntreaProxy's Service group), and "direct access to the Endpoints of this Service is not
    affected". A Drop from z/a to Service x/web: `trace` to the Service times out in that rule; to the pod's own
    address it connects; `policy describe` says what the rule matches."""
    web = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "x"},
           "spec": {"selector": {"pod": "a"}, "ports": [{"port": 80}]}}
    drop = acnp("acnp-drop-to-services", 5, [{"podSelector": labels(pod="a"), "namespaceSelector": labels(ns="z")}],
                tier="securityops", egress=[{"action": "Drop", "name": "DropToServices",
                                             "toServices": [{"name": "web", "namespace": "x"}]}])
    path = tmp_path / "svc.yaml"
    path.write_text(yaml.safe_dump_all([*world(), web, drop], sort_keys=False))
    cluster = str(path)
    state = Cluster.from_yaml(path.read_text()).state
    via_service = run("trace", "-f", cluster, "--from", "z/a", "web.x:80").output
    assert "Outcome: timeout" in via_service, via_service
    assert "egress of z/a: dropped by ClusterNetworkPolicy.crd.antrea.io `acnp-drop-to-services` egress[0] " \
           "`DropToServices` (Drop; Antrea tier `securityops`" in via_service
    direct = run("trace", "-f", cluster, "--from", "z/a", f"{state.pods['x/a'].pod_ip}:80").output
    assert "Outcome: connected" in direct, direct
    other = run("trace", "-f", cluster, "--from", "z/b", "web.x:80").output
    assert "Outcome: connected" in other, other
    text = run("policy", "describe", "-f", cluster, "acnp/acnp-drop-to-services").output
    assert "Rule 1 (spec.egress[0] `DropToServices`): Drop to Service x/web (by its cluster IP); any port of it" \
           in text, text
    assert "not simulated" not in text
    check = run("policy", "check", "-f", cluster, "--from", "z/a", "--to", "x/a", "--port", "80").output
    assert check.startswith("ALLOWED") and "ClusterNetworkPolicy.crd.antrea.io acnp-drop-to-services egress[0] " \
        "(Drop) matches what z/a addresses to Service x/web by its cluster IP, not this connection" in check, check
    notes = json.loads(run("matrix", "-f", cluster, "-o", "json").output)["notes"]
    assert any("toServices rules (ClusterNetworkPolicy.crd.antrea.io acnp-drop-to-services egress[0]) match only "
               "traffic addressed to a Service's cluster IP" in n for n in notes), notes
