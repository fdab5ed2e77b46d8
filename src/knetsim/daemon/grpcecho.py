"""The gRPC echo service a simulated backend pod runs, as the Gateway API conformance suite's echo server does.

Service ``gateway_api_conformance.echo_basic.grpcecho.GrpcEcho`` (conformance/echo-basic/grpcecho.proto,
v1.6.1): ``Echo`` and ``EchoTwo`` answer an ``EchoResponse`` whose assertions carry the fully qualified
method, every request header the backend received (after the Gateway's filters), the ``:authority`` and
the pod's context (namespace, service, pod name); ``EchoThree`` is unimplemented on purpose. The
messages are written here field by field (protobuf wire format: tag, varint lengths), which is all
four small messages need; any other service answers UNIMPLEMENTED, as a gRPC server without it would.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

SERVICE = "gateway_api_conformance.echo_basic.grpcecho.GrpcEcho"
ECHO_METHODS = ("Echo", "EchoTwo")
# grpc-status codes (grpc/doc/statuscodes.md)
OK = 0
UNIMPLEMENTED = 12
UNAVAILABLE = 14


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2: strings and messages)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _string(number: int, value: str) -> bytes:
    return _field(number, value.encode()) if value else b""


@dataclass(frozen=True, slots=True)
class PodContext:
    namespace: str
    service: str
    pod: str


def echo_response(full_method: str, headers: Iterable[tuple[str, str]], authority: str, context: PodContext) -> bytes:
    """An ``EchoResponse`` message: assertions(1){method(1), headers(2)*, authority(3), context(4)}, request(2)."""
    header_fields = b"".join(_field(2, _string(1, k) + _string(2, v)) for k, v in headers)
    ctx = _string(1, context.namespace) + _string(3, context.service) + _string(4, context.pod)
    assertions = _string(1, full_method) + header_fields + _string(3, authority) + _field(4, ctx)
    return _field(1, assertions) + _field(2, b"")


def frame(message: bytes) -> bytes:
    """A gRPC length-prefixed message (uncompressed)."""
    return b"\x00" + len(message).to_bytes(4, "big") + message


def answer(path: str) -> tuple[int, str]:
    """(grpc-status, message) the echo server gives a call to ``path`` before building a response."""
    service, _, method = path.lstrip("/").partition("/")
    if service != SERVICE:
        return UNIMPLEMENTED, f"unknown service {service}"
    if method not in ECHO_METHODS:
        return UNIMPLEMENTED, f"method {method} not implemented"
    return OK, ""
