"""One set of printers (knetsim.printers) behind `knetsim get` and the API server's Tables.

Cells are the ones kube-apiserver's printers (pkg/printers/internalversion, served with Wide: true)
give for the same objects.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from knetsim import printers
from knetsim.apiserver import tables

NOW = datetime(2026, 12, 3, 1, 0, 0, tzinfo=UTC)
CREATED = "2026-12-03T00:58:00Z"


def pod(statuses: list[dict[str, Any]], phase: str = "Running", containers: int | None = None,
        **extra: Any) -> dict[str, Any]:
    n = containers if containers is not None else len(statuses)
    body: dict[str, Any] = {
        "metadata": {"name": "p", "creationTimestamp": CREATED},
        "spec": {"containers": [{"name": f"c{i}"} for i in range(n)], "nodeName": "worker"},
        "status": {"phase": phase, "podIP": "10.244.1.5", "podIPs": [{"ip": "10.244.1.5"}],
                   "containerStatuses": statuses, "conditions": [{"type": "Ready", "status": "False"}]},
    }
    for k, v in extra.items():
        body["status" if k in ("conditions", "initContainerStatuses", "reason") else "spec"][k] = v
    return body


RUNNING = {"ready": True, "restartCount": 0, "state": {"running": {"startedAt": CREATED}}}
COMPLETED = {"ready": False, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
CRASHING = {"ready": False, "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 2, "reason": "Error", "finishedAt": "2026-12-03T00:59:30Z"}}}


@pytest.mark.parametrize(("body", "ready", "status", "restarts"), [
    (pod([RUNNING]), "1/1", "Running", "0"),
    (pod([COMPLETED], phase="Succeeded"), "0/1", "Completed", "0"),
    (pod([{**COMPLETED, "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}], phase="Failed"), "0/1", "Error",
     "0"),
    (pod([{**COMPLETED, "state": {"terminated": {"exitCode": 137, "signal": 9}}}], phase="Failed"), "0/1",
     "Signal:9", "0"),
    # RESTARTS says when the last container ended.
    (pod([CRASHING]), "0/1", "CrashLoopBackOff", "3 (30s ago)"),
    # The first container's state wins (the printer walks the list backwards).
    (pod([CRASHING, COMPLETED]), "0/2", "CrashLoopBackOff", "3 (30s ago)"),
    # One container done, another still serving: NotReady (Running when the pod is Ready).
    (pod([RUNNING, COMPLETED]), "1/2", "NotReady", "0"),
    (pod([RUNNING, COMPLETED], conditions=[{"type": "Ready", "status": "True"}]), "1/2", "Running", "0"),
    (pod([], phase="Pending", containers=1), "0/1", "Pending", "0"),
    (pod([RUNNING], initContainers=[{"name": "i0"}, {"name": "i1"}],
         initContainerStatuses=[{"name": "i0", "state": {"terminated": {"exitCode": 0}}},
                                {"name": "i1", "state": {"running": {}}}]), "0/1", "Init:1/2", "0"),
])
def test_pod_cells(body: dict[str, Any], ready: str, status: str, restarts: str) -> None:
    cells = printers.cells("Pod", body, NOW)
    assert cells[:5] == ["p", ready, status, restarts, "2m"]
    assert cells[5:7] == ["10.244.1.5", "worker"]


def test_pod_readiness_gates_count_the_met_ones() -> None:
    body = pod([RUNNING], readinessGates=[{"conditionType": "a"}, {"conditionType": "b"}],
               conditions=[{"type": "a", "status": "True"}])
    assert printers.cells("Pod", body, NOW)[-1] == "1/2"


@pytest.mark.parametrize(("spec", "status", "cells"), [
    ({"completions": 1}, {"succeeded": 1, "startTime": "2026-12-03T00:58:00Z", "completionTime": "2026-12-03T00:58:05Z",
                          "conditions": [{"type": "Complete", "status": "True"}]}, ["Complete", "1/1", "5s"]),
    ({"backoffLimit": 1}, {"failed": 2, "startTime": "2026-12-03T00:59:00Z",
                           "conditions": [{"type": "FailureTarget", "status": "True"},
                                          {"type": "Failed", "status": "True"}]}, ["Failed", "0/1", "60s"]),
    ({"parallelism": 3}, {"active": 3}, ["Running", "0/1 of 3", ""]),
    ({"completions": 5, "parallelism": 2}, {"succeeded": 2, "startTime": "2026-12-03T00:58:00Z"},
     ["Running", "2/5", "2m"]),
])
def test_job_cells(spec: dict[str, Any], status: dict[str, Any], cells: list[str]) -> None:
    body = {"metadata": {"name": "j", "creationTimestamp": CREATED}, "spec": spec, "status": status}
    assert printers.cells("Job", body, NOW)[1:4] == cells


def test_load_balancer_addresses_are_not_shortened() -> None:
    """The server prints with Wide: true: a long LB list shows whole, as kubectl get svc prints it."""
    svc = {"metadata": {"name": "lb", "creationTimestamp": CREATED},
           "spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.0.20"], "ports": [{"port": 80, "nodePort": 30080}],
                    "externalIPs": ["192.0.2.9"]},
           "status": {"loadBalancer": {"ingress": [{"ip": "172.18.255.200"}, {"hostname": "lb.example.com"}]}}}
    assert printers.cells("Service", svc, NOW)[1:5] == [
        "LoadBalancer", "10.96.0.20", "172.18.255.200,lb.example.com,192.0.2.9", "80:30080/TCP"]
    svc["status"] = {}
    svc["spec"].pop("externalIPs")
    assert printers.cells("Service", svc, NOW)[3] == "<pending>"


def test_ingress_hosts_count_the_rules_beyond_three_and_addresses_are_sorted() -> None:
    ing = {"metadata": {"name": "i", "creationTimestamp": CREATED},
           "spec": {"rules": [{"host": "a"}, {"host": "b"}, {}, {"host": "d"}, {"host": "e"}], "tls": [{}]},
           "status": {"loadBalancer": {"ingress": [{"hostname": "localhost"}, {"ip": "172.18.0.5"},
                                                   {"hostname": "localhost"}]}}}
    assert printers.cells("Ingress", ing, NOW)[1:5] == ["<none>", "a,b,d + 2 more...",
                                                       "172.18.0.5,localhost", "80, 443"]


def test_endpoints_ipv6_addresses_are_bracketed() -> None:
    ep = {"metadata": {"name": "e"}, "subsets": [{"addresses": [{"ip": "fd00::5"}, {"ip": "10.0.0.1"}],
                                                  "ports": [{"port": 80}, {"port": 443}]}]}
    assert printers.cells("Endpoints", ep, NOW)[1] == "[fd00::5]:80,10.0.0.1:80,[fd00::5]:443 + 1 more..."


def test_event_row_has_no_leading_name_and_reads_events_k8s_io_fields() -> None:
    ev = {"metadata": {"name": "p.18a"}, "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": ""},
          "reason": "Scheduled", "type": "Normal", "message": "Successfully assigned default/p to worker ",
          "eventTime": "2026-12-03T00:59:50.000000Z", "reportingComponent": "default-scheduler",
          "reportingInstance": "default-scheduler-control-plane", "source": {}}
    assert printers.cells("Event", ev, NOW) == [
        "10s", "Normal", "Scheduled", "pod/p", "", "default-scheduler, default-scheduler-control-plane",
        "Successfully assigned default/p to worker", "10s", 1, "p.18a"]
    assert [c["name"] for c in tables.column_definitions("Event")][:2] == ["Last Seen", "Type"]


@pytest.mark.parametrize(("kind", "body", "cells"), [
    ("ConfigMap", {"metadata": {"name": "cm", "creationTimestamp": CREATED}, "data": {"a": "1"},
                   "binaryData": {"b": ""}}, ["cm", 2, "2m"]),
    ("Secret", {"metadata": {"name": "s", "creationTimestamp": CREATED}, "data": {"a": "MQ=="}},
     ["s", "Opaque", 1, "2m"]),
    ("ServiceAccount", {"metadata": {"name": "default", "creationTimestamp": CREATED}}, ["default", 0, "2m"]),
    ("Widget", {"metadata": {"name": "w", "creationTimestamp": CREATED}}, ["w", "2m"]),
])
def test_kinds_only_the_api_server_served_before(kind: str, body: dict[str, Any], cells: list[Any]) -> None:
    assert printers.cells(kind, body, NOW) == cells
    assert printers.row(kind, body, NOW) == [str(c) for c in cells]


def test_table_json_wraps_the_printers() -> None:
    body = pod([COMPLETED], phase="Succeeded")
    t = tables.table("Pod", [body], "42")
    assert t["metadata"] == {"resourceVersion": "42"}
    defs = t["columnDefinitions"]
    assert [d["name"] for d in defs] == ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node",
                                         "Readiness Gates"]
    assert defs[0]["format"] == "name" and [d["priority"] for d in defs[5:]] == [1, 1, 1, 1]
    assert printers.columns("Pod")[:4] == [("NAME", 0), ("READY", 0), ("STATUS", 0), ("RESTARTS", 0)]
    r = t["rows"][0]
    assert r["cells"][:3] == ["p", "0/1", "Completed"]
    assert r["object"]["kind"] == "PartialObjectMetadata"
    assert r["conditions"][0] == {"type": "Completed", "status": "True", "reason": "Succeeded",
                                  "message": "The pod has completed"}
    assert tables.table("Deployment", [], "1", headers=False)["columnDefinitions"] == []
    assert [d["type"] for d in tables.column_definitions("ReplicaSet")][1:4] == ["integer"] * 3
