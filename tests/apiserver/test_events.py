"""The controller plan records Events and mirrors v1 Endpoints (pure: plan in, writes out).

Given a Deployment of 2 replicas, then the first plan records ScalingReplicaSet on it,
SuccessfulCreate on its ReplicaSet and Scheduled/Pulled/Created/Started per pod, named so
that they sort in the order they happened; a second plan over the result records nothing.
"""

from __future__ import annotations

from knetsim.apiserver import controllers
from knetsim.cluster.config import ClusterConfig

from .test_units import _apply, _deploy, _stored

NOW = "2026-01-01T00:00:00Z"


def _events(plan: controllers.Plan) -> list[dict]:
    return [w.body for w in plan.writes if w.key[0] == "Event" and w.body is not None]


def _world(replicas: int = 2) -> dict:
    objects: dict = {}
    _stored(objects, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    _stored(objects, _deploy("web", replicas))
    return objects


def test_a_new_deployment_records_scaling_creation_and_pod_starts() -> None:
    first = controllers.plan(_world(), ClusterConfig(), NOW, {})
    events = _events(first)
    by_reason: dict[str, list[dict]] = {}
    for e in events:
        by_reason.setdefault(e["reason"], []).append(e)
    rs = next(w.key[2] for w in first.writes if w.key[0] == "ReplicaSet")
    assert [e["message"] for e in by_reason["ScalingReplicaSet"]] == [f"Scaled up replica set {rs} from 0 to 2"]
    assert by_reason["ScalingReplicaSet"][0]["involvedObject"]["uid"] == "uid-web"
    assert len(by_reason["SuccessfulCreate"]) == 2
    assert {e["source"]["component"] for e in by_reason["SuccessfulCreate"]} == {"replicaset-controller"}
    for reason in ("Scheduled", "Pulled", "Created", "Started"):
        assert len(by_reason[reason]) == 2, reason
    scheduled = by_reason["Scheduled"][0]
    assert scheduled["reportingComponent"] == "default-scheduler"
    assert scheduled["source"] == {}
    assert scheduled["message"].startswith("Successfully assigned default/web-")
    assert by_reason["Started"][0]["involvedObject"]["fieldPath"] == "spec.containers{c}"
    # Per pod, names sort in the order the events happened.
    pod = scheduled["involvedObject"]["name"]
    mine = sorted((e for e in events if e["involvedObject"]["name"] == pod), key=lambda e: e["metadata"]["name"])
    assert [e["reason"] for e in mine] == ["Scheduled", "Pulled", "Created", "Started"]
    assert first.meta["eventseq"] == str(len(events))


def test_a_settled_world_records_nothing_and_scaling_down_records_deletes() -> None:
    objects = _world()
    first = controllers.plan(objects, ClusterConfig(), NOW, {})
    _apply(objects, first)
    assert not _events(controllers.plan(objects, ClusterConfig(), "2026-01-01T00:00:01Z", first.meta))
    _stored(objects, _deploy("web", 1))
    down = controllers.plan(objects, ClusterConfig(), "2026-01-01T00:00:02Z", first.meta)
    reasons = sorted(e["reason"] for e in _events(down))
    assert reasons == ["ScalingReplicaSet", "SuccessfulDelete"]
    # Names never repeat across plans: the sequence continues from the stored counter.
    assert not {e["metadata"]["name"] for e in _events(down)} & {e["metadata"]["name"] for e in _events(first)}


def test_endpoints_mirror_the_slices() -> None:
    objects = _world()
    _stored(objects, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
                      "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]}})
    _apply(objects, controllers.plan(objects, ClusterConfig(), NOW, {}))
    ep = objects[("Endpoints", "default", "web")].body
    pod_ips = sorted(s.body["status"]["podIP"] for k, s in objects.items() if k[0] == "Pod" and k[1] == "default")
    assert [a["ip"] for a in ep["subsets"][0]["addresses"]] == pod_ips
    assert ep["subsets"][0]["ports"] == [{"name": "http", "port": 80, "protocol": "TCP"}]
    assert ep["subsets"][0]["addresses"][0]["targetRef"]["kind"] == "Pod"
    assert ("Endpoints", "default", "kubernetes") in objects
