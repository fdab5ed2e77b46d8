"""The packet-flow table every data plane must satisfy, shared by the data plane tests
(tests/dataplane/test_packet_flows.py: each backend in process) and the kernel tests (tests/kernel/: the same
rows through rules loaded into Linux).

Each row sends one packet to the upstream-like Services of tests/dataplane/conftest.py and states what any data
plane must do with it: the DNAT targets ("ip:port, ip:port", all possible backends), a verdict
(REJECT/DROP/ACCEPT), or "" (no Service matched; routed unchanged), and whether it is masqueraded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

OUTSIDE = "203.0.113.2"
BLOCKED = "203.0.113.130"
POD_W1 = "10.244.1.10"  # a client pod on worker
POD_W2 = "10.244.2.10"  # a client pod on worker2


@dataclass(frozen=True)
class Flow:
    name: str
    src: str
    dst: str
    dport: int
    output: str
    masq: bool = False
    proto: str = "TCP"
    node: str | None = None
    overrides: dict[str, str] = field(default_factory=dict)  # backend -> output, only where upstream differs


FLOWS = [
    Flow("pod to ClusterIP", POD_W1, "10.96.100.41", 80, "10.244.1.2:80"),
    Flow("hairpin: pod to its own Service", "10.244.1.2", "10.96.100.41", 80, "10.244.1.2:80", masq=True),
    Flow("ClusterIP with two endpoints", POD_W1, "10.96.100.44", 80, "10.244.1.4:80, 10.244.2.4:80"),
    Flow("NodePort on control-plane", OUTSIDE, "172.18.0.2", 30004, "10.244.1.4:80, 10.244.2.4:80", masq=True),
    Flow("NodePort on worker", OUTSIDE, "172.18.0.3", 30004, "10.244.1.4:80, 10.244.2.4:80", masq=True),
    Flow("NodePort on worker2", OUTSIDE, "172.18.0.4", 30004, "10.244.1.4:80, 10.244.2.4:80", masq=True),
    Flow("externalIP, policy Cluster", OUTSIDE, "192.168.99.33", 80, "10.244.1.4:80, 10.244.2.4:80", masq=True),
    Flow("LoadBalancer IP, source in range", OUTSIDE, "172.18.255.201", 80, "10.244.2.5:80", masq=True),
    Flow("LoadBalancer IP, source outside loadBalancerSourceRanges", BLOCKED, "172.18.255.201", 80, "DROP"),
    Flow("NodePort bypasses loadBalancerSourceRanges", BLOCKED, "172.18.0.3", 30005, "10.244.2.5:80", masq=True),
    Flow("eTP Local LoadBalancer on a node without local endpoints", OUTSIDE, "172.18.255.200", 80, "DROP",
         node="worker"),
    Flow("eTP Local LoadBalancer on the endpoint's node", OUTSIDE, "172.18.255.200", 80, "10.244.2.2:80",
         node="worker2"),
    Flow("eTP Local NodePort on a node without local endpoints", OUTSIDE, "172.18.0.3", 30001, "DROP"),
    Flow("eTP Local NodePort on the endpoint's node", OUTSIDE, "172.18.0.4", 30001, "10.244.2.2:80"),
    Flow("eTP Local externalIP without local endpoints", OUTSIDE, "192.168.99.22", 80, "DROP", node="worker"),
    Flow("pod to eTP Local LoadBalancer is short-circuited", POD_W1, "172.18.255.200", 80, "10.244.2.2:80"),
    Flow("iTP Local from a node without local endpoints", POD_W1, "10.96.100.47", 80, "DROP"),
    Flow("iTP Local from the endpoint's node", POD_W2, "10.96.100.47", 80, "10.244.2.7:80", node="worker2"),
    # Found on the way (upstream's "iTP: Local, eTP: Local, all endpoints remote" CategorizeEndpoints case): a pod
    # reaching the NodePort short-circuits to every Cluster endpoint in kube-proxy. Cilium keeps one scope for
    # both policies Local, with only this node's backends.
    Flow("eTP+iTP Local NodePort from a pod, no local endpoint", POD_W1, "172.18.0.3", 30008, "10.244.2.8:80",
         overrides={"ebpf": "DROP"}),
    Flow("eTP+iTP Local ClusterIP from a node without local endpoints", POD_W1, "10.96.100.48", 80, "DROP"),
    Flow("eTP+iTP Local NodePort from outside, no local endpoint", OUTSIDE, "172.18.0.3", 30008, "DROP"),
    Flow("eTP+iTP Local NodePort from outside on the endpoint's node", OUTSIDE, "172.18.0.4", 30008,
         "10.244.2.8:80"),
    Flow("sessionAffinity ClientIP (first packet)", POD_W1, "10.96.100.45", 80, "10.244.2.5:80"),
    Flow("no endpoints: REJECT", POD_W1, "10.96.100.46", 80, "REJECT"),
    Flow("port the Service does not expose", POD_W1, "10.96.100.41", 443, "", overrides={"nftables": "REJECT"}),
    Flow("UDP to a TCP-only port", POD_W1, "10.96.100.41", 80, "", proto="UDP", overrides={"nftables": "REJECT"}),
    Flow("not a Service IP: passes through", POD_W1, "10.244.2.4", 80, ""),
]


POD6_W1 = "fd00:10:244:1::10"  # a client pod on worker
OUTSIDE6 = "2001:db8::2"

DUAL_FLOWS = [
    Flow("IPv6 pod to the IPv6 ClusterIP of a dual-stack Service", POD6_W1, "fd00:10:96::61", 80,
         "[fd00:10:244:1::61]:80"),
    Flow("IPv4 pod to the IPv4 ClusterIP of the same Service", "10.244.1.10", "10.96.100.61", 80, "10.244.1.61:80"),
    Flow("IPv6 hairpin", "fd00:10:244:1::61", "fd00:10:96::61", 80, "[fd00:10:244:1::61]:80", masq=True),
    Flow("IPv6 NodePort on worker", OUTSIDE6, "fc00:f853:ccd:e793::3", 30062, "[fd00:10:244:2::62]:80", masq=True),
    Flow("IPv6 NodePort on control-plane", OUTSIDE6, "fc00:f853:ccd:e793::2", 30062, "[fd00:10:244:2::62]:80",
         masq=True),
    Flow("IPv6 Service without endpoints: REJECT", POD6_W1, "fd00:10:96::63", 80, "REJECT"),
    Flow("an IPv6 port the Service does not expose", POD6_W1, "fd00:10:96::61", 443, "",
         overrides={"nftables": "REJECT"}),
    Flow("IPv6 address nobody allocated", POD6_W1, "fd00:10:96::99", 80, "", overrides={"nftables": "DROP"}),
    Flow("an IPv4 NodePort of an IPv6-only Service does not exist", "203.0.113.2", "172.18.0.3", 30062, ""),
]
