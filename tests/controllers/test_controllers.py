"""The live cluster's controllers, in process: writes through the registry (as a client's), then what
the controllers made of them once the server settles.

Given a fresh store (the system objects of a kind cluster), then each write is reconciled by the
controllers it concerns, and only by them: a settled cluster stays unchanged when everything is
queued again, existing pods keep their names and addresses, and events tell the steps apart.

Address plan: DESIGN defaults (nodes 172.18.0.2-4, pods 10.244.0.0/16 a /24 per node).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.apiserver.inprocess import Cluster, run
from tests.builders import deployment, scale, service


def test_a_new_deployment_records_scaling_creation_and_pod_starts(tmp_path: Path) -> None:
    async def scenario(c: Cluster) -> None:
        c.create(deployment("web", 2))
        await c.server.settle()
        [rs] = c.objects("ReplicaSet")
        assert [e["message"] for e in c.events("ScalingReplicaSet")] == [f"Scaled up replica set {rs} from 0 to 2"]
        assert c.events("ScalingReplicaSet")[0]["involvedObject"]["uid"] == c.objects("Deployment")["web"][
            "metadata"]["uid"]
        created = c.events("SuccessfulCreate")
        assert len(created) == 2 and {e["source"]["component"] for e in created} == {"replicaset-controller"}
        for reason in ("Scheduled", "Pulled", "Created", "Started"):
            assert len(c.events(reason)) == 2, reason
        scheduled = c.events("Scheduled")[0]
        assert (scheduled["reportingComponent"], scheduled["source"]) == ("default-scheduler", {})
        assert c.events("Started")[0]["involvedObject"]["fieldPath"] == "spec.containers{c}"
        pod = scheduled["involvedObject"]["name"]
        assert [e["reason"] for e in c.events() if e["involvedObject"]["name"] == pod] == [
            "Scheduled", "Pulled", "Created", "Started"]
    run(tmp_path, scenario)


def test_two_writes_are_two_steps_and_a_settled_cluster_stays_put(tmp_path: Path) -> None:
    """Given a Deployment scaled twice in two requests, then two ScalingReplicaSet events (a real cluster
    records both); queuing every object again afterwards writes nothing."""
    async def scenario(c: Cluster) -> None:
        c.create(deployment("web", 2))
        await c.server.settle()
        c.update("Deployment", "web", scale(3))
        await asyncio.sleep(0)  # the next request arrives: the controllers have had their turn
        c.update("Deployment", "web", scale(1))
        await c.server.settle()
        [rs] = c.objects("ReplicaSet")
        assert [e["message"] for e in c.events("ScalingReplicaSet")] == [
            f"Scaled up replica set {rs} from 0 to 2", f"Scaled up replica set {rs} from 2 to 3",
            f"Scaled down replica set {rs} from 3 to 1"]
        assert len(c.objects("Pod")) == 1
        before = c.server.store.rv
        c.manager.start()
        await c.server.settle()
        assert c.server.store.rv == before
    run(tmp_path, scenario)


def test_existing_pods_keep_names_and_addresses(tmp_path: Path) -> None:
    async def scenario(c: Cluster) -> None:
        c.create(deployment("web", 2))
        await c.server.settle()
        before = {n: p["status"]["podIP"] for n, p in c.objects("Pod").items()}
        c.create(deployment("aaa", 3))
        await c.server.settle()
        after = {n: p["status"]["podIP"] for n, p in c.objects("Pod").items()}
        assert len(after) == 5 and {n: after[n] for n in before} == before
        assert len(set(after.values())) == 5
    run(tmp_path, scenario)


def test_endpoints_mirror_the_slices_and_follow_readiness(tmp_path: Path) -> None:
    async def scenario(c: Cluster) -> None:
        c.create(deployment("web", 2))
        c.create(service("web"))
        await c.server.settle()
        ep = c.objects("Endpoints")["web"]
        pod_ips = sorted(p["status"]["podIP"] for p in c.objects("Pod").values())
        assert [a["ip"] for a in ep["subsets"][0]["addresses"]] == pod_ips
        assert ep["subsets"][0]["ports"] == [{"name": "http", "port": 80, "protocol": "TCP"}]
        assert ep["subsets"][0]["addresses"][0]["targetRef"]["kind"] == "Pod"
        name = sorted(c.objects("Pod"))[0]

        def unready(body: dict[str, Any]) -> None:
            body["metadata"].setdefault("annotations", {})["knetsim.io/ready"] = "false"
        c.update("Pod", name, unready)
        await c.server.settle()
        subset = c.objects("Endpoints")["web"]["subsets"][0]
        assert [a["targetRef"]["name"] for a in subset["notReadyAddresses"]] == [name]
        [es] = [s for s in c.objects("EndpointSlice").values()
                if s["metadata"]["labels"]["kubernetes.io/service-name"] == "web"]
        assert {e["targetRef"]["name"]: e["conditions"]["ready"] for e in es["endpoints"]}[name] is False
    run(tmp_path, scenario)


def test_a_pod_relabelled_away_and_back_leaves_the_replica_count_as_it_was(tmp_path: Path) -> None:
    def label(app: str) -> Callable[[dict[str, Any]], None]:
        def change(body: dict[str, Any]) -> None:
            body["metadata"]["labels"]["app"] = app
        return change

    async def scenario(c: Cluster) -> None:
        c.create(deployment("web", 2))
        await c.server.settle()
        name = sorted(c.objects("Pod"))[0]
        c.update("Pod", name, label("debug"))
        await c.server.settle()
        pods = c.objects("Pod")
        assert len(pods) == 3 and "ownerReferences" not in pods[name]["metadata"]  # released, replaced
        c.update("Pod", name, label("web"))
        await c.server.settle()
        pods = c.objects("Pod")
        assert len(pods) == 2 and name in pods  # adopted again; the youngest pod went
        assert pods[name]["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
    run(tmp_path, scenario)


def test_deleting_an_owner_collects_what_it_owned(tmp_path: Path) -> None:
    async def scenario(c: Cluster) -> None:
        c.create(deployment("web", 2))
        c.create(service("web"))
        await c.server.settle()
        c.delete("Deployment", "web")
        c.delete("Service", "web")
        await c.server.settle()
        assert not c.objects("ReplicaSet") and not c.objects("Pod")
        assert set(c.objects("EndpointSlice")) == {"kubernetes"}
        assert set(c.objects("Endpoints")) == {"kubernetes"}
    run(tmp_path, scenario)


def test_a_write_wakes_only_the_objects_it_concerns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Given 20 Deployments and Services settled, when one more Service is created, then the controllers look
    at that Service (and nothing of the 40 others): the work is proportional to the change."""
    synced: list[tuple[str, tuple[str, str, str]]] = []

    async def scenario(c: Cluster) -> None:
        for i in range(20):
            c.create(deployment(f"d{i}", 1))
            c.create(service(f"d{i}"))
        await c.server.settle()
        for ctl in c.manager.controllers:
            original = ctl.sync

            def counted(key: Any, ctl: Any = ctl, original: Any = original) -> None:
                synced.append((ctl.name, key))
                original(key)
            monkeypatch.setattr(ctl, "sync", counted)
        c.create(service("extra"))
        await c.server.settle()
        assert {key for _name, key in synced} <= {("Service", "default", "extra"),
                                                  ("EndpointSlice", "default", next(iter(
                                                      n for n in c.objects("EndpointSlice") if
                                                      n.startswith("extra-"))))}
        assert len(synced) <= 7  # one of them the servicecidrs controller writing the new ClusterIP's IPAddress
    run(tmp_path, scenario)


def test_ingresses_get_the_default_class_at_creation_and_nginx_publishes_localhost(tmp_path: Path) -> None:
    """Given a default IngressClass, then an Ingress created without a class gets it (the admission plugin, at
    creation only), and an Ingress of class nginx gets the address ingress-nginx publishes."""
    def ingress(name: str, **spec: Any) -> dict[str, Any]:
        return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name},
                "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}, **spec}}

    async def scenario(c: Cluster) -> None:
        c.create(ingress("before"))
        c.create({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                  "metadata": {"name": "internal", "annotations": {
                      "ingressclass.kubernetes.io/is-default-class": "true"}},
                  "spec": {"controller": "example.com/internal"}})
        c.create(ingress("after"))
        c.create(ingress("public", ingressClassName="nginx"))
        await c.server.settle()
        ingresses = c.objects("Ingress")
        assert "ingressClassName" not in ingresses["before"]["spec"]
        assert ingresses["after"]["spec"]["ingressClassName"] == "internal"
        assert ingresses["public"]["status"] == {"loadBalancer": {"ingress": [{"hostname": "localhost"}]}}
        assert not (ingresses["after"].get("status") or {}).get("loadBalancer", {}).get("ingress")
    run(tmp_path, scenario)
