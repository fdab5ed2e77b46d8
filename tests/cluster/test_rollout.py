"""The Deployment controller's planner (``cluster.rollout.sync``): one sync over copies.

Given a Deployment and the ReplicaSets it owns (their status as the ReplicaSet controller reported
it), then the plan names the ReplicaSets created, scaled and deleted, the events and the
Deployment's revision and conditions, as pkg/controller/deployment decides them; the inputs are
never changed. Defaults as the API server sets them: maxSurge 25% (rounded up), maxUnavailable 25%
(rounded down), revisionHistoryLimit 10, progressDeadlineSeconds 600.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from knetsim.cluster import rollout
from knetsim.cluster.naming import pod_template_hash

NOW = "2026-01-01T00:00:00Z"


def template(image: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "nginx", "image": image}]}}


def deployment(image: str = "nginx:1.27", replicas: int = 3, tweak: Callable[[dict[str, Any]], None] | None = None,
               ) -> dict[str, Any]:
    body = {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "uid": "d-uid", "generation": 1},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}, "template": template(image),
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%",
                                                                             "maxUnavailable": "25%"}},
                     "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}}
    if tweak is not None:
        tweak(body)
    return body


def replica_set(image: str, revision: int, replicas: int, available: int | None = None, created: str = NOW,
                ) -> dict[str, Any]:
    """A ReplicaSet of this Deployment as the controller made it, its pods all ``available`` unless said."""
    t = template(image)
    h = pod_template_hash(t)
    t["metadata"]["labels"]["pod-template-hash"] = h
    ready = replicas if available is None else available
    status = {"replicas": replicas, "observedGeneration": 1}
    if ready:
        status.update(readyReplicas=ready, availableReplicas=ready)
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"web-{h}", "namespace": "default", "creationTimestamp": created, "generation": 1,
                         "labels": dict(t["metadata"]["labels"]),
                         "annotations": {rollout.REVISION: str(revision), rollout.DESIRED_REPLICAS: "3",
                                         rollout.MAX_REPLICAS: "4"},
                         "ownerReferences": [{"kind": "Deployment", "name": "web", "uid": "d-uid",
                                              "controller": True}]},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web", "pod-template-hash": h}},
                     "template": t},
            "status": status}


def sync(d: dict[str, Any], *rss: dict[str, Any]) -> rollout.Rollout:
    before = json.dumps([d, *rss], sort_keys=True)
    plan = rollout.sync(d, list(rss), NOW)
    assert json.dumps([d, *rss], sort_keys=True) == before, "the planner changed its inputs"
    return plan


def sizes(plan: rollout.Rollout) -> dict[str, int]:
    return {rs["metadata"]["name"]: rs["spec"]["replicas"] for rs in plan.rss}


def messages(plan: rollout.Rollout) -> list[str]:
    return [m for _t, _r, m in plan.events]


def condition(plan: rollout.Rollout, type_: str) -> tuple[str, str]:
    c = rollout.get_condition(plan.d["status"], type_)
    assert c is not None
    return c["status"], c["reason"]


def test_a_new_deployment_creates_its_first_replica_set_at_revision_1() -> None:
    plan = sync(deployment())
    [name] = plan.created
    new = plan.replica_set(name)
    assert name == f"web-{pod_template_hash(template('nginx:1.27'))}"
    assert new["spec"]["replicas"] == 3  # nothing else runs: it may grow to replicas at once
    assert new["metadata"]["annotations"] == {rollout.REVISION: "1", rollout.DESIRED_REPLICAS: "3",
                                              rollout.MAX_REPLICAS: "4"}
    assert new["spec"]["selector"]["matchLabels"]["pod-template-hash"] == name.removeprefix("web-")
    assert new["metadata"]["ownerReferences"][0]["uid"] == "d-uid"
    assert plan.d["metadata"]["annotations"][rollout.REVISION] == "1"
    assert messages(plan) == [f"Scaled up replica set {name} from 0 to 3"]
    assert condition(plan, "Progressing") == ("True", "NewReplicaSetCreated")
    assert condition(plan, "Available") == ("False", "MinimumReplicasUnavailable")


def test_a_new_template_surges_one_pod_and_keeps_every_old_one() -> None:
    """Given 3 replicas (maxSurge 1, maxUnavailable 0) all available at revision 1, when the image changes,
    then the new ReplicaSet starts with 1 pod, revision 2, and the old one keeps 3."""
    old = replica_set("nginx:1.27", 1, 3)
    plan = sync(deployment("nginx:1.28"), old)
    [new] = plan.created
    assert sizes(plan) == {old["metadata"]["name"]: 3, new: 1}
    assert plan.replica_set(new)["metadata"]["annotations"][rollout.REVISION] == "2"
    assert plan.d["metadata"]["annotations"][rollout.REVISION] == "2"
    assert messages(plan) == [f"Scaled up replica set {new} from 0 to 1"]


def test_a_new_pod_that_never_becomes_ready_stalls_the_rollout() -> None:
    """Given the new ReplicaSet's pod is not available (its image cannot be pulled), then nothing is scaled:
    the old pods keep serving, and the controller comes back at the progress deadline."""
    old, new = replica_set("nginx:1.27", 1, 3), replica_set("nginx:doesnotexist", 2, 1, available=0)
    plan = sync(deployment("nginx:doesnotexist"), old, new)
    assert not plan.updated and not plan.created and not plan.events
    assert sizes(plan) == {old["metadata"]["name"]: 3, new["metadata"]["name"]: 1}
    assert plan.requeue_after is not None and plan.requeue_after > 0


def test_an_available_new_pod_lets_an_old_one_go() -> None:
    old, new = replica_set("nginx:1.27", 1, 3), replica_set("nginx:1.28", 2, 1)
    plan = sync(deployment("nginx:1.28"), old, new)
    assert sizes(plan)[old["metadata"]["name"]] == 2
    assert messages(plan) == [f"Scaled down replica set {old['metadata']['name']} from 3 to 2"]


def test_a_finished_rollout_is_complete_and_keeps_the_old_replica_set_at_zero() -> None:
    old, new = replica_set("nginx:1.27", 1, 0), replica_set("nginx:1.28", 2, 3)
    d = deployment("nginx:1.28")
    d["status"] = {"conditions": [rollout.new_condition("Progressing", "True", "ReplicaSetUpdated", "...", NOW)]}
    plan = sync(d, old, new)
    assert not plan.deleted
    assert condition(plan, "Progressing") == ("True", "NewReplicaSetAvailable")
    assert condition(plan, "Available") == ("True", "MinimumReplicasAvailable")
    assert {k: plan.d["status"][k] for k in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas")} \
        == {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3}


def test_rolling_back_reuses_the_old_replica_set_under_a_new_revision() -> None:
    """Given revision 2 running and the template put back to revision 1's (``rollout undo``), then revision 1's
    ReplicaSet becomes revision 3 and remembers 1 in its history; no ReplicaSet is created."""
    first, second = replica_set("nginx:1.27", 1, 0), replica_set("nginx:1.28", 2, 3)
    plan = sync(deployment("nginx:1.27"), first, second)
    assert not plan.created
    back = plan.replica_set(first["metadata"]["name"])
    assert back["metadata"]["annotations"][rollout.REVISION] == "3"
    assert back["metadata"]["annotations"][rollout.REVISION_HISTORY] == "1"
    assert plan.d["metadata"]["annotations"][rollout.REVISION] == "3"
    assert back["spec"]["replicas"] == 1


def test_old_replica_sets_beyond_the_history_limit_are_deleted_oldest_revision_first() -> None:
    def limit_one(d: dict[str, Any]) -> None:
        d["spec"]["revisionHistoryLimit"] = 1
        # The clean-up runs once the Deployment's status says the rollout is complete.
        d["status"] = {"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 3}
    olds = [replica_set(f"nginx:1.{n}", n, 0) for n in (21, 22, 23)]
    current = replica_set("nginx:1.28", 24, 3)
    plan = sync(deployment("nginx:1.28", tweak=limit_one), *olds, current)
    assert plan.deleted == [olds[0]["metadata"]["name"], olds[1]["metadata"]["name"]]


def test_a_paused_deployment_does_not_roll_out_a_new_template() -> None:
    def paused(d: dict[str, Any]) -> None:
        d["spec"]["paused"] = True
    old = replica_set("nginx:1.27", 1, 3)
    plan = sync(deployment("nginx:1.28", tweak=paused), old)
    assert not plan.created and not plan.events
    assert condition(plan, "Progressing") == ("Unknown", "DeploymentPaused")
    resumed = sync(plan.d | {"spec": deployment("nginx:1.28")["spec"]}, old)
    assert resumed.created
    assert condition(resumed, "Progressing")[1] == "NewReplicaSetCreated"


def test_scaling_mid_rollout_is_proportional() -> None:
    """Given 10 replicas mid-rollout (maxSurge 3: old 8 + new 5 = 13), when scaled to 20, then the 10 (20 + 5
    surge - 13) new pods are shared in proportion to the sizes, the leftover to the largest."""
    def ten(d: dict[str, Any]) -> None:
        d["spec"]["strategy"]["rollingUpdate"] = {"maxSurge": 3, "maxUnavailable": 2}
    old, new = replica_set("nginx:1.27", 1, 8), replica_set("nginx:1.28", 2, 5, available=0)
    for rs in (old, new):
        rs["metadata"]["annotations"].update({rollout.DESIRED_REPLICAS: "10", rollout.MAX_REPLICAS: "13"})
    d = deployment("nginx:1.28", replicas=20, tweak=ten)
    plan = sync(d, old, new)
    assert sizes(plan) == {old["metadata"]["name"]: 14, new["metadata"]["name"]: 9}
    assert sorted(messages(plan)) == sorted([f"Scaled up replica set {old['metadata']['name']} from 8 to 14",
                                             f"Scaled up replica set {new['metadata']['name']} from 5 to 9"])


def test_recreate_scales_the_old_pods_to_zero_before_creating_new_ones() -> None:
    def recreate(d: dict[str, Any]) -> None:
        d["spec"]["strategy"] = {"type": "Recreate"}
    old = replica_set("nginx:1.27", 1, 3)
    first = sync(deployment("nginx:1.28", tweak=recreate), old)
    assert not first.created and sizes(first) == {old["metadata"]["name"]: 0}
    gone = copy.deepcopy(first.replica_set(old["metadata"]["name"]))
    gone["status"] = {"replicas": 0, "observedGeneration": 2}
    second = sync(first.d, gone)
    [new] = second.created
    assert sizes(second)[new] == 3


@pytest.mark.parametrize(("value", "total", "up", "expected"), [("25%", 3, True, 1), ("25%", 3, False, 0),
                                                                 (2, 10, False, 2), ("50%", 5, True, 3)])
def test_int_or_percent_scaling(value: Any, total: int, up: bool, expected: int) -> None:
    assert rollout.scaled_value(value, total, up) == expected
