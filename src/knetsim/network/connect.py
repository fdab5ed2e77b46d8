"""The trace itself: from a pod (or from outside) to a target, through every layer.

See ``trace.py`` for the stage contract. Each ``_stage`` function returns either a final
``Trace`` (the layer said no, or answered) or what the next stage needs.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from ..cluster.hostports import published
from ..cluster.lookup import PodNotFound
from ..cluster.lookup import resolve_pod as _resolve_pod
from ..cluster.state import ClusterState
from ..dataplane.model import cluster_ip_of, family_of_ip, join_host_port
from ..dns.coredns import coredns_of
from ..dns.hostsfile import hosts_lookup
from ..dns.resolver import lookup_addresses
from ..model.names import is_ip as _is_ip
from ..model.objects import Pod, Service
from ..policy.engine import PolicyInputError, endpoint, evaluate
from . import kubeproxy
from .app import app_reply
from .balance import Balancer
from .dataplane import Candidate, dataplane_hop, usable_candidates
from .egress import to_outside
from .netexec import dial as netexec_dial
from .netexec import serves_netexec
from .trace import (
    EXTERNAL_CLIENT_IP,
    Backend,
    Finding,
    Hop,
    Reply,
    Target,
    Trace,
    TraceInputError,
    choose,
    listener_hop,
    listening,
    parse_target,
    service_port_for,
)


@dataclass(slots=True)
class _Run:
    """The mutable record of one trace while it is being built."""

    state: ClusterState
    source: str
    target: Target
    protocol: str
    method: str
    headers: Mapping[str, str]
    dataplane: str
    hops: list[Hop]
    findings: list[Finding]
    # A live cluster's: each connection's backend as the data plane picks it over time (``balance``).
    balancer: Balancer | None = None
    # (source pod, url, protocol) → a further trace, for a server that connects onwards (netexec's /dial).
    dial: Callable[[str, str, str], Trace] | None = None
    # (this run, the pod reached, its port) → the rest of the trace through the routing of a proxy that pod runs
    # (an Ingress controller, a Gateway's proxy), or None: given by tracer.py (external.into_ingress_controller,
    # gateway.into_gateway_proxy), so that this module imports neither.
    proxy: Callable[[_Run, Pod, int], Trace | None] | None = None

    def pick(self, targets: list[Candidate], client: str, frontend: str, svc: Service) -> Candidate:
        """This connection's backend among ``targets``: one trace picks deterministically from the client and the
        frontend; a live connection gets the balancer's pick (anew each time, or the client's under affinity)."""
        if self.balancer is None:
            return targets[choose(targets, f"{client}->{frontend}")]
        timeout = svc.session_affinity_timeout if svc.session_affinity == "ClientIP" else None
        return targets[self.balancer.pick(targets, client, frontend, timeout)]

    def request_host(self) -> str:
        """The host the request names: its Host header without the port, else the name or address dialled."""
        host = next((v for k, v in self.headers.items() if k.lower() == "host"), self.target.host)
        return host.rsplit(":", 1)[0] if host.count(":") == 1 else host

    def finish(self, outcome: str, backend: Backend | None = None, reply: Reply | None = None) -> Trace:
        return Trace(self.source, str(self.target), self.protocol, outcome, backend, tuple(self.hops),
                     tuple(self.findings), reply, self.dataplane)

    def fail(self, layer: str, outcome: str, detail: str, finding: Finding | None = None,
             data: Mapping[str, object] | None = None) -> Trace:
        self.hops.append(Hop(layer, "fail", detail, dict(data or {})))
        if finding is not None:
            self.findings.append(finding)
        return self.finish(outcome)


def resolve_pod(state: ClusterState, ref: str, default_namespace: str = "default") -> Pod:
    """``ns/pod``, ``pod`` or ``[ns/]deploy/NAME`` (see cluster.lookup), as a trace input error when unknown."""
    try:
        return _resolve_pod(state, ref, default_namespace)
    except PodNotFound as exc:
        raise TraceInputError(f"source: {exc} (use ns/pod, ns/deploy/NAME or external)") from None


# --- dns ------------------------------------------------------------------------------


def dns_reachable(state: ClusterState, pod: Pod, nameserver: str, port: int = 53,
                  protocol: str = "UDP") -> tuple[bool, str]:
    """Can ``pod``'s DNS query reach ``nameserver``? It is a flow like any other: data plane, then policy."""
    ok, detail, _ = dns_path(state, pod, nameserver, port, protocol)
    return ok, detail


def dns_path(state: ClusterState, pod: Pod, nameserver: str, port: int = 53,
             protocol: str = "UDP") -> tuple[bool, str, str]:
    """``dns_reachable``, and where a policy drops the query: ``egress`` (the pod's own), ``ingress`` (the DNS
    server's, on every endpoint), or "" (allowed, or dropped before policy)."""
    svc = state.service_by_ip(nameserver)
    if svc is not None:
        sp = service_port_for(svc, port, protocol)
        if sp is None:
            return False, f"Service {svc.key} has no {port}/{protocol} port", ""
        candidates = usable_candidates(state, svc, sp, family_of_ip(nameserver))
        if not candidates:
            return False, f"Service {svc.key} has no ready endpoints: the query is rejected", ""
        reasons, sides = [], set()
        for c in candidates:
            verdict = evaluate(state, pod, c.pod or c.ip, c.port, protocol)
            if verdict.allowed:
                return True, f"{svc.key} → {c.name} {join_host_port(c.ip, c.port)}/{protocol} allowed", ""
            side = verdict.egress if not verdict.egress.allowed else verdict.ingress
            sides.add(side.direction)
            reasons.append(f"{c.name}: {side.reason}")
        return False, "; ".join(reasons), "ingress" if sides == {"ingress"} else "egress"
    target = state.pod_by_ip(nameserver)
    try:
        verdict = evaluate(state, pod, target or nameserver, port, protocol)
    except PolicyInputError as exc:
        return False, str(exc), ""
    if not verdict.allowed:
        side = verdict.egress if not verdict.egress.allowed else verdict.ingress
        return False, side.reason, side.direction
    return True, f"{nameserver}:{port}/{protocol} allowed", ""


def _dns_stage(run: _Run, pod: Pod) -> list[str] | Trace:
    host = run.target.host
    if _is_ip(host):
        run.hops.append(Hop("dns", "skip", f"{host} is an address: no DNS query"))
        return [host]
    listed = hosts_lookup(run.state, pod, host)
    if listed is not None:
        run.hops.append(Hop("dns", "ok", f"{host} → {listed} from the pod's /etc/hosts (read before DNS: no query)"))
        return [listed]
    why: dict[str, str] = {}
    dropped_at: set[str] = set()  # the sides a policy drops the queries at (egress, ingress)

    def reachable(ns: str, port: int, protocol: str) -> bool:
        ok, detail, side = dns_path(run.state, pod, ns, port, protocol)
        why[ns] = detail
        if side:
            dropped_at.add(side)
        return ok

    # A, AAAA or both, as the pod's families call for (getaddrinfo with AF_UNSPEC).
    lookup = lookup_addresses(run.state, pod, host, reachable=reachable)
    resolution = lookup.primary
    asked = [q for r in lookup.resolutions for q in r.queries]
    qtypes = len(lookup.resolutions) > 1
    queries = [f"{q.name}{' ' + q.qtype if qtypes else ''} → {q.answer.rcode if q.answer else 'no answer'}"
               for q in asked]
    data = {"queries": [q.to_dict() for q in asked], "resolvConf": resolution.resolv_conf.text()}
    if resolution.outcome == "timeout":
        outage = coredns_of(run.state).outage
        if outage is not None and resolution.resolv_conf.effective_policy == "ClusterFirst":
            # The cluster's DNS itself is down: no policy is to blame (dns/coredns.py names the object).
            detail = f"the DNS query from {pod.key} to {', '.join(sorted(why)) or 'kube-dns'} never gets an answer: " \
                     f"{outage.message}"
            return run.fail("dns", "dns-timeout", detail, Finding(outage.code, "dns", f"{outage.subject}: "
                                                                  f"{outage.message}", outage.fix), data)
        detail = (f"the DNS query from {pod.key} to {', '.join(sorted(why))} never gets an answer: "
                  + "; ".join(why.values()))
        if dropped_at == {"ingress"}:  # the pod's egress lets it go: the DNS server's own ingress drops it
            return run.fail("dns", "dns-timeout", detail, Finding(
                "DNSIngressBlocked", "dns", detail,
                "allow DNS into kube-dns (UDP and TCP 53): in kube-system, a NetworkPolicy selecting k8s-app: "
                "kube-dns with policyTypes [Ingress] and ingress: [{from: [{namespaceSelector: {}}], ports: "
                "[{protocol: UDP, port: 53}, {protocol: TCP, port: 53}]}] (where a CNI policy drops it before "
                "NetworkPolicy is read, allow it in that policy's tier)"), data)
        return run.fail("dns", "dns-timeout", detail, Finding(
            "DNSEgressBlocked", "dns", detail,
            "allow egress to kube-dns (UDP and TCP 53): a NetworkPolicy with policyTypes [Egress] and "
            "egress: [{to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: kube-system}}}], "
            "ports: [{protocol: UDP, port: 53}, {protocol: TCP, port: 53}]}]"), data)
    if resolution.outcome == "external":
        answer = resolution.answer
        cname = answer.values("CNAME")[0] if answer and answer.values("CNAME") else host
        run.hops.append(Hop("dns", "ok", f"{resolution.fqdn or host} is a CNAME to {cname} (ExternalName)", data))
        run.hops.append(Hop("service", "info", "an ExternalName Service is only a DNS alias: no ClusterIP, no "
                            "proxying; the client connects to the external name itself"))
        return run.fail("service", "no-route", f"{cname} lies outside the cluster and is none of the names of the "
                        "outside knetsim models (cluster config: outside.hosts)")
    if not lookup.ok:
        detail = (f"{host} does not resolve from {pod.key} ({resolution.outcome}); tried: " + ", ".join(queries))
        finding = _name_hint(run.state, pod, host)
        return run.fail("dns", "nxdomain", detail, finding, data)
    ips = list(lookup.addresses) or list(resolution.values)
    order = f"; {lookup.order}" if lookup.order else ""
    cnames = resolution.answer.values("CNAME") if resolution.answer is not None else ()
    alias = f" (CNAME {cnames[-1]}, answered by the upstream)" if cnames else ""
    run.hops.append(Hop("dns", "ok", f"{host} → {resolution.fqdn}{alias} → {', '.join(ips)} (query "
                        f"{resolution.answered} of {len(resolution.queries)}{order})", data))
    if cnames and run.target.scheme in ("http", "https") and run.state.config.outside.host_at(ips[0]) is not None:
        target = cnames[-1].rstrip(".")
        run.findings.append(Finding(
            "ExternalNameHostHeader", "dns",
            f"{host} is an ExternalName alias of {target}: the request still says Host: {host} (and TLS asks for a "
            f"certificate of {host}); servers hosting several sites by name, most public ones, answer another site "
            "or 404 for it (knetsim's outside hosts answer any Host)",
            f"request {run.target.scheme}://{target}/ by its own name, or send Host: {target}"))
    return ips


def _name_hint(state: ClusterState, pod: Pod, host: str) -> Finding | None:
    """A short name that exists in another namespace: the most common DNS mistake."""
    first = host.split(".")[0]
    rest = host.split(".")[1:]
    matches = sorted(s.key for s in state.services.values() if s.name == first and s.namespace != pod.namespace)
    if not matches or (rest and rest[0] in state.namespaces):
        return None
    ns = matches[0].split("/")[0]
    return Finding("ShortNameOtherNamespace", "dns",
                   f"{first!r} is a Service in namespace {ns!r}, but a short name resolves in the client's own "
                   f"namespace ({pod.namespace!r}) first",
                   f"use {first}.{ns} or {first}.{ns}.svc.{state.config.cluster_domain}")


# --- from an address on --------------------------------------------------------------


def connect_ip(run: _Run, src_pod: Pod | None, src_ip: str, dst_ip: str, node: str) -> Trace:
    """Everything after DNS: ``dst_ip:port`` from ``src_ip`` (a pod, or an external client via ``node``)."""
    state = run.state
    port = run.target.port
    if ipaddress.ip_address(dst_ip).is_loopback:
        return _loopback(run, src_pod, dst_ip)
    svc = state.service_by_ip(dst_ip)
    if svc is not None:
        return _via_service(run, src_pod, src_ip, svc, dst_ip, node)
    dst_pod = state.pod_by_ip(dst_ip)
    if dst_pod is not None:
        run.hops.append(Hop("service", "skip", f"{dst_ip} is the IP of pod {dst_pod.key}: no Service involved"))
        run.hops.append(Hop("endpoints", "skip", "direct pod-to-pod traffic"))
        run.hops.append(Hop("dataplane", "skip", "no NAT: pod IPs are routed as they are"))
        return deliver(run, src_pod, src_ip, Candidate(dst_pod, dst_ip, port, dst_pod.node_name))
    node_obj = state.node_by_ip(dst_ip)
    if node_obj is not None:
        return _to_node(run, src_pod, src_ip, node_obj.name, dst_ip)
    return to_outside(run, src_pod, src_ip, dst_ip)


def _loopback(run: _Run, src_pod: Pod | None, dst_ip: str) -> Trace:
    """``localhost`` inside a pod: every container shares the pod's network namespace, so this is the pod
    itself, over ``lo`` — no Service, no kube-proxy, no NetworkPolicy (it never leaves the namespace)."""
    if src_pod is None:
        return run.fail("dataplane", "no-route", f"{dst_ip} is the client's own machine, outside the simulated "
                        "cluster")
    port = run.target.port
    if src_pod.host_network and src_pod.node_name and any(
            service_port_for(svc, port, run.protocol, node_port=True) for svc in run.state.services.values()):
        # A hostNetwork pod's loopback is its node's, where kube-proxy's rules see localhost:<NodePort> (served or
        # not as nodePortAddresses and the mode say: dataplane/nodeports.py).
        return _to_node(run, src_pod, dst_ip, src_pod.node_name, dst_ip)
    if src_pod.host_network and src_pod.node_name:
        # The node's loopback: a pod's hostPort on 127.0.0.1 (or on every address) is forwarded from it, and the
        # node's kube-proxy answers there.
        trace = _to_host_port(run, src_pod, dst_ip, src_pod.node_name, dst_ip) or _to_kube_proxy(
            run, src_pod.node_name, dst_ip)
        if trace is not None:
            return trace
    run.hops.append(Hop("service", "skip", f"{dst_ip} is the loopback address of {src_pod.key}'s network namespace, "
                        "which all its containers share"))
    run.hops.append(Hop("dataplane", "skip", "over lo: no kube-proxy rules, no CNI"))
    run.hops.append(Hop("policy", "skip", "loopback traffic never leaves the pod: NetworkPolicy does not apply"))
    hop = listener_hop(src_pod, port, run.protocol)
    run.hops.append(hop)
    backend = Backend(src_pod.key, dst_ip, port)
    if hop.verdict == "fail":
        return run.finish("refused", backend)
    reply_hop, reply = app_reply(run.state, run.dataplane, src_pod, src_pod, port, run.target, run.method,
                                 run.headers)
    run.hops.append(reply_hop)
    return run.finish("connected", backend, reply)


def _via_service(run: _Run, src_pod: Pod | None, src_ip: str, svc: Service, dst_ip: str, node: str) -> Trace:
    state = run.state
    port = run.target.port
    kind = "LoadBalancer IP" if dst_ip in svc.load_balancer_ips else (
        "external IP" if dst_ip in svc.external_ips else "ClusterIP")
    sp = service_port_for(svc, port, run.protocol)
    if sp is None:
        exposed = ", ".join(f"{p.port}/{p.protocol}" for p in svc.ports) or "no ports"
        run.hops.append(Hop("service", "fail", f"{dst_ip} is the {kind} of Service {svc.key}, which does not "
                            f"expose {port}/{run.protocol} (it exposes {exposed})"))
        run.findings.append(Finding("PortNotExposed", "service", f"Service {svc.key} has no port {port}/"
                                    f"{run.protocol}", f"connect to one of: {exposed}"))
        hop, verdict, _ = dataplane_hop(run.state, run.dataplane, src_ip, run.protocol, dst_ip, port, node)
        run.hops.append(hop)
        return run.finish("refused" if verdict == "REJECT" else "timeout")
    run.hops.append(Hop("service", "ok", f"{join_host_port(dst_ip, port)} is the {kind} of Service {svc.key}, port "
                        f"{sp.name or '<unnamed>'} {sp.port}/{sp.protocol} → targetPort {sp.target_port}"))
    candidates = usable_candidates(state, svc, sp, family_of_ip(dst_ip))
    if not candidates:
        from ..cluster.explain import explain_endpoints

        why = explain_endpoints(state, svc.namespace, svc.name)
        detail = f"Service {svc.key} has no ready endpoint for port {sp.name or sp.port}: {why.verdict}"
        fix = ""
        for hint in why.hints:
            fix = (f"the selector wants {hint.wanted} but pods have {hint.nearest}: kubectl patch service "
                   f"{svc.name} -n {svc.namespace} -p '{{\"spec\":{{\"selector\":{{\"{hint.nearest.split('=')[0]}\""
                   f":\"{hint.nearest.split('=', 1)[1]}\"}}}}}}'")
        run.hops.append(Hop("endpoints", "fail", detail, {"pods": [p.pod for p in why.pods]}))
        run.findings.append(Finding("NoEndpoints", "endpoints", detail, fix or "make the selector match ready pods"))
        hop, verdict, _ = dataplane_hop(state, run.dataplane, src_ip, run.protocol, dst_ip, port, node)
        run.hops.append(hop)
        return run.finish("refused" if verdict in ("REJECT", "NONE") else "timeout")
    run.hops.append(Hop("endpoints", "ok", f"{len(candidates)} usable endpoint(s): "
                        + ", ".join(join_host_port(c.ip, c.port) for c in candidates)))
    hop, verdict, targets = dataplane_hop(state, run.dataplane, src_ip, run.protocol, dst_ip, port, node)
    run.hops.append(hop)
    if verdict != "DNAT" or not targets:
        _local_policy_finding(run, svc, verdict, node)
        return run.finish("refused" if verdict == "REJECT" else "timeout")
    chosen = run.pick(targets, src_ip, f"{dst_ip}:{port}", svc)
    trace = deliver(run, src_pod, src_ip, chosen, via=svc.key, to_service=svc.key)
    return _check_other_backends(run, trace, src_pod, src_ip, targets, chosen, to_service=svc.key)


def _local_policy_finding(run: _Run, svc: Service, verdict: str, node: str) -> None:
    """A DROP for a Service with a Local traffic policy: no ready endpoint on the node that got the packet."""
    if verdict != "DROP":
        return
    local = [name for name, value in (("internalTrafficPolicy", svc.internal_traffic_policy),
                                      ("externalTrafficPolicy", svc.external_traffic_policy)) if value == "Local"]
    if local:
        run.findings.append(Finding(
            "NoLocalEndpoints", "dataplane",
            f"Service {svc.key} has {' and '.join(local)}: Local, and node {node} runs none of its ready endpoints, "
            "so the data plane drops the packet",
            f"run a backend on {node} (a DaemonSet, or spread the Deployment), or set {local[0]}: Cluster"))


def _check_other_backends(run: _Run, trace: Trace, src_pod: Pod | None, src_ip: str, targets: list[Candidate],
                          chosen: Candidate, egress_to: tuple[str, int] | None = None, to_service: str = "") -> Trace:
    """Would the other backends behave the same? Intermittent failures hide here."""
    differing = []
    for other in targets:
        if other is chosen or other.pod is None:
            continue
        ok = listening(other.pod, other.port, run.protocol)
        if ok:
            ok = _policy(run.state, src_pod, src_ip, other, run.protocol, egress_to, to_service)[0]
        if ok != trace.connected:
            differing.append(other.pod.key)
    if differing:
        message = (f"{len(differing)} of {len(targets)} backends behave differently from {chosen.pod.key} "
                   f"({', '.join(differing)}): the connection works only some of the time")
        run.findings.append(Finding("Intermittent", "endpoints", message,
                                    "trace each backend pod directly by its IP to see which layer differs"))
        return replace(trace, findings=tuple(run.findings))
    return trace


def _to_node(run: _Run, src_pod: Pod | None, src_ip: str, node: str, node_ip: str) -> Trace:
    state = run.state
    port = run.target.port
    family = family_of_ip(node_ip) or "IPv4"
    for svc in state.services.values():
        sp = service_port_for(svc, port, run.protocol, node_port=True)
        # Each family's proxier serves only the Services with a ClusterIP of its family: an IPv6-only
        # Service's NodePort is not open on the node's IPv4 address.
        if sp is None or not cluster_ip_of(svc, family):
            continue
        run.hops.append(Hop("service", "ok", f"{join_host_port(node_ip, port)} is NodePort {port} of Service "
                            f"{svc.key} on node {node} (port {sp.port} → targetPort {sp.target_port})"))
        candidates = usable_candidates(state, svc, sp, family_of_ip(node_ip))
        if not candidates:
            run.hops.append(Hop("endpoints", "fail", f"Service {svc.key} has no ready endpoints"))
        else:
            run.hops.append(Hop("endpoints", "ok", f"{len(candidates)} ready endpoint(s)"))
        hop, verdict, targets = dataplane_hop(state, run.dataplane, src_ip, run.protocol, node_ip, port, node)
        run.hops.append(hop)
        if verdict != "DNAT" or not targets:
            _local_policy_finding(run, svc, verdict, node)
            # A loopback NodePort no rule takes reaches no listener: the kernel answers with a reset.
            refused = verdict == "REJECT" or ipaddress.ip_address(node_ip).is_loopback
            return run.finish("refused" if refused else "timeout")
        chosen = run.pick(targets, src_ip, f"{node_ip}:{port}", svc)
        # A pod sending to another node's NodePort leaves its own node before any DNAT: its
        # egress policy sees the node address and the NodePort.
        egress_to = (node_ip, port) if src_pod is not None and src_pod.node_name != node else None
        trace = deliver(run, src_pod, src_ip, chosen, via=svc.key, egress_to=egress_to)
        return _check_other_backends(run, trace, src_pod, src_ip, targets, chosen, egress_to)
    # Not a NodePort: a pod may publish the port on the node (hostPort), or a host-network pod on that node
    # listen there (the API server on 6443).
    trace = _to_host_port(run, src_pod, src_ip, node, node_ip) or _to_kube_proxy(run, node, node_ip)
    if trace is not None:
        return trace
    for pod in state.pods.values():
        if pod.host_network and pod.node_name == node and listening(pod, port, run.protocol):
            run.hops.append(Hop("service", "skip", f"{node_ip} is node {node}; {pod.key} (hostNetwork) listens "
                                f"on {port}"))
            return deliver(run, src_pod, src_ip, Candidate(pod, node_ip, port, node))
    run.hops.append(Hop("service", "skip", f"{node_ip} is node {node}; no NodePort {port}/{run.protocol}"))
    return run.fail("listener", "refused", f"nothing on node {node} listens on {port}/{run.protocol}: "
                    "the node's kernel answers with a reset")


def _to_host_port(run: _Run, src_pod: Pod | None, src_ip: str, node: str, address: str) -> Trace | None:
    """A connection to a node address the CNI's portmap plugin forwards to a pod (its ``hostPort`` on that
    ``hostIP``, or on every address), or None when no pod publishes it."""
    port = run.target.port
    found = published(run.state.pods.values(), node, address, port, run.protocol)
    if found is None:
        return None
    pod, container_port = found
    run.hops.append(Hop("service", "skip", f"{join_host_port(address, port)} is node {node}'s; {pod.key} publishes "
                        f"it (hostPort {port}/{run.protocol})"))
    run.hops.append(Hop("dataplane", "ok", f"portmap on {node}: DNAT {join_host_port(address, port)} → "
                        f"{join_host_port(pod.pod_ip, container_port)}"))
    return deliver(run, src_pod, src_ip, Candidate(pod, pod.pod_ip, container_port, node))


def _to_kube_proxy(run: _Run, node: str, address: str) -> Trace | None:
    """A connection to the node's kube-proxy (its health check on 10256, its metrics server on the node's
    127.0.0.1:10249: network/kubeproxy.py), or None when kube-proxy does not listen there."""
    port = run.target.port
    if not kubeproxy.listens(run.state.config.dataplane, address, port, run.protocol):
        return None
    stored = run.state.nodes.get(node)
    pod = next((p for p in run.state.pods.values() if p.namespace == "kube-system" and p.node_name == node
                and p.labels.get("k8s-app") == "kube-proxy"), None)
    name = pod.key if pod is not None else f"kube-proxy on {node}"
    run.hops.append(Hop("service", "skip", f"{join_host_port(address, port)} is node {node}'s; {name} (hostNetwork) "
                        f"listens on {port}"))
    run.hops.append(Hop("policy", "skip", "kube-proxy runs in the node's network namespace: no NetworkPolicy "
                        "selects it"))
    path = run.target.path + (f"?{run.target.query}" if run.target.query else "")
    reply = (kubeproxy.healthz_reply(stored.raw if stored is not None else {}, path) if port == kubeproxy.HEALTHZ_PORT
             else kubeproxy.metrics_reply(run.state.config.dataplane, path))
    run.hops.append(Hop("app", "ok", f"{run.method} {path} → HTTP {reply.status} from {name}"))
    return run.finish("connected", Backend(name, address, port), reply)


def _policy(state: ClusterState, src_pod: Pod | None, src_ip: str, target: Candidate, protocol: str,
            egress_to: tuple[str, int] | None = None, to_service: str = ""
            ) -> tuple[bool, str, dict[str, object], object]:
    """(allowed, detail, data, deciding side) for the hop to ``target``; ``to_service``: the Service whose virtual
    IP the packet was addressed to (a rule may match on it: Antrea's toServices).

    Egress belongs to the sending pod, whatever the address translation; ingress sees the
    source after SNAT (a masqueraded NodePort arrives from a node address). Without NAT both
    are one evaluation, as ``knetsim policy check`` would make it.
    """
    sender: Pod | str = src_pod if src_pod is not None else src_ip
    if src_pod is not None and src_ip != src_pod.pod_ip and src_ip in src_pod.pod_ips:
        sender = src_ip  # the pod's other family: ipBlocks match the address the packet carries
    seen: Pod | str = target.snat or sender
    dst: Pod | str = target.pod if target.pod is not None else target.ip
    if target.pod is not None and target.ip != target.pod.pod_ip and target.ip in target.pod.pod_ips:
        dst = target.ip
    if to_service:
        dst = replace(endpoint(state, dst), service=to_service)
    if seen is sender and egress_to is None:
        verdict = evaluate(state, sender, dst, target.port, protocol)
        egress, ingress, data = verdict.egress, verdict.ingress, {"policy": verdict.to_dict()}
        caveats = verdict.caveats
    else:
        out = evaluate(state, sender, egress_to[0] if egress_to else dst, egress_to[1] if egress_to else target.port,
                       protocol)
        inbound = evaluate(state, seen, dst, target.port, protocol)
        egress, ingress = out.egress, inbound.ingress
        data = {"policy": inbound.to_dict(), "egressPolicy": out.to_dict()}
        caveats = tuple(dict.fromkeys((*out.caveats, *inbound.caveats)))
    # A policy the answer leaves out (the CNI does not enforce it, or knetsim does not evaluate it) is named on
    # the hop it could change.
    left_out = "".join(f"; caveat: {c.text()}" for c in caveats)
    if not egress.allowed:
        return False, f"egress of {egress.endpoint}: {egress.reason}{left_out}", data, egress
    if not ingress.allowed:
        return False, f"ingress of {ingress.endpoint}: {ingress.reason}{left_out}", data, ingress
    return True, f"egress: {egress.reason}; ingress: {ingress.reason}{left_out}", data, None


def deliver(run: _Run, src_pod: Pod | None, src_ip: str, target: Candidate, via: str = "",
            egress_to: tuple[str, int] | None = None, request: Target | None = None, to_service: str = "") -> Trace:
    """policy → listener → app, on the post-DNAT address and port of ``target``. ``request`` is the HTTP
    request as a proxy in between forwards it (a rewritten path), the app's input when given; ``to_service``:
    the Service whose virtual IP the packet was addressed to (a proxy's upstream is an endpoint: none)."""
    state = run.state
    port = target.port
    allowed, detail, data, side = _policy(state, src_pod, src_ip, target, run.protocol, egress_to, to_service)
    backend = Backend(target.name, target.ip, port, target.snat or src_ip)
    if not allowed:
        fix = side.fix(f"{run.protocol}/{port}") if side is not None else ""  # type: ignore[attr-defined]
        # An Antrea Reject rule answers the client (a TCP RST: "connection refused"); every other deny drops.
        rejected = bool(getattr(side, "rejected", False))
        run.hops.append(Hop("policy", "fail", detail + (" — the client is refused (TCP RST)" if rejected
                                                        else " — the packet is dropped"), data))
        run.findings.append(Finding("PolicyDrop", "policy", detail, fix))
        return Trace(run.source, str(run.target), run.protocol, "refused" if rejected else "timeout", backend,
                     tuple(run.hops),
                     tuple(run.findings), None, run.dataplane)
    run.hops.append(Hop("policy", "ok", detail, data))
    if target.pod is None:
        return run.fail("listener", "no-route", f"{join_host_port(target.ip, port)} is an endpoint outside the pod "
                        f"network (an address written by hand for {via or 'the Service'}: an EndpointSlice, or "
                        "Endpoints the mirroring controller copied into one); knetsim does not "
                        "simulate what answers there")
    dst_pod = target.pod
    hop = listener_hop(dst_pod, port, run.protocol)
    run.hops.append(hop)
    if hop.verdict == "fail":
        if via:
            run.findings.append(Finding("TargetPortNotListening", "listener",
                                        f"Service {via} sends to port {port}, where {dst_pod.key} does not listen",
                                        "set the Service's targetPort to a port the container listens on "
                                        "(a named containerPort is safest)"))
        return Trace(run.source, str(run.target), run.protocol, "refused", backend, tuple(run.hops),
                     tuple(run.findings), None, run.dataplane)
    if run.proxy is not None and request is None:
        # A proxy routes what reaches its pod from inside the cluster (or through a NodePort) as it routes a client
        # of its own entry: an Ingress controller or a Gateway's proxy, by the Host header, as its own pod. A proxy
        # reached again by its own proxied request says so (a loop), so this never recurses without end.
        routed = run.proxy(run, dst_pod, port)
        if routed is not None:
            return routed
    src_ref: Pod | str = src_pod if src_pod is not None else src_ip
    reply_hop, reply = app_reply(state, run.dataplane, src_ref, dst_pod, port, request or run.target, run.method,
                                 run.headers, client_ip=backend.client_ip)
    asked = request or run.target
    if (reply is not None and reply.status == 200 and run.dial is not None and asked.path == "/dial"
            and serves_netexec(state, dst_pod.key, port, "TCP")):
        # netexec's /dial connects onwards from its own pod: each try is traced like any connection.
        status, body = netexec_dial(state, asked.query, lambda url, proto: run.dial(dst_pod.key, url, proto))
        reply = Reply(status, body, {"content-type": "text/plain; charset=utf-8"})
        reply_hop = Hop("app", "ok", f"{run.method} /dial → HTTP {status} from {dst_pod.key} (agnhost netexec "
                        f"dialled onwards: {body})")
    run.hops.append(reply_hop)
    return Trace(run.source, str(run.target), run.protocol, "connected", backend, tuple(run.hops),
                 tuple(run.findings), reply, run.dataplane)


def proxy_loop(run: _Run, pod: Pod, finding: Finding, reply: Reply) -> Trace:
    """A proxy (an Ingress controller, a Gateway's proxy) whose routed request comes back to it: it routes it again,
    and again, until it runs out of connections, and the client gets an error (``reply``)."""
    run.findings.append(replace(finding, message=f"{finding.message}: each request comes back to {pod.key}, which "
                                                "routes it again"))
    run.hops.append(Hop("app", "fail", f"{pod.key} receives its own proxied request and routes it to itself again: "
                        "the request loops until the proxy runs out of connections; the client gets a 5xx"))
    return run.finish("connected", None, reply)


__all__ = ["EXTERNAL_CLIENT_IP", "connect_ip", "deliver", "dns_reachable", "parse_target"]
