"""What a runaway pod command costs the cluster, and what a huge List costs `knetsim validate`.

    .venv/bin/python bench/budgets.py [--samples 40] [--items 100000] [--python OTHER/.venv/bin/python]

Part 1, a live server (a subprocess) with a busybox pod: the latency of `GET /api/v1/pods` (p50, p99,
max over N requests) while nothing runs, then while the pod runs a CPU-bound loop
(`while true; do i=$((i+1)); done`) and a `seq 1 100000000 > /dev/null`, then while it runs the
memory runaway `x=a; while true; do x=$x$x; done` again and again (each is OOM-killed; the next
starts), with the server's peak RSS. Target: p99 under load within 50 ms of p99 at rest, RSS < 400 MB.
`--python` runs the same against another checkout's interpreter (the figures before this work).

Part 2, whole processes, cold: `knetsim validate -f` of a `kind: List` of N Pods, as JSON and as YAML:
wall time, CPU time and peak RSS (targets: < 10 s, < 500 MB).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_EXTRA_P99 = 0.05  # seconds
TARGET_RSS_MB = 400.0
TARGET_VALIDATE_S, TARGET_VALIDATE_MB = 10.0, 500.0


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _latencies(url: str, token: str, ctx: ssl.SSLContext, samples: int) -> list[float]:
    out = []
    for _ in range(samples):
        req = urllib.request.Request(url + "/api/v1/namespaces/default/pods",
                                     headers={"Authorization": f"Bearer {token}"})
        started = time.perf_counter()
        with urllib.request.urlopen(req, context=ctx, timeout=60) as resp:
            resp.read()
        out.append(time.perf_counter() - started)
        time.sleep(0.02)
    return out


def _figures(name: str, values: list[float]) -> str:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (f"{name}: p50 {statistics.median(values) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
            f"max {ordered[-1] * 1000:.1f} ms")


def runaway(python: str, samples: int) -> bool:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("kubectl is not installed: part 1 skipped")
        return True
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        state.mkdir()
        log = (Path(tmp) / "daemon.log").open("wb")
        proc = subprocess.Popen([python, "-m", "knetsim.daemon", "--state", str(state), "--port", "0"],
                                stdout=log, stderr=log, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while not (state / "ready.json").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            info = json.loads((state / "ready.json").read_text())
            env = {**os.environ, "KUBECONFIG": str(state / "kubeconfig"), "HOME": tmp}
            url, token = f"https://127.0.0.1:{info['api_port']}", (state / "token").read_text().strip()
            ctx = ssl.create_default_context(cafile=str(state / "serving.crt"))
            subprocess.run([kubectl, "run", "load", "--image=busybox:1.36", "--restart=Never", "--", "sleep",
                            "3600"], env=env, check=True, capture_output=True)
            subprocess.run([kubectl, "wait", "--for=condition=Ready", "pod/load", "--timeout=60s"], env=env,
                           check=True, capture_output=True)
            quiet = _latencies(url, token, ctx, samples)
            print(_figures("at rest", quiet))
            loops = [subprocess.Popen([kubectl, "exec", "load", "--", "sh", "-c", script], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                     for script in ("while true; do i=$((i+1)); done", "seq 1 100000000 > /dev/null")]
            time.sleep(1)
            busy = _latencies(url, token, ctx, samples)
            for p in loops:
                p.terminate()
                p.wait(30)
            print(_figures("CPU-bound loop and a huge seq running", busy))
            peak = [_rss_mb(proc.pid)]
            stop = threading.Event()

            def hog() -> None:
                while not stop.is_set():
                    subprocess.run([kubectl, "exec", "load", "--", "sh", "-c", "x=a; while true; do x=$x$x; done"],
                                   env=env, capture_output=True, timeout=120, check=False)
                    peak.append(_rss_mb(proc.pid))

            thread = threading.Thread(target=hog)
            thread.start()
            time.sleep(1)
            hogged = _latencies(url, token, ctx, samples)
            peak.append(_rss_mb(proc.pid))
            stop.set()
            thread.join(180)
            print(_figures("memory runaway (x=$x$x, OOM-killed again and again)", hogged))
            worst = max(sorted(busy)[int(len(busy) * 0.99) - 1], sorted(hogged)[int(len(hogged) * 0.99) - 1])
            base = sorted(quiet)[int(len(quiet) * 0.99) - 1]
            print(f"server RSS at most {max(peak):.0f} MB (target < {TARGET_RSS_MB:.0f} MB); p99 under load "
                  f"+{(worst - base) * 1000:.1f} ms over rest (target < {TARGET_EXTRA_P99 * 1000:.0f} ms)")
            return max(peak) < TARGET_RSS_MB and worst - base < TARGET_EXTRA_P99
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()


def _list(items: int, path: Path, as_yaml: bool) -> None:
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"pod-{i}", "namespace": "default", "labels": {"app": f"web-{i % 50}"}},
             "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
                                      "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}
            for i in range(items)]
    doc = {"apiVersion": "v1", "kind": "List", "items": pods}
    if not as_yaml:
        path.write_text(json.dumps(doc))
        return
    # Written as `kubectl get -o yaml` writes it (block style), without PyYAML's slow emitter.
    lines = ["apiVersion: v1", "kind: List", "items:"]
    for p in pods:
        m = p["metadata"]
        lines += ["- apiVersion: v1", "  kind: Pod", "  metadata:", f"    name: {m['name']}",
                  "    namespace: default", "    labels:", f"      app: {m['labels']['app']}", "  spec:",
                  "    containers:", "    - name: web", "      image: nginx:1.27", "      ports:",
                  "      - containerPort: 80", "      resources:", "        requests:", "          cpu: 100m",
                  "          memory: 64Mi"]
    path.write_text("\n".join(lines) + "\n")


def validate(python: str, items: int) -> bool:
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for as_yaml in (False, True):
            path = Path(tmp) / f"pods.{'yaml' if as_yaml else 'json'}"
            _list(items, path, as_yaml)
            started = time.perf_counter()
            proc = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", python, "-m", "knetsim.cli.main", "validate",
                                   "-f", str(path)], capture_output=True, text=True, check=False)
            wall = time.perf_counter() - started
            user, system, kbytes = proc.stderr.strip().splitlines()[-1].split()
            mb = int(kbytes) / 1024
            print(f"validate {items} pods as {'YAML' if as_yaml else 'JSON'} ({path.stat().st_size >> 20} MiB): "
                  f"{wall:.1f} s wall, {float(user) + float(system):.1f} s CPU, {mb:.0f} MB peak "
                  f"(targets < {TARGET_VALIDATE_S:.0f} s, < {TARGET_VALIDATE_MB:.0f} MB): {proc.stdout.strip()}")
            ok = ok and wall < TARGET_VALIDATE_S and mb < TARGET_VALIDATE_MB
    return ok


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    ok = runaway(args.python, args.samples)
    ok = validate(args.python, args.items) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
