"""kube-apiserver's proxy subresources: ``services/[scheme:]NAME[:PORT]/proxy/PATH`` and ``pods/…/proxy/PATH``.

What ``kubectl proxy`` and ``kubectl get --raw /api/v1/namespaces/NS/services/NAME:PORT/proxy/`` reach, and what
Kubernetes' network e2e tests use to read an agnhost's answer. The API server resolves the target itself and
dials it from its own host network on the control-plane node (pkg/registry/core/service/storage ResourceLocation,
pkg/registry/core/pod/strategy.go ResourceLocation), so the request is traced from the kube-apiserver static pod:
a NetworkPolicy that blocks the control plane blocks the proxy too, as on a real cluster.

* a Service port given by number is first turned into its name; the API server then picks one ready endpoint of
  that port (upstream: at random; here the data plane's deterministic pick) and dials it directly, not the
  ClusterIP; none ready: 503 ``no endpoints available for service "NAME:PORT"``;
* a pod without a port goes to its first container's first declared port, else to port 80;
* a dial that fails answers 503 ``error trying to reach service: dial tcp IP:PORT: …`` (upgradeaware's
  error responder), whatever the resource.

What a request makes a reached agnhost netexec do, it does here as from a pod's curl: ``/shell?cmd=`` runs its
command in netexec's pod, ``/exit?code=N`` ends netexec's container with N (the kubelet restarts it).

Node proxies (``nodes/NAME[:PORT]/proxy/PATH``) answer the kubelet's and kube-proxy's own endpoints from the
API's objects (daemon/nodeproxy.py); another port of a node is dialled at its InternalIP like a pod's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from ..apiserver.errors import ApiError
from ..apiserver.proxyhtml import is_html, path_prepend, rewrite_html
from ..apiserver.server import ApiServer
from . import nodeproxy

# Hop-by-hop lines a proxy never copies (RFC 9110 §7.6.1), and the length aiohttp computes itself.
_NOT_COPIED = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
                         "proxy-authenticate", "proxy-authorization", "content-length"})


def split_scheme_name_port(text: str) -> tuple[str, str, str] | None:
    """``utilnet.SplitSchemeNamePort``: ``name``, ``name:port`` or ``scheme:name:port`` (scheme http or https)."""
    parts = text.split(":")
    if len(parts) == 1:
        scheme, name, port = "", parts[0], ""
    elif len(parts) == 2:
        scheme, name, port = "", parts[0], parts[1]
    elif len(parts) == 3:
        scheme, name, port = parts
    else:
        return None
    return (scheme, name, port) if name and scheme in ("", "http", "https") else None


def _service_target(state: Any, namespace: str, spec: str) -> tuple[str, str, int]:
    split = split_scheme_name_port(spec)
    if split is None:
        raise ApiError(400, "BadRequest", f'invalid service request "{spec}"')
    scheme, name, port = split
    svc = state.services.get(f"{namespace}/{name}")
    if svc is None:
        raise ApiError(404, "NotFound", f'services "{name}" not found',
                       {"name": name, "kind": "services"})
    if port.isdigit():
        declared = next((p for p in svc.ports if p.port == int(port)), None)
        if declared is None:
            raise ApiError(503, "ServiceUnavailable", f'no service port {int(port)} found for service "{name}"')
        port = declared.name
    for es in state.slices_for(svc):
        for ep_port in es.ports:
            if (ep_port.name or "") != port or ep_port.port is None:
                continue
            ready = [ep.addresses[0] for ep in es.endpoints if ep.addresses and ep.ready is not False]
            if ready:
                return scheme or "http", sorted(ready)[0], int(ep_port.port)
    raise ApiError(503, "ServiceUnavailable", f'no endpoints available for service "{spec}"')


def _pod_target(state: Any, namespace: str, spec: str) -> tuple[str, str, int]:
    split = split_scheme_name_port(spec)
    if split is None:
        raise ApiError(400, "BadRequest", f'invalid pod request "{spec}"')
    scheme, name, port = split
    pod = state.pods.get(f"{namespace}/{name}")
    if pod is None:
        raise ApiError(404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"})
    if not port:
        port = next((str(p["containerPort"]) for c in pod.raw.get("spec", {}).get("containers") or ()
                     for p in (c.get("ports") or ())[:1]), "")
    if not pod.pod_ip:
        raise ApiError(400, "BadRequest", "address not allowed")
    if port and not port.isdigit():
        raise ApiError(400, "BadRequest", f'invalid pod request "{spec}"')
    return scheme or "http", pod.pod_ip, int(port) if port else (443 if scheme == "https" else 80)


def _serves_tls(state: Any, ip: str, port: int) -> bool | None:
    """Does the server of the pod at ``ip`` speak TLS on ``port`` (None: knetsim does not know)?"""
    from ..network.netexec import serves_tls

    pod = state.pod_by_ip(ip)
    return serves_tls(pod, port) if pod is not None else None


# (pod key, script) → (combined output, exit code) of ``/bin/sh -c script`` in the pod; (pod key, port, code): the
# program serving that port exits. The kubelet provides both (kubelet/sandbox.py).
PeerShell = Callable[[str, str], Awaitable[tuple[str, int]]]
PeerExit = Callable[[str, int, int], None]


class ApiProxy:
    """The daemon's ProxyConnection: the API server's proxy, through the simulated network."""

    def __init__(self, peer_shell: Callable[[], PeerShell | None] = lambda: None,
                 peer_exit: Callable[[], PeerExit | None] = lambda: None) -> None:
        self._peer_shell, self._peer_exit = peer_shell, peer_exit

    async def proxy(self, server: ApiServer, request: web.Request, resource: str, namespace: str, name: str,
                    path: str) -> web.StreamResponse:
        # The simulation loads with the first request that needs it, never with the daemon (its start-up stays fast).
        from ..network.tracer import trace

        state = server.state
        if resource == "nodes":
            split = split_scheme_name_port(name)
            if split is None or (split[2] and not split[2].isdigit()):
                raise ApiError(400, "BadRequest", f'invalid node request "{name}"')
            node_scheme, node_name, node_port = split
            node = nodeproxy.node_target(server, node_name)
            answered = nodeproxy.answer(server, node, node_port, path)
            if answered is not None:
                return answered
            addresses = [a.get("address") for a in (node.get("status") or {}).get("addresses") or ()
                         if a.get("type") == "InternalIP" and a.get("address")]
            if not addresses:
                raise ApiError(503, "ServiceUnavailable", 'no preferred addresses found; known addresses: []')
            scheme, ip, port = node_scheme or "http", str(addresses[0]), int(node_port)
        else:
            scheme, ip, port = (_service_target if resource == "services" else _pod_target)(state, namespace, name)
        host = f"[{ip}]" if ":" in ip else ip
        tls = _serves_tls(state, ip, port)
        if scheme == "https" and tls is None:
            raise ApiError(503, "ServiceUnavailable", "knetsim does not simulate the API server's proxy over HTTPS")
        if scheme == "https" and tls is False:
            # Go's TLS client reads the plain server's "HTTP/1.1 400" as a record (crypto/tls conn.go).
            raise ApiError(503, "ServiceUnavailable",
                           "error trying to reach service: tls: first record does not look like a TLS handshake")
        if scheme == "http" and tls is True:
            # net/http's server answers plain HTTP on a TLS port itself (server.go), and the proxy passes it on.
            return web.Response(status=400, text="Client sent an HTTP request to an HTTPS server.\n")
        url = f"{scheme}://{host}:{port}{path}" + (f"?{request.query_string}" if request.query_string else "")
        source = next((p.key for p in state.pods.values() if p.namespace == "kube-system"
                       and p.labels.get("component") == "kube-apiserver"), "external")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("authorization", "host")}
        t = trace(state, source, url, method=request.method, headers=headers)
        t = await self._netexec_effects(state, t, url)
        if t.outcome == "connected" and t.reply is not None and t.reply.status is not None:
            reply = t.reply
            body = reply.body
            content_type = next((v for k, v in reply.headers.items() if k.lower() == "content-type"), "")
            if is_html(content_type):
                # The proxy's rewriting transport keeps the page's links inside the proxy (apiserver/proxyhtml.py).
                body = rewrite_html(body, path_prepend(request.path, urlsplit(url).path or "/"),
                                    (f"{host}:{port}", request.host))
            response = web.Response(status=reply.status, body=body.encode())
            for key, value in reply.headers.items():
                if key.lower() not in _NOT_COPIED:
                    response.headers[key] = value
            return response
        why = {"refused": "connect: connection refused", "timeout": "i/o timeout"}.get(
            t.outcome, "connect: no route to host")
        raise ApiError(503, "ServiceUnavailable", f"error trying to reach service: dial tcp {host}:{port}: {why}")

    async def _netexec_effects(self, state: Any, t: Any, url: str) -> Any:
        """netexec's /shell and /exit, reached through the proxy, act as they do when a pod's curl asks."""
        import dataclasses

        from ..network.netexec import exit_request, shell_command, shell_reply

        peer_shell, peer_exit = self._peer_shell(), self._peer_exit()
        command = shell_command(state, t, url) if peer_shell is not None else None
        if command is not None and peer_shell is not None:
            output, code = await peer_shell(t.backend.pod, command)
            t = dataclasses.replace(t, reply=shell_reply(output, code))
        exit_code = exit_request(state, t, url) if peer_exit is not None else None
        if exit_code is not None and peer_exit is not None:
            peer_exit(t.backend.pod, t.backend.port, exit_code)
        return t
