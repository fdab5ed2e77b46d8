"""ingress-nginx's annotations in Gateway API terms: what a rule, a route or a policy must say to do the same.

Each function takes one Ingress's parsed annotations (``ingress.annotations``) and returns Gateway
API pieces — standard filters and matches first, Envoy Gateway's policies (``gateway.envoyproxy.io/
v1alpha1``: SecurityPolicy, BackendTrafficPolicy, ClientTrafficPolicy) where the standard API has
none — with a note for every behaviour written out and every one that cannot be:

========================  ============================================================================
redirects                 RequestRedirect (permanent/temporal with their code, app-root as an Exact ``/``
                          rule, from-to-www as a route of the other name, the trailing-slash 301 as an
                          Exact rule); the query string and ingress-nginx's trailing-slash removal on the
                          https redirect are noted
regex and rewrites        every path of a regex host as RegularExpression ``(?i)<path>.*`` (nginx's
                          ``~* "^<path>"``; its ``/`` as PathPrefix ``/``), ImplementationSpecific as
                          PathPrefix (ingress-nginx's Prefix), rewrite-target as URLRewrite (ReplaceFullPath; the
                          ``/p(/|$)(.*)`` → ``/$2`` idiom as PathPrefix + ReplacePrefixMatch), x-forwarded-
                          prefix as RequestHeaderModifier, upstream-vhost as URLRewrite hostname
canary                    header and cookie rules before the primary rule, weights on its backendRefs
access                    SecurityPolicy authorization (clientCIDRs, deny rules first), basicAuth (a Secret
                          with ``.htpasswd`` in {SHA} format), extAuth (pathOverride: the auth URL's path)
CORS                      the standard CORS filter
limits                    BackendTrafficPolicy rateLimit (local, per client address), requestBuffer (the
                          body limit; Envoy has none by default, so the Gateway gets ingress-nginx's 1m)
backend                   loadBalancer consistentHash (affinity cookie, upstream-hash-by on a header, cookie
                          or the client address)
========================  ============================================================================
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..ingress.annotations import IngressAnnotations
from ..ingress.annotations.values import PREFIX

EG_API = "gateway.envoyproxy.io/v1alpha1"
GW_GROUP = "gateway.networking.k8s.io"
_REGEX_CHARS = "()[]|$^*+?\\{}"
_CAPTURE_IDIOM = re.compile(r"^(/[^()\[\]|$^*+?\\{}]*?)\(/\|\$\)\(\.\*\)$")


@dataclass(slots=True)
class Pieces:
    """What one rule becomes: its match, filters, and the rules that must precede it."""

    match: dict[str, Any]
    filters: list[dict[str, Any]] = field(default_factory=list)
    before: list[dict[str, Any]] = field(default_factory=list)
    redirect_only: bool = False
    notes: list[tuple[str, str]] = field(default_factory=list)  # (severity, message)


def is_regex_path(path: str) -> bool:
    return any(c in path for c in _REGEX_CHARS)


def nginx_regex(path: str) -> str:
    """nginx's ``~* "^<path>"`` (a case-insensitive search anchored at the start) as a full-match regex."""
    if "|" in path:
        return f"(?i).*?(?:^{path}).*"
    return f"(?i){path}.*"


def regex_source(value: str) -> str | None:
    """The nginx path a RegularExpression of ``nginx_regex`` or ``path_match`` came from (None: another regex)."""
    for pattern in (r"\(\?i\)\.\*\?\(\?:\^(.*)\)\.\*", r"\(\?i\)(.*)\.\*", r"(.*)\.\*"):
        found = re.fullmatch(pattern, value)
        if found:
            return found.group(1)
    return None


def path_match(path: str, path_type: str, regex_host: bool) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    if path == "/" and regex_host:
        # ~* "^/" takes every path, as PathPrefix / does; a RegularExpression would outrank the host's PathPrefix
        # rules in Envoy Gateway, where nginx tries / last.
        return {"path": {"type": "PathPrefix", "value": "/"}}, []
    if regex_host:
        return {"path": {"type": "RegularExpression", "value": nginx_regex(path)}}, []
    if path_type == "Exact":
        return {"path": {"type": "Exact", "value": path}}, []
    if path_type == "ImplementationSpecific":
        return {"path": {"type": "PathPrefix", "value": path}}, [(
            "explicit", f"ImplementationSpecific {path}: ingress-nginx stores it as Prefix (SetDefaultNGINXPathType), "
                        "so PathPrefix")]
    return {"path": {"type": "PathPrefix", "value": path}}, []


def rule_pieces(path: str, path_type: str, anns: IngressAnnotations, regex_host: bool, regex_by: str) -> Pieces:
    match, notes = path_match(path, path_type, regex_host)
    pieces = Pieces(match, notes=list(notes))
    if regex_host:
        written = "PathPrefix /" if path == "/" else f"RegularExpression {nginx_regex(path)}"
        pieces.notes.append(("explicit", f"{path}: {regex_by}, so ingress-nginx matches every path of this host as "
                                         f"a case-insensitive regex prefix (location ~* \"^{path}\"): {written}"))
    elif path != "/" and path.endswith("/"):
        # nginx's auto_redirect: /p answers 301 to /p/ (Exact and Prefix alike).
        pieces.before.append({"matches": [{"path": {"type": "Exact", "value": path.rstrip("/")}}],
                              "filters": [{"type": "RequestRedirect", "requestRedirect": {
                                  "path": {"type": "ReplaceFullPath", "replaceFullPath": path},
                                  "statusCode": 301}}]})
        pieces.notes.append(("explicit", f"{path}: nginx answers {path.rstrip('/')} with 301 to {path}: an Exact "
                                         "rule with RequestRedirect"))
    rewrite = anns.rewrite
    url_rewrite: dict[str, Any] = {}
    if rewrite.needs_rewrite(path):
        idiom = _CAPTURE_IDIOM.match(path)
        if idiom and rewrite.target == "/$2":
            prefix = idiom.group(1) or "/"
            pieces.match = {"path": {"type": "PathPrefix", "value": prefix}}
            url_rewrite["path"] = {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}
            pieces.notes.append(("explicit", f"rewrite-target {rewrite.target} on {path}: PathPrefix {prefix} with "
                                             "URLRewrite ReplacePrefixMatch / (the Gateway match is case-sensitive; "
                                             "nginx's regex is not)"))
        elif re.search(r"\$\d", rewrite.target):
            pieces.notes.append(("inexpressible", f"rewrite-target {rewrite.target!r} uses regex capture groups of "
                                                  f"{path}: URLRewrite replaces a whole path or a path prefix only"))
        else:
            url_rewrite["path"] = {"type": "ReplaceFullPath", "replaceFullPath": rewrite.target}
            pieces.notes.append(("explicit", f"rewrite-target {rewrite.target!r}: nginx replaces the whole path "
                                             "(rewrite ... break), so URLRewrite ReplaceFullPath"))
        if rewrite.x_forwarded_prefix:
            pieces.filters.append({"type": "RequestHeaderModifier", "requestHeaderModifier": {
                "set": [{"name": "X-Forwarded-Prefix", "value": rewrite.x_forwarded_prefix}]}})
    elif rewrite.x_forwarded_prefix:
        pieces.notes.append(("explicit", "x-forwarded-prefix without a rewrite-target: ingress-nginx does not set "
                                         "the header, so neither does the route"))
    if rewrite.upstream_vhost:
        url_rewrite["hostname"] = rewrite.upstream_vhost
    if url_rewrite:
        pieces.filters.append({"type": "URLRewrite", "urlRewrite": url_rewrite})
    if anns.cors.enabled:
        pieces.filters.append({"type": "CORS", "cors": cors_filter(anns)})
    redirect = anns.redirect
    if redirect.url:
        pieces.filters = [{"type": "RequestRedirect", "requestRedirect": request_redirect(redirect.url,
                                                                                          redirect.code)}]
        pieces.redirect_only = True
        pieces.notes.append(("explicit", f"{'temporal' if redirect.code in (302, 303, 307) else 'permanent'}-redirect "
                                         f"{redirect.url} ({redirect.code}): RequestRedirect; Envoy keeps the "
                                         "request's query string, nginx's return does not"))
        if redirect.relative:
            pieces.notes.append(("inexpressible", "relative-redirects: RequestRedirect always writes an absolute "
                                                  "Location"))
        if redirect.code not in (301, 302, 303, 307, 308):
            pieces.notes.append(("inexpressible", f"redirect code {redirect.code}: RequestRedirect allows 301, 302, "
                                                  "303, 307 and 308"))
    return pieces


def request_redirect(url: str, code: int) -> dict[str, Any]:
    from urllib.parse import urlsplit

    parsed = urlsplit(url)
    out: dict[str, Any] = {}
    if parsed.scheme:
        out["scheme"] = parsed.scheme
    if parsed.hostname:
        out["hostname"] = parsed.hostname
    if parsed.port:
        out["port"] = parsed.port
    out["path"] = {"type": "ReplaceFullPath", "replaceFullPath": parsed.path or "/"}
    out["statusCode"] = code if code in (301, 302, 303, 307, 308) else 301
    return out


def cors_filter(anns: IngressAnnotations) -> dict[str, Any]:
    c = anns.cors
    out: dict[str, Any] = {"allowOrigins": list(c.allow_origin),
                           "allowMethods": [m.strip() for m in c.allow_methods.split(",") if m.strip()],
                           "allowHeaders": [h.strip() for h in c.allow_headers.split(",") if h.strip()]}
    if c.expose_headers:
        out["exposeHeaders"] = [h.strip() for h in c.expose_headers.split(",") if h.strip()]
    out["maxAge"] = c.max_age
    out["allowCredentials"] = c.allow_credentials
    return out


def app_root_rule(anns: IngressAnnotations) -> dict[str, Any] | None:
    if not anns.redirect.app_root:
        return None
    return {"matches": [{"path": {"type": "Exact", "value": "/"}}],
            "filters": [{"type": "RequestRedirect", "requestRedirect": {
                "path": {"type": "ReplaceFullPath", "replaceFullPath": anns.redirect.app_root}, "statusCode": 302}}]}


def canary_rules(match: dict[str, Any], primary: dict[str, Any], canary: dict[str, Any],
                 anns: IngressAnnotations) -> list[dict[str, Any]]:
    """Header and cookie rules that must precede the primary rule (their precedence is nginx's order)."""
    config = anns.canary
    rules: list[dict[str, Any]] = []

    def rule(header: dict[str, Any], backend: dict[str, Any]) -> dict[str, Any]:
        return {"matches": [{**match, "headers": [header]}], "backendRefs": [backend]}

    if config.header:
        if config.header_value:
            rules.append(rule({"name": config.header, "value": config.header_value}, canary))
        elif config.header_pattern:
            rules.append(rule({"type": "RegularExpression", "name": config.header,
                               "value": f".*(?:{config.header_pattern}).*"}, canary))
        else:
            rules.append(rule({"name": config.header, "value": "always"}, canary))
            rules.append(rule({"name": config.header, "value": "never"}, primary))
    if config.cookie:
        for value, backend in (("always", canary), ("never", primary)):
            rules.append(rule({"type": "RegularExpression", "name": "Cookie",
                               "value": f"(?:^|.*;\\s*){re.escape(config.cookie)}={value}(?:;.*)?"}, backend))
    return rules


def canary_backends(primary: dict[str, Any], canary: dict[str, Any], anns: IngressAnnotations) -> list[dict[str, Any]]:
    config = anns.canary
    if config.weight <= 0:
        return [primary]
    total = config.total
    weight = min(config.weight, total)
    if weight >= total:
        return [canary]
    return [{**primary, "weight": total - weight}, {**canary, "weight": weight}]


def _target(route: str) -> list[dict[str, str]]:
    return [{"group": GW_GROUP, "kind": "HTTPRoute", "name": route}]


def security_policy(namespace: str, route: str, anns: IngressAnnotations, state_service_ports: dict[str, int]
                    ) -> tuple[dict[str, Any] | None, list[tuple[str, str]]]:
    spec: dict[str, Any] = {"targetRefs": _target(route)}
    notes: list[tuple[str, str]] = []
    access = anns.access
    if access.allow or access.deny:
        rules: list[dict[str, Any]] = []
        if access.deny:
            rules.append({"name": "denylist-source-range", "action": "Deny",
                          "principal": {"clientCIDRs": [_cidr(c) for c in access.deny]}})
        if access.allow:
            rules.append({"name": "whitelist-source-range", "action": "Allow",
                          "principal": {"clientCIDRs": [_cidr(c) for c in access.allow]}})
        spec["authorization"] = {"defaultAction": "Deny" if access.allow else "Allow", "rules": rules}
        notes.append(("explicit", "source ranges: SecurityPolicy authorization (deny rules first, as nginx writes "
                                  "them; Envoy answers 403 as nginx does)"))
    auth = anns.basic_auth
    if auth is not None:
        secret = auth.secret.split("/", 1)[1]
        spec["basicAuth"] = {"users": {"name": f"{secret}-htpasswd"}}
        notes.append(("explicit", f"basic auth: SecurityPolicy basicAuth reading Secret {secret}-htpasswd, key "
                                  f".htpasswd; Envoy reads only {{SHA}} hashes, so re-hash the users of {auth.secret} "
                                  "(htpasswd -s) into it; the realm is Envoy's (the request URL)"))
    ext = anns.ext_auth
    if ext is not None:
        from urllib.parse import urlsplit

        parsed = urlsplit(ext.url)
        labels = (parsed.hostname or "").split(".")
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        if len(labels) >= 2 and (len(labels) == 2 or labels[2] == "svc"):
            http: dict[str, Any] = {"backendRefs": [{"name": labels[0], "namespace": labels[1], "port": port}],
                                    "pathOverride": parsed.path or "/"}
            if ext.response_headers:
                http["headersToBackend"] = list(ext.response_headers)
            spec["extAuth"] = {"http": http}
            notes.append(("explicit", f"auth-url {ext.url}: SecurityPolicy extAuth to Service {labels[1]}/{labels[0]}:"
                                      f"{port}, pathOverride {parsed.path or '/'}; Envoy allows only a 200 (nginx any "
                                      "2xx) and passes the auth service's status on (nginx: 401 and 403, else 500)"))
        else:
            notes.append(("inexpressible", f"auth-url {ext.url} is outside the cluster: extAuth needs a backendRef "
                                           "(a Service, or an Envoy Gateway Backend)"))
        if ext.signin:
            notes.append(("inexpressible", f"auth-signin {ext.signin}: no Gateway API or Envoy Gateway equivalent "
                                           "for ext-auth (OIDC is the closest)"))
    if anns.satisfy == "any":
        notes.append(("inexpressible", "satisfy: any — Envoy applies every authentication and authorization "
                                       "filter; none passes for another"))
    elif "authorization" in spec and ("basicAuth" in spec or "extAuth" in spec):
        # Envoy Gateway's filter order (httpfilters.go): ext_authz, basic_auth ... rbac; nginx's access phase checks
        # allow/deny first.
        notes.append(("explicit", "source ranges with authentication: nginx refuses a client outside the range "
                                  "with 403 before it asks for credentials, Envoy authenticates first (401) and "
                                  "authorizes after; an EnvoyProxy filterOrder putting envoy.filters.http.rbac before "
                                  "envoy.filters.http.basic_auth (and ext_authz) restores nginx's order"))
    if len(spec) > 1 and gateway_size(anns.limits.body_size) is not None:
        notes.append(("explicit", "a body over the size limit: nginx answers 413 before its access checks (the limit "
                                  "is checked when the location is chosen), Envoy's buffer filter runs after "
                                  "authentication and authorization, so such a request is refused by them first"))
    if len(spec) == 1:
        return None, notes
    return {"apiVersion": EG_API, "kind": "SecurityPolicy",
            "metadata": {"name": f"{route}-security", "namespace": namespace,
                         "annotations": {"knetsim.io/converted-from": f"Ingress {anns.ingress}"}},
            "spec": spec}, notes


def _cidr(entry: str) -> str:
    return entry if "/" in entry else (f"{entry}/128" if ":" in entry else f"{entry}/32")


def traffic_policy(namespace: str, route: str, anns: IngressAnnotations, default_body: str,
                   raw: Mapping[str, str] | None = None) -> tuple[dict[str, Any] | None, list[tuple[str, str]]]:
    spec: dict[str, Any] = {"targetRefs": _target(route)}
    notes: list[tuple[str, str]] = []
    resilience, resilience_notes = backend_resilience(raw or {})
    spec.update(resilience)
    notes.extend(resilience_notes)
    limits = anns.limits
    rules = []
    for limit, unit in ((limits.rps, "Second"), (limits.rpm, "Minute")):
        if limit:
            rules.append({"clientSelectors": [{"sourceCIDR": {"type": "Distinct", "value": "0.0.0.0/0"}}],
                          "limit": {"requests": limit, "unit": unit}})
    if rules:
        spec["rateLimit"] = {"type": "Local", "local": {"rules": rules}}
        notes.append(("explicit", "limit-rps/limit-rpm: BackendTrafficPolicy local rate limit per client address; "
                                  f"Envoy's bucket holds the limit itself, nginx lets a burst of limit × "
                                  f"{limits.burst_multiplier} + 1 through"))
    if limits.connections:
        notes.append(("inexpressible", f"limit-connections {limits.connections}: Envoy limits connections per listener "
                                       "or backend (circuit breakers), not per client address"))
    body_limit = gateway_size(limits.body_size)
    if limits.body_size != default_body:
        if body_limit is not None:
            notes.append(("explicit", f"proxy-body-size {limits.body_size}: BackendTrafficPolicy requestBuffer "
                                      f"limit {body_limit} (413 above it)"))
        else:
            notes.append(("explicit", f"proxy-body-size {limits.body_size}: no limit, so no requestBuffer"))
    affinity = anns.affinity
    backend = anns.backend
    if affinity.enabled:
        cookie: dict[str, Any] = {"name": affinity.cookie_name}
        if affinity.cookie_max_age or affinity.cookie_expires:
            cookie["ttl"] = f"{affinity.cookie_max_age or affinity.cookie_expires}s"
        spec["loadBalancer"] = {"type": "ConsistentHash", "consistentHash": {"type": "Cookie", "cookie": cookie}}
        notes.append(("explicit", f"affinity cookie {affinity.cookie_name}: BackendTrafficPolicy consistentHash "
                                  "Cookie (Envoy sets and reads its own value; a client's existing cookie does not "
                                  "carry over)"))
    elif backend.hash_by:
        hashing = _hash_by(backend.hash_by)
        if hashing is not None:
            spec["loadBalancer"] = {"type": "ConsistentHash", "consistentHash": hashing}
            notes.append(("explicit", f"upstream-hash-by {backend.hash_by}: BackendTrafficPolicy consistentHash "
                                      f"{hashing['type']}"))
        else:
            notes.append(("inexpressible", f"upstream-hash-by {backend.hash_by}: Envoy Gateway hashes on a header, a "
                                           "cookie, a query parameter or the client address, not on this expression"))
    if len(spec) == 1 and limits.body_size == default_body:
        return None, notes
    if body_limit is not None:
        # A policy on the route replaces the Gateway's: it carries the body limit too (and, without one, lifts it).
        spec["requestBuffer"] = {"limit": body_limit}
    return {"apiVersion": EG_API, "kind": "BackendTrafficPolicy",
            "metadata": {"name": f"{route}-traffic", "namespace": namespace,
                         "annotations": {"knetsim.io/converted-from": f"Ingress {anns.ingress}"}},
            "spec": spec}, notes


def _hash_by(expression: str) -> dict[str, Any] | None:
    found = re.fullmatch(r"\$\{?(\w+)\}?", expression.strip())
    if found is None:
        return None
    name = found.group(1)
    if name in ("remote_addr", "binary_remote_addr"):
        return {"type": "SourceIP"}
    if name.startswith("http_"):
        return {"type": "Header", "header": {"name": name[5:].replace("_", "-")}}
    if name.startswith("cookie_"):
        return {"type": "Cookie", "cookie": {"name": name[7:]}}
    if name.startswith("arg_"):
        return {"type": "QueryParams", "queryParams": [{"name": name[4:]}]}
    return None


def gateway_size(nginx_size: str) -> str | None:
    """An nginx size (``8m``, ``100k``, ``0``) as a Kubernetes quantity; None for no limit."""
    found = re.fullmatch(r"\s*(\d+)([kKmMgG]?)\s*", nginx_size)
    if found is None:
        return "1Mi"
    number, unit = int(found.group(1)), found.group(2).lower()
    if number == 0:
        return None
    return f"{number}{ {'': '', 'k': 'Ki', 'm': 'Mi', 'g': 'Gi'}[unit] }"


# proxy_next_upstream's conditions as Envoy Gateway's BackendTrafficPolicy retry triggers (nginx's
# ngx_http_proxy_module; Envoy's router filter x-envoy-retry-on values, which Envoy Gateway's
# retry.retryOn.triggers enumerates). "error" is a failure to connect, send or read the header; "timeout" the
# connect timeout (a read timeout would need perRetry.timeout, which nginx has no counterpart for).
_NEXT_UPSTREAM_TRIGGERS = {"error": ("connect-failure", "reset"), "timeout": ("connect-failure",)}
_NEXT_UPSTREAM_CODES = {"http_500": 500, "http_502": 502, "http_503": 503, "http_504": 504, "http_403": 403,
                        "http_404": 404, "http_429": 429}
# The annotations backend_resilience() converts (not_converted() leaves them out).
RESILIENCE_ANNOTATIONS = frozenset({"proxy-connect-timeout", "proxy-next-upstream", "proxy-next-upstream-tries"})


def _seconds(value: str) -> int | None:
    found = re.fullmatch(r"\s*(\d+)\s*s?\s*", value)
    return int(found.group(1)) if found else None


def backend_resilience(raw: Mapping[str, str]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """proxy-connect-timeout and proxy-next-upstream(-tries) as BackendTrafficPolicy ``timeout`` and ``retry``
    (Envoy Gateway api/v1alpha1 timeout_types.go, retry_types.go): the fields, and a note per annotation."""
    spec: dict[str, Any] = {}
    notes: list[tuple[str, str]] = []
    connect = raw.get(f"{PREFIX}proxy-connect-timeout")
    if connect is not None:
        seconds = _seconds(connect)
        if seconds:
            spec["timeout"] = {"tcp": {"connectTimeout": f"{seconds}s"}}
            notes.append(("explicit", f"proxy-connect-timeout {connect}: BackendTrafficPolicy timeout.tcp."
                                      f"connectTimeout {seconds}s (Envoy counts the backend TLS handshake in it, "
                                      "nginx does not)"))
        else:
            notes.append(("inexpressible", f"proxy-connect-timeout {connect!r}: not a number of seconds, so "
                                           "ingress-nginx ignores it; nothing written"))
    conditions_text = raw.get(f"{PREFIX}proxy-next-upstream")
    tries_text = raw.get(f"{PREFIX}proxy-next-upstream-tries")
    if conditions_text is None and tries_text is None:
        return spec, notes
    # ingress-nginx's defaults (its ConfigMap): "error timeout", 3 tries (the first included).
    conditions = (conditions_text if conditions_text is not None else "error timeout").split()
    tries = _seconds(tries_text) if tries_text is not None else 3
    if "off" in conditions:
        spec["retry"] = {"numRetries": 0}
        notes.append(("explicit", "proxy-next-upstream off: no retry (BackendTrafficPolicy retry.numRetries 0)"))
        return spec, notes
    if tries == 0:
        notes.append(("inexpressible", "proxy-next-upstream-tries 0: nginx tries every server of the upstream; "
                                       "Envoy needs a number: numRetries 2 written (Envoy Gateway's default)"))
        tries = 3
    triggers: list[str] = []
    codes: list[int] = []
    lost: list[str] = []
    for condition in conditions:
        if condition in _NEXT_UPSTREAM_TRIGGERS:
            triggers.extend(t for t in _NEXT_UPSTREAM_TRIGGERS[condition] if t not in triggers)
        elif condition in _NEXT_UPSTREAM_CODES:
            codes.append(_NEXT_UPSTREAM_CODES[condition])
        elif condition != "non_idempotent":
            lost.append(condition)
    if codes:
        triggers.append("retriable-status-codes")
    retry: dict[str, Any] = {"numRetries": max((tries or 1) - 1, 0)}
    if triggers:
        retry["retryOn"] = {"triggers": triggers}
        if codes:
            retry["retryOn"]["httpStatusCodes"] = sorted(codes)
    spec["retry"] = retry
    notes.append(("explicit", f"proxy-next-upstream {' '.join(conditions)} (tries {tries}): BackendTrafficPolicy "
                              f"retry numRetries {retry['numRetries']} on {', '.join(triggers) or 'nothing'}"
                              + (f" {sorted(codes)}" if codes else "")
                              + "; Envoy Gateway retries on another endpoint (previous_hosts), as nginx tries the "
                              "next server"))
    if lost:
        notes.append(("inexpressible", f"proxy-next-upstream {' '.join(lost)}: no Envoy retry trigger for it"))
    if "non_idempotent" not in conditions and triggers:
        notes.append(("explicit", "nginx never passes a POST, LOCK or PATCH to the next server (no non_idempotent); "
                                  "Envoy retries any method"))
    return spec, notes


def not_converted(anns: IngressAnnotations) -> list[tuple[str, str]]:
    """Annotations the conversion cannot carry, each named."""
    notes: list[tuple[str, str]] = []
    for name, text in anns.snippets.present():
        notes.append(("inexpressible", f"{name}: arbitrary nginx configuration ({' '.join(text.split())[:60]!r}) "
                                       "has no Gateway API equivalent (Envoy Gateway's EnvoyPatchPolicy edits xDS)"))
    if anns.errors.codes and anns.errors.codes_from != "ConfigMap":
        notes.append(("inexpressible", f"custom-http-errors {','.join(map(str, anns.errors.codes))}: the answers "
                                       "would come from the default backend; Envoy Gateway's responseOverride can "
                                       "only write a fixed response"))
    if anns.errors.default_backend:
        notes.append(("inexpressible", f"default-backend {anns.errors.default_backend}: Envoy answers 503 for a "
                                       "backend without endpoints; no fallback Service"))
    if anns.canary.enabled and anns.affinity.canary_behavior != "legacy" and anns.affinity.enabled:
        notes.append(("inexpressible", "affinity-canary-behavior sticky: a weighted split does not keep a client "
                                       "on the side it first drew"))
    if anns.backend.service_upstream:
        notes.append(("inexpressible", "service-upstream: Envoy Gateway sends to the endpoints (routingType Service "
                                       "is set on the EnvoyProxy, not per route)"))
    for name in anns.unsimulated:
        short = name[len(PREFIX):]
        if short in RESILIENCE_ANNOTATIONS:
            continue  # backend_resilience() writes them
        why = _TIMEOUT_NOTES.get(short, "no equivalent written by this conversion")
        notes.append(("inexpressible", f"{short}: not converted ({why})"))
    return notes


# What nginx's timeout directives bound, against the nearest Gateway API / Envoy Gateway field (nginx's
# ngx_http_proxy_module; Gateway API HTTPRouteTimeouts; Envoy Gateway's BackendTrafficPolicy timeout types).
_WHOLE_REQUEST = ("for a bound on the whole backend request, set the HTTPRoute rule's timeouts.backendRequest "
                  "by hand (and timeouts.request at least as long; without it Envoy ends a request after 15 s)")
_TIMEOUT_NOTES = {
    "proxy-next-upstream-timeout": "nginx's proxy_next_upstream_timeout bounds the time spent passing a request to "
                                   "the next server; Envoy bounds each try (BackendTrafficPolicy retry.perRetry."
                                   "timeout) or the whole request (HTTPRoute timeouts.request), not that",
    "proxy-read-timeout": "nginx's proxy_read_timeout bounds the wait between two successive reads from the backend, "
                          "not the whole response; HTTPRoute timeouts.backendRequest bounds the whole backend "
                          f"request, so it is not the same limit; {_WHOLE_REQUEST}",
    "proxy-send-timeout": "nginx's proxy_send_timeout bounds the wait between two successive writes of the request "
                          "to the backend, not the whole transmission; neither Gateway API nor Envoy Gateway has a "
                          f"per-write limit; {_WHOLE_REQUEST}",
}
