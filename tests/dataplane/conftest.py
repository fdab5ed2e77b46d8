"""Fixtures for the data plane tests: an upstream-like set of Services (after
TestOverallIPTablesRules / TestOverallNFTablesRules), re-addressed to knetsim's plan.

Address plan (DESIGN.md defaults):
  nodes       control-plane 172.18.0.2, worker 172.18.0.3, worker2 172.18.0.4
  pods        10.244.1.0/24 on worker, 10.244.2.0/24 on worker2 (pod CIDR 10.244.0.0/16)
  ClusterIPs  10.96.100.41-47
  externalIPs 192.168.99.22 (svc2), 192.168.99.33 (svc4)
  LB IPs      172.18.255.200 (svc2, eTP=Local), 172.18.255.201 (svc5, source range 203.0.113.0/25)
  clients     203.0.113.2 (outside, allowed), 203.0.113.130 (outside, blocked by svc5's range)
  svc8        NodePort 30008 with both traffic policies Local, its one endpoint on worker2
"""

from __future__ import annotations

import pytest

from knetsim.dataplane.synthetic import make_service, make_slice, state_of
from knetsim.model.objects import ServicePort


def upstream_like_state():
    services = [
        make_service("ns1", "svc1", cluster_ip="10.96.100.41"),
        make_service("ns2", "svc2", type="LoadBalancer", cluster_ip="10.96.100.42", external_traffic_policy="Local",
                     ports=(ServicePort("p80", "TCP", 80, 80, node_port=30001),),
                     load_balancer_ips=("172.18.255.200",), external_ips=("192.168.99.22",),
                     health_check_node_port=30000),
        make_service("ns3", "svc3", type="NodePort", cluster_ip="10.96.100.43",
                     ports=(ServicePort("p80", "TCP", 80, 80, node_port=30003),)),
        make_service("ns4", "svc4", type="NodePort", cluster_ip="10.96.100.44", external_ips=("192.168.99.33",),
                     ports=(ServicePort("p80", "TCP", 80, 80, node_port=30004),)),
        make_service("ns5", "svc5", type="LoadBalancer", cluster_ip="10.96.100.45",
                     ports=(ServicePort("p80", "TCP", 80, 80, node_port=30005),),
                     load_balancer_ips=("172.18.255.201",), load_balancer_source_ranges=("203.0.113.0/25",),
                     session_affinity="ClientIP", session_affinity_timeout=10800),
        make_service("ns6", "svc6", cluster_ip="10.96.100.46"),
        make_service("ns7", "svc7", cluster_ip="10.96.100.47", internal_traffic_policy="Local"),
        make_service("ns8", "svc8", type="NodePort", cluster_ip="10.96.100.48", internal_traffic_policy="Local",
                     external_traffic_policy="Local", ports=(ServicePort("p80", "TCP", 80, 80, node_port=30008),)),
    ]
    slices = [
        make_slice("ns1", "svc1", [("10.244.1.2", "worker")]),
        make_slice("ns2", "svc2", [("10.244.2.2", "worker2")]),
        make_slice("ns3", "svc3", [("10.244.1.3", "worker")]),
        make_slice("ns4", "svc4", [("10.244.1.4", "worker"), ("10.244.2.4", "worker2")]),
        make_slice("ns5", "svc5", [("10.244.2.5", "worker2")]),
        make_slice("ns7", "svc7", [("10.244.2.7", "worker2")]),
        make_slice("ns8", "svc8", [("10.244.2.8", "worker2")]),
    ]
    return state_of(services, slices)


@pytest.fixture(scope="session")
def flow_state():
    return upstream_like_state()


def dual_stack_state():
    """A dual-stack kind cluster (ipFamily: dual): node IPv6 addresses fc00:f853:ccd:e793::2-4, pods
    fd00:10:244:<node>::/64, Services fd00:10:96::/112 beside the IPv4 plan above.

      d1  PreferDualStack ClusterIP 10.96.100.61 + fd00:10:96::61, one pod on worker (both families)
      d2  IPv6 NodePort 30062 (fd00:10:96::62), one pod on worker2
      d3  IPv6 ClusterIP fd00:10:96::63 without endpoints
    """
    from knetsim.cluster.config import config_from_dict

    services = [
        make_service("ds", "d1", cluster_ip="10.96.100.61", cluster_ips=("10.96.100.61", "fd00:10:96::61")),
        make_service("ds", "d2", type="NodePort", cluster_ip="fd00:10:96::62",
                     ports=(ServicePort("p80", "TCP", 80, 80, node_port=30062),)),
        make_service("ds", "d3", cluster_ip="fd00:10:96::63"),
    ]
    slices = [
        make_slice("ds", "d1", [("10.244.1.61", "worker")], suffix="v4"),
        make_slice("ds", "d1", [("fd00:10:244:1::61", "worker")], suffix="v6"),
        make_slice("ds", "d2", [("fd00:10:244:2::62", "worker2")]),
    ]
    return state_of(services, slices, config_from_dict({"ipFamily": "dual"}))


@pytest.fixture(scope="session")
def dual_state():
    return dual_stack_state()
