"""``metadata.managedFields`` as kube-apiserver records them: the client's fieldManager for its writes, and the
in-process writers under the names upstream's run as (kube-controller-manager, kube-scheduler, kubelet), their
status writes with ``subresource: status``. In process here; the live half reads them with the real kubectl."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from knetsim.apiserver.registry import Target, WriteOptions
from knetsim.apiserver.resources import BY_KIND

from .conftest import Live, wait_for
from .inprocess import Cluster, running

LABELS = {"app": "web"}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": LABELS},
              "spec": {"replicas": 1, "selector": {"matchLabels": LABELS},
                       "template": {"metadata": {"labels": LABELS},
                                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def _entries(body: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """The managedFields entries by (manager, subresource)."""
    return {(e["manager"], e.get("subresource", "")): e for e in body["metadata"].get("managedFields") or []}


def test_the_client_and_the_controllers_each_own_what_they_wrote(tmp_path: Path) -> None:
    async def scenario(c: Cluster) -> None:
        c.server.registry.create(Target(BY_KIND["Deployment"], "default", "", ""), DEPLOYMENT,
                                 WriteOptions(field_manager="kubectl-client-side-apply"))
        await c.server.settle()
        deployment = _entries(c.objects("Deployment")["web"])
        assert set(deployment) == {("kubectl-client-side-apply", ""), ("kube-controller-manager", "status")}
        client = deployment["kubectl-client-side-apply", ""]
        controller = deployment["kube-controller-manager", "status"]
        assert client["operation"] == controller["operation"] == "Update"
        assert client["fieldsType"] == "FieldsV1" and client["apiVersion"] == "apps/v1"
        assert set(client["fieldsV1"]) == {"f:metadata", "f:spec"}  # a status it could not set is not its
        assert client["fieldsV1"]["f:metadata"]["f:labels"] == {".": {}, "f:app": {}}
        assert "k:{\"name\":\"c\"}" in client["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
        # The status (with the revision annotation, which upstream writes through /status too) is the controller's.
        assert "f:status" in controller["fieldsV1"]
        # The annotations map is the controller's own (".") as the client sent none.
        revision = {".": {}, "f:deployment.kubernetes.io/revision": {}}
        assert controller["fieldsV1"]["f:metadata"]["f:annotations"] == revision
        assert "k:{\"type\":\"Available\"}" in controller["fieldsV1"]["f:status"]["f:conditions"]

        pod = next(iter(c.objects("Pod").values()))
        entries = _entries(pod)
        # Made by the ReplicaSet controller, bound by the scheduler (no entry: pods/binding records none),
        # its status the kubelet's.
        assert set(entries) == {("kube-controller-manager", ""), ("kubelet", "status")}
        assert "f:status" not in entries["kube-controller-manager", ""]["fieldsV1"]
        assert set(entries["kubelet", "status"]["fieldsV1"]) >= {"f:status"}
        assert "f:spec" not in entries["kubelet", "status"]["fieldsV1"]
    asyncio.run(_run(tmp_path, scenario))


def test_a_client_update_takes_the_fields_it_changes_from_their_manager(tmp_path: Path) -> None:
    """An Update is forced: the fields it changed leave the manager that had them (replicas here)."""
    async def scenario(c: Cluster) -> None:
        c.server.registry.create(Target(BY_KIND["Deployment"], "default", "", ""), DEPLOYMENT,
                                 WriteOptions(field_manager="kubectl-create"))
        await c.server.settle()
        old = c.server.store.get(("Deployment", "default", "web"))
        assert old is not None
        scaled = json.loads(json.dumps(old.body))
        scaled["spec"]["replicas"] = 2
        del scaled["metadata"]["managedFields"]  # as kubectl sends it: the stored entries are kept
        c.server.registry.update(Target(BY_KIND["Deployment"], "default", "web", ""), old, scaled,
                                 WriteOptions(field_manager="kubectl-scale"))
        entries = _entries(c.objects("Deployment")["web"])
        assert entries["kubectl-scale", ""]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
        assert "f:replicas" not in entries["kubectl-create", ""]["fieldsV1"]["f:spec"]
        assert ("kube-controller-manager", "status") in entries
    asyncio.run(_run(tmp_path, scenario))


def test_the_schedulers_unschedulable_condition_is_its_status_write(tmp_path: Path) -> None:
    """A pod no node fits: kube-scheduler writes PodScheduled=False through /status, and owns that condition."""
    async def scenario(c: Cluster) -> None:
        c.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nowhere"},
                  "spec": {"nodeSelector": {"disk": "none-has-it"}, "containers": [{"name": "c", "image": "nginx"}]}})
        await c.server.settle()
        pod = c.objects("Pod")["nowhere"]
        assert pod["status"]["conditions"][0]["reason"] == "Unschedulable"
        scheduler = _entries(pod)["kube-scheduler", "status"]
        assert "k:{\"type\":\"PodScheduled\"}" in scheduler["fieldsV1"]["f:status"]["f:conditions"]
        assert "f:spec" not in scheduler["fieldsV1"]
    asyncio.run(_run(tmp_path, scenario))


async def _run(tmp_path: Path, scenario: Any) -> None:
    async with running(tmp_path) as c:
        await scenario(c)


WEB = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: managed, labels: {app: managed}}
spec:
  replicas: 1
  selector: {matchLabels: {app: managed}}
  template:
    metadata: {labels: {app: managed}}
    spec: {containers: [{name: c, image: nginx}]}
"""


def _managers(live: Live, *what: str) -> set[tuple[str, str, str]]:
    body = json.loads(live.kubectl("get", *what, "--show-managed-fields", "-o", "json").stdout)
    items = body.get("items", [body])
    return {(e["manager"], e["operation"], e.get("subresource", "")) for item in items
            for e in item["metadata"].get("managedFields") or []}


def test_kubectl_shows_who_manages_what(live: Live) -> None:
    """`kubectl get --show-managed-fields` lists the client's apply and the controller's and kubelet's status
    writes, as on a real cluster."""
    live.kubectl("apply", "-f", "-", input=WEB)
    try:
        live.kubectl("rollout", "status", "deployment/managed", "--timeout=60s")
        assert _managers(live, "deployment", "managed") == {("kubectl-client-side-apply", "Update", ""),
                                                            ("kube-controller-manager", "Update", "status")}
        pods = wait_for(lambda: _managers(live, "pods", "-l", "app=managed") or None)
        assert pods == {("kube-controller-manager", "Update", ""), ("kubelet", "Update", "status")}
        # Without the flag kubectl leaves them out, as it does for a real cluster's.
        plain = json.loads(live.kubectl("get", "deployment", "managed", "-o", "json").stdout)
        assert "managedFields" not in plain["metadata"]
    finally:
        live.kubectl("delete", "deployment", "managed", "--wait=false")
