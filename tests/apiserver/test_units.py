"""Pure pieces of the API server: patches, Table cells, protobuf decoding, the controller plan.

Given small hand-built inputs, then the outputs kube-apiserver would give.
"""

from __future__ import annotations

import pytest

from knetsim import printers
from knetsim.apiserver import controllers, patch, proto
from knetsim.apiserver.store import Stored
from knetsim.cluster.config import ClusterConfig


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (119, "119s"), (125, "2m5s"), (600, "10m"),
                                               (3 * 3600 + 240, "3h4m"), (50 * 3600, "2d2h"), (-5, "<invalid>")])
def test_human_duration(seconds: int, text: str) -> None:
    assert printers.human_duration(seconds) == text


def test_strategic_merge_by_key_with_delete_and_order() -> None:
    live = {"spec": {"ports": [{"name": "http", "port": 80}, {"name": "admin", "port": 9000}]}}
    p = {"spec": {"$setElementOrder/ports": [{"port": 8080}], "ports": [{"name": "http", "port": 8080},
                                                                        {"$patch": "delete", "port": 80}]}}
    schema = patch.schema_for_kind("Service", "", "v1")
    out = patch.strategic_merge(live, p, schema)
    assert out["spec"]["ports"] == [{"name": "http", "port": 8080}, {"name": "admin", "port": 9000}]
    c = {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y"}]}}}}
    out = patch.strategic_merge(c, {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x:2"}]}}}},
                                patch.schema_for_kind("Deployment", "apps", "v1"))
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "a", "image": "x:2"}, {"name": "b", "image": "y"}]


def test_merge_and_json_patch() -> None:
    assert patch.merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}) == {"a": {"c": 2, "d": 3}}
    doc = {"metadata": {"labels": {"x": "1"}}, "l": [1, 2]}
    out = patch.json_patch(doc, [{"op": "add", "path": "/metadata/labels/y", "value": "2"},
                                 {"op": "remove", "path": "/l/0"}, {"op": "test", "path": "/l/0", "value": 2}])
    assert out == {"metadata": {"labels": {"x": "1", "y": "2"}}, "l": [2]}
    with pytest.raises(patch.PatchError):
        patch.json_patch(doc, [{"op": "remove", "path": "/nope"}])


def _varint(n: int) -> bytes:
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def _field(num: int, value: bytes | int) -> bytes:
    if isinstance(value, int):
        return _varint(num << 3) + _varint(value)
    return _varint(num << 3 | 2) + _varint(len(value)) + value


def test_protobuf_namespace_body_as_kubectl_132_sends_it() -> None:
    meta = _field(1, b"team-a") + _field(2, b"")  # Go marshals the empty generateName
    raw = _field(1, meta) + _field(2, b"") + _field(3, b"")
    envelope = _field(1, _field(1, b"v1") + _field(2, b"Namespace")) + _field(2, raw) + _field(3, b"") + \
        _field(4, b"")
    assert proto.decode(b"k8s\x00" + envelope) == {"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": "team-a"}}
    with pytest.raises(proto.ProtoError):
        proto.decode(b"k8s\x00" + _field(1, _field(2, b"Role")) + _field(2, b""))


def _stored(objects: dict, body: dict, managed: str = "user", rv: int = 1) -> None:
    meta = body["metadata"]
    objects[(body["kind"], meta.get("namespace", ""), meta["name"])] = Stored(body, rv, managed)


def _apply(objects: dict, p: controllers.Plan) -> None:
    for w in p.writes:
        if w.body is None:
            objects.pop(w.key, None)
        else:
            objects[w.key] = Stored(w.body, 2, w.managed)


def _deploy(name: str, replicas: int) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default",
                                                                       "uid": f"uid-{name}"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def test_plan_is_a_fixed_point_and_keeps_pod_addresses() -> None:
    """Given a Deployment, when a Deployment sorting before it is added, then existing pods keep name and IP."""
    config = ClusterConfig()
    objects: dict = {}
    _stored(objects, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    _stored(objects, _deploy("web", 2))
    first = controllers.plan(objects, config, "2026-01-01T00:00:00Z", {})
    _apply(objects, first)
    assert not controllers.plan(objects, config, "2026-01-01T00:00:01Z", first.meta).writes
    before = {k[2]: s.body["status"]["podIP"] for k, s in objects.items() if k[0] == "Pod" and k[1] == "default"}
    assert len(before) == 2
    _stored(objects, _deploy("aaa", 3))
    _apply(objects, controllers.plan(objects, config, "2026-01-01T00:00:02Z", first.meta))
    after = {k[2]: s.body["status"]["podIP"] for k, s in objects.items() if k[0] == "Pod" and k[1] == "default"}
    assert len(after) == 5
    assert {n: after[n] for n in before} == before
    assert len(set(after.values())) == 5


def test_every_resource_is_served_once() -> None:
    """ConfigMap/Secret/ServiceAccount come from the core's kinds; listing them again duplicated discovery."""
    from collections import Counter

    from knetsim.apiserver.resources import RESOURCES

    assert [kind for kind, n in Counter(r.kind for r in RESOURCES).items() if n > 1] == []
    assert {"ConfigMap", "Secret", "ServiceAccount", "Event"} <= {r.kind for r in RESOURCES}


def test_down_never_signals_a_process_that_is_not_the_daemon(tmp_path) -> None:
    """A stale ready.json whose PID now belongs to another program is not a running cluster."""
    import json
    import os

    from knetsim.apiserver.statedir import running

    (tmp_path / "ready.json").write_text(json.dumps({"pid": os.getppid()}))  # pytest's parent: alive, not ours
    assert running(tmp_path) is None
