"""A Corefile CoreDNS cannot start with, live: the kubelet restarts the coredns containers, ``kubectl get pods``
shows CrashLoopBackOff with RESTARTS climbing, and ``kubectl logs`` shows CoreDNS's own last line; a Corefile
without the ready plugin leaves the pods Running but not Ready."""

from __future__ import annotations

import json
import subprocess

from tests.live import Cluster, knetsim_argv, wait_for

LOOPING = (".:53 {\n    errors\n    ready\n    kubernetes cluster.local in-addr.arpa ip6.arpa\n"
           "    forward . 127.0.0.1\n    loop\n}\n")
REPAIRED = LOOPING.replace("127.0.0.1", "/etc/resolv.conf")


def coredns_rows(cluster: Cluster) -> list[list[str]]:
    out = cluster.kubectl("get", "pods", "-n", "kube-system", "-l", "k8s-app=kube-dns", "--no-headers").stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def use_corefile(cluster: Cluster, text: str) -> None:
    """kube-system/coredns with this Corefile, and new coredns pods to read it (a running CoreDNS keeps the
    Corefile it started with: reload refuses a broken one)."""
    cluster.use_corefile(text)
    cluster.kubectl("-n", "kube-system", "delete", "pods", "-l", "k8s-app=kube-dns", "--wait=false")


def assert_recovers(cluster: Cluster) -> None:
    use_corefile(cluster, REPAIRED)
    assert wait_for(lambda: (rows := coredns_rows(cluster)) and len(rows) == 2 and
                    all(r[1:4] == ["1/1", "Running", "0"] for r in rows), timeout=30), coredns_rows(cluster)


def test_looping_corefile_crash_loops_then_recovers(cluster: Cluster) -> None:
    use_corefile(cluster, LOOPING)

    def crashing() -> list[list[str]] | None:
        rows = coredns_rows(cluster)
        return rows if len(rows) == 2 and all(r[2] == "CrashLoopBackOff" and int(r[3].split()[0]) >= 1
                                              for r in rows) else None
    rows = wait_for(crashing, timeout=30)
    assert rows, coredns_rows(cluster)
    assert all(r[1] == "0/1" for r in rows)
    first = int(rows[0][3])
    assert wait_for(lambda: int(coredns_rows(cluster)[0][3]) > first, timeout=30), "RESTARTS did not climb"
    logs = cluster.kubectl("-n", "kube-system", "logs", rows[0][0]).stdout
    assert 'plugin/loop: Loop (127.0.0.1:53 -> :53) detected for zone "."' in logs, logs

    assert_recovers(cluster)


def test_a_corefile_without_ready_leaves_the_pods_running_but_not_ready(cluster: Cluster) -> None:
    """kubeadm's readiness probe asks the ready plugin on :8181: a Corefile without it leaves the coredns pods
    Running 0/1 (refused, never restarted), and the doctor read live names the missing plugin."""
    use_corefile(cluster, REPAIRED.replace("    ready\n", ""))
    unready = wait_for(lambda: (rows := coredns_rows(cluster)) and len(rows) == 2 and
                       all(r[1:3] == ["0/1", "Running"] for r in rows) and rows, timeout=30)
    assert unready, coredns_rows(cluster)
    doctor = subprocess.run(knetsim_argv("doctor", "--kubeconfig", cluster.kubeconfig, "-o", "json"),
                            capture_output=True, text=True, env=cluster.env(), timeout=120)
    found = [f for f in json.loads(doctor.stdout)["findings"] if f["code"] == "CoreDNSNotReady"]
    assert found and "no `ready` plugin" in found[0]["message"], doctor.stdout

    assert_recovers(cluster)
