"""The nginx configuration ingress-nginx builds from the Ingresses it serves: servers and locations.

This is the controller's own model (``controller.go`` ``createServers``, ``getBackendServers``,
``mergeAlternativeBackends``; ``location.go`` ``updateServerLocations``), the input of its
template — so ``route`` (``locations.py`` picks one as nginx would) and ``verify nginx`` (which
renders it) read the same configuration:

1. Ingresses in the controller's order (oldest first; equal timestamps: namespace/name
   descending). An Ingress the controller refuses (an annotation problem, a path its webhook
   refuses) is not there.
2. Servers: the catch-all ``_`` (root location: the controller's default backend, or the
   ``defaultBackend`` of the first Ingress without rules), then one per rule host, created by the
   first (non-canary) Ingress naming it with a root location ``/`` to that Ingress's
   ``defaultBackend`` (else the default backend) *carrying that Ingress's annotations*; its
   aliases, server snippet and certificate come from the first Ingress that has them.
3. Locations: each path of each non-canary Ingress, in order; a path with the same string and
   type as an earlier one is dropped (the first keeps it), except that the root location is
   replaced by a path ``/`` Prefix. Canary Ingresses add no location: each of their paths is
   matched to a location of the same host, path and type and becomes the alternative backend of
   that location's backend — wherever that backend serves.
4. Order: sorted by path, descending, then by length, longest first (stable). Then every Prefix
   path ``/p`` whose Ingress does not itself use regex or a rewrite is written twice, ``location
   /p/`` and ``location = /p`` (no twin when an Exact ``/p`` exists), right where it stood.
5. Regex mode (``enforceRegexModifier``): when one location's Ingress sets ``use-regex`` or a
   ``rewrite-target`` different from its path, every location of the server is ``~* "^<path>"``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..cluster.state import ClusterState
from ..model import saferegex
from ..model.objects import Ingress, IngressBackend
from .annotations import IngressAnnotations
from .annotations import parse as parse_annotations
from .annotations.affinity import AffinityConfig
from .annotations.canary import CanaryConfig
from .config import ControllerConfig
from .matching import EXACT, IMPLEMENTATION_SPECIFIC, PREFIX

CATCH_ALL = "_"
DEFAULT_UPSTREAM = "upstream-default-backend"


@dataclass(slots=True)
class Location:
    path: str  # the nginx location path (a split Prefix ends in "/")
    path_type: str  # Exact | Prefix (ImplementationSpecific is Prefix to ingress-nginx); a Prefix's twin is Exact
    ingress: Ingress | None  # None: the controller's own default location
    rule: int | None  # None: a server's root default location
    index: int | None
    host: str
    backend: IngressBackend | None  # None: the controller's default backend
    annotations: IngressAnnotations
    ingress_path: str  # the path as the Ingress wrote it ($location_path)
    is_default: bool = False
    twin: bool = False  # the "= /p" added for a Prefix /p
    declared_type: str = ""  # the pathType the Ingress wrote (a twin's is Prefix)
    order: int = -1  # the Ingress's place in the controller's order

    @property
    def upstream(self) -> str:
        if self.backend is None or self.ingress is None or not self.backend.service_name:
            return DEFAULT_UPSTREAM
        port = self.backend.port_number if self.backend.port_number is not None else self.backend.port_name
        return f"{self.ingress.namespace}-{self.backend.service_name}-{port}"

    def needs_rewrite(self) -> bool:
        return self.annotations.rewrite.needs_rewrite(self.path)

    def enforces_regex(self) -> bool:
        return self.annotations.rewrite.use_regex or self.needs_rewrite()

    def modifier(self, regex: bool) -> str:
        if regex:
            return "~*"
        return "=" if self.path_type == EXACT else ""

    def nginx(self, regex: bool) -> str:
        """The location as the template writes it."""
        if regex:
            return f'~* "^{self.path}"'
        return f"= {self.path}" if self.path_type == EXACT else self.path

    @property
    def key(self) -> tuple[str, int | None, int | None]:
        """The Ingress path this location came from (a twin shares its Prefix's)."""
        return (self.ingress.key if self.ingress else "", self.rule, self.index)


@dataclass(slots=True)
class Server:
    name: str
    creator: Ingress | None
    locations: list[Location]
    aliases: tuple[str, ...] = ()
    certificate: tuple[Ingress, str] | None = None  # (Ingress, secret name) of the first spec.tls naming the host
    from_to_www: bool = False
    snippet: tuple[Ingress, str] | None = None
    ssl_passthrough: bool = False

    @property
    def regex(self) -> bool:
        return any(loc.enforces_regex() for loc in self.locations)

    @property
    def regex_by(self) -> Location | None:
        """The first location (in the controller's order of Ingresses) that turns the server to regex mode."""
        found = [loc for loc in self.locations if loc.enforces_regex() and loc.ingress is not None]
        return min(found, key=lambda loc: loc.order) if found else None


@dataclass(frozen=True, slots=True)
class Canary:
    ingress: Ingress
    backend: IngressBackend
    upstream: str
    config: CanaryConfig
    annotations: IngressAnnotations


@dataclass(frozen=True, slots=True)
class Affinity:
    config: AffinityConfig
    ingress: Ingress  # the Ingress whose cookie attributes are in force (the last with a cookie)
    cookie_paths: dict[str, tuple[str, ...]]  # host → Ingress paths that set the cookie


@dataclass(slots=True)
class Model:
    config: ControllerConfig
    ordered: list[Ingress]
    servers: dict[str, Server]
    annotations: dict[str, IngressAnnotations]
    duplicates: list[tuple[Location, Location]] = field(default_factory=list)  # (dropped, kept)
    refused: dict[str, tuple[str, ...]] = field(default_factory=dict)  # Ingress → why the controller refuses it
    canaries: dict[str, Canary] = field(default_factory=dict)  # primary upstream → its (first) alternative
    canaries_dropped: list[tuple[Ingress, str]] = field(default_factory=list)  # (canary Ingress, why)
    affinity: dict[str, Affinity] = field(default_factory=dict)  # upstream → affinity
    redirect_servers: dict[str, str] = field(default_factory=dict)  # from-to-www: from → to

    def server_for(self, server_name: str) -> Server:
        """nginx's choice of server (``ngx_http_find_virtual_server``) among the names the template writes —
        ``server_name <host> <aliases>``, a wildcard host as ``~^(?<subdomain>[\\w-]+)\\.<domain>$``
        (``buildServerName``: one label): the exact name, then the longest ``*.`` (or ``.``) alias, then the
        longest ``.*`` alias, then the first regex in the order written (servers by name, a server's own name
        before its aliases), else the catch-all default server."""
        if server_name in self.servers and not server_name.startswith("*."):
            return self.servers[server_name]
        ordered = sorted(self.servers.values(), key=lambda s: s.name)
        for server in ordered:
            if server_name in server.aliases:
                return server
        leading: list[tuple[int, Server]] = []
        trailing: list[tuple[int, Server]] = []
        for server in ordered:
            for alias in server.aliases:
                if (alias.startswith(".") and server_name == alias[1:]) or \
                        (alias.startswith(("*.", ".")) and server_name.endswith(alias.removeprefix("*"))):
                    leading.append((len(alias), server))
                elif alias.endswith(".*") and server_name.startswith(alias[:-1]):
                    trailing.append((len(alias), server))
        for found in (leading, trailing):
            if found:
                return max(found, key=lambda f: f[0])[1]  # the longest; the first written among equals
        for server in ordered:
            for name in (server.name, *server.aliases):
                if name.startswith("*.") and name == server.name and _one_label(name, server_name):
                    return server
                if name.startswith("~") and _server_regex(name[1:], server_name):
                    return server
        return self.servers[CATCH_ALL]


def _one_label(wildcard: str, server_name: str) -> bool:
    suffix = wildcard[1:]
    return server_name.endswith(suffix) and re.fullmatch(r"[\w-]+", server_name[: -len(suffix)]) is not None


def _server_regex(pattern: str, server_name: str) -> bool:
    compiled = saferegex.compiled(pattern)
    try:
        return compiled is not None and saferegex.search(compiled, server_name) is not None
    except saferegex.RegexTimeout:
        return False


def nginx_path_type(path_type: str) -> str:
    """ingress-nginx's ``SetDefaultNGINXPathType`` (internal/k8s/main.go), run on every Ingress it stores: a path
    without type, or ImplementationSpecific, is Prefix from there on (split in two, merged as one with Prefix)."""
    return PREFIX if path_type in ("", IMPLEMENTATION_SPECIFIC) else path_type


def nginx_order(ingresses: list[Ingress]) -> list[Ingress]:
    """ingress-nginx ``sortIngressSlice``: oldest first, then namespace/name descending."""
    items = sorted(ingresses, key=lambda i: i.key, reverse=True)
    items.sort(key=lambda i: (i.meta.creation_timestamp is None, i.meta.creation_timestamp or ""))
    return items


def _key(host: str) -> str:
    return host.lower() or CATCH_ALL


def _service_backend(backend: IngressBackend | None) -> bool:
    return backend is not None and backend.resource is None and bool(backend.service_name)


def _upstream(ing: Ingress, backend: IngressBackend) -> str:
    port = backend.port_number if backend.port_number is not None else backend.port_name
    return f"{ing.namespace}-{backend.service_name}-{port}"


def build(state: ClusterState, ingresses: list[Ingress], config: ControllerConfig) -> Model:
    """The configuration one controller writes for the Ingresses it claims."""
    parsed = {ing.key: parse_annotations(ing, config, state) for ing in ingresses}
    refused = {key: a.rejected for key, a in parsed.items() if a.rejected}
    ordered = nginx_order([i for i in ingresses if i.key not in refused])
    empty = IngressAnnotations("")
    catch_all = Location("/", PREFIX, None, None, None, "", None, empty, "/", is_default=True, declared_type=PREFIX)
    servers: dict[str, Server] = {CATCH_ALL: Server(CATCH_ALL, None, [catch_all])}
    model = Model(config, ordered, servers, parsed, refused=refused)
    order = {ing.key: i for i, ing in enumerate(ordered)}
    primaries = [i for i in ordered if not parsed[i.key].canary.enabled]
    for ing in primaries:
        anns = parsed[ing.key]
        default = ing.default_backend if _service_backend(ing.default_backend) else None
        if default is not None and not ing.rules and catch_all.is_default:
            # "Ingress defines a backend but no rule": the catch-all server's root goes to it (its redirect and
            # rewrite annotations left out).
            catch_all.is_default, catch_all.ingress, catch_all.backend = False, ing, default
            catch_all.annotations = _without_redirects(anns)
        for rule in ing.rules:
            key = _key(rule.host)
            if key in servers:
                continue
            root = Location("/", PREFIX, ing, None, None, rule.host, default, anns, "/", is_default=True,
                            declared_type=PREFIX)
            servers[key] = Server(key, ing, [root], ssl_passthrough=anns.backend.ssl_passthrough)
    for ing in primaries:
        anns = parsed[ing.key]
        for rule in ing.rules:
            server = servers[_key(rule.host)]
            if not server.aliases and anns.aliases:
                server.aliases = anns.aliases
            if anns.snippets.server and server.snippet is None:
                server.snippet = (ing, anns.snippets.server)
            if server.certificate is None and server.name != CATCH_ALL:
                secret = next((t.secret_name for t in ing.tls if any(h.lower() == server.name for h in t.hosts)),
                              None)
                if secret is not None:
                    server.certificate = (ing, secret)
    for server in servers.values():
        # getBackendServers: an alias that is the server's own name or another server's is dropped, the rest sorted
        # (nginx compares names without case; a regex keeps its own).
        names = {a if a.startswith("~") else a.lower() for a in server.aliases}
        server.aliases = tuple(sorted(a for a in names if a != server.name and a not in servers))
    for ing in ordered:
        anns = parsed[ing.key]
        if anns.canary.enabled:
            continue
        for r, rule in enumerate(ing.rules):
            server = servers.get(_key(rule.host)) or servers[CATCH_ALL]
            for i, spec in enumerate(rule.paths):
                if not _service_backend(spec.backend):
                    continue
                path = spec.path or "/"
                kind = nginx_path_type(spec.path_type)
                new = Location(path, kind, ing, r, i, rule.host, spec.backend, anns, path,
                               declared_type=spec.path_type)
                same_type = next((loc for loc in server.locations if loc.path == path and loc.path_type == kind),
                                 None)
                if same_type is not None and same_type.is_default:
                    same_type.ingress, same_type.rule, same_type.index = ing, r, i
                    same_type.host, same_type.backend, same_type.annotations = rule.host, spec.backend, anns
                    same_type.is_default = False
                    new = same_type
                elif same_type is not None:
                    model.duplicates.append((new, same_type))
                    continue
                else:
                    server.locations.append(new)
                if anns.redirect.from_to_www:
                    server.from_to_www = True
                _affinity(model, ing, anns, spec.backend, rule.host, path)
    for loc in (loc for s in servers.values() for loc in s.locations):
        loc.order = order.get(loc.ingress.key, -1) if loc.ingress else -1
    _merge_canaries(model, [i for i in ordered if parsed[i.key].canary.enabled])
    for server in servers.values():
        server.locations.sort(key=lambda loc: loc.path, reverse=True)
        server.locations.sort(key=lambda loc: len(loc.path), reverse=True)
        server.locations = _split_prefixes(server.locations)
    _from_to_www(model)
    return model


def _without_redirects(anns: IngressAnnotations) -> IngressAnnotations:
    from dataclasses import replace

    from .annotations.redirect import RedirectConfig
    from .annotations.rewrite import RewriteConfig

    return replace(anns, redirect=RedirectConfig(), rewrite=RewriteConfig())


def _affinity(model: Model, ing: Ingress, anns: IngressAnnotations, backend: IngressBackend, host: str,
              path: str) -> None:
    upstream = _upstream(ing, backend)
    current = model.affinity.get(upstream)
    if anns.affinity.type != "cookie":
        return
    paths = dict(current.cookie_paths) if current else {}
    paths[host or CATCH_ALL] = (*paths.get(host or CATCH_ALL, ()), path)
    # The affinity type comes from the first Ingress that has one; cookie attributes from the last with a cookie.
    model.affinity[upstream] = Affinity(anns.affinity, ing, paths)


def _merge_canaries(model: Model, canaries: list[Ingress]) -> None:
    if len(canaries) == len(model.ordered):
        for ing in canaries:
            model.canaries_dropped.append((ing, "no non-canary Ingress exists to merge into"))
        return
    for ing in canaries:
        anns = model.annotations[ing.key]
        targets: list[tuple[IngressBackend, list[Location]]] = []
        if _service_backend(ing.default_backend):
            assert ing.default_backend is not None
            targets.append((ing.default_backend, list(model.servers[CATCH_ALL].locations)))
        for rule in ing.rules:
            server = model.servers.get(_key(rule.host))
            for spec in rule.paths:
                if not _service_backend(spec.backend):
                    continue
                if server is None:
                    model.canaries_dropped.append((ing, f"host {rule.host or '*'} has no server (no other Ingress "
                                                        "names it): the canary path is dropped"))
                    continue
                path = spec.path or "/"
                targets.append((spec.backend, [loc for loc in server.locations
                                               if loc.path == path and loc.path_type == nginx_path_type(
                                                   spec.path_type)]))
        for backend, locations in targets:
            alt = _upstream(ing, backend)
            merged = False
            for loc in locations:
                primary = loc.upstream
                if primary == alt:
                    break
                if primary == DEFAULT_UPSTREAM:
                    continue
                model.canaries.setdefault(primary, Canary(ing, backend, alt, anns.canary, anns))
                merged = True
            if not merged:
                model.canaries_dropped.append((ing, f"no location of the same host, path and pathType uses another "
                                                    f"backend: canary backend {backend.describe()} is dropped"))


def _normalize_prefix(path: str) -> str:
    return path if path.endswith("/") else path + "/"


def _split_prefixes(locations: list[Location]) -> list[Location]:
    exact = {loc.path for loc in locations if loc.path_type == EXACT}
    out: list[Location] = []
    for loc in locations:
        if loc.path == "/" or loc.path_type != PREFIX or loc.enforces_regex():
            out.append(loc)
            continue
        if loc.path in exact:
            loc.path = _normalize_prefix(loc.path)
            out.append(loc)
            continue
        twin = Location(loc.path, EXACT, loc.ingress, loc.rule, loc.index, loc.host, loc.backend, loc.annotations,
                        loc.ingress_path, loc.is_default, True, PREFIX, loc.order)
        loc.path = _normalize_prefix(loc.path)
        out.extend((loc, twin))
    return out


def _from_to_www(model: Model) -> None:
    from .annotations.redirect import www_counterpart

    names: set[str] = set()
    for name in sorted(model.servers):
        server = model.servers[name]
        if not server.from_to_www or name in names:
            continue
        other = www_counterpart(name)
        if other in model.servers:
            continue
        model.redirect_servers[other] = name
        names.add(name)


__all__ = ["CATCH_ALL", "DEFAULT_UPSTREAM", "IMPLEMENTATION_SPECIFIC", "Location", "Model", "Server", "build",
           "nginx_order"]
