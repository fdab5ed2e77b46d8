"""ingress-nginx's port 443: which connections its TCP proxy passes through unread, and what the others are served.

With ``--enable-ssl-passthrough`` the controller puts a TCP proxy in front of nginx's https port. It
reads the SNI of the ClientHello; a server whose creating Ingress has ``ssl-passthrough: "true"``
(``SSLPassthrough`` is set where the server is created) gets the connection forwarded, bytes
unread, to the Service of its root location ``/`` — its ClusterIP and port, so kube-proxy picks
the pod, and the pod's own TLS server answers the handshake. Every other location of that server
is ignored ("Ignoring SSL Passthrough for location"); a root location without a Service (no path
``/``, no ``defaultBackend``) leaves the proxy nothing to dial and the connection is closed. The SNI
is compared exactly (``tcpproxy.Get``); every other SNI goes on to nginx, which terminates TLS with
the host's certificate (``spec.tls``) or its own fake one.

Without the flag the annotation does nothing and nginx terminates every connection.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.objects import IngressBackend
from .controllers import IngressController
from .matching import PREFIX
from .servers import Model, Server

FLAG = "enable-ssl-passthrough"


def enabled(controller: IngressController) -> bool:
    """Whether the controller runs its TCP proxy (a bare boolean flag, or ``=true``)."""
    if not any(name == FLAG for name, _ in controller.flags):
        return False
    return controller.flag(FLAG).strip().lower() in ("", "true", "1", "t")


@dataclass(frozen=True, slots=True)
class Passthrough:
    """A server whose TLS the TCP proxy forwards: the Ingress that made it, and its root location's backend."""

    server: str
    ingress: str  # namespace/name of the Ingress that created the server (its annotation decides)
    namespace: str
    backend: IngressBackend | None  # None: no Service behind ``/``, the proxy closes the connection
    root_ingress: str | None = None  # the Ingress whose path / (or defaultBackend) the root location serves
    rule: int | None = None  # its rule and path index (None: its spec.defaultBackend)
    index: int | None = None


def passthrough_server(model: Model, controller: IngressController, sni: str | None) -> Passthrough | None:
    """The passthrough server the SNI selects, or None (nginx terminates the connection)."""
    if sni is None or not enabled(controller):
        return None
    server: Server | None = model.servers.get(sni.lower())
    if server is None or not server.ssl_passthrough or server.creator is None:
        return None
    root = next((loc for loc in server.locations if loc.path == "/" and loc.path_type == PREFIX), None)
    if root is None or root.ingress is None or root.backend is None:
        return Passthrough(server.name, server.creator.key, server.creator.namespace, None)
    return Passthrough(server.name, server.creator.key, root.ingress.namespace, root.backend, root.ingress.key,
                       root.rule, root.index)
