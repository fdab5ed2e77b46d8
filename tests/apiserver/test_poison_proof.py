"""No sequence of requests can store an object that breaks a later request, a controller run or a restart.

A property-based test (hypothesis) drives an in-process server with random, oddly shaped requests:
valid objects with one field replaced by an arbitrary JSON value, unknown keys added, fields
nulled, then created, replaced or patched (merge, JSON, strategic) under each fieldValidation. After
every run: no 5xx, every stored object passes today's admission, the controllers converge, and a
restart serves the same objects. Bounded: a fixed number of examples and requests each.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knetsim.apiserver.recheck import _problem
from knetsim.apiserver.server import ApiServer
from knetsim.daemon.daemon import bring_up

from .fuzzing import JSON, TEMPLATES, paths_in


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> None:
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


@st.composite
def request(draw: st.DrawFn) -> tuple[str, str, str, bytes, str]:
    kind = draw(st.sampled_from(sorted(TEMPLATES)))
    base, body = TEMPLATES[kind]
    body = copy.deepcopy(body)
    name = body["metadata"]["name"]
    for _ in range(draw(st.integers(0, 2))):
        paths = [p for p in paths_in(body) if p[:2] != ("metadata", "name") and p[0] not in ("apiVersion", "kind")]
        path = draw(st.sampled_from(paths))
        _set(body, path, draw(JSON))
    if draw(st.booleans()):
        body.setdefault("spec", {})
        if isinstance(body["spec"], dict):
            body["spec"][draw(st.text(min_size=1, max_size=6))] = draw(JSON)
    validation = draw(st.sampled_from(["", "Strict", "Warn", "Ignore"]))
    query = f"?fieldValidation={validation}" if validation else ""
    verb = draw(st.sampled_from(["create", "replace", "merge", "json", "strategic", "delete"]))
    if verb == "create":
        return "POST", base + query, "application/json", json.dumps(body).encode(), kind
    target = f"{base}/{name}{query}"
    if verb == "replace":
        return "PUT", target, "application/json", json.dumps(body).encode(), kind
    if verb == "merge":
        return "PATCH", target, "application/merge-patch+json", json.dumps(body).encode(), kind
    if verb == "strategic":
        return "PATCH", target, "application/strategic-merge-patch+json", json.dumps(body).encode(), kind
    if verb == "json":
        path = draw(st.sampled_from(["/spec/replicas", "/spec/ports/0/port", "/metadata/labels", "/data",
                                     "/spec/selector", "/metadata/ownerReferences", "/spec"]))
        op = [{"op": draw(st.sampled_from(["add", "replace", "remove"])), "path": path, "value": draw(JSON)}]
        return "PATCH", target, "application/json-patch+json", json.dumps(op).encode(), kind
    return "DELETE", target, "application/json", b"", kind


async def _run(state: Path, requests: list[tuple[str, str, str, bytes, str]]) -> dict[Any, Any]:
    server = ApiServer(state)
    manager = bring_up(server)
    client = TestClient(TestServer(server.app()))
    await client.start_server()
    try:
        for method, path, ctype, data, _ in requests:
            resp = await client.request(method, path, data=data or None, headers={"Content-Type": ctype})
            text = await resp.text()
            assert resp.status < 500, (method, path, data, resp.status, text)
        await server.settle()  # the controllers converge on whatever was stored
        pods = await client.get("/api/v1/pods")
        assert pods.status == 200, await pods.text()
        for key in sorted(server.store.objects):
            problem, _ = _problem(server.registry, key, server.store.objects[key].body)
            assert problem is None, (key, problem, server.store.objects[key].body)
        for plural in ("services", "configmaps", "events", "pods"):
            listed = await client.get(f"/api/v1/{plural}", headers={"Accept": "application/json;as=Table;v=v1;"
                                                                              "g=meta.k8s.io"})
            assert listed.status == 200, await listed.text()
        return {k: s.body for k, s in server.store.objects.items()}
    finally:
        await client.close()
        await manager.close()
        await server.close()


async def _restart(state: Path) -> dict[Any, Any]:
    server = ApiServer(state)
    from knetsim.apiserver.recheck import recheck
    from knetsim.model.timestamps import now_rfc3339

    assert recheck(server.registry, now_rfc3339()) == []  # nothing to quarantine: all was admitted
    manager = bring_up(server)
    try:
        await server.settle()
        return {k: s.body for k, s in server.store.objects.items()}
    finally:
        await manager.close()
        await server.close()


EXAMPLES = int(os.environ.get("KNETSIM_HYPOTHESIS_EXAMPLES", "60"))  # CI bound; raise it to hunt locally


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                       HealthCheck.data_too_large])
@given(st.lists(request(), min_size=1, max_size=8))
def test_random_requests_never_poison_the_store(requests: list[tuple[str, str, str, bytes, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        before = asyncio.run(_run(state, requests))
        after = asyncio.run(_restart(state))
        user = {k for k, v in before.items() if k[0] not in ("Event", "Pod", "ReplicaSet", "EndpointSlice",
                                                             "Endpoints")}
        assert {k: after.get(k) for k in user} == {k: before[k] for k in user}


async def _internal_error(state: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, dict[str, Any], int,
                                                                                 dict[str, Any]]:
    server = ApiServer(state)
    manager = bring_up(server)
    client = TestClient(TestServer(server.app()))
    await client.start_server()
    try:
        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("controller bug")

        from knetsim.controllers.replicaset import ReplicaSetController

        with monkeypatch.context() as patched:
            patched.setattr(ReplicaSetController, "sync", broken)
            created = await client.post("/apis/apps/v1/namespaces/default/deployments", data=json.dumps(
                {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                 "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
                     "metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}}),
                headers={"Content-Type": "application/json"})
            assert created.status == 201  # the write itself is committed
            pods = await client.get("/api/v1/pods")
            status = await pods.json()
        again = await client.get("/api/v1/namespaces/default/pods")  # the next read retries: the pod is made
        return pods.status, status, again.status, await again.json()
    finally:
        await client.close()
        await manager.close()
        await server.close()


def test_a_failed_reconcile_is_a_500_never_stale_success(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, status, retry, listed = asyncio.run(_internal_error(tmp_path, monkeypatch))
    assert (code, status["reason"], status["message"]) == (500, "InternalError",
                                                           "Internal error occurred: RuntimeError: controller bug")
    assert retry == 200 and listed["kind"] == "PodList"
    assert [p["metadata"]["name"].startswith("web-") for p in listed["items"]] == [True]


@pytest.mark.parametrize("ctype", ["application/json", "application/yaml"])
def test_a_bug_in_a_handler_is_a_500_not_a_400(tmp_path: Path, ctype: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import knetsim.apiserver.registry as registry

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("oops")

    monkeypatch.setattr(registry.Registry, "create", boom)

    async def run() -> tuple[int, dict[str, Any]]:
        server = ApiServer(tmp_path)
        client = TestClient(TestServer(server.app()))
        await client.start_server()
        try:
            resp = await client.post("/api/v1/namespaces/default/configmaps", data=b'{"metadata":{"name":"a"}}',
                                     headers={"Content-Type": ctype})
            return resp.status, await resp.json()
        finally:
            await client.close()
            await server.close()

    code, status = asyncio.run(run())
    assert (code, status["reason"]) == (500, "InternalError")
    assert status["message"] == "Internal error occurred: KeyError: 'oops'"
