"""What a simulated web server writes to its container log for each request it serves.

Every path that reaches an app in a pod (``wget``/``curl``/``nc`` in ``kubectl exec``, the
Ingress/NodePort entry, ``kubectl port-forward``) reports a ``Served`` request; the kubelet
appends the line the server's image would print to that container's log, so ``kubectl logs
deploy/web`` shows the request as on a real cluster. Formats, by image:

* ``nginx`` (and ``nginxinc/*``, ``bitnami/nginx``): the official image's ``log_format main``,
  ``access_log /var/log/nginx/access.log main`` symlinked to stdout::

      $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer"
      "$http_user_agent" "$http_x_forwarded_for"

* ``httpd``: the official image's ``CustomLog /proc/self/fd/1 common``:
  ``%h %l %u %t "%r" %>s %b`` (``-`` for a body of 0 bytes).

* ``echo-basic`` (the Gateway API conformance echo server): one line per request,
  ``Echoing back request made to <request URI> to client (<remote address>)`` — the line the
  conformance suite's mirror tests look for (kubernetes-sigs/gateway-api
  ``conformance/utils/http/mirror.go``, ``GetMirrorLogRegexp``); the client's port is not known
  here, so the address is the IP alone.

Other images log nothing: their format is unknown, and an invented line would be a wrong answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from ..model.listeners import image_repository

NGINX_IMAGES = frozenset({"nginx", "nginx-unprivileged", "openresty"})
HTTPD_IMAGES = frozenset({"httpd"})
ECHO_BASIC_IMAGES = frozenset({"echo-basic"})


@dataclass(frozen=True, slots=True)
class Served:
    """One HTTP request a pod answered: who asked, what, and what it answered."""

    pod: str  # namespace/name of the pod that answered
    port: int  # the container port
    client_ip: str  # the address the server sees (after kube-proxy / the ingress controller)
    method: str
    target: str  # the request target: path and query
    status: int
    size: int  # body bytes sent
    user_agent: str = ""
    referer: str = ""
    forwarded_for: str = ""
    protocol: str = "HTTP/1.1"
    at: datetime = field(default_factory=lambda: datetime.now(UTC))


def log_line(image: str, served: Served) -> str | None:
    """The access-log line ``image`` writes for ``served`` (with its newline), or None."""
    repo = image_repository(image)
    when = served.at.strftime("%d/%b/%Y:%H:%M:%S +0000")
    request = f"{served.method} {served.target} {served.protocol}"
    if repo in NGINX_IMAGES:
        return (f'{served.client_ip} - - [{when}] "{request}" {served.status} {served.size} '
                f'"{served.referer or "-"}" "{served.user_agent or "-"}" "{served.forwarded_for or "-"}"\n')
    if repo in HTTPD_IMAGES:
        return f'{served.client_ip} - - [{when}] "{request}" {served.status} {served.size or "-"}\n'
    if repo in ECHO_BASIC_IMAGES:
        return f"Echoing back request made to {served.target} to client ({served.client_ip})\n"
    return None


def container_for(containers: list[dict[str, object]], port: int) -> dict[str, object] | None:
    """The container of a pod that serves ``port``: the one declaring it, else the only/first one."""
    for c in containers:
        for p in c.get("ports") or []:  # type: ignore[attr-defined]
            if isinstance(p, dict) and p.get("containerPort") == port:
                return c
    return containers[0] if containers else None
