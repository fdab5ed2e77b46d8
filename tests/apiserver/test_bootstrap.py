"""The system objects of a fresh cluster, and of a state directory an older knetsim wrote.

Given a store whose ingress-nginx Deployment predates a change of its pod template (an older
knetsim), when the server starts again, then bootstrap leaves that Deployment's ReplicaSets and pods
to its controller: no second ReplicaSet or pod appears beside the stored ones.
"""

from __future__ import annotations

import json
from pathlib import Path

from knetsim.apiserver.bootstrap import bootstrap, system_objects
from knetsim.apiserver.store import Store, Write
from knetsim.cluster.config import ClusterConfig

NOW = "2026-12-03T12:00:00Z"


def test_an_empty_store_gets_every_system_object(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.db")
    bootstrap(store, ClusterConfig(), NOW)
    assert set(store.objects) == set(system_objects(ClusterConfig(), NOW))


def test_an_older_deployment_keeps_its_own_replicasets_and_pods(tmp_path: Path) -> None:
    objects = system_objects(ClusterConfig(), NOW)
    old = {}
    for key, body in objects.items():
        if key[1] == "ingress-nginx" and key[0] in ("ReplicaSet", "Pod"):
            # What an older knetsim stored: the same Deployment, its ReplicaSet and pod under older names.
            name = body["metadata"]["name"].replace("ingress-nginx-controller-", "ingress-nginx-controller-old")
            body = {**body, "metadata": {**body["metadata"], "name": name}}
            key = (key[0], key[1], name)
        old[key] = body
    store = Store(tmp_path / "store.db")
    store.commit([Write(k, v, "system") for k, v in old.items()])
    bootstrap(store, ClusterConfig(), NOW)
    ingress_pods = sorted(k[2] for k in store.objects if k[:2] == ("Pod", "ingress-nginx"))
    replicasets = sorted(k[2] for k in store.objects if k[:2] == ("ReplicaSet", "ingress-nginx"))
    assert len(ingress_pods) == 1 and ingress_pods[0].startswith("ingress-nginx-controller-old")
    assert len(replicasets) == 1 and replicasets[0].startswith("ingress-nginx-controller-old")


def test_a_system_workload_nobody_edited_gets_this_versions_template(tmp_path: Path) -> None:
    """An older knetsim stored ingress-nginx without kind's --watch-ingress-without-class: at start the
    Deployment gets the current template (its controller rolls it out); one a client wrote is kept."""
    objects = system_objects(ClusterConfig(), NOW)
    key = ("Deployment", "ingress-nginx", "ingress-nginx-controller")
    current = objects[key]["spec"]["template"]
    old = {k: v for k, v in objects.items() if k[0] not in ("ReplicaSet", "Pod") or k[1] != "ingress-nginx"}
    older = json.loads(json.dumps(old[key]))
    older["spec"]["template"]["spec"]["containers"][0]["args"] = ["/nginx-ingress-controller", "--ingress-class=nginx"]
    store = Store(tmp_path / "store.db")
    store.commit([Write(k, older if k == key else v, "system") for k, v in old.items()])
    bootstrap(store, ClusterConfig(), NOW)
    renewed = store.objects[key].body
    assert renewed["spec"]["template"] == current
    assert renewed["metadata"]["generation"] == int(older["metadata"].get("generation") or 1) + 1

    edited = Store(tmp_path / "edited.db")
    edited.commit([Write(k, older if k == key else v, "user" if k == key else "system") for k, v in old.items()])
    bootstrap(edited, ClusterConfig(), NOW)
    assert edited.objects[key].body["spec"]["template"] == older["spec"]["template"]
