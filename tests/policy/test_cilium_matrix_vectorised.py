"""The Cilium matrix, vectorised over classes (policy/cilium/vectors.py ``CiliumSide``), equals the pair-by-pair walk
through the engine (``cilium/evaluate.side_set``) on randomised but seeded clusters that mix what the walk reads:
CiliumNetworkPolicy and CiliumClusterwideNetworkPolicy (with a namespace restriction), Kubernetes NetworkPolicies
beside them, ingress/egress allow rules and ingressDeny/egressDeny, endpoints by labels and by namespace, entities
(world, cluster, host, remote-node, kube-apiserver, all), CIDRs with except, toServices, toFQDNs with and without
their DNS rule, ports by number, name and protocol, enableDefaultDeny false, hostNetwork pods and replicas alike,
service accounts and selectors on the label Cilium derives from them.
Both Cilium settings (kube-proxy replacement or not). A disagreement in any cell fails, naming the seed and the
cell."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
import yaml

from knetsim import Cluster
from knetsim.cluster.config import ClusterConfig

from .helpers import assert_same_cells, cnp, netpol, ns, pod, vectorised_and_pairwise

NAMESPACES = {"shop": {"env": "prod"}, "pay": {"env": "prod"}, "dev": {"env": "dev"}}
APPS = ["web", "api", "db"]
ENTITIES = ["world", "cluster", "host", "remote-node", "kube-apiserver", "all"]
CIDRS = [{"cidr": "192.0.2.0/24", "except": ["192.0.2.0/28"]}, {"cidr": "10.244.0.0/16"},
         {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]}, {"cidr": "1.1.1.0/24"}]
DNS_RULE = {"toPorts": [{"ports": [{"port": "53", "protocol": "ANY"}], "rules": {"dns": [{"matchPattern": "*"}]}}],
            "toEndpoints": [{"matchLabels": {"k8s-app": "kube-dns", "io.kubernetes.pod.namespace": "kube-system"}}]}


def _endpoints(rng: random.Random) -> dict[str, Any]:
    labels: dict[str, str] = {}
    if rng.random() < 0.6:
        labels["app"] = rng.choice(APPS)
    if rng.random() < 0.4:
        labels["io.kubernetes.pod.namespace"] = rng.choice(list(NAMESPACES))
    if rng.random() < 0.2:
        labels["k8s:io.cilium.k8s.namespace.labels.env"] = rng.choice(["prod", "dev"])
    return {"matchLabels": labels}


def _ports(rng: random.Random) -> list[dict[str, Any]]:
    port = rng.choice(["80", "8080", "http", "metrics", "53", "443", "9000"])
    protocol = rng.choice(["TCP", "TCP", "UDP", "ANY"])
    return [{"ports": [{"port": port, "protocol": protocol}]}]


def _rule(rng: random.Random, direction: str, deny: bool) -> dict[str, Any]:
    side = "from" if direction == "ingress" else "to"
    rule: dict[str, Any] = {}
    kind = rng.choice(["endpoints", "endpoints", "entities", "cidr", "none"] +
                      ([] if deny or direction == "ingress" else ["services", "fqdns"]))
    if kind == "endpoints":
        rule[f"{side}Endpoints"] = [_endpoints(rng) for _ in range(rng.randint(1, 2))]
    elif kind == "entities":
        rule[f"{side}Entities"] = rng.sample(ENTITIES, rng.randint(1, 2))
    elif kind == "cidr":
        rule[f"{side}CIDRSet"] = [rng.choice(CIDRS)]
    elif kind == "services":
        rule["toServices"] = [{"k8sService": {"serviceName": "web", "namespace": rng.choice(list(NAMESPACES))}}]
    elif kind == "fqdns":
        rule["toFQDNs"] = [rng.choice([{"matchName": "one.one.one.one"}, {"matchPattern": "*.google"}])]
    if rng.random() < 0.5 or kind == "fqdns":
        rule["toPorts"] = _ports(rng)
    return rule


def _random_cluster(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    objects: list[dict[str, Any]] = [ns(name, **labels) for name, labels in NAMESPACES.items()]
    for i in range(rng.randint(10, 16)):
        namespace = rng.choice(list(NAMESPACES))
        labels = {"app": rng.choice(APPS)}
        ports = {name: number for name, number in (("http", rng.choice([80, 8080])), ("metrics", 9090))
                 if rng.random() < 0.5}
        node = rng.choice(["worker", "worker2"])
        objects.append(pod(f"{namespace}/p{i}", labels, ports=ports, node=node))
        if rng.random() < 0.3:
            objects.append(pod(f"{namespace}/p{i}-twin", labels, ports=ports, node=node))
    if rng.random() < 0.5:
        # On the control-plane node, where no other pod runs: the walk's "a pod accepts its own node" rule, asked
        # of a class's first pod, would otherwise speak for replicas on other nodes (the rows apply it per pod).
        objects.append(pod(f"{rng.choice(list(NAMESPACES))}/agent", {"app": "db"}, node="control-plane",
                           host_network=True))
    for namespace in NAMESPACES:
        objects.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": namespace},
                        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 80}]}})
    for k in range(rng.randint(3, 7)):
        spec: dict[str, Any] = {"endpointSelector": {"matchLabels": {"app": rng.choice(APPS)}}
                                if rng.random() < 0.7 else {}}
        for direction in ("ingress", "egress"):
            if rng.random() < 0.6:
                spec[direction] = [_rule(rng, direction, False) for _ in range(rng.randint(0, 3))]
                if direction == "egress" and rng.random() < 0.4:
                    spec[direction].append(DNS_RULE)
            if rng.random() < 0.3:
                spec[f"{direction}Deny"] = [_rule(rng, direction, True) for _ in range(rng.randint(1, 2))]
        if rng.random() < 0.2:
            spec["enableDefaultDeny"] = {rng.choice(["ingress", "egress"]): False}
        if rng.random() < 0.35:
            if rng.random() < 0.5:
                spec["endpointSelector"]["matchLabels"] = {
                    **spec["endpointSelector"].get("matchLabels", {}),
                    "io.kubernetes.pod.namespace": rng.choice(list(NAMESPACES))}
            objects.append({"apiVersion": "cilium.io/v2", "kind": "CiliumClusterwideNetworkPolicy",
                            "metadata": {"name": f"c{k}"}, "spec": spec})
        else:
            objects.append(cnp(f"{rng.choice(list(NAMESPACES))}/c{k}", spec))
    # A deny rule makes sure the walk (not the NetworkPolicy tier) decides.
    objects.append(cnp("dev/deny-db", {"endpointSelector": {"matchLabels": {"app": "db"}},
                                       "ingressDeny": [{"fromEndpoints": [{"matchLabels": {"app": "web"}}],
                                                        "toPorts": _ports(rng)}]}))
    for k in range(rng.randint(0, 2)):
        objects.append(netpol(f"{rng.choice(list(NAMESPACES))}/k{k}", {
            "podSelector": {"matchLabels": {"app": rng.choice(APPS)}},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": rng.choice(APPS)}}}],
                         "ports": [{"port": rng.choice([80, "http"])}]}]}))
    return _with_accounts(objects, seed)


ACCOUNTS = ["default", "sa-a", "sa-b"]


def _with_accounts(objects: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """Service accounts on the pods (a twin may run under another one than its labels' twin) and selectors on the
    label Cilium derives from it, drawn from a generator of their own so the rest of each seed's cluster stays
    as it was."""
    rng = random.Random(f"accounts-{seed}")
    objects = copy.deepcopy(objects)  # DNS_RULE is shared: a selector added to it must not reach other seeds
    for obj in objects:
        if obj["kind"] == "Pod" and rng.random() < 0.6:
            obj["spec"]["serviceAccountName"] = rng.choice(ACCOUNTS)
        if obj["kind"] not in ("CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy"):
            continue
        spec = obj["spec"]
        selectors = [spec.setdefault("endpointSelector", {})]
        for section in ("ingress", "egress", "ingressDeny", "egressDeny"):
            for rule in spec.get(section) or ():
                selectors += rule.get("fromEndpoints") or rule.get("toEndpoints") or []
        for selector in selectors:
            if rng.random() < 0.25:
                key = rng.choice(["io.cilium.k8s.policy.serviceaccount", "k8s:io.cilium.k8s.policy.serviceaccount"])
                selector.setdefault("matchLabels", {})[key] = rng.choice(ACCOUNTS)
    return objects


@pytest.mark.parametrize("seed", range(12))
def test_vectorised_cilium_matrix_equals_the_pair_by_pair_walk(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    text = yaml.safe_dump_all(_random_cluster(seed), sort_keys=False)
    config = ClusterConfig(dataplane="ebpf") if seed % 2 else ClusterConfig(cni="cilium")
    state = Cluster.from_yaml(text, config=config).state
    for kwargs in ({"pods": True, "all_external": True}, {"pods": False}, {"pods": False, "word_bits": 3}):
        vectorised, pairwise = vectorised_and_pairwise(state, monkeypatch, **kwargs)
        assert "evaluated under Cilium's deny-before-allow walk over classes of pods alike" in vectorised["notes"]
        assert "evaluated pair by pair under Cilium's deny-before-allow walk" in pairwise["notes"]
        key = "pods" if kwargs["pods"] else "workloads"
        assert vectorised[key] == pairwise[key]
        got = assert_same_cells(vectorised, pairwise, f"seed {seed} {kwargs}")
        assert len(got) > 0


def test_the_random_clusters_exercise_what_they_claim() -> None:
    # The comparison proves little if the generator never produced the hard parts: count them over the seeds.
    text = yaml.safe_dump_all([o for seed in range(12) for o in _random_cluster(seed)], sort_keys=False)
    for needle in ("ingressDeny", "egressDeny", "CiliumClusterwideNetworkPolicy", "toEntities", "fromEntities",
                   "remote-node", "kube-apiserver", "toCIDRSet", "except", "toServices", "toFQDNs", "matchPattern",
                   "enableDefaultDeny", "hostNetwork: true", "port: http", "protocol: ANY", "NetworkPolicy",
                   "dns:", "serviceAccountName: sa-a", "io.cilium.k8s.policy.serviceaccount: sa-b"):
        assert needle in text, needle
