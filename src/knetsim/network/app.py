"""The app layer: what the destination answers, once a connection is established.

HTTP servers answer 200 with a body naming the pod (as echo servers do in labs), nginx with
its welcome page, the lab programs of ``model/programs.py`` as they do (http-echo its ``-text``,
agnhost netexec ``/hostname`` and ``/echo?msg=``). On the ``ebpf`` data plane,
CiliumNetworkPolicy HTTP rules are enforced by the proxy in front of the pod: a request no rule
allows gets ``403 Access denied``.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..cluster.state import ClusterState
from ..model.listeners import image_repository
from ..model.objects import Pod
from ..model.programs import http_answer, program_of
from .netexec import agnhost_http
from .trace import Hop, Reply, Target

HTTP_PORTS = (80, 443, 8000, 8080, 8443, 3000, 5000, 5678, 8888, 9898)
# Servers whose default port speaks another protocol: an HTTP request gets an empty reply.
NON_HTTP_IMAGES = {"postgres", "redis", "mysql", "mariadb", "mongo", "memcached", "rabbitmq", "coredns"}


def _is_http(pod: Pod, port: int, target: Target) -> bool:
    if target.scheme in ("http", "https"):
        return True
    for container in pod.containers:
        for p in container.ports:
            if p.container_port == port and (p.name.startswith("http") or "web" in p.name):
                return True
    return port in HTTP_PORTS


def _body(pod: Pod, port: int, path: str) -> str:
    for container in pod.containers:
        program = program_of(container)
        if program is not None and (port, "TCP") in program.ports:
            answer = http_answer(program, pod.meta.name, pod.pod_ip, path)
            if answer is not None:
                return answer
    images = {image_repository(c.image) for c in pod.containers}
    if "nginx" in images:
        return (f"<!DOCTYPE html>\n<html>\n<head>\n<title>Welcome to nginx!</title>\n</head>\n<body>\n"
                f"<h1>Welcome to nginx!</h1>\n<p>served by pod {pod.key} ({pod.pod_ip})</p>\n</body>\n</html>\n")
    return f"Hello from {pod.key} ({pod.pod_ip})\n"


def app_reply(state: ClusterState, plane: str, src: Pod | str, dst: Pod, port: int, target: Target, method: str,
              headers: Mapping[str, str], client_ip: str = "") -> tuple[Hop, Reply | None]:
    """What ``dst`` answers on ``port``; ``client_ip`` is the source address the server sees (after any SNAT;
    the source's own address when not given)."""
    images = {image_repository(c.image) for c in dst.containers}
    speaks_other = images & NON_HTTP_IMAGES
    if target.scheme in ("http", "https") and speaks_other and not any(
            p.container_port == port and p.name.startswith("http") for c in dst.containers for p in c.ports):
        name = sorted(speaks_other)[0]
        return Hop("app", "fail", f"connected to {dst.key}:{port}, but {name} does not speak HTTP: the client "
                   "gets an empty reply"), None
    if not _is_http(dst, port, target):
        return Hop("app", "ok", f"{target.scheme.upper()} connection established with {dst.key}:{port}"), None
    from ..policy.l7 import http_verdict

    verdict = http_verdict(state, src, dst, port, method, target.path, headers, host=target.host)
    allowed, reason = verdict.allowed, verdict.reason
    requested = target.path + (f"?{target.query}" if target.query else "")
    # Cilium's proxy read the request: what its L7 flow record holds (network.flows).
    seen = {"http": {"method": method, "url": f"{target.scheme}://{target.host}{requested}",
                     "code": 200 if allowed else 403, "denied": not allowed,
                     "direction": verdict.proxy.upper()}} if verdict.proxy else {}
    if not allowed:
        # Cilium's Envoy filter answers a denied request itself: 403, "Access denied" and CRLF (15 bytes), a local
        # reply with lower-case content-length, content-type, then date and server: envoy (network.wire writes them).
        reply = Reply(403, "Access denied\r\n", {"content-length": "15", "content-type": "text/plain",
                                                  "server": "envoy"}, "envoy")
        return Hop("app", "fail", f"{method} {target.path}: 403 Access denied — {reason}", seen), reply
    seen_from = client_ip or (src.pod_ip if isinstance(src, Pod) else src)
    own = agnhost_http(dst, port, method, requested, seen_from, headers)
    if own is not None:
        # agnhost's servers answer in their own words and statuses (netexec's /echo?code=, /redirect...).
        return Hop("app", "ok", f"{method} {target.path} → HTTP {own.status} from {dst.key}", seen), own
    body = _body(dst, port, requested)
    reply = Reply(200, body, {"content-type": "text/html" if "<html>" in body else "text/plain"})
    # Only worth saying when an HTTP policy exists: enforced (and passed) or present but not enforced.
    note = f" ({reason})" if "not enforced" in reason or "HTTP rule" in reason else ""
    return Hop("app", "ok", f"{method} {target.path} → HTTP 200 from {dst.key}{note}", seen), reply
