"""One input's objects share what admission made of a content they repeat (model/shapes.py: a Deployment's admitted
spec, a NetworkPolicy's and a Calico policy's rules). That is sound only while nothing changes a stored object in
place: here a whole build (rollouts, pods, policy views) runs over such an input, and every object must still hold
exactly the spec it is admitted with alone."""

from __future__ import annotations

import copy
import json
from typing import Any

from knetsim.cluster.build import build_cluster
from knetsim.cluster.config import ClusterConfig
from knetsim.cluster.state import COLLECTIONS
from knetsim.model import admission
from knetsim.model.loader import BUILTIN, CONTROLLER, Document, Source

RULES = [{"from": [{"namespaceSelector": {"matchLabels": {"team": "a"}}, "podSelector": {}}], "ports": [{"port": 80}]},
         {"from": [{"ipBlock": {"cidr": "192.168.0.0/16", "except": ["192.168.0.0/24"]}}]}]
EGRESS = [{"to": [{"podSelector": {}}]}, {"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"port": 443}]}]
CALICO_RULE = {"action": "Allow", "protocol": "TCP", "destination": {"ports": [80]},
               "source": {"selector": "role == 'frontend'"}}


def _input() -> list[dict[str, Any]]:
    bodies: list[dict[str, Any]] = []
    for n in range(3):
        ns = f"team-{n}"
        bodies.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"team": "a"}}})
        for app in range(3):
            bodies.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"web-{app}",
                                                                                        "namespace": ns},
                           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                                    "template": {"metadata": {"labels": {"app": "web"}},
                                                 "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}})
            bodies.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                           "metadata": {"name": f"p-{app}", "namespace": ns},
                           "spec": {"podSelector": {"matchLabels": {"app": "web"}},
                                    "ingress": RULES[: app + 1], "egress": EGRESS}})
        bodies.append({"apiVersion": "projectcalico.org/v3", "kind": "GlobalNetworkPolicy",
                       "metadata": {"name": f"allow-{n}"},
                       "spec": {"selector": "app == 'web'", "types": ["Ingress"], "ingress": [CALICO_RULE]}})
    return bodies


def test_every_object_of_a_repeating_input_keeps_the_spec_it_is_admitted_with_alone() -> None:
    bodies = _input()
    alone = {}
    for body in bodies:
        obj, _, _ = admission.admit(copy.deepcopy(body))
        alone[(body["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])] = json.dumps(
            obj.get("spec"))
    result = build_cluster([Document(Source("in.yaml", i), copy.deepcopy(b)) for i, b in enumerate(bodies)],
                           ClusterConfig(cni="calico"))
    assert result.errors == []
    built = {}
    for attr in COLLECTIONS:
        for obj in getattr(result.state, attr).values():
            if obj.source is not BUILTIN and obj.source is not CONTROLLER and obj.kind != "Namespace":
                built[(obj.kind, obj.raw["metadata"].get("namespace", ""), obj.raw["metadata"]["name"])] = \
                    json.dumps(obj.raw.get("spec"))
    assert built == {key: spec for key, spec in alone.items() if key[0] != "Namespace"}
    # The sharing itself: the second namespace's policies hold the first one's rule objects.
    policies = result.state.network_policies
    first, second = (next(p.raw for p in policies.values() if p.raw["metadata"]["namespace"] == ns and
                          p.raw["metadata"]["name"] == "p-0") for ns in ("team-0", "team-1"))
    assert first["spec"]["egress"][1] is second["spec"]["egress"][1]
