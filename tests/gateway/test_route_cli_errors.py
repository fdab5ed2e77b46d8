"""`knetsim route --gateway` names the option a bad value came from."""

from __future__ import annotations

from tests.helpers import knetsim


def test_a_malformed_grpc_method_blames_grpc_method_not_gateway() -> None:
    result = knetsim("route", "--gateway", "edge/edge", "--protocol", "grpc", "--host", "grpc.shop.example",
                     "--grpc-method", "Foo", "-f", "examples/gateway/tls")
    assert result.exit_code == 2
    assert "Invalid value for '--grpc-method': gRPC method 'Foo' is not of the form package.Service/Method" in \
        result.output
