"""Benchmark: routing 10,000 HTTP requests through a Gateway with 1,000 HTTPRoutes, end to end.

    .venv/bin/python bench/gateway.py [--routes 1000] [--requests 10000] [--no-live]

Prints, each next to its target:

* ``knetsim route --gateway`` as a user runs it (one CLI process: load 1,000 routes, translate,
  route one request);
* 10,000 requests through the live front door (``knetsim up``; the routes applied with the real
  kubectl; each request an HTTP request to the entry port with a Host header, answered after the
  Gateway routed it and the trace reached a backend pod), with throughput and p50/p99 latency;
* the same 10,000 requests through the Python API, and — the peer measured in the same run —
  through 1,000 equivalent Ingresses (ingress-nginx's merge), as a ratio.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
KNETSIM = [sys.executable, "-c", "from knetsim.cli.main import main; main()"]


def manifests(routes: int, services: int = 50) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(Gateway API objects, equivalent Ingresses), sharing Services app-0..app-49 (one Ready pod each)."""
    base: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}]
    for i in range(services):
        base.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"app-{i}", "namespace": "bench"},
                     "spec": {"selector": {"app": f"app-{i}"}, "ports": [{"name": "http", "port": 80}]}})
        base.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"app-{i}", "namespace": "bench",
                                                                     "labels": {"app": f"app-{i}"}},
                     "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                              "ports": [{"containerPort": 80}]}]}})
    gateway = [
        {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": {"name": "eg"},
         "spec": {"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"}},
        {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": {"name": "edge",
                                                                                        "namespace": "bench"},
         "spec": {"gatewayClassName": "eg", "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}]}},
    ]
    ingresses = []
    for r in range(routes):
        host = f"site-{r}.bench.example"
        a, b = f"app-{r % services}", f"app-{(r + 1) % services}"
        gateway.append({
            "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": f"site-{r}", "namespace": "bench"},
            "spec": {"parentRefs": [{"name": "edge"}], "hostnames": [host], "rules": [
                {"matches": [{"path": {"type": "PathPrefix", "value": "/api"}}],
                 "backendRefs": [{"name": b, "port": 80}]},
                {"matches": [{"path": {"type": "Exact", "value": "/health"}}],
                 "backendRefs": [{"name": b, "port": 80}]},
                {"backendRefs": [{"name": a, "port": 80}]},
            ]}})
        ingresses.append({
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": f"site-{r}",
                                                                                  "namespace": "bench"},
            "spec": {"ingressClassName": "nginx", "rules": [{"host": host, "http": {"paths": [
                {"path": "/api", "pathType": "Prefix", "backend": {"service": {"name": b, "port": {"number": 80}}}},
                {"path": "/health", "pathType": "Exact", "backend": {"service": {"name": b, "port": {"number": 80}}}},
                {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": a, "port": {"number": 80}}}},
            ]}}]}})
    return base + gateway, base + ingresses


def request_set(routes: int, count: int) -> list[tuple[str, str]]:
    paths = ["/", "/api/orders", "/health", "/static/app.js", "/api"]
    return [(f"site-{(i * 7919) % routes}.bench.example", paths[i % len(paths)]) for i in range(count)]


def in_process(gateway_docs: list[dict[str, Any]], ingress_docs: list[dict[str, Any]],
               reqs: list[tuple[str, str]]) -> None:
    from knetsim import Cluster
    from knetsim.gateway import route as gateway_route
    from knetsim.gateway import translate
    from knetsim.ingress import route as ingress_route
    from knetsim.model.http import HTTPRequest

    gw = Cluster.from_yaml(yaml.safe_dump_all(gateway_docs))
    t0 = time.perf_counter()
    translate(gw.state)
    translated = time.perf_counter() - t0
    t0 = time.perf_counter()
    for host, path in reqs:
        assert gateway_route(gw.state, "bench/edge", HTTPRequest(host, path), explain=False).proxied
    g = time.perf_counter() - t0
    # The peer: the same requests through the equivalent Ingresses. ingress-nginx's merge is redone
    # per request, so a sample of 500 keeps the run short; the ratio is per request.
    ing = Cluster.from_yaml(yaml.safe_dump_all(ingress_docs))
    sample = reqs[:500]
    t0 = time.perf_counter()
    for host, path in sample:
        assert ingress_route(ing.state, host, path).routed
    i = time.perf_counter() - t0
    n = len(reqs)
    print(f"Python API: translate {translated * 1000:.0f} ms once; {n} requests through the Gateway in {g:.2f} s "
          f"({n / g:,.0f}/s, target ≥ 2,000/s); peer: {len(sample)} through {len(ingress_docs) - 101} Ingresses "
          f"{i:.2f} s ({len(sample) / i:,.0f}/s); per request, Gateway/Ingress {(g / n) / (i / len(sample)):.3f}")


def cli_route(files: Path) -> None:
    t0 = time.perf_counter()
    out = subprocess.run([*KNETSIM, "route", "-f", str(files), "--gateway", "bench/edge", "--host",
                          "site-500.bench.example", "--path", "/api/x", "-o", "json"], capture_output=True, text=True)
    took = time.perf_counter() - t0
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["outcome"] == "proxied"
    print(f"`knetsim route --gateway` end to end (one CLI process, {files.name}): {took:.2f} s (target < 5 s)")


def live(gateway_docs: list[dict[str, Any]], reqs: list[tuple[str, str]]) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("live front door: skipped (kubectl is not installed)")
        return
    base = Path(tempfile.mkdtemp(prefix="knetsim-bench-gw-"))
    state, home = base / "state", base / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(HOME=str(home))
    up = subprocess.run([*KNETSIM, "up", "--port", "0", "--state", str(state)], capture_output=True, text=True,
                        env=env)
    assert up.returncode == 0, up.stderr
    env["KUBECONFIG"] = str(state / "kubeconfig")
    try:
        (base / "routes.yaml").write_text(yaml.safe_dump_all(gateway_docs))
        t0 = time.perf_counter()
        subprocess.run([kubectl, "apply", "-f", str(base / "routes.yaml")], env=env, check=True, capture_output=True)
        applied = time.perf_counter() - t0
        port = json.loads((state / "ready.json").read_text())["gateway_port"]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        # The first request waits for the controllers to settle after the apply.
        t0 = time.perf_counter()
        conn.request("GET", "/", headers={"Host": reqs[0][0]})
        first = conn.getresponse()
        first.read()
        settle = time.perf_counter() - t0
        latencies = []
        t0 = time.perf_counter()
        for host, path in reqs:
            s = time.perf_counter()
            conn.request("GET", path, headers={"Host": host})
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 200, (host, path, resp.status)
            latencies.append(time.perf_counter() - s)
        total = time.perf_counter() - t0
        conn.close()
        latencies.sort()
        p50 = statistics.median(latencies) * 1000
        p99 = latencies[int(len(latencies) * 0.99) - 1] * 1000
        print(f"live: kubectl apply of {len(gateway_docs)} objects {applied:.1f} s; first request after the apply "
              f"{settle:.1f} s (controllers settle)")
        print(f"live front door: {len(reqs)} requests (Host → Gateway → HTTPRoute → backend pod) in {total:.1f} s "
              f"({len(reqs) / total:,.0f}/s), p50 {p50:.1f} ms, p99 {p99:.1f} ms (target p50 < 10 ms)")
    finally:
        subprocess.run([*KNETSIM, "down", "--state", str(state)], capture_output=True, env=env)
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--routes", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=10000)
    parser.add_argument("--no-live", action="store_true")
    args = parser.parse_args()
    gateway_docs, ingress_docs = manifests(args.routes)
    reqs = request_set(args.routes, args.requests)
    with tempfile.TemporaryDirectory(prefix="knetsim-bench-files-") as tmp:
        files = Path(tmp) / f"{args.routes}-httproutes"
        files.mkdir()
        (files / "routes.yaml").write_text(yaml.safe_dump_all(gateway_docs))
        cli_route(files)
    in_process(gateway_docs, ingress_docs, reqs)
    if not args.no_live:
        live(gateway_docs, reqs)


if __name__ == "__main__":
    main()
