"""What to build for a ClusterState: namespaces, links, addresses, routes, listeners. Pure.

The shape is a kind cluster's, with the Docker host folded into one namespace:

* ``ext`` — the Docker host and the Internet: the bridge every node's ``eth0`` is plugged
  into, the gateway address (``172.18.0.1``), the external clients (``203.0.113.10``, the
  simulation's ``EXTERNAL_CLIENT_IP``) and the L2 announcement of LoadBalancer and external
  IPs (a /32 route to the node that answers for each, as MetalLB or cloud-provider-kind do).
* ``node-<name>`` — one per node: ``eth0`` with the node's InternalIP, kube-proxy's rules,
  the policy table, hostNetwork pods' listeners, a host-side veth per pod, and the routes
  kindnetd installs (every other node's pod CIDR via that node's IP).
* ``pod-<ns>.<name>`` — one per pod on the pod network: ``eth0`` with the pod IP.

A pod's ``eth0`` carries its IP as a /32 and a default route through ``169.254.1.1``, which
the host side answers (a static neighbour entry for ``ee:ee:ee:ee:ee:ee``), as Calico wires
pods. kindnet's ptp plugin gives the host side the pod CIDR's ``.1`` instead; the difference
is visible only in the source address of traffic masqueraded into a pod on the same node:
here (and in the simulation) the node's InternalIP, on kind ``10.244.<n>.1``.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..cluster.state import ClusterState
from ..dataplane.model import default_node, endpoints_by_port, service_ports
from ..dns.resolver import resolv_conf
from ..model.listeners import pod_listens
from ..model.objects import Pod
from ..network.external import announcing_node
from ..network.trace import EXTERNAL_CLIENT_IP

MAX_POD_NAMESPACES = 100  # "tens of pods": a topology is built in seconds and probed in seconds
GATEWAY_HW = "ee:ee:ee:ee:ee:ee"
POD_GATEWAY = "169.254.1.1"
BRIDGE = "kind"


class PlanError(ValueError):
    """The state cannot be built as a topology (too big, addresses that clash); exit code 2."""


@dataclass(frozen=True, slots=True)
class NodePlan:
    name: str
    ip: str
    pod_cidr: str
    netns: str
    uplink: str  # the bridge port in ``ext`` for this node's eth0
    routes: tuple[tuple[str, str], ...]  # (destination, via node IP): kindnetd's routes to the other nodes' pods


@dataclass(frozen=True, slots=True)
class PodPlan:
    key: str  # ns/name, or ``endpoint/<ip>`` for an EndpointSlice address that no pod owns
    ip: str
    node: str
    netns: str
    host_veth: str
    mac: str
    listens: tuple[tuple[int, str], ...]
    resolv_conf: str = ""
    hostname: str = ""

    @property
    def is_pod(self) -> bool:
        return not self.key.startswith("endpoint/")


@dataclass(frozen=True, slots=True)
class HostListenerPlan:
    """A hostNetwork pod's ports, served in its node's namespace."""

    pod: str
    node: str
    listens: tuple[tuple[int, str], ...]


@dataclass(frozen=True, slots=True)
class Plan:
    owner: str
    gateway: str
    nodes: tuple[NodePlan, ...]
    pods: tuple[PodPlan, ...]
    host_listeners: tuple[HostListenerPlan, ...]
    clients: tuple[str, ...]  # external client addresses in ``ext``
    announced: tuple[tuple[str, str], ...]  # (LoadBalancer/external IP, node IP that answers for it)
    ext_netns: str
    skipped: tuple[str, ...] = field(default=())  # pods left out, with the reason
    # (IPv4 address, host name) of the world outside (cluster/outside.py), served in ``ext``
    outside: tuple[tuple[str, str], ...] = field(default=())

    def node(self, name: str) -> NodePlan:
        return next(n for n in self.nodes if n.name == name)

    def pod(self, key: str) -> PodPlan | None:
        return next((p for p in self.pods if p.key == key), None)

    @property
    def namespaces(self) -> tuple[str, ...]:
        return (self.ext_netns, *(n.netns for n in self.nodes), *(p.netns for p in self.pods))


def _hash(text: str, n: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def host_veth_name(key: str) -> str:
    """``kn`` + 10 hex digits of the pod key: unique, stable, within IFNAMSIZ (15)."""
    return "kn" + _hash(key, 10)


def pod_mac(key: str) -> str:
    digest = _hash("mac/" + key, 10)
    return "02:" + ":".join(digest[i:i + 2] for i in range(0, 10, 2))


def netns_role(key: str) -> str:
    """A pod's namespace role: ``pod-<ns>.<name>`` (readable in ``ip netns list``)."""
    return "pod-" + key.replace("/", ".")


def on_pod_network(pod: Pod) -> bool:
    return bool(pod.pod_ip) and not pod.host_network and pod.phase not in ("Succeeded", "Failed")


def _node_cidrs(state: ClusterState) -> dict[str, str]:
    out = {}
    for i, n in enumerate(state.config.nodes):
        obj = state.nodes.get(n.name)
        out[n.name] = (obj.pod_cidr if obj is not None and obj.pod_cidr else "") or state.config.node_pod_cidr(i)
    return out


def _in(ip: str, cidr: str) -> bool:
    try:
        return ipaddress.ip_address(ip) in ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False


def _gateway(node_ips: Sequence[str]) -> str:
    """The Docker network's gateway: ``.1`` of the first node's /16 (172.18.0.1 on kind)."""
    net = ipaddress.ip_network(f"{node_ips[0]}/16", strict=False) if node_ips else ipaddress.ip_network("172.18.0.0/16")
    for host in net.hosts():
        if str(host) not in node_ips:
            return str(host)
    raise PlanError(f"no free gateway address in {net}")


def _stub_endpoints(state: ClusterState, pods_by_ip: Mapping[str, Pod], cidrs: Mapping[str, str]
                    ) -> dict[str, tuple[str, set[tuple[int, str]]]]:
    """EndpointSlice addresses no pod owns (hand-written slices, synthetic states): ip -> (node, ports)."""
    node_ips = {n.ip for n in state.config.nodes}
    out: dict[str, tuple[str, set[tuple[int, str]]]] = {}
    for key in sorted(state.services):
        svc = state.services[key]
        infos = {(i.port_name, i.protocol): i for i in service_ports(svc)}
        for (port_name, protocol), endpoints in sorted(endpoints_by_port(state, svc).items()):
            if (port_name, protocol) not in infos:
                continue
            for ep in endpoints:
                if ep.ip in pods_by_ip or ep.ip in node_ips or ipaddress.ip_address(ep.ip).version != 4:
                    continue
                node = ep.node if ep.node in cidrs else next((n for n, c in cidrs.items() if _in(ep.ip, c)), None)
                if node is None:
                    continue  # outside every node: nothing in the topology could answer there
                entry = out.setdefault(ep.ip, (node, set()))
                entry[1].add((ep.port, protocol))
    return out


def plan(state: ClusterState, owner: str, *, clients: Iterable[str] = (), client_pods: Iterable[tuple[str, str]] = (),
         max_pods: int = MAX_POD_NAMESPACES) -> Plan:
    """The topology for ``state``; ``owner`` is the namespace-name prefix (``knetsim-<id>-``).

    ``clients`` are extra external addresses (in ``ext``); ``client_pods`` extra (ip, node)
    addresses on the pod network that listen on nothing (the sources of packet-flow tests).
    """
    config = state.config
    if not config.nodes:
        raise PlanError("the cluster has no nodes")
    cidrs = _node_cidrs(state)
    node_ips = [n.ip for n in config.nodes]
    gateway = _gateway(node_ips)
    pods = [p for _, p in sorted(state.pods.items()) if on_pod_network(p) and p.node_name in cidrs]
    skipped = tuple(f"{p.key}: on node {p.node_name!r}, which is not in the cluster config"
                    for _, p in sorted(state.pods.items()) if on_pod_network(p) and p.node_name not in cidrs)
    pods_by_ip: dict[str, Pod] = {}
    for p in pods:
        pods_by_ip.setdefault(p.pod_ip, p)
    stubs = _stub_endpoints(state, pods_by_ip, cidrs)
    extra = [(ip, node) for ip, node in client_pods if ip not in pods_by_ip and ip not in stubs]
    total = len(pods_by_ip) + len(stubs) + len(extra)
    if total > max_pods:
        raise PlanError(f"{total} pod network addresses (pods and endpoints) exceed the kernel topology's bound of "
                        f"{max_pods}: kernel mode builds clusters of tens of pods; narrow the input (-f a "
                        "namespace's manifests) or scale Deployments down")
    pod_plans = []
    for ip, p in sorted(pods_by_ip.items(), key=lambda kv: kv[1].key):
        pod_plans.append(PodPlan(p.key, ip, p.node_name, f"{owner}{netns_role(p.key)}", host_veth_name(p.key),
                                 pod_mac(p.key), pod_listens(p), resolv_conf(state, p).text(),
                                 p.hostname or p.name))
    for ip, (node, ports) in sorted(stubs.items(), key=lambda kv: ipaddress.ip_address(kv[0])):
        key = f"endpoint/{ip}"
        pod_plans.append(PodPlan(key, ip, node, f"{owner}ep-{ip}", host_veth_name(key), pod_mac(key),
                                 tuple(sorted(ports))))
    for ip, node in sorted(extra):
        key = f"endpoint/{ip}"
        pod_plans.append(PodPlan(key, ip, node, f"{owner}ep-{ip}", host_veth_name(key), pod_mac(key), ()))
    nodes = []
    for i, n in enumerate(config.nodes):
        routes = [(cidrs[o.name], o.ip) for o in config.nodes if o.name != n.name]
        # Addresses outside their node's pod CIDR (synthetic endpoints) need a route of their own.
        routes += [(f"{p.ip}/32", next(o.ip for o in config.nodes if o.name == p.node)) for p in pod_plans
                   if p.node != n.name and not _in(p.ip, cidrs[p.node])]
        nodes.append(NodePlan(n.name, n.ip, cidrs[n.name], f"{owner}node-{n.name}", f"n{i}-{_hash(n.name, 6)}",
                              tuple(routes)))
    hosts: dict[tuple[str, int, str], str] = {}
    for _, p in sorted(state.pods.items()):
        if p.host_network and p.node_name in cidrs and p.phase not in ("Succeeded", "Failed"):
            for port in pod_listens(p):
                hosts.setdefault((p.node_name, *port), p.key)
    host_listeners: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for (node, port, proto), key in sorted(hosts.items()):
        host_listeners.setdefault((key, node), []).append((port, proto))
    announced = {}
    for key in sorted(state.services):
        svc = state.services[key]
        for ip in (*svc.load_balancer_ips, *svc.external_ips):
            if ip not in announced and ipaddress.ip_address(ip).version == 4:
                # A synthetic state (no Node objects) has no speaker to elect: the default node answers.
                node = announcing_node(state, svc, ip) if state.nodes else default_node(state)
                announced[ip] = next(n.ip for n in config.nodes if n.name == node)
    return Plan(
        owner=owner, gateway=gateway, nodes=tuple(nodes), pods=tuple(pod_plans),
        host_listeners=tuple(HostListenerPlan(k, n, tuple(v)) for (k, n), v in sorted(host_listeners.items())),
        clients=tuple(dict.fromkeys([EXTERNAL_CLIENT_IP, *clients])),
        announced=tuple(sorted(announced.items())), ext_netns=f"{owner}ext", skipped=skipped,
        outside=_outside(state, {gateway, *node_ips, EXTERNAL_CLIENT_IP, *clients}))


def _outside(state: ClusterState, taken: set[str]) -> tuple[tuple[str, str], ...]:
    """The outside's IPv4 addresses (the topology is IPv4), each with the first name listing it."""
    out: dict[str, str] = {}
    for name, host in state.config.outside.hosts.items():
        for address in host.addresses:
            if ipaddress.ip_address(address).version == 4 and address not in taken:
                out.setdefault(address, name)
    return tuple(sorted(out.items(), key=lambda kv: ipaddress.ip_address(kv[0])))
