"""A ClusterState built as real network namespaces, and torn down again, always.

    with Topology.build(state, "nftables") as topo:     # seconds for tens of pods
        topo.netns_of("shop/web-7c8c4869fb-knbt7")      # knetsim-<id>-pod-shop.web-7c8c4869fb-knbt7
        topo.update(new_state)                          # rules, policy, pods and listeners follow
    # every namespace is gone here, also after an exception or Ctrl-C

Steps of a build (``plan.py`` decides the shape): remove what a dead run left (``netns.sweep``),
create the namespaces, wire ``ext`` ↔ nodes ↔ pods, load each node's kube-proxy rules as the
data plane renders them (``iptables-restore`` or ``nft -f``), load each node's policy table
(``netpol.ruleset``), open the listeners. The rules are the renderer's text, unchanged: what
``knetsim render`` prints is what the kernel runs.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Any

from ..cluster.state import ClusterState
from ..dataplane import render
from ..dataplane.masquerade import kindnet_table
from ..dns.records import Upstream
from ..dns.server import DNSServer
from ..network.trace import EXTERNAL_CLIENT_IP, EXTERNAL_CLIENT_IP6
from . import netns, netpol
from .listeners import OUTSIDE_PREFIX, UPSTREAM_KEY, Context, PodListeners, Reactor, UpstreamDNS, open_listeners
from .netns import ETC_NETNS, KernelError, Owner
from .plan import BRIDGE, GATEWAY_HW, POD_GATEWAY, POD_GATEWAY6, Plan, PlanError, PodPlan, plan

log = logging.getLogger("knetsim.kernel")

KERNEL_DATAPLANES = ("iptables", "nftables")
# Client sockets in ``ext`` marked (SO_MARK) with ENTRY_MARK + i enter the cluster through node i,
# so one external client can reach a LoadBalancer IP through any node, as a packet-flow test asks.
ENTRY_MARK = 0x100
ENTRY_TABLE = 100


@dataclass(frozen=True, slots=True)
class Loaded:
    """What a node's kernel holds, as loaded (for goldens and ``--debug``)."""

    node: str
    dataplane_text: str
    policy_text: str


def _iptables_restore(family: str = "IPv4") -> str:
    # kube-proxy's iptables mode on a current distribution runs iptables-nft; prefer it by name. The IPv6
    # proxier of a dual-stack node restores its own tables with the ip6tables twin.
    tool = "ip6tables" if family == "IPv6" else "iptables"
    return f"{tool}-nft-restore" if shutil.which(f"{tool}-nft-restore") else f"{tool}-restore"


def kindnet_masquerade(state: ClusterState, the_plan: Plan) -> str:
    """kindnetd's masquerade agent (images/kindnetd/cmd/kindnetd/masq.go): traffic not bound for a local
    address, the pod network or a node is masqueraded, so pods reach the Docker host (here: ``ext``). One
    table per family the topology wires (kindnetd keeps an IPv4 and an IPv6 list of ranges not to masquerade)."""
    out = []
    for family in the_plan.families:
        cidr = state.config.pod_cidr_of(family) or state.config.pod_cidr
        out.append(kindnet_table(cidr, [ip for n in the_plan.nodes for ip in n.addresses if _family(ip) == family],
                                 family))
    return "".join(out)


def _family(ip: str) -> str:
    return "IPv6" if ":" in ip else "IPv4"


def _host(ip: str) -> str:
    """The address as a host route or address: /32, or /128 for IPv6."""
    return f"{ip}/128" if ":" in ip else f"{ip}/32"


def _addr(ip: str, dev: str) -> str:
    """``addr add`` of one address: IPv6 without duplicate address detection, usable at once."""
    return f"addr add {_host(ip)} dev {dev}" + (" nodad" if ":" in ip else "")


def _link_route(ip: str, dev: str) -> str:
    return f"route add {_host(ip)} dev {dev}" + ("" if ":" in ip else " scope link")


def _default(via: str, dev: str, table: str = "") -> str:
    return f"route add {'::/0' if ':' in via else 'default'} via {via} dev {dev}{table}"


class Topology:
    def __init__(self, state: ClusterState, dataplane: str, the_plan: Plan, owner: Owner) -> None:
        self.state = state
        self.dataplane = dataplane
        self.plan = the_plan
        self.owner = owner
        self.reactor: Reactor | None = None
        self.listeners: dict[str, PodListeners] = {}
        self.loaded: dict[str, Loaded] = {}
        self._ctx: list[Context] = []
        self._closed = False
        self._lock = threading.RLock()

    # --- building -----------------------------------------------------------------------------

    @classmethod
    def build(cls, state: ClusterState, dataplane: str | None = None, *, clients: Iterable[str] = (),
              client_pods: Iterable[tuple[str, str]] = ()) -> Topology:
        """Build ``state`` (data plane: ``dataplane`` or the cluster config's). Raises ``Unavailable``,
        ``PlanError`` or ``KernelError``; on any failure everything made so far is removed."""
        plane = dataplane or state.config.dataplane
        if plane not in KERNEL_DATAPLANES:
            raise PlanError(f"data plane {plane!r} cannot be loaded into the kernel (supported: "
                            f"{', '.join(KERNEL_DATAPLANES)}; ebpf needs Cilium's agent, not rules)")
        netns.require(plane)
        netns.sweep()
        owner = Owner()
        try:
            the_plan = plan(state, owner.name(""), clients=clients, client_pods=client_pods)
        except BaseException:
            owner.release()
            raise
        topo = cls(state, plane, the_plan, owner)
        _LIVE.add(topo)
        try:
            topo._create()
        except BaseException:
            topo.close()
            raise
        return topo

    def _create(self) -> None:
        p = self.plan
        netns.ip_batch([f"netns add {n}" for n in p.namespaces], what="ip netns add")
        self._no_dad(p.namespaces)
        self._wire_ext()
        for node in p.nodes:
            self._wire_node(node.name, [pod for pod in p.pods if pod.node == node.name])
        self._wire_pods(p.pods)
        for node in p.nodes:
            netns.write_sysctl(node.netns, {"net.ipv4.ip_forward": "1", **(
                {"net.ipv6.conf.all.forwarding": "1"} if "IPv6" in p.families else {})})
            # The REJECTs a verify run provokes come by the hundred within a second. The kernel limits ICMP
            # errors twice, per peer (icmp_ratelimit) and for the whole namespace (icmp_msgs_per_sec, a
            # burst of 50), and either turns the later REJECTs into timeouts; an empty rate mask exempts
            # every ICMP type from both.
            with contextlib.suppress(OSError):
                netns.write_sysctl(node.netns, {"net.ipv4.icmp_ratelimit": "0", "net.ipv4.icmp_ratemask": "0", **(
                    {"net.ipv6.icmp.ratelimit": "0", "net.ipv6.icmp.ratemask": "\n"}
                    if "IPv6" in p.families else {})})
            netns.exec_in(node.netns, ["nft", "-f", "-"], kindnet_masquerade(self.state, p),
                          what=f"nft -f (kindnet masquerade) on node {node.name}")
        self._write_etc(p.pods)
        self._load_rules(self.state)
        # CoreDNS forwards to the world outside the cluster config describes, as the offline resolver does.
        outside = self.state.config.outside
        upstream = Upstream(hosts=outside.dns_hosts(), reverse=outside.reverse())
        self._ctx = [Context(self.state, self.dataplane, DNSServer(self.state, upstream=upstream),
                             UpstreamDNS(self.state, upstream=upstream))]
        self.reactor = Reactor()
        self._open_listeners(p.pods, {h.pod: h for h in p.host_listeners})
        self.listeners[UPSTREAM_KEY] = self.reactor.call(open_listeners(
            self._ctx, UPSTREAM_KEY, p.ext_netns, ((53, "TCP"), (53, "UDP")), p.gateways or p.gateway))
        for address, name in p.outside:
            self.listeners[f"{OUTSIDE_PREFIX}{address}"] = self.reactor.call(open_listeners(
                self._ctx, f"{OUTSIDE_PREFIX}{name}", p.ext_netns, outside.hosts[name].ports, address))

    def _no_dad(self, namespaces: Iterable[str]) -> None:
        """IPv6 without duplicate address detection in every new namespace: the link-local addresses of the
        links made next are usable at once, as the /128s added with ``nodad`` are (nothing else shares
        these links, so there is nothing to detect)."""
        if "IPv6" not in self.plan.families:
            return
        for name in namespaces:
            netns.write_sysctl(name, {"net.ipv6.conf.all.accept_dad": "0", "net.ipv6.conf.default.accept_dad": "0"})

    def _wire_ext(self) -> None:
        p = self.plan
        lines = ["link set lo up", f"link add {BRIDGE} type bridge", f"link set {BRIDGE} up",
                 *(_addr(g, BRIDGE) for g in p.gateways or (p.gateway,))]
        lines += [_addr(ip, "lo") for ip in (*p.clients, *(ip for ip, _ in p.outside))]
        six = []  # entry rules and defaults of IPv6, in an `ip -6` batch (a fwmark rule names no family)
        for i, node in enumerate(p.nodes):
            lines += [f"link add {node.uplink} type veth peer name eth0 netns {node.netns}",
                      f"link set {node.uplink} master {BRIDGE}", f"link set {node.uplink} up"]
            for ip in node.addresses:
                lines.append(f"{_link_route(ip, BRIDGE)} src {p.gateway_of(_family(ip))}")
                entry = [_default(ip, BRIDGE, f" table {ENTRY_TABLE + i}"),
                         f"rule add fwmark {ENTRY_MARK + i} table {ENTRY_TABLE + i}"]
                if ":" in ip:
                    six += entry
                else:
                    lines += entry
        lines += [f"route add {_host(ip)} via {via} dev {BRIDGE}" for ip, via in p.announced]
        netns.ip_batch(lines, p.ext_netns, what="wiring the external network")
        netns.ip_batch(six, p.ext_netns, what="wiring the external network (IPv6)", ipv6=True)

    def _wire_node(self, name: str, pods: list[PodPlan]) -> None:
        p = self.plan
        node = p.node(name)
        families = {_family(ip) for ip in node.addresses}
        gateways = [g for g in p.gateways or (p.gateway,) if _family(g) in families]
        lines = ["link set lo up", *(_addr(ip, "eth0") for ip in node.addresses), "link set eth0 up",
                 *(_link_route(g, "eth0") for g in gateways),
                 *(_link_route(ip, "eth0") for other in p.nodes if other.name != name for ip in other.addresses
                   if _family(ip) in families),
                 *(_default(g, "eth0") for g in gateways),
                 *(f"route add {dst} via {via} dev eth0" for dst, via in node.routes)]
        lines += self._pod_links(node.netns, pods)
        netns.ip_batch(lines, node.netns, what=f"wiring node {name}")

    @staticmethod
    def _pod_links(node_netns: str, pods: list[PodPlan]) -> list[str]:
        lines = []
        for pod in pods:
            lines += [f"link add {pod.host_veth} address {GATEWAY_HW} type veth peer name eth0 address {pod.mac} "
                      f"netns {pod.netns}",
                      f"link set {pod.host_veth} up"]
            for ip in pod.addresses:
                lines += [_link_route(ip, pod.host_veth),
                          f"neigh replace {ip} lladdr {pod.mac} dev {pod.host_veth} nud permanent"]
        return lines

    @staticmethod
    def _wire_pods(pods: Iterable[PodPlan]) -> None:
        procs = []
        for pod in pods:
            lines = ["link set lo up", *(_addr(ip, "eth0") for ip in pod.addresses), "link set eth0 up"]
            if any(":" not in ip for ip in pod.addresses):
                lines += [f"route add {POD_GATEWAY} dev eth0 scope link", _default(POD_GATEWAY, "eth0"),
                          f"neigh replace {POD_GATEWAY} lladdr {GATEWAY_HW} dev eth0 nud permanent"]
            if any(":" in ip for ip in pod.addresses):
                # fe80::/64 is on eth0 from the moment it is up; the gateway is the host side's MAC, as for IPv4.
                lines += [_default(POD_GATEWAY6, "eth0"),
                          f"neigh replace {POD_GATEWAY6} lladdr {GATEWAY_HW} dev eth0 nud permanent"]
            # One ip process per pod, all at once: a 50-pod topology is wired in one round trip.
            proc = subprocess.Popen(["ip", "-n", pod.netns, "-batch", "-"], stdin=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            assert proc.stdin is not None
            proc.stdin.write("\n".join(lines) + "\n")
            proc.stdin.close()
            proc.stdin = None  # written and closed: communicate() only collects stderr
            procs.append((pod, proc))
        errors = []
        for pod, proc in procs:
            _, err = proc.communicate(timeout=60)
            if proc.returncode != 0:
                errors.append(f"pod {pod.key}: {err.strip()}")
        if errors:
            raise KernelError("wiring pods: " + "; ".join(errors))

    @staticmethod
    def _write_etc(pods: Iterable[PodPlan]) -> None:
        """/etc/netns/<ns>/{resolv.conf,hosts}: what `ip netns exec` shows a tool as /etc (the kubelet's files)."""
        for pod in pods:
            if not pod.is_pod:
                continue
            d = ETC_NETNS / pod.netns
            d.mkdir(parents=True, exist_ok=True)
            os.chmod(d, 0o755)
            # World-readable whatever the process umask (the daemon's is 077, for its secrets): the pod's
            # tools run as nobody and read these as their /etc.
            for name, text in (("resolv.conf", pod.resolv_conf), ("hosts", pod.hosts_file)):
                (d / name).write_text(text)
                os.chmod(d / name, 0o644)

    def _load_rules(self, state: ClusterState) -> None:
        for node in self.plan.nodes:
            ruleset = render(state, self.dataplane, node.name)
            text = ruleset.text
            if self.dataplane == "iptables":
                # One restore per family, as each family's proxier runs its own.
                for family, part in (ruleset.parts or {"IPv4": text}).items():
                    restore = _iptables_restore(family)
                    netns.exec_in(node.netns, [restore], part, what=f"{restore} on node {node.name}")
            else:
                # One transaction: the old tables go and the new ones come, as kube-proxy's sync does.
                tables = ["ip6" if f == "IPv6" else "ip" for f in (ruleset.parts or {"IPv4": text})]
                reset = "".join(f"table {t} kube-proxy\ndelete table {t} kube-proxy\n" for t in tables)
                netns.exec_in(node.netns, ["nft", "-f", "-"], reset + text,
                              what=f"nft -f (kube-proxy rules) on node {node.name}")
            policy = netpol.ruleset(state, self.plan, node.name)
            netns.exec_in(node.netns, ["nft", "-f", "-"], policy, what=f"nft -f (policy) on node {node.name}")
            self.loaded[node.name] = Loaded(node.name, text, policy)

    def _open_listeners(self, pods: Iterable[PodPlan], hosts: dict[str, Any]) -> None:
        assert self.reactor is not None
        wild = self._wildcards
        for pod in pods:
            if pod.listens:
                self.listeners[pod.key] = self.reactor.call(open_listeners(self._ctx, pod.key, pod.netns, pod.listens,
                                                                           wild))
        for key, host in hosts.items():
            node = self.plan.node(host.node)
            self.listeners[key] = self.reactor.call(open_listeners(self._ctx, key, node.netns, host.listens, wild))

    @property
    def _wildcards(self) -> tuple[str, ...]:
        """Where listeners bind: 0.0.0.0, and :: (IPv6 only) beside it when the topology wires IPv6."""
        return ("0.0.0.0", "::") if "IPv6" in self.plan.families else ("0.0.0.0",)

    # --- using -----------------------------------------------------------------------------------

    def netns_of(self, key: str) -> str:
        """The namespace of pod ``ns/name`` (a hostNetwork pod: its node's), or of ``node/<name>``, ``ext``."""
        if key == "ext":
            return self.plan.ext_netns
        if key.startswith("node/"):
            return self.plan.node(key[5:]).netns
        pod = self.plan.pod(key)
        if pod is not None:
            return pod.netns
        obj = self.state.pods.get(key)
        if obj is not None and obj.host_network and obj.node_name:
            return self.plan.node(obj.node_name).netns
        raise KeyError(key)

    def has(self, key: str) -> bool:
        try:
            self.netns_of(key)
        except (KeyError, StopIteration):
            return False
        return True

    @property
    def listener_failures(self) -> list[str]:
        return [f"{key}: {f}" for key, pl in sorted(self.listeners.items()) for f in pl.failed]

    def update(self, state: ClusterState) -> None:
        """Follow a new ClusterState: pods come and go, rules and policy are reloaded, replies follow."""
        with self._lock:
            if self._closed:
                return
            new_plan = plan(state, self.owner.name(""), clients=[
                                c for c in self.plan.clients if c not in (EXTERNAL_CLIENT_IP, EXTERNAL_CLIENT_IP6)],
                            client_pods=[(p.ip, p.node) for p in self.plan.pods if not p.is_pod and not p.listens])
            old = {p.key: p for p in self.plan.pods}
            new = {p.key: p for p in new_plan.pods}
            gone = [p for k, p in old.items() if k not in new or new[k] != p]
            came = [p for k, p in new.items() if k not in old or old[k] != p]
            for p in gone:
                pl = self.listeners.pop(p.key, None)
                if pl is not None and self.reactor is not None:
                    self.reactor.call(_close(pl))
            for node in self.plan.nodes:
                # Deleting the host end removes the pair now, even while a lingering socket keeps
                # the pod's namespace alive a little longer.
                veths = [f"link del {p.host_veth}" for p in gone if p.node == node.name]
                with contextlib.suppress(KernelError):
                    netns.ip_batch(veths, node.netns, what=f"removing pods from node {node.name}")
            netns.delete([p.netns for p in gone])
            if new_plan.announced != self.plan.announced:
                routes = [f"route del {_host(ip)}" for ip, _ in self.plan.announced]
                routes += [f"route replace {_host(ip)} via {via} dev {BRIDGE}" for ip, via in new_plan.announced]
                subprocess.run(["ip", "-force", "-n", new_plan.ext_netns, "-batch", "-"], input="\n".join(routes),
                               capture_output=True, text=True, timeout=60, check=False)
            self.plan = new_plan
            # Each pod's /etc files are in place before its namespace is: `ip netns exec` binds what
            # /etc/netns/<ns> holds when it runs, and a tool started in between read the host's resolv.conf.
            self._write_etc(new_plan.pods)
            if came:
                netns.ip_batch([f"netns add {p.netns}" for p in came], what="ip netns add")
                self._no_dad([p.netns for p in came])
                for node in new_plan.nodes:
                    lines = self._pod_links(node.netns, [p for p in came if p.node == node.name])
                    netns.ip_batch(lines, node.netns, what=f"wiring pods on node {node.name}")
                self._wire_pods(came)
            self.state = state
            if self._ctx:
                old_ctx = self._ctx[0]
                old_ctx.dns.update(state)
                old_ctx.upstream.update(state)
                self._ctx[0] = Context(state, self.dataplane, old_ctx.dns, old_ctx.upstream)
            self._load_rules(state)
            old_hosts = {key for key in self.listeners if self.plan.pod(key) is None and key != UPSTREAM_KEY}
            hosts = {h.pod: h for h in new_plan.host_listeners if h.pod not in old_hosts}
            self._open_listeners(came, hosts)

    # --- tearing down --------------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                if self.reactor is not None:
                    for pl in self.listeners.values():
                        with contextlib.suppress(Exception):
                            self.reactor.call(_close(pl), timeout=5)
                    self.reactor.stop()
            finally:
                netns.delete(self.plan.namespaces)
                self.owner.release()
                _LIVE.discard(self)

    def __enter__(self) -> Topology:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


async def _close(pl: PodListeners) -> None:
    pl.close()


# --- always torn down ----------------------------------------------------------------------------

_LIVE: set[Topology] = set()


@atexit.register
def _close_all() -> None:
    for topo in list(_LIVE):
        with contextlib.suppress(Exception):
            topo.close()


@contextlib.contextmanager
def terminating_as_interrupt() -> Iterator[None]:
    """SIGTERM (and SIGHUP) raise KeyboardInterrupt while the body runs, so ``finally`` tears down."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def leftovers() -> list[str]:
    """Namespaces of knetsim runs whose process is gone (removed by the next build, or ``sweep``)."""
    return [n for n in netns.list_netns() if n.startswith(netns.PREFIX) and netns.owner_of(n) is not None
            and not netns._held(netns.owner_of(n) or "")]


__all__ = ["KERNEL_DATAPLANES", "Loaded", "Topology", "kernel_dump", "leftovers", "terminating_as_interrupt"]


def kernel_dump(dataplane: str, text: str, family: str = "IPv4") -> str:
    """Load ``text`` (a kube-proxy render of one IP family) into a throwaway namespace and return what the kernel
    holds, in the kernel tools' own words: ``iptables-save``/``ip6tables-save`` (dates dropped) or
    ``nft list table ip|ip6 kube-proxy``."""
    if dataplane not in KERNEL_DATAPLANES:
        raise PlanError(f"data plane {dataplane!r} has no kernel form (supported: {', '.join(KERNEL_DATAPLANES)})")
    netns.require(dataplane)
    netns.sweep()
    owner = Owner()
    name = owner.name("rules")
    try:
        netns.ip_batch([f"netns add {name}"], what="ip netns add")
        if dataplane == "iptables":
            restore = _iptables_restore(family)
            netns.exec_in(name, [restore], text, what=restore)
            save = restore.replace("-restore", "-save")
            dump = netns.exec_in(name, [save], what=save)
            return "".join(line + "\n" for line in dump.splitlines()
                           if not line.startswith(("# Generated by", "# Completed on")))
        netns.exec_in(name, ["nft", "-f", "-"], text, what="nft -f")
        table = "ip6" if family == "IPv6" else "ip"
        return netns.exec_in(name, ["nft", "list", "table", table, "kube-proxy"], what="nft list table")
    finally:
        netns.delete([name])
        owner.release()
