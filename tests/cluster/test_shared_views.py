"""The build shares what equal content makes equal (issue 30: 10,000 pods of 9,000 templates): a container's view,
a policy's rules, a template's hash label, the DNS Service's address. Sharing must never merge two contents that
differ, nor change what an object's uid is."""

from __future__ import annotations

import copy
import uuid
from typing import Any

from tests.conftest import cluster_from

from knetsim.cluster.config import ClusterConfig
from knetsim.cluster.naming import _template_hash, pod_template_hash
from knetsim.model.objects import Meta, NetworkPolicy, Pod, content_key, stable_uid


def _pod(name: str, namespace: str, container: dict[str, Any], uid: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if uid:
        meta["uid"] = uid
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [container]}}


def _policy(namespace: str, ingress: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "p", "namespace": namespace},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": ingress}}


CONTAINER = {"name": "app", "image": "nginx", "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
             "env": [{"name": "MODE", "value": "a"}]}


def test_a_parsed_object_without_a_uid_has_its_identity_uid_and_a_written_uid_is_kept() -> None:
    assert Pod.parse(_pod("web", "shop", CONTAINER)).meta.uid == stable_uid("Pod", "shop", "web")
    assert Pod.parse(_pod("web", "shop", CONTAINER, uid="1234")).meta.uid == "1234"
    assert Meta("web", "shop").uid == ""  # made by hand, not parsed: no kind to derive one from


def test_an_identity_uid_is_the_uuid5_of_kind_namespace_and_name() -> None:
    # Written out by hand for speed: it must stay uuid.uuid5's answer (version 5, RFC 4122 variant) for any name.
    for kind, namespace, name in [("Pod", "shop", "web"), ("Deployment", "", "x"), ("ReplicaSet", "ns-7", "a-b.c"),
                                  *((f"Kind{i}", f"ns-{i}", f"name-{i * 7919}") for i in range(200))]:
        expected = uuid.uuid5(uuid.UUID("6f1d1c7e-9a43-4d7e-9d55-6b6e6e657473"), f"{kind}/{namespace}/{name}")
        assert stable_uid(kind, namespace, name) == str(expected)


def test_equal_containers_of_different_pods_share_one_view_and_different_ones_do_not() -> None:
    a = Pod.parse(_pod("a", "one", copy.deepcopy(CONTAINER)))
    b = Pod.parse(_pod("b", "two", copy.deepcopy(CONTAINER)))
    other = copy.deepcopy(CONTAINER)
    other["env"][0]["value"] = "b"
    c = Pod.parse(_pod("c", "three", other))
    assert a.containers[0] is b.containers[0]
    assert c.containers[0] is not a.containers[0]
    assert dict(c.containers[0].env) == {"MODE": "b"} and dict(a.containers[0].env) == {"MODE": "a"}


def test_policy_rules_are_shared_by_content_and_exact_types_stay_apart() -> None:
    rule = {"from": [{"podSelector": {"matchLabels": {"role": "web"}}}], "ports": [{"port": 80, "protocol": "TCP"}]}
    one = NetworkPolicy.parse(_policy("one", [copy.deepcopy(rule)]))
    two = NetworkPolicy.parse(_policy("two", [copy.deepcopy(rule)]))
    assert one.ingress[0] is two.ingress[0]
    # 1 and True are equal in Python (and hash alike), but not the same port: kept as written, apart.
    as_int = NetworkPolicy.parse(_policy("a", [{"ports": [{"port": 1}]}]))
    as_bool = NetworkPolicy.parse(_policy("b", [{"ports": [{"port": True}]}]))
    assert as_int.ingress[0].ports[0].port == 1 and as_int.ingress[0].ports[0].port is not True
    assert as_bool.ingress[0].ports[0].port is True


def test_content_key_is_exact_and_falls_back_to_repr_for_what_marshal_does_not_write() -> None:
    assert content_key({"a": [1, "x"]}) == content_key({"a": [1, "x"]})
    assert content_key({"a": 1}) != content_key({"a": True}) != content_key({"a": 1.0})
    assert content_key({"a": 1, "b": 2}) != content_key({"b": 2, "a": 1})  # another order: only a miss

    class Text(str):
        pass

    assert content_key({"a": Text("x")}) == "{'a': 'x'}"


def test_a_template_hash_is_the_same_for_equal_templates_and_changes_with_the_template() -> None:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [copy.deepcopy(CONTAINER)]}}
    again = copy.deepcopy(template)
    changed = copy.deepcopy(template)
    changed["spec"]["containers"][0]["image"] = "nginx:1.27"
    assert pod_template_hash(template) == pod_template_hash(again) == _template_hash(template, 0)
    assert pod_template_hash(changed) == _template_hash(changed, 0) != pod_template_hash(template)
    assert pod_template_hash(template, 1) == _template_hash(template, 1) != pod_template_hash(template)


def test_the_dns_service_address_follows_each_clusters_service_range() -> None:
    assert ClusterConfig().dns_service_ip == "10.96.0.10"
    assert ClusterConfig(service_cidr="10.100.0.0/16").dns_service_ip == "10.100.0.10"
    assert ClusterConfig(service_cidr="10.100.0.0/16").kubernetes_service_ip == "10.100.0.1"


def _deployment(name: str, namespace: str, image: str) -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{{name: app, image: "{image}", ports: [{{containerPort: 80}}]}}]
"""


def test_replica_sets_of_equal_templates_share_one_pod_spec_and_a_different_template_keeps_its_own() -> None:
    text = "---".join([_deployment("web", "one", "nginx:1.27"), _deployment("web", "two", "nginx:1.27"),
                       _deployment("web", "three", "nginx:1.28")])
    cluster = cluster_from(text)
    workloads = cluster.state.workloads
    specs = {}
    for namespace in ("one", "two", "three"):
        (rs,) = [o for (kind, key), o in workloads.items() if kind == "ReplicaSet" and o.namespace == namespace]
        deployment = workloads[("Deployment", f"{namespace}/web")]
        # Each ReplicaSet's template holds its Deployment's pod spec to the byte, whoever's dict it is.
        assert rs.raw["spec"]["template"]["spec"] == deployment.raw["spec"]["template"]["spec"]
        specs[namespace] = rs.raw["spec"]["template"]["spec"]
    assert specs["one"] is specs["two"]
    assert specs["three"] is not specs["one"] and specs["three"]["containers"][0]["image"] == "nginx:1.28"
    images = {p.namespace: p.containers[0].image for p in cluster.state.pods.values()
              if p.namespace in ("one", "two", "three")}
    assert images == {"one": "nginx:1.27", "two": "nginx:1.27", "three": "nginx:1.28"}


def test_pods_sharing_a_containers_list_share_its_views_and_a_changed_list_is_parsed_again() -> None:
    containers = [copy.deepcopy(CONTAINER)]
    a = Pod.parse({**_pod("a", "one", CONTAINER), "spec": {"containers": containers}})
    b = Pod.parse({**_pod("b", "one", CONTAINER), "spec": {"containers": containers}})
    assert a.containers is b.containers
    containers[0] = {**CONTAINER, "image": "nginx:1.28"}  # an item replaced: another list, by content
    assert Pod.parse({**_pod("c", "one", CONTAINER), "spec": {"containers": containers}}).containers[0].image == \
        "nginx:1.28"
    containers.append({"name": "sidecar", "image": "envoy"})
    assert [c.name for c in Pod.parse({**_pod("d", "one", CONTAINER), "spec": {"containers": containers}}
                                      ).containers] == ["app", "sidecar"]
