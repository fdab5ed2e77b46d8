"""Benchmark: TLS handshakes and gRPC calls per second through a live Gateway's listeners.

    .venv/bin/python bench/gateway_tls.py [--handshakes 300] [--calls 2000]

``knetsim up`` runs as its own process; examples/gateway/tls is applied with the real kubectl; the
client is this process. Prints, each next to its target and its peer measured in the same run:

* full TLS handshakes (a new TCP connection each, SNI www.shop.example, the certificate verified
  against the example's CA, TLS 1.3) on the HTTPS listener — the Gateway reads the ClientHello, picks
  the listener's certificate from the cluster's state and completes the handshake — against a plain
  Python TLS server (``asyncio`` + ``ssl``, the same certificate, its own process): what any TLS server
  written in Python costs;
* unary gRPC calls (grpcio, one TLS channel, ``GrpcEcho/Echo`` with one metadata entry) through the
  HTTPS listener — routed by the GRPCRoute, its filter applied, answered by the echo-basic pod's echo
  service — against a grpcio server answering the same method in its own process; with p50 and p99.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "gateway" / "tls"
KNETSIM = [sys.executable, "-c", "from knetsim.cli.main import main; main()"]
METHOD = "/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/Echo"

# The peers, each run as `python -c PEER PORT_FILE CERT KEY`: it binds an ephemeral port, writes it to
# PORT_FILE and serves until killed.
TLS_PEER = """
import asyncio, ssl, sys
port_file, cert, key = sys.argv[1:4]
ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
ctx.load_cert_chain(cert, key)
async def handle(reader, writer):
    try:
        await reader.read(1)
    except OSError:
        pass
    writer.close()
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=ctx)
    open(port_file, "w").write(str(server.sockets[0].getsockname()[1]))
    await server.serve_forever()
asyncio.run(main())
"""
GRPC_PEER = """
import sys, time, grpc
from concurrent import futures
port_file, cert, key = sys.argv[1:4]
def echo(request, context):
    return b"\\n\\x00"
handler = grpc.method_handlers_generic_handler("gateway_api_conformance.echo_basic.grpcecho.GrpcEcho", {
    "Echo": grpc.unary_unary_rpc_method_handler(echo, request_deserializer=lambda b: b,
                                                response_serializer=lambda b: b)})
server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
server.add_generic_rpc_handlers((handler,))
creds = grpc.ssl_server_credentials([(open(key, "rb").read(), open(cert, "rb").read())])
port = server.add_secure_port("127.0.0.1:0", creds)
server.start()
open(port_file, "w").write(str(port))
server.wait_for_termination()
"""


def example_secret(name: str) -> dict[str, Any]:
    for doc in yaml.safe_load_all((EXAMPLE / "secrets.yaml").read_text()):
        if doc and doc["metadata"]["name"] == name:
            return doc  # type: ignore[no-any-return]
    raise SystemExit(f"examples/gateway/tls/secrets.yaml has no {name}")


def wait_for(check: Any, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    raise SystemExit("timed out")


def handshakes(port: int, ca: Path, count: int) -> float:
    """Full handshakes per second (connect, ClientHello with SNI, verify, close)."""
    ctx = ssl.create_default_context(cafile=str(ca))
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    t0 = time.perf_counter()
    for _ in range(count):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
                ctx.wrap_socket(raw, server_hostname="www.shop.example") as tls:
            assert tls.version() == "TLSv1.3"
    return count / (time.perf_counter() - t0)


def grpc_calls(port: int, ca: Path, count: int) -> tuple[float, float, float]:
    """(calls per second, p50 ms, p99 ms) of unary calls over one channel."""
    import grpc

    creds = grpc.ssl_channel_credentials(root_certificates=ca.read_bytes())
    options = [("grpc.ssl_target_name_override", "grpc.shop.example"), ("grpc.default_authority", "grpc.shop.example")]
    with grpc.secure_channel(f"127.0.0.1:{port}", creds, options=options) as channel:
        echo = channel.unary_unary(METHOD, request_serializer=lambda x: x, response_deserializer=lambda b: b)
        echo(b"", metadata=[("x-request", "warm-up")], timeout=30)
        latencies = []
        t0 = time.perf_counter()
        for i in range(count):
            s = time.perf_counter()
            echo(b"", metadata=[("x-request", str(i))], timeout=30)
            latencies.append(time.perf_counter() - s)
        total = time.perf_counter() - t0
    latencies.sort()
    return count / total, statistics.median(latencies) * 1000, latencies[int(len(latencies) * 0.99) - 1] * 1000


def start_peer(code: str, base: Path, name: str, cert: Path, key: Path) -> tuple[subprocess.Popen[bytes], int]:
    port_file = base / f"{name}.port"
    proc = subprocess.Popen([sys.executable, "-c", code, str(port_file), str(cert), str(key)])
    port = int(wait_for(lambda: port_file.exists() and port_file.read_text(), 30))
    return proc, port


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--handshakes", type=int, default=300)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("live Gateway listeners: skipped (kubectl is not installed)")
        return
    try:
        import grpc  # noqa: F401
    except ImportError:
        print("live Gateway listeners: skipped (grpcio is not installed: pip install -e '.[test]')")
        return
    base = Path(tempfile.mkdtemp(prefix="knetsim-bench-gwtls-"))
    state, home = base / "state", base / "home"
    home.mkdir()
    shop = example_secret("shop-cert")["data"]
    cert, key, ca = base / "shop.crt", base / "shop.key", base / "ca.crt"
    cert.write_bytes(base64.b64decode(shop["tls.crt"]))
    key.write_bytes(base64.b64decode(shop["tls.key"]))
    ca.write_text(example_secret("shop-ca")["data"]["ca.crt"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(HOME=str(home))
    peers: list[subprocess.Popen[bytes]] = []
    t0 = time.perf_counter()
    up = subprocess.run([*KNETSIM, "up", "--port", "0", "--state", str(state)], capture_output=True, text=True,
                        env=env)
    assert up.returncode == 0, up.stderr
    started = time.perf_counter() - t0
    env["KUBECONFIG"] = str(state / "kubeconfig")
    try:
        t0 = time.perf_counter()
        subprocess.run([kubectl, "apply", "-f", str(EXAMPLE)], env=env, check=True, capture_output=True)

        def listening() -> dict[str, int] | None:
            rows = json.loads((state / "ready.json").read_text()).get("gateway_listeners") or []
            ports = {r["listener"]: int(r["address"].rsplit(":", 1)[1]) for r in rows if not r["listener_set"]}
            return ports if "https" in ports and any(r["listener_set"] for r in rows) else None

        ports = wait_for(listening, 120)
        settled = time.perf_counter() - t0
        print(f"live: knetsim up {started:.1f} s; kubectl apply -f examples/gateway/tls until every listener "
              f"listens {settled:.1f} s")

        tls_peer, tls_port = start_peer(TLS_PEER, base, "tls", cert, key)
        peers.append(tls_peer)
        handshakes(ports["https"], ca, 10)  # warm-up: the first connection waits for the cluster to settle
        gateway_hs = handshakes(ports["https"], ca, args.handshakes)
        peer_hs = handshakes(tls_port, ca, args.handshakes)
        print(f"TLS handshakes through the HTTPS listener: {args.handshakes} in a row, {gateway_hs:,.0f}/s "
              f"(target ≥ 100/s); peer: a plain Python TLS server {peer_hs:,.0f}/s; Gateway/peer "
              f"{gateway_hs / peer_hs:.2f}")

        grpc_peer, grpc_port = start_peer(GRPC_PEER, base, "grpc", cert, key)
        peers.append(grpc_peer)
        rate, p50, p99 = grpc_calls(ports["https"], ca, args.calls)
        peer_rate, peer_p50, peer_p99 = grpc_calls(grpc_port, ca, args.calls)
        print(f"gRPC calls through the HTTPS listener (GRPCRoute → echo pod): {args.calls} unary calls on one "
              f"channel, {rate:,.0f}/s, p50 {p50:.1f} ms, p99 {p99:.1f} ms (target ≥ 200/s, p50 < 10 ms); peer: a "
              f"grpcio server {peer_rate:,.0f}/s, p50 {peer_p50:.1f} ms, p99 {peer_p99:.1f} ms; Gateway/peer "
              f"{rate / peer_rate:.2f}")
    finally:
        for proc in peers:
            proc.terminate()
            proc.wait(timeout=10)
        subprocess.run([*KNETSIM, "down", "--state", str(state)], capture_output=True, env=env)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
