"""The cluster's front door on loopback: Ingress controller and NodePort/LoadBalancer entry.

An HTTP request to this listener is traced from outside the cluster (``knetsim.network``'s
``trace(state, "external", ...)``) and answered as the trace says:

* ``Host: shop.example.com`` → routed by the Ingress rules (ingress-nginx) to a backend pod — or,
  when a Gateway names that host, by its HTTPRoutes (``Host: www.example.com:8080`` reaches the
  Gateway's listener on port 8080; a Gateway's address in the Host header reaches that Gateway);
* ``Host: 172.18.0.3:30080`` (a node IP and NodePort) or a LoadBalancer IP → that Service;
* ``Host: 127.0.0.1:PORT`` / ``localhost`` → the control-plane node's port 80, where the
  ingress controller listens (no host rule matches: its default backend answers 404).

``connected`` returns the simulated reply (status, headers, body) plus ``X-Knetsim-Backend``;
``refused``/``no-route`` close the connection without a reply (curl: exit 52/56); ``timeout``
holds the connection for the kernel's connect timeout (127 s) or until the client gives up.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web

from ..container.accesslog import Served

log = logging.getLogger("knetsim.daemon")


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def target_for(host_header: str, path_qs: str, state: Any) -> str:
    host, _, port = host_header.partition(":")
    if host in ("", "localhost") or host.startswith("127."):
        cp = next((n for n in state.nodes.values() if "node-role.kubernetes.io/control-plane" in n.labels), None)
        node_ip = cp.internal_ip if cp is not None else state.config.nodes[0].ip
        return f"http://{node_ip}:80{path_qs}"
    if _is_ip(host):
        return f"http://{host}:{port or 80}{path_qs}"
    # The Host header's port picks a Gateway listener (Gateway API routes by port); Ingress ignores it.
    return f"http://{host}{f':{port}' if port.isdigit() else ''}{path_qs}"


def client_address(t: Any, state: Any) -> str:
    """The source address the backend pod sees: the ingress controller pod's (it proxies), the
    node's for a NodePort (kube-proxy masquerades), else the outside client's."""
    for hop in t.hops:
        if hop.layer == "ingress":
            controller = ((hop.data or {}).get("route") or {}).get("controller") or {}
            if controller.get("pod_ip"):
                return str(controller["pod_ip"])
    from ..network.trace import EXTERNAL_CLIENT_IP  # loaded by the request's trace already
    host = t.target.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0]
    if any(n.internal_ip == host for n in state.nodes.values()):
        return host
    return EXTERNAL_CLIENT_IP


def _report_served(server: Any, t: Any, request: web.Request, served: Callable[[Served], None] | None) -> None:
    if served is None or t.backend is None:
        return
    from ..network.trace import EXTERNAL_CLIENT_IP  # loaded by the request's trace already

    via_ingress = any(h.layer == "ingress" for h in t.hops)
    forwarded = request.headers.get("X-Forwarded-For", "")
    if via_ingress:
        # ingress-nginx adds the client's address (the trace's external client) to X-Forwarded-For.
        forwarded = f"{forwarded}, {EXTERNAL_CLIENT_IP}" if forwarded else EXTERNAL_CLIENT_IP
    served(Served(t.backend.pod, t.backend.port, client_address(t, server.state), request.method,
                          request.path_qs,
                          t.reply.status, len(t.reply.body.encode()), request.headers.get("User-Agent", ""),
                          request.headers.get("Referer", ""), forwarded,
                          f"HTTP/{request.version.major}.{request.version.minor}"))


async def start(server: Any, host: str, port: int, served: Callable[[Served], None] | None = None,
                observed: Callable[[Any], None] | None = None) -> web.AppRunner | None:
    """``served`` is told of each request a pod answers (the kubelet keeps its web server's access log),
    ``observed`` of each connection the request makes (the node's flow record)."""

    async def handle(request: web.Request) -> web.StreamResponse:
        # The simulation, loaded with the first request: the front door starts without it.
        from ..network.trace import KERNEL_CONNECT_TIMEOUT, TraceInputError
        from ..network.tracer import trace
        state = server.state
        await server.settle()
        state = server.state
        target = target_for(request.headers.get("Host", ""), request.path_qs, state)
        headers = {k: v for k, v in request.headers.items()}
        try:
            t = trace(state, "external", target, method=request.method, headers=headers)
        except TraceInputError as exc:
            # A request the trace cannot start from (a Host that is no valid name): the client's error.
            return web.Response(status=400, text=f"knetsim: cannot route {target}: {exc}\n")
        except Exception as exc:
            # A crash of the simulation is knetsim's fault, not the client's: a 500 that says what broke
            # (and a traceback in the server log), never a quiet 400.
            log.exception("entry trace failed for %s", target)
            return web.Response(status=500, text=f"knetsim: the simulation failed on {target}: "
                                                 f"{type(exc).__name__}: {exc}\n")
        if observed is not None:
            observed(t)
        if t.outcome == "connected" and t.reply is not None and t.reply.status is not None:
            _report_served(server, t, request, served)
            out_headers = {k: v for k, v in t.reply.headers.items() if k.lower() not in ("content-length",)}
            if t.backend is not None:
                out_headers["X-Knetsim-Backend"] = f"{t.backend.pod} {t.backend.ip}:{t.backend.port}"
            return web.Response(status=t.reply.status, text=t.reply.body, headers=out_headers)
        if t.outcome == "timeout" or (t.outcome == "connected"):
            await asyncio.sleep(KERNEL_CONNECT_TIMEOUT)
        if request.transport is not None:
            request.transport.close()
        raise ConnectionResetError(t.outcome)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.2)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    return runner
