"""A topology built from examples/shop: real packets, real rules, always torn down.

Given the shop built as namespaces (3 nodes, 10 pods), then a connection from a web pod
to the api ClusterIP lands on an api pod, the db refuses web by policy (a timeout), the
kube-dns ClusterIP answers names, the LoadBalancer IP answers from outside, and after
close (or a crash of the process that built it) no namespace is left.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import pytest
from tests.kernel.conftest import needs_kernel

from knetsim.kernel import Topology, leftovers, probe, sweep
from knetsim.kernel.netns import PREFIX, exec_in, list_netns

pytestmark = needs_kernel
WEB = "shop/web-7c8c4869fb-knbt7"


@pytest.fixture(scope="module", params=["iptables", "nftables"])
def topo(request, shop):
    with Topology.build(shop.state, request.param) as t:
        yield t


def run(topo, *coros):
    async def all_of():
        return await asyncio.gather(*coros)
    return topo.reactor.call(all_of())


def test_real_packets_cross_the_rendered_rules(topo):
    web, ext = topo.netns_of(WEB), topo.netns_of("ext")
    api, db, dns, lb, nodeport = run(
        topo,
        probe.tcp(web, "10.110.15.236", 8080),
        probe.tcp(web, "10.244.2.3", 5432, timeout=0.5),
        probe.query(web, "10.96.0.10", "api.shop.svc.cluster.local."),
        probe.tcp(ext, "172.18.255.200", 80, src="203.0.113.10"),
        probe.tcp(ext, "172.18.0.3", 31502, src="203.0.113.10"),
    )
    assert api.outcome == "connected" and api.backend.startswith("shop/api-") and api.seen == "10.244.2.4"
    assert db.outcome == "timeout"  # db-allow-backend admits api only: the SYN is dropped
    assert (dns.outcome, dns.addresses) == ("ok", ("10.110.15.236",))
    # web-lb is externalTrafficPolicy: Local: no masquerade, the client address survives.
    assert (lb.outcome, lb.seen) == ("connected", "203.0.113.10") and lb.backend.startswith("shop/web-")
    assert nodeport.outcome == "connected" and nodeport.backend == "shop/web-7c8c4869fb-vfw22"


def test_the_kernel_holds_what_render_printed(topo):
    if topo.dataplane == "iptables":
        dump = exec_in(topo.netns_of("node/worker"), ["iptables-save", "-t", "nat"])
        assert '-A KUBE-SERVICES -d 10.110.15.236/32 -p tcp -m comment --comment "shop/api:http cluster IP"' in dump
    else:
        dump = exec_in(topo.netns_of("node/worker"), ["nft", "list", "table", "ip", "kube-proxy"])
        assert "10.110.15.236 . tcp . 8080 : goto service-WEZGB4Y6-shop/api/tcp/http" in dump
    policy = exec_in(topo.netns_of("node/worker2"), ["nft", "list", "table", "inet", "knetsim-policy"])
    assert "hook postrouting priority srcnat + 10" in policy


def test_a_real_tool_runs_in_a_pod(topo):
    """`ip netns exec` shows the kubelet's resolv.conf: the host's own tools resolve cluster names there."""
    out = subprocess.run(["ip", "netns", "exec", topo.netns_of(WEB), "dig", "+short", "+tries=1", "+time=2",
                          "web.shop.svc.cluster.local"], capture_output=True, text=True, timeout=20)
    if out.returncode == 127:
        pytest.skip("dig is not installed (Debian package dnsutils)")
    assert out.stdout.split() == ["10.96.93.253"]
    conf = subprocess.run(["ip", "netns", "exec", topo.netns_of(WEB), "cat", "/etc/resolv.conf"],
                          capture_output=True, text=True, timeout=20).stdout
    assert conf.startswith("search shop.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10")


def test_close_removes_everything(shop, no_leftovers):
    topo = Topology.build(shop.state, "nftables")
    names = topo.plan.namespaces
    assert set(names) <= set(list_netns()) and all(n.startswith(PREFIX) for n in names)
    topo.close()
    assert not set(names) & set(list_netns())


CRASH = """
import os, sys, time
from knetsim import Cluster
from knetsim.kernel import Topology
topo = Topology.build(Cluster.from_paths([sys.argv[1]]).state, "iptables")
print(topo.plan.ext_netns, flush=True)
time.sleep(60)
"""


def test_a_killed_run_is_swept_by_the_next(no_leftovers):
    """kill -9 skips every cleanup; the dead owner's lock is free, so the next start removes its namespaces."""
    from tests.conftest import EXAMPLES

    proc = subprocess.Popen([sys.executable, "-c", CRASH, str(EXAMPLES / "broken" / "selector-typo")],
                            stdout=subprocess.PIPE, text=True)
    try:
        ext = proc.stdout.readline().strip()
        assert ext in list_netns() and ext not in leftovers()  # alive: not a leftover
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    assert ext in leftovers()
    removed = sweep()
    assert ext in removed and not [n for n in list_netns() if n.startswith(ext.rsplit("-", 1)[0])]


def test_ctrl_c_tears_down(no_leftovers):
    from tests.conftest import EXAMPLES

    proc = subprocess.Popen([sys.executable, "-m", "knetsim.cli.main", "verify", "kernel", "-f",
                             str(EXAMPLES / "shop")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not any(n.startswith(f"{PREFIX}{proc.pid}.") for n in list_netns()):
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode in (0, 130), err  # 0 only if it finished first
    assert not any(n.startswith(f"{PREFIX}{proc.pid}.") for n in list_netns())


ALIASED = """
apiVersion: v1
kind: Pod
metadata: {name: aliased, namespace: default}
spec:
  hostAliases: [{ip: 192.0.2.7, hostnames: [legacy.corp, db.corp]}]
  containers: [{name: c, image: busybox:1.36, command: [sleep, "3600"]}]
"""


def test_a_pods_hosts_file_is_the_kubelets_with_its_host_aliases():
    """A real tool in the pod's namespace finds a hostAliases name, from the /etc/hosts the kubelet writes."""
    from knetsim import Cluster
    from knetsim.dns.hostsfile import hosts_file

    state = Cluster.from_yaml(ALIASED).state
    with Topology.build(state, "nftables") as t:
        netns = t.netns_of("default/aliased")
        hosts = subprocess.run(["ip", "netns", "exec", netns, "cat", "/etc/hosts"], capture_output=True, text=True,
                               timeout=20).stdout
        found = subprocess.run(["ip", "netns", "exec", netns, "getent", "hosts", "db.corp"], capture_output=True,
                               text=True, timeout=20)
    assert hosts == hosts_file(state, state.pods["default/aliased"])
    assert "# Entries added by HostAliases.\n192.0.2.7\tlegacy.corp\tdb.corp\n" in hosts
    assert found.stdout.split() == ["192.0.2.7", "legacy.corp", "db.corp"]
