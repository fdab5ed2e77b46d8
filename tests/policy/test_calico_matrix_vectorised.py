"""The Calico matrix, vectorised over classes (policy/matrix.py ``CalicoTier``), equals the pair-by-pair walk
through the engine (``calico/evaluate.side_sets``) on randomised but seeded clusters that mix everything the walk
reads: several tiers (Pass and Deny default actions, the default tier's too), GlobalNetworkPolicy and NetworkPolicy
with selector, namespaceSelector and serviceAccountSelector, ordered Allow / Deny / Pass / Log rules, protocols by
name and number, notProtocol, ports, ranges, named ports, notPorts, source ports, nets and notNets, selector,
notSelector, namespaceSelector (global() too), serviceAccounts, network sets, and Kubernetes NetworkPolicies in the
default tier. A disagreement in any cell fails, naming the seed and the cell."""

from __future__ import annotations

import random
from typing import Any

import pytest
import yaml

from knetsim import Cluster
from knetsim.cluster.config import ClusterConfig

from .helpers import assert_same_cells, clusterpolicy, netpol, ns, pod, vectorised_and_pairwise

NAMESPACES = {"shop": {"env": "prod", "team": "a"}, "pay": {"env": "prod", "team": "b"},
              "dev": {"env": "dev", "team": "a"}, "ops": {"env": "ops"}}
APPS = ["web", "api", "db", "cache", "job"]
ROLES = ["frontend", "backend", "batch"]
ACCOUNTS = ["default", "svc-a", "svc-b"]
SELECTORS = ["all()", "app == 'web'", "app != 'db'", "role in {'frontend', 'batch'}", "has(role)", "!has(role)",
             "app starts with 'ca'", "role not in {'backend'}", "app == 'api' || role == 'batch'",
             "(app == 'db' && role == 'backend') || app ends with 'eb'", "app contains 'o'",
             "projectcalico.org/namespace == 'shop'", "pcns.env == 'prod'",
             "projectcalico.org/serviceaccount == 'svc-a'",
             "pcsa.tier == 'gold'", "kind == 'edge'"]
NS_SELECTORS = ["all()", "env == 'prod'", "team == 'a'", "projectcalico.org/name == 'dev'", "!has(team)", "global()"]
NETS = ["10.244.1.0/24", "10.244.0.0/16", "192.0.2.0/24", "192.0.2.128/25", "0.0.0.0/0", "198.51.100.7/32",
        "172.18.0.0/24"]
PORTS: list[Any] = [80, 443, 8080, "8000:8100", "http", "metrics", "dns", 53, "1:1024", 5432]


def _random_entity(rng: random.Random, protocol: str | None, global_policy: bool) -> dict[str, Any]:
    entity: dict[str, Any] = {}
    if rng.random() < 0.4:
        entity["selector"] = rng.choice(SELECTORS)
    if rng.random() < 0.15:
        entity["notSelector"] = rng.choice(SELECTORS[1:])
    if rng.random() < 0.3:
        entity["namespaceSelector"] = rng.choice(NS_SELECTORS)
    if rng.random() < 0.15:
        entity["serviceAccounts"] = rng.choice([{"names": ["svc-a"]}, {"selector": "tier == 'gold'"},
                                                {"names": ["default", "svc-b"]}])
    if rng.random() < 0.25:
        entity["nets"] = rng.sample(NETS, rng.randint(1, 2))
    if rng.random() < 0.1:
        entity["notNets"] = [rng.choice(NETS)]
    if protocol in ("TCP", "UDP") and rng.random() < 0.5:
        entity["ports"] = rng.sample(PORTS, rng.randint(1, 3))
    if protocol in ("TCP", "UDP") and rng.random() < 0.15:
        entity["notPorts"] = rng.sample(PORTS, 1)
    return entity


def _random_rule(rng: random.Random, global_policy: bool) -> dict[str, Any]:
    rule: dict[str, Any] = {"action": rng.choice(["Allow", "Allow", "Deny", "Pass", "Log"])}
    protocol = rng.choice([None, "TCP", "TCP", "UDP", "ICMP", 47])
    if protocol is not None:
        rule["protocol"] = protocol
    if rng.random() < 0.1:
        rule["notProtocol"] = rng.choice(["UDP", "ICMP"])
    if rng.random() < 0.05:
        rule["ipVersion"] = rng.choice([4, 6])
    text = protocol if isinstance(protocol, str) else None
    source = _random_entity(rng, text, global_policy)
    if text in ("TCP", "UDP") and rng.random() < 0.1:
        source["ports"] = [rng.choice(["1:65535", 80, "30000:65535"])]
    destination = _random_entity(rng, text, global_policy)
    if source:
        rule["source"] = source
    if destination:
        rule["destination"] = destination
    return rule


def _random_cluster(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    objects: list[dict[str, Any]] = [ns(name, **labels) for name, labels in NAMESPACES.items()]
    for namespace in NAMESPACES:
        objects.append({"apiVersion": "v1", "kind": "ServiceAccount",
                        "metadata": {"name": "svc-a", "namespace": namespace,
                                     "labels": {"tier": rng.choice(["gold", "silver"])}}})
    for i in range(rng.randint(14, 22)):
        namespace = rng.choice(list(NAMESPACES))
        labels = {"app": rng.choice(APPS)}
        if rng.random() < 0.6:
            labels["role"] = rng.choice(ROLES)
        if rng.random() < 0.1:
            labels["kind"] = "edge"
        ports = {name: number for name, number in (("http", rng.choice([80, 8080, 8050])),
                                                    ("metrics", rng.choice([9100, 9090])))
                 if rng.random() < 0.5}
        udp = {"dns": 53} if rng.random() < 0.2 else None
        account = rng.choice(ACCOUNTS)

        def tweak(body: dict[str, Any], account: str = account) -> None:
            body["spec"]["serviceAccountName"] = account
        node = rng.choice(["worker", "worker2"])
        objects.append(pod(f"{namespace}/p{i}", labels, ports=ports, udp=udp, node=node, tweak=tweak))
        if rng.random() < 0.3:  # a replica alike: one class of two pods
            objects.append(pod(f"{namespace}/p{i}-twin", labels, ports=ports, udp=udp, node=node, tweak=tweak))
    if rng.random() < 0.5:  # a hostNetwork pod: it sends and receives as its node
        objects.append(pod(f"{rng.choice(list(NAMESPACES))}/agent", {"app": "job"},
                           node=rng.choice(["worker", "worker2"]), host_network=True))
    objects.append({"apiVersion": "projectcalico.org/v3", "kind": "GlobalNetworkSet",
                    "metadata": {"name": "docs", "labels": {"kind": "edge", "app": "web"}},
                    "spec": {"nets": ["192.0.2.0/25"]}})
    objects.append({"apiVersion": "projectcalico.org/v3", "kind": "NetworkSet",
                    "metadata": {"name": "partners", "namespace": "shop", "labels": {"role": "frontend"}},
                    "spec": {"nets": ["198.51.100.0/24"]}})
    tiers = [("security", 100, rng.choice(["Pass", "Deny"])), ("platform", 200, rng.choice(["Pass", "Deny"]))]
    for name, order, action in tiers:
        objects.append({"apiVersion": "projectcalico.org/v3", "kind": "Tier", "metadata": {"name": name},
                        "spec": {"order": order, "defaultAction": action}})
    if rng.random() < 0.3:
        objects.append({"apiVersion": "projectcalico.org/v3", "kind": "Tier", "metadata": {"name": "default"},
                        "spec": {"defaultAction": "Pass"}})
    for k in range(rng.randint(6, 12)):
        tier = rng.choice(["security", "platform", "default", "default"])
        global_policy = rng.random() < 0.5
        spec: dict[str, Any] = {"tier": tier, "selector": rng.choice(SELECTORS)}
        if rng.random() < 0.8:
            spec["order"] = rng.choice([10, 20, 20, 500, 1000, 1500])
        if global_policy and rng.random() < 0.3:
            spec["namespaceSelector"] = rng.choice(NS_SELECTORS[:-1])
        if rng.random() < 0.2:
            spec["serviceAccountSelector"] = rng.choice(["tier == 'gold'", "projectcalico.org/name == 'svc-a'"])
        for direction in ("ingress", "egress"):
            if rng.random() < 0.75:
                spec[direction] = [_random_rule(rng, global_policy) for _ in range(rng.randint(0, 4))]
        if rng.random() < 0.5:
            spec["types"] = rng.choice([["Ingress"], ["Egress"], ["Ingress", "Egress"]])
        name = f"p{k}" if tier == "default" else f"{tier}.p{k}"
        if global_policy:
            objects.append({"apiVersion": "projectcalico.org/v3", "kind": "GlobalNetworkPolicy",
                            "metadata": {"name": name}, "spec": spec})
        else:
            objects.append({"apiVersion": "projectcalico.org/v3", "kind": "NetworkPolicy",
                            "metadata": {"name": name, "namespace": rng.choice(list(NAMESPACES))}, "spec": spec})
    for k in range(rng.randint(0, 3)):  # Kubernetes NetworkPolicies: the default tier at order 1000
        peer = rng.choice([{"podSelector": {"matchLabels": {"app": rng.choice(APPS)}}},
                           {"namespaceSelector": {"matchLabels": {"env": "prod"}}},
                           {"ipBlock": {"cidr": "192.0.2.0/24", "except": ["192.0.2.0/28"]}},
                           {"ipBlock": {"cidr": "10.244.0.0/16"}}])
        rule: dict[str, Any] = {"from": [peer]}
        if rng.random() < 0.5:
            rule["ports"] = [{"port": rng.choice([80, "http", "metrics"])}]
        objects.append(netpol(f"{rng.choice(list(NAMESPACES))}/k{k}", {
            "podSelector": {"matchLabels": {"app": rng.choice(APPS)}} if rng.random() < 0.7 else {},
            "policyTypes": rng.choice([["Ingress"], ["Ingress", "Egress"]]), "ingress": [rule],
            "egress": [{"to": [peer]}] if rng.random() < 0.5 else []}))
    return objects


def _cluster_policies(seed: int) -> list[dict[str, Any]]:
    """ClusterNetworkPolicies (Calico's kube-admin and kube-baseline tiers) and Calico policies placed in those tiers,
    ordered among them by priority as order: from a generator of their own, so the seeds above stay as they were."""
    rng = random.Random(seed + 1000)
    objects: list[dict[str, Any]] = []
    for k in range(rng.randint(2, 5)):
        tier = rng.choice(["Admin", "Admin", "Baseline"])
        subject: dict[str, Any] = rng.choice([
            {"namespaces": {"matchLabels": {"env": "prod"}}},
            {"pods": {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": rng.choice(APPS)}}}},
            {"pods": {"namespaceSelector": {"matchLabels": {"team": "a"}}, "podSelector": {}}}])
        pods = {"namespaceSelector": {}, "podSelector": {"matchLabels": {"app": rng.choice(APPS)}}}
        peer = rng.choice([{"namespaces": {"matchLabels": {"env": rng.choice(["prod", "dev", "ops"])}}}, {"pods": pods},
                           {"networks": [rng.choice(["192.0.2.0/24", "10.244.0.0/16", "0.0.0.0/0"])]}])
        rule: dict[str, Any] = {"name": f"r{k}", "action": rng.choice(["Accept", "Deny", "Pass"])}
        if rng.random() < 0.5:
            port = rng.choice([{"number": 80}, {"range": {"start": 8000, "end": 8100}}])
            rule["protocols"] = [{"tcp": {"destinationPort": port}}]
        if rng.random() < 0.2:
            rule["protocols"] = [{"destinationNamedPort": rng.choice(["http", "metrics"])}]
        direction = rng.choice(["ingress", "egress"])
        if "networks" in peer and direction == "ingress":
            direction = "egress"  # networks are egress peers only
        rule["from" if direction == "ingress" else "to"] = [peer]
        objects.append(clusterpolicy(f"cnp-{k}", tier, rng.choice([10, 20, 20, 1000]), subject,
                                     **{direction: [rule]}))
    if rng.random() < 0.6:  # a Calico policy in kube-admin, ordered among the cluster policies
        objects.append({"apiVersion": "projectcalico.org/v3", "kind": "GlobalNetworkPolicy",
                        "metadata": {"name": "kube-admin.calico-there"},
                        "spec": {"tier": "kube-admin", "order": rng.choice([5, 20, 2000]),
                                 "selector": rng.choice(SELECTORS),
                                 "ingress": [_random_rule(rng, True) for _ in range(rng.randint(1, 2))]}})
    return objects




@pytest.mark.parametrize("seed", range(12))
def test_vectorised_calico_matrix_equals_the_pair_by_pair_walk(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    text = yaml.safe_dump_all(_random_cluster(seed), sort_keys=False)
    state = Cluster.from_yaml(text, config=ClusterConfig(cni="calico")).state
    # word_bits=3: the atoms over several narrow words, as a cluster of ten thousand classes has them.
    for kwargs in ({"pods": True, "all_external": True}, {"pods": False}, {"pods": False, "word_bits": 3}):
        vectorised, pairwise = vectorised_and_pairwise(state, monkeypatch, **kwargs)
        assert "evaluated under Calico's tiers over classes of pods alike" in vectorised["notes"]
        assert "evaluated pair by pair under Calico's tiers" in pairwise["notes"]
        key = "pods" if kwargs["pods"] else "workloads"
        assert vectorised[key] == pairwise[key]
        got = assert_same_cells(vectorised, pairwise, f"seed {seed} {kwargs}")
        assert len(got) > 0


@pytest.mark.parametrize("seed", range(8))
def test_vectorised_calico_matrix_with_cluster_network_policies_equals_the_walk(seed: int,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    text = yaml.safe_dump_all([*_random_cluster(seed), *_cluster_policies(seed)], sort_keys=False)
    state = Cluster.from_yaml(text, config=ClusterConfig(cni="calico")).state
    assert "ClusterNetworkPolicy" in text
    for kwargs in ({"pods": True, "all_external": True}, {"pods": False, "word_bits": 3}):
        vectorised, pairwise = vectorised_and_pairwise(state, monkeypatch, **kwargs)
        assert "evaluated under Calico's tiers over classes of pods alike" in vectorised["notes"]
        assert_same_cells(vectorised, pairwise, f"seed {seed} {kwargs}")


def test_the_random_clusters_exercise_what_they_claim() -> None:
    # The comparison proves little if the generator never produced the hard parts: count them over the seeds.
    text = yaml.safe_dump_all([o for seed in range(12) for o in _random_cluster(seed)], sort_keys=False)
    for needle in ("action: Pass", "action: Deny", "action: Log", "namedPort", "8000:8100", "notSelector",
                   "namespaceSelector: global()", "serviceAccounts", "notNets", "notPorts", "ipBlock",
                   "defaultAction: Deny", "defaultAction: Pass", "GlobalNetworkPolicy", "serviceAccountSelector",
                   "ipVersion", "notProtocol", "hostNetwork: true"):
        if needle == "namedPort":
            assert "- http" in text or "- metrics" in text
            continue
        assert needle in text, needle
