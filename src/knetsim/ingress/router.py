"""``route``: which Ingress, rule, path and backend Service:port serve an HTTP request.

The request reaches one controller (``--class``, else the default IngressClass's, else the
only one running). That controller merges every Ingress it claims the way ingress-nginx
does (``controller.go`` ``createServers`` / ``getBackendServers``):

1. Ingresses are ordered oldest first; at equal ``creationTimestamp`` by namespace/name
   **descending** (``sortIngressSlice``: ``return in > jn``). A manifest without a
   timestamp counts as created now, after every object that has one.
2. One nginx ``server`` per rule host, ``_`` for rules without host (the catch-all). The
   first Ingress naming a host creates its server; the server's root default is that
   Ingress's ``spec.defaultBackend`` (if it has one), else the controller's default backend
   (404). The catch-all's default is the first Ingress that has a ``defaultBackend`` and no
   rules at all.
3. Every path becomes a location of its host's server; a second path with the same string
   and type on the same host is dropped ("Location already configured"): the first wins.
4. A request picks the server by Host (port ignored): exact name, else a one-label
   wildcard, else the catch-all. Only that server's locations are consulted, so rules
   without host never serve a host that has rules of its own.
5. Within the server the longest matching path wins, Exact over Prefix at equal length,
   then the order of step 1 (and declaration order within an Ingress). Nothing matches:
   the server's default.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..cluster.state import ClusterState
from ..model import saferegex
from ..model.http import RouteAnswer, plain
from ..model.labels import edit_distance
from ..model.objects import Ingress, IngressBackend, IngressPath, Service
from .controllers import ClassResolution, IngressController, default_classes, resolve_class, running_controllers
from .matching import (
    EXACT,
    IMPLEMENTATION_SPECIFIC,
    effective_path,
    effective_path_type,
    host_matches,
    host_mismatch_reason,
    match_length,
    normalize_host,
    normalize_request_path,
    path_matches,
    path_mismatch_reason,
    string_prefix_only,
)
from .nginxregex import REWRITE_TARGET, USE_REGEX, enforces_regex, location_matches, needs_rewrite, regex_error, rewrite
from .webhook import invalid_paths, path_message, strict_path_validation

CATCH_ALL = "_"
FAKE_CERTIFICATE = "Kubernetes Ingress Controller Fake Certificate"

# Outcomes. Only ROUTED means a Service backend was chosen (exit code 0).
ROUTED = "routed"
NOT_FOUND = "not-found"
BACKEND_MISSING = "backend-missing"
UNSUPPORTED_BACKEND = "unsupported-backend"
NO_CONTROLLER = "no-controller"


class RouteError(ValueError):
    """The request itself is malformed (path not absolute, unknown scheme)."""


@dataclass(frozen=True, slots=True)
class Request:
    host: str
    path: str
    scheme: str
    port: int
    class_name: str | None
    server_name: str  # the Host header as nginx compares it
    normalized_path: str  # the URI path nginx matches locations against


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
    matched_as: str | None  # Exact | Prefix (ImplementationSpecific is matched as Prefix)


@dataclass(frozen=True, slots=True)
class BackendTarget:
    service: str | None  # namespace/name
    service_type: str | None
    port: int | None  # the Service port
    port_name: str
    requested_port: str  # what the Ingress wrote: a number or a port name
    target_port: str | None
    cluster_ip: str | None
    external_name: str | None
    ready_endpoints: int | None
    resource: str | None
    problem: str | None

    @property
    def routable(self) -> bool:
        return self.service is not None and self.resource is None and self.problem is None

    def describe(self) -> str:
        if self.resource is not None:
            return f"resource {self.resource}"
        if self.port is None:
            return f"{self.service}:{self.requested_port}"
        name = f" ({self.port_name})" if self.port_name else ""
        return f"{self.service}:{self.port}{name}"


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
    #              | duplicate | not-used | class-mismatch | no-controller | rejected
    reason: str


@dataclass(frozen=True, slots=True)
class RouteResult:
    request: Request
    outcome: str
    http_status: int | None  # what the controller itself answers (404, 503, 308), None when it proxies
    via: str | None  # "rule" | "ingress-default-backend" | "controller-default-backend"
    summary: str
    controller: ControllerRef | None
    server: str | None  # the nginx server block: a host, a wildcard, or "_"
    match: Match | None
    backend: BackendTarget | None
    tls: TLSInfo
    redirect: str | None
    candidates: tuple[Candidate, ...] = ()
    notes: tuple[str, ...] = ()
    upstream: str | None = None  # the URI the backend receives (a rewrite-target applied), when routed

    @property
    def routed(self) -> bool:
        return self.outcome == ROUTED

    def to_dict(self) -> dict[str, Any]:
        return plain(self)

    def answer(self) -> RouteAnswer:
        """What the client observes, comparable with a Gateway's answer (``model.http``)."""
        backend = None
        if self.backend is not None and self.backend.routable and self.redirect is None:
            backend = f"{self.backend.service}:{self.backend.port}"
        upstream = self.upstream if backend is not None else None
        return RouteAnswer(self.http_status, backend, self.redirect, upstream, self.summary)


# --- the controller's merged configuration --------------------------------------------


@dataclass(slots=True)
class _Location:
    ingress: Ingress
    rule: int
    index: int
    host: str
    spec: IngressPath

    @property
    def path(self) -> str:
        return effective_path(self.spec.path)


@dataclass(slots=True)
class _Server:
    name: str
    creator: Ingress | None
    default: tuple[Ingress, IngressBackend] | None
    locations: list[_Location] = field(default_factory=list)
    # The first location whose Ingress turns this server's locations into regexes (use-regex, rewrite-target).
    regex_by: _Location | None = None


@dataclass(slots=True)
class _Config:
    ordered: list[Ingress]
    servers: dict[str, _Server]
    duplicates: list[tuple[_Location, _Location]]  # (dropped, kept)


def nginx_order(ingresses: list[Ingress]) -> list[Ingress]:
    """ingress-nginx ``sortIngressSlice``: oldest first, then namespace/name descending."""
    items = sorted(ingresses, key=lambda i: i.key, reverse=True)
    items.sort(key=lambda i: (i.meta.creation_timestamp is None, i.meta.creation_timestamp or ""))
    return items


def _server_key(host: str) -> str:
    return host.lower() or CATCH_ALL


def _merge(ingresses: list[Ingress]) -> _Config:
    ordered = nginx_order(ingresses)
    servers = {CATCH_ALL: _Server(CATCH_ALL, None, None)}
    for ing in ordered:
        own_default = (ing, ing.default_backend) if ing.default_backend is not None else None
        if own_default and not ing.rules and servers[CATCH_ALL].default is None:
            servers[CATCH_ALL].default = own_default
        for rule in ing.rules:
            key = _server_key(rule.host)
            if key not in servers:
                servers[key] = _Server(key, ing, own_default)
    duplicates: list[tuple[_Location, _Location]] = []
    for ing in ordered:
        for r, rule in enumerate(ing.rules):
            server = servers[_server_key(rule.host)]
            for i, spec in enumerate(rule.paths):
                loc = _Location(ing, r, i, rule.host, spec)
                kept = next((k for k in server.locations
                             if k.path == loc.path and k.spec.path_type == spec.path_type), None)
                if kept is not None:
                    duplicates.append((loc, kept))
                else:
                    server.locations.append(loc)
                    if server.regex_by is None and enforces_regex(loc.path, ing.meta.annotations):
                        server.regex_by = loc
    return _Config(ordered, servers, duplicates)


def _pick_server(config: _Config, server_name: str) -> _Server:
    if server_name and server_name in config.servers and not server_name.startswith("*."):
        return config.servers[server_name]
    wild = sorted(n for n in config.servers if n.startswith("*.") and host_matches(n, server_name))
    return config.servers[wild[0]] if wild else config.servers[CATCH_ALL]


def _rank(loc: _Location) -> tuple[int, int]:
    exact = effective_path_type(loc.spec.path_type) == EXACT
    return match_length(loc.spec.path_type, loc.spec.path), 1 if exact else 0


def _order_reason(first: Ingress, second: Ingress) -> str:
    if first is second:
        return f"declared earlier in {first.key}"
    a, b = first.meta.creation_timestamp, second.meta.creation_timestamp
    if a != b:
        return f"Ingress {first.key} is older"
    return (f"same creationTimestamp: ingress-nginx orders by namespace/name descending, so {first.key} "
            f"comes before {second.key}")


# --- backends ---------------------------------------------------------------------------


def closest_name(word: str, options: list[str]) -> str | None:
    scored = sorted((edit_distance(word, o), o) for o in options if o != word)
    if scored and scored[0][0] <= 2 and scored[0][0] < len(word):
        return scored[0][1]
    return None


def _ports_text(svc: Service) -> str:
    return ", ".join(f"{p.name + ' ' if p.name else ''}{p.port}/{p.protocol}" for p in svc.ports) or "none"


def _ready_endpoints(state: ClusterState, svc: Service, port_name: str) -> int:
    ready: set[str] = set()
    for es in state.slices_for(svc):
        if es.ports and not any(p.name == port_name for p in es.ports):
            continue
        for ep in es.endpoints:
            if ep.ready and ep.addresses:
                ready.add(ep.addresses[0])
    return len(ready)


def resolve_backend(state: ClusterState, namespace: str, backend: IngressBackend) -> BackendTarget:
    """The Service and Service port an Ingress backend names; a missing Service or port is reported, not raised."""
    if backend.resource is not None:
        r = backend.resource
        group = f"{r.get('apiGroup')}/" if r.get("apiGroup") else ""
        desc = f"{group}{r.get('kind')}/{r.get('name')}"
        return BackendTarget(None, None, None, "", "", None, None, None, None, desc,
                             f"resource backend {desc}: knetsim routes only to Services (ingress-nginx ignores "
                             "non-Service backends)")
    key = f"{namespace}/{backend.service_name}"
    requested = str(backend.port_number) if backend.port_number is not None else backend.port_name
    svc = state.services.get(key)
    if svc is None:
        names = sorted(s.name for s in state.services.values() if s.namespace == namespace)
        near = closest_name(backend.service_name, names)
        hint = f"; did you mean {near!r}?" if near else ""
        return BackendTarget(key, None, None, "", requested, None, None, None, None, None,
                             f"Service {key} not found{hint}")
    if svc.type == "ExternalName":
        # ingress-nginx proxies to the external name; the port need not be declared on the Service.
        named = svc.port_named(backend.port_name) if backend.port_name else None
        port = backend.port_number if backend.port_number is not None else (named.port if named else None)
        return BackendTarget(key, svc.type, port, backend.port_name, requested, None, None, svc.external_name,
                             None, None, None if port is not None else
                             f"Service {key} (ExternalName) has no port named {backend.port_name!r}")
    if backend.port_number is not None:
        sp = next((p for p in svc.ports if p.port == backend.port_number), None)
        if sp is None:
            hint = ""
            by_target = next((p for p in svc.ports if str(p.target_port) == str(backend.port_number)), None)
            if by_target is not None:
                hint = (f"; {backend.port_number} is the targetPort of Service port {by_target.port}"
                        " — an Ingress names the Service port, not the container port")
            elif len(svc.ports) == 1:
                hint = f"; the Service's only port is {svc.ports[0].port}"
            return BackendTarget(key, svc.type, None, "", requested, None, svc.cluster_ip, None, None, None,
                                 f"Service {key} has no port {backend.port_number} (ports: {_ports_text(svc)}){hint}")
    else:
        sp = svc.port_named(backend.port_name)
        if sp is None:
            near = closest_name(backend.port_name, [p.name for p in svc.ports if p.name])
            hint = f"; did you mean {near!r}?" if near else ""
            return BackendTarget(key, svc.type, None, "", requested, None, svc.cluster_ip, None, None, None,
                                 f"Service {key} has no port named {backend.port_name!r} "
                                 f"(ports: {_ports_text(svc)}){hint}")
    problem = None
    if sp.protocol != "TCP":
        problem = f"Service {key} port {sp.port} is {sp.protocol}; an Ingress proxies HTTP over TCP"
    return BackendTarget(key, svc.type, sp.port, sp.name, requested, str(sp.target_port), svc.cluster_ip, None,
                         _ready_endpoints(state, svc, sp.name), None, problem)


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


def _tls(state: ClusterState, config: _Config, server: _Server, request: Request) -> tuple[TLSInfo, str | None]:
    entry: tuple[Ingress, str] | None = None
    if server.name != CATCH_ALL:
        # ingress-nginx: the first Ingress (in merge order) with a rule for the host whose tls lists the host
        # with a secretName gives the server its certificate.
        for ing in config.ordered:
            if not any(_server_key(r.host) == server.name for r in ing.rules):
                continue
            secret = next((t.secret_name for t in ing.tls
                           if t.secret_name and any(h.lower() == server.name for h in t.hosts)), None)
            if secret:
                entry = (ing, secret)
                break
    if request.scheme == "http":
        if entry is None:
            return TLSInfo(80, False, None, None, None, "plain HTTP on port 80"), None
        ing, secret = entry
        redirect = f"https://{request.server_name}{request.path}"
        return TLSInfo(80, False, None, f"{ing.namespace}/{secret}", ing.key,
                       f"host {server.name} has TLS (Ingress {ing.key}): ingress-nginx answers http with "
                       "308 Permanent Redirect to https (ssl-redirect defaults to true)"), redirect
    if entry is None:
        where = ("no Ingress rule names this host" if server.name == CATCH_ALL
                 else f"no Ingress lists {server.name} under spec.tls with a secretName")
        return TLSInfo(443, True, "fake", None, None,
                       f"{where}: TLS still terminates at the controller on 443, with its self-signed "
                       f"'{FAKE_CERTIFICATE}'; clients that verify certificates fail"), None
    ing, secret = entry
    key = f"{ing.namespace}/{secret}"
    if _secret_exists(state, ing.namespace, secret):
        detail = f"TLS terminates at the controller with Secret {key}; the hop to the Service is plain HTTP"
        return TLSInfo(443, True, "secret", key, ing.key, detail), None
    return TLSInfo(443, True, "secret-not-found", key, ing.key,
                   f"TLS terminates at the controller on 443; Secret {key} is not in the input, and if it is missing "
                   f"in the cluster too ingress-nginx serves its '{FAKE_CERTIFICATE}'"), None


# --- route ----------------------------------------------------------------------------------


def route(state: ClusterState, host: str, path: str = "/", class_name: str | None = None,
          scheme: str = "http") -> RouteResult:
    """Route one HTTP request through the cluster's Ingresses. Raises RouteError on a malformed request."""
    if scheme not in ("http", "https"):
        raise RouteError(f"scheme {scheme!r} is not http or https")
    try:
        normalized = normalize_request_path(path)
    except ValueError as exc:
        raise RouteError(str(exc)) from None
    request = Request(host, path, scheme, 443 if scheme == "https" else 80, class_name, normalize_host(host),
                      normalized)
    notes: list[str] = []
    if normalized != path.split("?", 1)[0].split("#", 1)[0]:
        notes.append(f"nginx matches the normalized path {normalized}")
    controllers = running_controllers(state)
    selection = _select(state, controllers, class_name)
    notes.extend(selection.notes)
    resolutions = {key: resolve_class(state, ing, controllers) for key, ing in state.ingresses.items()}
    ctl = selection.controller
    if ctl is None or not ctl.serving:
        reason = selection.how if ctl is None else (
            f"controller {ctl.controller} has no ready pod ("
            + "; ".join(f"{p.pod}: {p.reason}" for p in ctl.pods) + ")")
        candidates = _outside_view(state, resolutions, None)
        tls = TLSInfo(request.port, False, None, None, None, "no controller answers")
        return RouteResult(request, NO_CONTROLLER, None, None, f"no controller serves this request: {reason}",
                           None, None, None, None, tls, None, tuple(candidates), tuple(notes))
    pod = ctl.pod
    controller_ref = ControllerRef(selection.class_name, ctl.controller, pod.pod if pod else None,
                                   pod.ip if pod else None, tuple(p.pod for p in ctl.pods), selection.how)
    in_view = [state.ingresses[k] for k, r in sorted(resolutions.items())
               if r.claimed and r.controller == ctl.controller]
    candidates = _outside_view(state, resolutions, ctl)
    if strict_path_validation(ctl):
        for ing in [i for i in in_view if invalid_paths(i.raw)]:
            in_view.remove(ing)
            candidates += _all_paths(ing, "rejected", "the controller's admission webhook refuses this Ingress ("
                                     + "; ".join(path_message(p, t) for _r, _i, p, t in invalid_paths(ing.raw))
                                     + "): kubectl apply fails and it does not exist")
    notes.extend(_unserved_matches(state, resolutions, ctl, request))
    config = _merge(in_view)
    server = _pick_server(config, request.server_name)
    regex_by = server.regex_by
    if regex_by is not None:
        # nginx takes the first regex location that matches; ingress-nginx writes them longest first.
        best = next((loc for loc in _regex_order(server) if _regex_hit(loc, normalized)), None)
        notes.append(_regex_note(server, regex_by))
        notes.extend(f"regex {loc.path!r} of {loc.ingress.key} ran past {saferegex.MATCH_TIMEOUT * 1000:.0f} ms on "
                     f"{normalized}: counted as no match (nginx's PCRE stops at its match limit and answers 500)"
                     for loc in _regex_order(server) if _regex_hit(loc, normalized) is None)
    else:
        matching = [loc for loc in server.locations if path_matches(loc.spec.path_type, loc.spec.path, normalized)]
        best = max(matching, key=_rank) if matching else None  # max keeps the first of equals: merge order
    candidates += _path_candidates(config, server, best, request)
    candidates += _default_candidates(state, config, server, best)
    tls, redirect = _tls(state, config, server, request)
    candidates.sort(key=lambda c: (c.ingress, -1 if c.rule is None else c.rule,
                                   -1 if c.path_index is None else c.path_index))
    notes.extend(_path_notes(server, best, normalized))
    target = f"{scheme}://{host}{path}"
    if best is not None:
        match = Match(best.ingress.key, best.rule, best.host, best.index, best.path, best.spec.path_type,
                      effective_path_type(best.spec.path_type))
        backend = resolve_backend(state, best.ingress.namespace, best.spec.backend)
        where = (f"Ingress {best.ingress.key} rule {best.rule} (host {best.host or '*'}) path {best.path} "
                 f"({best.spec.path_type})")
        via = "rule"
    elif server.default is not None:
        ing, default = server.default
        match = Match(ing.key, None, None, None, None, None, None)
        backend = resolve_backend(state, ing.namespace, default)
        where = f"no path matched; spec.defaultBackend of Ingress {ing.key}"
        via = "ingress-default-backend"
    else:
        summary = (f"{target}: no rule path matched on server {server.name} and no defaultBackend applies: "
                   "the controller's default backend answers 404")
        return RouteResult(request, NOT_FOUND, 404, "controller-default-backend", summary, controller_ref,
                           server.name, None, None, tls, redirect, tuple(candidates), tuple(notes))
    upstream = _upstream(request, best)
    if upstream != request.path and best is not None:
        notes.append(f"rewrite-target {best.ingress.meta.annotations.get(REWRITE_TARGET)!r} of Ingress "
                     f"{best.ingress.key}: the backend receives {upstream}")
    result = _finish(request, controller_ref, server, match, backend, where, via, tls, redirect, candidates, notes)
    return replace(result, upstream=upstream if result.routed else None)


def _regex_hit(loc: _Location, path: str) -> bool | None:
    """Does the location's regex match? None when the match ran past the time bound."""
    try:
        return location_matches(loc.path, path)
    except saferegex.RegexTimeout:
        return None


def _regex_order(server: _Server) -> list[_Location]:
    return sorted(server.locations, key=lambda loc: -len(loc.path))  # stable: merge order among equals


def _regex_note(server: _Server, by: _Location) -> str:
    why = "use-regex" if by.ingress.meta.annotations.get(USE_REGEX) == "true" else "rewrite-target"
    text = (f"server {server.name}: Ingress {by.ingress.key} sets {why}, so ingress-nginx writes every location of "
            "this host as a case-insensitive regex anchored at the start (`location ~* \"^<path>\"`), tried "
            "longest path first, Exact and Prefix paths included")
    broken = [f"{loc.ingress.key} {regex_error(loc.path)}" for loc in server.locations if regex_error(loc.path)]
    if broken:
        text += "; " + "; ".join(broken) + " (nginx would refuse the configuration)"
    return text


def _upstream(request: Request, best: _Location | None) -> str:
    """The request line's URI as the backend receives it: unchanged, or rewritten by the location's rewrite-target."""
    query = request.path.partition("?")[2]
    if best is None or not needs_rewrite(best.path, best.ingress.meta.annotations):
        return request.path
    return rewrite(best.path, best.ingress.meta.annotations[REWRITE_TARGET], request.normalized_path,
                   query.split("#", 1)[0])


def _finish(request: Request, controller: ControllerRef, server: _Server, match: Match, backend: BackendTarget,
            where: str, via: str, tls: TLSInfo, redirect: str | None, candidates: list[Candidate],
            notes: list[str]) -> RouteResult:
    target = f"{request.scheme}://{request.host}{request.path}"
    if backend.resource is not None:
        outcome, status = UNSUPPORTED_BACKEND, None
        summary = f"{target} → {where} → {backend.problem}"
    elif backend.problem is not None:
        outcome, status = BACKEND_MISSING, 503
        summary = f"{target} → {where} → {backend.problem} (ingress-nginx answers 503)"
    else:
        outcome, status = ROUTED, None
        summary = f"{target} → {where} → Service {backend.describe()}"
        if backend.ready_endpoints == 0:
            status = 503
            notes.append(f"Service {backend.service} has no ready endpoints for port {backend.port}: ingress-nginx "
                         f"answers 503 (see `knetsim endpoints {backend.service}`)")
        if backend.external_name:
            notes.append(f"Service {backend.service} is ExternalName: the controller proxies to "
                         f"{backend.external_name}")
    if redirect is not None:
        status = 308
        notes.append(f"{tls.detail}; the https request is routed as shown")
    return RouteResult(request, outcome, status, via, summary, controller, server.name, match, backend, tls,
                       redirect, tuple(candidates), tuple(notes))


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


def _path_candidates(config: _Config, server: _Server, best: _Location | None,
                     request: Request) -> list[Candidate]:
    out: list[Candidate] = []
    name, path = request.server_name, request.normalized_path

    def cand(loc: _Location, verdict: str, reason: str) -> Candidate:
        return Candidate(loc.ingress.key, loc.rule, loc.host, loc.index, loc.path, loc.spec.path_type,
                         _backend_text(loc.spec.backend), verdict, reason)

    for other in config.servers.values():
        for loc in other.locations:
            if other is not server:
                if other.name == CATCH_ALL:
                    out.append(cand(loc, "host-shadowed",
                                    f"rules without host are not consulted for {name}: host {server.name} has rules "
                                    "of its own, and ingress-nginx serves it from that server block"))
                elif host_matches(other.name, name):
                    out.append(cand(loc, "host-shadowed",
                                    f"exact host {server.name} takes precedence over wildcard {other.name}"))
                else:
                    out.append(cand(loc, "host-mismatch", host_mismatch_reason(other.name, name)))
                continue
            if server.regex_by is not None:
                out.append(_regex_candidate(cand, loc, best, path))
            elif loc is best:
                how = "" if effective_path_type(loc.spec.path_type) == loc.spec.path_type else ", matched as Prefix"
                out.append(cand(loc, "chosen", f"longest matching path{how}"))
            elif not path_matches(loc.spec.path_type, loc.spec.path, path):
                out.append(cand(loc, "path-mismatch", path_mismatch_reason(loc.spec.path_type, loc.spec.path, path)))
            elif best is not None and _rank(loc)[0] < _rank(best)[0]:
                out.append(cand(loc, "shorter", f"{loc.path} also matches, but {best.path} is longer"))
            elif best is not None and _rank(loc) < _rank(best):
                out.append(cand(loc, "exact-preferred",
                                f"{best.path} (Exact) is preferred over {loc.spec.path_type} at equal length"))
            elif best is not None:
                out.append(cand(loc, "order", f"{best.path} ({best.spec.path_type}) matches equally; "
                                              f"{_order_reason(best.ingress, loc.ingress)}"))
    for dropped, kept in config.duplicates:
        out.append(cand(dropped, "duplicate",
                        f"{dropped.path} ({dropped.spec.path_type}) on host {dropped.host or '*'} is already "
                        f"configured by {kept.ingress.key}; ingress-nginx keeps the first "
                        f"({_order_reason(kept.ingress, dropped.ingress)})"))
    return out


def _regex_candidate(cand: Any, loc: _Location, best: _Location | None, path: str) -> Candidate:
    if loc is best:
        return cand(loc, "chosen", f'first regex location that matches (~* "^{loc.path}"; longest paths are tried '
                                   "first)")
    problem = regex_error(loc.path)
    if problem is not None:
        return cand(loc, "path-mismatch", problem)
    hit = _regex_hit(loc, path)
    if hit is None:
        return cand(loc, "path-mismatch", f'regex ~* "^{loc.path}" ran past the time bound on {path}')
    if not hit:
        return cand(loc, "path-mismatch", f'regex ~* "^{loc.path}" does not match {path}')
    assert best is not None  # something matched, and the first match is chosen
    if len(loc.path) < len(best.path):
        return cand(loc, "shorter", f"{loc.path} also matches as a regex, but {best.path} is longer and is tried first")
    return cand(loc, "order", f"{best.path} matches first among regexes of equal length; "
                              f"{_order_reason(best.ingress, loc.ingress)}")


def _default_candidates(state: ClusterState, config: _Config, server: _Server,
                        best: _Location | None) -> list[Candidate]:
    out = []
    chosen = server.default[0] if server.default is not None and best is None else None
    for ing in config.ordered:
        if ing.default_backend is None:
            continue
        text = _backend_text(ing.default_backend)
        if ing is chosen:
            out.append(Candidate(ing.key, None, None, None, None, None, text, "chosen",
                                 f"no path matched on server {server.name}; this Ingress's defaultBackend is that "
                                 "server's default"))
            continue
        if best is not None:
            reason = "a rule path matched; a defaultBackend answers only when none does"
        elif ing.rules:
            hosts = sorted({_server_key(r.host) for r in ing.rules})
            if server.name in hosts and server.creator is not None:
                reason = (f"server {server.name} was created by Ingress {server.creator.key} "
                          f"({_order_reason(server.creator, ing)}), whose default is used")
            else:
                reason = (f"applies only to the hosts of its own rules ({', '.join(hosts)}); ingress-nginx uses a "
                          "defaultBackend for every host only on an Ingress without rules")
        elif server.name != CATCH_ALL:
            reason = (f"a catch-all defaultBackend serves only hosts no rule names; {server.name} has rules, and its "
                      "server's default is used")
        else:
            owner = server.default[0] if server.default else None
            reason = (f"the catch-all default is already set by Ingress {owner.key} ({_order_reason(owner, ing)})"
                      if owner is not None else "not used")
        out.append(Candidate(ing.key, None, None, None, None, None, text, "not-used", reason))
    return out


def _path_notes(server: _Server, best: _Location | None, path: str) -> list[str]:
    notes = []
    if best is not None:
        rule_path = best.path
        if (effective_path_type(best.spec.path_type) != EXACT and rule_path != "/" and rule_path.endswith("/")
                and path == rule_path.rstrip("/")):
            notes.append(f"ingress-nginx renders Prefix {rule_path} as `location {rule_path}`: nginx first answers "
                         f"{path} with a 301 redirect to {rule_path}, which then matches")
        if best.spec.path_type == IMPLEMENTATION_SPECIFIC and server.regex_by is None:
            notes.append(f"{rule_path} is ImplementationSpecific: knetsim matches it as Prefix (ingress-nginx renders "
                         "it as a plain nginx prefix location, or a regex with use-regex)")
    for loc in server.locations if server.regex_by is None else ():
        if loc is not best and string_prefix_only(loc.spec.path_type, loc.spec.path, path):
            notes.append(f"ImplementationSpecific {loc.path} of {loc.ingress.key} does not match as Prefix, but "
                         "ingress-nginx's plain nginx prefix location would match it as a string prefix")
    return notes
