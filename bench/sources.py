"""Benchmark: diagnosing a big cluster through its API server, end to end, against kubectl.

    .venv/bin/python bench/sources.py [--deployments 250] [--replicas 20]

A cluster of 250 Deployments × 20 pods (5,000 pods, 250 Services and their EndpointSlices, plus
ReplicaSets and the system objects) is served by a stand-in API server on loopback
(tests/fakeapi.py: kube-apiserver's wire format, pages of 500; plain HTTP without a token, as
kubectl sends bearer tokens only over TLS). Each figure is one whole CLI process, as a user runs it:

* ``knetsim doctor --kubeconfig K`` — list every analysed kind through the official client, admit,
  build, diagnose;
* the peer, measured in the same run: ``kubectl get ... -A -o json > snap`` of the same kinds from
  the same server, then ``knetsim doctor -f snap`` (the workaround before --kubeconfig);
* peak memory of the live run.

Targets: the live run takes no longer than the peer's two steps together (ratio ≤ 1.0), and at most
300 MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakeapi import fake_api, kubeconfig_for  # noqa: E402

from knetsim import Cluster  # noqa: E402

KNETSIM = [sys.executable, "-c", "from knetsim.cli.main import main; main()"]
KINDS = ("namespaces,nodes,pods,services,endpointslices,deployments,replicasets,statefulsets,daemonsets,jobs,"
         "ingresses,ingressclasses,networkpolicies")


def cluster_objects(deployments: int, replicas: int) -> list[dict[str, Any]]:
    """What the API server of such a cluster holds: knetsim's own build of the manifests, with uids."""
    docs: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}]
    for i in range(deployments):
        labels = {"app": f"app-{i}"}
        meta = {"name": f"app-{i}", "namespace": "bench"}
        docs.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                     "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                              "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                                  {"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}}}})
        docs.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"app-{i}", "namespace": "bench"},
                     "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 80}]}})
    state = Cluster.from_yaml(yaml.safe_dump_all(docs)).state
    objects: list[Any] = [*state.namespaces.values(), *state.nodes.values(), *state.ingress_classes.values(),
                          *state.workloads.values()]
    for coll in (state.pods, state.services, state.endpoint_slices, state.ingresses, state.network_policies):
        objects += coll.values()
    out = json.loads(json.dumps([o.raw for o in objects]))
    for o, body in zip(objects, out, strict=True):
        body["metadata"].setdefault("uid", o.meta.uid or f"uid-{o.kind}-{o.namespace}-{o.name}")
        body["metadata"].setdefault("resourceVersion", "1")
    return out


def run(argv: list[str], env: dict[str, str], stdout: Any = subprocess.PIPE) -> tuple[float, int, int]:
    """(seconds, exit code, peak RSS in MiB) of one process."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.DEVNULL, env=env)
    if stdout is subprocess.PIPE:
        assert proc.stdout is not None
        proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - started, os.waitstatus_to_exitcode(status), usage.ru_maxrss // 1024


def _without_sources(report: str) -> str:
    """A doctor JSON report without each finding's ``source``; unparsable output as it is."""
    try:
        data = json.loads(report)
    except ValueError:
        return report
    for finding in data.get("findings") or []:
        finding.pop("source", None)
    return json.dumps(data, sort_keys=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deployments", type=int, default=250)
    parser.add_argument("--replicas", type=int, default=20)
    args = parser.parse_args()
    kubectl = shutil.which("kubectl")
    objects = cluster_objects(args.deployments, args.replicas)
    pods = sum(o["kind"] == "Pod" for o in objects)
    print(f"cluster: {len(objects)} objects, {pods} pods")
    failed = False
    with tempfile.TemporaryDirectory() as tmp, fake_api(objects, token="") as api:
        kubeconfig = Path(tmp) / "config"
        kubeconfig.write_text(yaml.safe_dump(kubeconfig_for(api.url, {})))
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env.update(HOME=tmp, KNETSIM_STATE=str(Path(tmp) / "no-knetsim"))
        live, code, rss = run([*KNETSIM, "doctor", "--kubeconfig", str(kubeconfig)], env)
        print(f"knetsim doctor --kubeconfig          {live:6.2f} s   exit {code}   peak {rss} MiB (target ≤ 300)")
        failed |= code not in (0, 1) or rss > 300
        if kubectl is None:
            print("kubectl not installed: no peer measured")
            return 1 if failed else 0
        snap = Path(tmp) / "snap.json"
        with snap.open("w") as fh:
            get, code, _ = run([kubectl, "--kubeconfig", str(kubeconfig), "get", KINDS, "-A", "-o", "json"], env,
                               stdout=fh)
        print(f"kubectl get -A -o json > snap        {get:6.2f} s   exit {code}")
        offline, code, _ = run([*KNETSIM, "doctor", "-f", str(snap)], env)
        print(f"knetsim doctor -f snap               {offline:6.2f} s   exit {code}")
        # The same answer both ways, or the comparison means nothing.
        # Each finding names where its object came from (the snapshot's file, or nothing for a live read): compared
        # without it.
        same = [_without_sources(subprocess.run(argv, capture_output=True, text=True, env=env).stdout)
                for argv in ([*KNETSIM, "doctor", "--kubeconfig", str(kubeconfig), "-o", "json"],
                             [*KNETSIM, "doctor", "-f", str(snap), "-o", "json"])]
        print(f"same findings both ways              {same[0] == same[1] and bool(same[0])}")
        failed |= same[0] != same[1]
        ratio = live / (get + offline)
        print(f"live / (kubectl get + doctor -f)     {ratio:6.2f}     (target ≤ 1.0)")
        failed |= ratio > 1.0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
