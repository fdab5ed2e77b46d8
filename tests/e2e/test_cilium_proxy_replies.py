"""Cilium's proxy (Envoy) denying a request by a CiliumNetworkPolicy HTTP rule, read by real clients.

Given `knetsim up` with examples/kube-proxy-free (Cilium, kube-proxy replacement) and its app applied with
kubectl, when a client POSTs where the policy allows only GET, then the 403 carries Envoy's local reply lines,
lower-case and in Envoy's order (content-length, content-type, date, server: envoy) and the 15-byte body
``Access denied`` with CRLF: read by Python's http.client through the front door's NodePort, and by curl in
a pod (`kubectl exec client -- curl -i`).
"""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest

from .conftest import KUBECTL, Cluster, start, stop, wait_for

# This module starts clusters itself (tests/live.py marks the fixtures' users).
pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "kube-proxy-free"


@pytest.fixture(scope="module")
def kpr(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed: the end-to-end suite drives the real kubectl")
    c = start(tmp_path_factory.mktemp("kpr-replies"), (EXAMPLE / "cluster-config.yaml").read_text())
    try:
        c.kubectl("apply", "-f", str(EXAMPLE / "app.yaml"))
        c.kubectl("wait", "--for=condition=Ready", "pod/client", "--timeout=60s")
        yield c
    finally:
        stop(c)


def post(k: Cluster) -> tuple[int, list[tuple[str, str]], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", int(k.info["ingress_port"]), timeout=30)
    try:
        conn.request("POST", "/", headers={"Host": "10.0.0.121:30080"})
        resp = conn.getresponse()
        return resp.status, list(resp.msg.raw_items()), resp.read()
    finally:
        conn.close()


def assert_envoy_denial(lines: list[tuple[str, str]]) -> None:
    # knetsim's own X-Knetsim-Backend (the front door names the pod it reached) follows Envoy's lines.
    lines = [(n, v) for n, v in lines if n != "X-Knetsim-Backend"]
    assert [n for n, _ in lines] == ["content-length", "content-type", "date", "server"], lines
    assert lines[0] == ("content-length", "15") and lines[1] == ("content-type", "text/plain")
    assert lines[3] == ("server", "envoy")
    assert parsedate_to_datetime(lines[2][1]).tzinfo is not None


def test_the_denial_through_the_nodeport(kpr: Cluster) -> None:
    wait_for(lambda: post(kpr)[0] == 403, timeout=60)
    status, lines, body = post(kpr)
    assert (status, body) == (403, b"Access denied\r\n")
    assert_envoy_denial(lines)


def test_the_denial_to_curl_in_a_pod(kpr: Cluster) -> None:
    out = kpr.kubectl("exec", "client", "--", "curl", "-s", "-i", "-X", "POST", "http://web/").stdout
    head, _, body = out.partition("\n\n") if "\r\n\r\n" not in out else out.partition("\r\n\r\n")
    status_line, *rest = head.replace("\r\n", "\n").split("\n")
    assert status_line == "HTTP/1.1 403 Forbidden"
    assert_envoy_denial([(n, v) for n, _, v in (line.partition(": ") for line in rest)])
    assert body in ("Access denied\r\n", "Access denied\n")
