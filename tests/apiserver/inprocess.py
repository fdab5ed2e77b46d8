"""An API server in process with its controllers, written to through the registry as a client would.

Tests write objects, await ``server.settle()`` and read the store: what the controllers made of the
writes, without sockets or subprocesses.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from knetsim.apiserver.registry import DeleteOptions, Target, WriteOptions
from knetsim.apiserver.resources import BY_KIND
from knetsim.apiserver.server import ApiServer
from knetsim.controllers import ControllerManager
from knetsim.daemon.daemon import bring_up


class Cluster:
    def __init__(self, server: ApiServer, manager: ControllerManager) -> None:
        self.server, self.manager = server, manager

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        r = BY_KIND[body["kind"]]
        namespace = (body.get("metadata") or {}).get("namespace") or "default"
        return self.server.registry.create(Target(r, namespace if r.namespaced else "", "", ""), body,
                                           WriteOptions()).obj

    def update(self, kind: str, name: str, change: Callable[[dict[str, Any]], None]) -> None:
        r = BY_KIND[kind]
        old = self.server.store.get((kind, "default", name))
        assert old is not None
        body = json.loads(json.dumps(old.body))
        change(body)
        self.server.registry.update(Target(r, "default", name, ""), old, body, WriteOptions())

    def delete(self, kind: str, name: str) -> None:
        # As a client's DELETE (kubectl's Background propagation): the registry's delete path, finalizers and all.
        r = BY_KIND[kind]
        self.server.registry.delete(Target(r, "default" if r.namespaced else "", name, ""), DeleteOptions())

    def objects(self, kind: str) -> dict[str, dict[str, Any]]:
        return {s.body["metadata"]["name"]: s.body for s in self.server.store.list(kind, "default")}

    def events(self, reason: str | None = None) -> list[dict[str, Any]]:
        events = sorted(self.objects("Event").values(), key=lambda e: e["metadata"]["name"])
        return [e for e in events if reason is None or e["reason"] == reason]


@asynccontextmanager
async def running(path: Path) -> AsyncIterator[Cluster]:
    server = ApiServer(path)
    manager = bring_up(server)
    await server.settle()
    try:
        yield Cluster(server, manager)
    finally:
        await manager.close()
        await server.close()


def run(path: Path, scenario: Callable[[Cluster], Coroutine[Any, Any, None]]) -> None:
    async def main() -> None:
        async with running(path) as cluster:
            await scenario(cluster)
    asyncio.run(main())
