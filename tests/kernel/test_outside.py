"""The world outside in the kernel: a pod's packets to example.com really leave through its node.

Given a client pod and the classic egress policy (the Internet but not 169.254.169.254, and DNS) built
as namespaces on both kube-proxy data planes, then: kube-dns answers example.com through CoreDNS's
forward; a probe to 93.184.215.14:80 is answered by example.com's listener in the outside namespace and
seen from the node's address (kindnetd's real masquerade rule did it); a real HTTP request gets the plain
web server's page; and what the trace says matches in every case.

Address plan: DESIGN defaults; the client 10.244.1.2 on worker 172.18.0.3; the outside's hosts at their
published IPv4 addresses in the `ext` namespace.
"""

from __future__ import annotations

import asyncio
import socket

import pytest
from tests.conftest import cluster_from
from tests.kernel.conftest import needs_kernel

from knetsim.cluster.config import config_from_dict
from knetsim.kernel import Topology, probe
from knetsim.kernel.netns import socket_in
from knetsim.network.tracer import trace

pytestmark = needs_kernel
CLIENT = "default/client"
MANIFESTS = """
apiVersion: v1
kind: Pod
metadata: {name: client, labels: {app: client}}
spec:
  containers: [{name: c, image: busybox:1.36, command: [sleep, infinity]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: internet-but-not-one-one}
spec:
  podSelector: {matchLabels: {app: client}}
  policyTypes: [Egress]
  egress:
  - to: [{ipBlock: {cidr: 0.0.0.0/0, except: [1.0.0.0/24]}}]
  - to:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: kube-system}}
      podSelector: {matchLabels: {k8s-app: kube-dns}}
    ports: [{protocol: UDP, port: 53}, {protocol: TCP, port: 53}]
"""


@pytest.fixture(scope="module", params=["iptables", "nftables"])
def topo(request):
    cluster = cluster_from(MANIFESTS, config=config_from_dict({"dataplane": request.param}))
    with Topology.build(cluster.state, request.param) as t:
        yield cluster, t


def run(topo, *coros):
    async def all_of():
        return await asyncio.gather(*coros)
    return topo.reactor.call(all_of())


async def http_get(netns: str, address: str, path: str) -> str:
    loop = asyncio.get_running_loop()
    sock = socket_in(netns, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        await asyncio.wait_for(loop.sock_connect(sock, (address, 80)), 5)
        await loop.sock_sendall(sock, f"GET {path} HTTP/1.1\r\nHost: example.com\r\n\r\n".encode())
        data = b""
        while chunk := await asyncio.wait_for(loop.sock_recv(sock, 65536), 5):
            data += chunk
        return data.decode()
    finally:
        sock.close()


def test_a_pods_packets_leave_through_its_node_and_the_outside_answers(topo):
    cluster, t = topo
    pod = t.netns_of(CLIENT)
    name, direct, blocked, page, missing = run(
        t,
        probe.query(pod, "10.96.0.10", "example.com."),
        probe.tcp(pod, "93.184.215.14", 80),
        probe.tcp(pod, "1.0.0.1", 80, timeout=0.5),
        http_get(pod, "93.184.215.14", "/"),
        http_get(pod, "93.184.215.14", "/nope"),
    )
    assert (name.outcome, name.addresses) == ("ok", ("93.184.215.14",))
    # The listener saw the node's address: kindnetd's masquerade rewrote the pod's source.
    assert (direct.outcome, direct.backend, direct.seen) == ("connected", "outside/example.com", "172.18.0.3")
    assert blocked.outcome == "timeout"  # the ipBlock's except, enforced by the kernel's policy table
    assert page.startswith("HTTP/1.1 200 OK\r\n") and "<h1>example.com</h1>" in page
    assert missing.startswith("HTTP/1.1 404 Not Found\r\n")
    traced = trace(cluster.state, source=CLIENT, target="http://example.com/")
    assert traced.outcome == "connected"
    assert next(h for h in traced.hops if h.layer == "dataplane").data["snat"]["to"] == direct.seen
    assert trace(cluster.state, source=CLIENT, target="http://1.0.0.1/").outcome == blocked.outcome
