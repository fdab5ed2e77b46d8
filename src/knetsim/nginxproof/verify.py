"""``knetsim verify nginx``: the Ingress side of knetsim against a real nginx.

1. The configuration: the model ``route`` reads (``ingress.router.controller_view``), rendered as
   ingress-nginx's template writes it (``render.py``), checked with ``nginx -t``.
2. The harness: a scratch directory (pid, logs, temp files, the test certificate, the htpasswd files
   the controller would dump), one loopback backend per upstream (``backends.py``: each answers as
   its program does and says who it is), nginx started on free high ports — no root needed.
3. The request set of ``ingress.probes`` (every host and path boundary, and the cases each
   annotation decides on), each sent to nginx over a real socket (https with SNI) and routed by
   knetsim (``route_request``).
4. The comparison, field by field: status, which backend (or nginx itself) answered, the URI the
   backend received, ``Location``, the CORS and ``WWW-Authenticate`` headers, the ``Host``,
   ``X-Forwarded-Prefix``, ``X-Forwarded-For``, ``X-Real-IP`` and ``X-Code`` the backend received,
   and the body of nginx's own pages.

A request whose answer ingress-nginx decides in Lua — the redirect to https, the canary, affinity,
``upstream-hash-by``, the balancer's 503 for a backend without endpoints, the from-to-www server —
or with modules a stock nginx lacks (``auth-signin``'s ``set_escape_uri``) is listed as such and not
compared; an ``auth-url`` outside the cluster likewise (knetsim cannot ask it).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from ..cluster.state import ClusterState
from ..ingress import RouteError, route_request
from ..ingress.backends import ready_endpoints
from ..ingress.probes import requests as probe_requests
from ..ingress.router import RouteResult, controller_view
from ..ingress.servers import DEFAULT_UPSTREAM, Model
from ..model.http import EXTERNAL_CLIENT, HTTPRequest
from ..model.programs import http_status, program_of
from . import backends as harness
from .render import PEER_HEADER, Plan, htpasswd_files, render

AGREE = "agree"
DISAGREE = "disagree"
NOT_PROVEN = "not-proven"
COMPARED_RESPONSE = ("access-control-allow-origin", "access-control-allow-credentials",
                     "access-control-allow-methods", "access-control-allow-headers", "access-control-expose-headers",
                     "access-control-max-age", "www-authenticate")
COMPARED_RECEIVED = ("host", "x-forwarded-prefix", "x-forwarded-for", "x-real-ip", "x-code")
MAX_REQUESTS = 20000


class Unavailable(RuntimeError):
    """nginx cannot run here (not installed)."""


class ConfigRefused(RuntimeError):
    """nginx refuses the rendered configuration (``nginx -t``)."""


def nginx_binary() -> str | None:
    found = shutil.which("nginx")
    if found:
        return found
    return "/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None


def missing_requirements() -> list[str]:
    if nginx_binary() is None:
        return ["nginx is not installed (Debian: apt-get install nginx)"]
    return []


@dataclass(frozen=True, slots=True)
class Observed:
    status: int | None
    backend: str | None  # the upstream that answered; None: nginx itself
    uri: str | None  # the request line the backend received
    location: str | None
    headers: dict[str, str] = field(default_factory=dict)  # compared response headers
    received: dict[str, str] = field(default_factory=dict)  # compared request headers at the backend
    body: str | None = None  # nginx's own page

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "backend": self.backend, "uri": self.uri,
                               "location": self.location}
        if self.headers:
            out["headers"] = dict(self.headers)
        if self.received:
            out["received"] = dict(self.received)
        return out


@dataclass(frozen=True, slots=True)
class Check:
    request: HTTPRequest
    verdict: str  # agree | disagree | not-proven
    knetsim: Observed | None
    nginx: Observed | None
    differences: tuple[str, ...] = ()
    why: str = ""  # for not-proven: what decides in Lua

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"request": self.request.describe(), "verdict": self.verdict}
        if self.differences:
            out["differences"] = list(self.differences)
        if self.why:
            out["why"] = self.why
        if self.knetsim is not None:
            out["knetsim"] = self.knetsim.to_dict()
        if self.nginx is not None:
            out["nginx"] = self.nginx.to_dict()
        return out


@dataclass(slots=True)
class Report:
    nginx_version: str
    ingresses: int
    servers: int
    locations: int
    checks: list[Check] = field(default_factory=list)
    config: str = ""

    @property
    def disagree(self) -> list[Check]:
        return [c for c in self.checks if c.verdict == DISAGREE]

    @property
    def not_proven(self) -> list[Check]:
        return [c for c in self.checks if c.verdict == NOT_PROVEN]

    @property
    def agree(self) -> int:
        return sum(c.verdict == AGREE for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {"nginx": self.nginx_version, "ingresses": self.ingresses, "servers": self.servers,
                "locations": self.locations, "requests": len(self.checks), "agree": self.agree,
                "disagree": [c.to_dict() for c in self.disagree],
                "not_proven": [c.to_dict() for c in self.not_proven]}


# --- what knetsim says ---------------------------------------------------------------------------


def lua_reason(result: RouteResult) -> str | None:
    """What ingress-nginx decides for this request in Lua (or with modules a stock nginx lacks)."""
    for step in result.steps:
        if step.phase == "rewrite" and "is redirected" in step.effect:
            return "the redirect to https (lua_ingress.lua)"
        if step.phase == "server" and step.what == "from-to-www-redirect":
            return "the from-to-www redirect server's Location (ngx_srv_redirect.lua)"
        if step.phase == "balancer" and step.what.startswith("canary"):
            return "the canary decision (balancer.lua)"
        if step.phase == "balancer" and step.what in ("affinity", "upstream-hash-by"):
            return f"{step.what} (the Lua balancer)"
        if step.phase == "balancer" and step.what == "endpoints":
            return "the 503 of a backend without endpoints (balancer.lua)"
        if step.what == "auth-signin":
            return "auth-signin's redirect (set_escape_uri, a module a stock nginx lacks)"
        if step.what == "auth-url" and "cannot ask it" in step.effect:
            return "an auth-url outside the cluster (knetsim cannot ask it)"
        if step.phase == "content" and step.what in ("backend-protocol", "backend"):
            return "a backend speaking TLS or gRPC (the harness's backends speak plain HTTP/1.1)"
    return None


def expected(result: RouteResult) -> Observed:
    if result.response is not None:
        response = result.response
        headers = {k.lower(): v for k, v in response.headers.items() if k.lower() in COMPARED_RESPONSE}
        location = response.header("Location")
        body = response.body if response.status >= 300 else None
        return Observed(response.status, None, None, location, headers, {}, body)
    up = result.upstream_request
    if up is None:
        return Observed(None, None, None, None)
    headers = {k.lower(): v for k, v in result.response_headers.items() if k.lower() in COMPARED_RESPONSE}
    received = {k: v for k, v in up.headers.items() if k in COMPARED_RECEIVED and v != ""}
    received["host"] = up.host
    return Observed(up.status or 200, up.name, up.uri, None, headers, received)


def _differences(knetsim: Observed, nginx: Observed) -> list[str]:
    out = []
    for name in ("status", "backend", "uri", "location"):
        if getattr(knetsim, name) != getattr(nginx, name):
            out.append(name)
    for name in sorted(set(knetsim.headers) | set(nginx.headers)):
        if knetsim.headers.get(name) != nginx.headers.get(name):
            out.append(f"header {name}")
    for name in sorted(set(knetsim.received) | set(nginx.received)):
        if knetsim.received.get(name) != nginx.received.get(name):
            out.append(f"received {name}")
    if knetsim.body is not None and nginx.body is not None and knetsim.body != nginx.body:
        out.append("body")
    return out


# --- the harness ----------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _certificate(scratch: str) -> tuple[str, str]:
    from datetime import datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Kubernetes Ingress Controller Fake Certificate")])
    now = datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now - timedelta(days=1)).not_valid_after(now + timedelta(days=1))
            .sign(key, hashes.SHA256()))
    cert_path, key_path = f"{scratch}/tls.crt", f"{scratch}/tls.key"
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return cert_path, key_path


def _program_answer(state: ClusterState, service: str, port: int | None) -> harness.Answer:
    """How a Service's backend answers: its first ready endpoint's program (httpbin's statuses), else 200."""
    endpoints = ready_endpoints(state, service, port)
    program = None
    for ep in endpoints[:1]:
        pod = state.pods.get(ep.pod) if ep.pod else None
        for container in pod.containers if pod is not None else ():
            candidate = program_of(container)
            if candidate is not None and (ep.port, "TCP") in candidate.ports:
                program = candidate
    if program is None:
        return lambda method, uri, headers: (200, {})
    chosen = program
    return lambda method, uri, headers: http_status(chosen, method, uri, headers)


def upstreams(state: ClusterState, model: Model) -> dict[str, tuple[str, int | None]]:
    """Every upstream with ready endpoints → (Service, port), as the controller's backends list them."""
    out: dict[str, tuple[str, int | None]] = {}
    for server in model.servers.values():
        for loc in server.locations:
            if loc.ingress is None or loc.backend is None or loc.upstream == DEFAULT_UPSTREAM:
                continue
            service = f"{loc.ingress.namespace}/{loc.backend.service_name}"
            svc = state.services.get(service)
            port = loc.backend.port_number
            if port is None and svc is not None:
                sp = svc.port_named(loc.backend.port_name)
                port = sp.port if sp is not None else None
            if ready_endpoints(state, service, port):
                out[loc.upstream] = (service, port)
            custom = loc.annotations.errors.default_backend
            if custom:
                csvc = state.services.get(custom)
                cport = csvc.ports[0].port if csvc is not None and csvc.ports else None
                if ready_endpoints(state, custom, cport):
                    out["custom-default-backend-" + custom.replace("/", "-")] = (custom, cport)
    return out


def _auth_services(state: ClusterState, model: Model) -> dict[str, tuple[str, int, str]]:
    """auth-url → (Service, port, path) for auth URLs naming a cluster Service with ready endpoints."""
    from urllib.parse import urlsplit

    out = {}
    domain = state.config.cluster_domain
    for server in model.servers.values():
        for loc in server.locations:
            ext = loc.annotations.ext_auth
            if ext is None or ext.url in out:
                continue
            parsed = urlsplit(ext.url)
            labels = (parsed.hostname or "").rstrip(".").split(".")
            if len(labels) < 2 or (len(labels) > 2 and labels[2] != "svc") or \
                    (len(labels) > 3 and ".".join(labels[3:]) != domain):
                continue
            service = f"{labels[1]}/{labels[0]}"
            port = parsed.port or (443 if parsed.scheme == "https" else 80)
            path = (parsed.path or "/") + (f"?{parsed.query}" if parsed.query else "")
            out[ext.url] = (service, port, path)
    return out


@contextlib.contextmanager
def _nginx(config: str, scratch: str, port: int) -> Iterator[None]:
    binary = nginx_binary()
    if binary is None:
        raise Unavailable("nginx is not installed")
    path = f"{scratch}/nginx.conf"
    with open(path, "w") as f:
        f.write(config)
    args = [binary, "-p", scratch, "-c", path, "-e", f"{scratch}/error.log"]
    test = subprocess.run([*args, "-t", "-q"], capture_output=True, text=True, timeout=60)
    if test.returncode != 0:
        raise ConfigRefused((test.stderr or test.stdout).strip())
    with open(f"{scratch}/stderr.log", "w") as stderr:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    with open(f"{scratch}/stderr.log") as f:
                        raise Unavailable(f"nginx did not start: {f.read().strip()}") from None
                time.sleep(0.05)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _send(request: HTTPRequest, plan: Plan, forwarded_headers: bool, forwarded_for: str) -> Observed:
    https = request.scheme == "https"
    port = plan.https_port if https else plan.http_port
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    if https:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        raw = socket.create_connection(("127.0.0.1", port), timeout=30)
        host = request.host.split(":", 1)[0]
        conn.sock = context.wrap_socket(raw, server_hostname=host if not host.replace(".", "").isdigit() else None)
    try:
        conn.putrequest(request.method, request.path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", request.host)
        peer = request.client_ip or EXTERNAL_CLIENT
        sent_xff = None
        for name, value in request.headers:
            if name.lower() == forwarded_for.lower() and forwarded_headers:
                sent_xff = value
                continue
            conn.putheader(name, value)
        if forwarded_headers:
            # The peer the simulated request comes from, as the realip module walks X-Forwarded-For.
            conn.putheader(forwarded_for, f"{sent_xff}, {peer}" if sent_xff else peer)
        else:
            conn.putheader(PEER_HEADER, peer)
        body = b"x" * request.body_size if request.body_size else None
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # nginx answered (413) before the body
            conn.endheaders(body)
        response = conn.getresponse()
        data = response.read().decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()
    backend = headers.get(harness.BACKEND_HEADER.lower())
    compared = {k: v for k, v in headers.items() if k in COMPARED_RESPONSE}
    if backend is not None:
        try:
            seen = json.loads(data)
        except ValueError:
            seen = {}
        received = {k: v for k, v in (seen.get("headers") or {}).items() if k in COMPARED_RECEIVED}
        return Observed(response.status, backend, seen.get("uri"), headers.get("location"), compared, received)
    return Observed(response.status, None, None, headers.get("location"), compared, {}, data if data else None)


def verify(state: ClusterState, class_name: str | None = None, *, max_requests: int = MAX_REQUESTS,
           keep: str | None = None) -> Report:
    """Render, run, send, compare. Raises Unavailable (no nginx) or ConfigRefused (``nginx -t`` fails)."""
    if nginx_binary() is None:
        raise Unavailable("nginx is not installed (Debian: apt-get install nginx)")
    view = controller_view(state, class_name)
    model = view.model
    if model is None:
        raise Unavailable(f"no Ingress controller serves this cluster ({view.selection.how})")
    version = subprocess.run([nginx_binary() or "nginx", "-v"], capture_output=True, text=True).stderr.strip()
    requests = probe_requests(state, model)[:max_requests]
    scratch = tempfile.mkdtemp(prefix="knetsim-nginx-")
    os.chmod(scratch, 0o755)  # nginx's workers run as another user when started by root
    started: list[harness.Backend] = []
    try:
        for sub in ("client-body", "proxy-temp", "fastcgi-temp", "uwsgi-temp", "scgi-temp"):
            os.makedirs(f"{scratch}/{sub}", exist_ok=True)
        cert, key = _certificate(scratch)
        ports: dict[str, list[str]] = {}
        for name, (service, port) in sorted(upstreams(state, model).items()):
            backend = harness.start(name, _program_answer(state, service, port))
            started.append(backend)
            ports[name] = [f"127.0.0.1:{backend.port}"]
        auth_targets: dict[str, str] = {}
        for url, (service, port, path) in sorted(_auth_services(state, model).items()):
            if not ready_endpoints(state, service, port):
                auth_targets[url] = f"http://127.0.0.1:{_free_port()}{path}"  # nothing listens: refused, as in-cluster
                continue
            backend = harness.start(f"auth-{service}", _program_answer(state, service, port))
            started.append(backend)
            auth_targets[url] = f"http://127.0.0.1:{backend.port}{path}"
        for url in {loc.annotations.ext_auth.url for s in model.servers.values() for loc in s.locations
                    if loc.annotations.ext_auth is not None} - set(auth_targets):
            backend = harness.start("auth-outside", lambda m, u, h: (200, {}))
            started.append(backend)
            auth_targets[url] = f"http://127.0.0.1:{backend.port}/"
        plan = Plan(scratch, _free_port(), _free_port(), _free_port(), ports, auth_targets, {}, cert, key)
        for filename, text in htpasswd_files(model).items():
            with open(f"{scratch}/{filename}", "w") as f:
                f.write(text)
            os.chmod(f"{scratch}/{filename}", 0o644)
        config = render(model, plan)
        report = Report(version, len(model.ordered), len(model.servers),
                        sum(len(s.locations) for s in model.servers.values()), config=config)
        results = []
        for request in requests:
            try:
                results.append(route_request(state, request, class_name))
            except RouteError:
                results.append(None)
        with _nginx(config, scratch, plan.http_port):
            forwarded = model.config.use_forwarded_headers
            header = model.config.forwarded_for_header
            with ThreadPoolExecutor(max_workers=8) as pool:
                observed = list(pool.map(lambda r: _send(r, plan, forwarded, header), requests))
        for request, result, seen in zip(requests, results, observed, strict=True):
            report.checks.append(_check(request, result, seen))
        return report
    finally:
        harness.stop(started)
        if keep:
            shutil.copytree(scratch, keep, dirs_exist_ok=True)
        shutil.rmtree(scratch, ignore_errors=True)


def _check(request: HTTPRequest, result: RouteResult | None, seen: Observed) -> Check:
    if result is None:
        return Check(request, NOT_PROVEN, None, seen, (), "knetsim refuses the request as malformed")
    why = lua_reason(result)
    knetsim = expected(result)
    if why is not None:
        return Check(request, NOT_PROVEN, knetsim, seen, (), why)
    differences = _differences(knetsim, seen)
    return Check(request, DISAGREE if differences else AGREE, knetsim, seen, tuple(differences))


def format_report(report: Report) -> str:
    lines = [f"{report.nginx_version}: {report.ingresses} Ingress(es), {report.servers} server(s), "
             f"{report.locations} location(s) rendered as ingress-nginx's template writes them",
             f"{len(report.checks)} requests: {report.agree} agree, {len(report.disagree)} disagree, "
             f"{len(report.not_proven)} decided in Lua by ingress-nginx (not compared)"]
    for check in report.disagree:
        lines.append(f"DIFFERENT  {check.request.describe()}: {', '.join(check.differences)}")
        for name in check.differences:
            field_name = name.split(" ", 1)[-1]
            k, n = _field(check.knetsim, name, field_name), _field(check.nginx, name, field_name)
            lines.append(f"    {name}: knetsim {k!r}, nginx {n!r}")
    whys: dict[str, int] = {}
    for check in report.not_proven:
        whys[check.why] = whys.get(check.why, 0) + 1
    for why in sorted(whys):
        lines.append(f"not compared: {whys[why]} request(s): {why}")
    return "\n".join(lines) + "\n"


def _field(observed: Observed | None, name: str, field_name: str) -> Any:
    if observed is None:
        return None
    if name.startswith("header "):
        return observed.headers.get(field_name)
    if name.startswith("received "):
        return observed.received.get(field_name)
    if name == "body":
        return (observed.body or "")[:80]
    return getattr(observed, name)
