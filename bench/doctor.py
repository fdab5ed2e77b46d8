"""Benchmark: `knetsim doctor` on one Deployment of 100,000 replicas behind a Service, on kind's three nodes.

Issue 34 point 9: it took 98 s and printed 99,504 lines, with a wrong fix ("fix the readiness probe"); the nodes
are full (the kubelet's maxPods, 110 per node). Targets: under 20 s of CPU (wall time follows it on an idle
machine; on a shared one it is printed, not judged), a report under 40 lines that names the scheduler's "Too many
pods", and under 600 MB peak RSS, on the 2-core reference machine.

    python bench/doctor.py [--replicas 100000]

The command runs in a fresh child process (`knetsim doctor -f FILE`, as a user runs it), so its wall time and
peak RSS are this work alone. Figures measured (2-core machine shared with other work, 2026-12-06):
before 99.1 s wall / 59 s CPU, 99,504 lines; after 8.5 s wall / 6.2 s CPU, 18 lines, 337 MB.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_CPU_S, TARGET_LINES, TARGET_RSS_MB = 20.0, 40, 600.0


def manifest(replicas: int) -> str:
    return f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{{containerPort: 80}}]
---
apiVersion: v1
kind: Service
metadata: {{name: web}}
spec:
  selector: {{app: web}}
  ports: [{{port: 80}}]
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicas", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "web.yaml"
        path.write_text(manifest(args.replicas))
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "knetsim.cli.main", "doctor", "-f", str(path)], env=env,
                              capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = done.stdout.splitlines()
    names_cause = "Too many pods" in done.stdout and "PodsUnschedulable" in done.stdout
    print(f"knetsim doctor: {args.replicas:,} replicas of one Deployment on 3 nodes (exit {done.returncode})")
    cpu = usage.ru_utime + usage.ru_stime
    print(f"  wall                {wall:>8.2f} s")
    print(f"  CPU (user+sys)      {cpu:>8.2f} s   target < {TARGET_CPU_S:.0f} s   "
          f"{'OK' if cpu < TARGET_CPU_S else 'MISSED'}")
    print(f"  report              {len(lines):>8,} lines target < {TARGET_LINES} "
          f"{'OK' if len(lines) < TARGET_LINES else 'MISSED'}")
    print(f"  names the cause     {'yes' if names_cause else 'no':>8}   (PodsUnschedulable, Too many pods)")
    print(f"  peak RSS            {usage.ru_maxrss / 1024:>8.1f} MB  target < {TARGET_RSS_MB:.0f} MB "
          f"{'OK' if usage.ru_maxrss / 1024 < TARGET_RSS_MB else 'MISSED'}")
    return 0 if done.returncode in (0, 1) and names_cause else 1


if __name__ == "__main__":
    raise SystemExit(main())
