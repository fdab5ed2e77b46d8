"""``route``: which Ingress, rule, path and backend Service:port serve an HTTP request — and what the
client receives once the annotations have run.

The request reaches one controller (``--class``, else the default IngressClass's, else the only
one running). That controller's configuration is ingress-nginx's (``servers.py``: one server per
host with its locations, built from every Ingress it claims, in its order), read with its
ConfigMap (``config.py``) and each Ingress's annotations (``annotations/``):

1. the server for the Host (port ignored): exact name or alias, else a one-label wildcard, else
   the catch-all ``_``; a ``from-to-www-redirect`` name answers 308 to the rule's host. Rules
   without host never serve a host that has rules of its own;
2. the location nginx picks (``locations.py``): exact, then ``/foo`` → ``/foo/`` 301, then the
   longest prefix; in a regex server (``use-regex`` or ``rewrite-target`` on any Ingress of the
   host) the first case-insensitive regex, longest path first;
3. the location's annotations in nginx's phase order (``phases.py``): redirects, CORS, rewrites,
   the redirect to https, the canary, limits, source ranges, authentication, the proxying, custom
   error pages, response headers.

Every other candidate path is explained.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

from ..cluster.state import ClusterState
from ..model import saferegex
from ..model.http import EXTERNAL_CLIENT, HTTPRequest, HTTPRequestError, RouteAnswer, plain
from ..model.objects import Ingress, IngressBackend
from . import errorpages, phases
from .annotations import access as access_rules
from .annotations.canary import Decision
from .annotations.limits import Burst
from .backends import BackendTarget, resolve_backend
from .config import ControllerConfig, controller_config
from .controllers import ClassResolution, IngressController, default_classes, resolve_class, running_controllers
from .locations import Found, find, regex_hit
from .matching import (
    EXACT,
    IMPLEMENTATION_SPECIFIC,
    effective_path,
    host_matches,
    host_mismatch_reason,
    normalize_host,
    normalize_request_path,
    path_matches,
    path_mismatch_reason,
)
from .nginxregex import regex_error
from .passthrough import Passthrough, passthrough_server
from .servers import CATCH_ALL, DEFAULT_UPSTREAM, Location, Model, Server, build, nginx_order
from .webhook import invalid_paths, path_message, strict_path_validation

FAKE_CERTIFICATE = "Kubernetes Ingress Controller Fake Certificate"

# Outcomes. Only ROUTED means a Service backend was chosen (exit code 0).
ROUTED = "routed"
NOT_FOUND = "not-found"
BACKEND_MISSING = "backend-missing"
UNSUPPORTED_BACKEND = "unsupported-backend"
NO_CONTROLLER = "no-controller"
REDIRECT = phases.REDIRECT
DENIED = phases.DENIED
UNAUTHORIZED = phases.UNAUTHORIZED
TOO_LARGE = phases.TOO_LARGE
PREFLIGHT = phases.PREFLIGHT
AUTH_ERROR = phases.AUTH_ERROR
PASSED_THROUGH = "passed-through"  # ssl-passthrough: the TLS connection goes to the Service unread


class RouteError(ValueError):
    """The request itself is malformed (path not absolute, unknown scheme, bad header or address)."""


@dataclass(frozen=True, slots=True)
class Request:
    host: str
    path: str
    scheme: str
    port: int
    class_name: str | None
    server_name: str  # the Host header as nginx compares it
    normalized_path: str  # the URI path nginx matches locations against
    method: str = "GET"
    client_ip: str = EXTERNAL_CLIENT  # $remote_addr: the address nginx sees the request come from
    body_size: int | None = None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ControllerRef:
    class_name: str | None
    controller: str
    pod: str | None
    pod_ip: str | None
    pods: tuple[str, ...]
    selected_by: str


@dataclass(frozen=True, slots=True)
class Match:
    ingress: str
    rule: int | None  # None: the Ingress's spec.defaultBackend
    host: str | None
    path_index: int | None
    path: str | None
    path_type: str | None
    matched_as: str | None  # the nginx location that matched: "= /p", "/p/", '~* "^/p"'


@dataclass(frozen=True, slots=True)
class TLSInfo:
    port: int
    terminated: bool  # TLS ends at the Ingress controller; the hop to the Service is plain HTTP
    certificate: str | None  # "secret" | "secret-not-found" | "fake" | None (plain http)
    secret: str | None
    ingress: str | None
    detail: str


@dataclass(frozen=True, slots=True)
class Candidate:
    ingress: str
    rule: int | None
    host: str | None  # rule host, "" for a rule without host; None for spec.defaultBackend
    path_index: int | None
    path: str | None
    path_type: str | None
    backend: str
    verdict: str  # chosen | host-mismatch | host-shadowed | path-mismatch | shorter | exact-preferred | order
    #              | duplicate | not-used | class-mismatch | no-controller | rejected | canary
    reason: str


@dataclass(frozen=True, slots=True)
class RouteResult:
    request: Request
    outcome: str
    http_status: int | None  # what the controller itself answers (404, 503, 308, 403...), None when it proxies
    via: str | None  # "rule" | "ingress-default-backend" | "controller-default-backend"
    summary: str
    controller: ControllerRef | None
    server: str | None  # the nginx server block: a host, a wildcard, or "_"
    match: Match | None
    backend: BackendTarget | None
    tls: TLSInfo
    redirect: str | None  # the Location of a redirect the controller answers
    candidates: tuple[Candidate, ...] = ()
    notes: tuple[str, ...] = ()
    upstream: str | None = None  # the URI the backend receives (a rewrite-target applied), when routed
    response: phases.Response | None = None  # nginx's own answer: status, headers, body
    upstream_request: phases.Upstream | None = None  # the request as the backend receives it
    response_headers: dict[str, str] = field(default_factory=dict)  # what the controller adds to the backend's answer
    steps: tuple[phases.Step, ...] = ()  # the annotations that acted, in nginx's order
    canary: Decision | None = None
    burst: Burst | None = None
    shares: tuple[tuple[str, float], ...] = ()  # a canary-weight split: "ns/svc:port" → share of requests

    @property
    def routed(self) -> bool:
        return self.outcome == ROUTED

    def to_dict(self) -> dict[str, Any]:
        out = plain(self)
        out["request"]["headers"] = {n: v for n, v in reversed(self.request.headers)}
        out["steps"] = [str(s) for s in self.steps]
        out["shares"] = dict(self.shares)
        return out

    def answer(self) -> RouteAnswer:
        """What the client observes, comparable with a Gateway's answer (``model.http``)."""
        backend = None
        if self.backend is not None and self.backend.routable and self.redirect is None and \
                self.outcome in (ROUTED, PASSED_THROUGH):
            backend = f"{self.backend.service}:{self.backend.port}"
        upstream = self.upstream if backend is not None else None
        headers: dict[str, str] = {}
        source = self.response.headers if self.response is not None else self.response_headers
        for name, value in source.items():
            if name.lower().startswith("access-control-") or name.lower() == "www-authenticate":
                headers[name.lower()] = value
        upstream_headers: dict[str, str] = {}
        if self.upstream_request is not None and backend is not None:
            upstream_headers["host"] = self.upstream_request.host.split(":", 1)[0] if not \
                self.upstream_request.host.startswith("[") else self.upstream_request.host
            for name, value in self.upstream_request.headers.items():
                if name == "x-forwarded-prefix":
                    upstream_headers[name] = value
        shares = dict(self.shares) if backend is not None else {}
        burst = (self.burst.requests, self.burst.allowed, self.burst.status) if self.burst is not None else None
        certificate = None
        if self.tls is not None and self.tls.terminated and self.tls.certificate is not None:
            certificate = "fake" if self.tls.certificate == "fake" else self.tls.secret
        return RouteAnswer(self.http_status, backend, self.redirect, upstream, self.summary, headers,
                           upstream_headers, shares, burst, certificate)


# --- controller selection -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Selection:
    controller: IngressController | None
    class_name: str | None
    how: str
    notes: tuple[str, ...] = ()


def _class_of(state: ClusterState, controller: IngressController) -> str:
    names = sorted(c.name for c in state.ingress_classes.values() if c.controller == controller.controller)
    return names[0] if names else controller.ingress_class


def _select(state: ClusterState, controllers: list[IngressController], class_name: str | None) -> _Selection:
    if class_name is not None:
        ic = state.ingress_classes.get(class_name)
        if ic is not None:
            matching = [c for c in controllers if c.controller == ic.controller]
            if matching:
                return _Selection(matching[0], class_name, f"--class {class_name}")
            return _Selection(None, class_name, f"IngressClass {class_name!r} names controller {ic.controller!r}, "
                                                "which no running controller implements")
        matching = [c for c in controllers if c.ingress_class == class_name]
        if matching:
            return _Selection(matching[0], class_name,
                              f"--class {class_name} (a controller's --ingress-class; no IngressClass of that name)")
        known = ", ".join(sorted(state.ingress_classes)) or "none"
        return _Selection(None, class_name, f"IngressClass {class_name!r} not found (IngressClasses: {known})")
    for ic in default_classes(state):
        matching = [c for c in controllers if c.controller == ic.controller]
        if matching:
            return _Selection(matching[0], ic.name, f"default IngressClass {ic.name}")
    if len(controllers) == 1:
        return _Selection(controllers[0], _class_of(state, controllers[0]), "the only running Ingress controller")
    if controllers:
        chosen = controllers[0]
        names = ", ".join(c.controller for c in controllers)
        return _Selection(chosen, _class_of(state, chosen), "first running controller by name",
                          (f"several Ingress controllers run ({names}); routing through {chosen.controller}: "
                           "pass --class to choose",))
    return _Selection(None, None, "no Ingress controller runs in this cluster")


# --- TLS ------------------------------------------------------------------------------------


def _secret_exists(state: ClusterState, namespace: str, name: str) -> bool:
    if ("Secret", f"{namespace}/{name}") in state.others:
        return True
    # The core keeps unsimulated kinds as written; a Secret manifest without namespace lands in the
    # namespace of `-n`, which the state does not record: accept it.
    other = state.others.get(("Secret", name))
    return other is not None and not other.namespace


def _tls(state: ClusterState, model: Model, server: Server, request: Request) -> TLSInfo:
    entry = server.certificate if server.name != CATCH_ALL else None
    if request.scheme == "http":
        if entry is None:
            return TLSInfo(80, False, None, None, None, "plain HTTP on port 80")
        ing, secret = entry
        return TLSInfo(80, False, None, f"{ing.namespace}/{secret}", ing.key,
                       f"host {server.name} has TLS (Ingress {ing.key})")
    if entry is None:
        where = ("no Ingress rule names this host" if server.name == CATCH_ALL
                 else f"no Ingress lists {server.name} under spec.tls with a secretName")
        return TLSInfo(443, True, "fake", None, None,
                       f"{where}: TLS still terminates at the controller on 443, with its self-signed "
                       f"'{FAKE_CERTIFICATE}'; clients that verify certificates fail")
    ing, secret = entry
    key = f"{ing.namespace}/{secret}"
    if _secret_exists(state, ing.namespace, secret):
        detail = f"TLS terminates at the controller with Secret {key}; the hop to the Service is plain HTTP"
        return TLSInfo(443, True, "secret", key, ing.key, detail)
    return TLSInfo(443, True, "secret-not-found", key, ing.key,
                   f"TLS terminates at the controller on 443; Secret {key} is not in the input, and if it is missing "
                   f"in the cluster too ingress-nginx serves its '{FAKE_CERTIFICATE}'")


# --- route ----------------------------------------------------------------------------------


def route(state: ClusterState, host: str, path: str = "/", class_name: str | None = None, scheme: str = "http", *,
          method: str = "GET", headers: tuple[tuple[str, str], ...] = (), client_ip: str | None = None,
          body_size: int | None = None, burst: int | None = None) -> RouteResult:
    """Route one HTTP request through the cluster's Ingresses. Raises RouteError on a malformed request."""
    if scheme not in ("http", "https"):
        raise RouteError(f"scheme {scheme!r} is not http or https")
    try:
        request = HTTPRequest(host, path, method.upper(), scheme, None,
                              tuple(headers), client_ip, body_size)
    except HTTPRequestError as exc:
        raise RouteError(str(exc)) from None
    return route_request(state, request, class_name, burst=burst)


def route_request(state: ClusterState, http: HTTPRequest, class_name: str | None = None, *,
                  burst: int | None = None) -> RouteResult:
    """Route an ``HTTPRequest`` (the type a migration check sends through both sides)."""
    try:
        normalized = normalize_request_path(http.path)
    except ValueError as exc:
        raise RouteError(str(exc)) from None
    if burst is not None and burst < 1:
        raise RouteError(f"a burst of {burst} requests is not a burst: give 1 or more")
    port = 443 if http.scheme == "https" else 80
    request = Request(http.host, http.path, http.scheme, port, class_name, normalize_host(http.host), normalized,
                      http.method, http.client_ip or EXTERNAL_CLIENT, http.body_size, http.headers)
    notes: list[str] = []
    if normalized != http.path_only:
        notes.append(f"nginx matches the normalized path {normalized}")
    view = controller_view(state, class_name)
    selection, resolutions = view.selection, view.resolutions
    notes.extend(selection.notes)
    ctl = selection.controller
    if ctl is None or not ctl.serving:
        reason = selection.how if ctl is None else (
            f"controller {ctl.controller} has no ready pod ("
            + "; ".join(f"{p.pod}: {p.reason}" for p in ctl.pods) + ")")
        candidates = _outside_view(state, resolutions, None)
        tls = TLSInfo(request.port, False, None, None, None, "no controller answers")
        return RouteResult(request, NO_CONTROLLER, None, None, f"no controller serves this request: {reason}",
                           None, None, None, None, tls, None, tuple(candidates), tuple(notes))
    assert view.controller is not None and view.model is not None
    controller_ref = view.controller
    config = view.model.config
    model = view.model
    notes.extend(f"ConfigMap {config.source}: {p}" for p in config.problems)
    candidates = list(view.candidates)
    notes.extend(_unserved_matches(state, resolutions, ctl, request))
    exchange = _exchange(request, config)
    target = f"{request.scheme}://{request.host}{request.path}"
    if request.server_name in model.redirect_servers and request.server_name not in model.servers:
        return _www_redirect(model, request, exchange, controller_ref, tuple(candidates), notes)
    if request.scheme == "https":
        through = passthrough_server(model, ctl, request.server_name)
        if through is not None:
            return _passed_through(state, request, controller_ref, through, tuple(candidates), notes)
    server = model.server_for(request.server_name)
    found = find(server, normalized)
    tls = _tls(state, model, server, request)
    candidates += _path_candidates(model, server, found, request)
    candidates += _default_candidates(model, server, found)
    candidates += _canary_candidates(model)
    candidates.sort(key=lambda c: (c.ingress, -1 if c.rule is None else c.rule,
                                   -1 if c.path_index is None else c.path_index))
    if server.regex:
        notes.append(_regex_note(server))
        notes.extend(f"regex {loc.path!r} of {loc.ingress.key if loc.ingress else '-'} ran past "
                     f"{saferegex.MATCH_TIMEOUT * 1000:.0f} ms on {normalized}: counted as no match (nginx's PCRE "
                     "stops at its match limit and answers 500)" for loc in found.timed_out)
    notes.extend(_path_notes(server, found))
    served = phases.serve(model, server, found, exchange, state, burst=burst)
    return _result(state, model, request, controller_ref, server, found, served, tls, candidates, notes, target)


@dataclass(frozen=True, slots=True)
class ControllerView:
    """What one controller serves: the selection, every Ingress's claim, and the configuration it writes."""

    selection: _Selection
    resolutions: dict[str, ClassResolution]
    controller: ControllerRef | None = None
    model: Model | None = None
    candidates: tuple[Candidate, ...] = ()  # Ingresses outside its view, or refused by it


_VIEWS: weakref.WeakKeyDictionary[ClusterState, dict[str | None, ControllerView]] = weakref.WeakKeyDictionary()


def controller_view(state: ClusterState, class_name: str | None = None) -> ControllerView:
    """The controller a request reaches (``--class``, else the default class's, else the only one) and the
    configuration it writes; computed once per state and class (the state is read-only once built)."""
    cached = _VIEWS.setdefault(state, {})
    if class_name in cached:
        return cached[class_name]
    controllers = running_controllers(state)
    selection = _select(state, controllers, class_name)
    resolutions = {key: resolve_class(state, ing, controllers) for key, ing in state.ingresses.items()}
    ctl = selection.controller
    if ctl is None or not ctl.serving:
        view = ControllerView(selection, resolutions)
    else:
        pod = ctl.pod
        ref = ControllerRef(selection.class_name, ctl.controller, pod.pod if pod else None, pod.ip if pod else None,
                            tuple(p.pod for p in ctl.pods), selection.how)
        in_view = [state.ingresses[k] for k, r in sorted(resolutions.items())
                   if r.claimed and r.controller == ctl.controller]
        candidates = _outside_view(state, resolutions, ctl)
        if strict_path_validation(ctl) and controller_config(state, ctl).strict_validate_path_type:
            for ing in [i for i in in_view if invalid_paths(i.raw, ctl)]:
                in_view.remove(ing)
                candidates += _all_paths(ing, "rejected", "the controller's admission webhook refuses this Ingress ("
                                         + "; ".join(path_message(p, t) for _r, _i, p, t in invalid_paths(ing.raw,
                                                                                                       ctl))
                                         + "): kubectl apply fails and it does not exist")
        model = build(state, in_view, controller_config(state, ctl))
        for key, reasons in sorted(model.refused.items()):
            candidates += _all_paths(state.ingresses[key], "rejected", "the controller refuses this Ingress ("
                                     + "; ".join(reasons) + "): its admission webhook denies kubectl apply, and it "
                                     "does not exist")
        view = ControllerView(selection, resolutions, ref, model, tuple(candidates))
    cached[class_name] = view
    return view


def _exchange(request: Request, config: ControllerConfig) -> phases.Exchange:
    peer = request.client_ip
    client = peer
    if config.use_forwarded_headers:
        forwarded = next((v for n, v in request.headers if n.lower() == config.forwarded_for_header.lower()), None)
        client = access_rules.real_ip(peer, forwarded, config.proxy_real_ip_cidr)
    query = request.path.partition("?")[2]
    return phases.Exchange(request.method, request.scheme, request.host, request.server_name,
                           request.path.split("#", 1)[0], request.normalized_path, query.split("#", 1)[0],
                           request.headers, peer, client, request.body_size)


def _www_redirect(model: Model, request: Request, exchange: phases.Exchange, controller: ControllerRef,
                  candidates: tuple[Candidate, ...], notes: list[str]) -> RouteResult:
    to = model.redirect_servers[request.server_name]
    scheme, port = request.scheme, str(request.port)
    if model.config.use_forwarded_headers:
        scheme = next((v for n, v in request.headers if n.lower() == "x-forwarded-proto"), scheme)
        port = next((v for n, v in request.headers if n.lower() == "x-forwarded-port"), port)
    uri = exchange.request_uri[:-1] if exchange.request_uri.endswith("/") else exchange.request_uri
    location = f"{scheme}://{to}:{port}{uri}"
    status = model.config.http_redirect_code
    creator = model.servers[to].creator
    summary = (f"{request.scheme}://{request.host}{request.path}: {request.server_name} is the from-to-www-redirect "
               f"name of host {to} (Ingress {creator.key if creator else '-'}): {status} to {location}")
    response = phases.Response(status, {"Content-Type": "text/html", "Location": location}, errorpages.page(status))
    step = phases.Step("server", "from-to-www-redirect", f"server {request.server_name} answers {status} to {location}")
    tls = TLSInfo(request.port, request.scheme == "https", None, None, None, "the redirect server of "
                  f"{to}")
    return RouteResult(request, REDIRECT, status, None, summary, controller, request.server_name, None, None, tls,
                       location, candidates, tuple(notes), response=response, steps=(step,))


def _passed_through(state: ClusterState, request: Request, controller: ControllerRef, through: Passthrough,
                    candidates: tuple[Candidate, ...], notes: list[str]) -> RouteResult:
    """ssl-passthrough: the TCP proxy forwards the connection to the root location's Service, unread."""
    target = f"{request.scheme}://{request.host}{request.path}"
    backend = resolve_backend(state, through.namespace, through.backend) if through.backend is not None else None
    head = (f"{target}: SNI {request.server_name} is an ssl-passthrough host (Ingress {through.ingress}): the "
            "controller's TCP proxy forwards the TLS connection unread")
    match = Match(through.root_ingress or through.ingress, through.rule, through.server, through.index, "/", "Prefix",
                  "ssl-passthrough") if through.root_ingress else None
    if backend is None or not backend.routable:
        why = backend.problem if backend is not None else "the server has no path / and no defaultBackend"
        tls = TLSInfo(443, False, None, None, through.ingress, f"ssl-passthrough: {why}: the TCP proxy has no "
                      "Service to dial and closes the connection")
        return RouteResult(request, PASSED_THROUGH, None, None, f"{head}, but {why}: the connection is closed",
                           controller, through.server, match, backend, tls, None, candidates, tuple(notes))
    tls = TLSInfo(443, False, None, None, through.ingress, f"ssl-passthrough: the backend's own TLS server answers "
                  f"the handshake (Service {backend.describe()} through its ClusterIP); nginx reads nothing, so no "
                  "other annotation or path of the host applies")
    return RouteResult(request, PASSED_THROUGH, None, "rule", f"{head} to Service {backend.describe()} (its ClusterIP: "
                       "kube-proxy picks the pod)", controller, through.server, match, backend, tls, None, candidates,
                       tuple(notes))


def tls_connection(state: ClusterState, sni: str | None, class_name: str | None = None) -> TLSInfo | RouteResult:
    """A TLS connection to the controller's port 443 with ``sni``: passed through (the RouteResult of an https
    request to it), or terminated by nginx with the certificate of the server the SNI names (TLSInfo)."""
    view = controller_view(state, class_name)
    ctl, model = view.selection.controller, view.model
    if ctl is None or view.controller is None or model is None:
        return TLSInfo(443, False, None, None, None, "no Ingress controller answers")
    name = normalize_host(sni) if sni else ""
    through = passthrough_server(model, ctl, name or None)
    if through is not None:
        request = Request(name, "/", "https", 443, class_name, name, "/")
        return _passed_through(state, request, view.controller, through, (), [])
    server = model.server_for(name) if name else model.servers[CATCH_ALL]
    return _tls(state, model, server, Request(name, "/", "https", 443, class_name, name, "/"))


def _match(found: Found) -> tuple[Match | None, str]:
    loc = found.location
    if loc is None or loc.ingress is None:
        return None, "controller-default-backend"
    if loc.rule is None:
        return Match(loc.ingress.key, None, None, None, None, None, None), (
            "ingress-default-backend" if loc.backend is not None else "controller-default-backend")
    regex = found.how == "regex"
    return Match(loc.ingress.key, loc.rule, loc.host, loc.index, loc.ingress_path, loc.declared_type or loc.path_type,
                 loc.nginx(regex)), "rule"


def _result(state: ClusterState, model: Model, request: Request, controller: ControllerRef, server: Server,
            found: Found, served: phases.Served, tls: TLSInfo, candidates: list[Candidate], notes: list[str],
            target: str) -> RouteResult:
    loc = found.location
    match, via = _match(found)
    where = _where(found)
    backend: BackendTarget | None = None
    if loc is not None and loc.ingress is not None and loc.backend is not None:
        backend = resolve_backend(state, loc.ingress.namespace, loc.backend)
    up = served.upstream
    if up is not None and up.service is not None and backend is not None and up.service != backend.service:
        # The canary, or default-backend standing in for a Service without endpoints.
        ns, name = up.service.split("/", 1)
        backend = resolve_backend(state, ns, IngressBackend(name, up.port))
    if loc is not None:
        notes.extend(_annotation_notes(model, loc))
    response = served.response
    status = response.status if response is not None else None
    location = response.header("Location") if response is not None else None
    outcome = served.outcome
    step_text = served.steps[-1].effect if served.steps else ""
    if outcome == phases.PROXIED:
        assert backend is not None
        outcome = ROUTED
        summary = f"{target} → {where} → Service {backend.describe()}"
        if up is not None and up.canary:
            summary += f" (canary: {served.canary.reason if served.canary else ''})"
        split = [(name, share) for name, share in served.shares if 0 < share < 1]
        if len(split) > 1:
            # A canary-weight split: this request drew one side; the answer says what every request meets.
            summary += " (canary-weight split: " + ", ".join(f"{name} {share:.0%}" for name, share in split) + ")"
        if backend.external_name:
            notes.append(f"Service {backend.service} is ExternalName: the controller proxies to "
                         f"{backend.external_name}")
    elif outcome == phases.UNAVAILABLE and backend is not None and backend.problem is None and status == 502:
        # The backend is there but speaks another protocol than backend-protocol asks for (a TLS handshake or
        # grpc_pass to plain HTTP): nginx answers 502 — not the 503 of a Service without endpoints.
        outcome = ROUTED
        summary = f"{target} → {where} → Service {backend.describe()}: 502, {step_text}"
    elif outcome == phases.UNAVAILABLE and backend is not None and backend.problem is None:
        outcome = ROUTED  # the Service exists without a ready endpoint: still this route, answered 503
        notes.append(f"Service {backend.service} has no ready endpoints for port {backend.port}: ingress-nginx "
                     f"answers 503 (see `knetsim endpoints {backend.service}`)")
        summary = f"{target} → {where} → Service {backend.describe()}: no ready endpoint, 503"
    elif outcome == phases.UNAVAILABLE and backend is not None:
        outcome = BACKEND_MISSING
        summary = f"{target} → {where} → {backend.problem} (ingress-nginx answers 503)"
    elif outcome == phases.NOT_FOUND and (loc is None or loc.ingress is None or loc.backend is None):
        summary = (f"{target}: no rule path matched on server {server.name} and no defaultBackend applies: "
                   "the controller's default backend answers 404")
        match, via = None, "controller-default-backend"
    else:
        summary = f"{target} → {where} → {status} {errorpages.reason(status or 0)}: {step_text}"
    if served.caveats:
        notes.extend(f"unverified: {c}" for c in served.caveats)
        summary += " (unverified: the auth service's answer is assumed, see the notes)"
    upstream = up.uri if up is not None and outcome == ROUTED else None
    if upstream is not None and loc is not None and loc.needs_rewrite():
        notes.append(f"rewrite-target {loc.annotations.rewrite.target!r} of Ingress "
                     f"{loc.ingress.key if loc.ingress else '-'}: the backend receives {upstream}")
    return RouteResult(request, outcome, status, via, summary, controller, server.name, match, backend, tls,
                       location, tuple(candidates), tuple(notes), upstream, response, up, served.added_headers,
                       served.steps, served.canary, served.burst, served.shares)


def _where(found: Found) -> str:
    loc = found.location
    if loc is None or loc.ingress is None:
        return "the controller's default backend"
    if loc.rule is None:
        return f"no path matched; spec.defaultBackend of Ingress {loc.ingress.key}" if loc.backend is not None \
            else f"no path matched on the server Ingress {loc.ingress.key} created"
    return (f"Ingress {loc.ingress.key} rule {loc.rule} (host {loc.host or '*'}) path {loc.ingress_path} "
            f"({loc.declared_type or loc.path_type})")


def _annotation_notes(model: Model, loc: Location) -> list[str]:
    out = []
    anns = loc.annotations
    for problem in anns.problems:
        out.append(f"Ingress {anns.ingress}: {problem.message}")
    if anns.unsimulated:
        out.append(f"Ingress {anns.ingress}: {', '.join(anns.unsimulated)} not simulated by knetsim (no effect on the "
                   "answer shown)")
    if anns.unknown:
        out.append(f"Ingress {anns.ingress}: {', '.join(anns.unknown)} is not an annotation ingress-nginx reads: it "
                   "has no effect")
    for name, text in anns.snippets.present():
        out.append(f"Ingress {anns.ingress}: {name} is arbitrary nginx configuration "
                   f"({' '.join(text.split())[:80]!r}): knetsim does not run it")
    return out


def _backend_text(backend: IngressBackend) -> str:
    return backend.describe()


def _unserved_matches(state: ClusterState, resolutions: dict[str, ClassResolution], ctl: IngressController,
                      request: Request) -> list[str]:
    """Ingresses outside this controller's view that would match: the usual "why 404?" answer."""
    notes = []
    for key in sorted(resolutions):
        res = resolutions[key]
        if res.claimed and res.controller == ctl.controller:
            continue
        hits = [p for r in state.ingresses[key].rules if host_matches(r.host, request.server_name)
                for p in r.paths if path_matches(p.path_type, p.path, request.normalized_path)]
        if hits:
            why = res.reason if not res.effective else f"it is served by controller {res.controller}"
            notes.append(f"Ingress {key} has a matching path {effective_path(hits[0].path)}, but {why}")
    return notes


def _outside_view(state: ClusterState, resolutions: dict[str, ClassResolution],
                  ctl: IngressController | None) -> list[Candidate]:
    out: list[Candidate] = []
    for key in sorted(resolutions):
        res = resolutions[key]
        if ctl is not None and res.claimed and res.controller == ctl.controller:
            continue
        if not res.effective:
            verdict, reason = "no-controller", res.reason
        else:
            verdict = "class-mismatch"
            reason = f"class {res.class_name or '<none>'} is served by controller {res.controller}"
            if ctl is not None:
                reason += f", not by {ctl.controller}, which this request reaches"
        out.extend(_all_paths(state.ingresses[key], verdict, reason))
    return out


def _all_paths(ing: Ingress, verdict: str, reason: str) -> list[Candidate]:
    out = []
    if ing.default_backend is not None:
        out.append(Candidate(ing.key, None, None, None, None, None, _backend_text(ing.default_backend), verdict,
                             reason))
    for r, rule in enumerate(ing.rules):
        for i, p in enumerate(rule.paths):
            out.append(Candidate(ing.key, r, rule.host, i, effective_path(p.path), p.path_type,
                                 _backend_text(p.backend), verdict, reason))
    return out


def _order_reason(first: Ingress, second: Ingress) -> str:
    if first is second:
        return f"declared earlier in {first.key}"
    a, b = first.meta.creation_timestamp, second.meta.creation_timestamp
    if a != b:
        return f"Ingress {first.key} is older"
    return (f"same creationTimestamp: ingress-nginx orders by namespace/name descending, so {first.key} "
            f"comes before {second.key}")


def _cand(loc: Location, verdict: str, reason: str) -> Candidate:
    assert loc.ingress is not None and loc.backend is not None and loc.rule is not None
    return Candidate(loc.ingress.key, loc.rule, loc.host, loc.index, loc.ingress_path,
                     loc.declared_type or loc.path_type, _backend_text(loc.backend), verdict, reason)


def _ingress_paths(server: Server) -> list[list[Location]]:
    """The server's locations grouped by the Ingress path they come from (a Prefix and its exact twin)."""
    groups: dict[tuple[str, int | None, int | None], list[Location]] = {}
    for loc in server.locations:
        if loc.ingress is None or loc.rule is None:
            continue
        groups.setdefault(loc.key, []).append(loc)
    return list(groups.values())


def _path_candidates(model: Model, server: Server, found: Found, request: Request) -> list[Candidate]:
    out: list[Candidate] = []
    name, path = request.server_name, request.normalized_path
    chosen = found.location
    for other in model.servers.values():
        for group in _ingress_paths(other):
            loc = group[0]
            if other is not server:
                if other.name == CATCH_ALL:
                    out.append(_cand(loc, "host-shadowed",
                                     f"rules without host are not consulted for {name}: host {server.name} has rules "
                                     "of its own, and ingress-nginx serves it from that server block"))
                elif host_matches(other.name, name):
                    out.append(_cand(loc, "host-shadowed",
                                     f"exact host {server.name} takes precedence over wildcard {other.name}"))
                else:
                    out.append(_cand(loc, "host-mismatch", host_mismatch_reason(other.name, name)))
                continue
            if chosen is not None and any(g is chosen for g in group):
                out.append(_cand(loc, "chosen", _chosen_reason(found)))
            elif server.regex:
                out.append(_regex_candidate(group, chosen, path))
            else:
                out.append(_static_candidate(group, chosen, path))
    for ing in model.ordered:
        for r, rule in enumerate(ing.rules):
            for i, spec in enumerate(rule.paths):
                if spec.backend.resource is not None:
                    out.append(Candidate(ing.key, r, rule.host, i, effective_path(spec.path), spec.path_type,
                                         _backend_text(spec.backend), "not-used",
                                         "resource backend: ingress-nginx skips paths without a Service backend (no "
                                         "location is written)"))
    for dropped, kept in model.duplicates:
        if dropped.ingress is None or kept.ingress is None:
            continue
        out.append(_cand(dropped, "duplicate",
                         f"{dropped.ingress_path} ({dropped.declared_type}) on host {dropped.host or '*'} is already "
                         f"configured by {kept.ingress.key}; ingress-nginx keeps the first "
                         f"({_order_reason(kept.ingress, dropped.ingress)})"))
    return out


def _chosen_reason(found: Found) -> str:
    loc = found.location
    assert loc is not None
    if found.how == "regex":
        return (f'first regex location that matches (~* "^{loc.path}"; longest paths are tried first)')
    if found.how == "auto-redirect":
        return f"location {loc.path}: nginx redirects the path without its trailing slash to it (301)"
    if found.how == "exact":
        return f"exact location = {loc.path}" + (" (ingress-nginx adds it for the Prefix path)" if loc.twin else "")
    return f"location {loc.path}: longest prefix that matches"


def _static_candidate(group: list[Location], chosen: Location | None, path: str) -> Candidate:
    loc = group[0]
    matching = [g for g in group if (g.path_type == EXACT and g.path == path)
                or (g.path_type != EXACT and path.startswith(g.path))]
    declared = loc.declared_type or loc.path_type
    if not matching:
        if declared != EXACT and chosen is not None and chosen.path_type == EXACT and \
                chosen.path == loc.ingress_path.rstrip("/") and path == chosen.path:
            return _cand(loc, "exact-preferred", f"Exact {chosen.path} takes {path}: ingress-nginx writes this Prefix "
                                                 f"path as location {loc.path} only (the = {chosen.path} twin is the "
                                                 "Exact path's)")
        return _cand(loc, "path-mismatch", path_mismatch_reason(declared, loc.ingress_path, path))
    assert chosen is not None
    if chosen.path_type == EXACT and all(g.path_type != EXACT for g in matching):
        return _cand(loc, "exact-preferred", f"exact location = {chosen.path} is taken before any prefix")
    if len(chosen.path) > max(len(g.path) for g in matching):
        return _cand(loc, "shorter", f"{loc.ingress_path} also matches, but {chosen.ingress_path} is longer")
    return _cand(loc, "order", f"{chosen.ingress_path} matches equally and comes first")


def _regex_candidate(group: list[Location], chosen: Location | None, path: str) -> Candidate:
    loc = group[0]
    problem = regex_error(loc.path)
    if problem is not None:
        return _cand(loc, "path-mismatch", problem)
    hits = [regex_hit(g, path) for g in group]
    if any(h is None for h in hits):
        return _cand(loc, "path-mismatch", f'regex ~* "^{loc.path}" ran past the time bound on {path}')
    if not any(hits):
        return _cand(loc, "path-mismatch", f'regex ~* "^{loc.path}" does not match {path}')
    assert chosen is not None and chosen.ingress is not None and loc.ingress is not None
    if len(loc.path) < len(chosen.path):
        return _cand(loc, "shorter", f"{loc.ingress_path} also matches as a regex, but {chosen.ingress_path} is "
                                     "longer and is tried first")
    return _cand(loc, "order", f"{chosen.ingress_path} matches first among regexes of equal length "
                               "(ingress-nginx writes them in descending path order)")


def _regex_note(server: Server) -> str:
    by = server.regex_by
    who = f"Ingress {by.ingress.key} sets {'use-regex' if by.annotations.rewrite.use_regex else 'rewrite-target'}" \
        if by is not None and by.ingress is not None else "an Ingress sets use-regex or rewrite-target"
    text = (f"server {server.name}: {who}, so ingress-nginx writes every location of this host as a "
            "case-insensitive regex anchored at the start (`location ~* \"^<path>\"`), tried longest path first, "
            "Exact and Prefix paths included")
    broken = [f"{loc.ingress.key} {regex_error(loc.path)}" for loc in server.locations
              if loc.ingress is not None and regex_error(loc.path)]
    if broken:
        text += "; " + "; ".join(broken) + " (nginx would refuse the configuration)"
    return text


def _default_candidates(model: Model, server: Server, found: Found) -> list[Candidate]:
    out = []
    chosen = found.location if found.location is not None and found.location.rule is None else None
    root = next((loc for loc in server.locations if loc.rule is None), None)
    for ing in model.ordered:
        if ing.default_backend is None:
            continue
        text = _backend_text(ing.default_backend)
        if chosen is not None and chosen.ingress is ing and chosen.backend is not None:
            out.append(Candidate(ing.key, None, None, None, None, None, text, "chosen",
                                 f"no path matched on server {server.name}; this Ingress's defaultBackend is that "
                                 "server's default"))
            continue
        if chosen is None and found.location is not None:
            reason = "a rule path matched; a defaultBackend answers only when none does"
        elif ing.rules:
            hosts = sorted({r.host.lower() or CATCH_ALL for r in ing.rules})
            if server.name in hosts and server.creator is not None and server.creator is not ing:
                reason = (f"server {server.name} was created by Ingress {server.creator.key} "
                          f"({_order_reason(server.creator, ing)}), whose default is used")
            else:
                reason = (f"applies only to the hosts of its own rules ({', '.join(hosts)}); ingress-nginx uses a "
                          "defaultBackend for every host only on an Ingress without rules")
        elif server.name != CATCH_ALL:
            reason = (f"a catch-all defaultBackend serves only hosts no rule names; {server.name} has rules, and its "
                      "server's default is used")
        else:
            owner = root.ingress if root is not None else None
            reason = (f"the catch-all default is already set by Ingress {owner.key} ({_order_reason(owner, ing)})"
                      if owner is not None and owner is not ing else "not used")
        out.append(Candidate(ing.key, None, None, None, None, None, text, "not-used", reason))
    return out


def _canary_candidates(model: Model) -> list[Candidate]:
    out = []
    canaries = {c.ingress.key for c in model.canaries.values()}
    for ing in model.ordered:
        if not model.annotations[ing.key].canary.enabled:
            continue
        merged = ing.key in canaries
        why = ("canary Ingress: no location of its own; its backend is the alternative of the same host, path and "
               "pathType's backend" if merged else
               "; ".join(w for i, w in model.canaries_dropped if i is ing) or "canary Ingress without a match")
        for r, rule in enumerate(ing.rules):
            for i, p in enumerate(rule.paths):
                out.append(Candidate(ing.key, r, rule.host, i, effective_path(p.path), p.path_type,
                                     _backend_text(p.backend), "canary", why))
    return out


def _path_notes(server: Server, found: Found) -> list[str]:
    loc = found.location
    if loc is not None and loc.ingress is not None and loc.rule is not None and not server.regex and \
            (loc.declared_type or loc.path_type) == IMPLEMENTATION_SPECIFIC:
        return [f"{loc.ingress_path} is ImplementationSpecific: ingress-nginx stores such a path as Prefix "
                "(SetDefaultNGINXPathType) and matches it by whole path elements"]
    return []


__all__ = [
    "BACKEND_MISSING", "CATCH_ALL", "DEFAULT_UPSTREAM", "NOT_FOUND", "NO_CONTROLLER", "ROUTED", "UNSUPPORTED_BACKEND",
    "BackendTarget", "Candidate", "ControllerRef", "Match", "Request", "RouteError", "RouteResult", "TLSInfo",
    "nginx_order", "resolve_backend", "route", "route_request",
]
