"""What Envoy Gateway does with the policies and filters ``migrate ingress`` writes, on top of a Gateway's answer.

``gateway.route`` answers which rule and backend an HTTPRoute gives a request; Envoy Gateway then runs
the HTTP filters its policies configure, in its own order (``internal/xds/translator/httpfilters.go``):

1. **CORS** (the rule's CORS filter, else a SecurityPolicy's ``cors``): a request with ``Origin`` whose
   origin is allowed gets ``Access-Control-Allow-Origin: <the origin>`` (and ``-Allow-Credentials``,
   ``-Expose-Headers``); a preflight — ``OPTIONS`` with ``Origin`` and
   ``Access-Control-Request-Method`` — is answered **200** by Envoy with the allowed methods, headers
   and max age; a request without ``Origin`` gets no CORS header at all;
2. **ext_authz** (SecurityPolicy ``extAuth.http``): a request to the auth Service (``pathOverride``,
   else ``path`` + the request path); only a **200** lets the request through (``headersToBackend``
   copied), any other answer is passed to the client, an unreachable service is 403;
3. **basic_auth** (``basicAuth``): the Secret's ``.htpasswd`` key, ``{SHA}`` hashes only; 401 with
   ``WWW-Authenticate: Basic realm="<the request URL>"``; a Secret that is missing makes the policy
   invalid, and the route answers 500;
4. **buffer** (BackendTrafficPolicy ``requestBuffer.limit``): a body over the limit is 413;
5. **RBAC** (``authorization``): the first rule whose ``clientCIDRs`` hold the client address decides,
   else ``defaultAction``; denied is 403;
6. **local rate limit** (``rateLimit.local``): per client address, a bucket of ``requests`` tokens: a
   burst gets that many through, the rest **429**;
7. the **router**: the route's own answer (redirect, proxy, 404, 500, 503).

The client address is the peer's, or — with a ClientTrafficPolicy ``clientIPDetection.xForwardedFor``
— the rightmost untrusted ``X-Forwarded-For`` address. A policy that targets the HTTPRoute takes
precedence over one of the same kind targeting the Gateway. Policies are read from the input as it
is (their CRDs are not needed).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import re
from dataclasses import dataclass
from typing import Any

from ..cluster.state import ClusterState
from ..gateway import GatewayRouteResult
from ..ingress.annotations.access import real_ip
from ..ingress.phases import service_answer
from ..model.http import EXTERNAL_CLIENT, HTTPRequest, RouteAnswer

POLICY_KINDS = ("SecurityPolicy", "BackendTrafficPolicy", "ClientTrafficPolicy")
_PROXIED = ("proxied", "no-endpoints")


@dataclass(frozen=True, slots=True)
class Policies:
    security: dict[str, Any] | None
    traffic: dict[str, Any] | None
    client: dict[str, Any] | None
    namespace: str


def _targets(obj_raw: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj_raw.get("spec") or {}
    refs = list(spec.get("targetRefs") or [])
    if spec.get("targetRef"):
        refs.append(spec["targetRef"])
    return [r for r in refs if isinstance(r, dict)]


def policies_for(state: ClusterState, gateway: str, route: str | None) -> Policies:
    gw_ns, _, gw_name = gateway.partition("/")
    route_ns, _, route_name = (route or "").partition("/")
    found: dict[str, dict[str, Any] | None] = {}
    for kind in POLICY_KINDS:
        on_route = on_gateway = None
        for obj in state.objects_of(kind):
            for ref in _targets(obj.raw):
                if ref.get("kind") == "HTTPRoute" and route and obj.namespace == route_ns and \
                        ref.get("name") == route_name:
                    on_route = on_route or obj.raw.get("spec")
                if ref.get("kind") == "Gateway" and obj.namespace == gw_ns and ref.get("name") == gw_name:
                    on_gateway = on_gateway or obj.raw.get("spec")
        found[kind] = on_route if on_route is not None else on_gateway
    return Policies(found["SecurityPolicy"], found["BackendTrafficPolicy"], found["ClientTrafficPolicy"],
                    route_ns or gw_ns)


def client_address(request: HTTPRequest, client: dict[str, Any] | None) -> str:
    peer = request.client_ip or EXTERNAL_CLIENT
    detection = ((client or {}).get("clientIPDetection") or {}).get("xForwardedFor") or {}
    if not detection:
        return peer
    forwarded = request.header("X-Forwarded-For")
    trusted = tuple(detection.get("trustedCIDRs") or ())
    hops = detection.get("numTrustedHops")
    if trusted:
        return real_ip(peer, forwarded, trusted)
    if hops and forwarded:
        chain = [a.strip() for a in forwarded.split(",") if a.strip()]
        return chain[-int(hops)] if len(chain) >= int(hops) else peer
    return peer


def _rule_raw(state: ClusterState, result: GatewayRouteResult) -> dict[str, Any]:
    if result.match is None:
        return {}
    route = state.http_routes.get(result.match.route)
    rules = ((route.raw.get("spec") or {}).get("rules") or []) if route is not None else []
    return rules[result.match.rule] if result.match.rule < len(rules) else {}


def _origin_allowed(origins: list[str], origin: str) -> bool:
    for allowed in origins:
        if allowed == "*":
            return True
        pattern = re.escape(allowed).replace(r"\*", ".*")
        if re.fullmatch(pattern, origin):
            return True
    return False


def _cors(cors: dict[str, Any] | None, request: HTTPRequest) -> tuple[dict[str, str], bool]:
    """(headers, is a preflight Envoy answers) for this request."""
    origin = request.header("Origin")
    if not cors or origin is None or not _origin_allowed(list(cors.get("allowOrigins") or []), origin):
        return {}, False
    credentials = bool(cors.get("allowCredentials"))
    preflight = request.method == "OPTIONS" and request.header("Access-Control-Request-Method") is not None
    headers = {"access-control-allow-origin": origin}
    if credentials:
        headers["access-control-allow-credentials"] = "true"
    if preflight:
        headers["access-control-allow-methods"] = ",".join(cors.get("allowMethods") or [])
        headers["access-control-allow-headers"] = ",".join(cors.get("allowHeaders") or [])
        if cors.get("maxAge") is not None:
            headers["access-control-max-age"] = str(_seconds(cors["maxAge"]))
    elif cors.get("exposeHeaders"):
        headers["access-control-expose-headers"] = ",".join(cors["exposeHeaders"])
    return headers, preflight


def _seconds(value: Any) -> int:
    if isinstance(value, int):
        return value
    found = re.fullmatch(r"(\d+)(ms|s|m|h)?", str(value))
    if found is None:
        return 0
    number, unit = int(found.group(1)), found.group(2) or "s"
    return {"ms": number // 1000, "s": number, "m": number * 60, "h": number * 3600}[unit]


def _bytes(quantity: str) -> int | None:
    found = re.fullmatch(r"(\d+)(Ki|Mi|Gi|k|M|G)?", str(quantity).strip())
    if found is None:
        return None
    unit = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "k": 1000, "M": 1000**2, "G": 1000**3, None: 1}
    return int(found.group(1)) * unit[found.group(2)]


def _secret_value(state: ClusterState, namespace: str, name: str, key: str) -> str | None:
    from ..ingress.annotations.basicauth import secret_data

    obj = state.others.get(("Secret", f"{namespace}/{name}"))
    return secret_data(obj.raw, key) if obj is not None else None


def _basic(state: ClusterState, namespace: str, basic: dict[str, Any], request: HTTPRequest
           ) -> tuple[int | None, str]:
    name = str((basic.get("users") or {}).get("name") or "")
    text = _secret_value(state, namespace, name, ".htpasswd")
    if text is None:
        return 500, f"Secret {namespace}/{name} (key .htpasswd) is missing: the SecurityPolicy is invalid and the " \
                    "route answers 500"
    authorization = request.header("Authorization") or ""
    scheme, _, token = authorization.partition(" ")
    try:
        user, _, password = base64.b64decode(token.strip(), validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        user, password = "", ""
    if scheme.lower() == "basic" and user:
        for line in text.splitlines():
            name_, _, stored = line.partition(":")
            if name_ == user and stored.startswith("{SHA}") and stored[5:] == base64.b64encode(
                    hashlib.sha1(password.encode()).digest()).decode():
                return None, f"user {user!r} authenticated ({{SHA}} in .htpasswd)"
    return 401, "basic_auth: missing or wrong credentials (Envoy reads only {SHA} hashes)"


def _rbac(authorization: dict[str, Any], client: str) -> tuple[bool, str]:
    for rule in authorization.get("rules") or []:
        cidrs = ((rule.get("principal") or {}).get("clientCIDRs")) or []
        try:
            hit = any(ipaddress.ip_address(client) in ipaddress.ip_network(c, strict=False) for c in cidrs)
        except ValueError:
            hit = False
        if hit:
            return rule.get("action") == "Allow", f"rule {rule.get('name') or '-'}: {rule.get('action')}"
    default = authorization.get("defaultAction", "Deny")
    return default == "Allow", f"no rule holds {client}: defaultAction {default}"


def _ext_auth(state: ClusterState, namespace: str, ext: dict[str, Any], request: HTTPRequest
              ) -> tuple[int | None, str]:
    http = ext.get("http") or {}
    refs = http.get("backendRefs") or ([http["backendRef"]] if http.get("backendRef") else [])
    if not refs:
        return 403, "extAuth without a backend: denied"
    ref = refs[0]
    service = f"{ref.get('namespace') or namespace}/{ref.get('name')}"
    path = http.get("pathOverride") or ((http.get("path") or "") + request.path_only)
    status, _headers, why = service_answer(state, service, int(ref.get("port") or 80), request.method, path or "/",
                                           dict(request.headers), request.describe())
    if status is None:
        return 403, f"{why}: ext_authz fails closed with 403"
    if status == 200:
        return None, why
    return status, f"{why}: Envoy passes the auth service's {status} on"


def answer(state: ClusterState, gateway: str, result: GatewayRouteResult, request: HTTPRequest) -> RouteAnswer:
    """The Gateway's answer once Envoy Gateway's filters have run."""
    base = result.answer()
    upstream_headers: dict[str, str] = {}
    if result.upstream_request is not None and base.backend is not None:
        upstream_headers["host"] = result.upstream_request.host.split(":", 1)[0]
        if "x-forwarded-prefix" in result.upstream_request.headers:
            upstream_headers["x-forwarded-prefix"] = result.upstream_request.headers["x-forwarded-prefix"]
    valid = [b for b in result.backends if b.valid and b.weight]
    shares: dict[str, float] = {}
    if len(valid) > 1 and base.backend is not None:
        total = sum(b.weight for b in valid)
        shares = {f"{b.service}:{b.port}": b.weight / total for b in valid}
    if result.match is None:
        return RouteAnswer(base.status, base.backend, base.location, base.upstream_path, base.explanation, {},
                           upstream_headers, shares)
    policies = policies_for(state, gateway, result.match.route)
    security = policies.security or {}
    traffic = policies.traffic or {}
    client = client_address(request, policies.client)
    rule = _rule_raw(state, result)
    cors_filter = next((f.get("cors") for f in rule.get("filters") or [] if f.get("type") == "CORS"), None)
    cors_headers, preflight = _cors(cors_filter or security.get("cors"), request)
    target = f"{request.method} {request.url}"

    def denied(status: int, why: str, extra: dict[str, str] | None = None) -> RouteAnswer:
        return RouteAnswer(status, None, None, None, f"{target} → {why}", {**cors_headers, **(extra or {})})

    if preflight:
        return denied(200, "Envoy's CORS filter answers the preflight with 200")
    if security.get("extAuth"):
        status, why = _ext_auth(state, policies.namespace, security["extAuth"], request)
        if status is not None:
            return denied(status, f"SecurityPolicy extAuth: {why}")
    if security.get("basicAuth"):
        status, why = _basic(state, policies.namespace, security["basicAuth"], request)
        if status is not None:
            realm = {"www-authenticate": f'Basic realm="{request.url}"'} if status == 401 else {}
            return denied(status, f"SecurityPolicy basicAuth: {why}", realm)
    limit = _bytes(str((traffic.get("requestBuffer") or {}).get("limit", ""))) if traffic.get("requestBuffer") \
        else None
    if limit is not None and request.body_size is not None and request.body_size > limit:
        return denied(413, f"BackendTrafficPolicy requestBuffer limit {traffic['requestBuffer']['limit']}: "
                           f"{request.body_size} bytes is too large")
    if security.get("authorization"):
        allowed, why = _rbac(security["authorization"], client)
        if not allowed:
            return denied(403, f"SecurityPolicy authorization, client {client}: {why}")
    headers = dict(cors_headers) if result.outcome in _PROXIED or base.status is not None else {}
    return RouteAnswer(base.status, base.backend, base.location, base.upstream_path, base.explanation, headers,
                       upstream_headers, shares)


def burst(state: ClusterState, gateway: str, result: GatewayRouteResult, requests: int) -> tuple[int, int, int]:
    """What ``requests`` simultaneous requests from one client get from the route's local rate limit."""
    if result.match is None:
        return requests, requests, 0
    traffic = policies_for(state, gateway, result.match.route).traffic or {}
    rules = (((traffic.get("rateLimit") or {}).get("local")) or {}).get("rules") or []
    limits = [int((r.get("limit") or {}).get("requests") or 0) for r in rules]
    allowed = min([requests, *(lim for lim in limits if lim)])
    return requests, allowed, 429 if allowed < requests else 0
