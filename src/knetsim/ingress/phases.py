"""One request through the location nginx chose: the annotations, in the order nginx runs them.

ingress-nginx writes each annotation as nginx directives or Lua, and nginx runs a request in
phases, so the order of effects is nginx's, not the order of the annotations:

1. **server rewrite** — ``app-root``: ``/`` of the host answers 302 (server level, before any
   location);
2. **find config** — the location; a Content-Length over its ``proxy-body-size`` is 413, before
   everything below; then ``auto_redirect`` (``/foo`` → 301 ``/foo/``);
3. **rewrite** — a denied location (an annotation that failed to parse) returns 503; CORS: a
   preflight ``OPTIONS`` is answered 204; ``permanent-redirect`` / ``temporal-redirect`` return;
   ``rewrite-target`` rewrites the URI (``x-forwarded-prefix`` with it); then Lua: the redirect to
   https (``ssl-redirect`` / ``force-ssl-redirect``) and the balancer — no endpoint is 503, a canary
   is chosen here (``canary-by-header`` → ``-cookie`` → ``-weight``, unless affinity pins the
   request);
4. **preaccess** — ``limit-connections`` / ``limit-rps`` / ``limit-rpm`` (what a burst gets);
5. **access** — ``denylist``/``whitelist-source-range`` (403), then basic auth (401), then the
   ``auth-url`` subrequest (401/403/500, or 302 to ``auth-signin``); ``satisfy: any`` lets any one
   of them pass;
6. **content** — the request is proxied (``Host`` or ``upstream-vhost``, the ``X-Forwarded-*``
   headers); ``custom-http-errors`` replaces listed error answers — the backend's or nginx's own —
   by the default backend's (``default-backend``, else the controller's, which answers 404);
7. **headers** — every response of a CORS request carries the CORS headers; an https response
   through a location carries HSTS; a newly pinned endpoint sets the affinity cookie.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from ..cluster.state import ClusterState
from ..model.programs import http_status, program_of
from . import errorpages
from .annotations import IngressAnnotations, basicauth, canary, cors, extauth, limits, redirect
from .annotations import access as access_rules
from .annotations import affinity as sticky
from .annotations.backend import hash_key
from .backends import Endpoint, ready_endpoints
from .locations import Found
from .nginxregex import rewrite as nginx_rewrite
from .servers import CATCH_ALL, DEFAULT_UPSTREAM, Affinity, Location, Model, Server

# What the client sees, in a word (route's ``outcome`` adds its own for the cases before a location).
PROXIED = "routed"
REDIRECT = "redirect"
DENIED = "denied"
UNAUTHORIZED = "unauthorized"
TOO_LARGE = "payload-too-large"
PREFLIGHT = "preflight"
UNAVAILABLE = "backend-missing"
NOT_FOUND = "not-found"
AUTH_ERROR = "auth-error"


@dataclass(frozen=True, slots=True)
class Exchange:
    """The request as nginx sees it in a server."""

    method: str
    scheme: str
    host: str  # the Host header as sent ($http_host), port included
    server_name: str  # the Host as a server name ($host): lower case, no port
    request_uri: str  # the path and query as sent ($request_uri)
    uri: str  # the normalized path ($uri)
    args: str  # the query ($args)
    headers: tuple[tuple[str, str], ...]
    peer: str  # the TCP peer
    client: str  # $remote_addr: the peer, or the X-Forwarded-For client with use-forwarded-headers
    body_size: int | None = None

    def header(self, name: str) -> str | None:
        lower = name.lower().replace("_", "-")
        return next((v for n, v in self.headers if n.lower() == lower), None)

    def cookie(self, name: str) -> str | None:
        for n, v in self.headers:
            if n.lower() != "cookie":
                continue
            for part in v.split(";"):
                key, sep, value = part.strip().partition("=")
                if sep and key == name:
                    return value
        return None

    def variable(self, name: str) -> str:
        """An nginx variable, for ``upstream-hash-by`` keys."""
        simple = {"request_uri": self.request_uri, "uri": self.uri, "document_uri": self.uri, "host": self.server_name,
                  "http_host": self.host, "remote_addr": self.client, "binary_remote_addr": self.client,
                  "scheme": self.scheme, "request_method": self.method, "args": self.args,
                  "query_string": self.args, "server_name": self.server_name}
        if name in simple:
            return simple[name]
        if name.startswith("http_"):
            return self.header(name[5:]) or ""
        if name.startswith("cookie_"):
            return self.cookie(name[7:]) or ""
        if name.startswith("arg_"):
            return next((p.partition("=")[2] for p in self.args.split("&") if p.partition("=")[0] == name[4:]), "")
        return ""

    @property
    def identity(self) -> str:
        return f"{self.method} {self.scheme}://{self.host}{self.request_uri} {self.client} " + "|".join(
            f"{n.lower()}={v}" for n, v in sorted(self.headers))


@dataclass(frozen=True, slots=True)
class Step:
    phase: str  # server | location | rewrite | balancer | preaccess | access | content | headers
    what: str  # the annotation or directive
    effect: str

    def __str__(self) -> str:
        return f"{self.phase}: {self.what}: {self.effect}"


@dataclass(frozen=True, slots=True)
class Response:
    """An answer nginx writes itself."""

    status: int
    headers: dict[str, str]  # as sent, in order (never modified after construction)
    body: str

    def header(self, name: str) -> str | None:
        return next((v for n, v in self.headers.items() if n.lower() == name.lower()), None)


@dataclass(frozen=True, slots=True)
class Upstream:
    """The request as the backend receives it."""

    name: str  # the controller's upstream: namespace-service-port, or the default backend
    service: str | None  # namespace/name
    port: int | None
    method: str
    host: str  # the Host header sent
    uri: str  # path and query
    headers: dict[str, str]  # what the controller sets (lower-case names, sorted; "" removes the client's)
    protocol: str  # HTTP | HTTPS | GRPC | GRPCS | AUTO_HTTP | FCGI
    canary: bool = False
    endpoint: Endpoint | None = None  # pinned (affinity, upstream-hash-by, service-upstream), else the trace picks
    status: int | None = None  # what the backend answers, where knetsim knows the program (httpbin); else 200


@dataclass(frozen=True, slots=True)
class Served:
    outcome: str
    response: Response | None  # set when nginx answers (or replaces the backend's error)
    upstream: Upstream | None
    added_headers: dict[str, str] = field(default_factory=dict)  # added to the backend's answer
    steps: tuple[Step, ...] = ()
    burst: limits.Burst | None = None
    canary: canary.Decision | None = None
    shares: tuple[tuple[str, float], ...] = ()  # a weighted canary: backend → share of requests
    # What knetsim could not know and assumed (an auth service whose program it does not know): said on the answer.
    caveats: tuple[str, ...] = ()

    @property
    def status(self) -> int | None:
        return self.response.status if self.response is not None else None


@dataclass(slots=True)
class _Run:
    model: Model
    server: Server
    location: Location | None
    ex: Exchange
    state: ClusterState
    steps: list[Step] = field(default_factory=list)
    cors: tuple[tuple[str, str], ...] = ()
    in_location: bool = False
    caveats: list[str] = field(default_factory=list)

    @property
    def annotations(self) -> IngressAnnotations:
        return self.location.annotations if self.location is not None else IngressAnnotations("")

    def step(self, phase: str, what: str, effect: str) -> None:
        self.steps.append(Step(phase, what, effect))

    def common_headers(self) -> list[tuple[str, str]]:
        out = list(self.cors)
        hsts = self.model.config.hsts_header
        if self.in_location and self.ex.scheme == "https" and hsts:
            out.append(("Strict-Transport-Security", hsts))
        return out

    def answer(self, status: int, outcome: str, *, location: str | None = None,
               extra: tuple[tuple[str, str], ...] = (), body: str | None = None, intercept: bool = True) -> Served:
        if intercept:
            replaced = self._intercepted(status)
            if replaced is not None:
                return replaced
        headers: list[tuple[str, str]] = []
        text = errorpages.page(status) if body is None else body
        if text:
            headers.append(("Content-Type", "text/html"))
        if location is not None:
            headers.append(("Location", location))
        headers.extend(extra)
        headers.extend(self.common_headers())
        return Served(outcome, Response(status, dict(headers), text), None, {}, tuple(self.steps))

    def default_backend(self) -> Served:
        return Served(NOT_FOUND, default_backend_answer(tuple(self.common_headers())), None, {}, tuple(self.steps))

    def _intercepted(self, status: int) -> Served | None:
        """``custom-http-errors``: nginx's own error answers are replaced too (``error_page``)."""
        if not self.in_location:
            return None
        errors = self.annotations.errors
        if status not in errors.codes:
            return None
        return _error_page(self, status, "nginx's own")


def default_backend_answer(headers: tuple[tuple[str, str], ...] = ()) -> Response:
    """What the controller's default backend answers, for every request it gets.

    Without ``--default-backend-service`` (kind's install), the controller's upstream-default-backend is
    its own endpoint 127.0.0.1:8181 (``DefaultEndpoint``, ``--default-server-port``), the template's
    default server whose ``location /`` returns 404: nginx's 404 page, ``text/html``, proxied back to the
    client (the controller adds its Date and Connection; ``network.wire``). ``headers`` are those the
    client's location adds (CORS, HSTS)."""
    return Response(404, dict((("Content-Type", "text/html"), *headers)), errorpages.page(404))


def _error_page(run: _Run, status: int, whose: str) -> Served:
    errors = run.annotations.errors
    if errors.default_backend:
        service = run.state.services.get(errors.default_backend)
        port = service.ports[0].port if service is not None and service.ports else None
        endpoints = ready_endpoints(run.state, errors.default_backend, port)
        if endpoints:
            run.step("content", f"custom-http-errors ({errors.codes_from})",
                     f"{whose} {status} is replaced by default-backend {errors.default_backend}'s answer for / "
                     f"(X-Code: {status})")
            ns, name = errors.default_backend.split("/", 1)
            # The @custom_ location sets its own headers (no X-Real-IP, no X-Forwarded-Host...).
            upstream = Upstream(f"custom-default-backend-{ns}-{name}", errors.default_backend, port, "GET",
                                run.ex.host, "/", {"x-code": str(status), "x-forwarded-for": run.ex.client,
                                                   "x-original-uri": run.ex.request_uri}, "HTTP")
            return Served(PROXIED, None, upstream, dict(run.common_headers()), tuple(run.steps))
    run.step("content", f"custom-http-errors ({errors.codes_from})",
             f"{whose} {status} is replaced by the controller's default backend's answer: 404")
    return Served(NOT_FOUND, default_backend_answer(tuple(run.common_headers())), None, {}, tuple(run.steps))


def certificate_configured(model: Model, host: str) -> bool:
    """Lua ``configured_for_current_request``: the Host (or its one-label wildcard) has a server with a
    certificate from spec.tls (the Secret's, or the default one when the Secret cannot be used)."""
    host = host.rstrip(".").lower()
    if host in model.servers and host != CATCH_ALL and model.servers[host].certificate is not None:
        return True
    if "." in host:
        wildcard = "*." + host.split(".", 1)[1]
        server = model.servers.get(wildcard)
        return server is not None and server.certificate is not None
    return False


def serve(model: Model, server: Server, found: Found, ex: Exchange, state: ClusterState, *,
          burst: int | None = None) -> Served:
    run = _Run(model, server, found.location, ex, state)
    served = _serve(run, model, server, found, ex, state, burst)
    return replace(served, caveats=tuple(run.caveats)) if run.caveats else served


def _serve(run: _Run, model: Model, server: Server, found: Found, ex: Exchange, state: ClusterState,
           burst: int | None) -> Served:
    # 1. server rewrite phase: app-root (the first location in the server's order that sets it).
    app = next((loc for loc in server.locations if loc.annotations.redirect.app_root), None)
    if app is not None and ex.uri == "/":
        target = f"{ex.scheme}://{ex.host}{app.annotations.redirect.app_root}"
        run.step("server", "app-root", f"{app.annotations.ingress}: / answers 302 to {target}")
        return run.answer(302, REDIRECT, location=target, intercept=False)
    loc = found.location
    if loc is None:
        run.step("location", "none", "no location matches: nginx answers 404")
        return run.default_backend()
    run.in_location = True
    anns = loc.annotations
    denied = anns.denied
    # 2. find config: client_max_body_size, then the auto redirect.
    max_body = anns.limits.max_body_bytes if denied is None else 1024 * 1024
    if ex.body_size is not None and max_body is not None and ex.body_size > max_body:
        run.step("location", "proxy-body-size", f"Content-Length {ex.body_size} is over client_max_body_size "
                                                f"{anns.limits.body_size if denied is None else '1m'}: 413")
        return run.answer(413, TOO_LARGE)
    if found.redirect:
        target = f"{ex.scheme}://{ex.server_name}{loc.path}" + (f"?{ex.args}" if ex.args else "")
        run.step("location", f"location {loc.path}", f"{ex.uri} is {loc.path} without its trailing slash: nginx "
                                                      f"answers 301 to {target}")
        return run.answer(301, REDIRECT, location=target)
    # 3. rewrite phase.
    if denied is not None:
        run.step("rewrite", "location denied", f"{denied}: return 503")
        return run.answer(503, DENIED)
    if anns.cors.enabled:
        origin = cors.allowed_origin(anns.cors, ex.header("Origin"))
        if origin is not None:
            preflight = ex.method == "OPTIONS"
            headers = cors.headers(anns.cors, origin, preflight)
            if preflight:
                run.step("rewrite", "enable-cors", "a CORS preflight (OPTIONS) is answered 204 by the controller")
                run.cors = headers
                return Served(PREFLIGHT, Response(204, dict((*headers, *_hsts(run))), ""), None, {},
                              tuple(run.steps))
            run.cors = tuple(h for h in headers if h[0].startswith("Access-Control-"))
            run.step("rewrite", "enable-cors", f"CORS headers added (Access-Control-Allow-Origin: {origin})")
        elif ex.header("Origin") is None:
            run.step("rewrite", "enable-cors", "no Origin header: not a CORS request, no CORS headers")
        else:
            run.step("rewrite", "enable-cors", f"Origin {ex.header('Origin')} is not in cors-allow-origin: no CORS "
                                               "headers")
    if anns.redirect.url:
        target = anns.redirect.url
        if target.startswith("/") and not anns.redirect.relative:
            target = f"{ex.scheme}://{ex.server_name}{target}"
        which = "permanent-redirect" if anns.redirect.code in (301, 308) or anns.redirect.code > 307 else \
            "temporal-redirect"
        run.step("rewrite", which, f"return {anns.redirect.code} {anns.redirect.url}")
        return run.answer(anns.redirect.code, REDIRECT, location=target)
    uri = ex.uri
    request_uri = ex.request_uri
    prefix_header: tuple[tuple[str, str], ...] = ()
    if loc.needs_rewrite():
        request_uri = nginx_rewrite(loc.path, anns.rewrite.target, ex.uri, ex.args)
        uri = request_uri.split("?", 1)[0]
        run.step("rewrite", "rewrite-target", f'rewrite "(?i){loc.path}" {anns.rewrite.target} break: the backend '
                                              f"receives {request_uri}")
        if anns.rewrite.x_forwarded_prefix:
            prefix_header = (("x-forwarded-prefix", anns.rewrite.x_forwarded_prefix),)
    elif anns.rewrite.x_forwarded_prefix:
        run.step("rewrite", "x-forwarded-prefix", "ignored: ingress-nginx sets the header only together with a "
                                                  "rewrite-target")
    redirected = _https_redirect(run)
    if redirected is not None:
        return redirected
    # The balancer (Lua): the backend, its endpoints, a canary.
    if loc.upstream == DEFAULT_UPSTREAM:
        # The location proxies to the controller's default backend: the access checks still run first.
        denied_here = _access(run, loc)
        if denied_here is not None:
            return denied_here
        run.step("content", "default backend", "no Ingress backend for this location: the controller's default "
                                               "backend answers 404")
        return run.default_backend()
    return _proxy(run, uri, request_uri, prefix_header, burst)


def _hsts(run: _Run) -> tuple[tuple[str, str], ...]:
    hsts = run.model.config.hsts_header
    return (("Strict-Transport-Security", hsts),) if run.ex.scheme == "https" and hsts else ()


def _https_redirect(run: _Run) -> Served | None:
    loc = run.location
    assert loc is not None
    config = run.model.config
    flags = loc.annotations.redirect
    ex = run.ex
    scheme = ex.scheme
    host = ex.host
    if config.use_forwarded_headers:
        scheme = ex.header("X-Forwarded-Proto") or scheme
        host = (ex.header("X-Forwarded-Host") or host).split(",", 1)[0]
    if any(loc.path.startswith(p) for p in config.no_tls_redirect_locations):
        return None
    if flags.force_ssl_redirect and scheme == "http":
        why = "force-ssl-redirect"
    elif scheme != "http":
        return None
    elif flags.ssl_redirect and certificate_configured(run.model, ex.server_name):
        why = "ssl-redirect (the host has a certificate from spec.tls)"
    else:
        if certificate_configured(run.model, ex.server_name):
            run.step("rewrite", "ssl-redirect", "\"false\": plain http is served")
        return None
    target = redirect.https_location(host, ex.request_uri, flags.preserve_trailing_slash)
    run.step("rewrite", why, f"plain http is redirected with {config.http_redirect_code} to {target}")
    return run.answer(config.http_redirect_code, REDIRECT, location=target)


def _pick_endpoint(run: _Run, upstream: str, endpoints: list[Endpoint], affinity: Affinity | None,
                   location: Location) -> tuple[Endpoint | None, tuple[tuple[str, str], ...]]:
    """Affinity, then upstream-hash-by; None: no pinning (the trace picks, as the round-robin balancer would)."""
    anns = location.annotations
    if anns.backend.service_upstream or not endpoints:
        return None, ()
    if affinity is not None:
        cookie_value = run.ex.cookie(affinity.config.cookie_name)
        pinned = sticky.pinned(affinity.config, cookie_value, upstream, [e.address for e in endpoints])
        if pinned is not None:
            run.step("balancer", "affinity", f"cookie {affinity.config.cookie_name} pins endpoint {pinned}")
            return next(e for e in endpoints if e.address == pinned), ()
        chosen = endpoints[int.from_bytes(hashlib.sha256(run.ex.identity.encode()).digest()[:4], "big")
                           % len(endpoints)]
        host = run.ex.server_name if run.server.name != CATCH_ALL else CATCH_ALL
        paths = affinity.cookie_paths.get(host) or affinity.cookie_paths.get(
            "*." + host.split(".", 1)[-1] if "." in host else host, ())
        if not paths and host in run.server.aliases:
            # ingress-nginx lists a server's paths under each of its server-alias names too (controller.go,
            # the CookieSessionAffinity locations), so an alias's requests get the cookie as the host's do
            # (test/e2e/annotations/affinity.go "should work with server-alias annotation").
            paths = affinity.cookie_paths.get(run.server.name, ())
        if location.ingress_path in paths:
            value = sticky.set_cookie(affinity.config, chosen.address, upstream, location.ingress_path,
                                      run.ex.scheme == "https", run.ex.header("User-Agent") or "")
            run.step("balancer", "affinity", f"no valid {affinity.config.cookie_name} cookie: endpoint "
                                             f"{chosen.address} picked and pinned with Set-Cookie")
            return chosen, (("Set-Cookie", value),)
        run.step("balancer", "affinity", f"endpoint {chosen.address} picked (this path does not set the cookie)")
        return chosen, ()
    if anns.backend.hash_by:
        key = hash_key(anns.backend.hash_by, run.ex.variable)
        index = int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") % len(endpoints)
        run.step("balancer", "upstream-hash-by", f"{anns.backend.hash_by} = {key!r}: consistently endpoint "
                                                 f"{endpoints[index].address}")
        return endpoints[index], ()
    return None, ()


def _proxy(run: _Run, uri: str, request_uri: str, prefix_header: tuple[tuple[str, str], ...],
           burst: int | None) -> Served:
    loc = run.location
    assert loc is not None and loc.ingress is not None and loc.backend is not None
    anns = loc.annotations
    state = run.state
    ex = run.ex
    namespace = loc.ingress.namespace
    service = f"{namespace}/{loc.backend.service_name}"
    port = _service_port(state, service, loc.backend)
    upstream = loc.upstream
    endpoints = ready_endpoints(state, service, port)
    decision: canary.Decision | None = None
    chosen_service, chosen_port, chosen_upstream, is_canary = service, port, upstream, False
    if not endpoints:
        custom = anns.errors.default_backend
        custom_port = _first_port(state, custom)
        custom_endpoints = ready_endpoints(state, custom, custom_port) if custom else []
        if custom_endpoints:
            run.step("balancer", "default-backend", f"{service} has no ready endpoint: the request goes to "
                                                    f"default-backend {custom} (X-Code: 503)")
            ns, name = custom.split("/", 1)
            headers = {**_upstream_headers(run, anns, prefix_header), "x-code": "503",
                       "x-namespace": loc.ingress.namespace, "x-ingress-name": loc.ingress.name,
                       "x-service-name": loc.backend.service_name, "x-service-port": str(port or "")}
            up = Upstream(f"custom-default-backend-{ns}-{name}", custom, custom_port, ex.method, ex.host, request_uri,
                          dict(sorted(headers.items())), "HTTP")
            return Served(PROXIED, None, up, dict(run.common_headers()), tuple(run.steps))
        run.step("balancer", "endpoints", f"{service} has no ready endpoint for port {port}: the balancer answers "
                                          "503")
        return run.answer(503, UNAVAILABLE)
    alternative = run.model.canaries.get(upstream)
    if alternative is not None:
        alt_service = f"{alternative.ingress.namespace}/{alternative.backend.service_name}"
        alt_port = _service_port(state, alt_service, alternative.backend)
        alt_endpoints = ready_endpoints(state, alt_service, alt_port)
        primary_affinity = run.model.affinity.get(upstream)
        alt_affinity = run.model.affinity.get(alternative.upstream) or (
            primary_affinity if alternative.annotations.affinity.canary_behavior != "legacy" else None)
        if primary_affinity is not None and sticky.is_affinitized(ex.cookie(primary_affinity.config.cookie_name),
                                                                  upstream):
            decision = canary.Decision(False, "affinity", "the affinity cookie pins the primary backend")
        elif not alt_endpoints:
            decision = canary.Decision(False, "endpoints", f"canary {alt_service} has no ready endpoint: no "
                                                           "alternative balancer")
        elif alt_affinity is not None and sticky.is_affinitized(ex.cookie(alt_affinity.config.cookie_name),
                                                                alternative.upstream):
            decision = canary.Decision(True, "affinity", "the affinity cookie pins the canary backend")
        else:
            decision = canary.decide(alternative.config, ex.header, ex.cookie, ex.identity)
        run.step("balancer", f"canary ({alternative.ingress.key})",
                 f"{'canary ' + alt_service if decision.canary else 'primary ' + service}: {decision.reason}")
        if decision.canary:
            chosen_service, chosen_port, chosen_upstream, is_canary = (alt_service, alt_port, alternative.upstream,
                                                                       True)
            endpoints = alt_endpoints
    affinity = run.model.affinity.get(upstream)
    if is_canary and alternative is not None:
        # affinity-canary-behavior sticky (the default): the canary's backend gets the primary's affinity.
        affinity = run.model.affinity.get(alternative.upstream) or (
            affinity if alternative.annotations.affinity.canary_behavior != "legacy" else None)
    pinned, cookie = _pick_endpoint(run, chosen_upstream, endpoints, affinity, loc)
    if anns.backend.service_upstream:
        svc = state.services.get(chosen_service)
        run.step("balancer", "service-upstream", f"one upstream, the Service's ClusterIP "
                                                 f"{svc.cluster_ip if svc else '?'}:{chosen_port}: kube-proxy picks "
                                                 "the pod")
    # 4. preaccess: the rate limits.
    burst_result = None
    if burst is not None:
        exempt = any(access_rules._contains(c, ex.client) for c in anns.limits.allowlist)
        burst_result = limits.burst(anns.limits, burst, run.model.config.limit_req_status_code,
                                    run.model.config.limit_conn_status_code, exempt)
        refused = f", {burst_result.rejected} get {burst_result.status}" if burst_result.rejected else ""
        run.step("preaccess", "limits", f"a burst of {burst} from {ex.client}: {burst_result.allowed} through"
                                        f"{refused} ({burst_result.why})")
    # 5. access phase.
    denied = _access(run, loc)
    if denied is not None:
        return _with_burst(_with_canary(denied, decision), burst_result)
    # 6. content: the request to the backend.
    headers = _upstream_headers(run, anns, prefix_header)
    host = anns.rewrite.upstream_vhost or (ex.host if not run.model.config.use_forwarded_headers
                                           else (ex.header("X-Forwarded-Host") or ex.host).split(",", 1)[0])
    if anns.rewrite.upstream_vhost:
        run.step("content", "upstream-vhost", f"Host: {host} is sent to the backend")
    protocol = anns.backend.protocol
    status, why = _backend_status(state, chosen_service, chosen_port, pinned, endpoints, ex.method, uri,
                                  dict(ex.headers), protocol)
    if why:
        run.step("content", "backend-protocol" if protocol != "HTTP" else "backend", why)
    if anns.errors.intercept_backend_errors and status in anns.errors.codes:
        return _with_burst(_with_canary(_error_page(run, status, "the backend's"), decision), burst_result)
    up = Upstream(chosen_upstream, chosen_service, chosen_port, ex.method, host, request_uri, headers, protocol,
                  is_canary, pinned, status)
    if status in (502,):
        return _with_burst(_with_canary(run.answer(502, UNAVAILABLE), decision), burst_result)
    shares: tuple[tuple[str, float], ...] = ()
    if decision is not None and decision.share is not None and alternative is not None:
        alt_service = f"{alternative.ingress.namespace}/{alternative.backend.service_name}"
        alt_port = _service_port(state, alt_service, alternative.backend)
        shares = ((f"{service}:{port}", 1 - decision.share), (f"{alt_service}:{alt_port}", decision.share))
    return Served(PROXIED, None, up, dict((*run.common_headers(), *cookie)), tuple(run.steps), burst_result,
                  decision, shares)


def _with_canary(served: Served, decision: canary.Decision | None) -> Served:
    return replace(served, canary=decision) if decision is not None else served


def _with_burst(served: Served, burst: limits.Burst | None) -> Served:
    return replace(served, burst=burst) if burst is not None else served


def _service_port(state: ClusterState, service: str, backend) -> int | None:  # type: ignore[no-untyped-def]
    svc = state.services.get(service)
    if svc is None:
        return backend.port_number
    if backend.port_number is not None:
        return backend.port_number
    sp = svc.port_named(backend.port_name)
    return sp.port if sp is not None else None


def _first_port(state: ClusterState, service: str) -> int | None:
    svc = state.services.get(service) if service else None
    return svc.ports[0].port if svc is not None and svc.ports else None


def _access(run: _Run, loc: Location) -> Served | None:
    anns = loc.annotations
    config = run.model.config
    # nginx's access handlers in their order; with satisfy all the first that refuses answers and the rest never
    # run, with satisfy any every one runs until one allows.
    checks = []
    if anns.access.allow or anns.access.deny:
        checks.append(lambda: _source_range(run, anns))
    no_auth = any(loc.path.startswith(p) for p in config.no_auth_locations)
    if anns.basic_auth is not None and not no_auth:
        checks.append(lambda: _basic_auth(run, anns))
    if anns.ext_auth is not None and not no_auth:
        checks.append(lambda: _external_auth(run, anns.ext_auth))
    results: list[tuple[bool, int, Served | None]] = []  # (passed, status, the answer when it fails)
    for check in checks:
        result = check()
        if result is None:
            continue
        results.append(result)
        if anns.satisfy == "any" and result[0]:
            run.step("access", "satisfy any", "one check passed: allowed")
            return None
        if anns.satisfy != "any" and not result[0]:
            break
    if not results:
        return None
    if anns.satisfy == "any":
        failed = next((r for r in results if r[1] == 401), results[0])
    else:
        failed = next((r for r in results if not r[0]), None)
        if failed is None:
            return None
    _passed, status, served = failed
    if served is not None:
        return served
    return run.answer(status, DENIED if status == 403 else UNAUTHORIZED if status == 401 else AUTH_ERROR)


def _source_range(run: _Run, anns: IngressAnnotations) -> tuple[bool, int, Served | None]:
    ok, why = access_rules.verdict(anns.access, run.ex.client)
    run.step("access", "source range", why + ("" if ok else ": 403"))
    return ok, 403, None


def _basic_auth(run: _Run, anns: IngressAnnotations) -> tuple[bool, int, Served | None] | None:
    auth = anns.basic_auth
    assert auth is not None
    if auth.type != "basic":
        run.step("access", "auth-type", f"{auth.type} authentication is not simulated: allowed")
        return None
    ok, why = basicauth.check(auth, run.ex.header("Authorization"))
    run.step("access", "auth-type basic", why + ("" if ok else ": 401"))
    return ok, 401, None if ok else run.answer(401, UNAUTHORIZED,
                                               extra=(("WWW-Authenticate", basicauth.challenge(auth)),))


def _external_auth(run: _Run, config: extauth.ExtAuthConfig) -> tuple[bool, int, Served | None]:
    status, headers, why = ask_auth_service(run.state, config, run.ex)
    if status is None and why.startswith(UNKNOWN_AUTH):
        # knetsim cannot tell what the auth service answers: the request is followed as if it were allowed (the
        # only way to show what comes after), and the answer says so instead of presenting a 200 it never saw.
        caveat = (f"auth-url {config.url}: {why.removeprefix(UNKNOWN_AUTH)}; this answer assumes it lets the "
                  "request through; if it answers 401 or 403 the client gets that, anything else is a 500")
        run.caveats.append(caveat)
        run.step("access", "auth-url", f"{config.url}: its answer is unknown to knetsim, assumed to allow")
        return True, 200, None
    run.step("access", "auth-url", f"{config.url} answers {status or 'nothing'}: {why}")
    if status is not None and 200 <= status < 300:
        return True, status, None
    if status == 401 and config.signin:
        target = extauth.signin_location(config, run.ex.scheme, run.ex.host, run.ex.request_uri)
        run.step("access", "auth-signin", f"401 becomes 302 to {target}")
        return False, 302, run.answer(302, REDIRECT, location=target, intercept=False)
    if status in (401, 403):
        extra = tuple((k, v) for k, v in headers.items() if k.lower() == "www-authenticate") if status == 401 else ()
        return False, status, run.answer(status, UNAUTHORIZED if status == 401 else DENIED, extra=extra)
    return False, 500, run.answer(500, AUTH_ERROR)


UNKNOWN_AUTH = "unknown: "  # ask_auth_service's why, when knetsim cannot know what the auth service answers
ANY_WEB_SERVER = " (any web server: 200)"


def ask_auth_service(state: ClusterState, config: extauth.ExtAuthConfig,
                     ex: Exchange) -> tuple[int | None, dict[str, str], str]:
    """What the auth URL answers to the subrequest: its Service's program, as the app layer would."""
    parsed = urlsplit(config.url)
    host = (parsed.hostname or "").rstrip(".")
    labels = host.split(".")
    domain = state.config.cluster_domain
    service = None
    if len(labels) >= 2 and (len(labels) == 2 or labels[2] == "svc") and (
            len(labels) <= 3 or ".".join(labels[3:]) == domain):
        service = f"{labels[1]}/{labels[0]}"
    if service is None or service not in state.services:
        where = f"Service {service} does not exist" if service else f"{host} is not a cluster Service name"
        if service is None:
            return None, {}, f"{UNKNOWN_AUTH}{where}: knetsim cannot ask it"
        return 502, {}, f"{where}: the subrequest fails (502), which auth_request turns into 500"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    path = parsed.path or "/"
    if parsed.query:
        path += "?" + parsed.query
    status, headers, why = service_answer(state, service, port, config.method or "GET", path, dict(ex.headers),
                                          ex.identity)
    if status is None:
        return 502, {}, f"{why} (502 → 500)"
    if not headers and why.endswith(ANY_WEB_SERVER):
        # A pod whose program knetsim does not know: a web server answers, but allow or deny is its own logic.
        return None, {}, f"{UNKNOWN_AUTH}{why.removesuffix(ANY_WEB_SERVER)}: knetsim does not know what its " \
                         "program answers"
    return status, headers, why


def service_answer(state: ClusterState, service: str, port: int, method: str, path: str, headers: dict[str, str],
                   identity: str) -> tuple[int | None, dict[str, str], str]:
    """What a Service answers to one request, as its program does; None when nothing accepts the connection."""
    svc = state.services.get(service)
    if svc is None:
        return None, {}, f"Service {service} does not exist"
    if not any(p.port == port for p in svc.ports):
        return None, {}, f"Service {service} has no port {port}: the connection is refused"
    endpoints = ready_endpoints(state, service, port)
    if not endpoints:
        return None, {}, f"Service {service} has no ready endpoint: the connection is refused"
    endpoint = endpoints[int.from_bytes(hashlib.sha256(identity.encode()).digest()[:4], "big") % len(endpoints)]
    pod = state.pods.get(endpoint.pod) if endpoint.pod else None
    if pod is not None:
        for container in pod.containers:
            program = program_of(container)
            if program is not None and (endpoint.port, "TCP") in program.ports:
                status, out = http_status(program, method, path, headers)
                return status, out, f"{program.name} on {pod.key} answers {status} for {path}"
    return 200, {}, f"{pod.key if pod else endpoint.address} serves {path}{ANY_WEB_SERVER}"


def _upstream_headers(run: _Run, anns: IngressAnnotations,
                      prefix: tuple[tuple[str, str], ...]) -> dict[str, str]:
    ex = run.ex
    config = run.model.config
    forwarded_for = ex.client
    original = ex.header(config.forwarded_for_header)
    if config.use_forwarded_headers and config.compute_full_forwarded_for:
        forwarded_for = f"{original}, {ex.peer}" if original else ex.peer
    scheme = ex.scheme
    if config.use_forwarded_headers:
        scheme = ex.header("X-Forwarded-Proto") or scheme
    headers = [("x-real-ip", ex.client), ("x-forwarded-for", forwarded_for), ("x-forwarded-host", ex.host),
               ("x-forwarded-port", "443" if ex.scheme == "https" else "80"), ("x-forwarded-proto", scheme),
               ("x-forwarded-scheme", scheme), ("x-scheme", scheme)]
    if original is not None:
        headers.append(("x-original-forwarded-for", original))
    headers.extend(prefix)
    if anns.basic_auth is not None and anns.basic_auth.type == "basic":
        headers.append(("authorization", ""))
    return dict(sorted(headers))


def _backend_status(state: ClusterState, service: str, port: int | None, pinned: Endpoint | None,
                    endpoints: list[Endpoint], method: str, uri: str, headers: dict[str, str],
                    protocol: str) -> tuple[int, str]:
    """What the backend answers: 502 when it speaks another protocol than backend-protocol says, the
    program's status where knetsim knows it (httpbin), else 200."""
    svc = state.services.get(service)
    sp = next((p for p in svc.ports if p.port == port), None) if svc is not None else None
    speaks = ((sp.app_protocol or sp.name) if sp is not None else "").lower()
    wants_tls = protocol in ("HTTPS", "GRPCS")
    wants_grpc = protocol in ("GRPC", "GRPCS")
    if speaks.startswith(("https", "grpcs", "tls")) and not wants_tls and protocol != "AUTO_HTTP":
        return 400, (f"Service port {sp.port if sp else '?'} ({speaks}) speaks TLS: a plain request gets 400 from "
                     "the backend (set backend-protocol: HTTPS)")
    if speaks and speaks.startswith(("http", "h2c", "grpc")) and not speaks.startswith(("https", "grpcs")) \
            and wants_tls:
        return 502, f"backend-protocol {protocol}, but Service port {sp.port if sp else '?'} ({speaks}) speaks plain " \
                    "text: the TLS handshake fails and the client gets 502"
    if wants_grpc and speaks.startswith("http") and not speaks.startswith(("h2", "grpc")) and speaks != "":
        return 502, f"backend-protocol {protocol}, but Service port {sp.port if sp else '?'} ({speaks}) speaks " \
                    "HTTP/1: grpc_pass fails and the client gets 502"
    directive = "grpc_pass grpc" if wants_grpc else "proxy_pass http"
    why = f"backend-protocol {protocol}: {directive}{'s' if wants_tls else ''}://" if protocol != "HTTP" else ""
    endpoint = pinned or (endpoints[0] if endpoints else None)
    pod = state.pods.get(endpoint.pod) if endpoint is not None and endpoint.pod else None
    if pod is not None and endpoint is not None:
        for container in pod.containers:
            program = program_of(container)
            if program is not None and (endpoint.port, "TCP") in program.ports:
                status, _ = http_status(program, method, uri, headers)
                return status, why
    return 200, why
