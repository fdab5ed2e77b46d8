"""Traffic from outside the cluster: an Ingress host, a NodePort on a node IP, a LoadBalancer IP.

An external client is ``203.0.113.10`` (TEST-NET-3). Through an Ingress the path is
client → ingress controller pod → backend pod: ingress-nginx proxies to the endpoints itself
(not through the ClusterIP), so NetworkPolicy sees the controller pod as the source.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..cluster.state import ClusterState
from ..dataplane.model import join_host_port
from ..model.names import is_ip as _is_ip
from ..model.objects import Pod, Service
from .gateway import gateway_for_address, gateway_for_host, through_gateway
from .trace import EXTERNAL_CLIENT_IP, Backend, Finding, Hop, Reply, Trace, choose, external_client_ip

if TYPE_CHECKING:
    from .connect import _Run


def trace_external(run: _Run) -> Trace:
    from .connect import connect_ip

    state = run.state
    host = run.target.host
    run.source = f"external ({EXTERNAL_CLIENT_IP})"
    if _is_ip(host):
        client = external_client_ip(host)  # an IPv6 destination is reached from the client's IPv6 address
        run.source = f"external ({client})"
        svc = state.service_by_ip(host)
        gateway = gateway_for_address(state, host) if svc is not None else None
        if gateway is not None:
            return through_gateway(run, gateway, host)
        if svc is not None and host in (*svc.load_balancer_ips, *svc.external_ips):
            node = _announcing_node(run, svc, host)
            run.hops.append(Hop("dns", "skip", f"{host} is an address; node {node} answers for it (L2 announcement)"))
            return connect_ip(run, None, client, host, node)
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
            return connect_ip(run, None, client, host, node.name)
        if state.pod_by_ip(host) is not None:
            return run.fail("service", "no-route", f"{host} is a pod IP: the pod network is not routed from "
                            "outside the cluster")
        return run.fail("service", "no-route", f"{host} is no address of this cluster")
    # A host a Gateway names enters through that Gateway (network/gateway.py), else the Ingress controller.
    gateway = gateway_for_host(state, host, run.target.port, run.target.scheme)
    if gateway is not None:
        return through_gateway(run, gateway, host)
    return through_ingress(run, host)


EXCLUDE_FROM_LB = "node.kubernetes.io/exclude-from-external-load-balancers"


def _announcing_node(run: _Run, svc: Service, ip: str) -> str:
    return announcing_node(run.state, svc, ip)


def announcing_node(state: ClusterState, svc: Service, ip: str) -> str:
    """The node that answers for a LoadBalancer IP (MetalLB L2 / cloud-provider-kind).

    Nodes labelled exclude-from-external-load-balancers (kind's control-plane) never do; with
    externalTrafficPolicy Local only nodes running a ready endpoint do (the health check
    node port says so), so Local traffic is not dropped by choice of node.
    """
    from .dataplane import usable_candidates

    eligible = sorted(n.name for n in state.nodes.values() if EXCLUDE_FROM_LB not in n.labels) or sorted(state.nodes)
    if svc.external_traffic_policy == "Local":
        local = sorted({c.node for sp in svc.ports for c in usable_candidates(state, svc, sp) if c.node} &
                       set(eligible))
        eligible = local or eligible
    return eligible[choose(eligible, f"{svc.key}/{ip}")]


def _controller_on(state, node: str) -> Pod | None:  # type: ignore[no-untyped-def]
    from ..ingress import running_controllers

    for controller in running_controllers(state):
        for cp in controller.pods:
            pod = state.pods.get(cp.pod)
            if pod is not None and pod.node_name == node:
                return pod
    return None


# Router outcomes where the controller answers as its annotations say (the auth-error outcome is not one).
ANNOTATED_ANSWERS = frozenset({"redirect", "denied", "unauthorized", "payload-too-large", "preflight"})


def through_ingress(run: _Run, host: str) -> Trace:
    from ..ingress import RouteError, route
    from .connect import deliver
    from .dataplane import usable_candidates

    state = run.state
    scheme = run.target.scheme if run.target.scheme in ("http", "https") else "http"
    try:
        query = f"?{run.target.query}" if run.target.query else ""
        length = next((v for k, v in run.headers.items() if k.lower() == "content-length"), None)
        result = route(state, host, run.target.path + query, scheme=scheme, method=run.method or "GET",
                       headers=tuple((k, v) for k, v in run.headers.items() if k.lower() != "host"),
                       body_size=int(length) if length is not None and length.isdigit() else None)
    except RouteError as exc:
        from .trace import TraceInputError

        raise TraceInputError(str(exc)) from None
    from_outside = run.source.startswith("external")
    if not _is_ip(host) and from_outside:
        run.hops.append(Hop("dns", "info", f"{host} is not a cluster name: an external client resolves it with "
                            "public DNS, assumed to point at the ingress controller"))
    # What the annotations ask the controller to answer itself (a redirect, 401/403 to a client without
    # access, 413, a preflight) is the configuration working, not a broken path; an auth service that errs is not.
    answered = result.outcome in ANNOTATED_ANSWERS
    # ssl-passthrough: the controller's TCP proxy hands the connection to the Service; the pod answers it.
    passed = result.outcome == "passed-through"
    run.hops.append(Hop("ingress", "ok" if result.routed or answered or passed else "fail", result.summary,
                        {"route": result.to_dict()}))
    controller_key = result.controller.pod if result.controller is not None else None
    if controller_key is None or controller_key not in state.pods:
        run.findings.append(Finding("IngressNoController", "ingress", result.summary,
                                    "set spec.ingressClassName to a class whose controller runs (kubectl get "
                                    "ingressclass), or mark one IngressClass as the default"))
        return run.finish("no-route")
    controller = state.pods[controller_key]
    if result.response is not None and result.outcome not in ("routed", "not-found", "backend-missing"):
        # The controller answers itself: a redirect, a CORS preflight, 403/401/413, an auth error (annotations).
        response = result.response
        run.hops.append(Hop("app", "info" if answered or response.status < 400 else "fail",
                            f"{controller.key} answers {response.status} itself: "
                            f"{result.steps[-1].effect if result.steps else result.summary}"))
        # As nginx writes them (names keep their case on the wire; network.wire adds Date and Connection).
        reply = Reply(response.status, response.body, dict(response.headers), "nginx")
        return Trace(run.source, str(run.target), run.protocol, "connected", None, tuple(run.hops),
                     tuple(run.findings), reply, run.dataplane)
    backend = result.backend
    if passed and (backend is None or not backend.routable):
        run.hops.append(Hop("app", "fail", "the controller's TCP proxy has no Service to dial: it closes the "
                            "connection"))
        return run.finish("refused")
    if not (result.routed or passed) or backend is None or backend.service is None:
        status = result.http_status or 404
        # The controller's answer as route() gives it (its default backend's 404 for a request no rule takes).
        response = result.response
        reply = Reply(status, response.body, dict(response.headers), "nginx") if response is not None \
            else nginx_reply(status)
        run.findings.append(Finding("IngressNoMatch" if status == 404 else "IngressBackendProblem", "ingress",
                                    result.summary, "add a rule for this host and path, a spec.defaultBackend, or "
                                    "fix the backend the Ingress names"))
        run.hops.append(Hop("app", "fail", f"{controller.key} answers {status} itself"))
        return Trace(run.source, str(run.target), run.protocol, "connected", None, tuple(run.hops),
                     tuple(run.findings), reply, run.dataplane)
    svc = state.services.get(backend.service)
    sp = next((p for p in svc.ports if p.port == backend.port), None) if svc else None
    if svc is None or sp is None:
        return _controller_error(run, 503, f"backend {backend.describe()} does not exist",
                                 "IngressBackendMissing", "fix the backend Service name/port in the Ingress")
    how = ("the controller's TCP proxy dials its ClusterIP (ssl-passthrough)" if passed else
           "ingress-nginx proxies to its endpoints directly")
    run.hops.append(Hop("service", "ok", f"backend Service {svc.key} port {sp.name or sp.port} → targetPort "
                        f"{sp.target_port}; {how}"))
    candidates = usable_candidates(state, svc, sp)
    if not candidates:
        run.hops.append(Hop("endpoints", "fail", f"{svc.key} has no ready endpoints: the controller answers 503"))
        run.findings.append(Finding("IngressBackendNoEndpoints", "endpoints", f"{svc.key} has no ready endpoints",
                                    f"knetsim endpoints {svc.name} -n {svc.namespace}"))
        reply = nginx_reply(503)
        return Trace(run.source, str(run.target), run.protocol, "connected", None, tuple(run.hops),
                     tuple(run.findings), reply, run.dataplane)
    run.hops.append(Hop("endpoints", "ok", ", ".join(join_host_port(c.ip, c.port) for c in candidates)))
    run.hops.append(Hop("dataplane", "skip", "kube-proxy picks one of the endpoints for the ClusterIP" if passed else
                        "no kube-proxy on this hop: the controller connects to the pod IP"))
    pinned = result.upstream_request.endpoint if result.upstream_request is not None else None
    chosen = next((c for c in candidates if pinned is not None and (c.ip, c.port) == (pinned.ip, pinned.port)),
                  None) or candidates[choose(candidates, f"{EXTERNAL_CLIENT_IP}->{host}{run.target.path}")]
    forwarded = None
    if result.upstream is not None and result.upstream != result.request.path:
        path, _, query = result.upstream.partition("?")
        forwarded = replace(run.target, path=path, query=query)
    trace = deliver(run, controller, controller.pod_ip, chosen, via=svc.key, request=forwarded)
    if trace.reply is not None and result.response_headers:
        # Headers the controller adds to the backend's answer (CORS, HSTS, an affinity cookie).
        merged = {**dict(trace.reply.headers), **result.response_headers}
        trace = replace(trace, reply=replace(trace.reply, headers=merged))
    if trace.reply is not None:
        # nginx relays the backend's answer with its own Date and Connection and no Server line.
        trace = replace(trace, reply=replace(trace.reply, writer="nginx"))
    if trace.outcome == "timeout":
        # nginx gives up on the upstream and answers the client itself.
        reply = nginx_reply(504)
        return Trace(trace.source, trace.target, trace.protocol, "timeout", Backend(chosen.name, chosen.ip,
                     chosen.port), trace.hops, trace.findings, reply, trace.dataplane)
    if trace.outcome == "refused":
        reply = nginx_reply(502)
        return Trace(trace.source, trace.target, trace.protocol, "refused", trace.backend, trace.hops,
                     trace.findings, reply, trace.dataplane)
    return trace


def into_ingress_controller(run: _Run, pod: Pod, port: int) -> Trace | None:
    """A request that reached an Ingress controller pod on its HTTP or HTTPS port (its ``http``/``https``
    containerPorts, 80 and 443 by default) other than through its own entry: a pod calling the controller's
    Service, a client its NodePort. The controller routes it as any other: by its Host header (or the name the
    client used). None for any other pod or port."""
    from ..ingress.controllers import controllers_among

    if run.target.scheme not in ("http", "https") or not controllers_among([pod]):
        return None
    served = {p.container_port: p.name for c in pod.containers for p in c.ports if p.name in ("http", "https")}
    kind = served.get(port) if served else {80: "http", 443: "https"}.get(port)
    if kind is None:
        return None
    if any(h.layer == "ingress" for h in run.hops):
        from .connect import proxy_loop

        return proxy_loop(run, pod, Finding("IngressBackendLoop", "ingress", "the Ingress's backend is the "
                                            "controller's own Service", "point the Ingress at the application's "
                                            "Service, not at the controller's"), nginx_reply(500))
    if run.target.scheme == "http" and kind == "https":
        # nginx's answer to plain HTTP on an ssl listener (ngx_http_special_response.c, the 497 page, sent as 400).
        run.hops.append(Hop("app", "fail", f"{pod.key} listens with TLS on {port}: nginx answers a plain HTTP "
                            "request there with 400 (The plain HTTP request was sent to HTTPS port)"))
        return run.finish("connected", None, Reply(400, PLAIN_HTTP_TO_HTTPS, {"Content-Type": "text/html"}, "nginx"))
    if run.target.scheme == "https" and kind == "http":
        return run.fail("app", "refused", f"{pod.key} speaks plain HTTP on {port}: the TLS handshake fails (curl: "
                        "wrong version number); use http:// or the https port")
    return through_ingress(run, run.request_host())


PLAIN_HTTP_TO_HTTPS = ("<html>\r\n<head><title>400 The plain HTTP request was sent to HTTPS port</title></head>\r\n"
                       "<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n<center>The plain HTTP request was "
                       "sent to HTTPS port</center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")


def nginx_reply(status: int) -> Reply:
    """An answer the controller's nginx writes itself: its own page for ``status``."""
    from ..ingress import errorpages
    from ..ingress.phases import default_backend_answer

    if status == 404:
        answer = default_backend_answer()
        return Reply(404, answer.body, dict(answer.headers), "nginx")
    body = errorpages.page(status)
    return Reply(status, body, {"Content-Type": "text/html"} if body else {}, "nginx")


def _controller_error(run: _Run, status: int, detail: str, code: str, fix: str) -> Trace:
    run.hops.append(Hop("service", "fail", detail))
    run.findings.append(Finding(code, "service", detail, fix))
    reply = nginx_reply(status)
    return Trace(run.source, str(run.target), run.protocol, "connected", None, tuple(run.hops),
                 tuple(run.findings), reply, run.dataplane)
