"""Traffic from outside that enters through a Gateway (Gateway API, Envoy Gateway's data plane).

client → the Gateway's address (its proxy's LoadBalancer Service, externalTrafficPolicy Local,
so the proxy pod sees the client's address) → Envoy proxy pod → backend pod. Envoy Gateway
routes to the EndpointSlice endpoints itself (no ClusterIP, no kube-proxy on that hop), so
NetworkPolicy sees the proxy pod in ``envoy-gateway-system`` as the source of the second leg,
exactly as it sees ingress-nginx's controller pod for an Ingress.

Which Gateway serves a host name: DNS lies outside the cluster, so knetsim assumes the name
points at the Gateway that *names* it (a listener or an attached route hostname matching it),
else — when no Ingress rule names it either — at a Gateway whose listener and routes accept
every host; otherwise traffic goes to the Ingress controller as before.
"""

from __future__ import annotations

import ipaddress
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..cluster.gatewayinfra import impl_container_port
from ..cluster.state import ClusterState
from ..dataplane.model import join_host_port
from ..gateway import GatewayRouteError, hostnames, route, translate
from ..gateway.streams import route_stream
from ..gateway.upstream import ENVOY_TLS_VERIFY_FAILED
from ..ingress import host_matches
from ..model.http import HTTPRequest, HTTPRequestError
from ..model.objects import Pod
from ..policy.engine import evaluate
from .dataplane import usable_candidates
from .trace import EXTERNAL_CLIENT_IP, Backend, Finding, Hop, Reply, Trace, TraceInputError, choose

if TYPE_CHECKING:
    from .connect import _Run

_REASONS = {404: "Not Found", 421: "Misdirected Request", 500: "Internal Server Error", 503: "Service Unavailable",
            301: "Moved Permanently",
            302: "Found", 303: "See Other", 307: "Temporary Redirect", 308: "Permanent Redirect"}


def _serving(gctx: Any) -> bool:
    """Whether the Gateway answers clients: its proxy has an address and ready pods — or, for an implementation
    whose proxy is a load balancer outside the cluster (GKE: nothing of it runs in the cluster), it is
    programmed."""
    if gctx.addresses and gctx.proxy_pods:
        return True
    return gctx.implementation.infrastructure.naming == "none" and gctx.conditions.is_true("Programmed")


def gateway_for_host(state: ClusterState, host: str, port: int, scheme: str, *,
                     ingress_first: bool = True) -> str | None:
    """The Gateway a client reaching ``host`` is assumed to talk to, or None (the Ingress controller).

    ``ingress_first=False`` ignores the Ingresses (a migration check asks where the *new* side sends it).
    """
    name = hostnames.normalize(host)
    protocol = "HTTPS" if scheme == "https" else "TLS" if scheme == "tcp" else "HTTP"
    explicit, catch_all = [], []
    for key, gctx in translate(state).gateways.items():
        if not _serving(gctx):
            continue
        for lc in gctx.listeners:
            if lc.listener.port != port or lc.listener.protocol != protocol or not lc.programmed:
                continue
            if protocol == "TLS":
                # A TLS listener is named by its hostname or its TLSRoutes' (the client's SNI is the host).
                if any(hostnames.matches(h, name) for e in lc.streams for h in e.hostnames or
                       ((lc.listener.hostname,) if lc.listener.hostname else ())):
                    explicit.append(key)
                continue
            if not hostnames.matches(lc.listener.hostname, name):
                continue
            named = lc.listener.hostname is not None or any(e.hostnames for e in lc.entries_for(name))
            (explicit if named else catch_all).append(key)
    if explicit:
        return sorted(explicit)[0]
    if catch_all and not (ingress_first and _ingress_names(state, name)):
        return sorted(catch_all)[0]
    return None


def gateway_for_address(state: ClusterState, ip: str) -> str | None:
    """The Gateway whose address (its proxy Service's LoadBalancer IP) is ``ip``."""
    return next((key for key, gctx in translate(state).gateways.items() if ip in gctx.addresses), None)


def _ingress_names(state: ClusterState, host: str) -> bool:
    return any(r.host and host_matches(r.host, host) for ing in state.ingresses.values() for r in ing.rules)


def into_gateway_proxy(run: _Run, pod: Pod, port: int) -> Trace | None:
    """An HTTP request that reached a Gateway's proxy pod on a listener's port other than through the Gateway's
    address from outside (a pod calling the proxy's Service): the Gateway routes it as any other, by its Host
    header. None for any other pod, port or scheme (a TCP, TLS or UDP stream keeps the connection's own path)."""
    if run.target.scheme not in ("http", "https"):
        return None
    for key, gctx in translate(run.state).gateways.items():
        if pod.key not in gctx.proxy_pods:
            continue
        listener_port = next((lc.listener.port for lc in gctx.listeners
                              if impl_container_port(gctx.implementation, lc.listener.port) == port), None)
        if listener_port is None:
            return None
        if any(h.layer == "gateway" for h in run.hops):
            from .connect import proxy_loop

            return proxy_loop(run, pod, Finding("GatewayBackendLoop", "gateway", f"a route of Gateway {key} sends "
                                                "to the Gateway's own proxy Service", "point the route at the "
                                                "application's Service, not at the Gateway's"),
                              Reply(500, "", {}, gctx.implementation.writer))
        return through_gateway(run, key, run.request_host(), entered_at=listener_port)
    return None


def through_gateway(run: _Run, gateway: str, host: str, entered_at: int | None = None) -> Trace:
    """A request to Gateway ``gateway`` from outside, or (``entered_at``: the listener port) one that already
    reached its proxy pod from inside, whose leg to the pod was traced."""
    from .connect import deliver

    state = run.state
    target = run.target
    if target.scheme in ("tcp", "udp"):
        return _stream_through_gateway(run, gateway, host)
    scheme = target.scheme if target.scheme in ("http", "https") else "http"
    headers = tuple((k, v) for k, v in run.headers.items() if k.lower() != "host")
    path = target.path + (f"?{target.query}" if target.query else "")
    try:
        request = HTTPRequest(run.headers.get("Host") or run.headers.get("host") or host, path, run.method, scheme,
                              entered_at or target.port, headers)
        result = route(state, gateway, request, explain=False)
    except (HTTPRequestError, GatewayRouteError) as exc:
        raise TraceInputError(str(exc)) from None
    gctx = translate(state).gateways[gateway]
    address = gctx.addresses[0] if gctx.addresses else "?"
    if entered_at is None:
        run.hops.append(Hop("dns", "info", f"{host} is not a cluster name: an external client resolves it with "
                            f"public DNS, assumed to point at Gateway {gateway} ({address})"))
    proxy_key = result.proxy_pod
    proxy = state.pods.get(proxy_key) if proxy_key else None
    if proxy is None and gctx.implementation.infrastructure.naming == "none":
        # A cloud load balancer (GKE): no proxy pod in the cluster to trace from.
        run.hops.append(Hop("gateway", "info", result.summary, {"route": result.to_dict()}))
        run.findings.append(Finding("GatewayOutsideCluster", "gateway", f"Gateway {gateway} is served by "
                                    f"{gctx.implementation.proxy_word}, outside the cluster: knetsim routes the "
                                    "request (above) but does not trace the path from it to the pods",
                                    f"knetsim route --gateway {gateway} shows the rule and backend chosen"))
        return run.finish("no-route")
    if proxy is None:
        run.hops.append(Hop("gateway", "fail", result.summary, {"route": result.to_dict()}))
        run.findings.append(Finding("GatewayNotProgrammed", "gateway", result.summary,
                                    "kubectl get gateway -o wide: the Gateway needs an accepted GatewayClass, an "
                                    "address and a ready proxy pod"))
        return run.finish("no-route")
    # The first leg: client → LoadBalancer → proxy pod, client address preserved (Local policy); traced already
    # for a request that entered at the pod.
    proxy_port = impl_container_port(gctx.implementation, target.port)  # Envoy Gateway's shifts privileged ports
    leg = evaluate(state, EXTERNAL_CLIENT_IP, proxy, proxy_port, "TCP")
    if entered_at is None and not leg.ingress.allowed:
        run.hops.append(Hop("policy", "fail", f"ingress of {proxy.key}: {leg.ingress.reason} — the client's "
                            "connection to the Gateway is dropped", {"policy": leg.to_dict()}))
        run.findings.append(Finding("PolicyDrop", "policy", f"a NetworkPolicy isolates the Gateway's proxy pod "
                                    f"{proxy.key} and allows no traffic from {EXTERNAL_CLIENT_IP}",
                                    f"allow ingress to the proxy pods on port {proxy_port} from "
                                    f"0.0.0.0/0 (an ipBlock) in namespace {proxy.namespace}"))
        return run.finish("timeout")
    run.hops.append(Hop("gateway", "ok" if result.proxied else "fail", result.summary, {"route": result.to_dict()}))
    if result.outcome in ("no-listener", "not-programmed", "no-controller", "tls-failed"):
        return run.finish("refused")
    if result.outcome == "passed-through":
        run.hops.pop()  # the TLS listener forwards the bytes: the stream path says where
        run.hops.pop()
        return _stream_through_gateway(run, gateway, host)
    if not result.proxied or result.backend is None:
        status = result.http_status or 500
        reply_headers = dict(result.response_headers)
        if result.redirect is not None:
            reply_headers["location"] = result.redirect.location
            run.hops.append(Hop("app", "info", f"{proxy.key} answers {status} {_REASONS.get(status, '')} → "
                                f"{result.redirect.location}"))
        elif result.policy is not None and result.policy.answered:
            # Envoy Gateway's filters answered (CORS, authentication, authorization, body limit): the policy
            # doing its job, not a routing problem.
            run.hops.append(Hop("app", "info", f"{proxy.key} answers {status} itself: "
                                f"{', '.join(result.policy.policies) or 'the rule CORS filter'}"))
        else:
            run.hops.append(Hop("app", "fail", f"{proxy.key} answers {status} itself"))
            run.findings.append(Finding("GatewayNoMatch" if status == 404 else "GatewayBackendProblem", "gateway",
                                        result.summary, "knetsim route --gateway shows every candidate rule and "
                                        "why it lost; knetsim doctor explains route status"))
        # Envoy's local replies: a route miss (no virtual host or no route for the request) is a 404 with no
        # body (the router's NR), as are the 421 of a Host of another listener and Envoy Gateway's direct 500 for
        # a rule without a usable backend; the connection manager adds date and server (network.wire). The
        # Gateway's own listener ports answer the same bodies (daemon/gatewaylisteners.py).
        body = (ENVOY_TLS_VERIFY_FAILED if result.outcome == "backend-tls-failed" else result.policy.body
                if result.policy is not None and result.policy.answered else result.reply.body
                if result.reply is not None else "no healthy upstream" if status == 503 else "")
        if result.reply is not None and result.reply.content_type != "text/plain" and body:
            reply_headers.setdefault("content-type", result.reply.content_type)
        reply = Reply(status, body, reply_headers, gctx.implementation.writer)
        return Trace(run.source, str(run.target), run.protocol, "connected", None, tuple(run.hops),
                     tuple(run.findings), reply, run.dataplane)
    backend = result.backend
    svc = state.services[backend.service]
    sp = next(p for p in svc.ports if p.port == backend.port and p.protocol == "TCP")
    run.hops.append(Hop("service", "ok", f"backend Service {svc.key} port {sp.name or sp.port} → targetPort "
                        f"{sp.target_port}; Envoy proxies to its endpoints directly"))
    candidates = usable_candidates(state, svc, sp)
    run.hops.append(Hop("endpoints", "ok", ", ".join(join_host_port(c.ip, c.port) for c in candidates)))
    run.hops.append(Hop("dataplane", "skip", "no kube-proxy on this hop: Envoy connects to the pod IP"))
    chosen = candidates[choose(candidates, f"{EXTERNAL_CLIENT_IP}->{gateway}{request.url}")]
    forwarded = None
    if result.upstream_request is not None:
        path, _, query = result.upstream_request.path.partition("?")
        forwarded = replace(run.target, path=path, query=query)  # after the rule's URLRewrite
    trace = deliver(run, proxy, proxy.pod_ip, chosen, via=svc.key, request=forwarded)
    if trace.outcome == "timeout":
        reply = Reply(504, "upstream request timeout", {}, "envoy")
        return Trace(trace.source, trace.target, trace.protocol, "timeout",
                     Backend(chosen.name, chosen.ip, chosen.port), trace.hops, trace.findings, reply, trace.dataplane)
    if trace.outcome == "refused":
        reply = Reply(503, "upstream connect error or disconnect/reset before headers. reset reason: "
                      "connection failure", {}, "envoy")
        return Trace(trace.source, trace.target, trace.protocol, "refused", trace.backend, trace.hops,
                     trace.findings, reply, trace.dataplane)
    if trace.reply is not None and (result.response_headers or result.response_headers_removed):
        headers_out = {k: v for k, v in trace.reply.headers.items()
                       if k.lower() not in result.response_headers_removed}
        for name, value in result.response_headers.items():
            headers_out[name] = value
        trace = Trace(trace.source, trace.target, trace.protocol, trace.outcome, trace.backend, trace.hops,
                      trace.findings, Reply(trace.reply.status, trace.reply.body, headers_out), trace.dataplane)
    return trace


def _stream_through_gateway(run: _Run, gateway: str, host: str) -> Trace:
    """A TCP, TLS or UDP connection to a Gateway port: its TCP/UDP listener's route, or on a TLS listener the
    TLSRoute the SNI (the host, unless it is an address) selects; then the chosen endpoint as for HTTP."""
    from .connect import deliver

    state = run.state
    target = run.target
    gctx = translate(state).gateways[gateway]
    address = gctx.addresses[0] if gctx.addresses else "?"
    on_port = {lc.listener.protocol for lc in gctx.listeners if lc.listener.port == target.port and lc.programmed}
    protocol = "udp" if target.scheme == "udp" else "tls" if on_port & {"TLS", "HTTPS"} else "tcp"
    sni = None if _is_address(host) else host
    run.hops.append(Hop("dns", "info" if sni else "skip",
                        f"{host} is not a cluster name: an external client resolves it with public DNS, assumed to "
                        f"point at Gateway {gateway} ({address})" if sni else
                        f"{host} is the address of Gateway {gateway}"))
    try:
        result = route_stream(state, gateway, protocol, target.port, sni=sni)
    except GatewayRouteError as exc:
        raise TraceInputError(str(exc)) from None
    data = {"route": result.to_dict()}
    proxy = state.pods.get(result.proxy_pod) if result.proxy_pod else None
    if proxy is None or not result.proxied or result.endpoint is None or result.backend is None:
        run.hops.append(Hop("gateway", "fail", result.summary, data))
        return run.finish("timeout" if protocol == "udp" else "refused")
    leg = evaluate(state, EXTERNAL_CLIENT_IP, proxy, impl_container_port(gctx.implementation, target.port),
                   "UDP" if protocol == "udp" else "TCP")
    if not leg.ingress.allowed:
        run.hops.append(Hop("policy", "fail", f"ingress of {proxy.key}: {leg.ingress.reason} — the client's "
                            "connection to the Gateway is dropped", {"policy": leg.to_dict()}))
        return run.finish("timeout")
    run.hops.append(Hop("gateway", "ok", result.summary, data))
    svc = state.services[result.backend.service]
    transport = "UDP" if protocol == "udp" else "TCP"
    sp = next((p for p in svc.ports if p.port == result.backend.port and p.protocol == transport), None)
    if sp is None:
        return run.fail("service", "refused", f"Service {svc.key} has no {transport} port {result.backend.port}")
    candidates = usable_candidates(state, svc, sp)
    run.hops.append(Hop("endpoints", "ok", ", ".join(f"{c.ip}:{c.port}" for c in candidates)))
    run.hops.append(Hop("dataplane", "skip", "no kube-proxy on this hop: Envoy connects to the pod IP"))
    chosen = next((c for c in candidates if c.ip == result.endpoint.ip and c.port == result.endpoint.port),
                  candidates[0])
    return deliver(run, proxy, proxy.pod_ip, chosen, via=svc.key)


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
