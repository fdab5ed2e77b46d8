"""Envoy Gateway's own policies on the requests a Gateway routes: SecurityPolicy, BackendTrafficPolicy and
ClientTrafficPolicy (``gateway.envoyproxy.io/v1alpha1``), and the HTTPRoute CORS filter.

Envoy Gateway turns them into HTTP filters that run, once the route is chosen, in its own order
(``internal/xds/translator/httpfilters.go``) before the router answers:

1. **CORS** (the rule's CORS filter, else the SecurityPolicy's ``cors``): a request with an allowed
   ``Origin`` gets ``Access-Control-Allow-Origin: <the origin>`` (and ``-Allow-Credentials``,
   ``-Expose-Headers``) on whatever answers it; a preflight — ``OPTIONS`` with ``Origin`` and
   ``Access-Control-Request-Method`` — is answered **200** by Envoy with the allowed methods, headers
   and max age; an origin that is not allowed gets no CORS header and goes on;
2. **ext_authz** (``extAuth.http``): the request goes to the auth Service (``pathOverride``, else
   ``path`` + the request path); only a **200** lets it through, any other answer is passed on to the
   client; an auth Service that cannot be reached gives ``statusOnError`` (403), or lets the request
   through with ``failOpen``;
3. **basic_auth** (``basicAuth``): the ``.htpasswd`` key of the Secret, ``{SHA}`` hashes only; 401 with
   ``WWW-Authenticate: Basic realm="<the request URL>"``;
4. **buffer** (BackendTrafficPolicy ``requestBuffer.limit``): a body over the limit is 413;
5. **RBAC** (``authorization``): the first rule whose principal (``clientCIDRs``, ``headers``) and
   operation (``methods``) hold decides, else ``defaultAction`` (Deny); denied is 403;
6. **local rate limit** (``rateLimit.local``): one token bucket per rule with client selectors (per
   client address, header value ... for ``Distinct``), and one for the route (the rule without
   selectors) that takes the requests no other rule selects; a request is refused with **429** when a
   bucket it draws from is empty. A single request always finds a full bucket: ``burst`` asks what
   ``n`` requests at once get, and the live listeners keep the buckets over time (``TokenBuckets``).

The client address is the peer's, or — with a ClientTrafficPolicy ``clientIPDetection.xForwardedFor`` —
the ``numTrustedHops``-th address from the right of ``X-Forwarded-For``, or the rightmost one outside
``trustedCIDRs`` when the peer is inside them.

Which policy applies: one in the target's namespace naming the route (a ``sectionName`` there is a
rule name) takes precedence over one naming the Gateway (a ``sectionName`` there is a listener name);
a section beats the whole object; of two at the same level the older one (then namespace/name) wins,
as Envoy Gateway marks the other Conflicted. A ClientTrafficPolicy attaches to Gateways only. A
SecurityPolicy whose references cannot be resolved (its Secret, its auth Service) is invalid, and
Envoy Gateway answers 500 on the routes it targets rather than let requests through unchecked.

Policies are read from the objects as they are (no CRD needed offline): a field of the wrong shape is
ignored, never a crash.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..cluster.state import ClusterState
from ..model import saferegex
from ..model.http import EXTERNAL_CLIENT, HTTPRequest
from ..model.kinds import ENVOY_GATEWAY_POLICY_KINDS
from ..model.objects import Object
from ..model.programs import http_status, program_of
from ..model.quantity import quantity

EG_GROUP = "gateway.envoyproxy.io"
POLICY_KINDS = ENVOY_GATEWAY_POLICY_KINDS
GW_GROUP = "gateway.networking.k8s.io"

# Outcomes of a request the filters answer themselves.
PREFLIGHT = "preflight"
UNAUTHORIZED = "unauthorized"
DENIED = "denied"
PAYLOAD_TOO_LARGE = "payload-too-large"
RATE_LIMITED = "rate-limited"
INVALID_POLICY = "invalid-policy"

# The bodies of Envoy's own replies (its filters' local replies).
BASIC_MISSING = "User authentication failed. Missing username and password."
BASIC_SCHEME = "User authentication failed. Expected 'Basic' authentication scheme."
BASIC_FORMAT = "User authentication failed. Invalid basic credential format."
BASIC_INVALID = "User authentication failed. Invalid username/password combination."
RBAC_DENIED = "RBAC: access denied"
TOO_LARGE = "Payload Too Large"
RATE_LIMITED_BODY = "local_rate_limited"
UNIT_SECONDS = {"Second": 1, "Minute": 60, "Hour": 3600, "Day": 86400, "Week": 604800, "Month": 2592000,
                "Year": 31536000}


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _maps(value: Any) -> list[dict[str, Any]]:
    return [v for v in _list(value) if isinstance(v, dict)]


def _strings(value: Any) -> list[str]:
    return [str(v) for v in _list(value) if isinstance(v, (str, int, float)) and not isinstance(v, bool)]


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


# --- which policies apply -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Policy:
    """One policy in force: its kind, ``namespace/name``, spec, and what it targets."""

    kind: str
    key: str
    spec: dict[str, Any]
    target: str  # "HTTPRoute ns/name", "Gateway ns/name[/section]"

    @property
    def namespace(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def label(self) -> str:
        return f"{self.kind} {self.key}"


@dataclass(frozen=True, slots=True)
class Attached:
    security: Policy | None = None
    traffic: Policy | None = None
    client: Policy | None = None

    def __bool__(self) -> bool:
        return any((self.security, self.traffic, self.client))

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(p.label for p in (self.security, self.traffic, self.client) if p is not None)


def _targets(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    spec = _map(raw.get("spec"))
    refs = _maps(spec.get("targetRefs"))
    if isinstance(spec.get("targetRef"), dict):
        refs.append(spec["targetRef"])
    return refs


def _age(obj: Object) -> tuple[bool, str, str]:
    created = obj.meta.creation_timestamp
    return (created is None, created or "", obj.key)


def _pick(kind: str, state: ClusterState, wanted: Iterable[tuple[str, str, str, str | None]]
          ) -> Policy | None:
    """The policy of ``kind`` for the first level of ``wanted`` (target kind, namespace, name, section) that has
    one; at a level, the oldest."""
    objects = sorted(state.objects_of(kind), key=_age)
    for target_kind, namespace, name, section in wanted:
        for obj in objects:
            if obj.namespace != namespace:
                continue
            for ref in _targets(obj.raw):
                if ref.get("group", GW_GROUP) != GW_GROUP or ref.get("kind") != target_kind or \
                        ref.get("name") != name:
                    continue
                if (ref.get("sectionName") or None) != section:
                    continue
                where = f"{target_kind} {namespace}/{name}" + (f" section {section}" if section else "")
                return Policy(kind, obj.key, _map(obj.raw.get("spec")), where)
    return None


def attached(state: ClusterState, gateway: str, listener: str | None, route_kind: str | None = None,
             route: str | None = None, rule_name: str | None = None) -> Attached:
    """The policies in force for a request that Gateway ``ns/name``'s ``listener`` gives to ``route``'s rule."""
    if not any(state.objects_of(kind) for kind in POLICY_KINDS):
        return Attached()
    gw_ns, _, gw_name = gateway.partition("/")
    section = listener if listener and "/" not in listener else None  # a ListenerSet's listener is ns/set/name
    on_gateway = [("Gateway", gw_ns, gw_name, section)] if section else []
    on_gateway.append(("Gateway", gw_ns, gw_name, None))
    on_route: list[tuple[str, str, str, str | None]] = []
    if route_kind and route:
        route_ns, _, name = route.partition("/")
        if rule_name:
            on_route.append((route_kind, route_ns, name, rule_name))
        on_route.append((route_kind, route_ns, name, None))
    return Attached(_pick("SecurityPolicy", state, [*on_route, *on_gateway]),
                    _pick("BackendTrafficPolicy", state, [*on_route, *on_gateway]),
                    _pick("ClientTrafficPolicy", state, on_gateway))


# --- the client address -------------------------------------------------------------------------


def _in(cidrs: Iterable[str], address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    for cidr in cidrs:
        try:
            if ip in ipaddress.ip_network(cidr, strict=False):
                return True
        except ValueError:
            continue
    return False


def client_address(request: HTTPRequest, client: Policy | None) -> str:
    """The address Envoy takes the request to come from (RBAC and the rate limit read it)."""
    peer = request.client_ip or EXTERNAL_CLIENT
    detection = _map(_map(_map(client.spec if client else None).get("clientIPDetection")).get("xForwardedFor"))
    forwarded = request.header("X-Forwarded-For")
    if not detection or not forwarded:
        return peer
    chain = [a.strip() for a in forwarded.split(",") if a.strip()]
    hops = _int(detection.get("numTrustedHops"))
    if hops:
        return chain[-hops] if len(chain) >= hops else peer
    trusted = _strings(detection.get("trustedCIDRs"))
    if not trusted or not _in(trusted, peer):
        return peer
    for address in reversed(chain):
        try:
            ipaddress.ip_address(address)
        except ValueError:
            return peer
        if not _in(trusted, address):
            return address
    return chain[0]


# --- the decision ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Bucket:
    """A local rate limit token bucket a request draws from: ``requests`` tokens, refilled every ``seconds``."""

    key: str  # what identifies the bucket: the policy, the rule, and the client's value for Distinct
    requests: int
    seconds: int
    rule: str  # "BackendTrafficPolicy ns/name rule 0"

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "requests": self.requests, "per_seconds": self.seconds, "bucket": self.key}


@dataclass(frozen=True, slots=True)
class Decision:
    """What Envoy Gateway's filters do with one request before (or instead of) the router."""

    status: int | None  # the filters' own answer; None: the router answers
    outcome: str | None  # PREFLIGHT, UNAUTHORIZED, DENIED, PAYLOAD_TOO_LARGE, INVALID_POLICY, or None
    why: str
    headers: dict[str, str]  # response headers the filters set, on their own answer or the router's
    body: str  # the body of their own answer
    client: str  # the client address the policies saw
    policies: tuple[str, ...]
    steps: tuple[str, ...]  # each filter's verdict, in Envoy's order
    buckets: tuple[Bucket, ...] = ()  # the rate limit buckets the request draws from (if it gets that far)
    burst: tuple[int, int, int] | None = None  # (requests at once, how many get through, what the rest get)

    @property
    def answered(self) -> bool:
        return self.status is not None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"policies": list(self.policies), "client": self.client, "steps": list(self.steps),
                               "status": self.status, "outcome": self.outcome, "headers": dict(self.headers),
                               "rate_limits": [b.to_dict() for b in self.buckets]}
        if self.burst is not None:
            out["burst"] = {"requests": self.burst[0], "through": self.burst[1], "others_get": self.burst[2]}
        return out


def _cors_filter(state: ClusterState, route_kind: str | None, route: str | None, rule: int | None
                 ) -> dict[str, Any] | None:
    """The HTTPRoute rule's CORS filter (Gateway API), read as written."""
    if route_kind != "HTTPRoute" or route is None or rule is None:
        return None
    obj = state.http_routes.get(route)
    rules = _maps(_map(obj.raw.get("spec")).get("rules")) if obj is not None else []
    if rule >= len(rules):
        return None
    return next((_map(f.get("cors")) for f in _maps(rules[rule].get("filters")) if f.get("type") == "CORS"), None)


def _origin_allowed(origins: list[str], origin: str) -> bool:
    for allowed in origins:
        if allowed == "*":
            return True
        if re.fullmatch(re.escape(allowed).replace(r"\*", ".*"), origin):
            return True
    return False


def _seconds(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    found = re.fullmatch(r"(\d+)(ms|s|m|h)?", str(value))
    if found is None:
        return 0
    number, unit = int(found.group(1)), found.group(2) or "s"
    return {"ms": number // 1000, "s": number, "m": number * 60, "h": number * 3600}[unit]


def _wildcard_echoed(allowed: list[str], requested: str | None, credentials: bool) -> str:
    """An ``allowMethods``/``allowHeaders`` value on a preflight answer. ``*`` is a wildcard for the browser only
    when the request carries no credentials (Fetch standard, CORS-preflight fetch); with ``allowCredentials`` the
    gateway echoes what the preflight asked for instead, as conformance ``httproute-cors.go`` expects
    (``access-control-allow-methods: PUT`` for ``allowMethods: ["*"]`` with credentials)."""
    if "*" in allowed and credentials:
        return requested or ""
    return ",".join(allowed)


def _cors(cors: dict[str, Any] | None, request: HTTPRequest) -> tuple[dict[str, str], bool, str | None]:
    """(headers, is a preflight Envoy answers, the step) for this request.

    Restated from kubernetes-sigs/gateway-api ``conformance/tests/httproute-cors.go`` (HTTPRouteCORS): the
    preflight answer carries the allowed origin, methods, headers, the exposed headers and the max age (and
    ``-Allow-Credentials: true`` only when ``allowCredentials`` is true); an actual request gets the origin,
    the exposed headers and the credentials flag. The origin is always echoed, ``*`` included (Envoy does).
    """
    origin = request.header("Origin")
    if cors is None or origin is None:
        return {}, False, None
    if not _origin_allowed(_strings(cors.get("allowOrigins")), origin):
        return {}, False, f"CORS: origin {origin} is not allowed: no CORS header"
    preflight = request.method == "OPTIONS" and request.header("Access-Control-Request-Method") is not None
    credentials = cors.get("allowCredentials") is True
    headers = {"access-control-allow-origin": origin}
    if credentials:
        headers["access-control-allow-credentials"] = "true"
    if _strings(cors.get("exposeHeaders")):
        headers["access-control-expose-headers"] = ",".join(_strings(cors["exposeHeaders"]))
    if preflight:
        methods = _wildcard_echoed(_strings(cors.get("allowMethods")),
                                   request.header("Access-Control-Request-Method"), credentials)
        allow_headers = _wildcard_echoed(_strings(cors.get("allowHeaders")),
                                         request.header("Access-Control-Request-Headers"), credentials)
        if methods:
            headers["access-control-allow-methods"] = methods
        if allow_headers:
            headers["access-control-allow-headers"] = allow_headers
        if cors.get("maxAge") is not None:
            headers["access-control-max-age"] = str(_seconds(cors["maxAge"]))
        return headers, True, f"CORS: preflight from {origin}: Envoy answers 200"
    return headers, False, f"CORS: origin {origin} allowed"


def secret_value(state: ClusterState, namespace: str, name: str, key: str) -> str | None:
    """A Secret's value for ``key`` (stringData as written, data base64-decoded); None when absent."""
    obj = state.others.get(("Secret", f"{namespace}/{name}"))
    if obj is None:
        return None
    string_data = _map(obj.raw.get("stringData"))
    if key in string_data:
        return str(string_data[key])
    data = _map(obj.raw.get("data"))
    if key in data:
        try:
            return base64.b64decode(str(data[key]), validate=False).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            return None
    return None


@dataclass(frozen=True, slots=True)
class _Verdict:
    status: int | None  # None: the filter lets the request through
    outcome: str | None
    why: str
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""


def _basic(state: ClusterState, policy: Policy, request: HTTPRequest) -> _Verdict:
    users = _map(_map(policy.spec.get("basicAuth")).get("users"))
    name = str(users.get("name") or "")
    namespace = str(users.get("namespace") or policy.namespace)
    text = secret_value(state, namespace, name, ".htpasswd") if name else None
    if text is None:
        return _Verdict(500, INVALID_POLICY, f"{policy.label} basicAuth: Secret {namespace}/{name or '?'} (key "
                        ".htpasswd) is missing: the SecurityPolicy is invalid and Envoy Gateway answers 500")
    realm = {"www-authenticate": f'Basic realm="{request.url[:256]}"'}
    authorization = request.header("Authorization")
    if authorization is None:
        return _Verdict(401, UNAUTHORIZED, f"{policy.label} basicAuth: no credentials", realm, BASIC_MISSING)
    if not authorization.startswith("Basic "):
        return _Verdict(401, UNAUTHORIZED, f"{policy.label} basicAuth: not Basic credentials", realm, BASIC_SCHEME)
    try:
        decoded = base64.b64decode(authorization[6:].strip() + "==", validate=False).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        decoded = ""
    user, colon, password = decoded.partition(":")
    if not colon:
        return _Verdict(401, UNAUTHORIZED, f"{policy.label} basicAuth: credentials without user:password", realm,
                        BASIC_FORMAT)
    digest = "{SHA}" + base64.b64encode(hashlib.sha1(password.encode()).digest()).decode()
    for line in text.splitlines():
        stored_user, _, stored = line.strip().partition(":")
        if stored_user == user and stored == digest:
            return _Verdict(None, None, f"{policy.label} basicAuth: user {user!r} authenticated ({{SHA}} in "
                            ".htpasswd)")
    return _Verdict(401, UNAUTHORIZED, f"{policy.label} basicAuth: wrong credentials for {user!r} (Envoy reads only "
                    "{SHA} hashes)", realm, BASIC_INVALID)


UNVERIFIED = "unverified: "  # a step knetsim could not decide and assumed (see _ext_auth)


def _service_answer(state: ClusterState, service: str, port: int, method: str, path: str,
                    headers: dict[str, str], ident: str) -> tuple[int | None, dict[str, str], str]:
    """What a Service's program answers (None: nothing accepts the connection). Envoy reaches the endpoints."""
    svc = state.services.get(service)
    assert svc is not None
    sp = next((p for p in svc.ports if p.port == port), None)
    if sp is None:
        return None, {}, f"Service {service} has no port {port}: the connection fails"
    endpoints: list[tuple[str, str, int]] = []
    for es in state.slices_for(svc):
        es_port = next((p for p in es.ports if p.name == sp.name and p.port), None)
        if es_port is None or es_port.port is None:
            continue
        for e in es.endpoints:
            if e.ready and e.addresses:
                pod = f"{e.target_ref[1]}/{e.target_ref[2]}" if e.target_ref and e.target_ref[0] == "Pod" else ""
                endpoints.append((e.addresses[0], pod, es_port.port))
    endpoints = sorted(set(endpoints))
    if not endpoints:
        return None, {}, f"Service {service} has no ready endpoint: the connection fails"
    address, pod_key, target = endpoints[int.from_bytes(hashlib.sha256(ident.encode()).digest()[:4], "big")
                                        % len(endpoints)]
    pod = state.pods.get(pod_key)
    for container in pod.containers if pod is not None else ():
        program = program_of(container)
        if program is not None and (target, "TCP") in program.ports:
            status, answer_headers = http_status(program, method, path, headers)
            return status, answer_headers, f"{program.name} on {pod_key} answers {status} for {path}"
    return None, {}, f"{UNVERIFIED}{pod_key or address} runs a program knetsim does not know"


def _ext_auth(state: ClusterState, policy: Policy, request: HTTPRequest) -> _Verdict:
    ext = _map(policy.spec.get("extAuth"))
    http = _map(ext.get("http"))
    if not http:
        return _Verdict(None, None, f"{policy.label} extAuth: gRPC authorization is not simulated: let through")
    refs = _maps(http.get("backendRefs")) or ([http["backendRef"]] if isinstance(http.get("backendRef"), dict)
                                               else [])
    ref = refs[0] if refs else {}
    service = f"{ref.get('namespace') or policy.namespace}/{ref.get('name') or '?'}"
    port = _int(ref.get("port"))
    if service not in state.services or port is None:
        return _Verdict(500, INVALID_POLICY, f"{policy.label} extAuth: backend {service}:{port or '?'} does not "
                        "resolve to a Service port: the SecurityPolicy is invalid and Envoy Gateway answers 500")
    override = http.get("pathOverride")
    path = str(override) if isinstance(override, str) and override else \
        (str(http.get("path") or "") + request.path_only) or "/"
    status, answer_headers, why = _service_answer(state, service, port, request.method,
                                                  path if path.startswith("/") else "/" + path, dict(request.headers),
                                                  request.describe())
    if status is None and why.startswith(UNVERIFIED):
        # An auth service whose program knetsim cannot run: its verdict is unknown. The request is followed as if
        # allowed, and the answer says so rather than present a 200 nobody gave.
        return _Verdict(None, None, f"{policy.label} extAuth: {why}: its verdict is unknown, assumed to allow (a "
                        "401 or 403 it answers would reach the client)")
    if status is None:
        if ext.get("failOpen") is True:
            return _Verdict(None, None, f"{policy.label} extAuth: {why}; failOpen lets the request through")
        on_error = _int(ext.get("statusOnError")) or 403
        return _Verdict(on_error, DENIED if on_error == 403 else UNAUTHORIZED if on_error == 401 else DENIED,
                        f"{policy.label} extAuth: {why}: Envoy answers {on_error} (statusOnError)")
    if status == 200:
        return _Verdict(None, None, f"{policy.label} extAuth: {why}: allowed")
    # ext_authz hands the auth service's denial to the client: its status and headers (a WWW-Authenticate).
    return _Verdict(status, UNAUTHORIZED if status == 401 else DENIED,
                    f"{policy.label} extAuth: {why}: Envoy passes the auth service's {status} on",
                    {k.lower(): v for k, v in answer_headers.items()})


def _bytes(limit: Any) -> int | None:
    value = quantity(limit)
    return int(value) if value is not None and value >= 0 else None


def _buffer(policy: Policy, request: HTTPRequest) -> _Verdict | None:
    buffer = _map(policy.spec.get("requestBuffer"))
    limit = _bytes(buffer.get("limit")) if buffer else None
    if limit is None or request.body_size is None:
        return None
    if request.body_size > limit:
        return _Verdict(413, PAYLOAD_TOO_LARGE, f"{policy.label} requestBuffer limit {buffer['limit']}: "
                        f"{request.body_size} bytes is too large", body=TOO_LARGE)
    return _Verdict(None, None, f"{policy.label} requestBuffer limit {buffer['limit']}: {request.body_size} bytes fit")


def _header_match(match: dict[str, Any], request: HTTPRequest) -> bool:
    value = request.header(str(match.get("name") or ""))
    kind = match.get("type") or "Exact"
    if kind == "Distinct":
        hit = value is not None
    elif value is None:
        hit = False
    elif kind == "RegularExpression":
        rx = saferegex.compiled(str(match.get("value") or ""))
        try:
            hit = rx is not None and saferegex.fullmatch(rx, value) is not None
        except saferegex.RegexTimeout:
            hit = False
    else:
        hit = value == str(match.get("value") or "")
    return hit != (match.get("invert") is True)


def _rbac(policy: Policy, request: HTTPRequest, client: str) -> _Verdict:
    authorization = _map(policy.spec.get("authorization"))
    for index, rule in enumerate(_maps(authorization.get("rules"))):
        principal, operation = _map(rule.get("principal")), _map(rule.get("operation"))
        name = rule.get("name") or f"rules[{index}]"
        if principal.get("jwt") or rule.get("cel") or principal.get("clientIPGeoLocations"):
            continue  # JWT claims, CEL and GeoIP are not simulated: such a rule is taken not to match
        cidrs = _strings(principal.get("clientCIDRs"))
        if cidrs and not _in(cidrs, client):
            continue
        headers = _maps(principal.get("headers"))
        if any(request.header(str(h.get("name") or "")) not in _strings(h.get("values")) for h in headers):
            continue
        methods = _strings(operation.get("methods"))
        if methods and request.method not in methods:
            continue
        if not (cidrs or headers or methods):
            continue
        action = rule.get("action")
        if action == "Allow":
            return _Verdict(None, None, f"{policy.label} authorization rule {name}: Allow (client {client})")
        return _Verdict(403, DENIED, f"{policy.label} authorization rule {name}: Deny (client {client})",
                        body=RBAC_DENIED)
    default = authorization.get("defaultAction") or "Deny"
    if default == "Allow":
        return _Verdict(None, None, f"{policy.label} authorization: no rule holds client {client}: defaultAction "
                        "Allow")
    return _Verdict(403, DENIED, f"{policy.label} authorization: no rule holds client {client}: defaultAction "
                    f"{default}", body=RBAC_DENIED)


def _selector_key(selector: dict[str, Any], request: HTTPRequest, client: str) -> str | None:
    """The part of the bucket key this selector contributes (None: the request is not selected)."""
    parts: list[str] = []
    for h in _maps(selector.get("headers")):
        if not _header_match(h, request):
            return None
        if h.get("type") == "Distinct":
            parts.append(f"{str(h.get('name')).lower()}={request.header(str(h.get('name')))}")
    methods = _maps(selector.get("methods"))
    if methods and not any((request.method == m.get("value")) != (m.get("invert") is True) for m in methods):
        return None
    path = _map(selector.get("path"))
    if path and _path_hit(path, request.path_only) == (path.get("invert") is True):
        return None
    source = _map(selector.get("sourceCIDR"))
    if source:
        cidr = str(source.get("value") or "0.0.0.0/0")
        if not _in([cidr], client):
            return None
        parts.append(f"client={client}" if source.get("type") == "Distinct" else f"cidr={cidr}")
    return ",".join(parts)


def _path_hit(path: dict[str, Any], have: str) -> bool:
    value, kind = str(path.get("value") or "/"), path.get("type") or "PathPrefix"
    if kind == "Exact":
        return have == value
    if kind == "RegularExpression":
        rx = saferegex.compiled(value)
        try:
            return rx is not None and saferegex.fullmatch(rx, have) is not None
        except saferegex.RegexTimeout:
            return False
    prefix = value.rstrip("/")
    return have in (value, prefix) or not prefix or have.startswith(prefix + "/")


def _buckets(policy: Policy, request: HTTPRequest, client: str) -> tuple[Bucket, ...]:
    local = _map(_map(policy.spec.get("rateLimit")).get("local"))
    chosen: list[Bucket] = []
    default: Bucket | None = None
    for index, rule in enumerate(_maps(local.get("rules"))):
        limit = _map(rule.get("limit"))
        requests, seconds = _int(limit.get("requests")), UNIT_SECONDS.get(str(limit.get("unit")))
        if requests is None or requests < 0 or seconds is None:
            continue
        label = f"{policy.label} rule {index}"
        selectors = _maps(rule.get("clientSelectors"))
        if not selectors:
            default = default or Bucket(f"{policy.key}#{index}", requests, seconds, label)
            continue
        keys = [_selector_key(s, request, client) for s in selectors]
        if any(k is None for k in keys):
            continue
        chosen.append(Bucket(f"{policy.key}#{index}:" + ";".join(k for k in keys if k), requests, seconds, label))
    if not chosen and default is not None:
        return (default,)
    return tuple(chosen)


def decide(state: ClusterState, gateway: str, listener: str | None, route_kind: str | None, route: str | None,
           rule: int | None, rule_name: str | None, request: HTTPRequest, *, burst: int | None = None,
           read_policies: bool = True) -> Decision | None:
    """Envoy Gateway's filters for a request the route ``route_kind`` ``ns/name`` (rule ``rule``) matched on
    ``listener`` of Gateway ``ns/name``; None when no policy and no CORS filter applies. ``read_policies`` False:
    an implementation that does not read Envoy Gateway's kinds (the rule's CORS filter still applies)."""
    policies = attached(state, gateway, listener, route_kind, route, rule_name) if read_policies else Attached()
    cors_filter = _cors_filter(state, route_kind, route, rule)
    if not policies and cors_filter is None:
        return None
    security = policies.security.spec if policies.security else {}
    client = client_address(request, policies.client)
    steps: list[str] = []
    if policies.client is not None and request.header("X-Forwarded-For"):
        steps.append(f"{policies.client.label} clientIPDetection: the client is {client}")
    cors = cors_filter if cors_filter is not None else (_map(security.get("cors")) or None)
    cors_headers, preflight, cors_step = _cors(cors, request)
    if cors_step and not preflight:
        steps.append(cors_step)
    common = {"client": client, "policies": policies.labels}

    def answered(verdict: _Verdict) -> Decision:
        steps.append(verdict.why)
        return Decision(verdict.status, verdict.outcome, verdict.why, {**cors_headers, **verdict.headers},
                        verdict.body, steps=tuple(steps), **common)

    if preflight:
        source = "the rule's CORS filter" if cors_filter is not None else \
            f"{policies.security.label if policies.security else ''} cors"
        return answered(_Verdict(200, PREFLIGHT, f"{cors_step} ({source})"))
    if policies.security is not None and _map(security.get("extAuth")):
        verdict = _ext_auth(state, policies.security, request)
        if verdict.status is not None:
            return answered(verdict)
        steps.append(verdict.why)
    if policies.security is not None and _map(security.get("basicAuth")):
        verdict = _basic(state, policies.security, request)
        if verdict.status is not None:
            return answered(verdict)
        steps.append(verdict.why)
    if policies.traffic is not None:
        verdict_or_none = _buffer(policies.traffic, request)
        if verdict_or_none is not None and verdict_or_none.status is not None:
            return answered(verdict_or_none)
        if verdict_or_none is not None:
            steps.append(verdict_or_none.why)
    if policies.security is not None and _map(security.get("authorization")):
        verdict = _rbac(policies.security, request, client)
        if verdict.status is not None:
            return answered(verdict)
        steps.append(verdict.why)
    buckets = _buckets(policies.traffic, request, client) if policies.traffic is not None else ()
    if buckets:
        steps.append("local rate limit: " + "; ".join(f"{b.rule} ({b.requests} per {b.seconds}s)" for b in buckets))
    outcome_of_burst = None
    if burst is not None:
        through = min([burst, *(b.requests for b in buckets)])
        outcome_of_burst = (burst, through, 429 if through < burst else 0)
    return Decision(None, None, "; ".join(steps), cors_headers, "", steps=tuple(steps), buckets=buckets,
                    burst=outcome_of_burst, **common)


def rate_limited_headers(bucket: Bucket, remaining: int, reset: int) -> dict[str, str]:
    """The x-ratelimit headers Envoy's local rate limit adds (draft 03, which Envoy Gateway enables)."""
    return {"x-ratelimit-limit": str(bucket.requests), "x-ratelimit-remaining": str(max(remaining, 0)),
            "x-ratelimit-reset": str(max(reset, 0))}


class TokenBuckets:
    """The live listeners' local rate limit: Envoy's token buckets, each refilled to ``requests`` every
    ``seconds`` (on the clock given, so a test can move time)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._tokens: dict[str, tuple[int, float]] = {}  # key → (tokens left, start of the fill interval)

    def take(self, buckets: Iterable[Bucket]) -> tuple[Bucket, int] | None:
        """Take a token from each bucket; when one is empty, take none and say which (and seconds to refill)."""
        now = self._clock()
        state: list[tuple[Bucket, int, float]] = []
        for b in buckets:
            tokens, start = self._tokens.get(b.key, (b.requests, now))
            if now - start >= b.seconds:
                intervals = math.floor((now - start) / b.seconds)
                tokens, start = b.requests, start + intervals * b.seconds
            state.append((b, tokens, start))
        for b, tokens, start in state:
            if tokens <= 0:
                return b, math.ceil(start + b.seconds - now)
        for b, tokens, start in state:
            self._tokens[b.key] = (tokens - 1, start)
        return None
