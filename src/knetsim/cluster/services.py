"""Service IP and port allocation, as the API server's registry does at create time.

* IP families first (``initIPFamilyFields``, pkg/registry/core/service/storage/alloc.go): an
  unset ``ipFamilyPolicy`` is SingleStack, except for a headless Service without selector, which
  is RequireDualStack and gets both families even on a single-stack cluster; ``ipFamilies`` are
  inferred from requested ``clusterIPs``, then the cluster's primary family, then the other one
  for PreferDualStack/RequireDualStack on a dual-stack cluster. What does not fit the cluster is
  refused in the API server's words.
* ClusterIPs: one per family, from the ranges of the ready ServiceCIDRs of that family (the
  ``kubernetes`` one from the cluster config, then any the user adds, by name). A requested
  address must lie in one of them, not be its network address (nor, for IPv4, its broadcast
  address), and be free; otherwise ``failed to allocate IP ...`` as the MetaAllocator says it.
  Dynamic addresses come from the upper band of a range (KEP-3070 keeps the lower band for static
  picks); upstream picks at random, knetsim hashes ``namespace/name`` and probes, so an address
  never moves when other Services come and go. A full range hands over to the next ServiceCIDR.
* NodePort: the same, with the port range and KEP-3668's static band.
* LoadBalancer: the next free address of the pool of each of the Service's families, in
  (namespace, name) order, into ``status.loadBalancer.ingress`` — what MetalLB or
  cloud-provider-kind would write.

Requested values are claimed first, in (namespace, name) order, so the outcome never
depends on the order of the input documents.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model.fielderr import FieldError, Path, go_slice
from ..model.loader import BUILTIN, Source
from ..model.validation import service_cluster_ips_related_fields
from .config import ClusterConfig, family_of
from .naming import stable_index

DEFAULT_SERVICE_CIDR = "kubernetes"
# The allocator's messages (pkg/registry/core/service/ipallocator).
MISMATCHED_NETWORK = "the provided network does not match the current range"
ALREADY_ALLOCATED = "provided IP is already allocated"
_OTHER = {"IPv4": "IPv6", "IPv6": "IPv4"}


@dataclass(slots=True)
class AllocationError:
    source: Source
    subject: str
    error: FieldError | str  # a str: the API server's 500 (InternalError), not a field's fault


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
    ips = {_canonical(ip) for ip in [spec.get("clusterIP"), *(spec.get("clusterIPs") or [])] if ip and ip != "None"}
    ports = {int(p["nodePort"]) for p in spec.get("ports") or [] if isinstance(p, dict) and p.get("nodePort")}
    if spec.get("healthCheckNodePort"):
        ports.add(int(spec["healthCheckNodePort"]))
    lb = {str(i["ip"]) for i in (status.get("loadBalancer") or {}).get("ingress") or []
          if isinstance(i, dict) and i.get("ip")}
    return Held(frozenset(ips), frozenset(ports), frozenset(lb))


def _canonical(ip: Any) -> str:
    try:
        return str(ipaddress.ip_address(str(ip)))
    except ValueError:
        return str(ip)


@dataclass(frozen=True, slots=True)
class ServiceCIDRRange:
    """One CIDR of a ServiceCIDR, as the ClusterIP allocator of its family sees it."""

    owner: str  # the ServiceCIDR's name
    cidr: str
    ready: bool = True

    @property
    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_network(self.cidr)

    @property
    def family(self) -> str:
        return family_of(self.cidr)


def default_ranges(config: ClusterConfig) -> list[ServiceCIDRRange]:
    """The ``kubernetes`` ServiceCIDR the API server creates from ``--service-cluster-ip-range``."""
    return [ServiceCIDRRange(DEFAULT_SERVICE_CIDR, cidr) for cidr in config.service_cidrs]


class _Range:
    """Bounds of one range: the network address is never handed out, nor IPv4's broadcast address."""

    __slots__ = ("base", "cidr", "dynamic_start", "first", "last", "owner", "size", "version")

    def __init__(self, r: ServiceCIDRRange) -> None:
        net = r.network
        self.owner, self.cidr, self.version = r.owner, r.cidr, net.version
        self.base = int(net.network_address)
        self.size = net.num_addresses
        self.first = 1
        self.last = self.size - 2 if net.version == 4 else self.size - 1
        usable = max(self.last - self.first + 1, 0)
        # calculateRangeOffset: min(max(16, size/16), 256), and no static band for tiny ranges.
        band = 0 if self.size <= 16 else min(max(16, self.size // 16), 256)
        self.dynamic_start = min(self.first + band, self.first + usable - 1) if usable else self.first

    def contains(self, value: int) -> bool:
        """``PrefixContainsIP``: inside, and neither the network nor (IPv4) the broadcast address."""
        offset = value - self.base
        return self.first <= offset <= self.last


@dataclass
class Allocator:
    """The allocators' state. ``allocate_services`` makes a fresh one per call unless given one that
    already holds what other Services hold (the live API server keeps one across requests)."""

    config: ClusterConfig
    ranges: Sequence[ServiceCIDRRange] | None = None
    # (IP version, integer value) of every allocated ClusterIP, whichever range it came from:
    # IPAddress objects are cluster-wide, as overlapping ServiceCIDRs share them.
    _ips: set[tuple[int, int]] = field(default_factory=set)
    _node_ports: set[int] = field(default_factory=set)
    _lb: set[str] = field(default_factory=set)
    # While recording: what this allocator newly took, so a failed write can give it back.
    _journal: list[tuple[str, Any]] | None = None

    def __post_init__(self) -> None:
        self.families: tuple[str, ...] = self.config.ip_families
        self.set_ranges(self.ranges if self.ranges is not None else default_ranges(self.config))
        low, high = self.config.node_port_range
        self._port_low, self._port_high = low, high
        port_band = min(max(16, (high - low + 1) // 32), 128)
        self._port_dynamic_start = min(low + port_band, high)

    def set_ranges(self, ranges: Iterable[ServiceCIDRRange]) -> None:
        """The ServiceCIDRs changed: allocate from the ready ones, the default first, then by name."""
        ordered = sorted(ranges, key=lambda r: (r.owner != DEFAULT_SERVICE_CIDR, r.owner, r.cidr))
        self.ranges = tuple(ordered)
        self._ready = [_Range(r) for r in ordered if r.ready]

    @property
    def primary_family(self) -> str:
        return self.families[0]

    def hold(self, held: Held) -> None:
        """Mark what a stored Service holds as used (no range checks: it was allocated before)."""
        for ip in held.ips:
            key = _key(ip)
            if key is not None:
                self._ips.add(key)
        self._node_ports.update(held.node_ports)
        self._lb.update(held.lb)

    def release(self, held: Held) -> None:
        for ip in held.ips:
            key = _key(ip)
            if key is not None:
                self._ips.discard(key)
        self._node_ports.difference_update(held.node_ports)
        self._lb.difference_update(held.lb)

    def record(self) -> None:
        """Start noting what is newly taken (``recorded`` returns it)."""
        self._journal = []

    def recorded(self) -> Held:
        journal, self._journal = self._journal or [], None
        return Held(frozenset(_text(v) for k, v in journal if k == "ip"),
                    frozenset(v for k, v in journal if k == "port"), frozenset(v for k, v in journal if k == "lb"))

    def _take(self, used: set[Any], kind: str, value: Any) -> None:
        if value not in used:
            used.add(value)
            if self._journal is not None:
                self._journal.append((kind, value))

    def is_allocated(self, ip: str) -> bool:
        return _key(ip) in self._ips

    # --- ClusterIP ---------------------------------------------------------------

    def keep_ip(self, ip: str) -> None:
        """An address the Service already holds (an update, an object read from a cluster): no range check,
        its ServiceCIDR may be gone since."""
        key = _key(ip)
        if key is not None:
            self._take(self._ips, "ip", key)

    def claim_ip(self, ip: str) -> str | None:
        """Reserve a requested address; returns an error detail or None."""
        key = _key(ip)
        if key is None:
            return None  # validation already reported it
        # MetaAllocator.getAllocator: any ready range that contains the address.
        if not any(r.version == key[0] and r.contains(key[1]) for r in self._ready):
            return f"failed to allocate IP {ip}: {MISMATCHED_NETWORK}"
        if key in self._ips:
            return f"failed to allocate IP {ip}: {ALREADY_ALLOCATED}"
        self._take(self._ips, "ip", key)
        return None

    def allocate_ip(self, key: str, family: str | None = None) -> str | None:
        version = 6 if (family or self.primary_family) == "IPv6" else 4
        for r in self._ready:
            if r.version == version:
                ip = self._allocate_in(r, key)
                if ip is not None:
                    return ip
        return None

    def _allocate_in(self, r: _Range, key: str) -> str | None:
        def free(offset: int) -> str | None:
            value = (r.version, r.base + offset)
            if value in self._ips:
                return None
            self._take(self._ips, "ip", value)
            return _text(value)

        span = r.last - r.dynamic_start + 1
        if span > 0:
            start = stable_index(key, span)
            # A range of 2^64 addresses is never probed to the end: the first few are free.
            for i in range(min(span, 1 << 20)):
                got = free(r.dynamic_start + (start + i) % span)
                if got is not None:
                    return got
        # The upper band is full: fall back to the lower band, as upstream does.
        for offset in range(r.first, r.dynamic_start):
            got = free(offset)
            if got is not None:
                return got
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

    def allocate_lb(self, family: str = "IPv4") -> str | None:
        pool = self.config.lb_pool if family == "IPv4" else self.config.lb_pool_v6
        first, last = ipaddress.ip_address(pool[0]), ipaddress.ip_address(pool[1])
        addr = first
        while addr <= last:
            if str(addr) not in self._lb:
                self._take(self._lb, "lb", str(addr))
                return str(addr)
            addr += 1
        return None

    def claim_lb(self, ip: str) -> None:
        self._take(self._lb, "lb", ip)


def _text(key: tuple[int, int]) -> str:
    return str(ipaddress.IPv4Address(key[1]) if key[0] == 4 else ipaddress.IPv6Address(key[1]))


def _key(ip: str) -> tuple[int, int] | None:
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return None
    return addr.version, int(addr)


# --- IP families (initIPFamilyFields) ------------------------------------------------


def init_ip_families(spec: dict[str, Any], families: Sequence[str],
                     old_spec: dict[str, Any] | None = None) -> list[FieldError]:
    """Default and check ``ipFamilyPolicy`` and ``ipFamilies`` in place; the API server's errors.

    ``families`` are the cluster's Service IP families, primary first (``--service-cluster-ip-range``).
    """
    if spec.get("type") == "ExternalName":
        return []
    if old_spec is not None and _matching_prefer_dual_stack(spec, old_spec):
        return []
    headless_selectorless = spec.get("clusterIP") == "None" and not spec.get("selector")
    if not spec.get("ipFamilyPolicy"):
        if old_spec is not None and old_spec.get("ipFamilyPolicy"):
            spec["ipFamilyPolicy"] = old_spec["ipFamilyPolicy"]
        elif headless_selectorless:
            spec["ipFamilyPolicy"] = "RequireDualStack"
        else:
            spec["ipFamilyPolicy"] = "SingleStack"
    related = service_cluster_ips_related_fields(spec)
    if related:
        return related
    policy = spec["ipFamilyPolicy"]
    policy_path = Path("spec").child("ipFamilyPolicy")
    errs: list[FieldError] = []
    cluster_ips = [str(ip) for ip in spec.get("clusterIPs") or []]
    ip_families = [str(f) for f in spec.get("ipFamilies") or []]
    if old_spec is not None:
        if policy == "SingleStack":
            # Clear intent: keep the primary, drop the secondary, as long as nothing else changed.
            if cluster_ips == list(old_spec.get("clusterIPs") or []) and len(cluster_ips) > 1:
                cluster_ips = cluster_ips[:1]
                spec["clusterIPs"] = cluster_ips
            if ip_families == list(old_spec.get("ipFamilies") or []) and len(ip_families) > 1:
                ip_families = ip_families[:1]
        else:
            if len(cluster_ips) < len(old_spec.get("clusterIPs") or []):
                errs.append(policy_path.invalid(policy, "must be 'SingleStack' to release the secondary cluster IP"))
            if len(ip_families) < len(old_spec.get("ipFamilies") or []):
                errs.append(policy_path.invalid(policy, "must be 'SingleStack' to release the secondary IP family"))
    if policy == "SingleStack":
        if len(cluster_ips) == 2:
            errs.append(policy_path.invalid(
                policy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
        if len(ip_families) == 2:
            errs.append(policy_path.invalid(
                policy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
    for i, ip in enumerate(cluster_ips):
        if ip == "None":
            break
        family = family_of(ip)
        if i >= len(ip_families):
            if family not in families:
                errs.append(Path("spec").child("clusterIPs").index(i).invalid(
                    go_slice(cluster_ips), f"{family} is not configured on this cluster"))
            else:
                ip_families.append(family)
    spec["ipFamilies"] = ip_families
    if errs:
        return errs
    if headless_selectorless:
        # The one exception: a headless Service without selector may hold both families even on a
        # single-stack cluster (its Endpoints are written by hand, of either family).
        if not ip_families:
            ip_families.append(families[0])
        if len(ip_families) < 2 and policy != "SingleStack":
            ip_families.append(_OTHER[ip_families[0]])
        return []
    if policy == "RequireDualStack" and len(families) < 2:
        errs.append(policy_path.invalid(policy, "this cluster is not configured for dual-stack services"))
    for i, family in enumerate(ip_families):
        if family not in families:
            errs.append(Path("spec").child("ipFamilies").index(i).invalid(family, "not configured on this cluster"))
    if errs:
        return errs
    if not ip_families:
        ip_families.append(families[0])
    if policy != "SingleStack" and len(ip_families) == 1 and len(families) == 2:
        ip_families.append(_OTHER[ip_families[0]])
    return []


def _matching_prefer_dual_stack(spec: dict[str, Any], old_spec: dict[str, Any]) -> bool:
    """``isMatchingPreferDualStackClusterIPFields``: an unchanged PreferDualStack Service is left as it is,
    even when the cluster became (or stopped being) dual-stack since."""
    if old_spec.get("ipFamilyPolicy") != "PreferDualStack" or spec.get("ipFamilyPolicy") != "PreferDualStack":
        return False
    return (list(spec.get("clusterIPs") or []) == list(old_spec.get("clusterIPs") or [])
            and list(spec.get("ipFamilies") or []) == list(old_spec.get("ipFamilies") or []))


# --- the allocation pass ---------------------------------------------------------------


def allocate_services(services: list[tuple[dict[str, Any], Source]], config: ClusterConfig,
                      live: Callable[[dict[str, Any]], bool] = lambda body: False,
                      alloc: Allocator | None = None,
                      old: dict[str, Any] | None = None) -> list[AllocationError]:
    """Fill ipFamilyPolicy, ipFamilies, clusterIP(s), nodePorts, healthCheckNodePort and LB status in place.

    ``live(body)`` marks objects read from a real cluster: what they hold was allocated by
    that cluster, so it is reserved without range checks and never reported. ``alloc``, when
    given, already holds what other Services hold; what these ones claim is added to it (also
    for a Service that is then rejected: the caller releases it). ``old`` is the stored object an
    update replaces (one Service only): its policy is kept when the update leaves it unset.
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
    # Pass 1: families, requested addresses and ports.
    for body, source in ordered:
        spec = body["spec"]
        is_live = live(body)
        old_spec = (old or {}).get("spec") if old is not None else None
        if is_live:
            _infer_families(spec)
        else:
            if spec.get("clusterIP") and not spec.get("clusterIPs"):
                spec["clusterIPs"] = [spec["clusterIP"]]  # NormalizeClusterIPs
            family_errors = init_ip_families(spec, alloc.families, old_spec)
            if family_errors:
                errors.extend(AllocationError(source, subject(body), e) for e in family_errors)
                rejected.add(id(body))
                continue
        if spec.get("type") != "ExternalName" and spec.get("clusterIP") != "None":
            requested = [str(v) for v in spec.get("clusterIPs") or []]
            kept = {_canonical(ip) for ip in (old_spec or {}).get("clusterIPs") or []}
            for ip in requested:
                if not ip or ip == "None":
                    continue
                if is_live or _canonical(ip) in kept:
                    alloc.keep_ip(ip)
                    continue
                detail = alloc.claim_ip(ip)
                if detail:
                    errors.append(AllocationError(source, subject(body), Path("spec").child("clusterIPs")
                                                  .invalid(go_slice(requested), detail)))
                    rejected.add(id(body))
                    break
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
    for body, source in ordered:
        if id(body) in rejected:
            continue
        spec = body["spec"]
        key = f"{body['metadata']['namespace']}/{body['metadata']['name']}"
        svc_type = spec.get("type", "ClusterIP")
        if svc_type == "ExternalName":
            continue
        if spec.get("clusterIP") == "None":
            spec["clusterIPs"] = ["None"]
        else:
            ips = [str(v) for v in spec.get("clusterIPs") or []]
            for i, family in enumerate(spec.get("ipFamilies") or [alloc.primary_family]):
                if i < len(ips) and ips[i]:
                    continue
                ip = alloc.allocate_ip(key if i == 0 else f"{key}/{family}", family)
                if ip is None:
                    # allocIPs answers 500, not 422: no field is wrong, the ranges are full.
                    errors.append(AllocationError(source, subject(body), "Internal error occurred: failed to "
                                                  "allocate a serviceIP: range is full"))
                    rejected.add(id(body))
                    break
                ips[i:i + 1] = [ip]
            if id(body) in rejected:
                continue
            spec["clusterIPs"] = ips
            spec["clusterIP"] = ips[0] if ips else ""
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
                ingress = [{"ip": ip, "ipMode": "VIP"} for ip in
                           (alloc.allocate_lb(f) for f in spec.get("ipFamilies") or [alloc.primary_family]) if ip]
                if ingress:
                    lb["ingress"] = ingress
        else:
            body.setdefault("status", {}).setdefault("loadBalancer", {})
    return errors


def _infer_families(spec: dict[str, Any]) -> None:
    """An object read from a cluster older than dual-stack: its families follow its addresses."""
    if spec.get("type") == "ExternalName" or spec.get("ipFamilies"):
        return
    ips = [ip for ip in spec.get("clusterIPs") or [spec.get("clusterIP")] if ip and ip != "None"]
    families = []
    for ip in ips:
        try:
            families.append(family_of(str(ip)))
        except ValueError:
            continue
    if families:
        spec["ipFamilies"] = families
        spec.setdefault("ipFamilyPolicy", "SingleStack" if len(families) == 1 else "RequireDualStack")
    if spec.get("clusterIP") and not spec.get("clusterIPs"):
        spec["clusterIPs"] = [spec["clusterIP"]]
