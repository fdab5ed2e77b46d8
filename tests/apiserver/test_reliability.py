"""Reliability: no lost updates, no lost acknowledged writes, 4xx (never 5xx) on bad requests.

Given a live server in a subprocess, then concurrent read-modify-write loops, a kill -9 in
the middle of a burst of creates, and a table of malformed requests.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import ssl
import threading
import time
from pathlib import Path

import pytest

from .conftest import Live, start_server, stop_server

# This module starts clusters itself (tests/live.py marks the fixtures' users).
pytestmark = pytest.mark.live


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



def _log(live: Live) -> str:
    return (live.state.parent / f"{live.state.name}.log").read_text(errors="replace")


CM = "/api/v1/namespaces/default/configmaps"


@pytest.mark.parametrize(("body", "query", "code", "message"), [
    (b'{"dryRun":5}', "", 400,
     "json: cannot unmarshal number into Go struct field DeleteOptions.dryRun of type []string"),
    (b'{"preconditions":"x"}', "", 400,
     "json: cannot unmarshal string into Go struct field DeleteOptions.preconditions of type v1.Preconditions"),
    (b'{"gracePeriodSeconds":"30"}', "", 400,
     "json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64"),
    (b'{"propagationPolicy":5}', "", 400, "json: cannot unmarshal number into Go struct field "
                                          "DeleteOptions.propagationPolicy of type v1.DeletionPropagation"),
    (b'{"propagationPolicy":"Sideways"}', "", 422,
     'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported values: '
     '"Foreground", "Background", "Orphan", "nil"'),
    (b'{"dryRun":["Some"]}', "", 422,
     'DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Some"}: supported values: "All"'),
    (b'{"orphanDependents":true,"propagationPolicy":"Orphan"}', "", 422,
     'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Orphan": orphanDependents and '
     "deletionPropagation cannot be both set"),
    (b'{"kind":"Pod","apiVersion":"v1"}', "", 400, "decoded object cannot be converted to DeleteOptions"),
    (b"[1]", "", 400, "the request body must be a JSON object"),
    (b"", "?gracePeriodSeconds=soon", 400, 'strconv.ParseInt: parsing "soon": invalid syntax'),
    (b"", "?propagationPolicy=Sideways", 422,
     'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported values: '
     '"Foreground", "Background", "Orphan", "nil"'),
])
def test_bad_delete_options_are_4xx_in_the_api_servers_words_and_delete_nothing(
        live: Live, body: bytes, query: str, code: int, message: str) -> None:
    live.request("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep"}})
    got, status = live.request("DELETE", f"{CM}/keep{query}", body or None)
    assert (got, status["message"]) == (code, message), status
    assert live.request("GET", f"{CM}/keep")[0] == 200
    assert "Traceback" not in _log(live)


def test_delete_options_in_the_body_win_over_the_query(live: Live) -> None:
    """handlers/delete.go reads the query only when the body is empty."""
    live.request("POST", CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "twice"}})
    code, _ = live.request("DELETE", f"{CM}/twice?dryRun=All", {"kind": "DeleteOptions", "apiVersion": "v1"})
    assert code == 200
    assert live.request("GET", f"{CM}/twice")[0] == 404


def test_server_side_apply_of_a_non_object_metadata_is_a_400(live: Live) -> None:
    code, status = live.request("PATCH", f"{CM}/ssa?fieldManager=me", b"metadata: []\n",
                                content_type="application/apply-patch+yaml")
    assert (code, status["message"]) == (400, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: '
                                              "cannot unmarshal array into Go struct field ConfigMap.metadata of type "
                                              "v1.ObjectMeta"), status
    code, status = live.request("PATCH", f"{CM}/ssa", b"data: {a: b}\n", content_type="application/apply-patch+yaml")
    assert (code, status["message"]) == (422, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
                                              "is required for apply patch")
    assert live.request("GET", f"{CM}/ssa")[0] == 404
    assert "Traceback" not in _log(live)


@pytest.mark.parametrize(("method", "path", "code", "message"), [
    ("GET", f"{CM}?limit=ten", 400, 'strconv.ParseInt: parsing "ten": invalid syntax'),
    ("GET", f"{CM}?limit=99999999999999999999", 400,
     'strconv.ParseInt: parsing "99999999999999999999": value out of range'),
    ("GET", f"{CM}?continue=bm90LWpzb24", 400,
     "invalid continue token: continue key is not valid: Expecting value: line 1 column 1 (char 0)"),
    ("GET", f"{CM}?continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MCwic3RhcnQiOiJhIn0", 400,
     "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version "
     "meta.k8s.io/v1)"),
    ("GET", f"{CM}?continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIuLi94In0", 400,
     "invalid continue token: continue key is not valid: ../x"),
    ("GET", f"{CM}?limit=1&resourceVersion=1&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJhIn0",
     400, "specifying resource version is not allowed when using continue"),
    ("GET", f"{CM}?resourceVersion=abc", 400, 'invalid resource version: resourceVersion: Invalid value: "abc": '
                                              'strconv.ParseUint: parsing "abc": invalid syntax'),
    ("GET", f"{CM}?resourceVersionMatch=Exact", 422, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: '
                                                     "Forbidden: resourceVersionMatch is forbidden unless "
                                                     "resourceVersion is provided"),
    ("GET", f"{CM}?resourceVersion=1&resourceVersionMatch=Newest", 422,
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Newest": supported values: '
     '"Exact", "NotOlderThan", ""'),
    ("GET", f"{CM}?watch=true&timeoutSeconds=later", 400, 'strconv.ParseInt: parsing "later": invalid syntax'),
    ("GET", f"{CM}?watch=1&resourceVersion=x1", 400, 'invalid resource version: resourceVersion: Invalid value: '
                                                     '"x1": strconv.ParseUint: parsing "x1": invalid syntax'),
    ("GET", f"{CM}?labelSelector=a%20in%20(b", 400, None),
    ("GET", f"{CM}?fieldSelector=metadata.name", 400,
     "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
    ("POST", f"{CM}?dryRun=Some", 422,
     'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Some"}: supported values: "All"'),
    ("POST", f"{CM}?fieldValidation=Loose", 422, 'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: '
                                                 'Unsupported value: "Loose": supported values: "", "Ignore", '
                                                 '"Strict", "Warn"'),
    ("POST", f"{CM}?fieldManager={'m' * 129}", 422,
     'CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes'),
    ("POST", f"{CM}?fieldManager=a%07b", 422, 'CreateOptions.meta.k8s.io "" is invalid: fieldManager: Invalid '
                                              'value: "a\\u0007b": invalid character U+0007 (at position 1)'),
    ("PATCH", f"{CM}/x?force=true", 422,
     'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch'),
])
def test_bad_query_parameters_are_4xx_in_the_api_servers_words(live: Live, method: str, path: str, code: int,
                                                                message: str | None) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "q"}} if method != "GET" else None
    got, status = live.request(method, path, body, content_type="application/merge-patch+json" if method == "PATCH"
                               else "application/json")
    assert got == code and status["kind"] == "Status", status
    if message is not None:
        assert status["message"] == message
    assert "Traceback" not in _log(live)


def _pages(live: Live, path: str, limit: int) -> tuple[list[dict], list[dict]]:
    items, metas = [], []
    token = ""
    while True:
        code, page = live.request("GET", f"{path}?limit={limit}" + (f"&continue={token}" if token else ""))
        assert code == 200, page
        items += page["items"]
        metas.append(page["metadata"])
        token = page["metadata"].get("continue", "")
        if not token:
            return items, metas


def test_limit_and_continue_page_one_consistent_snapshot(live: Live) -> None:
    live.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": "paged"}})
    path = "/api/v1/namespaces/paged/configmaps"
    for i in range(7):
        live.request("POST", path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}"},
                                    "data": {"i": str(i)}})
    code, first = live.request("GET", f"{path}?limit=3")
    assert [i["metadata"]["name"] for i in first["items"]] == ["cm-0", "cm-1", "cm-2"]
    # The namespace's kube-root-ca.crt (the root CA publisher's, as on every cluster) sorts last.
    assert first["metadata"]["remainingItemCount"] == 5
    token = first["metadata"]["continue"]
    decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    assert decoded == {"v": "meta.k8s.io/v1", "rv": int(first["metadata"]["resourceVersion"]), "start": "cm-2\x00"}
    # Writes between two pages are not seen by the rest of the list.
    live.request("DELETE", f"{path}/cm-4")
    live.request("POST", path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-3a"}})
    cm5 = live.request("GET", f"{path}/cm-5")[1]
    live.request("PUT", f"{path}/cm-5", dict(cm5, data={"i": "changed"}))
    code, second = live.request("GET", f"{path}?limit=3&continue={token}")
    assert code == 200, second
    assert [i["metadata"]["name"] for i in second["items"]] == ["cm-3", "cm-4", "cm-5"]
    assert second["items"][2]["data"] == {"i": "5"}
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert second["metadata"]["remainingItemCount"] == 2
    _, last = live.request("GET", f"{path}?limit=3&continue={second['metadata']['continue']}")
    assert [i["metadata"]["name"] for i in last["items"]] == ["cm-6", "kube-root-ca.crt"]
    assert "continue" not in last["metadata"] and "remainingItemCount" not in last["metadata"]
    # A fresh list sees the writes; with a selector the remaining count is not guessed.
    items, _ = _pages(live, path, 2)
    assert [i["metadata"]["name"] for i in items] == ["cm-0", "cm-1", "cm-2", "cm-3", "cm-3a", "cm-5", "cm-6",
                                                      "kube-root-ca.crt"]
    _, selected = live.request("GET", f"{path}?limit=1&fieldSelector=metadata.name!%3Dcm-0")
    assert [i["metadata"]["name"] for i in selected["items"]] == ["cm-1"]
    assert selected["metadata"]["continue"] and "remainingItemCount" not in selected["metadata"]


def test_kubectl_chunk_size_and_the_python_client_page_through_everything(live: Live) -> None:
    live.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": "chunks"}})
    for i in range(5):
        live.request("POST", "/api/v1/namespaces/chunks/configmaps",
                     {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}})
    got = live.kubectl("get", "configmaps", "-n", "chunks", "--chunk-size=2", "-o", "name", "-v=6")
    assert [n for n in got.stdout.split() if n.startswith("configmap/c")] == [f"configmap/c{i}" for i in range(5)]
    assert got.stderr.count("limit=2") >= 3 and "continue=" in got.stderr  # it paged, three requests at least
    table = live.kubectl("get", "configmaps", "-n", "chunks", "--chunk-size=2").stdout.splitlines()
    assert table[0].split() == ["NAME", "DATA", "AGE"] and [r.split()[0] for r in table[1:6]] == \
        [f"c{i}" for i in range(5)]
    kubernetes = pytest.importorskip("kubernetes")
    api = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(config_file=live.kubeconfig))
    names, token, pages = [], None, 0
    while True:
        page = api.list_namespaced_config_map("chunks", limit=2, _continue=token)
        names += [i.metadata.name for i in page.items]
        pages += 1
        token = page.metadata._continue
        if not token:
            break
    assert names[:5] == [f"c{i}" for i in range(5)] and pages >= 3


NGINX_400 = ("<html>\r\n<head><title>400 Bad Request</title></head>\r\n<body>\r\n<center><h1>400 Bad Request</h1>"
             "</center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")


def _raw(port: int, data: bytes, tls: ssl.SSLContext | None = None, timeout: float = 5) -> bytes:
    """What a listener answers to these exact bytes (b"" when it closes without a word)."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    with tls.wrap_socket(raw, server_hostname="127.0.0.1") if tls is not None else raw as sock:
        sock.sendall(data)
        out = b""
        try:
            while chunk := sock.recv(65536):
                out += chunk
                if b"\r\n\r\n" in out and b"Connection: close" not in out and len(out) > 200:
                    break
        except (TimeoutError, ConnectionResetError):
            pass
        return out


def _status(answer: bytes) -> int | None:
    line = answer.split(b"\r\n", 1)[0].split()
    return int(line[1]) if len(line) > 1 and line[1].isdigit() else None


HOSTILE_HOSTS = [b"[", b"]", b"[::1]", b"[::1]:80", b"[zz", b"a:b:c", b"127.0.0.1:99999", b"1.2.3.4:abc", b"x" * 300,
                 b"%00", b"\xff\xfe", b"shop.example.com.", b"UPPER.Example.COM", b"localhost:0", b":80", b"-a",
                 b"a_b.example", b"\xc3\xa9.example", b"10.96.0.1", b"172.18.0.3:30000", b"172.18.255.200",
                 b"a.b.c.d.e.f.g.h", b"a\\b", b"localhost:-1", b"[::ffff:1.2.3.4]:8080"]
BAD_HOSTS = [b"a..b", b"a/b", b".", b"..", b""]
UNPARSEABLE_HOSTS = [b"a\x01b", b"a\x7fb"]  # refused by the HTTP parser before any handler: aiohttp's 400
HOSTILE_PATHS = [b"/../x", b"/%2e%2e/x", b"//", b"/a?b=%ff", b"/" + b"a" * 4000, b"/%00", b"/a%2fb", b"/;x",
                 b"/.well-known/../../etc/passwd", b"*", b"/\xff", b"/?" + b"&" * 2000, b"http://evil.example/"]
METHODS = [b"POST", b"FOO", b"DELETE", b"OPTIONS", b"PATCH", b"TRACE", b"M-SEARCH", b"HEAD"]


def test_the_front_door_answers_hostile_requests_as_nginx_would(live: Live) -> None:
    port = live.info["ingress_port"]
    answers: dict[bytes, bytes] = {}
    for host in HOSTILE_HOSTS + BAD_HOSTS + UNPARSEABLE_HOSTS:
        answers[b"host " + host] = _raw(port, b"GET / HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n")
    for path in HOSTILE_PATHS:
        answers[b"path " + path] = _raw(port, b"GET " + path + b" HTTP/1.1\r\nHost: localhost\r\nConnection: "
                                              b"close\r\n\r\n")
    for method in METHODS:
        answers[b"method " + method] = _raw(port, method + b" / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n"
                                                           b"Connection: close\r\n\r\n{}")
    answers[b"no host 1.1"] = _raw(port, b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
    answers[b"no host 1.0"] = _raw(port, b"GET / HTTP/1.0\r\n\r\n")
    answers[b"two hosts"] = _raw(port, b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n")
    for name, answer in answers.items():
        status = _status(answer)
        assert status is None or status < 500, (name, answer[:300])
    for host in BAD_HOSTS:
        answer = answers[b"host " + host]
        assert _status(answer) == 400 and answer.endswith(NGINX_400.encode()), (host, answer)
    assert all(_status(answers[b"host " + host]) == 400 for host in UNPARSEABLE_HOSTS)
    assert _status(answers[b"no host 1.1"]) == 400 and _status(answers[b"two hosts"]) == 400
    # A name nginx takes but no server_name matches reaches its default server: the default backend.
    assert _status(answers[b"host ["]) == 404 and _status(answers[b"no host 1.0"]) == 404
    assert "Traceback" not in _log(live)
    assert live.request("GET", "/version")[0] == 200


def test_malformed_or_cut_requests_are_one_log_line_each(live: Live) -> None:
    tls = ssl.create_default_context(cafile=str(live.state / "serving.crt"))
    api, entry = live.info["api_port"], live.info["ingress_port"]
    token = live.token.encode()
    garbage = [b"get / HTTP/1.1\r\nHost: x\r\n\r\n", b"GE\x00T / HTTP/1.1\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n",
               b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", b"\xff\xfe / HTTP/1.1\r\n\r\n",
               b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
               b"GET / HTTP/1.1\r\nHost: a\r\nX: " + b"a" * 20000 + b"\r\n\r\n",
               b"GET " + b"/a" * 5000 + b" HTTP/1.1\r\n\r\n", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
               b"GET /api HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xff\r\n\r\n"]
    before = _log(live)
    for data in garbage:
        assert (_status(_raw(api, data, tls)) or 400) < 500
        assert (_status(_raw(entry, data)) or 400) < 500
    cut = (b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           b"Content-Length: 1000\r\nAuthorization: Bearer " + token + b"\r\n\r\n{\"a\":")
    for port, ctx in ((api, tls), (entry, None)):
        raw = socket.create_connection(("127.0.0.1", port), timeout=5)
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") if ctx is not None else raw as sock:
            sock.sendall(cut)
            time.sleep(0.3)
    time.sleep(0.5)
    new = _log(live)[len(before):]
    assert "Traceback" not in new, new
    lines = [line for line in new.splitlines() if line.strip()]
    assert all(" knetsim." in line for line in lines), new  # one line each, from knetsim's own loggers
    assert len(lines) <= 2 * len(garbage) + 2
    assert live.request("GET", "/version")[0] == 200


def test_a_server_bug_is_a_500_with_its_traceback_in_the_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    import knetsim.apiserver.registry as registry
    from knetsim.apiserver.server import ApiServer

    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(registry.Registry, "create", broken)

    async def run() -> tuple[int, dict]:
        server = ApiServer(tmp_path)
        client = TestClient(TestServer(server.app()))
        await client.start_server()
        try:
            resp = await client.post(CM, json={"metadata": {"name": "a"}})
            return resp.status, await resp.json()
        finally:
            await client.close()
            await server.close()

    code, status = asyncio.run(run())
    assert (code, status["reason"]) == (500, "InternalError")
    bugs = [r for r in caplog.records if r.exc_info and r.exc_info[0] is ZeroDivisionError]
    assert bugs and bugs[0].levelname == "ERROR" and "Traceback" in caplog.text


def test_a_node_a_client_writes_has_no_kubelet_and_its_daemonset_pods_stay_pending(tmp_path: Path) -> None:
    # A Node with no address and no pod CIDR (`{"metadata": {"name": "a"}, "spec": {}}`) once sent the pod
    # starter round a loop of writes and events that grew the server by GBs and never settled.
    from aiohttp.test_utils import TestClient, TestServer

    from knetsim.apiserver.server import ApiServer
    from knetsim.daemon.daemon import bring_up

    async def scenario() -> list[dict[str, object]]:
        server = ApiServer(tmp_path)
        manager = bring_up(server)
        client = TestClient(TestServer(server.app()))
        await client.start_server()
        try:
            await server.settle()
            resp = await client.post("/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node",
                                                             "metadata": {"name": "a"}, "spec": {}})
            assert resp.status == 201, await resp.text()
            await asyncio.wait_for(server.settle(), 30)
            resp = await client.get("/api/v1/pods?fieldSelector=spec.nodeName%3Da")
            assert resp.status == 200
            return (await resp.json())["items"]
        finally:
            await client.close()
            await manager.close()
            await server.close()

    pods = asyncio.run(scenario())
    assert pods, "the DaemonSets place a pod on every node, a client's included"
    for pod in pods:
        status = pod.get("status") or {}
        assert status.get("phase") in (None, "Pending") and not status.get("podIP") and \
            not status.get("containerStatuses"), (pod["metadata"]["name"], status)
