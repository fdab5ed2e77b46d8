"""Service allocation at write time is a transaction around the write (style habit 15).

Given the registry and a store (no server, no controllers), then a create that fails after its
allocation began leaks nothing: the next create gets the same ClusterIP or port, and the
allocators never re-read the stored Services (they follow the store's notifications).

Address plan: DESIGN defaults (services 10.96.0.0/12, NodePorts 30000-32767).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from knetsim.apiserver.errors import ApiError
from knetsim.apiserver.registry import Registry, Target, WriteOptions
from knetsim.apiserver.resources import BY_KIND
from knetsim.apiserver.store import Store, Write
from knetsim.cluster.config import ClusterConfig

SERVICES = Target(BY_KIND["Service"], "default", "", "")


def service(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80}], **spec}}


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    store = Store(tmp_path / "store.db")
    store.commit([Write(("Namespace", "", "default"), {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": "default"}})])
    return Registry(store, ClusterConfig())


def create(registry: Registry, body: dict[str, Any], dry_run: bool = False) -> dict[str, Any]:
    return registry.create(SERVICES, body, WriteOptions(dry_run=dry_run)).obj


def test_a_rejected_create_gives_back_the_clusterip_it_claimed(registry: Registry) -> None:
    """Given a Service asking for a free ClusterIP and a NodePort another one holds, then it is refused
    and the ClusterIP it had claimed is free for the next request."""
    create(registry, service("a", type="NodePort", ports=[{"port": 80, "nodePort": 30080}]))
    with pytest.raises(ApiError) as refused:
        create(registry, service("b", type="NodePort", clusterIP="10.96.100.100",
                                 ports=[{"port": 80, "nodePort": 30080}]))
    assert refused.value.code == 422
    assert "spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated" in refused.value.message
    assert create(registry, service("c", clusterIP="10.96.100.100"))["spec"]["clusterIP"] == "10.96.100.100"


def test_a_failed_commit_leaks_nothing(registry: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    """Given a create whose write to the store fails, then creating it again gets the same ClusterIP and
    NodePort (a leak would push the stable hash to the next free address)."""
    wanted = create(registry, service("probe", type="NodePort"), dry_run=True)["spec"]
    original = registry.store.commit

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk full")

    monkeypatch.setattr(registry.store, "commit", broken)
    with pytest.raises(OSError):
        create(registry, service("probe", type="NodePort"))
    monkeypatch.setattr(registry.store, "commit", original)
    got = create(registry, service("probe", type="NodePort"))["spec"]
    assert (got["clusterIP"], got["ports"][0]["nodePort"]) == (wanted["clusterIP"], wanted["ports"][0]["nodePort"])


def test_updates_keep_their_values_and_deletes_free_them(registry: Registry) -> None:
    """Given a NodePort Service, then an update keeps its port, and once it is deleted another Service
    may ask for that port."""
    first = create(registry, service("a", type="NodePort", ports=[{"port": 80, "nodePort": 30500}]))
    old = registry.store.get(("Service", "default", "a"))
    assert old is not None
    changed = dict(first, metadata={**first["metadata"], "labels": {"x": "y"}})
    registry.update(Target(BY_KIND["Service"], "default", "a", ""), old, changed, WriteOptions())
    assert registry.store.get(("Service", "default", "a")).body["spec"]["ports"][0]["nodePort"] == 30500  # type: ignore[union-attr]
    with pytest.raises(ApiError):
        create(registry, service("b", type="NodePort", ports=[{"port": 80, "nodePort": 30500}]))
    registry.store.commit([Write(("Service", "default", "a"), None)])
    assert create(registry, service("b", type="NodePort", ports=[{"port": 80, "nodePort": 30500}]))


def test_allocation_does_not_read_the_stored_services(registry: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    """Given many Services, then one more create never lists them (the allocators follow the store)."""
    for i in range(20):
        create(registry, service(f"s{i}"))

    def no_listing(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("allocation listed the stored objects")

    monkeypatch.setattr(registry.store, "list", no_listing)
    ips = {create(registry, service(f"t{i}"))["spec"]["clusterIP"] for i in range(5)}
    assert len(ips) == 5
