"""Init containers through their lifecycle, in process (API server, controllers and the kubelet, no sockets).

kubectl's STATUS column is the server's Table cell (printers.row, printPod's rules): ``Init:N/M`` while one
runs, ``Init:CrashLoopBackOff`` for one that keeps failing; a sidecar (restartPolicy Always) counts among the
ready containers and keeps running. The kubectl-facing flow (logs, events, Init:Error) is in
test_defaults_live.py.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.apiserver.inprocess import Cluster, running

from knetsim.kubelet.kubelet import Kubelet
from knetsim.printers import row


def pod(name: str, inits: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"initContainers": inits, "containers": [{"name": "web", "image": "nginx:1.27"}], **spec}}


async def settle(cluster: Cluster, rounds: int = 30) -> None:
    for _ in range(rounds):
        await cluster.server.settle()
        await asyncio.sleep(0.05)


def summary(cluster: Cluster, name: str) -> tuple[str, str, str]:
    body = cluster.objects("Pod")[name]
    _name, ready, status, *_ = row("Pod", body)
    return ready, status, body["status"]["phase"]


def test_init_containers_hold_the_pod_then_let_it_run(tmp_path: Path) -> None:
    async def main() -> None:
        async with running(tmp_path) as cluster:
            kubelet = Kubelet(cluster.server)
            kubelet.install()
            try:
                cluster.create(pod("slow", [
                    {"name": "first", "image": "busybox:1.36", "command": ["sh", "-c", "echo one"]},
                    {"name": "second", "image": "busybox:1.36", "command": ["sh", "-c", "sleep 2; echo two"]},
                    # An image's own entrypoint: taken as done at once.
                    {"name": "migrate", "image": "example.com/migrate:1"}]))
                cluster.create(pod("sidecar", [
                    {"name": "proxy", "image": "nginx:1.27", "restartPolicy": "Always"},
                    {"name": "setup", "image": "busybox:1.36", "command": ["sh", "-c", "echo ready"]}]))
                cluster.create(pod("crash", [{"name": "check", "image": "busybox:1.36",
                                              "command": ["sh", "-c", "echo no; exit 1"]}]))
                # Its container's image cannot be pulled: that is found once the init containers are through.
                pull = pod("pull", [{"name": "setup", "image": "busybox:1.36", "command": ["sh", "-c", "echo ok"]}])
                pull["spec"]["containers"][0]["image"] = "nginx:doesnotexist"
                cluster.create(pull)
                await settle(cluster, 20)
                assert summary(cluster, "slow") == ("0/1", "Init:1/3", "Pending")
                assert summary(cluster, "sidecar") == ("2/2", "Running", "Running")
                assert summary(cluster, "crash") == ("0/1", "Init:CrashLoopBackOff", "Pending")
                assert summary(cluster, "pull")[1:] in (("ErrImagePull", "Pending"), ("ImagePullBackOff", "Pending"))
                pulls = [e for e in cluster.events("Pulling") if e["involvedObject"]["name"] == "pull"]
                assert [e.get("count", 1) for e in pulls] == [1]  # one image manager for it, not one per status write
                crash = cluster.objects("Pod")["crash"]["status"]["initContainerStatuses"][0]
                assert crash["restartCount"] == 1
                assert crash["lastState"]["terminated"]["exitCode"] == 1
                sidecar = {cs["name"]: cs for cs in cluster.objects("Pod")["sidecar"]["status"][
                    "initContainerStatuses"]}
                assert "running" in sidecar["proxy"]["state"] and sidecar["proxy"]["ready"] is True
                assert sidecar["setup"]["state"]["terminated"]["reason"] == "Completed"
                await settle(cluster, 60)
                assert summary(cluster, "slow") == ("1/1", "Running", "Running")
                statuses = cluster.objects("Pod")["slow"]["status"]["initContainerStatuses"]
                assert [(cs["name"], cs["state"]["terminated"]["reason"]) for cs in statuses] == [
                    ("first", "Completed"), ("second", "Completed"), ("migrate", "Completed")]
            finally:
                await kubelet.close()
    asyncio.run(main())


def test_a_pod_waiting_for_its_volumes_shows_no_init_container_started(tmp_path: Path) -> None:
    async def main() -> None:
        async with running(tmp_path) as cluster:
            kubelet = Kubelet(cluster.server)
            kubelet.install()
            try:
                cluster.create(pod("mounting", [{"name": "setup", "image": "busybox:1.36",
                                                 "command": ["sh", "-c", "cat /config/greeting"],
                                                 "volumeMounts": [{"name": "config", "mountPath": "/config"}]}],
                                   volumes=[{"name": "config", "configMap": {"name": "settings"}}]))
                await settle(cluster, 10)
                assert summary(cluster, "mounting") == ("0/1", "Init:0/1", "Pending")
                initialized = next(c for c in cluster.objects("Pod")["mounting"]["status"]["conditions"]
                                   if c["type"] == "Initialized")
                assert initialized["message"] == "containers with incomplete status: [setup]"
                cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
                                "data": {"greeting": "hello"}})
                await settle(cluster, 30)
                assert summary(cluster, "mounting") == ("1/1", "Running", "Running")
                uid = cluster.objects("Pod")["mounting"]["metadata"]["uid"]
                # The init container read the mounted file: its log is the file's content.
                assert [text for _, text in kubelet.logs.get("default", "mounting", uid, "setup", 0).lines()] == [
                    "hello"]
            finally:
                await kubelet.close()
    asyncio.run(main())


def test_init_containers_carry_on_across_a_server_restart(tmp_path: Path) -> None:
    slow = pod("slow", [
        {"name": "a", "image": "busybox:1.36", "command": ["sh", "-c", "echo a"]},
        {"name": "b", "image": "busybox:1.36", "command": ["sh", "-c", "echo b; sleep 2; echo b done"]}])

    async def phase(create: bool) -> tuple[tuple[str, str, str], list[str]]:
        async with running(tmp_path) as cluster:
            kubelet = Kubelet(cluster.server)
            kubelet.install()
            try:
                if create:
                    cluster.create(slow)
                await settle(cluster, 15 if create else 60)
                body = cluster.objects("Pod")["slow"]
                uid = body["metadata"]["uid"]
                return summary(cluster, "slow"), [
                    text for _, text in kubelet.logs.get("default", "slow", uid, "b", 0).lines()]
            finally:
                await kubelet.close()

    # Stopped while the second one runs: after the restart the first is not run again, the second runs anew.
    assert asyncio.run(phase(True)) == (("0/1", "Init:1/2", "Pending"), ["b\n"])
    assert asyncio.run(phase(False)) == (("1/1", "Running", "Running"), ["b\n", "b done\n"])
