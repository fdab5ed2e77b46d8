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
from typing import Any

from aiohttp import web

from .shell import KERNEL_CONNECT_TIMEOUT

log = logging.getLogger("knetsim.apiserver")


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


async def start(server: Any, host: str, port: int) -> web.AppRunner | None:
    try:
        from ..network import trace
    except ImportError:
        return None

    async def handle(request: web.Request) -> web.StreamResponse:
        state = server.state
        await server.settle()
        state = server.state
        target = target_for(request.headers.get("Host", ""), request.path_qs, state)
        headers = {k: v for k, v in request.headers.items()}
        try:
            t = trace(state, "external", target, method=request.method, headers=headers)
        except Exception as exc:
            log.warning("entry trace failed for %s: %s", target, exc)
            return web.Response(status=400, text=f"knetsim: cannot route {target}: {exc}\n")
        if t.outcome == "connected" and t.reply is not None and t.reply.status is not None:
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
