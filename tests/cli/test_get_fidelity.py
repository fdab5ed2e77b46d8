"""``knetsim get`` prints what kubectl prints for the same objects and arguments."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from tests.conftest import EXAMPLES

from knetsim import printers
from knetsim.cli.main import cli
from knetsim.model.apis.catalog import DEFINITIONS

TLS = str(EXAMPLES / "gateway" / "tls")
EVERY_KIND = sorted({*printers.PRINTERS, *(d.kind for d in DEFINITIONS), "ConfigMap"})


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.mark.parametrize("kind", EVERY_KIND)
def test_an_object_without_a_creation_time_is_of_unknown_age(kind: str) -> None:
    """kubectl's translateTimestampSince prints "<unknown>" for a missing time, whatever the kind."""
    headers = [name for name, _ in printers.columns(kind)]
    if "AGE" not in headers:
        pytest.skip(f"{kind} has no AGE column")
    body = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x", "namespace": "default"}}
    assert printers.cells(kind, body, printers.utc_now())[headers.index("AGE")] == "<unknown>"


def test_the_gateway_tls_example_prints_every_route_and_policy_of_unknown_age() -> None:
    result = run("get", "tlsroutes,tcproutes,udproutes,backendtlspolicies", "-A", "-f", TLS)
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.output.splitlines() if line and not line.startswith("NAMESPACE")]
    assert len(rows) == 4
    assert all(row[-1] == "<unknown>" for row in rows), result.output
