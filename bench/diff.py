"""Benchmark: `knetsim diff` of two 10,000-pod inputs, and `knetsim policy generate` for 1,000 workloads.

    .venv/bin/python bench/diff.py                       # both, at the sizes of the targets
    .venv/bin/python bench/diff.py --pods 2000 --workloads 200

Every figure is one whole process, started as a user starts it (this virtualenv's console
script), its wall time, its CPU time (user + system, with the children it forks) and its own
peak RSS (wait4), bytecode cache in place as after an install. On a machine shared with other work the wall time grows
with the load and the CPU time much less: both are printed.
Inputs come from bench/policy_gen.py (N namespaces x 9 Deployments, one NetworkPolicy each plus a
default-deny per namespace), with a Service per Deployment.

* diff: BEFORE is 100 namespaces x 100 pods (10,000 pods, 900 Deployments and Services, 1,000
  policies); AFTER is BEFORE with a change set a pull request could hold: a Service selector
  typo (ns-0/app-2), a policy that loses a peer (ns-0/app-3 no longer admits app-2), a new
  policy opening ns-1/app-5 to every namespace, a Deployment scaled up (ns-2/app-4, +2 pods).
  `knetsim diff --before B --after A -o json`, every layer. Target: < 4 s end to end; the
  answer must name each change on the layers it touches (endpoints lost and gained,
  reachability lost and gained, the objects).
* policy generate: 100 namespaces x 10 Deployments of one pod (1,000 workloads, the input's
  own 1,100 policies deployed) and a Hubble flow log (`hubble observe -o json` lines) of the
  traffic the policies intend: each app-j calls app-(j+1) of its namespace on its named port, the
  frontends of a team's api namespaces call app-0 of the team's other namespaces, every pod looks
  up a name (UDP 53 to the cluster DNS) and calls 192.168.<n mod 8 + 1>.10:443; each connection
  as its request and reply flows. `knetsim policy generate --flows LOG -o json`: time, peak
  RSS, the generated set's size (policies, rules, bytes of its YAML) and whether the proof
  holds (every observed connection allowed, nothing more). No target but the proof; the
  figures are the point.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from matrix import CLUSTER_CONFIG, KNETSIM, run  # one whole process, as bench/matrix.py times it

HERE = Path(__file__).resolve().parent
DIFF_TARGET_S = 4.0


# In a child process, as bench/matrix.py does: a parent's peak RSS carries over into the children it forks,
# so this process never holds the manifests.
_WRITE = """
import json, sys, yaml, policy_gen
namespaces, apps, pods, change = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]) or None, sys.argv[5] == "1"
docs = policy_gen.manifests(namespaces, apps, pods) + policy_gen.services(namespaces, apps)
if change:
    def find(kind, ns, name):
        return next(d for d in docs if d["kind"] == kind and d["metadata"]["namespace"] == ns
                    and d["metadata"]["name"] == name)
    find("Service", "ns-0", "app-2")["spec"]["selector"]["app"] = "app-22"
    rule = find("NetworkPolicy", "ns-0", "app-3")["spec"]["ingress"][0]
    rule["from"] = [p for p in rule["from"] if "namespaceSelector" in p]
    docs.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                 "metadata": {"name": "app-5-from-everywhere", "namespace": "ns-1"},
                 "spec": {"podSelector": {"matchLabels": {"app": "app-5"}}, "policyTypes": ["Ingress"],
                          "ingress": [{"from": [{"namespaceSelector": {}}], "ports": [{"port": "p-5"}]}]}})
    find("Deployment", "ns-2", "app-4")["spec"]["replicas"] += 2
dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
with open(sys.argv[1], "w") as f:
    yaml.dump_all(docs, f, Dumper=dumper, sort_keys=False)
"""


def write_input(directory: Path, namespaces: int, apps: int, pods_per_namespace: int | None,
                change: bool = False) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-c", _WRITE, str(directory / "all.yaml"), str(namespaces), str(apps),
                    str(pods_per_namespace or 0), "1" if change else "0"], check=True, cwd=HERE)


def bench_diff(work: Path, pods: int) -> bool:
    namespaces = pods // 100
    print(f"== knetsim diff: two {pods:,}-pod inputs ({namespaces * 9:,} Deployments and Services, "
          f"{namespaces * 10:,} policies), -o json, every layer ==")
    before, after = work / "before", work / "after"
    write_input(before, namespaces, 9, 100)
    write_input(after, namespaces, 9, 100, change=True)
    config = work / "cluster.yaml"
    config.write_text(CLUSTER_CONFIG)
    cmd = [KNETSIM, "diff", "--before", str(before), "--after", str(after), "--cluster-config", str(config),
           "-o", "json"]
    run(cmd, work / "warm.json")  # untimed: writes the bytecode cache
    runs = [run(cmd, work / "diff.json") for _ in range(3)]
    best = min(runs, key=lambda r: r.wall)
    answer = json.loads(best.out.read_text())
    summary: dict[str, dict[str, int]] = answer["summary"]
    expected = {"objects": "changed", "endpoints": "lost", "reachability": "lost"}
    found = all(summary.get(layer, {}).get(effect) for layer, effect in expected.items()) and \
        summary["endpoints"].get("gained") and summary["reachability"].get("gained")
    passed = best.wall < DIFF_TARGET_S and bool(found)
    print(f"{best.wall:.2f} s (best of 3; median {sorted(r.wall for r in runs)[1]:.2f} s; CPU {best.cpu:.2f} s), "
          f"{best.rss_mb:,.0f} MB, "
          f"exit {best.code} (target < {DIFF_TARGET_S:g} s) [{'ok' if passed else 'MISSED'}]")
    print("   " + "; ".join(f"{layer}: " + ", ".join(f"{n} {effect}" for effect, n in counts.items())
                           for layer, counts in summary.items() if counts)
          + ("" if found else "  [MISSED: a change the set makes is not named]"), flush=True)
    return passed


_FLOWS = """
import json, sys
namespaces, apps = int(sys.argv[2]), int(sys.argv[3])
pods = json.load(open(sys.argv[1]))["items"]
dns = json.load(open(sys.argv[4]))["items"]
dns_ip = next(p["status"]["podIP"] for p in dns if p["metadata"]["name"].startswith("coredns-"))
by_app = {}
for p in pods:
    labels = p["metadata"].get("labels") or {}
    if "app" in labels and p["metadata"]["namespace"].startswith("ns-"):
        by_app.setdefault((p["metadata"]["namespace"], labels["app"]), []).append(p)
ns_labels = {f"ns-{n}": ("web", "api", "data")[n % 3] for n in range(namespaces)}

def end(p):
    labels = [f"k8s:{k}={v}" for k, v in sorted((p["metadata"].get("labels") or {}).items())]
    labels.append(f"k8s:io.kubernetes.pod.namespace={p['metadata']['namespace']}")
    return {"namespace": p["metadata"]["namespace"], "pod_name": p["metadata"]["name"], "labels": labels}

def flow(src, dst, dst_ip, proto, port, seq, reply=False, dst_end=None):
    sport = 30000 + seq % 30000
    a, b = (dst_end, end(src)) if reply else (end(src), dst_end)
    ips = (dst_ip, src["status"]["podIP"]) if reply else (src["status"]["podIP"], dst_ip)
    ports = {"source_port": port, "destination_port": sport} if reply else {"source_port": sport,
                                                                             "destination_port": port}
    return {"flow": {"time": f"2026-01-01T00:00:{seq % 60:02d}Z", "verdict": "FORWARDED",
                     "IP": {"source": ips[0], "destination": ips[1], "ipVersion": "IPv4"},
                     "l4": {proto: ports}, "source": a or {}, "destination": b or {},
                     "Type": "L3_L4", "node_name": src["spec"].get("nodeName", ""),
                     "traffic_direction": "EGRESS", "is_reply": reply}}

seq = 0
out = open(sys.argv[5], "w")
def emit(src, dst_ip, proto, port, dst_end):
    global seq
    seq += 1
    out.write(json.dumps(flow(src, None, dst_ip, proto, port, seq, dst_end=dst_end)) + "\\n")
    out.write(json.dumps(flow(src, None, dst_ip, proto, port, seq, reply=True, dst_end=dst_end)) + "\\n")

for n in range(namespaces):
    ns = f"ns-{n}"
    team = [m for m in range(n // 10 * 10, min(n // 10 * 10 + 10, namespaces)) if m != n]
    for j in range(apps):
        for src in by_app[(ns, f"app-{j}")]:
            emit(src, dns_ip, "UDP", 53, {"namespace": "kube-system", "pod_name": "coredns",
                                          "labels": ["k8s:k8s-app=kube-dns"]})
            emit(src, f"192.168.{n % 8 + 1}.10", "TCP", 443, None)
            if j + 1 < apps:
                dst = by_app[(ns, f"app-{j + 1}")][0]
                emit(src, dst["status"]["podIP"], "TCP", 8000 + j + 1, end(dst))
            if ns_labels[ns] == "api" and j % 2 == 0:
                for m in team:
                    dst = by_app[(f"ns-{m}", "app-0")][0]
                    emit(src, dst["status"]["podIP"], "TCP", 8000, end(dst))
out.close()
"""


def bench_generate(work: Path, workloads: int) -> bool:
    namespaces = workloads // 10
    print(f"== knetsim policy generate: {namespaces * 10:,} workloads from a Hubble flow log, -o json "
          "(generated, proven, diffed against the deployed policies) ==")
    directory = work / "gen"
    write_input(directory, namespaces, 10, None)
    config = work / "cluster.yaml"
    config.write_text(CLUSTER_CONFIG)
    pods, system = work / "pods.json", work / "system.json"
    base = ["-f", str(directory), "--cluster-config", str(config)]
    run([KNETSIM, "get", "pods", "-A", "-o", "json", *base], pods)
    run([KNETSIM, "get", "pods", "-n", "kube-system", "-o", "json", *base], system)
    log = work / "flows.json"
    subprocess.run([sys.executable, "-c", _FLOWS, str(pods), str(namespaces), "10", str(system), str(log)],
                   check=True)
    flows = log.read_text().count("\n")
    cmd = [KNETSIM, "policy", "generate", *base, "--flows", str(log), "-o", "json"]
    run(cmd, work / "warm.json")  # untimed: the bytecode cache
    r = run(cmd, work / "generated.json")
    answer: dict[str, Any] = json.loads(r.out.read_text())
    policies = answer["policies"]
    rules = sum(len(p.get("spec", {}).get("ingress") or []) + len(p.get("spec", {}).get("egress") or [])
                for p in policies)
    yaml_out = run([KNETSIM, "policy", "generate", *base, "--flows", str(log), "-o", "yaml"], work / "gen.yaml")
    size = yaml_out.out.stat().st_size
    proof = answer["proof"]
    holds = r.code == 0 and proof.get("holds", False)
    lost = answer["diff"]["summary"].get("reachability", {}).get("lost", 0)
    print(f"{r.wall:.2f} s (CPU {r.cpu:.2f} s), {r.rss_mb:,.0f} MB for {flows:,} flows: {len(policies):,} policies, "
          f"{rules:,} rules, "
          f"{size / 1024:,.0f} KiB of YAML; proof over {len(proof.get('pairs', [])):,} workload pairs "
          f"{'holds' if holds else 'FAILS'}; against the deployed policies it newly denies {lost:,} "
          f"[{'ok' if holds else 'MISSED'}]", flush=True)
    return holds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=10_000, help="pods per side of the diff (x100 per namespace)")
    parser.add_argument("--workloads", type=int, default=1_000, help="workloads of the generate input (x10)")
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="knetsim-bench-diff-") as tmp:
        work = Path(tmp)
        ok &= bench_diff(work, args.pods)
        ok &= bench_generate(work, args.workloads)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
