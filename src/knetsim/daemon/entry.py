"""The cluster's front door on loopback: Ingress controller and NodePort/LoadBalancer entry.

An HTTP request to this listener is traced from outside the cluster (``knetsim.network``'s
``trace(state, "external", ...)``) and answered as the trace says:

* ``Host: shop.example.com`` → routed by the Ingress rules (ingress-nginx) to a backend pod — or,
  when a Gateway names that host, by its HTTPRoutes (``Host: www.example.com:8080`` reaches the
  Gateway's listener on port 8080; a Gateway's address in the Host header reaches that Gateway);
* ``Host: 172.18.0.3:30080`` (a node IP and NodePort) or a LoadBalancer IP → that Service;
* ``Host: 127.0.0.1:PORT`` / ``localhost`` → the control-plane node's port 80, where the
  ingress controller listens (no host rule matches: its default backend answers 404).

``connected`` returns the simulated reply (status, headers, body) with the header lines its writer sends
(``network.wire``: ingress-nginx's without a Server line, Envoy's lower-case with ``server: envoy``), plus
``X-Knetsim-Backend`` after them;
``refused``/``no-route`` close the connection without a reply (curl: exit 52/56); ``timeout``
holds the connection for the kernel's connect timeout (127 s) or until the client gives up.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from ..apiserver import httplog
from ..container.accesslog import Served
from ..model.names import is_ip
from ..network.trace import Reply
from ..network.wire import header_lines

log = logging.getLogger("knetsim.daemon")


def target_for(host_header: str, path_qs: str, state: Any) -> str:
    host, port = _host_and_port(host_header)
    if host in ("", "localhost", "[::1]") or host.startswith("127.") or not _routable(host):
        # No name a server_name could match (or none at all): nginx's default server, the control plane's
        # port 80, where the catch-all rules and the default backend answer.
        cp = next((n for n in state.nodes.values() if "node-role.kubernetes.io/control-plane" in n.labels), None)
        node_ip = cp.internal_ip if cp is not None else state.config.nodes[0].ip
        return f"http://{node_ip}:80{path_qs}"
    if is_ip(host.strip("[]")):
        return f"http://{host}:{port or 80}{path_qs}"
    # The Host header's port picks a Gateway listener (Gateway API routes by port); Ingress ignores it.
    return f"http://{host}{f':{port}' if port.isdigit() else ''}{path_qs}"


def _host_and_port(host_header: str) -> tuple[str, str]:
    """The host as nginx cuts it from the header (``[::1]:80`` → ``[::1]``, ``80``), lower-cased, without a
    trailing dot; the port is what follows the first ``:`` after it."""
    if host_header.startswith("[") and "]" in host_header:
        end = host_header.index("]") + 1
        host, rest = host_header[:end], host_header[end:]
    else:
        host, _, port = host_header.partition(":")
        rest = ":" + port if port else ""
    host = host.lower()
    if host.endswith(".") and not host.startswith("["):
        host = host[:-1]
    return host, rest[1:] if rest.startswith(":") else ""


def _routable(host: str) -> bool:
    """Can a name or address be looked up at all (``urlsplit`` takes it)? nginx accepts hosts such as ``[``
    that no server_name matches; they reach its default server."""
    try:
        return bool(urlsplit(f"http://{host}/").hostname)
    except ValueError:
        return False


def nginx_host_error(hosts: list[str], http11: bool) -> str | None:
    """Why nginx answers 400 before routing (ngx_http_process_host, ngx_http_validate_host), or None: no Host
    in an HTTP/1.1 request, two of them, or one with an empty name, ``..``, a ``/`` or ``\\`` (a path
    separator), NUL or another control character."""
    if len(hosts) > 1:
        return "client sent duplicate host header"
    if not hosts:
        return 'client sent HTTP/1.1 request without "Host" header' if http11 else None
    value = hosts[0]
    dot = -2
    length = len(value)
    state = "usual"
    for i, ch in enumerate(value):
        if ch == ".":
            if dot == i - 1:
                return "client sent invalid host header"
            dot = i
        elif ch == ":":
            if state == "usual":
                length, state = i, "rest"
        elif ch == "[":
            if i == 0:
                state = "literal"
        elif ch == "]":
            if state == "literal":
                length, state = i + 1, "rest"
        elif ch == "/" or ord(ch) <= 0x20 or ord(ch) == 0x7F:
            return "client sent invalid host header"
    if dot == length - 1:
        length -= 1
    return "client sent invalid host header" if length <= 0 else None


# The key under which a response keeps the Reply it sends (web.StreamResponse is a mapping for such state).
_REPLY = "knetsim.reply"


def send_reply(reply: Reply, *, close: bool = False, extra: tuple[tuple[str, str], ...] = ()) -> web.Response:
    """A response whose header lines are the ones ``reply``'s writer sends (``network.wire``): the body as
    bytes, so aiohttp adds no charset; ``_as_written`` replaces aiohttp's own lines when it prepares it.
    ``extra`` (knetsim's own X-Knetsim-Backend) follows the writer's lines."""
    response = web.Response(status=reply.status or 200, body=reply.body.encode())
    response[_REPLY] = (reply, extra)
    if close:
        response.force_close()
    return response


async def _as_written(request: web.Request, response: web.StreamResponse) -> None:
    """``on_response_prepare``, aiohttp's documented hook for changing the headers it computed just before
    they are written: a traced reply gets exactly its writer's lines (aiohttp's Date value kept); every
    other answer of the front door loses aiohttp's ``Server`` line, which no simulated server sends."""
    sent = response.get(_REPLY)
    if sent is None:
        response.headers.popall("Server", None)
        return
    reply, extra = sent
    date = response.headers.get("Date", "")
    lines = header_lines(reply, date, keep_alive=bool(response.keep_alive))
    response.headers.clear()
    response.headers.extend([*lines, *extra])


def bad_request(why: str) -> web.Response:
    log.info("entry: 400 Bad Request: %s", why)
    from ..ingress import errorpages  # the simulation's package, loaded on the first request that needs it
    return send_reply(Reply(400, errorpages.page(400), {"Content-Type": "text/html"}, "nginx"), close=True)


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


def _unverified(t: Any) -> tuple[tuple[str, str], ...]:
    """What the answer assumed (an auth service knetsim cannot run), as ``X-Knetsim-Unverified`` lines: a client
    of the live cluster sees that the 200 it got was not decided by the auth service."""
    out = []
    for hop in t.hops:
        route = hop.data.get("route") if isinstance(hop.data, dict) else None
        for note in (route or {}).get("notes") or []:
            if isinstance(note, str) and "unverified: " in note:
                text = note.split("unverified: ", 1)[1].replace("\n", " ")
                out.append(("X-Knetsim-Unverified", text.encode("ascii", "replace").decode("ascii")))
    return tuple(out)


async def start(server: Any, host: str, port: int, served: Callable[[Served], None] | None = None,
                observed: Callable[[Any], None] | None = None) -> web.AppRunner | None:
    """``served`` is told of each request a pod answers (the kubelet keeps its web server's access log),
    ``observed`` of each connection the request makes (the node's flow record)."""

    async def handle(request: web.Request) -> web.StreamResponse:
        hosts = request.headers.getall("Host", [])
        why = nginx_host_error(hosts, request.version >= (1, 1))
        if why is not None:
            return bad_request(why)
        # The simulation, loaded with the first request: the front door starts without it.
        from ..network.trace import KERNEL_CONNECT_TIMEOUT, TraceInputError
        from ..network.tracer import trace
        await server.settle()
        state = server.state
        target = target_for(hosts[0] if hosts else "", request.path_qs, state)
        headers = {k: v for k, v in request.headers.items()}
        try:
            t = trace(state, "external", target, method=request.method, headers=headers)
        except TraceInputError as exc:
            # A request nginx would not route (a path above the root, a method that is no HTTP token).
            return bad_request(f"{target}: {exc}")
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
            extra = (("X-Knetsim-Backend", f"{t.backend.pod} {t.backend.ip}:{t.backend.port}"),) \
                if t.backend is not None else ()
            return send_reply(t.reply, extra=(*extra, *_unverified(t)))
        if t.outcome == "timeout" or (t.outcome == "connected"):
            await asyncio.sleep(KERNEL_CONNECT_TIMEOUT)
        if request.transport is not None:
            request.transport.close()
        raise ConnectionResetError(t.outcome)

    app = web.Application()
    app.on_response_prepare.append(_as_written)
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.2, logger=httplog.logger)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    return runner
