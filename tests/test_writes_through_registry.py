"""Every write reaches the store through the registry (DESIGN.md: "every write, delete included, through
the registry"), the server's own in-process writers included: controllers' batches, the kubelet's pod
status, events, bootstrap and the start-up recheck call ``registry.commit_batch``. A ``.commit(...)`` call
on a store anywhere else in ``src/knetsim`` fails here, naming the file and line."""

from __future__ import annotations

import ast
from pathlib import Path

import knetsim
from knetsim.apiserver.registry import Registry, commit_batch, status_write
from knetsim.apiserver.store import Key, Store, Write
from knetsim.cluster.config import ClusterConfig
from knetsim.controllers.base import Batch

SRC = Path(knetsim.__file__).parent
# The store defines commit; the registry is the one path that calls it.
ALLOWED = {SRC / "apiserver" / "store.py", SRC / "apiserver" / "registry.py"}


def _store_commits(tree: ast.AST) -> list[int]:
    """Lines of ``<something>.store.commit(...)`` or ``store.commit(...)`` calls."""
    lines = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "commit"):
            continue
        receiver = node.func.value
        name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", "")
        if "store" in name.lower():
            lines.append(node.lineno)
    return lines


def test_no_store_commit_outside_the_registry_and_the_store() -> None:
    found = [f"{path.relative_to(SRC.parent)}:{line}" for path in sorted(SRC.rglob("*.py")) if path not in ALLOWED
             for line in _store_commits(ast.parse(path.read_text(), str(path)))]
    assert found == [], f"store.commit outside the registry (use registry.commit_batch): {found}"


def test_the_check_finds_a_store_commit() -> None:
    """The scan above can fail: it sees the shapes the writers used before they moved."""
    assert _store_commits(ast.parse("self.store.commit([w])\nstore.commit(ws, durable=False)\ntxn.commit()")) == [1, 2]


def _pod(store: Store) -> None:
    registry = Registry(store, ClusterConfig())
    from knetsim.apiserver.registry import Target, WriteOptions
    from knetsim.apiserver.resources import BY_KIND
    registry.create(Target(BY_KIND["Namespace"], "", "", ""), {"apiVersion": "v1", "kind": "Namespace",
                                                               "metadata": {"name": "default"}}, WriteOptions())
    # No controller runs here: the account the pod is admitted with is made as the service account controller would.
    registry.create(Target(BY_KIND["ServiceAccount"], "default", "", ""),
                    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}, WriteOptions())
    registry.create(Target(BY_KIND["Pod"], "default", "", ""),
                    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}, WriteOptions())


def test_a_status_write_takes_only_the_status(tmp_path: Path) -> None:
    """The status strategy runs for in-process writers too: a kubelet's status write cannot change the spec."""
    store = Store(tmp_path / "state.db")
    _pod(store)
    key = ("Pod", "default", "web")
    stored = store.get(key)
    assert stored is not None
    new = {**stored.body, "spec": {**stored.body["spec"], "nodeName": "elsewhere"},
           "status": {"phase": "Running"}}
    write = status_write(stored, key, new, by="kubelet")
    assert write is not None
    commit_batch(store, [write], by="kubelet")
    after = store.get(key)
    assert after is not None
    assert after.body["status"]["phase"] == "Running"
    assert after.body["spec"] == stored.body["spec"]


def test_an_invalid_status_write_is_refused(tmp_path: Path) -> None:
    """Validation runs for in-process status writes: a label value a status write carries is checked."""
    store = Store(tmp_path / "state.db")
    _pod(store)
    key = ("Pod", "default", "web")
    stored = store.get(key)
    assert stored is not None
    bad = {**stored.body, "metadata": {**stored.body["metadata"], "labels": {"app": "not a label value!"}},
           "status": {"phase": "Running"}}
    assert status_write(stored, key, bad, by="kubelet") is None
    commit_batch(store, [Write(key, None)], by="test")
    assert store.get(key) is None


def _deployment(store: Store) -> Key:
    registry = Registry(store, ClusterConfig())
    from knetsim.apiserver.registry import Target, WriteOptions
    from knetsim.apiserver.resources import BY_KIND
    registry.create(Target(BY_KIND["Namespace"], "", "", ""), {"apiVersion": "v1", "kind": "Namespace",
                                                               "metadata": {"name": "default"}}, WriteOptions())
    labels = {"app": "web"}
    registry.create(Target(BY_KIND["Deployment"], "default", "", ""),
                    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": labels},
                     "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                              "template": {"metadata": {"labels": labels},
                                           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}},
                    WriteOptions())
    return ("Deployment", "default", "web")


def test_a_controllers_status_write_cannot_change_spec_or_labels(tmp_path: Path) -> None:
    """``Batch.put_status`` is a ``PUT .../status``: the Deployment's status strategy keeps the stored spec, labels
    and generation (pkg/registry/apps/deployment/strategy.go, deploymentStatusStrategy.PrepareForUpdate) and takes
    the status; the write still bumps the resourceVersion."""
    store = Store(tmp_path / "state.db")
    key = _deployment(store)
    stored = store.get(key)
    assert stored is not None
    batch = Batch(store, "2026-12-06T00:00:00Z", manager="deployment-controller")
    batch.put_status(key, {**stored.body,
                           "metadata": {**stored.body["metadata"], "labels": {"app": "hijacked"}, "generation": 7},
                           "spec": {**stored.body["spec"], "replicas": 9},
                           "status": {"replicas": 2, "observedGeneration": 1}})
    batch.commit()
    after = store.get(key)
    assert after is not None
    assert after.body["status"] == {"replicas": 2, "observedGeneration": 1}
    assert after.body["spec"] == stored.body["spec"]
    assert after.body["metadata"]["labels"] == {"app": "web"}
    assert after.body["metadata"]["generation"] == 1
    assert after.rv > stored.rv


def test_a_sync_writing_spec_and_status_lands_as_one_write(tmp_path: Path) -> None:
    """A ``put`` (the revision annotation) then a ``put_status`` of the same object in one batch: one write
    carrying both, as the Deployment controller's Update then UpdateStatus land together."""
    store = Store(tmp_path / "state.db")
    key = _deployment(store)
    stored = store.get(key)
    assert stored is not None
    annotated = {**stored.body, "metadata": {**stored.body["metadata"], "annotations": {"revision": "1"}}}
    batch = Batch(store, "2026-12-06T00:00:00Z", manager="deployment-controller")
    batch.put(key, annotated)
    batch.put_status(key, {**annotated, "spec": {**stored.body["spec"], "paused": True}, "status": {"replicas": 2}})
    assert len(batch.writes) == 1
    batch.commit()
    after = store.get(key)
    assert after is not None
    assert after.body["metadata"]["annotations"] == {"revision": "1"}
    assert after.body["status"] == {"replicas": 2}
    assert "paused" not in after.body["spec"]


def test_a_controllers_invalid_status_write_is_dropped(tmp_path: Path) -> None:
    """The status rules validate a controller's write: a label value no object may carry is refused, nothing is
    written (the API server's 422), the stored object stays."""
    store = Store(tmp_path / "state.db")
    _pod(store)
    key = ("Pod", "default", "web")
    stored = store.get(key)
    assert stored is not None
    batch = Batch(store, "2026-12-06T00:00:00Z", manager="kubelet")
    batch.put_status(key, {**stored.body, "metadata": {**stored.body["metadata"], "labels": {"app": "not valid!"}},
                           "status": {"phase": "Running"}})
    assert batch.writes == []
    batch.commit()
    assert store.get(key) == stored
