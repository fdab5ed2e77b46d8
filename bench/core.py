"""Benchmark: load + reconcile a synthetic cluster of 10,000 pods and 2,000 Services.

Target (issue 2): under 3 s and under 400 MB on the 2-core reference machine.

    python bench/core.py [--namespaces 100] [--deployments 20] [--replicas 5] [--services 20]

Each run happens in a fresh child process, so the peak RSS it reports is the cost of
this work alone (interpreter included), not of whatever ran before.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def manifests(namespaces: int, deployments: int, replicas: int, services: int) -> str:
    docs = []
    for n in range(namespaces):
        ns = f"team-{n:03d}"
        docs.append(f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n  labels: {{team: t{n % 10}}}\n")
        for d in range(deployments):
            app = f"app-{d:02d}"
            docs.append(
                f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: {app}, namespace: {ns}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {app}}}}}
  template:
    metadata: {{labels: {{app: {app}, tier: t{d % 3}}}}}
    spec:
      containers:
      - name: main
        image: nginx:1.27
        ports: [{{name: http, containerPort: 8080}}, {{name: metrics, containerPort: 9090}}]
        readinessProbe: {{httpGet: {{path: /healthz, port: http}}}}
""")
        for s in range(services):
            app = f"app-{s % deployments:02d}"
            kind = "NodePort" if s % 10 == 0 else "ClusterIP"
            docs.append(
                f"""apiVersion: v1
kind: Service
metadata: {{name: svc-{s:02d}, namespace: {ns}}}
spec:
  type: {kind}
  selector: {{app: {app}}}
  ports: [{{name: http, port: 80, targetPort: http}}, {{name: metrics, port: 9090, targetPort: metrics}}]
""")
    return "---\n".join(docs)


def child(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from knetsim.cluster.build import build_cluster
    from knetsim.cluster.config import config_from_dict
    from knetsim.model.loader import load_text

    pods = args.namespaces * args.deployments * args.replicas
    node_count = max(3, pods // 100 + 1)  # ~100 pods per node, as kubelet's default max of 110 allows
    text = manifests(args.namespaces, args.deployments, args.replicas, args.services)
    config = config_from_dict({"nodes": node_count, "nodeCIDRMask": 24})
    t0 = time.perf_counter()
    loaded = load_text(text, "bench.yaml")
    t1 = time.perf_counter()
    result = build_cluster(loaded.documents, config)
    t2 = time.perf_counter()
    assert not result.errors, result.errors[:3]
    state = result.state
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({
        "documents": len(loaded.documents), "nodes": len(state.nodes), "pods": len(state.pods),
        "services": len(state.services), "endpointslices": len(state.endpoint_slices),
        "load_s": round(t1 - t0, 3), "reconcile_s": round(t2 - t1, 3), "total_s": round(t2 - t0, 3),
        "peak_rss_mb": round(rss_mb, 1),
    }))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--namespaces", type=int, default=100)
    parser.add_argument("--deployments", type=int, default=20)
    parser.add_argument("--replicas", type=int, default=5)
    parser.add_argument("--services", type=int, default=20)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return 0
    cmd = [sys.executable, __file__, "--child", "--namespaces", str(args.namespaces), "--deployments",
           str(args.deployments), "--replicas", str(args.replicas), "--services", str(args.services)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    figures = json.loads(out.strip().splitlines()[-1])
    print(f"knetsim core: {figures['pods']:,} pods, {figures['services']:,} Services, "
          f"{figures['endpointslices']:,} EndpointSlices on {figures['nodes']} nodes "
          f"({figures['documents']:,} documents)")
    print(f"  load (YAML parse)   {figures['load_s']:>7.3f} s")
    print(f"  reconcile           {figures['reconcile_s']:>7.3f} s")
    print(f"  total               {figures['total_s']:>7.3f} s   target < 3 s    "
          f"{'OK' if figures['total_s'] < 3 else 'MISSED'}")
    print(f"  peak RSS            {figures['peak_rss_mb']:>7.1f} MB  target < 400 MB "
          f"{'OK' if figures['peak_rss_mb'] < 400 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
