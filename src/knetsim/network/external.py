"""Traffic from outside the cluster: an Ingress host, a NodePort on a node IP, a LoadBalancer IP.

An external client is ``203.0.113.10`` (TEST-NET-3). Through an Ingress the path is
client → ingress controller pod → backend pod: ingress-nginx proxies to the endpoints itself
(not through the ClusterIP), so NetworkPolicy sees the controller pod as the source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model.objects import Pod
from .trace import EXTERNAL_CLIENT_IP, Backend, Finding, Hop, Reply, Trace, _is_ip, choose

if TYPE_CHECKING:
    from .connect import _Run


def trace_external(run: _Run) -> Trace:
    from .connect import connect_ip

    state = run.state
    host = run.target.host
    run.source = f"external ({EXTERNAL_CLIENT_IP})"
    if _is_ip(host):
        svc = state.service_by_ip(host)
        if svc is not None and host in (*svc.load_balancer_ips, *svc.external_ips):
            node = _announcing_node(run, svc.key, host)
            run.hops.append(Hop("dns", "skip", f"{host} is an address; node {node} answers for it (L2 announcement)"))
            return connect_ip(run, None, EXTERNAL_CLIENT_IP, host, node)
        if svc is not None:
            return run.fail("service", "no-route", f"{host} is the ClusterIP of {svc.key}: ClusterIPs are virtual and "
                            "exist only inside the cluster; from outside use a NodePort, a LoadBalancer or an Ingress")
        node = state.node_by_ip(host)
        if node is not None:
            if run.target.port in (80, 443) and _controller_on(state, node.name) is not None:
                run.hops.append(Hop("dns", "skip", f"{host} is node {node.name}, where the ingress controller "
                                    "listens on hostPort 80/443"))
                return through_ingress(run, host)
            run.hops.append(Hop("dns", "skip", f"{host} is node {node.name}"))
            return connect_ip(run, None, EXTERNAL_CLIENT_IP, host, node.name)
        if state.pod_by_ip(host) is not None:
            return run.fail("service", "no-route", f"{host} is a pod IP: the pod network is not routed from "
                            "outside the cluster")
        return run.fail("service", "no-route", f"{host} is no address of this cluster")
    return through_ingress(run, host)


def _announcing_node(run: _Run, key: str, ip: str) -> str:
    nodes = sorted(run.state.nodes)
    return nodes[choose(nodes, f"{key}/{ip}")]


def _controller_on(state, node: str) -> Pod | None:  # type: ignore[no-untyped-def]
    from ..ingress import running_controllers

    for controller in running_controllers(state):
        for cp in controller.pods:
            if cp.pod.node_name == node:
                return cp.pod
    return None


def through_ingress(run: _Run, host: str) -> Trace:
    from ..ingress import route
    from .connect import _ready_endpoints, deliver

    state = run.state
    scheme = run.target.scheme if run.target.scheme in ("http", "https") else "http"
    result = route(state, host, run.target.path, scheme=scheme)
    if not _is_ip(host):
        run.hops.append(Hop("dns", "info", f"{host} is not a cluster name: an external client resolves it with "
                            "public DNS, assumed to point at the ingress controller"))
    run.hops.append(Hop("ingress", "ok" if result.routed else "fail", result.summary, {"route": result.to_dict()}))
    if result.controller_pod is None:
        return run.fail("ingress", "no-route", result.summary if not result.routed else
                        "no ready ingress controller pod serves this class")
    controller = state.pods[result.controller_pod]
    if not result.routed or result.service is None or result.service_port is None:
        reply = Reply(404, "<html><body><h1>404 Not Found</h1><hr><center>nginx</center></body></html>\n")
        run.findings.append(Finding("IngressNoMatch", "ingress", result.summary,
                                    "add a rule for this host and path, or a spec.defaultBackend"))
        run.hops.append(Hop("app", "fail", f"the controller's default backend answers 404 ({controller.key})"))
        return Trace(run.source, str(run.target), run.protocol, "connected", None, tuple(run.hops),
                     tuple(run.findings), reply, run.dataplane)
    svc = state.services.get(result.service)
    sp = next((p for p in svc.ports if p.port == result.service_port), None) if svc else None
    if svc is None or sp is None:
        reply = Reply(503, "<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>\n")
        run.hops.append(Hop("service", "fail", f"backend {result.service}:{result.service_port} does not exist"))
        missing = f"{result.service}:{result.service_port}"
        run.findings.append(Finding("IngressBackendMissing", "service",
                                    f"the Ingress points at {missing}, which does not exist",
                                    "fix the backend service name/port in the Ingress, or create the Service"))
        return Trace(run.source, str(run.target), run.protocol, "connected", None, tuple(run.hops),
                     tuple(run.findings), reply, run.dataplane)
    run.hops.append(Hop("service", "ok", f"backend Service {svc.key} port {sp.name or sp.port} → targetPort "
                        f"{sp.target_port}; ingress-nginx proxies to its endpoints directly"))
    candidates = _ready_endpoints(state, svc, sp)
    if not candidates:
        reply = Reply(503, "<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>\n")
        run.hops.append(Hop("endpoints", "fail", f"{svc.key} has no ready endpoints: the controller answers 503"))
        run.findings.append(Finding("IngressBackendNoEndpoints", "endpoints", f"{svc.key} has no ready endpoints",
                                    f"knetsim endpoints {svc.name} -n {svc.namespace}"))
        return Trace(run.source, str(run.target), run.protocol, "connected", None, tuple(run.hops),
                     tuple(run.findings), reply, run.dataplane)
    run.hops.append(Hop("endpoints", "ok", ", ".join(f"{c.ip}:{c.port}" for c in candidates)))
    run.hops.append(Hop("dataplane", "skip", "no kube-proxy on this hop: the controller connects to the pod IP"))
    chosen = candidates[choose(candidates, f"{EXTERNAL_CLIENT_IP}->{host}{run.target.path}")]
    trace = deliver(run, controller, controller.pod_ip, chosen.pod, chosen.port, via=svc.key)
    if trace.outcome == "timeout":
        # nginx gives up on the upstream and answers the client itself.
        reply = Reply(504, "<html><body><h1>504 Gateway Time-out</h1></body></html>\n")
        return Trace(trace.source, trace.target, trace.protocol, "timeout", Backend(chosen.pod.key, chosen.ip,
                     chosen.port), trace.hops, trace.findings, reply, trace.dataplane)
    if trace.outcome == "refused":
        reply = Reply(502, "<html><body><h1>502 Bad Gateway</h1></body></html>\n")
        return Trace(trace.source, trace.target, trace.protocol, "refused", trace.backend, trace.hops,
                     trace.findings, reply, trace.dataplane)
    return trace
