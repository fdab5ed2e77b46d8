"""``knetsim migrate check``: one generated request set through the Ingress side and the Gateway side.

Both sides live in one cluster (the old manifests and the new ones applied together, as during a
real migration): the Ingress side is ingress-nginx (``knetsim.ingress``), the Gateway side the
Gateway that serves each request's host (``network.gateway.gateway_for_host``: the Gateway naming
the host, else one accepting every host) or the one given. Every request whose status, backend or
redirect differs is listed with both explanations.

The request set covers every host and every path boundary either side defines:

* hosts: each Ingress rule host and HTTPRoute/listener hostname (a wildcard as one label, two
  labels and its bare domain), plus a host neither names;
* paths, per path ``P`` of a rule: ``P``, ``P`` with and without a trailing slash, a child
  ``P/x``, the element edge ``Px`` (``/apix`` is not under ``/api``), ``P`` in upper case, its
  parent, ``/`` and a path nothing names — so Exact vs Prefix, element-wise prefixes, trailing
  slashes, case and default backends all show;
* schemes: http everywhere, https for TLS hosts (and http for them: ingress-nginx redirects).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..cluster.state import ClusterState
from ..gateway import GatewayRouteError, translate
from ..gateway import route as gateway_route
from ..ingress import RouteError
from ..ingress import route as ingress_route
from ..ingress.matching import string_prefix_only
from ..model.http import HTTPRequest, RouteAnswer
from ..network.gateway import gateway_for_host

UNNAMED_HOST = "unnamed.example.invalid"
NGINX = "nginx.ingress.kubernetes.io/"


@dataclass(frozen=True, slots=True)
class Comparison:
    request: HTTPRequest
    ingress: RouteAnswer
    gateway: RouteAnswer
    gateway_name: str | None
    # The weighted backends (service:port, weight) of the HTTPRoute rule that answered: a request's own
    # backend is one pick, the split is what a weight change changes.
    gateway_split: tuple[tuple[str, int], ...] = ()

    @property
    def same(self) -> bool:
        return self.ingress.same_as(self.gateway)

    def to_dict(self) -> dict[str, Any]:
        return {"request": f"{self.request.method} {self.request.url}", "same": self.same,
                "ingress": self.ingress.to_dict(), "gateway": self.gateway.to_dict(),
                "gateway_name": self.gateway_name}


@dataclass(frozen=True, slots=True)
class Caveat:
    subject: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"subject": self.subject, "message": self.message}


@dataclass(slots=True)
class CheckResult:
    comparisons: list[Comparison] = field(default_factory=list)
    caveats: list[Caveat] = field(default_factory=list)

    @property
    def differences(self) -> list[Comparison]:
        return [c for c in self.comparisons if not c.same]

    def to_dict(self) -> dict[str, Any]:
        return {"requests": len(self.comparisons), "differences": [c.to_dict() for c in self.differences],
                "caveats": [c.to_dict() for c in self.caveats],
                "same": [f"{c.request.method} {c.request.url}" for c in self.comparisons if c.same]}


def _hosts(state: ClusterState) -> list[str]:
    names: set[str] = set()
    for ing in state.ingresses.values():
        names.update(r.host.lower() for r in ing.rules if r.host)
        names.update(h.lower() for t in ing.tls for h in t.hosts)
    for rt in state.http_routes.values():
        names.update(h.lower() for h in rt.hostnames)
    for gw in state.gateways.values():
        names.update(li.hostname.lower() for li in gw.listeners if li.hostname)
    out: set[str] = {UNNAMED_HOST}
    for h in names:
        if h.startswith("*."):
            base = h[2:]
            out.update({f"x.{base}", f"x.y.{base}", base})
        else:
            out.add(h)
    return sorted(out)


def _paths(state: ClusterState) -> list[str]:
    raw: set[str] = {"/"}
    for ing in state.ingresses.values():
        raw.update(p.path or "/" for r in ing.rules for p in r.paths)
    for rt in state.http_routes.values():
        raw.update(m.path.value for rule in rt.rules for m in rule.matches if m.path.type != "RegularExpression")
    out: set[str] = {"/", "/zz-unmatched"}
    for p in raw:
        if not p.startswith("/") or any(c in p for c in "()[]|$^*+?\\{}"):
            continue  # a regex (use-regex) is no request path; the caveats say what is not compared
        bare = p.rstrip("/") or "/"
        out.update({p, bare, bare + "/" if bare != "/" else "/", (bare + "/x").replace("//", "/"), p.upper()})
        if bare != "/":
            out.add(bare + "x")
            out.add(bare.rsplit("/", 1)[0] or "/")
    return sorted(out)


def requests(state: ClusterState) -> list[HTTPRequest]:
    tls = {h.lower() for ing in state.ingresses.values() for t in ing.tls for h in t.hosts}
    tls |= {(li.hostname or "").lower() for gw in state.gateways.values() for li in gw.listeners
            if li.protocol == "HTTPS" and li.hostname}
    out = []
    paths = _paths(state)
    for host in _hosts(state):
        schemes = ("http", "https") if host in tls else ("http",)
        for scheme in schemes:
            out.extend(HTTPRequest(host, p, "GET", scheme) for p in paths)
    return out


def _gateway_answer(state: ClusterState, request: HTTPRequest, gateway: str | None
                    ) -> tuple[RouteAnswer, str | None, tuple[tuple[str, int], ...]]:
    name = gateway or gateway_for_host(state, request.host, request.effective_port, request.scheme,
                                       ingress_first=False)
    if name is None:
        programmed = [k for k, g in translate(state).gateways.items() if g.proxy_pods and g.addresses]
        why = ("no Gateway accepts this host on port "
               f"{request.effective_port}/{request.scheme}" if programmed else "no programmed Gateway")
        return RouteAnswer(None, None, None, None, f"{request.method} {request.url}: {why}"), None, ()
    try:
        result = gateway_route(state, name, request, explain=False)
    except GatewayRouteError as exc:
        return RouteAnswer(None, None, None, None, str(exc)), name, ()
    split = tuple((f"{b.service}:{b.port}", b.weight) for b in result.backends) if result.redirect is None else ()
    return result.answer(), name, split


def compare(state: ClusterState, request: HTTPRequest, gateway: str | None = None,
            class_name: str | None = None) -> Comparison:
    """One request through the Ingress side and the Gateway side (``check`` asks this of every request)."""
    try:
        ing = ingress_route(state, request.host, request.path, class_name=class_name, scheme=request.scheme).answer()
    except RouteError as exc:
        ing = RouteAnswer(None, None, None, None, str(exc))
    gw, name, split = _gateway_answer(state, request, gateway)
    return Comparison(request, ing, gw, name, split)


def check(state: ClusterState, gateway: str | None = None, class_name: str | None = None) -> CheckResult:
    result = CheckResult()
    result.comparisons.extend(compare(state, req, gateway, class_name) for req in requests(state))
    result.caveats.extend(caveats(state))
    return result


def caveats(state: ClusterState) -> list[Caveat]:
    """What the comparison cannot measure: ingress-nginx behaviours knetsim's Ingress side does not simulate."""
    out = []
    for key in sorted(state.ingresses):
        ing = state.ingresses[key]
        subject = f"Ingress {key}"
        annotations = ing.meta.annotations
        regex_paths = sorted({p.path for r in ing.rules for p in r.paths
                              if any(c in (p.path or "") for c in "()[]|$^*+?\\{}")})
        if regex_paths:
            out.append(Caveat(subject, f"regex paths {', '.join(regex_paths)}: the Ingress side matches them as "
                              "ingress-nginx does (case-insensitive, anchored at the start), but no request is "
                              "generated from a regex, so only the literal paths of other rules probe them; HTTPRoute "
                              "RegularExpression is implementation-specific (Envoy: whole path, case-sensitive)"))
        for r, rule in enumerate(ing.rules):
            for i, p in enumerate(rule.paths):
                if p.path_type != "ImplementationSpecific":
                    continue
                path = p.path or "/"
                probe = path.rstrip("/") + "x"
                extra = (" — e.g. " + probe if string_prefix_only(p.path_type, path, probe) else "")
                out.append(Caveat(subject, f"spec.rules[{r}].http.paths[{i}] {path} is ImplementationSpecific: "
                                  "knetsim's Ingress side matches it as Prefix (by path elements), real ingress-nginx "
                                  f"as a plain string prefix, so paths that only start with it{extra} go to "
                                  f"{p.backend.describe()} there and not through an HTTPRoute PathPrefix"))
        others = sorted(a for a in annotations if a.startswith(NGINX) and a not in (
            f"{NGINX}use-regex", f"{NGINX}rewrite-target"))
        if others:
            out.append(Caveat(subject, f"annotations not simulated on either side: {', '.join(others)}"))
    return out
