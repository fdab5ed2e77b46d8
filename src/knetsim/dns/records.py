"""The cluster's DNS records, answered the way CoreDNS's ``kubernetes`` plugin answers them.

Kubernetes DNS specification 1.1.0 (kubernetes/dns ``docs/specification.md``) says *which*
names exist; CoreDNS ``plugin/kubernetes`` (``kubernetes.go`` ``findServices``,
``parse.go``, ``reverse.go``, ``ns.go``) and ``plugin/backend_lookup.go`` say *how* each
query type is answered. The code below follows the CoreDNS algorithm step by step, so the
corner cases come out the same:

- a query is parsed into ``[_port._proto.|endpoint.]service.namespace.svc.<zone>``; more
  labels than that, or a fourth-from-the-right label that is neither ``svc`` nor ``pod``,
  is NXDOMAIN (``errInvalidRequest``);
- the matches are "services" (host + port + key); the A/AAAA/SRV/CNAME/TXT functions turn
  them into records, and an empty result with no error is NODATA (NOERROR, SOA in the
  authority section), an error is NXDOMAIN with the same SOA;
- names outside the zone go to ``forward . /etc/resolv.conf``: an ``Upstream`` here.

Not modelled: wildcards, ``autopath``, ``multicluster``, zone transfer, the ``cache`` and
``loadbalance`` plugins (answers are sorted, not rotated). See README.md in this package.
"""

from __future__ import annotations

import functools
import ipaddress
import math
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cluster.state import ClusterState
from ..model.objects import Service
from .coredns import coredns_of, kubernetes_zones
from .corefile import NameRewrite, ServerBlock, inline_hosts, name_rewrites

SCHEMA_VERSION = "1.1.0"
SCHEMA_TTL = 28800  # CoreDNS answers dns-version with a fixed TTL, not the plugin's ttl
DEFAULT_TTL = 5  # CoreDNS `kubernetes` plugin default (kubeadm's Corefile sets `ttl 30`)
POD_MODES = ("disabled", "insecure", "verified")
UPSTREAM_MODES = ("nxdomain", "servfail")
QTYPES = ("A", "AAAA", "SRV", "PTR", "CNAME", "TXT", "SOA", "NS", "MX", "ANY")
RCODES = ("NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED")

# The order records of one name are listed in; dig prints them as the server sends them.
_TYPE_ORDER = {t: i for i, t in enumerate(("SOA", "NS", "CNAME", "A", "AAAA", "SRV", "PTR", "TXT"))}


def fqdn(name: str) -> str:
    return name if name.endswith(".") else name + "."


def is_subdomain(name: str, zone: str) -> bool:
    name, zone = fqdn(name.lower()), fqdn(zone.lower())
    return zone == "." or name == zone or name.endswith("." + zone)


def reverse_name(ip: str) -> str:
    """``10.96.0.10`` → ``10.0.96.10.in-addr.arpa.`` (IPv6: nibbles under ``ip6.arpa.``), as ``dig -x``."""
    return ipaddress.ip_address(ip).reverse_pointer + "."


def address_from_reverse(name: str) -> str:
    """The address a full reverse name stands for, or "" (``dnsutil.ExtractAddressFromReverse``)."""
    labels = fqdn(name.lower()).rstrip(".").split(".")
    try:
        if labels[-2:] == ["in-addr", "arpa"] and len(labels) == 6:
            return str(ipaddress.IPv4Address(".".join(reversed(labels[:4]))))
        if labels[-2:] == ["ip6", "arpa"] and len(labels) == 34:
            nibbles = "".join(reversed(labels[:32]))
            return str(ipaddress.IPv6Address(int(nibbles, 16)))
    except ValueError:
        return ""
    return ""


@functools.lru_cache(maxsize=1 << 16)  # the same addresses are typed again for every question of the zone
def _host_type(host: str) -> str:
    """``msg.Service.HostType``: an address is A or AAAA, anything else a CNAME target."""
    try:
        return "A" if ipaddress.ip_address(host).version == 4 else "AAAA"
    except ValueError:
        return "CNAME"


# --- the values every layer above reads ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Record:
    """One resource record; ``data`` is the RDATA in presentation format, as dig prints it."""

    name: str
    type: str
    ttl: int
    data: str

    def text(self) -> str:
        return f"{self.name}\t{self.ttl}\tIN\t{self.type}\t{self.data}"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "ttl": self.ttl, "data": self.data}


@dataclass(frozen=True, slots=True)
class Answer:
    """A DNS response, as the cluster DNS (or the upstream it forwards to) would send it.

    ``source`` is ``cluster`` when CoreDNS's kubernetes plugin answered and ``upstream`` when
    the query left the cluster domain. ``reason`` explains a negative or surprising answer in
    words; it is knetsim's, not part of the DNS message.
    """

    qname: str
    qtype: str
    rcode: str
    answer: tuple[Record, ...] = ()
    authority: tuple[Record, ...] = ()
    additional: tuple[Record, ...] = ()
    authoritative: bool = True
    recursion_available: bool = False
    source: str = "cluster"
    reason: str = ""
    # The answer depends on a name outside the cluster whose records knetsim cannot know
    # (an ExternalName target): the CNAME is real, what it points at is not simulated.
    external: bool = False

    @property
    def nodata(self) -> bool:
        return self.rcode == "NOERROR" and not self.answer

    @property
    def outcome(self) -> str:
        """``answer``, ``external``, ``nodata``, ``nxdomain``, ``servfail`` or ``refused``."""
        if self.rcode != "NOERROR":
            return self.rcode.lower()
        if self.external:
            return "external"
        return "answer" if self.answer else "nodata"

    @property
    def flags(self) -> tuple[str, ...]:
        # Every client knetsim models sets RD, and the server echoes it.
        return ("qr", *(("aa",) if self.authoritative else ()), "rd",
                *(("ra",) if self.recursion_available else ()))

    def values(self, qtype: str | None = None) -> tuple[str, ...]:
        """The RDATA of the answer records of ``qtype`` (default: the question's type)."""
        want = qtype or self.qtype
        return tuple(r.data for r in self.answer if r.type == want)

    def to_dict(self) -> dict[str, Any]:
        return {
            "qname": self.qname,
            "qtype": self.qtype,
            "rcode": self.rcode,
            "outcome": self.outcome,
            "flags": list(self.flags),
            "source": self.source,
            "answer": [r.to_dict() for r in self.answer],
            "authority": [r.to_dict() for r in self.authority],
            "additional": [r.to_dict() for r in self.additional],
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class Upstream:
    """What lies beyond ``forward . /etc/resolv.conf``: the node's nameservers and the internet.

    ``nxdomain``: a reachable internet that knows none of the names except ``hosts``; the
    targets of ExternalName Services are "unknown" (NOERROR, no records, ``external``),
    since knetsim cannot know what they resolve to. This is what the offline resolver uses,
    so ``web.default.`` fails with NXDOMAIN as it does on a real cluster.
    ``servfail``: no upstream is reachable, every forwarded query fails as CoreDNS's
    ``forward`` does (SERVFAIL). This is what the loopback server answers by default.
    """

    mode: str = "nxdomain"
    hosts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # address -> name: the PTR records the outside publishes (cluster/outside.py)
    reverse: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mode not in UPSTREAM_MODES:
            raise ValueError(f"upstream mode {self.mode!r}: supported values: {', '.join(UPSTREAM_MODES)}")

    def answer(self, qname: str, qtype: str, unknown: frozenset[str] = frozenset(), ttl: int = 30) -> Answer:
        name = fqdn(qname)
        key = name.lower()
        if self.mode == "servfail":
            return Answer(name, qtype, "SERVFAIL", authoritative=False, source="upstream",
                          reason="forwarded outside the cluster, and no upstream nameserver answers "
                                 "(CoreDNS forward fails: SERVFAIL)")
        if qtype == "PTR" and self.reverse:
            target = self.reverse.get(address_from_reverse(name))
            if target:
                return Answer(name, qtype, "NOERROR", (Record(name, "PTR", ttl, fqdn(target)),),
                              authoritative=False, recursion_available=True, source="upstream")
        addresses = self.hosts.get(key) or self.hosts.get(key.rstrip("."))
        if addresses:
            records = tuple(Record(name, t, ttl, ip) for ip in addresses if (t := _host_type(ip)) == qtype)
            return Answer(name, qtype, "NOERROR", records, authoritative=False, recursion_available=True,
                          source="upstream", reason="" if records else f"the upstream has no {qtype} for it")
        if key in unknown:
            return Answer(name, qtype, "NOERROR", authoritative=False, recursion_available=True,
                          source="upstream", external=True,
                          reason="a name outside the cluster (an ExternalName target): "
                                 "its records come from the upstream DNS, which knetsim does not simulate")
        return Answer(name, qtype, "NXDOMAIN", authoritative=False, recursion_available=True, source="upstream",
                      reason="forwarded outside the cluster domain; the upstream DNS has no such name")


# --- the cluster's records ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Address:
    ip: str
    hostname: str  # endpoint hostname, else the dashed IP (or the pod name with endpoint_pod_names)


@dataclass(frozen=True, slots=True)
class _Subset:
    """One EndpointSlice as CoreDNS keeps it: its ready addresses × its ports."""

    addresses: tuple[_Address, ...]
    ports: tuple[tuple[str, int, str], ...]  # (name, port, protocol); (("", -1, ""),) when portless


@dataclass(frozen=True, slots=True)
class _Entry:
    """CoreDNS's ``msg.Service``: a host (address or name), a port and the owner it came from."""

    host: str
    port: int
    key: str  # the domain the entry lives at, no trailing dot: SRV targets and SRV extras use it
    ttl: int
    text: str = ""


@dataclass(slots=True)
class _Req:
    port: str = ""
    protocol: str = ""
    endpoint: str = ""
    service: str = ""
    namespace: str = ""
    pod_or_svc: str = ""


class _NameError(Exception):
    """``errNoItems`` / ``errInvalidRequest``: the name does not exist (NXDOMAIN)."""


def _dashed(ip: str) -> str:
    return ip.replace(".", "-") if "." in ip else ip.replace(":", "-")


class ClusterDNS:
    """The answers of the cluster DNS (kube-dns: CoreDNS with the kubernetes plugin) for a ClusterState.

    Built once per state; ``query`` is pure and cheap. ``pods`` is the plugin's ``pods``
    option (default ``disabled``, so ``1-2-3-4.ns.pod.<zone>`` is NXDOMAIN; kubeadm's
    Corefile says ``insecure``), ``endpoint_pod_names`` its option of that name.
    """

    def __init__(self, state: ClusterState, *, ttl: int | None = None, pods: str | None = None,
                 upstream: Upstream | None = None, endpoint_pod_names: bool = False) -> None:
        # The DNS workload as its objects say (coredns Deployment, kube-dns, the Corefile ConfigMap).
        self.coredns = coredns_of(state)
        self._plans: dict[int, tuple[tuple[NameRewrite, ...], dict[str, tuple[str, ...]], tuple[str, ...]]] = {}
        corefile = self.coredns.corefile
        self._block = None if corefile is None else corefile.block_for(state.config.cluster_domain)
        # Unset options come from the Corefile ConfigMap when the input has one, else the cluster config,
        # which follows kind's Corefile (ttl 30, pods insecure).
        if self.coredns.explicit and self._block is not None and self._block.plugin("kubernetes") is not None:
            options = self._block.plugin("kubernetes")
            assert options is not None
            ttl_option, pods_option = options.sub("ttl"), options.sub("pods")
            if ttl is None and ttl_option is not None:
                ttl = int(ttl_option.args[0])
            if pods is None and pods_option is not None:
                pods = pods_option.args[0]
        ttl = state.config.dns_ttl if ttl is None else ttl
        pods = state.config.dns_pods if pods is None else pods
        if pods not in POD_MODES:
            raise ValueError(f"pods {pods!r}: supported values: {', '.join(POD_MODES)}")
        if not 0 <= ttl <= 3600:
            raise ValueError(f"ttl {ttl}: must be between 0 and 3600")
        self.state = state
        self.ttl = ttl
        self.pods = pods
        # The world beyond `forward . /etc/resolv.conf`: the cluster config's outside (cluster/outside.py).
        self.upstream = upstream or Upstream(hosts=state.config.outside.dns_hosts(),
                                             reverse=state.config.outside.reverse())
        self.endpoint_pod_names = endpoint_pod_names
        self.zone = fqdn(state.config.cluster_domain.lower())
        self._namespaces = {n.lower() for n in state.namespaces}
        self._svc_index: dict[tuple[str, str], Service] = {(s.namespace, s.name): s for s in state.services.values()}
        self._subsets: dict[tuple[str, str], list[_Subset]] = {}
        self._ep_by_ip: dict[str, list[tuple[str, str]]] = {}  # ip -> [(endpoint domain, service key)]
        self._svc_by_ip: dict[str, list[Service]] = {}
        for key in sorted(self._svc_index):
            svc = self._svc_index[key]
            for ip in (*_cluster_ips(svc), *svc.external_ips):
                self._svc_by_ip.setdefault(ip, []).append(svc)
            subsets = self._build_subsets(svc)
            self._subsets[key] = subsets
            for subset in subsets:
                for addr in subset.addresses:
                    domain = f"{addr.hostname}.{svc.name}.{svc.namespace}.svc.{self.zone}"
                    self._ep_by_ip.setdefault(addr.ip, []).append((domain, svc.key))
        self.external_targets = frozenset(
            fqdn(s.external_name.lower()) for s in self._svc_index.values()
            if s.type == "ExternalName" and s.external_name and _host_type(s.external_name) == "CNAME"
            and not is_subdomain(s.external_name, self.zone)
        )
        self.serial = self._serial()

    # --- bookkeeping ---------------------------------------------------------------

    def _build_subsets(self, svc: Service) -> list[_Subset]:
        out = []
        for es in self.state.slices_for(svc):
            if es.address_type not in ("IPv4", "IPv6"):
                continue
            # The EndpointSlice controller already marks every endpoint ready when the Service
            # sets publishNotReadyAddresses; honouring the flag here too keeps hand-written
            # slices consistent with what the spec promises.
            addresses = tuple(
                _Address(ip, self._endpoint_hostname(ep.hostname, ep.target_ref, ip))
                for ep in es.endpoints
                if ep.ready is not False or svc.publish_not_ready_addresses
                for ip in ep.addresses
            )
            ports = tuple((p.name, int(p.port) if p.port is not None else -1, p.protocol) for p in es.ports) \
                or (("", -1, ""),)  # CoreDNS's sentinel for a portless slice: A records, no SRV
            out.append(_Subset(addresses, ports))
        return out

    def _endpoint_hostname(self, hostname: str | None, target_ref: tuple[str, str, str] | None, ip: str) -> str:
        if hostname:
            return hostname
        if self.endpoint_pod_names and target_ref:
            return target_ref[2]
        return _dashed(ip)

    def _serial(self) -> int:
        # CoreDNS uses the time of the last API change; a checksum of what the records are
        # built from changes exactly when they may, and is the same on every run.
        lines = []
        for key in sorted(self._svc_index):
            svc = self._svc_index[key]
            lines.append(f"{key}|{svc.type}|{','.join(_cluster_ips(svc))}|{svc.external_name}|"
                         f"{','.join(f'{p.name}/{p.protocol}/{p.port}' for p in svc.ports)}")
            for subset in self._subsets[key]:
                lines.append(";".join(f"{a.ip}={a.hostname}" for a in subset.addresses) + "|" + repr(subset.ports))
        return zlib.crc32("\n".join(lines).encode()) or 1

    def nameserver_records(self) -> list[Record]:
        """``nsAddrs``: the address records of the Services in front of the CoreDNS pods."""
        out = []
        coredns_ips = {p.pod_ip for p in self.state.pods.values() if p.labels.get("k8s-app") == "kube-dns"}
        for key in sorted(self._svc_index):
            svc = self._svc_index[key]
            subsets = self._subsets[key]
            if not any(a.ip in coredns_ips for s in subsets for a in s.addresses):
                continue
            name = f"{svc.name}.{svc.namespace}.svc.{self.zone}"
            if svc.headless:
                for s in subsets:
                    out += [Record(f"{a.hostname}.{name}", _host_type(a.ip), self.ttl, a.ip) for a in s.addresses]
            else:
                out += [Record(name, _host_type(ip), self.ttl, ip) for ip in _cluster_ips(svc)]
        if not out:
            out = [Record("ns.dns." + self.zone, "A", self.ttl, self.state.config.dns_service_ip)]
        return out

    def soa(self, zone: str | None = None) -> Record:
        zone = zone or self.zone
        return Record(zone, "SOA", min(300, self.ttl),
                      f"ns.dns.{zone} hostmaster.{zone} {self.serial} 7200 1800 86400 {self.ttl}")

    # --- the query --------------------------------------------------------------------

    @property
    def serving(self) -> bool:
        """Does CoreDNS answer at all (pods Ready, Corefile loaded)? When not, every query times out."""
        return self.coredns.serving

    def query(self, qname: str, qtype: str = "A") -> Answer:
        """The response kube-dns sends for ``qname``/``qtype`` (names are case-insensitive).

        The Corefile decides the route: the server block of the longest matching zone, then its
        ``rewrite name`` rules, inline ``hosts``, the ``kubernetes`` zones and ``forward``."""
        qtype = qtype.upper()
        name = fqdn(qname)
        if name.lower() != "." and ".." in name:
            return Answer(name, qtype, "FORMERR", authoritative=False, reason="empty label in the name")
        corefile = self.coredns.corefile
        if corefile is None:
            return Answer(name, qtype, "SERVFAIL", authoritative=False, reason=self.coredns.problems[0].message)
        block = corefile.block_for(name)
        if block is None:
            return Answer(name, qtype, "REFUSED", authoritative=False,
                          reason="no server block of the Corefile serves this zone")
        for rule in self._plan(block)[0]:
            rewritten = rule.apply(name)
            if rewritten is not None and rewritten.lower() != name.lower():
                answer = self._route(block, rewritten, qtype)
                return _renamed(answer, name, rewritten)
        return self._route(block, name, qtype)

    def _plan(self, block: ServerBlock) -> tuple[tuple[NameRewrite, ...], dict[str, tuple[str, ...]], tuple[str, ...]]:
        """A server block's rewrite rules, inline hosts and kubernetes zones, read once per ClusterDNS."""
        plan = self._plans.get(id(block))
        if plan is None:
            hosts = block.plugin("hosts")
            plan = self._plans[id(block)] = (name_rewrites(block), inline_hosts(hosts) if hosts else {},
                                             kubernetes_zones(block))
        return plan

    def _route(self, block: ServerBlock, name: str, qtype: str) -> Answer:
        hosts = block.plugin("hosts")
        _rules, entries, zones = self._plan(block)
        if hosts is not None:
            found = entries.get(name.lower())
            if found and qtype in ("A", "AAAA"):
                records = tuple(Record(name, qtype, 3600, ip) for ip in found if _host_type(ip) == qtype)
                return Answer(name, qtype, "NOERROR", records, reason="" if records else
                              f"the hosts plugin lists {name} without a {qtype} address")
            if found is None and hosts.sub("fallthrough") is None and qtype in ("A", "AAAA", "PTR"):
                # plugin/hosts: no record and no fallthrough is SERVFAIL (a hosts file has no SOA for NXDOMAIN).
                return Answer(name, qtype, "SERVFAIL", authoritative=False,
                              reason="the Corefile's hosts plugin does not list this name and has no fallthrough")
        if is_subdomain(name, self.zone) and any(is_subdomain(self.zone, z) for z in zones):
            return self._zone_answer(name, qtype)
        if qtype == "PTR" and (is_subdomain(name, "in-addr.arpa.") or is_subdomain(name, "ip6.arpa.")) and any(
                z in ("in-addr.arpa.", "ip6.arpa.", ".") for z in zones):
            ip = address_from_reverse(name)
            domains = self._reverse(ip) if ip else []
            if domains:
                return Answer(name, qtype, "NOERROR", tuple(Record(name, "PTR", self.ttl, d) for d in domains))
            # kubeadm's Corefile: `kubernetes cluster.local in-addr.arpa ip6.arpa { fallthrough in-addr.arpa
            # ip6.arpa }`, so an address the cluster does not know goes on to `forward`.
        if block.plugin("forward") is None:
            return Answer(name, qtype, "SERVFAIL", authoritative=False,
                          reason=f"the Corefile's server block for {block.zones[0]} has no plugin that answers "
                                 "this name (no forward)")
        failure = self.coredns.forward_failure(block.zones[0])
        if failure:
            return Answer(name, qtype, "SERVFAIL", authoritative=False, source="upstream", reason=failure)
        return self.upstream.answer(name, qtype, self.external_targets)

    def _zone_answer(self, name: str, qtype: str) -> Answer:
        notes: list[str] = []
        records: list[Record] = []
        extra: list[Record] = []
        external = False
        try:
            if qtype == "A" or qtype == "AAAA":
                records, external = self._address(name, qtype, [], notes)
            elif qtype == "SRV":
                records, extra = self._srv(name, notes)
            elif qtype == "CNAME":
                entries = self._services(name, qtype, notes)
                if entries and _host_type(entries[0].host) == "CNAME":
                    records = [Record(name, "CNAME", entries[0].ttl, fqdn(entries[0].host))]
            elif qtype == "TXT":
                records = [Record(name, "TXT", e.ttl, f'"{e.text}"') for e in self._services(name, qtype, notes)]
            elif qtype == "PTR":
                self._records(name.lower(), notes)
            elif qtype == "SOA" and name.lower() == self.zone:
                records = [self.soa(name[len(name) - len(self.zone):])]
            elif qtype == "NS" and name.lower() == self.zone:
                targets = self.nameserver_records()
                seen: list[str] = []
                for rr in targets:
                    if rr.name not in seen:
                        seen.append(rr.name)
                records = [Record(name, "NS", self.ttl, fqdn(t)) for t in seen]
                extra = [Record(fqdn(r.name), r.type, r.ttl, r.data) for r in targets]
            else:
                # Do a fake A lookup, so NODATA and NXDOMAIN come out right (handler.go).
                self._address(name, "A", [], notes)
        except _NameError as exc:
            return Answer(name, qtype, "NXDOMAIN", authority=(self.soa(),), reason=str(exc))
        if not records:
            if not notes:
                notes.append(f"the name exists but has no {qtype} record")
            return Answer(name, qtype, "NOERROR", authority=(self.soa(),), reason="; ".join(notes))
        return Answer(name, qtype, "NOERROR", tuple(records), additional=tuple(extra),
                      reason="; ".join(notes), external=external)

    def _address(self, name: str, qtype: str, previous: list[Record], notes: list[str]) -> tuple[list[Record], bool]:
        """``plugin.A`` / ``plugin.AAAA``, with their CNAME chase for ExternalName Services."""
        out: list[Record] = []
        external = False
        seen: set[str] = set()
        for entry in self._services(name, qtype, notes):
            kind = _host_type(entry.host)
            if kind == "CNAME":
                target = fqdn(entry.host)
                if target.lower() == name.lower():
                    continue  # x CNAME x is a direct loop
                cname = Record(name, "CNAME", entry.ttl, target)
                if len(previous) > 7 or any(p.data.lower() == target.lower() for p in previous):
                    continue
                if is_subdomain(target, self.zone):
                    try:
                        chained, ext = self._address(target, qtype, [*previous, cname], notes)
                    except _NameError as exc:
                        notes.append(f"CNAME target {target} does not exist: {exc}")
                        continue
                    if chained:
                        out += [cname, *chained]
                        external = external or ext
                    continue
                # CoreDNS asks its own upstream (the `forward` plugin) for the target and adds
                # whatever comes back after the CNAME — nothing, when the upstream fails.
                up = self.upstream.answer(target, qtype, self.external_targets)
                out += [cname, *up.answer]
                external = external or up.external
                if up.reason:
                    notes.append(f"{target}: {up.reason}")
                continue
            if kind == qtype and entry.host not in seen:
                seen.add(entry.host)
                out.append(Record(name, qtype, entry.ttl, entry.host))
        if not out and qtype in ("A", "AAAA") and not notes:
            other = "AAAA" if qtype == "A" else "A"
            if any(_host_type(e.host) == other for e in self._services(name, qtype, [])):
                notes.append(f"only {other} addresses exist for this name")
        return _sorted_addresses(out), external

    def _srv(self, name: str, notes: list[str]) -> tuple[list[Record], list[Record]]:
        """``plugin.SRV``: priority 0, weight 100/N (N counts every match, portless ones too)."""
        entries = self._services(name, "SRV", notes)
        records: list[Record] = []
        extra: list[Record] = []
        dup: set[tuple[str, str, int]] = set()
        total = 100 * len(entries)
        for entry in entries:
            if entry.port == -1:
                continue
            weight = max(1, math.floor(100.0 / total * 100))
            target = fqdn(entry.key)
            if (target, "", entry.port) not in dup:
                dup.add((target, "", entry.port))
                records.append(Record(name, "SRV", entry.ttl, f"0 {weight} {entry.port} {target}"))
            if (target, entry.host, 0) not in dup:
                dup.add((target, entry.host, 0))
                extra.append(Record(target, _host_type(entry.host), entry.ttl, entry.host))
        if entries and not records:
            notes.append("no named port matches (a portless headless Service has A records but no SRV)")
        return (sorted(records, key=lambda r: (r.data.split()[3], int(r.data.split()[2]))),
                sorted(extra, key=_record_sort_key))

    def _services(self, name: str, qtype: str, notes: list[str]) -> list[_Entry]:
        """``Kubernetes.Services``: the TXT and NS special cases, else ``Records``."""
        lname = name.lower()
        base = lname[: -len(self.zone)].rstrip(".")
        if qtype == "TXT":
            if base == "dns-version":
                return [_Entry("", 0, base, SCHEMA_TTL, SCHEMA_VERSION)]
            # CoreDNS answers every other TXT question in the zone with NODATA, existing or not.
            notes.append("the cluster DNS has no TXT records except dns-version")
            return []
        if lname == "ns.dns." + self.zone:
            return [_Entry(r.data, 0, base, self.ttl) for r in self.nameserver_records()]
        entries = self._records(lname, notes)
        if qtype == "SRV":
            entries = [e for e in entries if _host_type(e.host) != "CNAME"]
            if not entries and not notes:
                notes.append("an ExternalName Service has no SRV records")
        return entries

    def _records(self, lname: str, notes: list[str]) -> list[_Entry]:
        req = self._parse(lname)
        if not req.pod_or_svc:
            notes.append("a name of the cluster domain's own structure, with no records of its own")
            return []
        if req.namespace not in self._namespaces:
            raise _NameError(f"namespace {req.namespace!r} does not exist")
        if req.pod_or_svc == "pod":
            return self._find_pods(req)
        return self._find_services(req, notes)

    def _parse(self, lname: str) -> _Req:
        """``parseRequest``: ``[_port._protocol.|endpoint.]service.namespace.(svc|pod).<zone>``."""
        req = _Req()
        base = lname[: -len(self.zone)].rstrip(".")
        if base in ("", "svc", "pod"):
            return req
        segs = base.split(".")
        req.pod_or_svc = segs.pop()
        if req.pod_or_svc not in ("svc", "pod"):
            raise _NameError(f"not a Service or Pod name: expected <service>.<namespace>.svc.{self.zone} "
                             f"(the label before {self.zone} is {req.pod_or_svc!r}, not svc)")
        if not segs:
            return req
        req.namespace = segs.pop()
        if not segs:
            return req
        req.service = segs.pop()
        if len(segs) == 1:
            req.endpoint = segs[0]
        elif len(segs) == 2:
            req.port, req.protocol = segs[0].removeprefix("_"), segs[1].removeprefix("_")
        elif segs:
            raise _NameError(f"too many labels before {req.service}.{req.namespace}.svc.{self.zone}")
        return req

    def _find_services(self, req: _Req, notes: list[str]) -> list[_Entry]:
        if not req.service:
            notes.append(f"namespace {req.namespace} exists; the name itself has no records")
            return []
        svc = self._svc_index.get((req.namespace, req.service))
        if svc is None:
            raise _NameError(f"no Service {req.service!r} in namespace {req.namespace!r}")
        domain = f"{svc.name}.{svc.namespace}.svc.{self.zone}".rstrip(".")
        if svc.type == "ExternalName":
            if req.endpoint:
                raise _NameError(f"{svc.key} is an ExternalName Service: it has no endpoint names")
            if _host_type(svc.external_name) != "CNAME":
                raise _NameError(f"{svc.key}: externalName {svc.external_name!r} is an address, "
                                 "which CoreDNS does not serve")
            return [_Entry(svc.external_name, 0, domain, self.ttl)]
        entries: list[_Entry] = []
        if svc.headless or req.endpoint:
            for subset in self._subsets.get((svc.namespace, svc.name), []):
                for addr in subset.addresses:
                    if req.endpoint and req.endpoint != addr.hostname.lower():
                        continue
                    for pname, pnum, proto in subset.ports:
                        if _port_matches(req, pname, proto):
                            entries.append(_Entry(addr.ip, pnum, f"{addr.hostname}.{domain}", self.ttl))
            if not entries:
                if req.endpoint:
                    raise _NameError(f"no ready endpoint named {req.endpoint!r} behind Service {svc.key}")
                if req.port or req.protocol:
                    raise _NameError(f"Service {svc.key} has no port named {req.port!r} with protocol "
                                     f"{req.protocol.upper()!r}")
                raise _NameError(f"headless Service {svc.key} has no ready endpoints")
            return entries
        matched = False
        for port in svc.ports:
            if _port_matches(req, port.name, port.protocol):
                matched = True
                entries += [_Entry(ip, port.port, domain, self.ttl) for ip in _cluster_ips(svc)]
        if not matched:
            if req.port or req.protocol:
                raise _NameError(f"Service {svc.key} has no port named {req.port!r} with protocol "
                                 f"{req.protocol.upper()!r}")
            raise _NameError(f"Service {svc.key} has no ports")
        return entries

    def _find_pods(self, req: _Req) -> list[_Entry]:
        if self.pods == "disabled":
            raise _NameError("pod A records are disabled (CoreDNS `pods disabled`, the plugin default)")
        if not req.service:
            return []
        name = req.service
        dashed_v4 = name.count("-") == 3 and "--" not in name
        ip_text = name.replace("-", "." if dashed_v4 else ":")
        key = f"{name}.{req.namespace}.pod.{self.zone}".rstrip(".")
        try:
            ip = str(ipaddress.ip_address(ip_text))
        except ValueError:
            raise _NameError(f"{name!r} is not a dashed pod IP") from None
        if self.pods == "insecure":
            return [_Entry(ip, 0, key, self.ttl)]
        found = [p for p in self.state.pods_in(req.namespace) if p.pod_ip == ip and not p.host_network]
        if not found:
            raise _NameError(f"no pod with IP {ip} in namespace {req.namespace!r} (`pods verified`)")
        return [_Entry(ip, 0, key, self.ttl)]

    def _reverse(self, ip: str) -> list[str]:
        """``serviceRecordForIP``: a Service address first, else every endpoint with that address."""
        services = self._svc_by_ip.get(ip)
        if services:
            svc = services[0]
            return [f"{svc.name}.{svc.namespace}.svc.{self.zone}"]
        return sorted({domain for domain, _ in self._ep_by_ip.get(ip, [])})

    # --- the whole record set ------------------------------------------------------

    def zone_records(self, *, reverse: bool = True, addressed: bool = True) -> tuple[Record, ...]:
        """Every record the cluster DNS serves, sorted: what the spec lists, answered by ``query``
        (``reverse=False``: but the PTR records; ``addressed=False``: but the names of endpoints that have no
        hostname of their own, ``10-244-1-2.web.shop.svc...``)."""
        z = self.zone
        questions: list[tuple[str, str]] = [(f"dns-version.{z}", "TXT")]
        for key in sorted(self._svc_index):
            svc = self._svc_index[key]
            name = f"{svc.name}.{svc.namespace}.svc.{z}"
            if svc.type == "ExternalName":
                questions.append((name, "CNAME"))
                continue
            questions += [(name, "A"), (name, "AAAA")]
            named = sorted({(p.name, p.protocol.lower()) for p in svc.ports if p.name})
            if svc.headless:
                named = sorted({(n, proto.lower()) for s in self._subsets[key] for n, _, proto in s.ports if n})
            questions += [(f"_{port}._{proto}.{name}", "SRV") for port, proto in named]
            if reverse:
                for ip in (*_cluster_ips(svc), *svc.external_ips):
                    questions.append((reverse_name(ip), "PTR"))
            for subset in self._subsets[key]:
                for addr in subset.addresses:
                    if addressed or addr.hostname != _dashed(addr.ip):
                        questions.append((f"{addr.hostname}.{name}", _host_type(addr.ip)))
                    if reverse:
                        questions.append((reverse_name(addr.ip), "PTR"))
        if self.pods == "verified":
            for pod in sorted(self.state.pods.values(), key=lambda p: (p.namespace, p.name)):
                if pod.pod_ip and not pod.host_network:
                    questions.append((f"{_dashed(pod.pod_ip)}.{pod.namespace}.pod.{z}", _host_type(pod.pod_ip)))
        out: set[Record] = set()
        for qname, qtype in questions:
            ans = self.query(qname, qtype)
            out.update(r for r in ans.answer if r.type == qtype and r.name.lower() == qname.lower())
        return tuple(sorted(out, key=_record_sort_key))


def _renamed(answer: Answer, asked: str, rewritten: str) -> Answer:
    """An answer for ``rewritten`` given back under the name the client asked (the ``rewrite`` plugin reverts
    the question, and the answer records of the rewritten name, so the client accepts the reply)."""
    def back(r: Record) -> Record:
        return Record(asked, r.type, r.ttl, r.data) if r.name.lower() == rewritten.lower() else r
    note = f"rewritten to {rewritten} by the Corefile's rewrite plugin"
    return Answer(asked, answer.qtype, answer.rcode, tuple(back(r) for r in answer.answer), answer.authority,
                  answer.additional, answer.authoritative, answer.recursion_available, answer.source,
                  f"{note}; {answer.reason}" if answer.reason else note, answer.external)


def _cluster_ips(svc: Service) -> tuple[str, ...]:
    ips = svc.cluster_ips or ((svc.cluster_ip,) if svc.cluster_ip else ())
    return tuple(ip for ip in ips if ip and ip != "None")


def _port_matches(req: _Req, name: str, protocol: str) -> bool:
    """``matchPortAndProtocol``: an empty request part is a wildcard, comparison is case-insensitive."""
    return (not req.port or req.port == name.lower()) and (not req.protocol or req.protocol == protocol.lower())


@functools.lru_cache(maxsize=1 << 16)
def _ip_key(text: str) -> tuple[int, int, str]:
    try:
        ip = ipaddress.ip_address(text)
        return (ip.version, int(ip), "")
    except ValueError:
        return (9, 0, text)


def _sorted_addresses(records: list[Record]) -> list[Record]:
    """Address records sorted by address, each after the CNAME chain that leads to it."""
    if any(r.type == "CNAME" for r in records):
        return records  # a CNAME must come before its target's records (test.CNAMEOrder)
    return sorted(records, key=lambda r: _ip_key(r.data))


def _record_sort_key(r: Record) -> tuple[Any, ...]:
    return (r.name.lower(), _TYPE_ORDER.get(r.type, 99), _ip_key(r.data) if r.type in ("A", "AAAA") else r.data)


def zone_records(state: ClusterState, *, ttl: int | None = None, pods: str | None = None,
                 reverse: bool = True, addressed: bool = True) -> tuple[Record, ...]:
    """The record set of ``state``'s cluster DNS, sorted by name and type (``ClusterDNS.zone_records``)."""
    return ClusterDNS(state, ttl=ttl, pods=pods).zone_records(reverse=reverse, addressed=addressed)


def lookup(state: ClusterState, qname: str, qtype: str = "A", *, ttl: int | None = None, pods: str | None = None,
           upstream: Upstream | None = None) -> Answer:
    """One question put straight to the cluster DNS (no search list): ``dig @10.96.0.10 qname qtype``."""
    return ClusterDNS(state, ttl=ttl, pods=pods, upstream=upstream).query(qname, qtype)


def answer_lines(answer: Answer, sections: Sequence[str] = ("answer", "authority", "additional")) -> list[str]:
    """dig's section layout of an answer (``;; ANSWER SECTION:`` and the record lines)."""
    lines: list[str] = []
    titles = {"answer": "ANSWER", "authority": "AUTHORITY", "additional": "ADDITIONAL"}
    for section in sections:
        rows: Iterable[Record] = getattr(answer, section)
        rows = list(rows)
        if rows:
            lines.append(f";; {titles[section]} SECTION:")
            lines += [r.text() for r in rows]
            lines.append("")
    return lines
