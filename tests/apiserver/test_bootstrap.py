"""The system objects of a fresh cluster, and of a state directory an older knetsim wrote.

Given an empty state directory, when the server starts, then what kind's installers declare is written
through the registry and the controllers make the rest: the store holds the objects the offline core
builds for a fresh cluster, the add-ons on the control plane with the same addresses.
Given a store whose ingress-nginx Deployment predates a change of its pod template (an older
knetsim), when the server starts again, then bootstrap leaves that Deployment's ReplicaSets and pods
to its controller: no second ReplicaSet or pod appears beside the stored ones.

Address plan: DESIGN defaults (nodes 172.18.0.2-4, pods 10.244.0.0/16, services 10.96.0.0/12).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.apiserver.inprocess import Cluster, run

from knetsim.apiserver.store import Key, Store, Write
from knetsim.cluster.build import build_cluster
from knetsim.cluster.config import ClusterConfig
from knetsim.model.objects import stable_uid

NOW = "2026-12-03T12:00:00Z"


def system_objects() -> dict[Key, dict[str, Any]]:
    """What the offline core builds for a fresh cluster (what an older knetsim wrote to the store)."""
    state = build_cluster([], ClusterConfig()).state
    out = {}
    for obj in [*state.namespaces.values(), *state.nodes.values(), *state.ingress_classes.values(),
                *state.services.values(), *state.pods.values(), *state.endpoint_slices.values(),
                *state.workloads.values(), *state.objects_of("Endpoints"), *state.others.values()]:
        key = (obj.kind, obj.namespace, obj.name)
        body = json.loads(json.dumps(obj.raw))
        body["metadata"].setdefault("uid", stable_uid(*key))
        body["metadata"].setdefault("creationTimestamp", NOW)
        out[key] = body
    return out


def stored(tmp_path: Path, objects: dict[Key, dict[str, Any]], managed: dict[Key, str] | None = None) -> None:
    tmp_path.mkdir(parents=True, exist_ok=True)
    store = Store(tmp_path / "store.db")
    store.commit([Write(k, v, (managed or {}).get(k, "system")) for k, v in objects.items()])
    store.close()


def test_an_empty_store_gets_every_system_object(tmp_path: Path) -> None:
    offline = system_objects()

    async def scenario(cluster: Cluster) -> None:
        objects = cluster.server.store.objects
        # The custom kinds' CRDs are the API server's (knetsim's definitions), not an installer's objects.
        assert {k for k in objects if k[0] not in ("Event", "CustomResourceDefinition")} == set(offline)
        from knetsim.model.crd import builtin_crds

        assert sorted(k[2] for k in objects if k[0] == "CustomResourceDefinition") == \
            [c["metadata"]["name"] for c in builtin_crds()]
        for key, body in offline.items():
            if key[0] == "Endpoints":  # the endpoints controller's mirror, offline as live
                assert objects[key].body.get("subsets") == body.get("subsets"), key
            if key[0] == "Pod":
                assert (objects[key].body["spec"]["nodeName"], objects[key].body["status"].get("podIP")) == \
                    (body["spec"]["nodeName"], body["status"].get("podIP")), key
        coredns = [b.body for k, b in objects.items() if k[0] == "Pod" and k[2].startswith("coredns-")]
        assert {p["spec"]["nodeName"] for p in coredns} == {"control-plane"}
    run(tmp_path, scenario)


def test_an_older_deployment_keeps_its_own_replicasets_and_pods(tmp_path: Path) -> None:
    old = {}
    for key, body in system_objects().items():
        if key[1] == "ingress-nginx" and key[0] in ("ReplicaSet", "Pod"):
            # What an older knetsim stored: the same Deployment, its ReplicaSet and pod under older names.
            name = body["metadata"]["name"].replace("ingress-nginx-controller-", "ingress-nginx-controller-old")
            body = {**body, "metadata": {**body["metadata"], "name": name}}
            key = (key[0], key[1], name)
        old[key] = body
    stored(tmp_path, old)

    async def scenario(cluster: Cluster) -> None:
        keys = cluster.server.store.objects
        ingress_pods = sorted(k[2] for k in keys if k[:2] == ("Pod", "ingress-nginx"))
        replicasets = sorted(k[2] for k in keys if k[:2] == ("ReplicaSet", "ingress-nginx"))
        assert len(ingress_pods) == 1 and ingress_pods[0].startswith("ingress-nginx-controller-old")
        assert len(replicasets) == 1 and replicasets[0].startswith("ingress-nginx-controller-old")
    run(tmp_path, scenario)


def test_a_system_workload_nobody_edited_gets_this_versions_template(tmp_path: Path) -> None:
    """An older knetsim stored ingress-nginx without kind's --watch-ingress-without-class: at start the
    Deployment gets the current template (its controller rolls it out); one a client wrote is kept."""
    objects = system_objects()
    key = ("Deployment", "ingress-nginx", "ingress-nginx-controller")
    current = objects[key]["spec"]["template"]
    old = {k: v for k, v in objects.items() if k[0] not in ("ReplicaSet", "Pod") or k[1] != "ingress-nginx"}
    older = json.loads(json.dumps(old[key]))
    older["spec"]["template"]["spec"]["containers"][0]["args"] = ["/nginx-ingress-controller", "--ingress-class=nginx"]

    async def renewed(cluster: Cluster) -> None:
        body = cluster.server.store.objects[key].body
        assert body["spec"]["template"] == current
        assert body["metadata"]["generation"] == int(older["metadata"].get("generation") or 1) + 1
    stored(tmp_path / "system", {**old, key: older})
    run(tmp_path / "system", renewed)

    async def kept(cluster: Cluster) -> None:
        assert cluster.server.store.objects[key].body["spec"]["template"] == older["spec"]["template"]
    stored(tmp_path / "edited", {**old, key: older}, {key: "user"})
    run(tmp_path / "edited", kept)
