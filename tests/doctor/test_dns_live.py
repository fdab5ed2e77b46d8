"""DNS as a workload, live: the doctor through --kubeconfig names CoreDNS scaled to zero and a looping Corefile,
and the cluster's DNS stops answering as kube-dns without ready CoreDNS would."""

from __future__ import annotations

import subprocess

import dns.exception
import dns.message
import dns.query
from tests.live import Cluster, knetsim_argv, wait_for

# This module starts clusters itself (tests/cluster.py marks the fixtures' users).


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


def test_scaled_to_zero_then_back(cluster: Cluster):
    assert wait_for(lambda: answers(cluster))
    cluster.kubectl("-n", "kube-system", "scale", "deployment", "coredns", "--replicas=0")
    try:
        assert wait_for(lambda: not answers(cluster))
        report = doctor(cluster)
        assert "CoreDNSScaledToZero" in report and "scale deployment coredns --replicas=2" in report
        assert "DNSEgressBlocked" not in report and "allow egress to kube-dns" not in report
    finally:
        cluster.kubectl("-n", "kube-system", "scale", "deployment", "coredns", "--replicas=2")
    assert wait_for(lambda: answers(cluster), timeout=20)
    assert "CoreDNSScaledToZero" not in doctor(cluster)


def test_a_looping_corefile_read_through_the_kubeconfig(cluster: Cluster):
    corefile = ".:53 {\n    errors\n    kubernetes cluster.local in-addr.arpa ip6.arpa\n    forward . 127.0.0.1\n" \
               "    loop\n}\n"
    cluster.use_corefile(corefile)
    try:
        assert wait_for(lambda: not answers(cluster))
        report = doctor(cluster)
        assert "CoreDNSForwardLoop" in report and "ConfigMap kube-system/coredns" in report
    finally:
        cluster.use_corefile()
    assert wait_for(lambda: answers(cluster), timeout=20)


def test_the_corefile_is_where_kind_keeps_it(cluster: Cluster):
    """kubeadm's coredns ConfigMap is there from the start, mounted by the Deployment at /etc/coredns: `kubectl -n
    kube-system edit cm coredns` is how a CKA task changes the cluster's DNS (the test above changes it so)."""
    from knetsim.model.corefile import default_corefile

    corefile = cluster.kubectl("-n", "kube-system", "get", "configmap", "coredns", "-o",
                               "jsonpath={.data.Corefile}").stdout
    assert corefile == default_corefile()
    spec = cluster.get_json("deployment", "coredns", "-n", "kube-system")["spec"]["template"]["spec"]
    assert spec["volumes"] == [{"name": "config-volume", "configMap": {
        "name": "coredns", "items": [{"key": "Corefile", "path": "Corefile"}], "defaultMode": 420}}]
    assert spec["containers"][0]["volumeMounts"] == [{"name": "config-volume", "mountPath": "/etc/coredns",
                                                      "readOnly": True}]
