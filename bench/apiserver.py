"""Benchmarks of the live API server against the real kubectl.

    .venv/bin/python bench/apiserver.py [--objects 1000] [--samples 20]

Prints: startup (process spawn to the first successful `kubectl get pods`, target < 1 s),
p50/p90 latency of `kubectl get svc`, and the time of `kubectl apply -f` of N objects
(Deployments and Services alternating, one file).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        sys.exit("kubectl is not installed")
    base = Path(tempfile.mkdtemp(prefix="knetsim-bench-"))
    state, home = base / "state", base / "home"
    state.mkdir()
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env.update(KUBECONFIG=str(state / "kubeconfig"), HOME=str(home))
    def start() -> tuple[subprocess.Popen[bytes], float, float]:
        """Start the server; (process, seconds to ready.json, seconds to the first good `kubectl get pods`)."""
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "knetsim.apiserver", "--state", str(state), "--port", "0"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not (state / "ready.json").exists():
            time.sleep(0.005)
        ready = time.perf_counter() - t0
        while subprocess.run([kubectl, "get", "pods"], env=env, capture_output=True).returncode != 0:
            pass
        return proc, ready, time.perf_counter() - t0

    # Warm the discovery cache and the certificate once, as a user's second `knetsim up` would.
    proc, ready, first = start()
    try:
        print(f"startup (cold: new state dir, certificate, empty kubectl cache): ready {ready:.3f} s, "
              f"first `kubectl get pods` {first:.3f} s")
    finally:
        proc.terminate()
        proc.wait()
    (state / "ready.json").unlink(missing_ok=True)
    proc, ready, first = start()
    try:
        print(f"startup (warm: existing state dir): ready {ready:.3f} s, first `kubectl get pods` {first:.3f} s")
        samples = []
        for _ in range(args.samples):
            s = time.perf_counter()
            subprocess.run([kubectl, "get", "svc", "-A"], env=env, capture_output=True, check=True)
            samples.append(time.perf_counter() - s)
        samples.sort()
        print(f"`kubectl get svc -A`: p50 {statistics.median(samples) * 1000:.0f} ms, "
              f"p90 {samples[int(len(samples) * 0.9) - 1] * 1000:.0f} ms ({args.samples} runs)")
        docs = []
        for i in range(args.objects):
            if i % 2 == 0:
                docs.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"d{i}"},
                             "spec": {"replicas": 1, "selector": {"matchLabels": {"app": f"a{i}"}},
                                      "template": {"metadata": {"labels": {"app": f"a{i}"}}, "spec": {
                                          "containers": [{"name": "c", "image": "nginx:1.27",
                                                          "ports": [{"containerPort": 80}]}]}}}})
            else:
                docs.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"s{i}"},
                             "spec": {"selector": {"app": f"a{i - 1}"}, "ports": [{"port": 80}]}})
        manifest = base / "bulk.yaml"
        manifest.write_text("".join("---\n" + json.dumps(d) + "\n" for d in docs))
        s = time.perf_counter()
        res = subprocess.run([kubectl, "apply", "-f", str(manifest)], env=env, capture_output=True, text=True)
        if res.returncode:
            sys.exit(f"apply failed: {res.stderr[-2000:]}")
        applied = time.perf_counter() - s
        s = time.perf_counter()
        out = subprocess.run([kubectl, "get", "pods", "--no-headers"], env=env, capture_output=True, text=True,
                             check=True).stdout
        settled = time.perf_counter() - s
        print(f"`kubectl apply` of {args.objects} objects: {applied:.1f} s "
              f"({args.objects / applied:.0f} objects/s); then `get pods` {settled:.2f} s, "
              f"{len(out.splitlines())} pods")
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
