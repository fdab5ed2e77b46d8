"""Kernel mode: building and tearing down a 50-pod topology, and a whole `knetsim verify kernel` run.

    sudo .venv/bin/python bench/kernel.py [--pods 50] [--samples 3]

Prints: the median time to build (namespaces, veths, kube-proxy rules on 3 nodes, policy
tables, listeners) and tear down a topology of N pod namespaces (target: < 3 s together,
"built in seconds"), for iptables and nftables; and the wall time of the CLI process
`knetsim verify kernel --max-flows 300` on the same cluster (target: < 20 s). Needs root.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BUILD_TARGET = 3.0
VERIFY_TARGET = 20.0


def manifests(pods: int) -> str:
    # The fresh cluster brings 3 pods on the pod network (2 CoreDNS, ingress-nginx): the rest are ours,
    # split over three apps with a default-deny and an allow rule, so the policy tables are not empty.
    user = pods - 3
    apps = [("web", "nginx:1.27", user - 2 * (user // 3)), ("api", "hashicorp/http-echo", user // 3),
            ("db", "postgres:16", user // 3)]
    out = []
    for name, image, replicas in apps:
        out.append(f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: default}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec: {{containers: [{{name: c, image: {image}}}]}}
---
apiVersion: v1
kind: Service
metadata: {{name: {name}, namespace: default}}
spec: {{selector: {{app: {name}}}, ports: [{{port: 80, targetPort: {dict(web=80, api=5678, db=5432)[name]}}}]}}
""")
    out.append("""apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-from-api, namespace: default}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress: [{from: [{podSelector: {matchLabels: {app: api}}}]}]
""")
    return "---\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=50)
    parser.add_argument("--samples", type=int, default=3)
    args = parser.parse_args()
    from knetsim import Cluster
    from knetsim.kernel import Topology, missing_requirements

    missing = missing_requirements()
    if missing:
        print("skipped: " + "; ".join(missing))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cluster.yaml"
        path.write_text(manifests(args.pods))
        state = Cluster.from_paths([str(path)]).state
        for plane in ("iptables", "nftables"):
            builds, closes = [], []
            for _ in range(args.samples):
                t0 = time.perf_counter()
                topo = Topology.build(state, plane)
                t1 = time.perf_counter()
                topo.close()
                builds.append(t1 - t0)
                closes.append(time.perf_counter() - t1)
                assert len(topo.plan.pods) == args.pods, len(topo.plan.pods)
            total = statistics.median(b + c for b, c in zip(builds, closes, strict=True))
            print(f"{plane:9} {args.pods} pods: build {statistics.median(builds):.2f} s + teardown "
                  f"{statistics.median(closes):.2f} s = {total:.2f} s (target < {BUILD_TARGET:.0f} s) "
                  f"{'OK' if total < BUILD_TARGET else 'SLOW'}")
        t0 = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "knetsim.cli.main", "verify", "kernel", "-f", str(path),
                              "--max-flows", "300", "-o", "json"], capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        print(f"knetsim verify kernel, {args.pods} pods, 300 flows: {wall:.2f} s (target < {VERIFY_TARGET:.0f} s) "
              f"exit {run.returncode} {'OK' if wall < VERIFY_TARGET and run.returncode == 0 else 'SLOW/FAILED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
