"""Protocol upgrades at the live Gateway listener, restated from kubernetes-sigs/gateway-api ``conformance/tests``:
``httproute-backend-protocol-websocket.go`` (HTTPRouteBackendProtocolWebSocket) and
``httproute-backend-protocol-h2c.go`` (HTTPRouteBackendProtocolH2C), with their YAML re-typed and the base's
infra-backend-v1 given the two ports the suite's base gives it (8081 ``kubernetes.io/h2c`` → 3001, 8082
``kubernetes.io/ws`` → 3000).

The listener (daemon/gatewaylisteners.py) is driven in-process over an in-memory connection, byte for byte what a
client sends: a WebSocket client gets ``101 Switching Protocols`` with the RFC 6455 accept key and its text and
binary messages echoed; an HTTP/2 prior-knowledge client gets 200 from infra-backend-v1.
"""

from __future__ import annotations

import asyncio
import os
from functools import cache
from pathlib import Path

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import ResponseReceived

from knetsim import Cluster
from knetsim.daemon.gatewaylisteners import GatewayListeners

DATA = Path(__file__).parent / "data"
INFRA = "gateway-conformance-infra"
GATEWAY = f"{INFRA}/same-namespace"

_V1_PORTS = """  ports:
  - protocol: TCP
    port: 8080
    targetPort: 3000
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: infra-backend-v1
"""
_V1_PORTS_WITH_PROTOCOLS = """  ports:
  - {name: first-port, protocol: TCP, port: 8080, targetPort: 3000}
  - {name: second-port, protocol: TCP, appProtocol: kubernetes.io/h2c, port: 8081, targetPort: 3001}
  - {name: third-port, protocol: TCP, appProtocol: kubernetes.io/ws, port: 8082, targetPort: 3000}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: infra-backend-v1
"""

ROUTES = """
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: backend-protocol-ws, namespace: gateway-conformance-infra}
spec:
  parentRefs: [{name: same-namespace}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /ws}}]
    backendRefs: [{name: infra-backend-v1, port: 8082}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: backend-protocol-h2c, namespace: gateway-conformance-infra}
spec:
  parentRefs: [{name: same-namespace}]
  rules:
  - backendRefs: [{name: infra-backend-v1, port: 8081}]
"""


@cache
def cluster() -> Cluster:
    base = (DATA / "conformance-base.yaml").read_text(encoding="utf-8")
    assert _V1_PORTS in base
    base = base.replace(_V1_PORTS, _V1_PORTS_WITH_PROTOCOLS).replace(
        "      - name: infra-backend-v1\n        image: registry.k8s.io/gateway-api/echo-basic:v1.5.1\n"
        "        ports:\n        - containerPort: 3000\n",
        "      - name: infra-backend-v1\n        image: registry.k8s.io/gateway-api/echo-basic:v1.5.1\n"
        "        ports:\n        - containerPort: 3000\n        - containerPort: 3001\n")
    return Cluster.from_yaml(base + "\n---\n" + ROUTES, namespace=INFRA, filename="protocols.yaml")


class Connection:
    """The client's side of one connection: what it sends, in chunks, and everything the listener writes back."""

    def __init__(self, *chunks: bytes) -> None:
        self.incoming, self.written = list(chunks), b""

    async def recv(self) -> bytes:
        return self.incoming.pop(0) if self.incoming else b""

    async def send(self, data: bytes) -> None:
        self.written += data


class Server:
    def __init__(self) -> None:
        self.state = cluster().state
        self.state_listeners: list = []

    async def settle(self) -> None:
        return None


def _serve(connection: Connection) -> bytes:
    listeners = GatewayListeners(Server())

    async def run() -> None:
        try:
            await listeners._http(GATEWAY, 80, connection, "http", None, None)
        finally:
            await listeners.close()
    asyncio.run(run())
    return connection.written


def _client_frame(opcode: int, payload: bytes) -> bytes:
    mask = os.urandom(4)
    return bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


UPGRADE = (b"GET /ws HTTP/1.1\r\nHost: gw.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           b"Origin: ws://gateway/test\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
           b"Sec-WebSocket-Version: 13\r\n\r\n")


def test_websocket_connection_reaches_the_backend_and_messages_come_back() -> None:
    """"websocket connection should reach backend": a text frame "Websocket Support!" and a binary frame 1..7 are
    each received back; the accept key is RFC 6455's own example's."""
    text, binary = b"Websocket Support!", bytes([1, 2, 3, 4, 5, 6, 7])
    written = _serve(Connection(UPGRADE + _client_frame(0x1, text), _client_frame(0x2, binary),
                                _client_frame(0x8, b"")))
    head, _, frames = written.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101 Switching Protocols"), head
    assert b"sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" in head
    assert f"x-knetsim-backend: {INFRA}/infra-backend-v1-".encode() in head
    assert frames == bytes([0x81, len(text)]) + text + bytes([0x82, len(binary)]) + binary + bytes([0x88, 0])


def test_http2_prior_knowledge_request_reaches_the_h2c_backend() -> None:
    """"http2 prior knowledge request should reach backend": GET / over h2c gets 200 from infra-backend-v1."""
    client = H2Connection(H2Configuration(client_side=True, header_encoding="utf-8"))
    client.initiate_connection()
    client.send_headers(1, [(":method", "GET"), (":path", "/"), (":scheme", "http"), (":authority", "gw.example")],
                        end_stream=True)
    written = _serve(Connection(client.data_to_send()))
    events = client.receive_data(written)
    [response] = [e for e in events if isinstance(e, ResponseReceived)]
    headers = dict(response.headers)
    assert headers[":status"] == "200", headers
    assert headers["x-knetsim-backend"].startswith(f"{INFRA}/infra-backend-v1-"), headers
