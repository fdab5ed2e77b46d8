"""A port outside 1-65535, given to any command, is bad input (exit 2) that names the bad value.

A port 0 or 99999 cannot be connected to, so an answer about it ("no listener on port 99999")
would be about nothing; the commands refuse it as the flag's value instead.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from tests.conftest import EXAMPLES

from knetsim.cli.main import cli

SHOP = str(EXAMPLES / "shop")
TLS = str(EXAMPLES / "gateway" / "tls")


def refused(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.output


@pytest.mark.parametrize("port", ["0", "65536", "99999"])
def test_route_refuses_a_gateway_port_out_of_range(port: str) -> None:
    for protocol in ("tcp", "http"):
        output = refused("route", "--gateway", "edge/edge", "--protocol", protocol, "--port", port, "-f", TLS)
        assert f"Invalid value for '--port': {port} is not in the range 1<=x<=65535." in output


@pytest.mark.parametrize("port", ["0", "65536", "-1"])
def test_policy_check_refuses_a_port_number_out_of_range(port: str) -> None:
    output = refused("policy", "check", "-f", SHOP, "--from", "shop/deploy/web", "--to", "shop/db-0", "--port", port)
    assert output == f"error: port {port}: must be between 1 and 65535, inclusive\n"


@pytest.mark.parametrize("target", ["http://web.shop:0/", "http://web.shop:65536/", "tcp://web.shop:0",
                                    "web.shop:0", "web.shop:99999", "http://[fd00::1]:70000/"])
def test_trace_refuses_a_target_port_out_of_range(target: str) -> None:
    output = refused("trace", "-f", SHOP, "--from", "external", target)
    assert output == f"error: target '{target}': port must be between 1 and 65535, inclusive\n"


@pytest.mark.parametrize("port", ["0", "65536"])
def test_packet_and_matrix_refuse_a_port_out_of_range(port: str) -> None:
    assert f"--dport: {port}: must be between 1 and 65535, inclusive" in refused(
        "packet", "-f", SHOP, "--src", "10.0.0.1", "--dst", "10.96.0.1", "--dport", port)
    assert f"Invalid value for '--port': {port} is not in the range 1<=x<=65535." in refused(
        "matrix", "-f", SHOP, "--port", port)


@pytest.mark.parametrize("flag", ["--port", "--dns-port", "--ingress-port"])
def test_up_refuses_a_port_out_of_range_before_starting_anything(flag: str, tmp_path) -> None:
    """0 asks for any free port; 65536 and above (or below 0) cannot be bound and start nothing."""
    state = tmp_path / "state"
    for port in ("65536", "-1"):
        output = refused("up", flag, port, "--state", str(state))
        assert f"Invalid value for '{flag}': {port} is not in the range 0<=x<=65535." in output
    assert not state.exists()
