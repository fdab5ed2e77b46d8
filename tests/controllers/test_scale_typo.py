"""A replica count with three zeros too many: the cluster fills it in bursts and keeps answering.

kubectl scale --replicas=100000 (for 100) is a learner's typo a real cluster survives: the ReplicaSet
and Job controllers create at most 500 pods a sync (and the StatefulSet controller one, or a slow-start
batch) (replica_set.go's BurstReplicas, job_controller.go's
MaxPodCreateDeletePerSync), the API server answers
reads meanwhile, and scaling back down puts things right. Before, one sync made all 100,000 pods and
every read waited for the controllers to finish them (minutes, and GBs).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.apiserver.inprocess import Cluster, run
from tests.builders import deployment, scale

from knetsim.controllers import manager
from knetsim.controllers.podowner import BURST


def running_pods(c: Cluster, app: str) -> int:
    return sum(1 for p in c.objects("Pod").values()
               if (p["metadata"].get("labels") or {}).get("app") == app and not p["metadata"].get("deletionTimestamp"))


async def scaled_back(c: Cluster, app: str, count: int) -> None:
    """Wait (at most about ten seconds) until ``app`` runs ``count`` pods again, the bursts of deletions done."""
    for _ in range(200):
        await c.server.settle()
        if running_pods(c, app) == count:
            break
        await asyncio.sleep(0.05)
    assert running_pods(c, app) == count


def test_a_replica_typo_fills_in_bursts_reads_answer_and_scaling_back_recovers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manager, "SETTLE_BUDGET", 0.3)

    async def scenario(c: Cluster) -> None:
        loop = asyncio.get_running_loop()
        c.create(deployment("big", 100_000))
        started = loop.time()
        await c.server.settle()
        assert loop.time() - started < 10, "a read waited for the whole rollout"
        created = running_pods(c, "big")
        assert 0 < created < 100_000 and created % BURST == 0
        c.update("Deployment", "big", scale(1))
        await scaled_back(c, "big", 1)
        [rs] = c.objects("ReplicaSet").values()
        assert rs["spec"]["replicas"] == 1
    run(tmp_path, scenario)


def test_a_parallelism_typo_fills_in_bursts_and_lowering_it_recovers(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manager, "SETTLE_BUDGET", 0.3)
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "many"},
           "spec": {"parallelism": 100_000, "completions": 100_000, "template": {
               "metadata": {"labels": {"app": "many"}},
               "spec": {"restartPolicy": "Never", "containers": [
                   {"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"]}]}}}}

    async def scenario(c: Cluster) -> None:
        c.create(job)
        await c.server.settle()
        created = running_pods(c, "many")
        assert 0 < created < 100_000 and created % BURST == 0

        def one(body: dict) -> None:
            body["spec"]["parallelism"] = 1
        c.update("Job", "many", one)
        await scaled_back(c, "many", 1)
    run(tmp_path, scenario)


def test_a_statefulset_replica_typo_fills_in_bursts_of_ordinals_and_scaling_back_keeps_the_lowest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manager, "SETTLE_BUDGET", 0.3)
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
           "spec": {"replicas": 100_000, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                    "template": {"metadata": {"labels": {"app": "db"}},
                                 "spec": {"containers": [{"name": "c", "image": "postgres:16"}]}}}}

    async def scenario(c: Cluster) -> None:
        loop = asyncio.get_running_loop()
        c.create(sts)
        started = loop.time()
        await c.server.settle()
        assert loop.time() - started < 10, "a read waited for the whole StatefulSet"
        names = {p["metadata"]["name"] for p in c.objects("Pod").values()
                 if (p["metadata"].get("labels") or {}).get("app") == "db"}
        assert 0 < len(names) < 100_000 and len(names) % BURST == 0
        assert names == {f"db-{i}" for i in range(len(names))}  # the lowest ordinals first, none skipped

        def two(body: dict) -> None:
            body["spec"]["replicas"] = 2
        c.update("StatefulSet", "db", two)
        await scaled_back(c, "db", 2)
        assert sorted(p["metadata"]["name"] for p in c.objects("Pod").values()
                      if (p["metadata"].get("labels") or {}).get("app") == "db"
                      and not p["metadata"].get("deletionTimestamp")) == ["db-0", "db-1"]
    run(tmp_path, scenario)
