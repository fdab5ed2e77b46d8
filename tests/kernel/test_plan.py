"""The topology plan and the policy ruleset are pure functions of the ClusterState: no root needed.

Given examples/shop (3 nodes, 10 pods on the pod network), then the plan wires each pod to
its node, routes every other node's pod CIDR via that node (kindnetd), announces the
LoadBalancer IP from a worker, and the policy table holds a chain exactly for the pods a
NetworkPolicy isolates, with the engine's own answers as rules.
"""

from __future__ import annotations

import pytest
from tests.conftest import cluster_from

from knetsim.kernel.netpol import ruleset
from knetsim.kernel.plan import MAX_POD_NAMESPACES, PlanError, plan

OWNER = "knetsim-1.1-"


@pytest.fixture(scope="module")
def shop_plan(shop):
    return plan(shop.state, OWNER)


def test_every_pod_on_the_pod_network_gets_a_namespace(shop, shop_plan):
    expected = sorted(k for k, p in shop.state.pods.items() if p.pod_ip and not p.host_network)
    assert [p.key for p in shop_plan.pods] == expected
    web = shop_plan.pod("shop/web-7c8c4869fb-knbt7")
    assert (web.ip, web.node, web.netns) == ("10.244.2.4", "worker2", "knetsim-1.1-pod-shop.web-7c8c4869fb-knbt7")
    assert all(len(p.host_veth) <= 15 for p in shop_plan.pods)  # IFNAMSIZ
    assert len({p.host_veth for p in shop_plan.pods}) == len(shop_plan.pods)
    assert "nameserver 10.96.0.10" in web.resolv_conf and "ndots:5" in web.resolv_conf


def test_kindnet_routes_and_lb_announcement(shop_plan):
    worker = shop_plan.node("worker")
    assert worker.routes == (("10.244.0.0/24", "172.18.0.2"), ("10.244.2.0/24", "172.18.0.4"))
    # kind's control-plane is excluded from load balancers; web-lb is Local, so a node with a web pod answers.
    assert dict(shop_plan.announced)["172.18.255.200"] in ("172.18.0.3", "172.18.0.4")
    assert shop_plan.gateway == "172.18.0.1"
    hosts = {h.pod: h.listens for h in shop_plan.host_listeners}
    assert (6443, "TCP") in hosts["kube-system/kube-apiserver-control-plane"]


def test_too_many_pods_are_refused():
    pods = "".join(f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: p{i}}}
spec: {{containers: [{{name: c, image: nginx}}]}}
""" for i in range(MAX_POD_NAMESPACES + 1))
    with pytest.raises(PlanError, match="exceed the kernel topology's bound"):
        plan(cluster_from(pods).state, OWNER)


def test_policy_chains_only_for_isolated_pods(shop, shop_plan):
    text = ruleset(shop.state, shop_plan, "worker2")
    web, db = shop_plan.pod("shop/web-7c8c4869fb-knbt7"), shop_plan.pod("shop/db-0")
    assert f"chain egress-{web.host_veth}" in text and f"chain ingress-{db.host_veth}" in text
    # web may open 8080 on every api pod (web-to-api), and nothing on db.
    egress = text.split(f"chain egress-{web.host_veth}")[1].split("\n\t}")[0]
    api_ips = sorted(p.ip for p in shop_plan.pods if p.key.startswith("shop/api-"))
    assert any(all(ip in line for ip in api_ips) and "th dport { 8080 }" in line for line in egress.splitlines())
    assert not any(db.ip in line and "accept" in line for line in egress.splitlines())
    # The system pods on worker2? none: kube-system pods are not isolated, so no chain for them anywhere.
    assert "coredns" not in ruleset(shop.state, shop_plan, "control-plane")


def test_policy_follows_the_engine(shop, shop_plan, monkeypatch):
    """The rules are the engine's answers: change the answer, the rules change (tiers land there)."""
    from knetsim.kernel import netpol
    from knetsim.policy import ConnSet

    monkeypatch.setattr(netpol, "direction_connections", lambda *a, **k: ConnSet.port("UDP", 4242))
    text = netpol.ruleset(shop.state, shop_plan, "worker")
    assert "meta l4proto udp th dport { 4242 } accept" in text
    assert "tcp" not in text.replace("{ tcp, udp, sctp }", "")
