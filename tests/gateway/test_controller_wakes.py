"""The Gateway controller is not woken by its own status writes: a route applied live is translated once
before the cluster settles (it was translated again after the controller's own write, for nothing), and a
change of a spec still wakes it."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.apiserver.inprocess import Cluster, run

from knetsim.model.loader import load_paths

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "gateway" / "quickstart"


def test_a_status_write_does_not_wake_the_controller_a_spec_change_does(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from knetsim import gateway

    calls: list[int] = []
    original = gateway.translate

    def counting(state):  # type: ignore[no-untyped-def]
        calls.append(1)
        return original(state)
    monkeypatch.setattr(gateway, "translate", counting)

    async def scenario(c: Cluster) -> None:
        docs = load_paths([str(QUICKSTART)]).documents
        for doc in docs:
            if doc.kind != "HTTPRoute":
                c.create(doc.body)
        await c.server.settle()
        route = next(d for d in docs if d.kind == "HTTPRoute")
        calls.clear()
        c.create(route.body)
        await c.server.settle()
        assert c.server.store.objects[("HTTPRoute", "default", "backend")].body["status"]["parents"]
        assert len(calls) == 1  # one translation: its own status write did not wake the controller again
        calls.clear()
        c.update("HTTPRoute", "backend", lambda body: body["spec"].update(hostnames=["other.example.com"]))
        await c.server.settle()
        assert len(calls) >= 1

    run(tmp_path, scenario)
