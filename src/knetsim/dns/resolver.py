"""Name resolution as a given pod does it: its resolv.conf, the queries tried, which one answered.

The resolv.conf is the kubelet's (``pkg/kubelet/network/dns/dns.go`` ``GetPodDNS``):

- ``ClusterFirst``: ``nameserver`` = the cluster DNS address, ``search <ns>.svc.<domain>
  svc.<domain> <domain>`` + the node's search domains (duplicates dropped), ``options ndots:5``;
- ``ClusterFirst`` on ``hostNetwork`` falls back to ``Default`` unless the policy is
  ``ClusterFirstWithHostNet``;
- ``Default``: the node's resolv.conf (``upstreamNameservers``/``hostSearch`` of the cluster
  config, no options);
- ``None``: empty, everything from ``dnsConfig``;
- ``dnsConfig`` is then merged in (nameservers and searches appended without duplicates,
  options merged by name, the pod's value winning), and the limits applied (3 nameservers,
  32 search domains of at most 253 characters, 2048 characters in all).

The order of queries is the C library's. Three clients are modelled, because they differ:

- ``glibc`` (``res_nsearch``): a name with at least ``ndots`` dots is tried as typed first,
  then under each search domain, then as typed if not tried yet; NXDOMAIN, NODATA and
  SERVFAIL move on to the next candidate, a timeout stops the search.
- ``musl`` (``name_from_dns_search``): a name with at least ``ndots`` dots is tried as typed
  *only*; otherwise the search domains, then as typed; only NXDOMAIN moves on.
- ``busybox-nslookup`` (busybox 1.30–1.37 ``add_query_with_search``): the search domains
  are appended only to a name *without any dot* (and then the bare name is never sent); a
  name with a dot is sent exactly as typed. So ``nslookup web.default`` fails with NXDOMAIN
  while ``wget http://web.default`` (libc) resolves it.

The resolver decides no NetworkPolicy: every query says which nameserver address and port
it went to, and the caller may pass ``reachable(ip, port, protocol)`` to say which of them
answer at all (a query no nameserver answers times out, as the DESIGN's ``dns-timeout``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..cluster.state import ClusterState
from ..model.names import is_ip as _is_ip
from ..model.objects import Pod
from .records import Answer, ClusterDNS, fqdn, reverse_name

MODES = ("glibc", "musl", "busybox-nslookup")
DNS_PORT = 53

# pkg/apis/core/validation: MaxDNSNameservers, MaxDNSSearchPaths(Expanded), MaxDNSSearchListChars(Expanded)
MAX_NAMESERVERS = 3
MAX_SEARCH_PATHS = 32
MAX_SEARCH_CHARS = 2048
MAX_DOMAIN_LENGTH = 253  # DNS1123SubdomainMaxLength: longer search paths abort glibc 2.28, kubelet drops them
MAX_NDOTS = 15  # glibc RES_MAXNDOTS; musl caps it the same way

Reachable = Callable[[str, int, str], bool]


# --- resolv.conf ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResolvConf:
    """The /etc/resolv.conf the kubelet gives a pod."""

    nameservers: tuple[str, ...]
    search: tuple[str, ...]
    options: tuple[str, ...]
    dns_policy: str
    effective_policy: str  # ClusterFirst, Default or None: what the kubelet actually applied
    notes: tuple[str, ...] = ()

    @property
    def ndots(self) -> int:
        """The last ``ndots:n`` option wins; resolv.conf(5) defaults to 1 and caps at 15."""
        value = 1
        for option in self.options:
            name, _, arg = option.partition(":")
            if name == "ndots" and arg.isdigit():
                value = min(int(arg), MAX_NDOTS)
        return value

    def text(self) -> str:
        # containerd writes the file in this order; `kubectl exec cat /etc/resolv.conf` shows it.
        lines = []
        if self.search:
            lines.append("search " + " ".join(self.search))
        lines += [f"nameserver {ns}" for ns in self.nameservers]
        if self.options:
            lines.append("options " + " ".join(self.options))
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "dnsPolicy": self.dns_policy,
            "effectivePolicy": self.effective_policy,
            "nameservers": list(self.nameservers),
            "search": list(self.search),
            "options": list(self.options),
            "ndots": self.ndots,
            "notes": list(self.notes),
            "text": self.text(),
        }


def _unique(items: Sequence[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def resolv_conf(state: ClusterState, pod: Pod) -> ResolvConf:
    """``GetPodDNS`` for ``pod`` in ``state``'s cluster."""
    config = state.config
    policy = pod.dns_policy or "ClusterFirst"
    notes: list[str] = []
    host_nameservers = list(config.upstream_nameservers)
    host_search = [s.rstrip(".") for s in config.host_search if s not in (".", "")]
    if policy == "None":
        effective = "None"
        nameservers: list[str] = []
        search: list[str] = []
        options: list[str] = []
    elif policy == "ClusterFirstWithHostNet" or (policy == "ClusterFirst" and not pod.host_network):
        effective = "ClusterFirst"
        domain = config.cluster_domain
        nameservers = [config.dns_service_ip]
        search = _unique([f"{pod.namespace}.svc.{domain}", f"svc.{domain}", domain, *host_search])
        options = ["ndots:5"]
    else:
        effective = "Default"
        if policy == "ClusterFirst":
            notes.append("hostNetwork pod with dnsPolicy ClusterFirst: the kubelet falls back to Default "
                         "(the node's resolv.conf); use ClusterFirstWithHostNet for cluster names")
        nameservers, search, options = host_nameservers, host_search, []
    dns_config = pod.dns_config if isinstance(pod.dns_config, Mapping) else None
    if dns_config:
        nameservers = _unique([*nameservers, *(str(n) for n in dns_config.get("nameservers") or ())])
        search = _unique([*search, *(str(s) for s in dns_config.get("searches") or ())])
        options = _merge_options(options, dns_config.get("options") or ())
    if len(nameservers) > MAX_NAMESERVERS:
        nameservers = nameservers[:MAX_NAMESERVERS]
        notes.append("Nameserver limits were exceeded, some nameservers have been omitted, "
                     f"the applied nameserver line is: {' '.join(nameservers)}")
    search, cut = _fit_search(search)
    if cut:
        notes.append("Search Line limits were exceeded, some search paths have been omitted, "
                      f"the applied search line is: {' '.join(search)}")
    if not nameservers:
        notes.append("no nameserver: the C library falls back to 127.0.0.1, where nothing answers in a pod")
    return ResolvConf(tuple(nameservers), tuple(search), tuple(options), policy, effective, tuple(notes))


def _merge_options(existing: Sequence[str], extra: Sequence[Any]) -> list[str]:
    """``mergeDNSOptions``: the pod's option replaces one of the same name.

    The kubelet rebuilds the list from a Go map, so its order is random; knetsim keeps the
    first appearance of each name, which is one of the orders a real pod can get.
    """
    merged: dict[str, str] = {}
    for option in existing:
        name, _, value = option.partition(":")
        merged[name] = value
    for option in extra:
        if isinstance(option, Mapping) and option.get("name"):
            value = option.get("value")
            merged[str(option["name"])] = "" if value is None else str(value)
    return [f"{name}:{value}" if value else name for name, value in merged.items()]


def _fit_search(search: list[str]) -> tuple[list[str], bool]:
    """``formDNSSearchFitsLimits``."""
    cut = False
    if len(search) > MAX_SEARCH_PATHS:
        search, cut = search[:MAX_SEARCH_PATHS], True
    kept = [s for s in search if len(s) <= MAX_DOMAIN_LENGTH]
    cut = cut or len(kept) != len(search)
    while kept and len(" ".join(kept)) > MAX_SEARCH_CHARS:
        kept.pop()
        cut = True
    return kept, cut


def cluster_nameservers(state: ClusterState) -> frozenset[str]:
    """Addresses that answer with the cluster's records: kube-dns and the CoreDNS pods behind it."""
    addresses = {state.config.dns_service_ip}
    coredns = [p for p in state.pods.values() if p.labels.get("k8s-app") == "kube-dns"]
    addresses.update(p.pod_ip for p in coredns if p.pod_ip)
    for svc in state.services.values():
        if svc.selector and svc.selector.get("k8s-app") == "kube-dns":
            addresses.update(ip for ip in (*svc.cluster_ips, svc.cluster_ip) if ip and ip != "None")
    return frozenset(addresses)


# --- the order of queries ----------------------------------------------------------------


def query_names(name: str, search: Sequence[str], ndots: int, mode: str = "glibc") -> tuple[str, ...]:
    """Every name ``mode``'s client would ask for, in order, if none of them answered."""
    _check_mode(mode)
    if mode == "busybox-nslookup":
        if "." in name or not search:
            return (fqdn(name),)
        return tuple(fqdn(f"{name}.{d}") for d in search if d not in ("", "."))
    if name.endswith("."):
        return (name,)
    dots = name.count(".")
    if mode == "musl":
        if dots >= ndots:
            return (fqdn(name),)
        return (*(_candidate(name, d) for d in search), fqdn(name))
    out: list[str] = []
    if dots >= ndots:
        out.append(fqdn(name))
    out += [_candidate(name, d) for d in search]
    root_on_list = any(not d.strip(".") for d in search)
    if dots < ndots and not root_on_list:
        out.append(fqdn(name))
    return tuple(out)


def _candidate(name: str, domain: str) -> str:
    domain = domain.strip(".")
    return fqdn(f"{name}.{domain}" if domain else name)


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"resolver {mode!r}: supported values: {', '.join(MODES)}")


def explain_order(name: str, search: Sequence[str], ndots: int, mode: str) -> str:
    if mode == "busybox-nslookup":
        if not search:
            return f'no search list: busybox nslookup sends "{name}" as typed'
        if "." in name:
            return (f'busybox nslookup appends the search domains only to a name without a dot; "{name}" has one, '
                    "so it is sent as typed (a libc resolver would try the search list)")
        return f'"{name}" has no dot: busybox nslookup sends it under every search domain, never bare'
    if name.endswith("."):
        return f'"{name}" ends with a dot: absolute, the search list is not used'
    dots = name.count(".")
    plural = "dot" if dots == 1 else "dots"
    if dots >= ndots:
        if mode == "musl":
            return f'"{name}" has {dots} {plural}, at least ndots:{ndots}: musl tries it as typed only'
        return f'"{name}" has {dots} {plural}, at least ndots:{ndots}: as typed first, then the search list'
    return f'"{name}" has {dots} {plural}, fewer than ndots:{ndots}: the search list first, then as typed'


# --- resolution ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Query:
    """One DNS question the pod's client sent, where it went, and what came back."""

    index: int
    name: str
    qtype: str
    nameserver: str  # the address that answered; the first one tried when none did
    answer: Answer | None  # None: no nameserver answered (the query timed out)
    port: int = DNS_PORT
    protocol: str = "UDP"
    unreachable: tuple[str, ...] = ()  # nameservers tried before, which did not answer

    @property
    def outcome(self) -> str:
        return self.answer.outcome if self.answer else "timeout"

    @property
    def rcode(self) -> str:
        return self.answer.rcode if self.answer else ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "type": self.qtype,
            "nameserver": self.nameserver,
            "port": self.port,
            "protocol": self.protocol,
            "unreachable": list(self.unreachable),
            "outcome": self.outcome,
            "response": self.answer.to_dict() if self.answer else None,
        }


@dataclass(frozen=True, slots=True)
class Resolution:
    """The result of looking ``name`` up from a pod."""

    name: str
    qtype: str
    pod: str
    mode: str
    resolv_conf: ResolvConf
    queries: tuple[Query, ...]
    answered: int | None  # Query.index of the answer the client used
    outcome: str  # resolved, external, nxdomain, nodata, servfail, timeout
    explanation: str
    messages: tuple[str, ...] = ()  # what the client prints (nslookup lines, getaddrinfo's error)

    @property
    def ok(self) -> bool:
        return self.outcome in ("resolved", "external")

    @property
    def answer(self) -> Answer | None:
        if self.answered is None:
            return None
        return self.queries[self.answered - 1].answer

    @property
    def fqdn(self) -> str:
        return self.queries[self.answered - 1].name if self.answered else ""

    @property
    def values(self) -> tuple[str, ...]:
        """The answered records of the asked type: addresses for A/AAAA, targets for SRV/PTR/CNAME."""
        answer = self.answer
        return answer.values(self.qtype) if answer else ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.qtype,
            "from": self.pod,
            "resolver": self.mode,
            "resolvConf": self.resolv_conf.to_dict(),
            "order": self.explanation,
            "queries": [q.to_dict() for q in self.queries],
            "answered": self.answered,
            "fqdn": self.fqdn,
            "outcome": self.outcome,
            "values": list(self.values),
            "messages": list(self.messages),
        }


_SUCCESS = ("answer", "external")


def resolve(state: ClusterState, pod: Pod, name: str, qtype: str = "A", *, mode: str = "glibc",
            dns: ClusterDNS | None = None, reachable: Reachable | None = None) -> Resolution:
    """Look ``name`` up as ``pod``'s ``mode`` client does, against ``state``'s cluster DNS.

    ``dns`` defaults to a ``ClusterDNS`` whose upstream knows no internet names (NXDOMAIN);
    ``reachable(ip, port, protocol)`` says whether a nameserver answers the pod at all.
    """
    _check_mode(mode)
    qtype = qtype.upper()
    name = name.strip()
    if not name or name == ".":
        raise ValueError("empty name")
    dns = dns or ClusterDNS(state)
    conf = resolv_conf(state, pod)
    cluster_ns = cluster_nameservers(state)
    typed = name
    if _is_ip(name.rstrip(".")) and qtype == "PTR":
        name = reverse_name(name.rstrip("."))  # as `dig -x`, nslookup and gethostbyaddr do
    if qtype == "PTR" and name.endswith((".in-addr.arpa.", ".ip6.arpa.")):
        plan: tuple[str, ...] = (name,)
        explanation = "a reverse lookup: the in-addr.arpa name is asked as is"
    elif qtype == "PTR" and mode == "busybox-nslookup":
        plan = (fqdn(name),)  # add_query_with_search never searches a PTR question
        explanation = "busybox nslookup never applies the search list to a PTR question"
    else:
        plan = query_names(name, conf.search, conf.ndots, mode)
        explanation = explain_order(name, conf.search, conf.ndots, mode)
    nameservers = conf.nameservers or ("127.0.0.1",)

    queries: list[Query] = []

    def ask(qname: str) -> Query:
        unreachable: list[str] = []
        for ns in nameservers:
            if ns == "127.0.0.1" and not conf.nameservers:
                unreachable.append(ns)
                continue
            if reachable is not None and not reachable(ns, DNS_PORT, "UDP"):
                unreachable.append(ns)
                continue
            if ns in cluster_ns and not dns.serving:
                unreachable.append(ns)  # CoreDNS is down (no ready pod, or it cannot start): nothing answers
                continue
            if ns in cluster_ns:
                answer = dns.query(qname, qtype)
            else:
                answer = dns.upstream.answer(qname, qtype, dns.external_targets)
            q = Query(len(queries) + 1, qname, qtype, ns, answer, unreachable=tuple(unreachable))
            queries.append(q)
            return q
        q = Query(len(queries) + 1, qname, qtype, nameservers[0], None, unreachable=tuple(unreachable))
        queries.append(q)
        return q

    if mode == "busybox-nslookup":
        # busybox sends every query at once and prints every reply.
        for qname in plan:
            ask(qname)
        answered = next((q.index for q in queries if q.outcome in _SUCCESS), None)
        outcome = _final_outcome(queries, answered, [q.outcome for q in queries])
        messages = _busybox_messages(queries, nameservers)
    elif mode == "musl":
        answered = None
        outcomes: list[str] = []
        for qname in plan:
            q = ask(qname)
            outcomes.append(q.outcome)
            if q.outcome in _SUCCESS:
                answered = q.index
                break
            if q.outcome != "nxdomain":
                break  # musl: only NXDOMAIN moves on to the next search domain
        outcome = _final_outcome(queries, answered, outcomes[-1:])
        messages = _libc_messages(name, outcome, queries)
    else:
        answered, outcome = _glibc(name, conf, ask)
        messages = _libc_messages(name, outcome, queries)
    return Resolution(typed, qtype, pod.key, mode, conf, tuple(queries), answered, outcome, explanation, messages)


def _glibc(name: str, conf: ResolvConf, ask: Callable[[str], Query]) -> tuple[int | None, str]:
    """``res_nsearch``: when to try the name as typed, when to stop, and which error to report."""
    as_is = fqdn(name)
    if name.endswith("."):
        q = ask(as_is)
        return (q.index, _resolved(q)) if q.outcome in _SUCCESS else (None, q.outcome)
    saved: str | None = None
    tried_as_is = root_on_list = got_nodata = got_servfail = False
    last = "nxdomain"
    if name.count(".") >= conf.ndots:
        q = ask(as_is)
        if q.outcome in _SUCCESS:
            return q.index, _resolved(q)
        saved, tried_as_is = q.outcome, True
    for domain in conf.search:
        root_on_list = root_on_list or not domain.strip(".")
        q = ask(_candidate(name, domain))
        if q.outcome in _SUCCESS:
            return q.index, _resolved(q)
        last = q.outcome
        if q.outcome == "nodata":
            got_nodata = True
        elif q.outcome == "servfail":
            got_servfail = True
        elif q.outcome != "nxdomain":
            break  # a timeout ends the search (glibc's `done`)
    if not tried_as_is and not root_on_list:
        q = ask(as_is)
        if q.outcome in _SUCCESS:
            return q.index, _resolved(q)
        last = q.outcome
    if saved is not None:
        return None, saved
    if got_nodata:
        return None, "nodata"
    if got_servfail:
        return None, "servfail"
    return None, last


def _resolved(q: Query) -> str:
    return "external" if q.outcome == "external" else "resolved"


def _final_outcome(queries: list[Query], answered: int | None, outcomes: list[str]) -> str:
    if answered is not None:
        return _resolved(queries[answered - 1])
    for bad in ("timeout", "servfail", "nodata"):
        if bad in outcomes:
            return bad
    return outcomes[-1] if outcomes else "nxdomain"


_GAI_ERRORS = {
    "nxdomain": "Name or service not known",  # EAI_NONAME
    "nodata": "No address associated with hostname",  # EAI_NODATA
    "servfail": "Temporary failure in name resolution",  # EAI_AGAIN
    "timeout": "Temporary failure in name resolution",
}


def _libc_messages(name: str, outcome: str, queries: list[Query]) -> tuple[str, ...]:
    if outcome in _GAI_ERRORS:
        return (f"{name}: {_GAI_ERRORS[outcome]}",)
    return ()


def _busybox_messages(queries: list[Query], nameservers: Sequence[str]) -> tuple[str, ...]:
    """What busybox 1.36 nslookup prints (nslookup.c): a reply per query, failures included."""
    served = next((q for q in queries if q.answer is not None), None)
    if served is None:
        return (";; connection timed out; no servers could be reached",)
    # busybox prints the server's socket address as sockaddr2str does: an IPv6 one bracketed.
    host = f"[{served.nameserver}]" if ":" in served.nameserver else served.nameserver
    lines = [f"Server:\t\t{served.nameserver}", f"Address:\t{host}:{served.port}", ""]
    for q in queries:
        shown = q.name.rstrip(".")
        if q.answer is None:
            continue
        if q.answer.rcode != "NOERROR":
            lines += [f"** server can't find {shown}: {q.answer.rcode}", ""]
            continue
        records = [r for r in q.answer.answer if r.type in ("A", "AAAA", "CNAME", "SRV", "PTR", "TXT")]
        if not records:
            lines += [f"*** Can't find {shown}: No answer", ""]
            continue
        if not q.answer.authoritative:
            lines.append("Non-authoritative answer:")
        for r in records:
            owner = r.name.rstrip(".")
            if r.type in ("A", "AAAA"):
                lines += [f"Name:\t{owner}", f"Address: {r.data}"]
            elif r.type == "CNAME":
                lines.append(f"{owner}\tcanonical name = {r.data.rstrip('.')}")
            elif r.type == "SRV":
                lines.append(f"{owner}\tservice = {r.data}")
            elif r.type == "PTR":
                lines.append(f"{owner}\tname = {r.data}")
            else:
                lines.append(f"{owner}\ttext = {r.data}")
        lines.append("")
    return tuple(lines)




# --- getaddrinfo: both families ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AddressLookup:
    """``getaddrinfo(name, AF_UNSPEC)`` from a pod: the A and/or AAAA lookups its families call for, and the
    addresses in the order the client tries them."""

    resolutions: tuple[Resolution, ...]
    addresses: tuple[str, ...]
    order: str = ""  # why that order, when there are both families

    @property
    def ok(self) -> bool:
        return any(r.ok for r in self.resolutions)

    @property
    def primary(self) -> Resolution:
        """The lookup that answered first (for the name and query trail), else the first one asked."""
        return next((r for r in self.resolutions if r.ok), self.resolutions[0])


def pod_families(state: ClusterState, pod: Pod) -> tuple[str, ...]:
    """The IP families a pod has an address of (a hostNetwork pod: its node's), primary first."""
    ips: Sequence[str] = pod.pod_ips or ((pod.pod_ip,) if pod.pod_ip else ())
    if pod.host_network:
        node = state.nodes.get(pod.node_name)
        ips = node.internal_ips if node is not None and node.internal_ips else ips
    families = tuple(dict.fromkeys("IPv6" if ":" in ip else "IPv4" for ip in ips))
    return families or state.config.ip_families[:1]


def _precedence(ip: str) -> int:
    """RFC 6724's default policy table: IPv6 global 40, IPv4 35, unique-local (fc00::/7) 3."""
    if ":" not in ip:
        return 35
    return 3 if ip.lower().startswith(("fc", "fd")) else 40


def lookup_addresses(state: ClusterState, pod: Pod, name: str, *, mode: str = "glibc",
                     dns: ClusterDNS | None = None, reachable: Reachable | None = None) -> AddressLookup:
    """Resolve ``name`` for a connection: A for an IPv4 pod, AAAA for an IPv6 one, both on a dual-stack pod
    (glibc sends the two questions together), then RFC 6724's destination order, which puts IPv4 before
    the unique-local IPv6 addresses kind and most clusters use."""
    dns = dns or ClusterDNS(state)
    qtypes = ["A" if f == "IPv4" else "AAAA" for f in pod_families(state, pod)]
    resolutions = tuple(resolve(state, pod, name, q, mode=mode, dns=dns, reachable=reachable)
                        for q in sorted(qtypes))
    addresses = [ip for r in resolutions if r.ok for ip in r.values if _is_ip(ip)]
    ordered = sorted(addresses, key=lambda ip: -_precedence(ip))
    order = ""
    if len({":" in ip for ip in ordered}) == 2:
        first = "IPv4" if ":" not in ordered[0] else "IPv6"
        order = (f"A and AAAA both answer; getaddrinfo puts {first} first (RFC 6724 precedence: IPv6 global 40, "
                 "IPv4 35, unique-local fc00::/7 3)")
    return AddressLookup(resolutions, tuple(ordered), order)
