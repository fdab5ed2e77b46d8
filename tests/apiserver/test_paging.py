"""Paging as kube-apiserver pages: tokens that outlive the watch history, exact resourceVersions.

Given an in-process API server whose watch history keeps only a few changes, then a list interrupted by more
writes than the history holds: the token still gives the rest of the same list for as long as etcd would keep
its revision (the compaction interval, five minutes), and 410 after (issue 34, point 9).
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections import deque
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from knetsim.apiserver import paging
from knetsim.apiserver.errors import ApiError
from knetsim.apiserver.server import ApiServer
from knetsim.apiserver.store import Store

CM = "/api/v1/namespaces/default/configmaps"


async def _scenario(state: Path, now: list[float]) -> dict[str, Any]:
    server = ApiServer(state)
    server.store.history = deque(maxlen=4)
    client = TestClient(TestServer(server.app()))
    await client.start_server()
    seen: dict[str, Any] = {}

    async def call(method: str, path: str, body: Any = None) -> tuple[int, Any]:
        resp = await client.request(method, path, json=body)
        return resp.status, await resp.json()

    try:
        await call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": "default"}})
        for i in range(4):
            await call("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"a{i}"}})
        _, first = await call("GET", f"{CM}?limit=2")
        rv = int(first["metadata"]["resourceVersion"])
        seen["exact"] = await call("GET", f"{CM}?resourceVersion={rv}&resourceVersionMatch=Exact")
        seen["legacy_exact"] = await call("GET", f"{CM}?resourceVersion={rv}&limit=10")
        for i in range(5):
            await call("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"b{i}"}})
        # Churn past the history, a little before the compaction: the same list goes on.
        now[0] += paging.RETENTION - 1
        seen["kept"] = await call("GET", f"{CM}?limit=100&continue={first['metadata']['continue']}")
        now[0] += 2
        seen["expired"] = await call("GET", f"{CM}?limit=2&continue={first['metadata']['continue']}")
        token = seen["expired"][1]["metadata"].get("continue", "")
        seen["latest"] = await call("GET", f"{CM}?limit=100&continue={token}")
        seen["too_old"] = await call("GET", f"{CM}?resourceVersion={rv}&resourceVersionMatch=Exact")
        seen["future"] = await call("GET", f"{CM}?resourceVersion={rv + 1000}")
        return seen
    finally:
        await client.close()
        await server.close()


def test_a_token_outlives_the_history_until_the_compaction_then_is_410_with_a_token_for_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(paging, "clock", lambda: now[0])
    seen = asyncio.run(_scenario(tmp_path, now))
    code, kept = seen["kept"]
    assert code == 200 and [i["metadata"]["name"] for i in kept["items"]] == ["a2", "a3"]
    code, exact = seen["exact"]
    assert code == 200 and [i["metadata"]["name"] for i in exact["items"]] == ["a0", "a1", "a2", "a3"]
    code, legacy = seen["legacy_exact"]
    assert code == 200 and legacy["metadata"]["resourceVersion"] == exact["metadata"]["resourceVersion"]
    code, status = seen["expired"]
    assert (code, status["reason"], status["message"]) == (410, "Expired", paging.INCONSISTENT_CONTINUE)
    token = status["metadata"]["continue"]
    assert json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))) == \
        {"v": "meta.k8s.io/v1", "rv": -1, "start": "a1\x00"}
    code, rest = seen["latest"]
    assert code == 200 and [i["metadata"]["name"] for i in rest["items"]] == ["a2", "a3", "b0", "b1", "b2", "b3",
                                                                              "b4"]
    code, status = seen["too_old"]
    assert (code, status["message"]) == (410, "The resourceVersion for the provided list is too old.")
    code, status = seen["future"]
    assert (code, status["reason"]) == (504, "Timeout") and "Too large resource version" in status["message"]


@pytest.mark.parametrize("token", ["", "!!", "e30", "bnVsbA", "WzFd", "eyJ2IjoidjIiLCJydiI6MSwic3RhcnQiOiJhIn0",
                                   "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6InRlbiIsInN0YXJ0IjoiYSJ9",
                                   "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIifQ",
                                   "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIvLy9hIn0"])
def test_malformed_tokens_are_400(token: str) -> None:
    with pytest.raises(ApiError) as err:
        paging.decode_continue(token)
    assert err.value.code == 400 and err.value.message.startswith("invalid continue token: continue key is not valid")


def test_tokens_round_trip() -> None:
    assert paging.decode_continue(paging.encode_continue(42, "default/web-1\x00")) == ("default/web-1\x00", 42)


def test_kept_snapshots_are_bounded_oldest_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paging, "SNAPSHOT_ITEMS", 5)
    store = Store(tmp_path / "db")
    objects = [{"metadata": {"name": f"o{i}"}} for i in range(3)]
    paging.remember(store, "ConfigMap", "", 1, objects)
    paging.remember(store, "ConfigMap", "", 2, objects)  # 6 kept: the older one goes
    assert paging.recall(store, "ConfigMap", "", 1) is None
    assert paging.recall(store, "ConfigMap", "", 2) == objects
    store.close()


def test_pages_across_namespaces_follow_the_storage_keys_and_skip_nothing(tmp_path: Path) -> None:
    """``shop-dev/a`` sorts before ``shop/a`` in etcd (``-`` before ``/``): pages cut in (namespace, name) order
    instead skipped shop-dev's objects once the token's key had passed ``shop/``."""
    async def scenario() -> tuple[list[str], list[str]]:
        server = ApiServer(tmp_path)
        client = TestClient(TestServer(server.app()))
        await client.start_server()
        try:
            for ns in ("default", "shop", "shop-dev"):
                await client.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                                              "metadata": {"name": ns}})
                for name in ("a", "b"):
                    await client.post(f"/api/v1/namespaces/{ns}/configmaps",
                                      json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
            whole = await (await client.get("/api/v1/configmaps")).json()
            paged: list[str] = []
            token = ""
            while True:
                chunk = await (await client.get(f"/api/v1/configmaps?limit=1&continue={token}")).json()
                paged += [f'{i["metadata"]["namespace"]}/{i["metadata"]["name"]}' for i in chunk["items"]]
                token = chunk["metadata"].get("continue", "")
                if not token:
                    break
            return [f'{i["metadata"]["namespace"]}/{i["metadata"]["name"]}' for i in whole["items"]], paged
        finally:
            await client.close()
            await server.close()

    whole, paged = asyncio.run(scenario())
    assert paged == whole
    assert [n for n in whole if n.startswith("shop")] == ["shop-dev/a", "shop-dev/b", "shop/a", "shop/b"]
