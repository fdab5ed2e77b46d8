"""The requests that exercise what the Ingresses ask ingress-nginx to do: every host and path boundary, and
for every annotation the cases it decides on.

One request set, used by ``migrate check`` (both sides get it) and ``verify nginx`` (knetsim and a
real nginx get it), so a lost canary, a dropped source range or a forgotten CORS preflight shows as
a difference:

* hosts: each rule host (a wildcard as one label, two labels and its bare domain), its
  ``from-to-www-redirect`` counterpart and ``server-alias`` names (their wildcards likewise), plus a
  host no rule names;
* paths, per host, for each path ``P`` of its own server and of the catch-all (a host no rule names
  gets them all): ``P``, with and without a trailing slash, a child ``P/x``, the element edge ``Px``,
  ``P`` in upper case, its parent, ``/`` and a path nothing names; for a regex path its literal start
  (``/foo`` of ``/foo(/|$)(.*)``) and children of it;
* schemes: http everywhere, https for TLS hosts;
* per annotation, on the Ingress's first path: a client inside and outside each source range (and
  through ``X-Forwarded-For`` where the ConfigMap trusts it), requests without and with wrong (and,
  for ``{PLAIN}`` users, right) basic credentials, CORS requests and preflights from an allowed and
  an unknown origin, the canary header and cookie values, bodies at and over ``proxy-body-size``.
"""

from __future__ import annotations

import base64
import ipaddress

from ..cluster.state import ClusterState
from ..model.http import HTTPRequest
from .annotations import IngressAnnotations
from .servers import CATCH_ALL, Model

UNNAMED_HOST = "unnamed.example.invalid"
OUTSIDE_CLIENT = "203.0.113.10"
_REGEX_CHARS = "()[]|$^*+?\\{}"
MAX_BODY_PROBE = 16 * 1024 * 1024  # a body over this is not sent (the limit is reported, not exercised)


def is_regex(path: str) -> bool:
    return any(c in path for c in _REGEX_CHARS)


def literal_prefix(path: str) -> str:
    """The part of a regex path before its first metacharacter."""
    for i, ch in enumerate(path):
        if ch in _REGEX_CHARS or ch == ".":
            return path[:i]
    return path


def path_probes(paths: set[str]) -> list[str]:
    out: set[str] = {"/", "/zz-unmatched"}
    for p in paths:
        if not p.startswith("/"):
            continue
        if any(c in p for c in _REGEX_CHARS):
            base = literal_prefix(p).rstrip("/") or "/"
            out.update({base, (base + "/x").replace("//", "/"), base.upper(), (base + "x").replace("//", "/")})
            continue
        bare = p.rstrip("/") or "/"
        out.update({p, bare, bare + "/" if bare != "/" else "/", (bare + "/x").replace("//", "/"), p.upper()})
        if bare != "/":
            out.add(bare + "x")
            out.add(bare.rsplit("/", 1)[0] or "/")
    return sorted(out)


def host_probes(names: set[str]) -> list[str]:
    out: set[str] = {UNNAMED_HOST}
    for h in names:
        if h.startswith(("*.", ".")):  # a wildcard host (one label), a wildcard alias (any), .name (and itself)
            base = h.removeprefix("*")[1:]
            out.update({f"x.{base}", f"x.y.{base}", base})
        elif h.endswith(".*"):  # an alias wildcard at the end
            out.update({f"{h[:-1]}com", f"{h[:-1]}co.uk"})
        elif h and not h.startswith("~"):  # a regex alias names no host to try
            out.add(h)
    return sorted(out)


def _inside(cidr: str) -> str | None:
    try:
        net = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return None
    if net.num_addresses == 1:
        return str(net.network_address)
    return str(next(net.hosts(), net.network_address))


def annotation_probes(host: str, path: str, anns: IngressAnnotations, *, scheme: str = "http",
                      forwarded_headers: bool = False) -> list[HTTPRequest]:
    """The requests an Ingress's annotations decide on, against one of its paths."""
    out: list[HTTPRequest] = []

    def add(method: str = "GET", headers: tuple[tuple[str, str], ...] = (), client: str | None = None,
            body: int | None = None, at: str = path) -> None:
        out.append(HTTPRequest(host, at, method, scheme, None, headers, client, body))

    for cidr in (*anns.access.allow, *anns.access.deny):
        inside = _inside(cidr)
        if inside is not None:
            add(client=inside)
            if forwarded_headers:
                add(headers=(("X-Forwarded-For", inside),), client="198.51.100.7")
    if anns.access.allow or anns.access.deny:
        add(client=OUTSIDE_CLIENT)
    if anns.basic_auth is not None:
        add(headers=(("Authorization", "Basic " + base64.b64encode(b"nobody:wrong").decode()),))
        for user, stored in anns.basic_auth.users[:2]:
            if stored.startswith("{PLAIN}"):
                token = base64.b64encode(f"{user}:{stored[7:]}".encode()).decode()
                add(headers=(("Authorization", f"Basic {token}"),))
    if anns.cors.enabled:
        origins = [o for o in anns.cors.allow_origin if o not in ("*", "null")] or ["https://client.example"]
        allowed = origins[0].replace("*.", "x.")
        for origin in (allowed, "https://unlisted.example"):
            add(headers=(("Origin", origin),))
            add("OPTIONS", (("Origin", origin), ("Access-Control-Request-Method", "POST")))
    canary = anns.canary
    if canary.enabled:
        if canary.header:
            values = [canary.header_value] if canary.header_value else ["always", "never", "other"]
            for value in values:
                add(headers=((canary.header, value),))
        if canary.cookie:
            for value in ("always", "never"):
                add(headers=(("Cookie", f"{canary.cookie}={value}"),))
    limit = anns.limits.max_body_bytes
    if limit is not None and limit < MAX_BODY_PROBE:
        add("POST", body=limit)
        add("POST", body=limit + 1)
    return out


def requests(state: ClusterState, model: Model) -> list[HTTPRequest]:
    """The request set for the Ingresses of one controller (``model``)."""
    names: set[str] = set()
    paths: set[str] = set()
    tls: set[str] = set()
    for server in model.servers.values():
        if server.name != CATCH_ALL:
            names.add(server.name)
            names.update(server.aliases)
            if server.certificate is not None:
                tls.add(server.name)
        for loc in server.locations:
            if loc.ingress is not None and loc.rule is not None:
                paths.add(loc.ingress_path)
    names.update(model.redirect_servers)
    for ing in model.ordered:
        for rule in ing.rules:
            paths.update(p.path or "/" for p in rule.paths)
    out: list[HTTPRequest] = []
    seen: set[tuple[object, ...]] = set()

    def keep(request: HTTPRequest) -> None:
        key = (request.host, request.path, request.method, request.scheme, request.headers, request.client_ip,
               request.body_size)
        if key not in seen:
            seen.add(key)
            out.append(request)

    # Per host: its server's paths and the catch-all's (a host never falls back to other hosts' paths); a host no
    # rule names gets every path.
    own: dict[str, set[str]] = {}
    for server in model.servers.values():
        own[server.name] = {loc.ingress_path for loc in server.locations if loc.rule is not None}
    catch_all = own.get(CATCH_ALL, set())
    for host in host_probes(names):
        server = model.server_for(host.lower())
        wanted = paths if server.name == CATCH_ALL else own.get(server.name, set()) | catch_all
        path_set = path_probes(wanted)
        for scheme in ("http", "https") if host in tls else ("http",):
            for p in path_set:
                keep(HTTPRequest(host, p, "GET", scheme))
    forwarded = model.config.use_forwarded_headers
    for server in sorted(model.servers.values(), key=lambda s: s.name):
        host = server.name if server.name != CATCH_ALL else UNNAMED_HOST
        if host.startswith("*."):
            host = "x." + host[2:]
        done: set[str] = set()
        for loc in server.locations:
            if loc.ingress is None or loc.ingress.key in done:
                continue
            done.add(loc.ingress.key)
            at = loc.ingress_path if not any(c in loc.ingress_path for c in _REGEX_CHARS) else \
                (literal_prefix(loc.ingress_path) or "/")
            scheme = "https" if server.certificate is not None else "http"
            for request in annotation_probes(host, at, loc.annotations, scheme=scheme, forwarded_headers=forwarded):
                keep(request)
    for canary in model.canaries.values():
        anns = canary.annotations
        for rule in canary.ingress.rules:
            host = rule.host or UNNAMED_HOST
            if host.startswith("*."):
                host = "x." + host[2:]
            for spec in rule.paths[:1]:
                for request in annotation_probes(host, spec.path or "/", anns):
                    keep(request)
    return out


