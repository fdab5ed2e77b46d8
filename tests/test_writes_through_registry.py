"""Every write reaches the store through the registry (DESIGN.md: "every write, delete included, through
the registry"), the server's own in-process writers included: controllers' batches, the kubelet's pod
status, events, bootstrap and the start-up recheck call ``registry.commit_batch``. A ``.commit(...)`` call
on a store anywhere else in ``src/knetsim`` fails here, naming the file and line."""

from __future__ import annotations

import ast
from pathlib import Path

import knetsim
from knetsim.apiserver.registry import Registry, commit_batch, status_write
from knetsim.apiserver.store import Store, Write
from knetsim.cluster.config import ClusterConfig

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
