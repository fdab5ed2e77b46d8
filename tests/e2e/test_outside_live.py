"""The world outside the cluster, live: the real kubectl and dig against `knetsim up`.

Given a fresh live cluster (DESIGN defaults) and its built-in outside (example.com 93.184.215.14,
one.one.one.one 1.1.1.1, dns.google 8.8.8.8; nothing at 169.254.169.254), then the live DNS port answers
public names as CoreDNS's forward would, `wget` from a pod fetches example.com's page directly or through
an ExternalName, and the classic egress policy keeps the Internet and drops the metadata address.
"""

from __future__ import annotations

import pytest

from .conftest import Cluster, dig, wait_for

CLIENT = """
apiVersion: v1
kind: Pod
metadata: {name: client, labels: {app: client}}
spec:
  containers: [{name: c, image: busybox:1.36, command: [sleep, infinity]}]
---
apiVersion: v1
kind: Service
metadata: {name: ext}
spec: {type: ExternalName, externalName: example.com}
"""
NO_METADATA = """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: internet-but-not-metadata}
spec:
  podSelector: {matchLabels: {app: client}}
  policyTypes: [Egress]
  egress:
  - to: [{ipBlock: {cidr: 0.0.0.0/0, except: [169.254.169.254/32]}}]
  - to:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: kube-system}}
      podSelector: {matchLabels: {k8s-app: kube-dns}}
    ports: [{protocol: UDP, port: 53}, {protocol: TCP, port: 53}]
"""


def client(k: Cluster) -> None:
    k.kubectl("apply", "-f", "-", input=CLIENT)
    assert wait_for(lambda: k.kubectl("get", "pod", "client", "-o", "jsonpath={.status.phase}").stdout == "Running")


def test_dig_on_the_live_dns_answers_public_names(cluster: Cluster) -> None:
    assert dig(cluster, "+short", "example.com").split() == ["93.184.215.14"]
    assert dig(cluster, "+short", "AAAA", "example.com").split() == ["2606:2800:21f:cb07:6820:80da:af6b:8b2c"]
    assert dig(cluster, "+short", "-x", "1.1.1.1").split() == ["one.one.one.one."]
    full = dig(cluster, "dns.google")
    assert "status: NOERROR" in full and "flags: qr rd ra;" in full
    assert "status: NXDOMAIN" in dig(cluster, "no-such-name.example.org")


def test_wget_from_a_pod_fetches_example_com(k: Cluster) -> None:
    client(k)
    page = k.kubectl("exec", "client", "--", "wget", "-qO-", "http://example.com").stdout
    assert "<title>example.com</title>" in page
    assert k.kubectl("exec", "client", "--", "wget", "-qO-", "http://ext/").stdout == page
    missing = k.kubectl("exec", "client", "--", "wget", "-qO-", "http://example.com/nope", check=False)
    assert missing.returncode == 1 and "wget: server returned error: HTTP/1.1 404 Not Found" in missing.stderr
    lookup = k.kubectl("exec", "client", "--", "nslookup", "example.com").stdout
    assert "Address: 93.184.215.14" in lookup


@pytest.mark.parametrize("policy", [False, True])
def test_the_metadata_address_with_and_without_the_egress_policy(k: Cluster, policy: bool) -> None:
    """Nothing answers at 169.254.169.254 on a kind node (Host is unreachable); the policy drops the packet
    before it leaves (the client waits out its timeout), and the Internet stays reachable."""
    client(k)
    if policy:
        k.kubectl("apply", "-f", "-", input=NO_METADATA)
    meta = k.kubectl("exec", "client", "--", "wget", "-qO-", "-T", "1", "http://169.254.169.254/", check=False)
    assert meta.returncode == 1
    expected = "wget: download timed out" if policy else "wget: can't connect to remote host (169.254.169.254): " \
                                                         "Host is unreachable"
    assert expected in meta.stderr
    assert "<h1>example.com</h1>" in k.kubectl("exec", "client", "--", "wget", "-qO-", "http://example.com").stdout
