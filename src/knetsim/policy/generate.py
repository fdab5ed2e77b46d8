"""Least-privilege policies from what was observed (or declared), and the proof that they allow exactly that.

The input is a set of connections: Hubble flows (``model.flows``: what ``hubble observe -o json``
printed, or knetsim's own live cluster through ``knetsim observe``), or a declared list of intended
connections. Each end is resolved against the cluster: a pod (by its namespace and name, else its
address) stands for its workload, as the matrix names it (``shop/web[Deployment]``); an address
outside the pod network is an external peer; a node's address is the node (its traffic to a pod on
that node is always allowed, so it needs no rule).

The policies (``generate``):

* one NetworkPolicy per workload of the namespaces in scope (the system's own — kube-system,
  ingress-nginx, … — are never rewritten), selecting its pods by the workload's own selector, both
  directions isolated: a workload nothing was seen to reach admits nothing;
* one rule per peer, listing the ports that peer used; a peer workload of the same namespace by its
  pod labels, of another namespace by ``kubernetes.io/metadata.name`` AND its pod labels; an external
  peer as an ``ipBlock`` of its /32; a port by the name the destination pod gives it, if it names it;
* DNS egress (UDP and TCP 53 to kube-dns's pods) for every workload: any pod looks names up, and
  one that cannot is the doctor's DNSEgressBlocked (TCP for the answers too large for UDP);
* a comment above each rule naming the connections it admits and the flows seen for each.

With ``tier="Admin"`` or ``"Baseline"`` they are ClusterNetworkPolicies instead: one per workload,
its connections accepted rule by rule, then a last rule that denies the rest of what the tier can
name (pods of every namespace; on egress also every address).

``prove`` builds the matrix of a cluster whose policies are the generated ones and compares it, pair by
pair, with what was observed: every observed connection allowed (``missing`` would be a defect of
the generator), and nothing else but what the report names (DNS over TCP).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cluster.state import ClusterState
from ..model.flows import DROPPED, FORWARDED, Flow, FlowEnd
from ..model.objects import Pod
from .generate_dialects import WRITERS, label_selector
from .matrix import is_system_pod, matrix, workload_of
from .ports import ConnSet
from .render import Commented, commented_yaml, plain_value
from .rules import NAMESPACE_NAME_LABEL

DNS_SERVICE = "kube-system/kube-dns"
MANAGED_BY = {"app.kubernetes.io/managed-by": "knetsim"}
# Labels a controller adds to every pod it makes: never part of a selector a person would write.
CONTROLLER_LABELS = frozenset({"pod-template-hash", "controller-revision-hash", "statefulset.kubernetes.io/pod-name",
                               "apps.kubernetes.io/pod-index", "batch.kubernetes.io/controller-uid",
                               "batch.kubernetes.io/job-name", "controller-uid", "job-name"})
WORKLOAD = "workload"
EXTERNAL = "external"
NODE = "node"


class GenerateError(ValueError):
    """Input the generator cannot use (an unknown workload in a declared list, a bad port); exit code 2."""


@dataclass(frozen=True, slots=True)
class Party:
    """One end of a connection, as a policy can name it."""

    kind: str  # workload | external | node
    name: str  # shop/web[Deployment], 203.0.113.7, node/worker
    namespace: str = ""
    selector: tuple[tuple[str, str], ...] = ()  # the workload's matchLabels
    expressions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # its matchExpressions
    ip: str = ""
    system: bool = False  # pods knetsim adds itself (kube-system, ingress-nginx, ...)
    dns: bool = False  # the cluster DNS's pods

    @property
    def short(self) -> str:
        """The workload's name (``web``), an address, a node."""
        if self.kind != WORKLOAD:
            return self.name
        return self.name.split("/", 1)[1].split("[", 1)[0]


@dataclass(frozen=True, slots=True)
class Connection:
    src: Party
    dst: Party
    protocol: str
    port: int
    evidence: str  # "4 flows, 2026-12-04T10:00:00Z … 10:05:00Z" or "declared, intended.yaml item 3"


@dataclass
class Catalog:
    """The workloads of a cluster: their pods and the selector their controller uses."""

    state: ClusterState
    pods: dict[str, list[Pod]] = field(default_factory=dict)  # workload -> pods, by name
    of_pod: dict[str, str] = field(default_factory=dict)  # pod key -> workload
    _by_namespace: dict[str, list[str]] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        cache: dict[tuple[str, str, str], tuple[str, str]] = {}
        for key, pod in sorted(self.state.pods.items()):
            kind, name = workload_of(self.state, pod, cache)
            workload = f"{pod.namespace}/{name}[{kind}]"
            self.pods.setdefault(workload, []).append(pod)
            self.of_pod[key] = workload
        dns = self.state.services.get(DNS_SERVICE)
        self._dns = {p.key for p in self.state.select_pods("kube-system", dns.selector_view)} \
            if dns is not None and dns.selector else set()

    def party(self, workload: str) -> Party:
        pods = self.pods[workload]
        namespace = pods[0].namespace
        labels, expressions = self._selector(workload, pods)
        return Party(WORKLOAD, workload, namespace, labels, expressions, system=is_system_pod(pods[0]),
                     dns=any(p.key in self._dns for p in pods))

    def _selector(self, workload: str, pods: list[Pod]) -> tuple[tuple[tuple[str, str], ...],
                                                               tuple[tuple[str, str, tuple[str, ...]], ...]]:
        kind = workload.rsplit("[", 1)[1].rstrip("]")
        name = workload.split("/", 1)[1].rsplit("[", 1)[0]
        obj = self.state.workloads.get((kind, f"{pods[0].namespace}/{name}"))
        selector = ((obj.raw.get("spec") or {}).get("selector") or {}) if obj is not None and kind not in (
            "CronJob", "Job") else {}
        labels = selector.get("matchLabels") if isinstance(selector, dict) else None
        expressions = selector.get("matchExpressions") if isinstance(selector, dict) else None
        if labels or expressions:
            return (tuple(sorted((str(k), str(v)) for k, v in (labels or {}).items())),
                    tuple((str(e.get("key")), str(e.get("operator")), tuple(str(v) for v in e.get("values") or ()))
                          for e in expressions or () if isinstance(e, dict)))
        # A bare pod, a Job's pods: the labels they all share, but those a controller adds.
        common = dict(pods[0].labels)
        for p in pods[1:]:
            common = {k: v for k, v in common.items() if p.labels.get(k) == v}
        return tuple(sorted((k, v) for k, v in common.items() if k not in CONTROLLER_LABELS)), ()

    def _in_namespace(self) -> dict[str, list[str]]:
        """Workloads by namespace (made on first use)."""
        if self._by_namespace is None:
            self._by_namespace = {}
            for workload, pods in self.pods.items():
                self._by_namespace.setdefault(pods[0].namespace, []).append(workload)
        return self._by_namespace

    def selects_others(self, party: Party) -> list[str]:
        """Other workloads of the namespace whose pods the party's selector selects too."""
        wanted = dict(party.selector)
        out = []
        for workload in self._in_namespace().get(party.namespace, ()):
            pods = self.pods[workload]
            if workload == party.name:
                continue
            if any(all(p.labels.get(k) == v for k, v in wanted.items()) and _expressions_match(party, p)
                   for p in pods):
                out.append(workload)
        return sorted(out)


def _expressions_match(party: Party, pod: Pod) -> bool:
    for key, op, values in party.expressions:
        have = pod.labels.get(key)
        if (op == "In" and have not in values) or (op == "NotIn" and have in values) or \
                (op == "Exists" and key not in pod.labels) or (op == "DoesNotExist" and key in pod.labels):
            return False
    return True


# --- from flows, and from a declared list ---------------------------------------------------------


def _party_of_address(state: ClusterState, catalog: Catalog, ip: str) -> Party | None:
    pod = state.pod_by_ip(ip)
    if pod is not None and not pod.host_network:
        return catalog.party(catalog.of_pod[pod.key])
    node = state.node_by_ip(ip)
    if node is not None or pod is not None:
        name = node.name if node is not None else pod.node_name  # type: ignore[union-attr]
        return Party(NODE, f"node/{name}", ip=ip)
    svc = state.service_by_ip(ip)
    if svc is not None:
        return None  # a Service address: the flow was seen before the DNAT, its backend is unknown
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return None
    if address in ipaddress.ip_network(state.config.pod_cidr):
        return None  # a pod of the pod network this cluster does not have (gone, or another cluster's)
    return Party(EXTERNAL, str(address), ip=str(address))


def _party_of_end(state: ClusterState, catalog: Catalog, end: FlowEnd) -> Party | None:
    if end.pod and end.pod_key in catalog.of_pod:
        return catalog.party(catalog.of_pod[end.pod_key])
    for name, kind in end.workloads:  # the pod is gone (a rollout since): its workload still is
        workload = f"{end.namespace}/{name}[{kind}]"
        if workload in catalog.pods:
            return catalog.party(workload)
    return _party_of_address(state, catalog, end.ip)


def _loopback(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip).is_loopback
    except ValueError:
        return False


@dataclass
class Observed:
    """The connections found in the input, and what of it could not be used (said in the report)."""

    connections: list[Connection] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def from_flows(state: ClusterState, flows: Iterable[Flow], *, include_dropped: bool = False) -> Observed:
    """The connections the flows show: their first packet (not a reply), forwarded (and, with
    ``include_dropped``, dropped: connections that were tried), each end resolved in ``state``."""
    catalog = Catalog(state)
    seen: dict[tuple[str, str, str, int], list[Flow]] = {}
    parties: dict[str, Party] = {}
    skipped: dict[str, int] = {}
    for f in flows:
        if f.is_reply:
            continue
        if f.verdict == DROPPED and not include_dropped:
            skipped["dropped (give --include-dropped to allow what was tried)"] = \
                skipped.get("dropped (give --include-dropped to allow what was tried)", 0) + 1
            continue
        if f.verdict not in (FORWARDED, DROPPED, "AUDIT"):
            continue
        if f.protocol not in ("TCP", "UDP", "SCTP") or not f.dst_port:
            skipped[f"{f.protocol} (NetworkPolicy names TCP, UDP and SCTP ports only)"] = \
                skipped.get(f"{f.protocol} (NetworkPolicy names TCP, UDP and SCTP ports only)", 0) + 1
            continue
        if _loopback(f.src.ip) or _loopback(f.dst.ip):
            why = "inside a pod, on its loopback (kubectl port-forward): no policy applies"
            skipped[why] = skipped.get(why, 0) + 1
            continue
        src, dst = _party_of_end(state, catalog, f.src), _party_of_end(state, catalog, f.dst)
        if src is None or dst is None:
            which = f.src if src is None else f.dst
            what = which.pod_key or which.ip
            key = f"{what}: not a pod, node or external address of this cluster"
            skipped[key] = skipped.get(key, 0) + 1
            continue
        if src.name == dst.name and src.kind == WORKLOAD and f.src.pod_key == f.dst.pod_key and f.src.pod_key:
            continue  # a pod talking to itself: always allowed
        parties.setdefault(src.name, src)
        parties.setdefault(dst.name, dst)
        seen.setdefault((src.name, dst.name, f.protocol, f.dst_port), []).append(f)
    out = Observed()
    for (src, dst, protocol, port), group in sorted(seen.items()):
        times = sorted(f.time for f in group if f.time)
        span = f", {times[0]}" + (f" … {times[-1]}" if times[-1] != times[0] else "") if times else ""
        out.connections.append(Connection(parties[src], parties[dst], protocol, port,
                                          f"{len(group)} flow{'s' if len(group) != 1 else ''}{span}"))
    out.notes += [f"{count} flow(s) not used: {why}" for why, count in sorted(skipped.items())]
    return out


_WORKLOAD_REF = re.compile(r"^(?P<ns>[^/\s]+)/(?P<name>[^\[\s/]+)(\[(?P<kind>[A-Za-z]+)\])?$")


def _party_of_ref(state: ClusterState, catalog: Catalog, ref: str, where: str) -> Party:
    """``ns/name``, ``ns/name[Kind]``, a pod ``ns/pod``, an address or a CIDR (its first address)."""
    text = ref.strip()
    try:
        net = ipaddress.ip_network(text, strict=False)
    except ValueError:
        net = None
    if net is not None:
        party = _party_of_address(state, catalog, str(net.network_address))
        if party is None:
            raise GenerateError(f"{where}: {text} is an address of this cluster's Services or pod network, "
                                "not a pod, a node or an external address")
        return party if net.num_addresses == 1 or party.kind != EXTERNAL else \
            Party(EXTERNAL, str(net), ip=str(net))
    m = _WORKLOAD_REF.match(text)
    if m is None:
        raise GenerateError(f"{where}: {ref!r} is not ns/name, ns/name[Kind], an address or a CIDR")
    ns, name, kind = m.group("ns"), m.group("name"), m.group("kind")
    if kind:
        candidates = [f"{ns}/{name}[{kind}]"]
    else:
        candidates = [w for w in catalog.pods if w.startswith(f"{ns}/{name}[")]
    found = [w for w in candidates if w in catalog.pods]
    if not found and f"{ns}/{name}" in catalog.of_pod:
        found = [catalog.of_pod[f"{ns}/{name}"]]
    if len(found) != 1:
        known = sorted(w for w in catalog.pods if w.startswith(f"{ns}/"))
        why = "names several workloads" if found else "names no workload or pod of this cluster"
        raise GenerateError(f"{where}: {ref} {why}" + (f" (in {ns}: {', '.join(known)})" if known else ""))
    return catalog.party(found[0])


def from_declared(state: ClusterState, doc: Any, source: str = "-") -> Observed:
    """Intended connections: ``{connections: [{from, to, port, protocol}]}`` (or the bare list). A port may be
    a container port's name, resolved on the destination's pods."""
    items = doc.get("connections") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise GenerateError(f"{source}: expected a list of connections (connections: [{{from, to, port}}])")
    catalog = Catalog(state)
    out = Observed()
    for i, item in enumerate(items):
        where = f"{source}, connections[{i}]"
        if not isinstance(item, dict):
            raise GenerateError(f"{where}: expected an object with from, to and port")
        missing = [k for k in ("from", "to", "port") if item.get(k) in (None, "")]
        if missing:
            raise GenerateError(f"{where}.{missing[0]}: Required value")
        src = _party_of_ref(state, catalog, str(item["from"]), f"{where}.from")
        dst = _party_of_ref(state, catalog, str(item["to"]), f"{where}.to")
        protocol = str(item.get("protocol") or "TCP").upper()
        if protocol not in ("TCP", "UDP", "SCTP"):
            raise GenerateError(f'{where}.protocol: Unsupported value: "{protocol}": supported values: "SCTP", '
                                '"TCP", "UDP"')
        port = _port_number(catalog, dst, item["port"], protocol, f"{where}.port")
        out.connections.append(Connection(src, dst, protocol, port, f"declared in {source}, connections[{i}]"))
    out.connections.sort(key=lambda c: (c.src.name, c.dst.name, c.protocol, c.port))
    return out


def _port_number(catalog: Catalog, dst: Party, port: Any, protocol: str, where: str) -> int:
    if isinstance(port, int) or (isinstance(port, str) and port.isdigit()):
        number = int(port)
        if not 1 <= number <= 65535:
            raise GenerateError(f"{where}: Invalid value: {number}: must be between 1 and 65535, inclusive")
        return number
    if dst.kind != WORKLOAD:
        raise GenerateError(f"{where}: the named port {port!r} needs a destination pod to look it up on")
    numbers = {p.named_port(str(port), protocol) for p in catalog.pods[dst.name]}
    if None in numbers or len(numbers) != 1:
        raise GenerateError(f"{where}: the pods of {dst.name} do not all name a {protocol} port {port!r}")
    return int(numbers.pop())  # type: ignore[arg-type]


# --- the policies -------------------------------------------------------------------------------


@dataclass
class Generated:
    """The generated policies (bodies as the API server receives them) and their commented YAML."""

    policies: list[dict[str, Any]]
    yaml: str
    workloads: list[str]  # the workloads a policy now isolates
    connections: list[Connection]
    notes: list[str]
    tier: str | None = None  # Admin | Baseline: ClusterNetworkPolicies
    dialect: str = "kubernetes"  # or calico | cilium | antrea: the CNI whose own kind the policies are

    @property
    def rules(self) -> int:
        return sum(len(p["spec"].get(d) or ()) for p in self.policies for d in ("ingress", "egress"))



def _np_peer(party: Party, namespace: str) -> dict[str, Any]:
    if party.kind != WORKLOAD:
        return {"ipBlock": {"cidr": party.ip if "/" in party.ip else f"{party.ip}/32"}}
    if party.namespace == namespace:
        return {"podSelector": label_selector(party)}
    return {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: party.namespace}},
            "podSelector": label_selector(party)}


def _port_name(catalog: Catalog, dst: Party, protocol: str, port: int) -> str | None:
    """The name every pod of ``dst`` gives ``port`` (None: unnamed, or named differently)."""
    if dst.kind != WORKLOAD:
        return None
    names = set()
    for pod in catalog.pods[dst.name]:
        named = [cp.name for c in pod.containers for cp in c.ports
                 if cp.container_port == port and cp.protocol == protocol]
        names.add(named[0] if named and named[0] else None)
    return names.pop() if len(names) == 1 else None


def _ports(catalog: Catalog, dst: Party, conns: Sequence[Connection]) -> list[dict[str, Any]]:
    out = []
    for c in sorted(conns, key=lambda c: (c.protocol, c.port)):
        name = _port_name(catalog, dst if dst.kind == WORKLOAD else c.dst, c.protocol, c.port)
        out.append({"protocol": c.protocol, "port": name or c.port})
    return out


def _evidence(conns: Sequence[Connection]) -> list[str]:
    return [f"  {c.protocol} {c.port}: {c.evidence}" for c in sorted(conns, key=lambda c: (c.protocol, c.port))]


DNS_PEER = {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}
DNS_PORTS = [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]


def _in_scope(party: Party, namespaces: Iterable[str] | None) -> bool:
    return party.kind == WORKLOAD and not party.system and (namespaces is None or party.namespace in namespaces)


def generate(state: ClusterState, observed: Observed, *, namespaces: Iterable[str] | None = None,
             tier: str | None = None, priority: int = 50, source: str = "", dialect: str = "kubernetes") -> Generated:
    """A policy per workload in scope: of ``namespaces`` (default: those of the observed workloads); ``dialect``
    (calico, cilium, antrea) writes each in that CNI's own kind (policy.generate_dialects)."""
    catalog = Catalog(state)
    conns = observed.connections
    if namespaces is None:
        namespaces = sorted({p.namespace for c in conns for p in (c.src, c.dst) if _in_scope(p, None)})
    scope = set(namespaces)
    workloads = sorted(w for w, pods in catalog.pods.items()
                       if pods[0].namespace in scope and not is_system_pod(pods[0]) and not pods[0].host_network)
    documents = []
    policies = []
    notes = list(observed.notes)
    into: dict[str, list[Connection]] = {}
    out_of: dict[str, list[Connection]] = {}
    for c in conns:  # in their order, as each workload's lists were made before
        if c.src.kind != NODE:
            into.setdefault(c.dst.name, []).append(c)
        if c.dst.kind != NODE:
            out_of.setdefault(c.src.name, []).append(c)
    for workload in workloads:
        party = catalog.party(workload)
        ingress = into.get(workload, [])
        egress = out_of.get(workload, [])
        others = catalog.selects_others(party)
        if others:
            notes.append(f"{workload}: its selector also selects the pods of {', '.join(others)}, whose "
                         "connections its policy then allows too")
        head = [f"Least privilege for {workload}, from {source or 'the observed connections'}:",
                f"{_count(ingress, 'connection')} into it, {_count(egress, 'connection')} out of it "
                f"(generated by knetsim policy generate)."]
        if dialect != "kubernetes":
            body = _dialect_policy(catalog, party, ingress, egress, dialect)
        elif tier is None:
            body = _network_policy(catalog, party, ingress, egress)
        else:
            body = _cluster_policy(catalog, party, ingress, egress, tier, priority)
        documents.append((head, body))
        policies.append(plain_value(body))
    if tier is not None:
        notes.append("a ClusterNetworkPolicy ingress rule names pods, never addresses: what comes from outside the "
                     "cluster is left to the NetworkPolicies (and the default, allow)")
    return Generated(policies, commented_yaml(documents), workloads, list(conns), notes, tier, dialect)


def _count(items: Sequence[Any], noun: str) -> str:
    return f"{len(items)} {noun}{'s' if len(items) != 1 else ''}"


def _grouped(conns: Sequence[Connection], end: str) -> dict[str, list[Connection]]:
    out: dict[str, list[Connection]] = {}
    for c in conns:
        out.setdefault(getattr(c, end).name, []).append(c)
    return dict(sorted(out.items()))


def _network_policy(catalog: Catalog, party: Party, ingress: Sequence[Connection],
                    egress: Sequence[Connection]) -> dict[str, Any]:
    rules_in: list[Any] = []
    for peer, conns in _grouped(ingress, "src").items():
        rules_in.append(Commented({"from": [_np_peer(conns[0].src, party.namespace)],
                                   "ports": _ports(catalog, party, conns)},
                                  [f"from {peer}:", *_evidence(conns)]))
    rules_out: list[Any] = []
    dns_seen = [c for c in egress if c.dst.dns and c.port == 53]
    for peer, conns in _grouped(egress, "dst").items():
        if conns[0].dst.dns and all(c.port == 53 for c in conns):
            continue  # the DNS rule below covers it
        rules_out.append(Commented({"to": [_np_peer(conns[0].dst, party.namespace)],
                                    "ports": _ports(catalog, conns[0].dst, conns)},
                                   [f"to {peer}:", *_evidence(conns)]))
    seen = "; ".join(f"{c.protocol} 53: {c.evidence}" for c in dns_seen) or "no lookup observed"
    rules_out.append(Commented({"to": [DNS_PEER], "ports": DNS_PORTS},
                               [f"DNS, to kube-dns's pods ({seen}): every pod looks names up;",
                                "TCP too: an answer too large for UDP is asked again over TCP"]))
    spec: dict[str, Any] = {"podSelector": label_selector(party), "policyTypes": ["Ingress", "Egress"],
                            "ingress": rules_in or Commented([], ["nothing was seen to connect to it: none allowed"]),
                            "egress": rules_out}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": f"{party.short}-least-privilege", "namespace": party.namespace,
                         "labels": dict(MANAGED_BY)},
            "spec": spec}


def _dialect_policy(catalog: Catalog, party: Party, ingress: Sequence[Connection], egress: Sequence[Connection],
                    dialect: str) -> dict[str, Any]:
    """The same peers and ports as ``_network_policy``, handed to the CNI's writer."""

    into = [(conns[0].src, _ports(catalog, party, conns), [f"from {peer}:", *_evidence(conns)])
            for peer, conns in _grouped(ingress, "src").items()]
    out_of = [(conns[0].dst, _ports(catalog, conns[0].dst, conns), [f"to {peer}:", *_evidence(conns)])
              for peer, conns in _grouped(egress, "dst").items()
              if not (conns[0].dst.dns and all(c.port == 53 for c in conns))]  # the DNS rule covers it
    body = WRITERS[dialect](party, into, out_of)
    body["metadata"]["labels"] = dict(MANAGED_BY)
    return body


def _cnp_peer(party: Party) -> dict[str, Any]:
    if party.kind != WORKLOAD:
        return {"networks": [party.ip if "/" in party.ip else f"{party.ip}/32"]}
    return {"pods": {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: party.namespace}},
                     "podSelector": label_selector(party)}}


def _protocols(catalog: Catalog, dst: Party, conns: Sequence[Connection]) -> list[dict[str, Any]]:
    out = []
    for c in sorted(conns, key=lambda c: (c.protocol, c.port)):
        name = _port_name(catalog, dst if dst.kind == WORKLOAD else c.dst, c.protocol, c.port)
        out.append({"destinationNamedPort": name} if name else
                   {c.protocol.lower(): {"destinationPort": {"number": c.port}}})
    return out


def _rule_name(side: str, party: Party) -> str:
    """``from-shop-web``, ``to-203.0.113.7``: a rule's name says whom it admits (the API allows 100 characters)."""
    who = f"{party.namespace}-{party.short}" if party.kind == WORKLOAD else party.ip.replace("/", "-")
    return f"{side}-{who}"[:100]


def _cluster_policy(catalog: Catalog, party: Party, ingress: Sequence[Connection], egress: Sequence[Connection],
                    tier: str, priority: int) -> dict[str, Any]:
    rules_in: list[Any] = []
    for peer, conns in _grouped(ingress, "src").items():
        if conns[0].src.kind != WORKLOAD:
            continue  # a ClusterNetworkPolicy ingress rule names pods only: external clients are left to the tiers
        rules_in.append(Commented({"name": _rule_name("from", conns[0].src), "action": "Accept",
                                   "from": [_cnp_peer(conns[0].src)], "protocols": _protocols(catalog, party, conns)},
                                  [f"from {peer}:", *_evidence(conns)]))
    rules_in.append(Commented({"name": "deny-the-rest", "action": "Deny", "from": [{"namespaces": {}}]},
                              ["every other pod, of every namespace"]))
    rules_out: list[Any] = []
    for peer, conns in _grouped(egress, "dst").items():
        if conns[0].dst.dns and all(c.port == 53 for c in conns):
            continue
        rules_out.append(Commented({"name": _rule_name("to", conns[0].dst), "action": "Accept",
                                    "to": [_cnp_peer(conns[0].dst)],
                                    "protocols": _protocols(catalog, conns[0].dst, conns)},
                                   [f"to {peer}:", *_evidence(conns)]))
    rules_out.append(Commented({"name": "dns", "action": "Accept", "to": [{"pods": DNS_PEER}],
                                "protocols": [{"udp": {"destinationPort": {"number": 53}}},
                                              {"tcp": {"destinationPort": {"number": 53}}}]},
                               ["DNS, to kube-dns's pods (UDP, and TCP for large answers): every pod looks names up"]))
    rules_out.append(Commented({"name": "deny-the-rest", "action": "Deny",
                                "to": [{"namespaces": {}}, {"networks": ["0.0.0.0/0"]}]},
                               ["every other pod and address"]))
    ns_selector = {"matchLabels": {NAMESPACE_NAME_LABEL: party.namespace}}
    return {"apiVersion": "policy.networking.k8s.io/v1alpha2", "kind": "ClusterNetworkPolicy",
            "metadata": {"name": f"{party.namespace}-{party.short}-least-privilege", "labels": dict(MANAGED_BY)},
            "spec": {"tier": tier, "priority": priority,
                     "subject": {"pods": {"namespaceSelector": ns_selector, "podSelector": label_selector(party)}},
                     "ingress": rules_in, "egress": rules_out}}


# --- the proof ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProofRow:
    src: str
    dst: str
    observed: ConnSet
    allowed: ConnSet
    extra_reason: str = ""

    @property
    def missing(self) -> ConnSet:
        return self.observed - self.allowed

    @property
    def extra(self) -> ConnSet:
        return self.allowed - self.observed

    @property
    def verdict(self) -> str:
        """``exact``; ``extra`` (more than observed, for the reason given); ``MORE`` (more, for no reason the
        generator gives: a peer's selector wider than its workload); ``MISSING`` (an observed connection denied)."""
        if self.missing:
            return "MISSING"
        if self.extra:
            return "extra" if self.extra_reason else "MORE"
        return "exact"

    def to_dict(self) -> dict[str, Any]:
        return {"from": self.src, "to": self.dst, "observed": self.observed.to_json(),
                "allowed": self.allowed.to_json(), "verdict": self.verdict, "extra": self.extra.to_json(),
                "why": self.extra_reason}


@dataclass
class Proof:
    rows: list[ProofRow]

    @property
    def holds(self) -> bool:
        """Every observed connection allowed, and nothing else but what the rows explain."""
        return all(r.verdict in ("exact", "extra") for r in self.rows)

    def summary(self) -> str:
        count = {v: sum(r.verdict == v for r in self.rows) for v in ("exact", "extra", "MORE", "MISSING")}
        return (f"{len(self.rows)} pair(s): {count['exact']} exactly as observed, {count['extra']} with more for the "
                f"reason given, {count['MORE']} with more for no reason, {count['MISSING']} with an observed "
                "connection denied")

    def to_dict(self) -> dict[str, Any]:
        return {"holds": self.holds, "summary": self.summary(), "pairs": [r.to_dict() for r in self.rows]}


DNS_PORTS_SET = ConnSet.port("TCP", 53) | ConnSet.port("UDP", 53)


def prove(state: ClusterState, generated: Generated) -> Proof:
    """The matrix of ``state`` (a cluster whose policies are the generated ones) against the connections: every
    pair with a generated workload on either side, what was observed and what is allowed."""
    m = matrix(state, include_system=True, all_external=True)
    covered = set(generated.workloads)
    rows = m.rows
    spans = {}
    for i in range(len(rows)):
        if rows.kinds[i] == "external":
            atom = m.classes.keys[int(rows.class_of[i])][3]
            spans[rows.names[i]] = (m.classes.ip_bounds[atom], m.classes.ip_bounds[atom + 1])
    observed: dict[tuple[str, str], ConnSet] = {}
    for c in generated.connections:
        for src in _rows_of(c.src, spans):
            for dst in _rows_of(c.dst, spans):
                key = (src, dst)
                observed[key] = observed.get(key, ConnSet.none()) | ConnSet.port(c.protocol, c.port)
    # A CNI's matrix (Calico's, Antrea's) can split a workload whose pods differ by a label no policy uses
    # (``shop/db[StatefulSet]{0}``): a pair of workloads is allowed what every pair of their pods is.
    parts: dict[str, int] = {}
    for name in rows.names:
        parts[_workload_row(name)] = parts.get(_workload_row(name), 0) + 1
    cells: dict[tuple[str, str], list[ConnSet]] = {}
    for i, j, cell in m.cells(rows.node_rows()):
        cells.setdefault((_workload_row(rows.names[i]), _workload_row(rows.names[j])), []).append(cell)
    allowed: dict[tuple[str, str], ConnSet] = {}
    for (a, b), found in cells.items():
        got = found[0]
        for cell in found[1:]:
            got = got & cell
        allowed[(a, b)] = got if len(found) == parts.get(a, 1) * parts.get(b, 1) else ConnSet.none()
    dns_rows = {r for r in rows.names if r.startswith("kube-system/coredns[") or r.startswith("kube-system/kube-dns[")}
    out = []
    for key in sorted(set(observed) | set(allowed)):
        src, dst = key
        if src not in covered and dst not in covered:
            continue
        got, saw = allowed.get(key, ConnSet.none()), observed.get(key, ConnSet.none())
        if got == saw and not saw:
            continue
        extra = got - saw
        why = ""
        if extra and dst in dns_rows and extra - DNS_PORTS_SET == ConnSet.none():
            why = ("DNS over TCP, allowed with UDP 53 for answers too large for UDP" if saw.contains("UDP", 53)
                   else "DNS: every generated policy lets its pods look names up")
        elif extra and generated.tier is not None and src in spans:
            why = "from outside the cluster: no ClusterNetworkPolicy ingress rule can name an address"
        out.append(ProofRow(src, dst, saw, got, why))
    return Proof(out)


def _workload_row(name: str) -> str:
    """``shop/db[StatefulSet]{1}`` -> ``shop/db[StatefulSet]``: the workload of a split row."""
    return name[:name.rindex("{")] if name.endswith("}") and "]{" in name else name


def _rows_of(party: Party, spans: Mapping[str, tuple[int, int]]) -> list[str]:
    if party.kind == WORKLOAD:
        return [party.name]
    if party.kind == EXTERNAL:
        net = ipaddress.ip_network(party.ip, strict=False)
        lo, hi = int(net.network_address), int(net.network_address) + net.num_addresses
        return [name for name, (a, b) in spans.items() if a < hi and lo < b]
    return []


__all__ = ["Catalog", "Connection", "GenerateError", "Generated", "Observed", "Party", "Proof", "ProofRow",
           "from_declared", "from_flows", "generate", "prove"]
