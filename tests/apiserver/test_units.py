"""Pure pieces of the API server: patches, Table cells, protobuf decoding.

Given small hand-built inputs, then the outputs kube-apiserver would give.
"""

from __future__ import annotations

import pytest

from knetsim import printers
from knetsim.apiserver import patch, proto
from knetsim.model.jsonvalue import merge_patch


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
    assert merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}) == {"a": {"c": 2, "d": 3}}
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


def _envelope(api_version: bytes, kind: bytes, raw: bytes) -> bytes:
    return b"k8s\x00" + _field(1, _field(1, api_version) + _field(2, kind)) + _field(2, raw)


def test_protobuf_pod_with_every_kind_of_field_as_kubectl_debug_copy_to_sends_it() -> None:
    """A whole Pod: embedded (inline) structs, pointers whose zero is meant, maps, quantities, nested
    messages, and a field number newer than v1.35, skipped as the API server's unmarshaller skips it."""
    security = _field(1, _field(2, b"ALL")) + _field(5, 1) + _field(4, 0)  # drop ALL, runAsNonRoot, runAsUser 0
    probe = _field(1, _field(2, _field(1, b"/healthz") + _field(2, _field(1, 0) + _field(2, 8080)))) + \
        _field(4, 5)  # handler (inline ProbeHandler) → httpGet path/port; periodSeconds
    resources = _field(1, _field(1, b"memory") + _field(2, _field(1, b"64Mi")))
    container = (_field(1, b"app") + _field(2, b"busybox:1.36") + _field(15, security) + _field(11, probe)
                 + _field(8, resources) + _field(16, 0) + _field(99, b"from the future"))
    volume = _field(1, b"cfg") + _field(2, _field(19, _field(1, _field(1, b"settings"))))  # inline VolumeSource
    spec = _field(1, volume) + _field(2, container) + _field(11, 0) + _field(21, 0)  # hostNetwork false; automount
    meta = _field(1, b"web-copy") + _field(11, _field(1, b"app") + _field(2, b"web"))
    body = proto.decode(_envelope(b"v1", b"Pod", _field(1, meta) + _field(2, spec)))
    assert body == {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-copy", "labels": {"app": "web"}},
        "spec": {"volumes": [{"name": "cfg", "configMap": {"name": "settings"}}],
                 "containers": [{"name": "app", "image": "busybox:1.36",
                                 "securityContext": {"capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True,
                                                     "runAsUser": 0},
                                 "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080},
                                                    "periodSeconds": 5},
                                 "resources": {"limits": {"memory": "64Mi"}}}],
                 "automountServiceAccountToken": False}}


def test_protobuf_zero_replicas_and_cronjob_bodies() -> None:
    deployment = _field(1, _field(1, b"d")) + _field(2, _field(1, 0) + _field(5, 0))  # replicas 0, minReady 0
    assert proto.decode(_envelope(b"apps/v1", b"Deployment", deployment))["spec"] == {"replicas": 0}
    cron = _field(1, _field(1, b"tick")) + _field(2, _field(1, b"*/1 * * * *") + _field(4, 0))
    assert proto.decode(_envelope(b"batch/v1", b"CronJob", cron))["spec"] == {"schedule": "*/1 * * * *",
                                                                              "suspend": False}


@pytest.mark.parametrize("raw", [
    _field(1, 7),  # metadata sent as a number
    _field(1, b"\xff\xfe"),  # not a message
    b"\x08",  # truncated varint
])
def test_protobuf_that_does_not_parse_is_a_protoerror(raw: bytes) -> None:
    with pytest.raises(proto.ProtoError):
        proto.decode(_envelope(b"v1", b"ConfigMap", raw))


def test_every_resource_is_served_once() -> None:
    """ConfigMap/Secret/ServiceAccount come from the core's kinds; listing them again duplicated discovery. (A custom
    kind is served once per version its CRD serves: HTTPRoute at v1 and v1beta1.)"""
    from collections import Counter

    from knetsim.apiserver.resources import RESOURCES

    assert [gvk for gvk, n in Counter((r.group, r.version, r.kind) for r in RESOURCES).items() if n > 1] == []
    assert {"ConfigMap", "Secret", "ServiceAccount", "Event"} <= {r.kind for r in RESOURCES}


def test_down_never_signals_a_process_that_is_not_the_daemon(tmp_path) -> None:
    """A stale ready.json whose PID now belongs to another program is not a running cluster."""
    import json
    import os

    from knetsim.daemon.statedir import running

    (tmp_path / "ready.json").write_text(json.dumps({"pid": os.getppid()}))  # pytest's parent: alive, not ours
    assert running(tmp_path) is None
