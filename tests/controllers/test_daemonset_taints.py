"""A DaemonSet's pods and a node's taints, as upstream's podsShouldBeOnNode decides (kubernetes/kubernetes
pkg/controller/daemon/daemon_controller.go): a NoSchedule taint the template does not tolerate keeps new daemon
pods off the node but leaves a running one in place; a NoExecute taint evicts it. (`kubectl taint node worker
k=v:NoSchedule` deleted every untolerating daemon pod there.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.apiserver.inprocess import Cluster, run

from knetsim.apiserver.registry import Target, WriteOptions
from knetsim.apiserver.resources import BY_KIND

AGENT = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "default"},
         "spec": {"selector": {"matchLabels": {"app": "agent"}},
                  "template": {"metadata": {"labels": {"app": "agent"}},
                               "spec": {"containers": [{"name": "c", "image": "busybox:1.36",
                                                        "command": ["sleep", "3600"]}]}}}}


def taint(c: Cluster, node: str, effect: str) -> None:
    old = c.server.store.get(("Node", "", node))
    assert old is not None
    body: dict[str, Any] = json.loads(json.dumps(old.body))
    body["spec"]["taints"] = [{"key": "k", "value": "v", "effect": effect}]
    c.server.registry.update(Target(BY_KIND["Node"], "", node, ""), old, body, WriteOptions())


def nodes_running(c: Cluster) -> list[str]:
    return sorted(p["spec"].get("nodeName") for p in c.objects("Pod").values()
                  if p["metadata"]["name"].startswith("agent-") and not p["metadata"].get("deletionTimestamp"))


def test_no_schedule_keeps_a_running_daemon_pod_and_no_execute_evicts_it(tmp_path: Path) -> None:
    async def scenario(c: Cluster) -> None:
        c.create(AGENT)
        await c.server.settle()
        assert nodes_running(c) == ["worker", "worker2"]  # the control-plane's NoSchedule taint keeps it off
        taint(c, "worker", "NoSchedule")
        await c.server.settle()
        assert nodes_running(c) == ["worker", "worker2"]
        taint(c, "worker", "NoExecute")
        await c.server.settle()
        assert nodes_running(c) == ["worker2"]
    run(tmp_path, scenario)
