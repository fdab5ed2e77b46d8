"""No stored object breaks a reader, and start-up quarantines what today's admission refuses.

Given an in-process cluster whose store holds, for every served kind, an object of the wrong shape
(written below admission, as a store from an older version or a gap in admission would hold it: a
``spec`` that is a string or a list, ``status`` a number, lists where maps go), then every reader:
lists and gets as JSON and as kubectl's Table, a watch, the controllers, the ClusterState and what
reads it (DNS, the front door's trace, exec's tools, the explorer). None may answer 5xx or crash. A
restart then moves every such object into the quarantine, with a Warning event naming why.
"""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from knetsim.apiserver.recheck import ADMISSION_MARK, _problem, recheck
from knetsim.apiserver.registry import now_rfc3339
from knetsim.apiserver.resources import BY_KIND
from knetsim.apiserver.server import ApiServer
from knetsim.apiserver.shape import shape_error
from knetsim.apiserver.store import Write
from knetsim.cluster.config import ClusterConfig
from knetsim.daemon.daemon import bring_up

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
SHAPES: dict[str, Any] = {
    "spec-string": {"spec": "x"},
    "spec-list": {"spec": [1]},
    "status-number": {"status": 5},
    "nested": {"spec": {"listeners": "x", "rules": "x", "ports": "x", "selector": "x", "template": "x",
                        "containers": "x", "parentRefs": "x", "hostnames": 7, "ingress": "x", "egress": "x",
                        "podSelector": "x", "subject": "x", "replicas": "x", "type": 5, "endpoints": "x",
                        "gatewayClassName": ["x"], "backendRefs": "x", "tls": "x", "defaultBackend": "x",
                        "jobTemplate": "x", "schedule": 5, "controllerName": {}},
               "status": {"conditions": "x", "addresses": "x", "phase": [], "containerStatuses": "x"},
               "data": "x", "subsets": "x", "ports": "x", "endpoints": "x", "addressType": 5,
               "involvedObject": "x", "reason": 5},
}


def _poisoned(kind: str, shape: str) -> tuple[tuple[str, str, str], dict[str, Any]]:
    r = BY_KIND[kind]
    name = f"bad-{shape}"
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{kind}-{shape}", "creationTimestamp": "2026-01-01T00:00:00Z",
                            "labels": {"app": "web"}}
    if r.namespaced:
        meta["namespace"] = "default"
    body = {"apiVersion": r.api_version, "kind": r.kind, "metadata": meta, **copy.deepcopy(SHAPES[shape])}
    return (kind, "default" if r.namespaced else "", name), body


# The kinds the cluster serves (BY_KIND keys are the store's: ``NetworkPolicy.projectcalico.org`` for Calico's);
# a CNI's kinds are served on a cluster of that CNI, this module's is Calico's.
CNI = "calico"
SERVED = sorted(kind for kind, r in BY_KIND.items() if r.served_with(CNI))


def _keys() -> list[tuple[str, str]]:
    return [(kind, shape) for kind in SERVED if kind != "Namespace" for shape in sorted(SHAPES)]


async def _read_everything(state: Path) -> dict[str, Any]:
    server = ApiServer(state, ClusterConfig(cni=CNI))
    manager = bring_up(server)
    client = TestClient(TestServer(server.app()))
    await client.start_server()
    seen: dict[str, Any] = {"statuses": {}}
    try:
        await server.settle()
        writes = [Write(*_poisoned(kind, shape)) for kind, shape in _keys()]
        server.store.commit(writes)
        await server.settle()
        for kind in SERVED:
            r = BY_KIND[kind]
            for accept in ("application/json", TABLE):
                resp = await client.get(r.path(), headers={"Accept": accept})
                seen["statuses"][(kind, accept, "list")] = (resp.status, (await resp.text())[:300])
                resp = await client.get(r.path() + "?limit=3", headers={"Accept": accept})
                seen["statuses"][(kind, accept, "page")] = (resp.status, (await resp.text())[:300])
            if kind != "Namespace":
                path = r.path("default", "bad-nested")
                resp = await client.get(path, headers={"Accept": TABLE})
                seen["statuses"][(kind, "table", "get")] = (resp.status, await resp.text())

        async def watch(kind: str) -> None:
            # Each watch runs its one-second timeout out: all kinds at once, not one after another.
            resp = await client.get(BY_KIND[kind].path() + "?watch=1&timeoutSeconds=1", headers={"Accept": TABLE})
            seen["statuses"][(kind, "table", "watch")] = (resp.status, (await resp.text())[:300])
        await asyncio.gather(*(watch(kind) for kind in SERVED))
        pods = await client.get("/api/v1/pods")
        seen["statuses"][("Pod", "settled", "list")] = (pods.status, (await pods.text())[:300])
        state_now = server.state
        seen["state"] = state_now is not None
        from knetsim.explorer.data import explorer_data
        from knetsim.network.tracer import trace
        from knetsim.policy.matrix import matrix

        seen["explorer"] = bool(explorer_data(state_now, matrix(state_now)))
        seen["trace"] = trace(state_now, "external", "http://172.18.0.2:80/").outcome
        from knetsim.dns.records import lookup

        seen["dns"] = lookup(state_now, "kubernetes.default.svc.cluster.local.", "A") is not None
        seen["unreadable"] = [s.body for s in server.store.list("Event") if s.body.get("reason") == "Unreadable"]
        return seen
    finally:
        await client.close()
        await manager.close()
        await server.close()


async def _restart(state: Path) -> dict[str, Any]:
    server = ApiServer(state, ClusterConfig(cni=CNI))
    try:
        server.store.meta.pop(ADMISSION_MARK, None)  # as a newer knetsim finds it
        quarantined = recheck(server.registry, now_rfc3339())
        events = [s.body for s in server.store.list("Event", "default") if s.body.get("reason") == "Quarantined"]
        left = {k for k in server.store.objects if k[2].startswith("bad-")}
        return {"quarantined": {key for key, _ in quarantined}, "events": events, "left": left,
                "problems": {k: _problem(server.registry, k, server.store.objects[k].body) for k in left}}
    finally:
        await server.close()


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    state = tmp_path_factory.mktemp("readers")
    read = asyncio.run(_read_everything(state))
    restarted = asyncio.run(_restart(state))
    return {**read, **restarted}


def test_no_reader_answers_5xx_for_an_ill_shaped_object(outcome: dict[str, Any]) -> None:
    broken = {k: v for k, v in outcome["statuses"].items() if v[0] >= 500}
    assert not broken, json.dumps({str(k): v for k, v in broken.items()}, indent=1)[:3000]
    assert outcome["state"] and outcome["explorer"] and outcome["dns"] and outcome["trace"]


@pytest.mark.parametrize("kind", sorted(set(SERVED) - {"Namespace", "Event"}))
def test_a_table_shows_what_it_can_read_of_an_ill_shaped_object(outcome: dict[str, Any], kind: str) -> None:
    code, text = outcome["statuses"][(kind, "table", "get")]
    assert code == 200, text
    assert json.loads(text)["rows"][0]["cells"][0] == "bad-nested"


def test_the_controllers_leave_ill_shaped_objects_out_and_say_so(outcome: dict[str, Any]) -> None:
    assert outcome["unreadable"]  # Warning events `Unreadable`, one per object left out
    assert all(e["type"] == "Warning" and "it cannot be read" in e["message"] for e in outcome["unreadable"])


@pytest.mark.parametrize(("kind", "shape"), _keys())
def test_a_restart_quarantines_what_admission_refuses(outcome: dict[str, Any], kind: str, shape: str) -> None:
    """What a reader could not read is quarantined (with a Warning event in its namespace); what is left was
    only pruned of fields its kind does not have (a ConfigMap's ``spec``), as kube-apiserver prunes them."""
    key, body = _poisoned(kind, shape)
    # Every poisoned object was written, so the restart either quarantined it or left it: never neither (a row
    # whose object vanished would otherwise assert nothing below), never both.
    assert (key in outcome["quarantined"]) != (key in outcome["left"]), (key, "quarantined and left alike")
    if shape_error(kind, body) is not None:
        assert key in outcome["quarantined"] and key not in outcome["left"]
        if key[1]:
            assert any(e["involvedObject"]["name"] == key[2] and e["involvedObject"]["kind"] == BY_KIND[kind].kind
                       for e in outcome["events"])
    if key in outcome["left"]:
        assert outcome["problems"][key] == (None, None), outcome["problems"][key]


@pytest.mark.parametrize(("kind", "shape"), [("Gateway", "spec-string"), ("HTTPRoute", "spec-list"),
                                             ("Gateway", "status-number"), ("Deployment", "nested")])
def test_the_issues_reproducers_are_quarantined(outcome: dict[str, Any], kind: str, shape: str) -> None:
    key, _ = _poisoned(kind, shape)
    assert key in outcome["quarantined"]
