"""The network-policy-api conformance suite, transcribed (tests/data/network-policy-api-conformance).

Every ``PokeServer`` of the upstream suite becomes one expectation on knetsim's verdicts: the
policy check (``evaluate``), the per-pair connection set (what kernel mode enforces) and the
pod-level connectivity matrix must all say "connects" or "does not". The ClusterNetworkPolicy
edits between pokes are replayed on the objects, which are admitted again as a cluster would.
Where the policies have v1alpha1 equivalents the same pokes run against AdminNetworkPolicy /
BaselineAdminNetworkPolicy objects too.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from knetsim.cluster.state import ClusterState
from knetsim.policy import connections, evaluate
from knetsim.policy.matrix import matrix
from knetsim.policy.render import verdict_text

from .helpers import state

DATA = Path(__file__).resolve().parent.parent / "data" / "network-policy-api-conformance"
PREFIX = "network-policy-conformance-"


# conformance/base/manifests.yaml: house -> (StatefulSet, its containers' named ports); two replicas each.
HOUSES = {
    "gryffindor": ("harry-potter", [("web", 80, "TCP"), ("dns", 53, "UDP")]),
    "slytherin": ("draco-malfoy", [("web", 80, "TCP"), ("dns", 53, "UDP")]),
    "hufflepuff": ("cedric-diggory", [("web", 80, "TCP"), ("dns", 53, "UDP")]),
    "ravenclaw": ("luna-lovegood", [("web", 80, "TCP"), ("dns", 53, "UDP")]),
    # On the host network, serving on the suite's host ports (34345 + N).
    "forbidden-forrest": ("centaur", [("web-34345", 34345, "TCP"), ("web-34346", 34346, "TCP"),
                                      ("dns-34347", 34347, "UDP"), ("dns-34349", 34349, "UDP")]),
}


def base_cluster() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for house, (name, ports) in HOUSES.items():
        labels = {"conformance-house": house}
        out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PREFIX + house, "labels": labels}})
        pod: dict[str, Any] = {"containers": [
            {"name": f"{name}-{port}", "image": "registry.k8s.io/e2e-test-images/agnhost:2.45",
             "ports": [{"containerPort": port, "protocol": protocol, "name": port_name}]}
            for port_name, port, protocol in ports]}
        if house == "forbidden-forrest":
            pod["hostNetwork"] = True
        out.append({"apiVersion": "apps/v1", "kind": "StatefulSet",
                    "metadata": {"name": name, "namespace": PREFIX + house},
                    "spec": {"selector": {"matchLabels": labels}, "replicas": 2,
                             "template": {"metadata": {"labels": labels}, "spec": pod}}})
    return out


BASE = base_cluster()


def _cases() -> Iterator[Any]:
    for path in sorted((DATA / "cases").glob("*.yaml")):
        for test in yaml.safe_load(path.read_text())["tests"]:
            # The suite's experimental tests run on a cluster with the experimental channel's CRDs.
            test = {**test, "experimental": "experimental" in path.stem}
            yield pytest.param(test, id=f"{path.stem}:{test['name']}")


CASES = list(_cases())


def _ref(short: str) -> str:
    return PREFIX + short


def _find(objects: list[dict[str, Any]], kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    for o in objects:
        meta = o["metadata"]
        if o["kind"] == kind and meta["name"] == name and (namespace is None or meta.get("namespace") == namespace):
            return o
    raise KeyError(f"{kind} {namespace or ''}/{name}")


def _ips(s: ClusterState, value: Any) -> Any:
    """``{ns/pod}`` placeholders in an edit: that pod's IP."""
    if isinstance(value, str):
        return re.sub(r"\{([\w-]+)/([\w-]+)\}", lambda m: s.pods[f"{_ref(m.group(1))}/{m.group(2)}"].pod_ip, value)
    if isinstance(value, list):
        return [_ips(s, v) for v in value]
    if isinstance(value, dict):
        return {k: _ips(s, v) for k, v in value.items()}
    return value


def apply_edit(objects: list[dict[str, Any]], edit: dict[str, Any], s: ClusterState) -> None:
    """One edit of the suite, in place (``swap``, ``set``, ``prepend_rule``, ``namespace_labels``, ``delete``)."""
    (op, args), = edit.items()
    if op == "swap":
        rules = _find(objects, "ClusterNetworkPolicy", args["policy"])["spec"][args["rules"]]
        rules[args["i"]], rules[args["j"]] = rules[args["j"]], rules[args["i"]]
    elif op == "set":
        target: Any = _find(objects, "ClusterNetworkPolicy", args["policy"])
        *path, last = args["path"]
        for key in path:
            target = target[key]
        target[last] = copy.deepcopy(args["value"])
    elif op == "prepend_rule":
        policy = _find(objects, "ClusterNetworkPolicy", args["policy"])
        policy["spec"][args["rules"]].insert(0, _ips(s, args["rule"]))
    elif op == "namespace_labels":
        _find(objects, "Namespace", _ref(args["namespace"]))["metadata"]["labels"] = dict(args["labels"])
    elif op == "delete":
        objects.remove(_find(objects, args["kind"], args["name"], _ref(args["namespace"])))
    else:
        raise AssertionError(f"unknown edit {op}")


# --- v1alpha1: the same policies as AdminNetworkPolicy / BaselineAdminNetworkPolicy -------------


def _v1alpha1_ports(protocols: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    out = []
    for p in protocols:
        if "destinationNamedPort" in p:
            return None  # v1alpha1's namedPort is experimental-channel only
        (proto, spec), = p.items()
        port = spec["destinationPort"]
        if "number" in port:
            out.append({"portNumber": {"protocol": proto.upper(), "port": port["number"]}})
        else:
            out.append({"portRange": {"protocol": proto.upper(), **port["range"]}})
    return out


def _v1alpha1_pods(selector: dict[str, Any]) -> dict[str, Any]:
    return {"namespaceSelector": selector.get("namespaceSelector") or {}, "podSelector": selector["podSelector"]}


def to_v1alpha1(objects: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The objects with every ClusterNetworkPolicy as its v1alpha1 kind; None when one has no equivalent."""
    baseline = [o for o in objects if o["kind"] == "ClusterNetworkPolicy" and o["spec"]["tier"] == "Baseline"]
    if len(baseline) > 1 or any(o["metadata"]["name"] != "default" for o in baseline):
        return None  # the BaselineAdminNetworkPolicy is a singleton named default
    out = []
    for o in objects:
        if o["kind"] != "ClusterNetworkPolicy":
            out.append(o)
            continue
        spec = copy.deepcopy(o["spec"])
        admin = spec.pop("tier") == "Admin"
        if not admin:
            spec.pop("priority")
        subject = spec["subject"]
        if "pods" in subject:
            subject["pods"] = _v1alpha1_pods(subject["pods"])
        for direction, side in (("ingress", "from"), ("egress", "to")):
            for rule in spec.get(direction, []):
                if rule["action"] == "Pass" and not admin:
                    return None
                rule["action"] = "Allow" if rule["action"] == "Accept" else rule["action"]
                for peer in rule[side]:
                    if "pods" in peer:
                        peer["pods"] = _v1alpha1_pods(peer["pods"])
                if "protocols" in rule:
                    ports = _v1alpha1_ports(rule.pop("protocols"))
                    if ports is None:
                        return None
                    rule["ports"] = ports
        kind = "AdminNetworkPolicy" if admin else "BaselineAdminNetworkPolicy"
        out.append({"apiVersion": "policy.networking.k8s.io/v1alpha1", "kind": kind, "metadata": o["metadata"],
                    "spec": spec})
    return out


# --- the runner ------------------------------------------------------------------------------


def run_test(test: dict[str, Any], convert: Callable[[list[dict[str, Any]]], list[dict[str, Any]] | None]) -> int:
    """Replays one ConformanceTest; returns how many pokes it checked (0: no v1alpha1 equivalent)."""
    objects = copy.deepcopy(BASE) + copy.deepcopy(test["objects"])
    pokes = 0
    current: tuple[ClusterState, Any] | None = None
    for step in test["steps"]:
        for item in step["do"]:
            if "poke" not in item:
                s = current[0] if current else state(*objects, experimental=test["experimental"])
                apply_edit(objects, item, s)
                current = None
                continue
            if current is None:
                converted = convert(objects)
                if converted is None:
                    return 0
                s = state(*converted, experimental=test["experimental"])
                current = (s, matrix(s, pods=True))
            s, m = current
            client, server, protocol, port, should = item["poke"]
            src, dst = f"{_ref(client)}", f"{_ref(server)}"
            verdict = evaluate(s, src, dst, int(port), protocol.upper())
            where = f"{test['name']} / {step['run']}: {client} -> {server} {protocol}/{port}"
            assert verdict.allowed is should, f"{where}\n{verdict_text(verdict)}"
            assert connections(s, src, dst).contains(protocol.upper(), int(port)) is should, where
            assert m.allowed_between(src, dst).contains(protocol.upper(), int(port)) is should, where
            pokes += 1
    return pokes


@pytest.mark.parametrize("test", CASES)
def test_cluster_network_policy_conformance(test: dict[str, Any]) -> None:
    assert run_test(test, lambda objects: objects) > 0


@pytest.mark.parametrize("test", CASES)
def test_admin_network_policy_v1alpha1_conformance(test: dict[str, Any]) -> None:
    run_test(test, to_v1alpha1)


def test_the_transcription_is_whole() -> None:
    # 22 test files upstream, 24 ConformanceTests (two files hold two each); every one is here.
    names = [c.values[0]["name"] for c in CASES]
    assert len(names) == len(set(names)) == 24
    pokes = sum(len([i for s in c.values[0]["steps"] for i in s["do"] if "poke" in i]) for c in CASES)
    assert pokes >= 200
    assert sum(1 for c in CASES if run_test(c.values[0], to_v1alpha1)) >= 12
