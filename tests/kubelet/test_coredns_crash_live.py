"""A Corefile CoreDNS cannot start with, live: the kubelet restarts the coredns containers, ``kubectl get pods``
shows CrashLoopBackOff with RESTARTS climbing, and ``kubectl logs`` shows CoreDNS's own last line."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.e2e.conftest import KUBECTL, Cluster, start, stop, wait_for

# This module starts its own cluster: it breaks kube-system's DNS.
pytestmark = pytest.mark.live

LOOPING = (".:53 {\n    errors\n    kubernetes cluster.local in-addr.arpa ip6.arpa\n    forward . 127.0.0.1\n"
           "    loop\n}\n")
REPAIRED = LOOPING.replace("127.0.0.1", "/etc/resolv.conf")


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    cluster = start(tmp_path_factory.mktemp("corednscrash"))
    try:
        yield cluster
    finally:
        stop(cluster)


def coredns_rows(cluster: Cluster) -> list[list[str]]:
    out = cluster.kubectl("get", "pods", "-n", "kube-system", "-l", "k8s-app=kube-dns", "--no-headers").stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def restart_coredns(cluster: Cluster) -> None:
    # A running CoreDNS keeps the Corefile it started with (reload refuses a broken one): new pods read it.
    cluster.kubectl("-n", "kube-system", "delete", "pods", "-l", "k8s-app=kube-dns", "--wait=false")


def test_looping_corefile_crash_loops_then_recovers(live: Cluster) -> None:
    path = live.write("Corefile", LOOPING)
    live.kubectl("-n", "kube-system", "create", "configmap", "coredns", f"--from-file=Corefile={path}")
    restart_coredns(live)

    def crashing() -> list[list[str]] | None:
        rows = coredns_rows(live)
        return rows if len(rows) == 2 and all(r[2] == "CrashLoopBackOff" and int(r[3].split()[0]) >= 1
                                              for r in rows) else None
    rows = wait_for(crashing, timeout=30)
    assert rows, coredns_rows(live)
    assert all(r[1] == "0/1" for r in rows)
    first = int(rows[0][3])
    assert wait_for(lambda: int(coredns_rows(live)[0][3]) > first, timeout=30), "RESTARTS did not climb"
    logs = live.kubectl("-n", "kube-system", "logs", rows[0][0]).stdout
    assert 'plugin/loop: Loop (127.0.0.1:53 -> :53) detected for zone "."' in logs, logs

    path = live.write("Corefile", REPAIRED)
    live.kubectl("-n", "kube-system", "delete", "configmap", "coredns")
    live.kubectl("-n", "kube-system", "create", "configmap", "coredns", f"--from-file=Corefile={path}")
    restart_coredns(live)
    assert wait_for(lambda: (rows := coredns_rows(live)) and len(rows) == 2 and
                    all(r[1:4] == ["1/1", "Running", "0"] for r in rows), timeout=30), coredns_rows(live)
