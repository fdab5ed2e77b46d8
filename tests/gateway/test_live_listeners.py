"""Every Gateway listener reachable by real clients against ``knetsim up`` (daemon/gatewaylisteners.py).

Given examples/gateway/tls applied with kubectl (a listener of every kind), then ready.json and
``knetsim status`` list each listener with its loopback address, and through them: curl --resolve
gets the Secret's certificate (verified with the example CA) and the backend's answer over HTTPS and
HTTP/2, a Host of another listener 421, the partner port refuses a client without a certificate with
TLS's "certificate required" alert; openssl s_client gets the backend pod's own certificate through
the passthrough listener and no certificate for an unknown SNI; nc gets an echo through the TCP
listener; dig gets the cluster's DNS through the UDP listener; a gRPC client gets the echo service's
answer naming the pod; and a listener removed from the Gateway stops listening.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.apiserver import conftest as apiserver_conftest
from tests.apiserver.conftest import Live, wait_for

from knetsim.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
TLS = ROOT / "examples" / "gateway" / "tls"
live = apiserver_conftest.live


def _ca(tmp: Path) -> Path:
    for doc in yaml.safe_load_all((TLS / "secrets.yaml").read_text()):
        if doc and doc["metadata"]["name"] == "shop-ca":
            path = tmp / "shop-ca.pem"
            path.write_text(doc["data"]["ca.crt"])
            return path
    raise AssertionError("no shop-ca in the example")


@pytest.fixture(scope="module")
def edge(live: Live, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    live.kubectl("apply", "-f", str(TLS))

    def listed() -> dict[str, str] | None:
        info = json.loads((live.state / "ready.json").read_text())
        rows = {(r["listener"] + (f"@{r['listener_set']}" if r["listener_set"] else "")): r["address"]
                for r in info.get("gateway_listeners") or []}
        return rows if len(rows) == 7 else None

    rows = wait_for(listed, timeout=90)  # a busy machine: the Deployments settle first
    assert rows is not None, (live.state / "ready.json").read_text()
    return {"ports": {k: int(v.rsplit(":", 1)[1]) for k, v in rows.items()},
            "ca": _ca(tmp_path_factory.mktemp("ca"))}


def _run(*args: str, input: str | None = None, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    if shutil.which(args[0]) is None:
        pytest.skip(f"{args[0]} is not installed")
    return subprocess.run(list(args), input=input, capture_output=True, text=True, timeout=timeout)


def _curl(edge: dict[str, Any], host: str, listener: str, *extra: str) -> subprocess.CompletedProcess[str]:
    port = edge["ports"][listener]
    return _run("curl", "-sS", "-i", "--cacert", str(edge["ca"]), "--resolve", f"{host}:{port}:127.0.0.1", *extra,
                f"https://{host}:{port}/")


def test_status_lists_every_listener(live: Live, edge: dict[str, Any]) -> None:
    from click.testing import CliRunner

    out = CliRunner().invoke(cli, ["status", "--state", str(live.state)]).output
    assert f"# Listener    edge/edge ledger: TLS 9443 ledger.shop.example on 127.0.0.1:{edge['ports']['ledger']}" in out
    assert "# Listener    edge/edge (ListenerSet team-a/team-a) https: HTTPS 443 a.team.example on" in out
    info = json.loads((live.state / "ready.json").read_text())
    row = next(r for r in info["gateway_listeners"] if r["listener"] == "dns")
    assert row == {"gateway": "edge/edge", "listener": "dns", "listener_set": None, "protocol": "UDP", "port": 53,
                   "hostname": None, "address": f"127.0.0.1:{edge['ports']['dns']}"}


DOCS = ROOT / "docs" / "gateway.md"
DOC_LISTENER = re.compile(r"^# Listener +\S+ (?:\(ListenerSet (\S+)\) )?(\S+): .* on 127\.0\.0\.1:(\d+)$")


def _doc_transcript() -> list[tuple[str, list[str]]]:
    """The ``console live`` block of docs/gateway.md as (command, expected lines)."""
    block = re.search(r"^```console live\n(.*?)^```", DOCS.read_text(), re.S | re.M)
    assert block is not None, "docs/gateway.md has no live transcript"
    steps: list[tuple[str, list[str]]] = []
    for line in block.group(1).splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def _shows(expected: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` reads as ``expected``, where a ``...`` line stands for any number of lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(_shows(expected[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and actual[0] == expected[0] and _shows(expected[1:], actual[1:])


def test_the_docs_live_transcript(live: Live, edge: dict[str, Any], tmp_path: Path) -> None:
    """Given the edge example applied to knetsim up, then every command of docs/gateway.md's live transcript
    (knetsim status, kubectl, curl, openssl, nc, dig) prints what the docs show, the docs' ports read as this
    run's ports of the same listeners."""
    steps = _doc_transcript()
    doc_ports: dict[str, str] = {}
    for line in steps[0][1]:
        m = DOC_LISTENER.match(line)
        if m:
            doc_ports[m.group(3)] = str(edge["ports"][m.group(2) + (f"@{m.group(1)}" if m.group(1) else "")])
    assert len(doc_ports) == 6, doc_ports  # the ListenerSet's listener shares the https port

    def here(text: str) -> str:
        return re.sub(r"\b\d{4,5}\b", lambda m: doc_ports.get(m.group(0), m.group(0)), text)

    (tmp_path / "examples").symlink_to(ROOT / "examples")
    env = live.env(KNETSIM_STATE=str(live.state), PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    for command, expected in steps:
        for tool in ("kubectl", "curl", "openssl", "nc", "dig"):
            if re.search(rf"\b{tool} ", command) and shutil.which(tool) is None:
                pytest.skip(f"{tool} is not installed")
        out = subprocess.run(["bash", "-c", here(command)], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=30)
        actual = [line.rstrip() for line in out.stdout.splitlines()]
        assert _shows([here(line).rstrip() for line in expected], actual), \
            f"$ {command}\n--- docs:\n" + "\n".join(expected) + "\n--- got:\n" + out.stdout + out.stderr


def test_curl_gets_the_secrets_certificate_and_the_backend(edge: dict[str, Any]) -> None:
    out = _curl(edge, "www.shop.example", "https", "-v")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("HTTP/2 200"), out.stdout  # ALPN h2
    assert "x-knetsim-backend: edge/web-" in out.stdout
    assert "subject: CN=shop.example" in out.stderr and "SSL certificate verify ok" in out.stderr
    api = _curl(edge, "www.shop.example", "https", "--http1.1")
    assert api.stdout.startswith("HTTP/1.1 200 OK")
    # The ListenerSet's listener shares port 443 and serves its own certificate.
    team = _curl(edge, "a.team.example", "https", "-v")
    assert "x-knetsim-backend: team-a/app-" in team.stdout and "subject: CN=a.team.example" in team.stderr


def test_backend_tls_policy_reencrypts_to_the_api(edge: dict[str, Any]) -> None:
    port = edge["ports"]["https"]
    out = _run("curl", "-sS", "-i", "--cacert", str(edge["ca"]), "--resolve", f"www.shop.example:{port}:127.0.0.1",
               f"https://www.shop.example:{port}/api/orders")
    assert "x-knetsim-backend: edge/api-" in out.stdout and ":8443" in out.stdout, out.stdout


def test_a_host_of_another_listener_is_misdirected(edge: dict[str, Any]) -> None:
    out = _curl(edge, "www.shop.example", "https", "-H", "Host: a.team.example")
    assert out.stdout.startswith("HTTP/2 421"), out.stdout


def test_client_certificates_on_the_partner_port(edge: dict[str, Any]) -> None:
    refused = _curl(edge, "partners.shop.example", "partners")
    assert refused.returncode != 0 and "alert certificate required" in refused.stderr, refused.stderr
    ok = _curl(edge, "partners.shop.example", "partners", "--cert", str(TLS / "partner-client.pem"))
    assert ok.returncode == 0 and "x-knetsim-backend: edge/web-" in ok.stdout, ok.stderr


def test_openssl_through_tls_passthrough_sees_the_backends_certificate(edge: dict[str, Any]) -> None:
    port = edge["ports"]["ledger"]
    out = _run("openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "ledger.shop.example",
               "-CAfile", str(edge["ca"]), "-quiet", "-verify_return_error",
               input="GET / HTTP/1.1\r\nHost: ledger.shop.example\r\nConnection: close\r\n\r\n")
    assert "HTTP/1.1 200 OK" in out.stdout and "x-knetsim-backend: edge/ledger-" in out.stdout, out.stderr
    assert "CN = ledger.shop.example" in out.stderr  # the pod's mounted certificate, not a proxy's
    unknown = _run("openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "nope.example",
                   input="")
    assert "no peer certificate available" in unknown.stdout


def test_nc_gets_an_echo_through_the_tcp_listener(edge: dict[str, Any]) -> None:
    out = _run("nc", "-q", "1", "127.0.0.1", str(edge["ports"]["postgres"]), input="hello through the gateway\n")
    assert out.stdout == "hello through the gateway\n", out.stderr


def test_dig_through_the_udp_listener(edge: dict[str, Any]) -> None:
    out = _run("dig", "+short", "+time=2", "+tries=1", "@127.0.0.1", "-p", str(edge["ports"]["dns"]),
               "kubernetes.default.svc.cluster.local")
    assert out.stdout.strip() == "10.96.0.1", out.stdout + out.stderr


def test_a_datagram_that_is_no_dns_query_gets_no_answer(live: Live, edge: dict[str, Any]) -> None:
    """The UDPRoute's backend is CoreDNS: a datagram that is no DNS query gets no answer (as CoreDNS drops it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(1)
        sock.sendto(b"not dns", ("127.0.0.1", edge["ports"]["dns"]))
        with pytest.raises(TimeoutError):
            sock.recvfrom(512)


def _decode(data: bytes) -> dict[int, list[bytes]]:
    """A protobuf message's length-delimited fields (all the echo response uses)."""
    out: dict[int, list[bytes]] = {}
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        length, i = _varint(data, i)
        out.setdefault(key >> 3, []).append(data[i:i + length])
        i += length
    return out


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def test_a_grpc_client_gets_the_echo_service_through_the_https_listener(edge: dict[str, Any]) -> None:
    grpc = pytest.importorskip("grpc")
    creds = grpc.ssl_channel_credentials(root_certificates=Path(edge["ca"]).read_bytes())
    options = [("grpc.ssl_target_name_override", "grpc.shop.example"), ("grpc.default_authority", "grpc.shop.example")]
    with grpc.secure_channel(f"127.0.0.1:{edge['ports']['https']}", creds, options=options) as channel:
        echo = channel.unary_unary("/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/Echo",
                                   request_serializer=lambda x: x, response_deserializer=lambda b: b)
        response, call = echo.with_call(b"", metadata=[("x-request", "42")], timeout=20)
        assert call.code() == grpc.StatusCode.OK
        assertions = _decode(_decode(response)[1][0])
        assert assertions[1] == [b"/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/Echo"]
        headers = {h[1][0]: h[2][0] for h in map(_decode, assertions[2])}
        assert headers[b"x-request"] == b"42" and headers[b"x-edge"] == b"grpc"  # the route's filter
        context = _decode(assertions[4][0])
        assert context[1] == [b"edge"] and context[4][0].startswith(b"grpc-echo-")
        # EchoTwo matches no rule of the GRPCRoute: Envoy answers a gRPC request's route miss itself, trailers-only,
        # its 404 mapped to grpc-status 12 (UNIMPLEMENTED) — not an HTTP 404 the client has to interpret.
        two = channel.unary_unary("/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/EchoTwo",
                                  request_serializer=lambda x: x, response_deserializer=lambda b: b)
        with pytest.raises(grpc.RpcError) as err:
            two(b"", timeout=20)
        assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
        assert "http2 header with status" not in (err.value.details() or "")


def test_a_listener_removed_from_the_gateway_stops_listening(live: Live, edge: dict[str, Any]) -> None:
    port = edge["ports"]["postgres"]
    gateway = json.loads(live.kubectl("get", "gateway", "-n", "edge", "edge", "-o", "json").stdout)
    index = next(i for i, li in enumerate(gateway["spec"]["listeners"]) if li["name"] == "postgres")
    live.kubectl("patch", "gateway", "-n", "edge", "edge", "--type", "json", "-p",
                 json.dumps([{"op": "remove", "path": f"/spec/listeners/{index}"}]))

    def gone() -> bool:
        info = json.loads((live.state / "ready.json").read_text())
        return all(r["listener"] != "postgres" for r in info["gateway_listeners"])

    assert wait_for(gone, timeout=20)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    # Put back, the listener gets its old local port again: what a client read from ready.json still works.
    live.kubectl("patch", "gateway", "-n", "edge", "edge", "--type", "json", "-p",
                 json.dumps([{"op": "add", "path": f"/spec/listeners/{index}",
                              "value": gateway["spec"]["listeners"][index]}]))
    assert wait_for(lambda: not gone(), timeout=20)
    out = _run("nc", "-q", "1", "127.0.0.1", str(port), input="back again\n")
    assert out.stdout == "back again\n", out.stderr


def test_observed_generation_follows_a_spec_change(live: Live, edge: dict[str, Any]) -> None:
    """Given an HTTPRoute whose spec changes, then metadata.generation counts up and every condition of its
    status reports that generation as observedGeneration (what the conformance helpers compare)."""
    before = json.loads(live.kubectl("get", "httproute", "-n", "edge", "shop", "-o", "json").stdout)
    live.kubectl("patch", "httproute", "-n", "edge", "shop", "--type", "json", "-p",
                 json.dumps([{"op": "add", "path": "/spec/hostnames/-", "value": "store.shop.example"}]))

    def observed() -> dict[str, Any] | None:
        route = json.loads(live.kubectl("get", "httproute", "-n", "edge", "shop", "-o", "json").stdout)
        gen = route["metadata"]["generation"]
        conds = [c for p in route["status"]["parents"] for c in p["conditions"]]
        return route if gen > before["metadata"]["generation"] and all(c["observedGeneration"] == gen
                                                                       for c in conds) else None

    route = wait_for(observed, timeout=20)
    assert route is not None
    assert route["status"]["parents"][0]["parentRef"] == {"group": "gateway.networking.k8s.io", "kind": "Gateway",
                                                          "name": "edge", "sectionName": "https"}


def test_a_listener_set_listener_is_listed_once_its_secret_exists(live: Live, edge: dict[str, Any]) -> None:
    """Given the ListenerSet's listener on port 443 (a port the Gateway's own listener already holds), when its
    Secret is deleted the listener is no longer programmed and leaves ready.json; when the Secret returns, the
    listener is listed again and curl gets the team's certificate, though no port was bound or unbound."""
    secret = live.kubectl("get", "secret", "-n", "team-a", "team-a-cert", "-o", "json").stdout
    live.kubectl("delete", "secret", "-n", "team-a", "team-a-cert")

    def listed(present: bool) -> Callable[[], bool]:
        def check() -> bool:
            info = json.loads((live.state / "ready.json").read_text())
            return any(r["listener_set"] == "team-a/team-a" for r in info["gateway_listeners"]) is present
        return check

    assert wait_for(listed(False), timeout=30)
    live.kubectl("apply", "-f", "-", input=secret)
    assert wait_for(listed(True), timeout=30)
    got = _curl(edge, "a.team.example", "https", "-v")
    assert got.returncode == 0, got.stderr
    assert "subject: CN=a.team.example" in got.stderr and "x-knetsim-backend: team-a/app-" in got.stdout


def test_a_backend_tls_policy_reports_its_new_generation(live: Live, edge: dict[str, Any]) -> None:
    """BackendTLSPolicyObservedGenerationBump (conformance v1.6.1): given the policy's validation.hostname patched,
    then metadata.generation counts up and every condition of every ancestor reports it, still Accepted; the
    hostname is put back after."""
    before = json.loads(live.kubectl("get", "backendtlspolicy", "-n", "edge", "api-tls", "-o", "json").stdout)
    hostname = before["spec"]["validation"]["hostname"]
    live.kubectl("patch", "backendtlspolicy", "-n", "edge", "api-tls", "--type", "merge", "-p",
                 json.dumps({"spec": {"validation": {"hostname": "foo.example.com"}}}))
    try:
        def observed() -> dict[str, Any] | None:
            policy = json.loads(live.kubectl("get", "backendtlspolicy", "-n", "edge", "api-tls", "-o", "json").stdout)
            gen = policy["metadata"]["generation"]
            conds = [c for a in (policy.get("status") or {}).get("ancestors") or [] for c in a["conditions"]]
            return policy if conds and gen > before["metadata"]["generation"] and all(
                c["observedGeneration"] == gen for c in conds) else None

        policy = wait_for(observed, timeout=20)
        assert policy is not None
        accepted = [c for a in policy["status"]["ancestors"] for c in a["conditions"] if c["type"] == "Accepted"]
        assert accepted and all(c["status"] == "True" for c in accepted), policy["status"]
    finally:
        live.kubectl("patch", "backendtlspolicy", "-n", "edge", "api-tls", "--type", "merge", "-p",
                     json.dumps({"spec": {"validation": {"hostname": hostname}}}))
