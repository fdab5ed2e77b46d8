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

A dual-stack or IPv6 cluster wires the IPv6 side the same way: the node's and the pod's IPv6
addresses (/128, no duplicate address detection), kindnetd's routes to the other nodes' IPv6
pod CIDRs, an IPv6 gateway in ``ext`` (``fc00:f853:ccd:e793::1`` on kind's network), an IPv6
external client (``EXTERNAL_CLIENT_IP6``) and a pod default route through ``fe80::1``
(Calico's IPv6 gateway is link-local too).
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field

from ..cluster.state import ClusterState
from ..dataplane.model import default_node, endpoints_by_port, family_of_ip, service_ports
from ..dns.hostsfile import hosts_file
from ..dns.resolver import resolv_conf
from ..model.listeners import pod_listens
from ..model.objects import Pod
from ..network.external import announcing_node
from ..network.trace import EXTERNAL_CLIENT_IP, EXTERNAL_CLIENT_IP6

MAX_POD_NAMESPACES = 100  # "tens of pods": a topology is built in seconds and probed in seconds
GATEWAY_HW = "ee:ee:ee:ee:ee:ee"
POD_GATEWAY = "169.254.1.1"
POD_GATEWAY6 = "fe80::1"
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
    ips: tuple[str, ...] = ()  # every InternalIP, ``ip`` first (a dual-stack node has one of each family)
    pod_cidrs: tuple[str, ...] = ()  # spec.podCIDRs, ``pod_cidr`` first

    @property
    def addresses(self) -> tuple[str, ...]:
        return self.ips or (self.ip,)

    def address_of(self, family: str) -> str:
        return next((ip for ip in self.addresses if family_of_ip(ip) == family), "")


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
    hosts_file: str = ""  # the kubelet's /etc/hosts for the pod (its hostAliases included)
    ips: tuple[str, ...] = ()  # every address of the pod (status.podIPs), ``ip`` first

    @property
    def is_pod(self) -> bool:
        return not self.key.startswith("endpoint/")

    @property
    def addresses(self) -> tuple[str, ...]:
        return self.ips or (self.ip,)

    def address_of(self, family: str) -> str:
        return next((ip for ip in self.addresses if family_of_ip(ip) == family), "")


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
    gateways: tuple[str, ...] = ()  # the Docker network's gateway in each family, ``gateway`` first
    # (address, host name) of the world outside (cluster/outside.py), served in ``ext``: each family the topology wires
    outside: tuple[tuple[str, str], ...] = field(default=())

    def node(self, name: str) -> NodePlan:
        return next(n for n in self.nodes if n.name == name)

    @property
    def families(self) -> tuple[str, ...]:
        """The IP families the topology wires, the primary one first."""
        return tuple(dict.fromkeys(family_of_ip(ip) for n in self.nodes for ip in n.addresses)) or ("IPv4",)

    def gateway_of(self, family: str) -> str:
        return next((ip for ip in self.gateways or (self.gateway,) if family_of_ip(ip) == family), "")

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


def _node_cidrs(state: ClusterState) -> dict[str, tuple[str, ...]]:
    """Each node's pod CIDRs (spec.podCIDRs, else the config's allocation), the primary family's first."""
    out = {}
    for i, n in enumerate(state.config.nodes):
        obj = state.nodes.get(n.name)
        cidrs = tuple(obj.pod_cidrs or ((obj.pod_cidr,) if obj.pod_cidr else ())) if obj is not None else ()
        out[n.name] = cidrs or state.config.node_pod_cidrs(i)
    return out


def _in_any(ip: str, cidrs: Iterable[str]) -> bool:
    return any(_in(ip, c) for c in cidrs)


def _in(ip: str, cidr: str) -> bool:
    try:
        return ipaddress.ip_address(ip) in ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False


def _gateway(node_ips: Sequence[str]) -> str:
    """The Docker network's gateway: ``.1`` of the first node's /16 (172.18.0.1 on kind), ``::1`` of its /64 for
    IPv6 (fc00:f853:ccd:e793::1)."""
    if not node_ips:
        return "172.18.0.1"
    prefix = 64 if ":" in node_ips[0] else 16
    net = ipaddress.ip_network(f"{node_ips[0]}/{prefix}", strict=False)
    for i, host in enumerate(net.hosts()):
        if str(host) not in node_ips:
            return str(host)
        if i > 1024:
            break
    raise PlanError(f"no free gateway address in {net}")


def _stub_endpoints(state: ClusterState, owned: Set[str], cidrs: Mapping[str, tuple[str, ...]],
                    families: Sequence[str]) -> dict[str, tuple[str, set[tuple[int, str]]]]:
    """EndpointSlice addresses no pod owns (hand-written slices, synthetic states): ip -> (node, ports), for
    every family the topology wires."""
    node_ips = {ip for n in state.config.nodes for ip in n.addresses}
    out: dict[str, tuple[str, set[tuple[int, str]]]] = {}
    for key in sorted(state.services):
        svc = state.services[key]
        for family in families:
            infos = {(i.port_name, i.protocol): i for i in service_ports(svc, family)}
            for (port_name, protocol), endpoints in sorted(endpoints_by_port(state, svc, family).items()):
                if (port_name, protocol) not in infos:
                    continue
                for ep in endpoints:
                    if ep.ip in owned or ep.ip in node_ips:
                        continue
                    node = ep.node if ep.node in cidrs else next(
                        (n for n, c in cidrs.items() if _in_any(ep.ip, c)), None)
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
    families = tuple(dict.fromkeys(family_of_ip(ip) for n in config.nodes for ip in n.addresses))
    gateways = tuple(_gateway([ip for n in config.nodes for ip in n.addresses if family_of_ip(ip) == f])
                     for f in families)
    gateway = gateways[0] if gateways else _gateway(node_ips)
    pods = [p for _, p in sorted(state.pods.items()) if on_pod_network(p) and p.node_name in cidrs]
    skipped = tuple(f"{p.key}: on node {p.node_name!r}, which is not in the cluster config"
                    for _, p in sorted(state.pods.items()) if on_pod_network(p) and p.node_name not in cidrs)
    pods_by_ip: dict[str, Pod] = {}
    for p in pods:
        pods_by_ip.setdefault(p.pod_ip, p)
    # A dual-stack pod's other address is its own too: it is no EndpointSlice stub.
    owned = {ip for p in pods for ip in (p.pod_ips or (p.pod_ip,))}
    stubs = _stub_endpoints(state, owned, cidrs, families)
    extra = [(ip, node) for ip, node in client_pods if ip not in pods_by_ip and ip not in stubs]
    total = len(pods_by_ip) + len(stubs) + len(extra)
    if total > max_pods:
        raise PlanError(f"{total} pod network addresses (pods and endpoints) exceed the kernel topology's bound of "
                        f"{max_pods}: kernel mode builds clusters of tens of pods; narrow the input (-f a "
                        "namespace's manifests) or scale Deployments down")
    pod_plans = []
    for ip, p in sorted(pods_by_ip.items(), key=lambda kv: kv[1].key):
        ips = tuple(a for a in p.pod_ips if family_of_ip(a) in families) if len(p.pod_ips) > 1 else ()
        pod_plans.append(PodPlan(p.key, ip, p.node_name, f"{owner}{netns_role(p.key)}", host_veth_name(p.key),
                                 pod_mac(p.key), pod_listens(p), resolv_conf(state, p).text(),
                                 hosts_file(state, p), ips))
    for ip, (node, ports) in sorted(stubs.items(), key=lambda kv: (":" in kv[0], ipaddress.ip_address(kv[0]))):
        key = f"endpoint/{ip}"
        pod_plans.append(PodPlan(key, ip, node, f"{owner}ep-{_netns_safe(ip)}", host_veth_name(key), pod_mac(key),
                                 tuple(sorted(ports))))
    for ip, node in sorted(extra):
        key = f"endpoint/{ip}"
        pod_plans.append(PodPlan(key, ip, node, f"{owner}ep-{_netns_safe(ip)}", host_veth_name(key), pod_mac(key),
                                 ()))
    nodes = []
    for i, n in enumerate(config.nodes):
        routes = []
        for o in config.nodes:
            if o.name == n.name:
                continue
            for cidr in cidrs[o.name]:  # kindnetd: each of the other node's pod CIDRs via its address of that family
                via = next((a for a in o.addresses if family_of_ip(a) == family_of_ip(cidr.split("/")[0])), "")
                if via:
                    routes.append((cidr, via))
        # Addresses outside their node's pod CIDR (synthetic endpoints) need a route of their own.
        for p in pod_plans:
            if p.node == n.name:
                continue
            owner_node = next(o for o in config.nodes if o.name == p.node)
            for a in p.addresses:
                via = next((x for x in owner_node.addresses if family_of_ip(x) == family_of_ip(a)), "")
                if via and not _in_any(a, cidrs[p.node]):
                    routes.append((f"{a}/{128 if ':' in a else 32}", via))
        nodes.append(NodePlan(n.name, n.ip, cidrs[n.name][0], f"{owner}node-{n.name}", f"n{i}-{_hash(n.name, 6)}",
                              tuple(routes), n.ips, cidrs[n.name] if len(cidrs[n.name]) > 1 else ()))
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
            family = family_of_ip(ip)
            if ip not in announced and family in families:
                # A synthetic state (no Node objects) has no speaker to elect: the default node answers.
                node = announcing_node(state, svc, ip) if state.nodes else default_node(state)
                via = next((a for n in config.nodes if n.name == node for a in n.addresses
                            if family_of_ip(a) == family), "")
                if via:
                    announced[ip] = via
    default_clients = tuple(dict.fromkeys(EXTERNAL_CLIENT_IP6 if f == "IPv6" else EXTERNAL_CLIENT_IP
                                          for f in families or ("IPv4",)))
    return Plan(
        owner=owner, gateway=gateway, nodes=tuple(nodes), pods=tuple(pod_plans),
        host_listeners=tuple(HostListenerPlan(k, n, tuple(v)) for (k, n), v in sorted(host_listeners.items())),
        clients=default_clients + tuple(c for c in dict.fromkeys(clients) if c not in default_clients),
        announced=tuple(sorted(announced.items())), ext_netns=f"{owner}ext", skipped=skipped,
        gateways=gateways if len(gateways) > 1 else (),
        outside=_outside(state, {*gateways, gateway, *(ip for n in config.nodes for ip in n.addresses),
                                 *default_clients, *clients}, families))


def _netns_safe(ip: str) -> str:
    """An address as part of a namespace name (a file name under /run/netns: no colons)."""
    return ip.replace(":", "-")


def _outside(state: ClusterState, taken: set[str], families: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The outside's addresses of the families the topology wires, each with the first name listing it."""
    out: dict[str, str] = {}
    for name, host in state.config.outside.hosts.items():
        for address in host.addresses:
            if family_of_ip(address) in families and address not in taken:
                out.setdefault(address, name)
    return tuple(sorted(out.items(), key=lambda kv: (":" in kv[0], ipaddress.ip_address(kv[0]))))
