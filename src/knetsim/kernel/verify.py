"""Every simulated verdict against the kernel: ``knetsim verify kernel``.

The flows of a cluster, in this order (each list sorted):

1. **service** — every client pod to every Service port with a ClusterIP, by its absolute
   name (``web.shop.svc.cluster.local.``): a real DNS query to the pod's nameserver, then
   connections to the address it answered;
2. **dns** — every client pod to every headless or ExternalName Service's name (the answer
   only: there is no virtual IP to connect to);
3. **pod** — every client pod to every port some pod listens on, by pod IP (hostNetwork pods
   by their node's IP);
4. **external** — the external client (``203.0.113.10``) to every NodePort on every node and
   every LoadBalancer and external IP port.

On a dual-stack cluster every flow exists in each family the client and the target have: a
Service flow asks DNS for A or AAAA and connects to the ClusterIP of that family; pods are
reached at each of their addresses; the external client uses ``2001:db8:203::10`` for IPv6
node, LoadBalancer and external addresses. An IPv6-only cluster's flows are all IPv6.

Client pods are the pods on the pod network. Above ``max_flows`` the flows are sampled
(deterministically: the lowest hashes of their text) and the sample is reported.

Comparison. knetsim's side is ``network.trace`` (and, for the backends a Service may pick,
``dataplane.trace_packet``'s DNAT targets). The kernel picks a backend at random, so a flow
whose Service has several backends is sent several times at once; every attempt must be
one the simulation allows: connected only to a backend the data plane lists and that the
trace (or, when backends differ, a trace straight to that backend) says connects, with the
source address the simulation says the backend sees (masquerade); failing the way the
simulation fails.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cluster.state import ClusterState
from ..dataplane import Packet, trace_packet
from ..dataplane.model import family_of_ip, join_host_port, split_host_port
from ..dns import resolve
from ..model.listeners import pod_listens
from ..network.connect import dns_reachable
from ..network.dataplane import endpoint_pod
from ..network.external import announcing_node
from ..network.trace import Trace, external_client_ip
from ..network.tracer import trace
from . import probe
from .listeners import gather_bounded
from .plan import on_pod_network
from .topology import Topology

MAX_FLOWS = 600
CONCURRENCY = 256  # sockets open at once (probes of one flow go out together)
RECHECK_CONCURRENCY = 8  # flows probed again at once after a timeout knetsim did not expect
PROTOCOLS = ("TCP", "UDP")


@dataclass(frozen=True, slots=True)
class Flow:
    kind: str  # service | dns | pod | external
    source: str  # ns/pod or "external"
    host: str  # DNS name (service, dns) or IP
    port: int
    protocol: str
    # A Service or dns flow of the cluster's secondary family (the name asked as AAAA on a dual-stack
    # cluster), or of an IPv6-only cluster's only one: "" is the cluster's primary family.
    family: str = ""

    @property
    def target(self) -> str:
        """What ``knetsim trace`` is given for this flow."""
        if self.kind == "dns":
            return self.host
        text = join_host_port(self.host, self.port)
        return f"udp://{text}" if self.protocol == "UDP" else text

    def __str__(self) -> str:
        what = self.host if self.kind == "dns" else f"{join_host_port(self.host, self.port)}/{self.protocol}"
        return f"{self.kind:<8} {self.source} → {what}{f' ({self.family})' if self.family else ''}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "from": self.source, "to": self.host}
        if self.kind != "dns":
            out.update(port=self.port, protocol=self.protocol)
        if self.family:
            out["family"] = self.family
        return out

    def qtype(self, state: ClusterState) -> str:
        """The DNS question a service or dns flow asks: AAAA for an IPv6 flow."""
        return "AAAA" if (self.family or state.config.ip_families[0]) == "IPv6" else "A"


@dataclass(frozen=True, slots=True)
class Expectation:
    """What the simulation allows the kernel to do with a flow."""

    outcome: str  # the trace's outcome
    backend: str  # the trace's backend pod ("" when none)
    by_backend: tuple[tuple[str, str, str], ...] = ()  # (pod, outcome, source it sees) for every DNAT target
    seen: str = ""  # the source address the backend sees (no DNAT)
    dns: tuple[str, ...] = ()  # the addresses DNS answers (dns flows, service flows)
    summary: str = ""

    def allows(self, attempt: probe.Probe) -> str | None:
        """None when ``attempt`` is one the simulation allows, else why not."""
        if self.by_backend:
            if attempt.outcome == "connected":
                want = {b: (o, seen) for b, o, seen in self.by_backend}.get(attempt.backend)
                if want is None:
                    return f"connected to {attempt.backend or 'an unknown listener'}, not a backend knetsim lists"
                if want[0] != "connected":
                    return f"connected to {attempt.backend}, which knetsim says ends {want[0]}"
                if attempt.seen and attempt.seen != want[1]:
                    return f"{attempt.backend} saw source {attempt.seen}, knetsim says {want[1]}"
            elif attempt.outcome not in {o for _, o, _ in self.by_backend}:
                return f"{attempt.outcome}, where knetsim says {self.outcome}"
            return None
        elif attempt.outcome != self.outcome:
            return f"{attempt.outcome}, where knetsim says {self.outcome}"
        elif attempt.outcome == "connected" and self.backend and attempt.backend and attempt.backend != self.backend:
            return f"connected to {attempt.backend}, knetsim to {self.backend}"
        if attempt.outcome == "connected" and self.seen and attempt.seen and attempt.seen != self.seen:
            return f"the backend saw source {attempt.seen}, knetsim says {self.seen}"
        return None


@dataclass(frozen=True, slots=True)
class Result:
    flow: Flow
    expected: Expectation
    kernel: str  # a one-line description of what the kernel did
    attempts: tuple[dict[str, str], ...]
    problem: str | None  # None: agree

    def to_dict(self) -> dict[str, Any]:
        return {**self.flow.to_dict(), "knetsim": self.expected.summary, "kernel": self.kernel,
                "why": self.problem, "attempts": list(self.attempts)}


@dataclass
class Report:
    dataplane: str
    flows: int
    results: list[Result]
    total: int  # flows before sampling
    sample: list[Flow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def disagree(self) -> list[Result]:
        return [r for r in self.results if r.problem is not None]

    @property
    def agree(self) -> int:
        return len(self.results) - len(self.disagree)

    def to_dict(self) -> dict[str, Any]:
        return {"dataplane": self.dataplane, "flows": self.flows, "agree": self.agree,
                "disagree": [r.to_dict() for r in self.disagree], "total": self.total,
                "sampled": [str(f) for f in self.sample] if self.total > self.flows else [],
                "notes": list(self.notes)}


# --- the flows ---------------------------------------------------------------------------------


def _families_of(pod: Any) -> set[str]:
    return {family_of_ip(ip) for ip in (pod.pod_ips or (pod.pod_ip,)) if ip}


def flows(state: ClusterState) -> list[Flow]:
    clients = [p for _, p in sorted(state.pods.items()) if on_pod_network(p)]
    domain = state.config.cluster_domain
    primary = state.config.ip_families[0]
    out: list[Flow] = []
    services = [state.services[k] for k in sorted(state.services)]
    for client in clients:
        mine = _families_of(client)
        for svc in services:
            if svc.type == "ExternalName" or not svc.cluster_ip or svc.cluster_ip == "None":
                continue
            # One flow per ClusterIP family the client has an address of; the primary family's first.
            families = sorted({family_of_ip(ip) for ip in svc.cluster_ips or (svc.cluster_ip,)} & mine,
                              key=lambda f: f != primary)
            for family in families:
                for sp in svc.ports:
                    if sp.protocol in PROTOCOLS:
                        out.append(Flow("service", client.key, f"{svc.name}.{svc.namespace}.svc.{domain}.", sp.port,
                                        sp.protocol, "" if family == primary else family))
    for client in clients:
        for svc in services:
            if svc.type == "ExternalName" or svc.cluster_ip == "None":
                out.append(Flow("dns", client.key, f"{svc.name}.{svc.namespace}.svc.{domain}.", 53, "UDP"))
    targets: dict[tuple[str, int, str], None] = {}
    for _, pod in sorted(state.pods.items()):
        if on_pod_network(pod):
            ips = tuple(pod.pod_ips or (pod.pod_ip,))
        else:
            # A hostNetwork pod's podIPs are its node's addresses.
            ips = (tuple(pod.pod_ips) or (pod.host_ip,)) if pod.host_network and pod.host_ip else ()
        if not ips and pod.host_network and pod.node_name in state.nodes:
            node = state.nodes[pod.node_name]
            ips = tuple(node.internal_ips or (node.internal_ip,))
        if not any(ips) or pod.phase in ("Succeeded", "Failed"):
            continue
        for port, proto in pod_listens(pod):
            if proto in PROTOCOLS:
                for ip in ips:
                    targets.setdefault((ip, port, proto))
    for client in clients:
        mine = _families_of(client)
        for ip, port, proto in targets:
            if family_of_ip(ip) in mine:
                out.append(Flow("pod", client.key, ip, port, proto))
    for svc in services:
        for sp in svc.ports:
            if sp.protocol not in PROTOCOLS:
                continue
            if sp.node_port and svc.type in ("NodePort", "LoadBalancer"):
                families = {family_of_ip(ip) for ip in svc.cluster_ips or (svc.cluster_ip,)}
                for node in state.config.nodes:
                    for ip in node.addresses:  # a NodePort opens on the node's address of each Service family
                        if family_of_ip(ip) in families:
                            out.append(Flow("external", "external", ip, int(sp.node_port), sp.protocol))
            ips = (*(svc.load_balancer_ips if svc.type == "LoadBalancer" else ()), *svc.external_ips)
            for ip in dict.fromkeys(ips):
                out.append(Flow("external", "external", ip, sp.port, sp.protocol))
    return out


def sample(all_flows: Sequence[Flow], limit: int) -> list[Flow]:
    """The ``limit`` flows with the lowest hashes, in their original order: stable and spread out."""
    if len(all_flows) <= limit:
        return list(all_flows)
    ranked = sorted(range(len(all_flows)), key=lambda i: hashlib.sha256(str(all_flows[i]).encode()).digest())
    keep = set(ranked[:limit])
    return [f for i, f in enumerate(all_flows) if i in keep]


# --- knetsim's side ------------------------------------------------------------------------------


def _node_ip(state: ClusterState, name: str, family: str = "IPv4") -> str:
    node = next((n for n in state.config.nodes if n.name == name), None)
    if node is None:
        return ""
    return next((ip for ip in node.addresses if family_of_ip(ip) == family), node.ip)


def expectation(state: ClusterState, flow: Flow, plane: str) -> Expectation:
    if flow.kind == "dns":
        return _dns_expectation(state, flow)
    t = trace(state, flow.source, flow.target, protocol=flow.protocol, dataplane=plane)
    src_pod = state.pods.get(flow.source)
    dst_ip = flow.host
    dns: tuple[str, ...] = ()
    if flow.kind == "service":
        svc = next(s for s in state.services.values()
                   if f"{s.name}.{s.namespace}.svc.{state.config.cluster_domain}." == flow.host)
        dst_ip = svc.cluster_ip
        if flow.family:
            # The secondary family: DNS as the name's trace says (the same server answers A and AAAA), then the
            # connection to the ClusterIP of this family.
            dst_ip = next(ip for ip in svc.cluster_ips if family_of_ip(ip) == flow.family)
            if t.outcome not in ("dns-timeout", "nxdomain"):
                literal = join_host_port(dst_ip, flow.port)
                t = trace(state, flow.source, f"udp://{literal}" if flow.protocol == "UDP" else literal,
                          protocol=flow.protocol, dataplane=plane)
        dns = (dst_ip,) if t.outcome not in ("dns-timeout", "nxdomain") else ()
    summary = _summary(t)
    family = family_of_ip(dst_ip) or "IPv4"
    if src_pod is not None:
        src_ip = next((ip for ip in src_pod.pod_ips if family_of_ip(ip) == family), src_pod.pod_ip)
    else:
        src_ip = external_client_ip(dst_ip)
    seen = src_ip
    by_backend: tuple[tuple[str, str, str], ...] = ()
    if t.outcome not in ("dns-timeout", "nxdomain") and (state.service_by_ip(dst_ip) is not None
                                                         or state.node_by_ip(dst_ip) is not None):
        svc = state.service_by_ip(dst_ip)
        node = None
        if src_pod is None and svc is not None and dst_ip in (*svc.load_balancer_ips, *svc.external_ips):
            node = announcing_node(state, svc, dst_ip)  # where the L2 announcement brings it
        result = trace_packet(state, Packet(src_ip, dst_ip, flow.port, flow.protocol, node), plane)
        if result.verdict == "DNAT":
            masq = _node_ip(state, result.node, family) if result.masquerade else src_ip
            # A pod to a ClusterIP is masqueraded only when it reaches itself (hairpin, KUBE-SEP's -s rule).
            hairpin_only = src_pod is not None and svc is not None and dst_ip in svc.cluster_ips
            outcomes = _per_backend(state, flow, t, result.targets, src_pod is not None)
            by_backend = tuple((name, outcome, masq if not hairpin_only or ip == src_ip else src_ip)
                               for name, outcome, ip in outcomes)
    return Expectation(t.outcome, t.backend.pod if t.backend else "", by_backend, seen, dns, summary)


def _per_backend(state: ClusterState, flow: Flow, t: Trace, targets: Sequence[Any], from_pod: bool
                 ) -> list[tuple[str, str, str]]:
    """(pod, outcome, ip) of every DNAT target: the trace's own outcome unless the trace found that backends differ."""
    intermittent = any(f.code == "Intermittent" for f in t.findings)
    out = []
    for target in targets:
        ip, port = split_host_port(target.address)
        pod = endpoint_pod(state, ip, port, flow.protocol)
        name = pod.key if pod is not None else f"endpoint/{ip}"
        if not intermittent or (t.backend is not None and t.backend.pod == name):
            out.append((name, t.outcome, ip))
        elif from_pod:
            # Pod to ClusterIP is not masqueraded: the backend is seen as if reached directly.
            literal = join_host_port(ip, port)
            direct = trace(state, flow.source, literal if flow.protocol == "TCP" else f"udp://{literal}",
                           protocol=flow.protocol, dataplane=t.dataplane)
            out.append((name, direct.outcome, ip))
        else:
            out.append((name, "connected" if t.outcome != "connected" else "timeout", ip))
    return sorted(out)


def _summary(t: Trace) -> str:
    if t.outcome == "connected" and t.backend is not None:
        return f"connected to {t.backend.pod} ({join_host_port(t.backend.ip, t.backend.port)})"
    hop = t.failing_hop
    return f"{t.outcome}" + (f" at {hop.layer}: {hop.detail}" if hop is not None else "")


def _dns_expectation(state: ClusterState, flow: Flow) -> Expectation:
    pod = state.pods[flow.source]

    def reachable(ns: str, port: int, protocol: str) -> bool:
        return dns_reachable(state, pod, ns, port, protocol)[0]

    r = resolve(state, pod, flow.host, flow.qtype(state), reachable=reachable)
    outcome = {"resolved": "ok", "external": "cname"}.get(r.outcome, r.outcome)
    values = tuple(sorted(r.values)) if r.outcome == "resolved" else ()
    summary = f"{outcome}" + (f": {', '.join(values)}" if values else "")
    return Expectation(outcome, "", (), "", values, summary)


# --- the kernel's side ---------------------------------------------------------------------------


def _dns_class(answer: probe.DnsAnswer) -> str:
    if answer.outcome in ("timeout", "refused", "no-route"):
        return "timeout"
    if answer.cnames and not answer.addresses:
        return "cname"
    return answer.outcome


def _attempts(expected: Expectation) -> int:
    return 1 if len(expected.by_backend) <= 1 else min(12, 4 * len(expected.by_backend))


async def _kernel(topo: Topology, flow: Flow, expected: Expectation) -> tuple[str, list[probe.Probe], str | None]:
    """(what the kernel did, the attempts, the first disagreement or None)."""
    if flow.kind == "external":
        netns, src = topo.netns_of("ext"), external_client_ip(flow.host)
    else:
        netns, src = topo.netns_of(flow.source), None
    address = flow.host
    if flow.kind in ("service", "dns"):
        pod = topo.plan.pod(flow.source)
        nameserver = _nameserver(pod.resolv_conf if pod is not None else "")
        if not nameserver:
            return "no nameserver in resolv.conf", [], "the pod has no nameserver"
        answer = await probe.query(netns, nameserver, flow.host, flow.qtype(topo.state))
        got = _dns_class(answer)
        if flow.kind == "dns":
            problem = None
            if got != expected.outcome:
                problem = f"DNS {answer.describe()}, where knetsim says {expected.outcome}"
            elif got == "ok" and answer.addresses != expected.dns:
                problem = f"DNS answered {', '.join(answer.addresses)}, knetsim {', '.join(expected.dns)}"
            return f"DNS {answer.describe()}", [], problem
        if got != "ok":
            outcome = "dns-timeout" if got == "timeout" else "nxdomain"
            problem = None if outcome == expected.outcome else f"DNS {answer.describe()}, where knetsim says " \
                                                               f"{expected.outcome}"
            return f"DNS {answer.describe()}", [], problem
        if expected.outcome in ("dns-timeout", "nxdomain"):
            return f"DNS {answer.describe()}", [], f"DNS answered {answer.describe()}, where knetsim says " \
                                                   f"{expected.outcome}"
        if expected.dns and answer.addresses != expected.dns:
            return f"DNS {answer.describe()}", [], f"DNS answered {answer.describe()}, knetsim {expected.dns}"
        address = answer.addresses[0]
    attempts = await asyncio.gather(*(probe.connect(netns, address, flow.port, flow.protocol, src=src)
                                      for _ in range(_attempts(expected))))
    problem = next((p for p in (expected.allows(a) for a in attempts) if p), None)
    return _describe(attempts), list(attempts), problem


def _nameserver(resolv_conf: str) -> str:
    for line in resolv_conf.splitlines():
        if line.startswith("nameserver "):
            return line.split()[1]
    return ""


def _describe(attempts: Sequence[probe.Probe]) -> str:
    parts = []
    for outcome in sorted({a.outcome for a in attempts}):
        backends = sorted({a.backend for a in attempts if a.outcome == outcome and a.backend})
        parts.append(outcome + (f" to {', '.join(backends)}" if backends else ""))
    return "; ".join(parts)


def verify(state: ClusterState, dataplane: str | None = None, *, max_flows: int = MAX_FLOWS,
           topology: Topology | None = None, progress: Callable[[str], None] | None = None) -> Report:
    """Build (or reuse) a topology, send every flow, compare with the simulation."""
    plane = dataplane or state.config.dataplane
    every = flows(state)
    chosen = sample(every, max_flows)
    expected = [expectation(state, f, plane) for f in chosen]
    own = topology is None
    topo = topology or Topology.build(state, plane)
    try:
        if progress:
            progress(f"built {len(topo.plan.nodes)} nodes and {len(topo.plan.pods)} pods; probing {len(chosen)} flows")
        assert topo.reactor is not None

        async def run_all() -> list[tuple[str, list[probe.Probe], str | None]]:
            pairs = list(zip(chosen, expected, strict=True))
            first = await gather_bounded([_kernel(topo, f, e) for f, e in pairs], CONCURRENCY)
            # A timeout where knetsim expects something else (a connection, a REJECT, a DNS answer on the way
            # to a connection policy drops), or a listener that took the connection but did not say whose it
            # is, is probed again, a few flows at a time: with hundreds of sockets in flight on a starved
            # machine, an answer can miss its 1.5 s, and only a silence that repeats on a quiet socket is the
            # data plane's.
            again = [i for i, (kernel, attempts, problem) in enumerate(first)
                     if problem is not None and ("timeout" in kernel or any(
                         a.outcome == "connected" and not a.backend for a in attempts))]
            second = await gather_bounded([_kernel(topo, *pairs[i]) for i in again], RECHECK_CONCURRENCY)
            for i, outcome in zip(again, second, strict=True):
                first[i] = outcome
            return first
        outcomes = topo.reactor.call(run_all())
        notes = list(topo.listener_failures) + list(topo.plan.skipped)
    finally:
        if own:
            topo.close()
    results = [Result(f, e, k, tuple(a.to_dict() for a in attempts), problem)
               for f, e, (k, attempts, problem) in zip(chosen, expected, outcomes, strict=True)]
    return Report(plane, len(chosen), results, len(every), chosen if len(every) > len(chosen) else [], notes)


def format_report(report: Report) -> str:
    lines = [f"Data plane:  {report.dataplane} (kube-proxy rules as `knetsim render {report.dataplane}` prints them)"]
    if report.total > report.flows:
        lines.append(f"Flows:       {report.flows} of {report.total}, sampled (lowest hash of each flow's text):")
        lines += [f"  {f}" for f in report.sample]
    else:
        lines.append(f"Flows:       {report.flows}")
    lines.append(f"Agree:       {report.agree}")
    lines.append(f"Disagree:    {len(report.disagree)}")
    for note in report.notes:
        lines.append(f"Note:        {note}")
    for r in report.disagree:
        lines += ["", f"DISAGREE  {r.flow}", f"  knetsim: {r.expected.summary}", f"  kernel:  {r.kernel}",
                  f"  why:     {r.problem}"]
    return "\n".join(lines) + "\n"
