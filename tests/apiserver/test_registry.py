"""One strategy per kind, one write path: create, update, subresources, scale and delete in the registry.

Given an API server in process (its controllers running), each scenario writes as a client would and
reads what the registry and the controllers left. Deletion follows the generic store: an object with
finalizers is marked (deletionTimestamp) until they are done; ``orphan`` and ``foregroundDeletion``
are the garbage collector's, a namespace's ``kubernetes`` the namespace controller's.

Address plan: DESIGN defaults (nodes 172.18.0.2-4, pods 10.244.0.0/16, services 10.96.0.0/12).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.apiserver.conftest import Live
from tests.apiserver.inprocess import Cluster, run

from knetsim.apiserver.errors import ApiError
from knetsim.apiserver.registry import DeleteOptions, Target, WriteOptions
from knetsim.apiserver.resources import BY_KIND, RESOURCES
from knetsim.model.kinds import KINDS
from knetsim.model.strategy import GENERIC, STRATEGIES, Propagation, StatusPolicy, drop_type_dependent_fields

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
              "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                       "template": {"metadata": {"labels": {"app": "web"}},
                                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}}


def delete(cluster: Cluster, kind: str, name: str, namespace: str = "default", **options: Any) -> Any:
    r = BY_KIND[kind]
    return cluster.server.registry.delete(Target(r, namespace if r.namespaced else "", name, ""),
                                          DeleteOptions(**options))


def names(cluster: Cluster, kind: str, namespace: str = "default") -> list[str]:
    return sorted(s.body["metadata"]["name"] for s in cluster.server.store.list(kind, namespace))


# --- strategies -------------------------------------------------------------------------------


def test_every_simulated_built_in_kind_has_a_strategy_of_its_own() -> None:
    # A kind knetsim simulates without a strategy would silently get the generic store's behaviour.
    missing = [k.kind for k in KINDS if k.simulated and not k.crd and k.kind not in STRATEGIES]
    assert missing == []
    for kind, strategy in STRATEGIES.items():
        assert strategy.kind == kind and strategy is not GENERIC


def test_discovery_lists_what_each_strategy_serves() -> None:
    for r in RESOURCES:
        if r.crd or not r.simulated or r.kind not in STRATEGIES:
            continue
        assert r.subresources == STRATEGIES[r.kind].all_subresources, r.kind
    assert BY_KIND["Deployment"].subresources == ("scale", "status")
    assert BY_KIND["Namespace"].subresources == ("finalize", "status")
    assert STRATEGIES["Pod"].status is StatusPolicy.SUBRESOURCE


def _node_port_service(ports: list[tuple[int, int]]) -> dict[str, Any]:
    return {"kind": "Service", "spec": {"type": "NodePort", "ports": [
        {"port": p, "protocol": "TCP", "targetPort": p, "nodePort": n} for p, n in ports]}}


@pytest.mark.parametrize("new_ports", [
    [(443, 30443), (80, 30080)],  # the same ports, reordered
    [(443, 30443)],  # the first one removed
    [(80, 30080), (443, 30443)],
])
def test_a_type_change_wipes_node_ports_the_client_did_not_add(new_ports: list[tuple[int, int]]) -> None:
    # sameNodePorts is a superset test: reordering or removing ports is not adding a NodePort.
    old = _node_port_service([(80, 30080), (443, 30443)])
    new = _node_port_service(new_ports)
    new["spec"]["type"] = "ClusterIP"
    drop_type_dependent_fields(new, old)
    assert [p.get("nodePort") for p in new["spec"]["ports"]] == [None] * len(new_ports)


def test_a_net_new_node_port_stays_for_validation_to_refuse() -> None:
    old = _node_port_service([(80, 30080)])
    new = _node_port_service([(80, 30080), (443, 30443)])
    new["spec"]["type"] = "ClusterIP"
    drop_type_dependent_fields(new, old)
    assert [p.get("nodePort") for p in new["spec"]["ports"]] == [30080, 30443]


def test_reordered_node_ports_switch_to_cluster_ip_through_the_registry(tmp_path: Path) -> None:
    async def scenario(cluster: Cluster) -> None:
        cluster.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "typed"},
                        "spec": {"type": "NodePort", "selector": {"app": "x"}, "ports": [
                            {"name": "http", "port": 80, "nodePort": 30080},
                            {"name": "https", "port": 443, "nodePort": 30443}]}})

        def to_cluster_ip(body: dict[str, Any]) -> None:
            body["spec"]["type"] = "ClusterIP"
            body["spec"]["ports"].reverse()
            body["spec"].pop("externalTrafficPolicy", None)
        cluster.update("Service", "typed", to_cluster_ip)
        spec = cluster.objects("Service")["typed"]["spec"]
        assert spec["type"] == "ClusterIP"
        assert [p.get("nodePort") for p in spec["ports"]] == [None, None]
    run(tmp_path, scenario)


# --- deletion -----------------------------------------------------------------------------------


def test_finalizers_hold_an_object_until_they_are_removed(tmp_path: Path) -> None:
    async def scenario(cluster: Cluster) -> None:
        cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}, "data": {"a": "b"}})
        deleted = delete(cluster, "ConfigMap", "held")
        assert deleted.pending and deleted.obj["metadata"]["deletionTimestamp"]
        assert names(cluster, "ConfigMap") == ["held"]
        # Deleting again changes nothing; a client cannot unset the timestamp.
        assert delete(cluster, "ConfigMap", "held").pending

        def keep_but_edit(body: dict[str, Any]) -> None:
            body["metadata"].pop("deletionTimestamp")
            body["data"] = {"a": "c"}
        cluster.update("ConfigMap", "held", keep_but_edit)
        assert cluster.objects("ConfigMap")["held"]["metadata"]["deletionTimestamp"]
        cluster.update("ConfigMap", "held", lambda body: body["metadata"].pop("finalizers"))
        assert names(cluster, "ConfigMap") == []
    run(tmp_path, scenario)


def test_orphan_propagation_releases_the_dependents_then_deletes_the_owner(tmp_path: Path) -> None:
    async def scenario(cluster: Cluster) -> None:
        cluster.create(json.loads(json.dumps(DEPLOYMENT)))
        await cluster.server.settle()
        deleted = delete(cluster, "Deployment", "web", propagation=Propagation.ORPHAN)
        assert deleted.pending and deleted.obj["metadata"]["finalizers"] == ["orphan"]
        await cluster.server.settle()
        assert names(cluster, "Deployment") == []
        replica_sets = list(cluster.objects("ReplicaSet").values())
        assert len(replica_sets) == 1 and "ownerReferences" not in replica_sets[0]["metadata"]
        assert len(cluster.objects("Pod")) == 2
    run(tmp_path, scenario)


def test_foreground_propagation_deletes_the_dependents_first(tmp_path: Path) -> None:
    async def scenario(cluster: Cluster) -> None:
        cluster.create(json.loads(json.dumps(DEPLOYMENT)))
        await cluster.server.settle()
        seen: list[tuple[str, str, str]] = []
        cluster.server.store.listeners.append(
            lambda changes: seen.extend((c.type, c.kind, (c.obj.get("metadata") or {}).get("name", ""))
                                        for c in changes if c.type == "DELETED"))
        assert delete(cluster, "Deployment", "web", propagation=Propagation.FOREGROUND).pending
        await cluster.server.settle()
        assert names(cluster, "Deployment") == names(cluster, "ReplicaSet") == names(cluster, "Pod") == []
        kinds = [kind for _, kind, _ in seen if kind in ("Deployment", "ReplicaSet", "Pod")]
        assert kinds[-1] == "Deployment" and kinds.index("ReplicaSet") > max(
            i for i, k in enumerate(kinds) if k == "Pod")
    run(tmp_path, scenario)


def test_a_namespace_terminates_refuses_new_content_and_goes_once_empty(tmp_path: Path) -> None:
    async def scenario(cluster: Cluster) -> None:
        cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
        body = json.loads(json.dumps(DEPLOYMENT))
        body["metadata"]["namespace"] = "shop"
        cluster.create(body)
        cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "held", "namespace": "shop", "finalizers": ["example.com/hold"]}})
        await cluster.server.settle()
        deleted = delete(cluster, "Namespace", "shop")
        assert deleted.pending and deleted.obj["status"]["phase"] == "Terminating"
        with pytest.raises(ApiError) as refused:
            cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late", "namespace": "shop"}})
        assert (refused.value.code, refused.value.message) == (
            403, "unable to create new content in namespace shop because it is being terminated")
        await cluster.server.settle()
        # Everything went but what waits for its own finalizer; so the namespace waits too.
        assert [names(cluster, k, "shop") for k in ("Deployment", "ReplicaSet", "Pod", "ConfigMap")] == \
            [[], [], [], ["held"]]
        assert cluster.server.store.get(("Namespace", "", "shop")) is not None
        old = cluster.server.store.get(("ConfigMap", "shop", "held"))
        assert old is not None
        cluster.server.registry.update(Target(BY_KIND["ConfigMap"], "shop", "held", ""), old,
                                       {**old.body, "metadata": {**old.body["metadata"], "finalizers": []}},
                                       WriteOptions())
        await cluster.server.settle()
        assert cluster.server.store.get(("Namespace", "", "shop")) is None
    run(tmp_path, scenario)


def test_delete_preconditions_and_dry_run(tmp_path: Path) -> None:
    async def scenario(cluster: Cluster) -> None:
        cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
        with pytest.raises(ApiError) as stale:
            delete(cluster, "ConfigMap", "c", precondition_uid="nope")
        assert stale.value.code == 409 and "Precondition failed: UID in precondition: nope" in stale.value.message
        assert not delete(cluster, "ConfigMap", "c", dry_run=True).pending
        assert names(cluster, "ConfigMap") == ["c"]
    run(tmp_path, scenario)


# --- the real kubectl ---------------------------------------------------------------------------


def test_kubectl_cascade_foreground_and_namespace_deletion(live: Live) -> None:
    live.kubectl("create", "deployment", "fg", "--image=nginx:1.27", "--replicas=2")
    live.kubectl("wait", "--for=condition=available", "deployment/fg", "--timeout=20s")
    out = live.kubectl("delete", "deployment", "fg", "--cascade=foreground").stdout
    assert out.strip() == 'deployment.apps "fg" deleted'
    assert live.kubectl("get", "rs,pods", "-l", "app=fg", "-o", "name").stdout == ""
    live.kubectl("create", "namespace", "gone")
    live.kubectl("-n", "gone", "create", "configmap", "c")
    live.kubectl("delete", "namespace", "gone", "--wait=false")
    # The same name again at once: the namespace controller finishes the deletion first.
    live.kubectl("create", "namespace", "gone")
    phase = live.kubectl("get", "namespace", "gone", "-o", "jsonpath={.status.phase}").stdout
    assert phase == "Active"
    assert live.kubectl("-n", "gone", "get", "configmap", "c", check=False).returncode == 1  # the old one's
    live.kubectl("delete", "namespace", "gone")
    assert live.kubectl("get", "namespace", "gone", check=False).returncode == 1
