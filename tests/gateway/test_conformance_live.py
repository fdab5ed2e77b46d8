"""The restated conformance cases through real sockets against ``knetsim up`` (daemon/gatewaylisteners.py):
kubernetes-sigs/gateway-api ``conformance/tests/httproute-cors.go`` (a preflight answered by the gateway),
``httproute-request-mirror.go`` (the mirror pod's log shows the request; the client gets the primary's answer)
and ``httproute-backend-protocol-websocket.go`` (101 and echoed frames), with the suite's base applied by kubectl.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess

import pytest
from tests.apiserver import conftest as apiserver_conftest
from tests.apiserver.conftest import Live, wait_for

from .test_conformance_cors import ROUTES as CORS_ROUTES
from .test_conformance_mirror import ROUTES as MIRROR_ROUTES
from .test_conformance_upgrades import _V1_PORTS, _V1_PORTS_WITH_PROTOCOLS, DATA, UPGRADE, _client_frame
from .test_conformance_upgrades import ROUTES as PROTOCOL_ROUTES

live = apiserver_conftest.live
INFRA = "gateway-conformance-infra"


@pytest.fixture(scope="module")
def gateway(live: Live) -> int:
    """The base (infra-backend-v1 with its h2c and ws ports), the routes; the local port of same-namespace's
    http listener once it listens."""
    base = (DATA / "conformance-base.yaml").read_text(encoding="utf-8").replace(_V1_PORTS, _V1_PORTS_WITH_PROTOCOLS)
    # The h2c route of test_conformance_upgrades takes every path; here it keeps to /h2c beside the others.
    h2c_only = PROTOCOL_ROUTES.replace("  - backendRefs: [{name: infra-backend-v1, port: 8081}]",
                                       "  - matches: [{path: {type: PathPrefix, value: /h2c}}]\n"
                                       "    backendRefs: [{name: infra-backend-v1, port: 8081}]")
    assert h2c_only != PROTOCOL_ROUTES
    text = "\n---\n".join([base, CORS_ROUTES, MIRROR_ROUTES, h2c_only])
    live.kubectl("apply", "-f", "-", input=text, timeout=120)

    def listening() -> int | None:
        info = json.loads((live.state / "ready.json").read_text())
        row = next((r for r in info.get("gateway_listeners") or []
                    if r["gateway"] == f"{INFRA}/same-namespace" and r["listener"] == "http"), None)
        if row is None:
            return None
        port = int(row["address"].rsplit(":", 1)[1])
        out = _curl(port, "/mirror")
        first = out.stdout.split("\n", 1)[0]
        return port if out.returncode == 0 and " 200 " in first else None

    port = wait_for(listening, timeout=120, interval=1)
    assert port is not None, (live.state / "ready.json").read_text()
    return port


def _curl(port: int, path: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["curl", "-sS", "-i", "-H", "Host: gw.example", *extra, f"http://127.0.0.1:{port}{path}"],
                          capture_output=True, text=True, timeout=20)


def test_a_cors_preflight_is_answered_by_the_gateway(gateway: int) -> None:
    out = _curl(gateway, "/cors-1", "-X", "OPTIONS", "-H", "Origin: https://www.foo.com",
                "-H", "Access-Control-Request-Method: GET")
    head = out.stdout.lower()
    assert head.split("\n", 1)[0].split()[1] in ("200", "204"), out.stdout
    assert "access-control-allow-origin: https://www.foo.com" in head
    assert "access-control-expose-headers: x-header-3,x-header-4" in head
    assert "x-knetsim-backend" not in head  # no backend saw it


def test_the_mirror_pods_log_shows_the_request_and_the_client_gets_the_primary(live: Live, gateway: int) -> None:
    out = _curl(gateway, "/mirror?probe=live-mirror")
    assert f"x-knetsim-backend: {INFRA}/infra-backend-v1-" in out.stdout, out.stdout

    def logged() -> bool:
        pods = live.kubectl("get", "pods", "-n", INFRA, "-l", "app=infra-backend-v2", "-o",
                            "jsonpath={.items[*].metadata.name}").stdout.split()
        return any("Echoing back request made to /mirror?probe=live-mirror to client" in
                   live.kubectl("logs", "-n", INFRA, pod, check=False).stdout for pod in pods)
    assert wait_for(logged, timeout=20, interval=0.5)


def test_websocket_messages_are_echoed(gateway: int) -> None:
    text = b"Websocket Support!"
    with socket.create_connection(("127.0.0.1", gateway), timeout=10) as conn:
        conn.sendall(UPGRADE + _client_frame(0x1, text))
        received = b""
        while not received.endswith(text):
            chunk = conn.recv(4096)
            if not chunk:
                break
            received += chunk
        head, _, frames = received.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101"), received
        assert frames == bytes([0x81, len(text)]) + text
        binary = os.urandom(7)
        conn.sendall(_client_frame(0x2, binary))
        echoed = b""
        while len(echoed) < 2 + len(binary):
            chunk = conn.recv(4096)
            if not chunk:
                break
            echoed += chunk
        assert echoed == bytes([0x82, len(binary)]) + binary

