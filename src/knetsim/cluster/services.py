"""Service IP and port allocation, as the API server's registry does at create time.

* ClusterIP: a requested address must lie in the service CIDR and be free; otherwise the
  API server's words (``failed to allocate IP ...``). Dynamic addresses come from the upper
  band of the range (KEP-3070 keeps the lower band for static picks); upstream picks at
  random, knetsim hashes ``namespace/name`` and probes, so an address never moves when
  other Services come and go.
* NodePort: the same, with the port range and KEP-3668's static band.
* LoadBalancer: the next free address of the pool, in (namespace, name) order, into
  ``status.loadBalancer.ingress`` — what MetalLB or cloud-provider-kind would write.

Requested values are claimed first, in (namespace, name) order, so the outcome never
depends on the order of the input documents.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..model.fielderr import FieldError, Path, go_slice
from ..model.loader import BUILTIN, Source
from .config import ClusterConfig
from .naming import stable_index


@dataclass(slots=True)
class AllocationError:
    source: Source
    subject: str
    error: FieldError


@dataclass(frozen=True, slots=True)
class Held:
    """What one Service holds in the allocators: ClusterIPs, NodePorts (healthCheckNodePort included)
    and LoadBalancer addresses."""

    ips: frozenset[str] = frozenset()
    node_ports: frozenset[int] = frozenset()
    lb: frozenset[str] = frozenset()


def held_by(body: dict[str, Any]) -> Held:
    """What a stored Service holds of the allocators; nothing when it is not of a Service's shape (a store
    from an older version before its recheck): the allocators read every stored Service."""
    spec = body.get("spec") or {}
    status = body.get("status") or {}
    if not isinstance(spec, dict) or not isinstance(status, dict):
        return Held()
    try:
        return _held(body, spec, status)
    except (TypeError, ValueError, AttributeError):
        return Held()


def _held(body: dict[str, Any], spec: dict[str, Any], status: dict[str, Any]) -> Held:
    if spec.get("type") == "ExternalName":
        return Held()
    ips = {str(ip) for ip in [spec.get("clusterIP"), *(spec.get("clusterIPs") or [])] if ip and ip != "None"}
    ports = {int(p["nodePort"]) for p in spec.get("ports") or [] if isinstance(p, dict) and p.get("nodePort")}
    if spec.get("healthCheckNodePort"):
        ports.add(int(spec["healthCheckNodePort"]))
    lb = {str(i["ip"]) for i in (status.get("loadBalancer") or {}).get("ingress") or []
          if isinstance(i, dict) and i.get("ip")}
    return Held(frozenset(ips), frozenset(ports), frozenset(lb))


@dataclass
class Allocator:
    """The allocators' bitmaps. ``allocate_services`` makes a fresh one per call unless given one that
    already holds what other Services hold (the live API server keeps one across requests)."""

    config: ClusterConfig
    _ips: set[int] = field(default_factory=set)
    _node_ports: set[int] = field(default_factory=set)
    _lb: set[str] = field(default_factory=set)
    # While recording: what this allocator newly took, so a failed write can give it back.
    _journal: list[tuple[str, Any]] | None = None

    def __post_init__(self) -> None:
        net = ipaddress.ip_network(self.config.service_cidr)
        self._net = net
        size = net.num_addresses
        # The network and broadcast addresses are never handed out.
        self._first = 1
        self._last = size - 2 if net.version == 4 else size - 1
        band = min(max(16, size // 16), 256)
        self._dynamic_start = min(self._first + band, self._last)
        low, high = self.config.node_port_range
        self._port_low, self._port_high = low, high
        port_band = min(max(16, (high - low + 1) // 32), 128)
        self._port_dynamic_start = min(low + port_band, high)

    def hold(self, held: Held) -> None:
        """Mark what a stored Service holds as used (no range checks: it was allocated before)."""
        for ip in held.ips:
            offset = self._offset(ip)
            if offset is not None:
                self._ips.add(offset)
        self._node_ports.update(held.node_ports)
        self._lb.update(held.lb)

    def release(self, held: Held) -> None:
        for ip in held.ips:
            offset = self._offset(ip)
            if offset is not None:
                self._ips.discard(offset)
        self._node_ports.difference_update(held.node_ports)
        self._lb.difference_update(held.lb)

    def record(self) -> None:
        """Start noting what is newly taken (``recorded`` returns it)."""
        self._journal = []

    def recorded(self) -> Held:
        journal, self._journal = self._journal or [], None
        return Held(frozenset(str(self._net.network_address + v) for k, v in journal if k == "ip"),
                    frozenset(v for k, v in journal if k == "port"), frozenset(v for k, v in journal if k == "lb"))

    def _take(self, used: set[Any], kind: str, value: Any) -> None:
        if value not in used:
            used.add(value)
            if self._journal is not None:
                self._journal.append((kind, value))

    def _offset(self, ip: str) -> int | None:
        try:
            addr = ipaddress.ip_address(ip)
        except ValueError:
            return None
        return int(addr) - int(self._net.network_address) if addr in self._net else None

    # --- ClusterIP ---------------------------------------------------------------

    def claim_ip(self, ip: str) -> str | None:
        """Reserve a requested address; returns an error detail or None."""
        try:
            addr = ipaddress.ip_address(ip)
        except ValueError:
            return None  # validation already reported it
        if addr not in self._net:
            return (f"failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. "
                    f"The range of valid IPs is {self.config.service_cidr}")
        offset = int(addr) - int(self._net.network_address)
        if offset in self._ips:
            return f"failed to allocate IP {ip}: provided IP is already allocated"
        self._take(self._ips, "ip", offset)
        return None

    def allocate_ip(self, key: str) -> str | None:
        span = self._last - self._dynamic_start + 1
        start = stable_index(key, span)
        for i in range(span):
            offset = self._dynamic_start + (start + i) % span
            if offset not in self._ips:
                self._take(self._ips, "ip", offset)
                return str(self._net.network_address + offset)
        # The upper band is full: fall back to the lower band, as upstream does.
        for offset in range(self._first, self._dynamic_start):
            if offset not in self._ips:
                self._take(self._ips, "ip", offset)
                return str(self._net.network_address + offset)
        return None

    # --- NodePort ----------------------------------------------------------------

    def claim_node_port(self, port: int) -> str | None:
        if not self._port_low <= port <= self._port_high:
            return ("provided port is not in the valid range. The range of valid ports is "
                    f"{self._port_low}-{self._port_high}")
        # portallocator keeps one bitmap of port numbers: 30053/TCP and 30053/UDP of two
        # different Services collide.
        if port in self._node_ports:
            return "provided port is already allocated"
        self._take(self._node_ports, "port", port)
        return None

    def allocate_node_port(self, key: str) -> int | None:
        span = self._port_high - self._port_dynamic_start + 1
        start = stable_index(key, span)
        for i in range(span):
            port = self._port_dynamic_start + (start + i) % span
            if port not in self._node_ports:
                self._take(self._node_ports, "port", port)
                return port
        for port in range(self._port_low, self._port_dynamic_start):
            if port not in self._node_ports:
                self._take(self._node_ports, "port", port)
                return port
        return None

    # --- LoadBalancer ------------------------------------------------------------

    def allocate_lb(self) -> str | None:
        first = ipaddress.ip_address(self.config.lb_pool[0])
        last = ipaddress.ip_address(self.config.lb_pool[1])
        addr = first
        while addr <= last:
            if str(addr) not in self._lb:
                self._take(self._lb, "lb", str(addr))
                return str(addr)
            addr += 1
        return None

    def claim_lb(self, ip: str) -> None:
        self._take(self._lb, "lb", ip)


def allocate_services(services: list[tuple[dict[str, Any], Source]], config: ClusterConfig,
                      live: Callable[[dict[str, Any]], bool] = lambda body: False,
                      alloc: Allocator | None = None) -> list[AllocationError]:
    """Fill clusterIP(s), nodePorts, healthCheckNodePort and LB status in place.

    ``live(body)`` marks objects read from a real cluster: what they hold was allocated by
    that cluster, so it is reserved without range checks and never reported. ``alloc``, when
    given, already holds what other Services hold; what these ones claim is added to it (also
    for a Service that is then rejected: the caller releases it).
    """
    alloc = alloc if alloc is not None else Allocator(config)
    errors: list[AllocationError] = []
    # The cluster's own Services exist before anything is applied: they claim first, so a user
    # Service that asks for 10.96.0.10 is the one rejected. Live objects hold what the cluster
    # already gave them, so they claim before a new request whatever its name. Then
    # (namespace, name) order.
    ordered = sorted(services, key=lambda s: (s[1] is not BUILTIN, not live(s[0]), s[0]["metadata"]["namespace"],
                                              s[0]["metadata"]["name"]))

    def subject(body: dict[str, Any]) -> str:
        return f"Service {body['metadata']['namespace']}/{body['metadata']['name']}"

    rejected: set[int] = set()
    # Pass 1: requested addresses and ports.
    for body, source in ordered:
        spec = body["spec"]
        ip = spec.get("clusterIP")
        is_live = live(body)
        family_error = None if is_live else _family_error(spec, alloc)
        if family_error is not None:
            errors.append(AllocationError(source, subject(body), family_error))
            rejected.add(id(body))
            continue
        if ip and ip != "None" and spec.get("type") != "ExternalName":
            detail = alloc.claim_ip(ip)
            if detail and not is_live:
                requested = [str(v) for v in spec.get("clusterIPs") or [ip]]
                errors.append(AllocationError(source, subject(body), Path("spec").child("clusterIPs")
                                                    .invalid(go_slice(requested), detail)))
                rejected.add(id(body))
        claimed: set[int] = set()
        for i, port in enumerate(spec.get("ports") or []):
            number = port.get("nodePort")
            # One Service may use the same nodePort for TCP and UDP of one port (initNodePorts).
            if number and number not in claimed:
                detail = alloc.claim_node_port(int(number))
                claimed.add(number)
                if detail and not is_live:
                    errors.append(AllocationError(source, subject(body), Path("spec").child("ports").index(i)
                                                        .child("nodePort").invalid(number, detail)))
                    rejected.add(id(body))
        if spec.get("healthCheckNodePort"):
            alloc.claim_node_port(int(spec["healthCheckNodePort"]))
        for ingress in (body.get("status") or {}).get("loadBalancer", {}).get("ingress") or []:
            if ingress.get("ip"):
                alloc.claim_lb(ingress["ip"])
    # Pass 2: dynamic allocation.
    for body, _source in ordered:
        if id(body) in rejected:
            continue
        spec = body["spec"]
        key = f"{body['metadata']['namespace']}/{body['metadata']['name']}"
        svc_type = spec.get("type", "ClusterIP")
        if svc_type == "ExternalName":
            continue
        if not spec.get("clusterIP"):
            spec["clusterIP"] = alloc.allocate_ip(key) or ""
        spec["clusterIPs"] = [spec["clusterIP"]]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        wants_node_ports = svc_type == "NodePort" or (
            svc_type == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts", True))
        if wants_node_ports:
            by_port: dict[int, int] = {p["port"]: p["nodePort"] for p in spec.get("ports") or [] if p.get("nodePort")}
            for port in spec.get("ports") or []:
                if not port.get("nodePort"):
                    number = by_port.get(port["port"]) or alloc.allocate_node_port(
                        f"{key}/{port.get('name', '')}/{port['port']}")
                    port["nodePort"] = number
                    if number:
                        by_port[port["port"]] = number
        if svc_type == "LoadBalancer":
            if spec.get("externalTrafficPolicy") == "Local" and not spec.get("healthCheckNodePort"):
                spec["healthCheckNodePort"] = alloc.allocate_node_port(f"{key}/healthz")
            status = body.setdefault("status", {})
            lb = status.setdefault("loadBalancer", {})
            if not lb.get("ingress"):
                ip = alloc.allocate_lb()
                if ip:
                    lb["ingress"] = [{"ip": ip, "ipMode": "VIP"}]
        else:
            body.setdefault("status", {}).setdefault("loadBalancer", {})
    return errors


def _family_error(spec: dict[str, Any], alloc: Allocator) -> FieldError | None:
    """The cluster is single-stack IPv4 (or IPv6): ask for the other family and the API server refuses."""
    if spec.get("type") == "ExternalName":
        return None
    configured = "IPv4" if alloc._net.version == 4 else "IPv6"
    for i, family in enumerate(spec.get("ipFamilies") or []):
        if family != configured:
            return Path("spec").child("ipFamilies").index(i).invalid(family, "not configured on this cluster")
    if spec.get("ipFamilyPolicy") == "RequireDualStack":
        return Path("spec").child("ipFamilyPolicy").invalid(
            "RequireDualStack", "this cluster is not configured for dual-stack services")
    return None
