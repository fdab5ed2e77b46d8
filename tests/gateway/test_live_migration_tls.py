"""The bank's converted Gateway, live: what `migrate check` compared offline, seen by real clients.

Given the bank's backends (examples/ingress-nginx-tls without its Ingresses and their controller) and what
`migrate ingress` wrote for it (examples/ingress-nginx-tls-gateway, with the bank's CA in the
BackendTLSPolicy: examples/ingress-nginx-tls-ca) applied with kubectl to ``knetsim up``, then through the
Gateway's loopback listeners: openssl gets the ledger pods' own certificate through the Passthrough
listener, curl gets the website's Secret and, re-encrypted under the BackendTLSPolicy, the statements
pods' answer; plain http to each host is redirected to https with 308, as ingress-nginx does; and a gRPC
client's call to a service the GRPCRoute does not name is UNIMPLEMENTED.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.apiserver import conftest as apiserver_conftest
from tests.apiserver.conftest import Live, wait_for

ROOT = Path(__file__).resolve().parents[2]
OLD = ROOT / "examples" / "ingress-nginx-tls"
NEW = ROOT / "examples" / "ingress-nginx-tls-gateway"
CA = ROOT / "examples" / "ingress-nginx-tls-ca"
live = apiserver_conftest.live


def _docs(*dirs: Path) -> list[dict[str, Any]]:
    return [d for p in dirs for f in sorted(p.glob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]


@pytest.fixture(scope="module")
def bank(live: Live, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("bank")
    # The Gateway side only: the bank's namespace, Secrets and backends; the converted objects with the CA.
    old = [d for d in _docs(OLD) if d["kind"] != "Ingress" and d["metadata"].get("namespace") != "ingress-nginx"]
    new = [d for d in _docs(NEW) if d["kind"] != "BackendTLSPolicy"]  # the CA's definition replaces it
    manifest = tmp / "bank.yaml"
    manifest.write_text(yaml.safe_dump_all([*old, *new, *_docs(CA)]))
    live.kubectl("apply", "-f", str(manifest))
    [ca] = [d for d in _docs(CA) if d["kind"] == "ConfigMap"]
    (tmp / "bank-ca.pem").write_text(ca["data"]["ca.crt"])

    def listed() -> dict[str, int] | None:
        info = json.loads((live.state / "ready.json").read_text())
        rows = {r["listener"]: int(r["address"].rsplit(":", 1)[1]) for r in info.get("gateway_listeners") or []
                if r["gateway"] == "bank/eg-gateway"}
        return rows if len(rows) == 4 else None

    ports = wait_for(listed, timeout=90)
    assert ports, (live.state / "ready.json").read_text()
    found = {"ports": ports, "ca": tmp / "bank-ca.pem"}

    def serving() -> bool:  # the web pods are ready once the website answers
        out = _curl(found, "www.bank.example", "https-www-bank-example", "/")
        return out.stdout.startswith("HTTP/2 200")

    assert wait_for(serving, timeout=90)
    return found


def _run(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    if shutil.which(args[0]) is None:
        pytest.skip(f"{args[0]} is not installed")
    return subprocess.run(list(args), input=input, capture_output=True, text=True, timeout=20)


def _curl(bank: dict[str, Any], host: str, listener: str, path: str, *extra: str,
          scheme: str = "https") -> subprocess.CompletedProcess[str]:
    port = bank["ports"][listener]
    return _run("curl", "-sS", "-i", "--cacert", str(bank["ca"]), "--resolve", f"{host}:{port}:127.0.0.1", *extra,
                f"{scheme}://{host}:{port}{path}")


def test_openssl_gets_the_ledger_pods_certificate_through_the_passthrough_listener(bank: dict[str, Any]) -> None:
    port = bank["ports"]["tls-ledger-bank-example"]
    out = _run("openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "ledger.bank.example",
               "-CAfile", str(bank["ca"]), "-quiet", "-verify_return_error",
               input="GET / HTTP/1.1\r\nHost: ledger.bank.example\r\nConnection: close\r\n\r\n")
    assert "CN = ledger.bank.example" in out.stderr, out.stderr  # the pods' mounted Secret, as on ingress-nginx
    assert "x-knetsim-backend: bank/ledger-" in out.stdout, out.stdout


def test_curl_gets_the_websites_certificate_and_the_statements_reencrypted(bank: dict[str, Any]) -> None:
    www = _curl(bank, "www.bank.example", "https-www-bank-example", "/", "-v")
    assert "subject: CN=www.bank.example" in www.stderr and "SSL certificate verify ok" in www.stderr
    assert "x-knetsim-backend: bank/web-" in www.stdout
    statements = _curl(bank, "www.bank.example", "https-www-bank-example", "/statements")
    assert statements.stdout.startswith("HTTP/2 200"), statements.stdout
    assert "x-knetsim-backend: bank/statements-" in statements.stdout and ":8443" in statements.stdout


@pytest.mark.parametrize("host", ["www.bank.example", "ledger.bank.example", "grpc.bank.example"])
def test_plain_http_is_redirected_to_https_on_every_host(bank: dict[str, Any], host: str) -> None:
    out = _curl(bank, host, "http", "/pay", scheme="http")
    assert out.stdout.startswith("HTTP/1.1 308"), out.stdout
    assert f"location: https://{host}/pay" in out.stdout.lower()


def test_a_call_to_a_service_the_grpcroute_does_not_name_is_unimplemented(bank: dict[str, Any]) -> None:
    grpc = pytest.importorskip("grpc")
    creds = grpc.ssl_channel_credentials(root_certificates=Path(bank["ca"]).read_bytes())
    options = [("grpc.ssl_target_name_override", "grpc.bank.example"), ("grpc.default_authority", "grpc.bank.example")]
    with grpc.secure_channel(f"127.0.0.1:{bank['ports']['https-grpc-bank-example']}", creds,
                             options=options) as channel:
        other = channel.unary_unary("/bank.accounts.Accounts/Get", request_serializer=None,
                                    response_deserializer=None)
        with pytest.raises(grpc.RpcError) as err:
            other(b"", timeout=10)
        assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
