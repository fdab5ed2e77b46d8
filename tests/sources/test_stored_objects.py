"""A cluster's objects are taken as stored: reading them never re-runs what only a create does.

Issue 34, point 1: after ``kubectl debug -i POD --image=busybox:1.36 --target=nginx`` the pod carries
``spec.ephemeralContainers``, which a create refuses (ValidatePodCreate) but the API server stores through
the ``ephemeralcontainers`` subresource. Read back, the pod must keep its node, IP and status: no
RejectedByAPIServer finding, no stand-in pod with another IP. The server is tests/fakeapi.py (any cluster
through ``--kubeconfig``); a ``kubectl get -o yaml`` snapshot file is read the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from tests.conftest import EXAMPLES
from tests.fakeapi import fake_api, kubeconfig_for, snapshot_of

from knetsim import Cluster
from knetsim.cli.main import cli

DEBUGGER = {"name": "debugger-x7k2p", "image": "busybox:1.36", "targetContainerName": "nginx", "stdin": True,
            "tty": False, "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File"}


def _debugged(objects: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The objects with one web pod as `kubectl debug --target=nginx` leaves it: an ephemeral container and its
    status, on a node and at an IP other than the ones knetsim's scheduler and IPAM would pick first."""
    out = json.loads(json.dumps(objects))
    pod = next(o for o in out if o["kind"] == "Pod" and o["metadata"]["name"].startswith("web-"))
    pod["spec"]["ephemeralContainers"] = [dict(DEBUGGER)]
    pod["status"]["ephemeralContainerStatuses"] = [{
        "name": DEBUGGER["name"], "image": "busybox:1.36", "imageID": "", "ready": False, "restartCount": 0,
        "state": {"running": {"startedAt": "2026-12-06T10:00:00Z"}}}]
    return out, pod


def _pods(cluster: Cluster) -> dict[str, tuple[str, str, str]]:
    return {key: (str(p.raw["spec"].get("nodeName")), str(p.raw["status"].get("podIP")),
                  str(p.raw["status"].get("phase"))) for key, p in cluster.state.pods.items()}


def test_a_debugged_pod_read_from_a_cluster_keeps_its_node_ip_and_status(tmp_path: Path) -> None:
    objects, pod = _debugged(snapshot_of([str(EXAMPLES / "shop")]))
    key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
    stored = {o["metadata"]["namespace"] + "/" + o["metadata"]["name"]:
              (o["spec"]["nodeName"], o["status"]["podIP"], o["status"]["phase"])
              for o in objects if o["kind"] == "Pod"}
    with fake_api(objects, token="") as api:
        path = tmp_path / "config"
        path.write_text(yaml.safe_dump(kubeconfig_for(api.url, {})))
        cluster = Cluster.from_kubeconfig(str(path))
        doctor = CliRunner().invoke(cli, ["doctor", "--kubeconfig", str(path), "-n", "shop"],
                                    catch_exceptions=False)
    assert cluster.errors == []
    pods = _pods(cluster)
    assert {k: v for k, v in pods.items() if k in stored} == stored  # nothing replaced, nothing moved
    assert sorted(k for k in pods if k.startswith("shop/")) == sorted(k for k in stored if k.startswith("shop/"))
    kept = cluster.state.pods[key].raw
    assert kept["spec"]["ephemeralContainers"][0]["name"] == DEBUGGER["name"]
    assert "RejectedByAPIServer" not in doctor.output and "ephemeralContainers" not in doctor.output


def test_a_snapshot_file_of_a_debugged_pod_is_read_as_stored(tmp_path: Path) -> None:
    objects, pod = _debugged(snapshot_of([str(EXAMPLES / "shop")]))
    snapshot = tmp_path / "snapshot.yaml"
    snapshot.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    result = CliRunner().invoke(cli, ["validate", "-f", str(snapshot)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    cluster = Cluster.from_paths([str(snapshot)])
    key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
    assert cluster.state.pods[key].raw["status"]["podIP"] == pod["status"]["podIP"]


def test_a_hand_written_pod_with_ephemeral_containers_is_still_refused(tmp_path: Path) -> None:
    """What a create refuses stays refused: only what a cluster stored skips the create's rules."""
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "nginx", "image": "nginx:1.27"}], "ephemeralContainers": [dict(DEBUGGER)]}}))
    result = CliRunner().invoke(cli, ["validate", "-f", str(manifest)], catch_exceptions=False)
    assert result.exit_code == 2
    assert "spec.ephemeralContainers: Forbidden: cannot be set on create" in result.output


def test_a_pending_pod_of_a_cluster_is_not_scheduled_by_the_reader(tmp_path: Path) -> None:
    """The cluster's scheduler left it without a node (no node has the CPU it requests, which knetsim does not
    model): it stays so, Pending, though knetsim's own scheduler would place it."""
    objects = snapshot_of([str(EXAMPLES / "shop")])
    pending = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "waiting", "namespace": "shop", "uid": "u-waiting", "resourceVersion": "9"},
               "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
                                        "resources": {"requests": {"cpu": "64"}}}]},
               "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                              "reason": "Unschedulable"}]}}
    with fake_api([*objects, pending], token="") as api:
        path = tmp_path / "config"
        path.write_text(yaml.safe_dump(kubeconfig_for(api.url, {})))
        cluster = Cluster.from_kubeconfig(str(path))
    pod = cluster.state.pods["shop/waiting"].raw
    assert not pod["spec"].get("nodeName") and pod["status"]["phase"] == "Pending" and "podIP" not in pod["status"]


def test_a_stored_pod_that_knetsims_validation_refuses_is_kept_as_stored(tmp_path: Path) -> None:
    """Another API server version's rules may differ: the pod runs there, so it stays, with a warning, and no
    stand-in of its ReplicaSet appears at another address. `validate` still reports it (its purpose)."""
    objects = snapshot_of([str(EXAMPLES / "shop")])
    pod = next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"].startswith("web-"))
    del pod["spec"]["containers"][0]["image"]  # v1.35 requires it
    key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
    with fake_api(objects, token="") as api:
        path = tmp_path / "config"
        path.write_text(yaml.safe_dump(kubeconfig_for(api.url, {})))
        cluster = Cluster.from_kubeconfig(str(path))
        validate = CliRunner().invoke(cli, ["validate", "--kubeconfig", str(path)], catch_exceptions=False)
    assert cluster.errors == []
    assert cluster.state.pods[key].raw["status"]["podIP"] == pod["status"]["podIP"]
    assert len([k for k in cluster.state.pods if k.startswith("shop/web-")]) == \
        len([o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"].startswith("web-")])
    assert [n.code for n in cluster.notices if n.subject == f"Pod {key}"] == ["StoredInvalid"]
    assert validate.exit_code == 2 and "spec.containers[0].image: Required value" in validate.output
