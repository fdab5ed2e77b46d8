"""DNS as a workload, live: the doctor through --kubeconfig names CoreDNS scaled to zero and a looping Corefile,
and the cluster's DNS stops answering as kube-dns without ready CoreDNS would."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import dns.exception
import dns.message
import dns.query
import pytest
from tests.e2e.conftest import KUBECTL, Cluster, knetsim_argv, start, stop, wait_for

# This module starts clusters itself (tests/live.py marks the fixtures' users).
pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    cluster = start(tmp_path_factory.mktemp("dnslive"))
    try:
        yield cluster
    finally:
        stop(cluster)


def answers(cluster: Cluster) -> bool:
    query = dns.message.make_query("kubernetes.default.svc.cluster.local.", "A")
    try:
        return bool(dns.query.udp(query, "127.0.0.1", port=cluster.dns_port, timeout=1).answer)
    except dns.exception.Timeout:
        return False


def doctor(cluster: Cluster) -> str:
    out = subprocess.run(knetsim_argv("doctor", "--kubeconfig", cluster.kubeconfig), capture_output=True,
                         text=True, env=cluster.env(), timeout=60)
    return out.stdout + out.stderr


def test_scaled_to_zero_then_back(live: Cluster):
    assert wait_for(lambda: answers(live))
    live.kubectl("-n", "kube-system", "scale", "deployment", "coredns", "--replicas=0")
    try:
        assert wait_for(lambda: not answers(live))
        report = doctor(live)
        assert "CoreDNSScaledToZero" in report and "scale deployment coredns --replicas=2" in report
        assert "DNSEgressBlocked" not in report and "allow egress to kube-dns" not in report
    finally:
        live.kubectl("-n", "kube-system", "scale", "deployment", "coredns", "--replicas=2")
    assert wait_for(lambda: answers(live), timeout=20)
    assert "CoreDNSScaledToZero" not in doctor(live)


def test_a_looping_corefile_read_through_the_kubeconfig(live: Cluster):
    corefile = ".:53 {\n    errors\n    kubernetes cluster.local in-addr.arpa ip6.arpa\n    forward . 127.0.0.1\n" \
               "    loop\n}\n"
    path = live.write("Corefile", corefile)
    live.kubectl("-n", "kube-system", "create", "configmap", "coredns", f"--from-file=Corefile={path}")
    try:
        assert wait_for(lambda: not answers(live))
        report = doctor(live)
        assert "CoreDNSForwardLoop" in report and "ConfigMap kube-system/coredns" in report
    finally:
        live.kubectl("-n", "kube-system", "delete", "configmap", "coredns")
    assert wait_for(lambda: answers(live), timeout=20)
