"""`knetsim verify nginx` on 100 annotated Ingresses, as whole processes from a cold start.

    .venv/bin/python bench/verify_nginx.py [--ingresses 100] [--samples 3]

Prints, each the median of the samples, for one generated input of N Ingresses on N/3 hosts (every
third with use-regex, rewrite-target, a source range, CORS, basic auth, a body limit or a canary):

* the whole `knetsim verify nginx` (render, `nginx -t`, nginx on loopback, the request set through
  nginx and through `knetsim route`, the comparison) — target < 60 s;
* its peers in the same run: `knetsim verify nginx -o conf` (loading the input and rendering only),
  and Debian's `nginx -t` on that configuration (nginx's own cost of reading it);
* the requests sent, and the time per request of the whole run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 60.0

ANNOTATIONS = [
    {},
    {"nginx.ingress.kubernetes.io/use-regex": "true"},
    {"nginx.ingress.kubernetes.io/rewrite-target": "/$2"},
    {"nginx.ingress.kubernetes.io/whitelist-source-range": "10.0.0.0/8"},
    {"nginx.ingress.kubernetes.io/enable-cors": "true"},
    {"nginx.ingress.kubernetes.io/auth-type": "basic", "nginx.ingress.kubernetes.io/auth-secret": "basic-auth"},
    {"nginx.ingress.kubernetes.io/proxy-body-size": "10k"},
    {"nginx.ingress.kubernetes.io/permanent-redirect": "https://moved.example.com/"},
]


def manifests(count: int) -> str:
    out = ["""apiVersion: v1
kind: Secret
metadata: {name: basic-auth, namespace: bench}
stringData: {auth: "alice:{PLAIN}wonderland"}
""", "apiVersion: v1\nkind: Namespace\nmetadata: {name: bench}\n"]
    for i in range(count // 3 + 1):
        out.append(f"""apiVersion: v1
kind: Service
metadata: {{name: svc-{i}, namespace: bench}}
spec: {{selector: {{app: app-{i}}}, ports: [{{name: http, port: 80}}]}}
---
apiVersion: v1
kind: Pod
metadata: {{name: app-{i}, namespace: bench, labels: {{app: app-{i}}}}}
spec: {{containers: [{{name: c, image: nginx, ports: [{{containerPort: 80}}]}}]}}
""")
    for i in range(count):
        host = f"h{i // 3}.bench.example"
        annotations = ANNOTATIONS[i % len(ANNOTATIONS)]
        regex = "nginx.ingress.kubernetes.io/rewrite-target" in annotations
        path = f"/p{i}(/|$)(.*)" if regex else f"/p{i}"
        kind = "ImplementationSpecific" if regex else ("Prefix", "Exact")[i % 2]
        meta = json.dumps({"name": f"ing-{i}", "namespace": "bench", "annotations": annotations})
        out.append(f"""apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {meta}
spec:
  ingressClassName: nginx
  rules:
  - host: {host}
    http:
      paths:
      - {{path: "{path}", pathType: {kind}, backend: {{service: {{name: svc-{i // 3}, port: {{number: 80}}}}}}}}
""")
    return "---\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ingresses", type=int, default=100)
    parser.add_argument("--samples", type=int, default=3)
    args = parser.parse_args()
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if nginx is None:
        print("skipped: nginx is not installed (Debian: apt-get install nginx)")
        return 0
    knetsim = [sys.executable, "-m", "knetsim.cli.main"]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ingresses.yaml"
        path.write_text(manifests(args.ingresses))
        walls, renders, tests = [], [], []
        report: dict = {}
        for _ in range(args.samples):
            t0 = time.perf_counter()
            run = subprocess.run([*knetsim, "verify", "nginx", "-f", str(path), "-o", "json"], capture_output=True,
                                 text=True, check=False)
            walls.append(time.perf_counter() - t0)
            if run.returncode not in (0, 1):
                print(f"verify nginx failed: {run.stderr.strip()}")
                return 1
            report = json.loads(run.stdout)
            t0 = time.perf_counter()
            conf = subprocess.run([*knetsim, "verify", "nginx", "-f", str(path), "-o", "conf"], capture_output=True,
                                  text=True, check=True).stdout
            renders.append(time.perf_counter() - t0)
            scratch = Path(tmp) / "nginx"
            scratch.mkdir(exist_ok=True)
            (scratch / "nginx.conf").write_text(conf.replace("/tmp/knetsim-nginx", str(scratch)))
            (scratch / "tls.crt").write_text("")
            t0 = time.perf_counter()
            subprocess.run([nginx, "-t", "-q", "-p", str(scratch), "-c", str(scratch / "nginx.conf"), "-e",
                            str(scratch / "error.log")], capture_output=True, check=False)
            tests.append(time.perf_counter() - t0)
        wall = statistics.median(walls)
        requests = report["requests"]
        print(f"knetsim verify nginx, {report['ingresses']} Ingresses, {report['servers']} servers, "
              f"{report['locations']} locations, {requests} requests: {wall:.2f} s (target < {TARGET:.0f} s) "
              f"{'OK' if wall < TARGET else 'SLOW'}; {len(report['disagree'])} disagree, "
              f"{len(report['not_proven'])} decided in Lua")
        render = statistics.median(renders)
        print(f"  peers: load + render only (verify nginx -o conf) {render:.2f} s ({render / wall:.0%} of the run); "
              f"nginx -t on the rendered configuration {statistics.median(tests) * 1000:.0f} ms "
              f"(syntax check; the certificate is left empty)")
        print(f"  per request (whole run / requests): {wall / max(requests, 1) * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
