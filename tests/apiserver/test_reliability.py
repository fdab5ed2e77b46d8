"""Reliability: no lost updates, no lost acknowledged writes, 4xx (never 5xx) on bad requests.

Given a live server in a subprocess, then concurrent read-modify-write loops, a kill -9 in
the middle of a burst of creates, and a table of malformed requests.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from pathlib import Path

import pytest

from .conftest import Live, start_server, stop_server


def test_concurrent_writers_with_conflicts_lose_no_update(live: Live) -> None:
    code, _ = live.request("POST", "/api/v1/namespaces/default/configmaps",
                           {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "counter"},
                            "data": {"n": "0"}})
    assert code == 201
    writers, each = 6, 15
    conflicts = []

    def work() -> None:
        for _ in range(each):
            while True:
                _, cm = live.request("GET", "/api/v1/namespaces/default/configmaps/counter")
                cm["data"]["n"] = str(int(cm["data"]["n"]) + 1)
                code, body = live.request("PUT", "/api/v1/namespaces/default/configmaps/counter", cm)
                if code == 200:
                    break
                assert code == 409, body
                conflicts.append(1)

    threads = [threading.Thread(target=work) for _ in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _, cm = live.request("GET", "/api/v1/namespaces/default/configmaps/counter")
    assert cm["data"]["n"] == str(writers * each)
    assert conflicts, "the writers never raced; the test proved nothing"


def test_kill_9_during_a_burst_loses_no_acknowledged_object(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    proc, info = start_server(state)
    live = Live(state, tmp_path, proc, info)
    acked: list[str] = []
    stop = threading.Event()

    def burst() -> None:
        i = 0
        while not stop.is_set():
            name = f"cm-{i}"
            try:
                code, _ = live.request("POST", "/api/v1/namespaces/default/configmaps",
                                       {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                                        "data": {"i": str(i)}})
            except OSError:
                return
            if code == 201:
                acked.append(name)
            i += 1

    thread = threading.Thread(target=burst)
    thread.start()
    time.sleep(1.0)
    stop_server(proc, hard=True)
    stop.set()
    thread.join(10)
    assert len(acked) > 10
    rv_before = None
    proc, info = start_server(state)
    try:
        live = Live(state, tmp_path, proc, info)
        _, listing = live.request("GET", "/api/v1/namespaces/default/configmaps")
        names = {i["metadata"]["name"] for i in listing["items"]}
        assert set(acked) <= names
        rv_before = {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in listing["items"]}
    finally:
        stop_server(proc)
    # A clean restart serves the same objects at the same resourceVersions.
    proc, info = start_server(state)
    try:
        live = Live(state, tmp_path, proc, info)
        _, listing = live.request("GET", "/api/v1/namespaces/default/configmaps")
        assert {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in listing["items"]} == rv_before
    finally:
        stop_server(proc)


BIG = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":"' + b"x" * (4 << 20) + b'"}}'


@pytest.mark.parametrize(("method", "path", "body", "ctype", "code", "reason"), [
    ("POST", "/api/v1/namespaces/default/configmaps", b"{not json", "application/json", 400, "BadRequest"),
    ("POST", "/api/v1/namespaces/default/configmaps", b"[1,2]", "application/json", 400, "BadRequest"),
    ("POST", "/api/v1/namespaces/default/configmaps", b"", "application/json", 400, "BadRequest"),
    ("POST", "/api/v1/namespaces/default/configmaps", b"k8s\x00\xff\xff", "application/vnd.kubernetes.protobuf",
     400, "BadRequest"),
    ("POST", "/api/v1/namespaces/default/configmaps", b"{}", "text/plain", 415, "UnsupportedMediaType"),
    ("POST", "/api/v1/namespaces/default/configmaps", BIG, "application/json", 413, "RequestEntityTooLarge"),
    ("GET", "/api/v1/namespaces/default/widgets", None, "", 404, "NotFound"),
    ("GET", "/apis/example.com/v1/widgets", None, "", 404, "NotFound"),
    ("POST", "/api/v1/namespaces/default/services", b'{"apiVersion":"apps/v1","kind":"Deployment"}',
     "application/json", 400, "BadRequest"),
    ("POST", "/api/v1/namespaces/nowhere/configmaps", b'{"metadata":{"name":"x"}}', "application/json", 404,
     "NotFound"),
    ("PATCH", "/api/v1/namespaces/default/services/kubernetes", b'{"spec":', "application/merge-patch+json", 400,
     "BadRequest"),
    ("PATCH", "/api/v1/namespaces/default/services/kubernetes", b'[{"op":"remove","path":"/nope"}]',
     "application/json-patch+json", 422, "Invalid"),
    ("PUT", "/api/v1/namespaces/default/services/kubernetes", b'{"metadata":{"name":"other"}}', "application/json",
     400, "BadRequest"),
    ("DELETE", "/api/v1/namespaces/default/services/nope", None, "", 404, "NotFound"),
    ("GET", "/api/v1/namespaces/default/pods?labelSelector=a%20in%20(", None, "", 400, "BadRequest"),
])
def test_bad_requests_get_4xx_status_objects(live: Live, method: str, path: str, body: bytes | None, ctype: str,
                                             code: int, reason: str) -> None:
    got, status = live.request(method, path, body, content_type=ctype)
    assert (got, status.get("kind"), status.get("reason")) == (code, "Status", reason), status


def test_garbage_on_the_socket_does_not_kill_the_server(live: Live) -> None:
    ctx = ssl.create_default_context(cafile=str(live.state / "serving.crt"))
    with socket.create_connection(("127.0.0.1", live.info["api_port"]), timeout=5) as raw, \
            ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        tls.sendall(b"\x00\x01GARBAGE\r\n\r\n")
        tls.recv(100)
    assert live.request("GET", "/version")[0] == 200

