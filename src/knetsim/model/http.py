"""One HTTP request and what a client sees of the answer: shared by Ingress and Gateway API routing.

Both ``knetsim.ingress`` and ``knetsim.gateway`` answer "which backend serves this HTTP
request"; they take the same ``HTTPRequest`` and reduce their detailed results to the same
``RouteAnswer``, so a migration check can send one request set through both and compare.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

SCHEME_PORTS = {"http": 80, "https": 443}
# The client outside the cluster that traces and route requests come from by default (TEST-NET-3).
EXTERNAL_CLIENT = "203.0.113.10"


def plain(value: Any) -> Any:
    """A result dataclass as the JSON-able value ``-o json`` prints (fields in declaration order)."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def _elements(path: str) -> list[str]:
    return [e for e in path.split("/") if e]


def exact_mismatch_reason(rule_path: str, request_path: str) -> str:
    """Why an Exact path (Ingress and HTTPRoute alike) does not match, in the docs' words."""
    if request_path.rstrip("/") == rule_path.rstrip("/"):
        return f"Exact {rule_path} does not match {request_path}: the trailing slash counts"
    if request_path.lower() == rule_path.lower():
        return f"Exact {rule_path} does not match {request_path}: matching is case-sensitive"
    return f"Exact {rule_path} requires the whole path to equal it"


def prefix_mismatch_reason(label: str, rule_path: str, request_path: str) -> str:
    """Why an element-wise prefix (Ingress Prefix, HTTPRoute PathPrefix: ``label``) does not match."""
    want, have = _elements(rule_path), _elements(request_path)
    for i, element in enumerate(want):
        if i >= len(have):
            return f"{label} {rule_path} has more elements than {request_path}"
        if have[i] != element:
            if have[i].startswith(element):
                return (f"{label} {rule_path} does not match {request_path}: element {have[i]!r} only starts "
                        f"with {element!r} (matching is by whole path elements, not string prefix)")
            if have[i].lower() == element.lower():
                return f"{label} {rule_path} does not match {request_path}: matching is case-sensitive"
            return f"{label} {rule_path} does not match {request_path}: element {i + 1} is {have[i]!r}, not {element!r}"
    return f"{label} {rule_path} does not match {request_path}"


class HTTPRequestError(ValueError):
    """A request that cannot be sent as written (bad path, scheme, header, port)."""


def parse_header(text: str) -> tuple[str, str]:
    """``'Name: value'`` → ``("Name", "value")``, as curl's ``-H`` reads it."""
    name, sep, value = text.partition(":")
    name = name.strip()
    if not sep or not name or any(c.isspace() for c in name):
        raise HTTPRequestError(f"header {text!r} is not of the form 'Name: value'")
    return name, value.strip()


@dataclass(frozen=True, slots=True)
class HTTPRequest:
    host: str
    path: str = "/"  # as sent: path, then ?query
    method: str = "GET"
    scheme: str = "http"
    port: int | None = None  # None: the scheme's port (80 / 443)
    headers: tuple[tuple[str, str], ...] = ()
    client_ip: str | None = None  # the address the request comes from (None: the simulation's external client)
    body_size: int | None = None  # Content-Length of the request body (None: no body)

    def __post_init__(self) -> None:
        if self.scheme not in SCHEME_PORTS:
            raise HTTPRequestError(f"scheme {self.scheme!r} is not http or https")
        if not self.path.startswith("/"):
            raise HTTPRequestError(f"request path {self.path!r} must start with '/'")
        if self.port is not None and not 1 <= self.port <= 65535:
            raise HTTPRequestError(f"port {self.port} must be between 1 and 65535, inclusive")
        if not self.method or not self.method.isalpha():
            raise HTTPRequestError(f"method {self.method!r} is not an HTTP method")
        if self.body_size is not None and self.body_size < 0:
            raise HTTPRequestError(f"body size {self.body_size} must not be negative")
        if self.client_ip is not None:
            try:
                ipaddress.ip_address(self.client_ip)
            except ValueError:
                raise HTTPRequestError(f"client address {self.client_ip!r} is not an IP address") from None

    @property
    def effective_port(self) -> int:
        return self.port if self.port is not None else SCHEME_PORTS[self.scheme]

    @property
    def path_only(self) -> str:
        return self.path.split("#", 1)[0].split("?", 1)[0]

    @property
    def query(self) -> str:
        rest = self.path.split("#", 1)[0]
        return rest.split("?", 1)[1] if "?" in rest else ""

    def header(self, name: str) -> str | None:
        """The first value of a header (names compare case-insensitively)."""
        lower = name.lower()
        return next((v for n, v in self.headers if n.lower() == lower), None)

    @property
    def url(self) -> str:
        default = self.port is None or self.port == SCHEME_PORTS[self.scheme]
        return f"{self.scheme}://{self.host}{'' if default else f':{self.port}'}{self.path}"

    def cookie(self, name: str) -> str | None:
        """A cookie of the Cookie header(s), as a server reads it."""
        for n, v in self.headers:
            if n.lower() == "cookie":
                for part in v.split(";"):
                    key, sep, value = part.strip().partition("=")
                    if sep and key == name:
                        return value
        return None

    def describe(self) -> str:
        """The request as one line: method, URL, and what the Ingress annotations read from it."""
        text = f"{self.method} {self.url}"
        extras = [f"{n}: {v}" for n, v in self.headers]
        if self.client_ip:
            extras.append(f"from {self.client_ip}")
        if self.body_size is not None:
            extras.append(f"body {self.body_size} B")
        return text + (f" [{', '.join(extras)}]" if extras else "")

    def to_dict(self) -> dict[str, Any]:
        out = {"method": self.method, "scheme": self.scheme, "host": self.host, "port": self.effective_port,
               "path": self.path, "headers": {n.lower(): v for n, v in self.headers}}
        if self.client_ip is not None:
            out["client_ip"] = self.client_ip
        if self.body_size is not None:
            out["body_size"] = self.body_size
        return out


@dataclass(frozen=True, slots=True)
class RouteAnswer:
    """What a client observes of one routing decision: who answered, with which status, redirected where."""

    status: int | None  # None: a backend answers (proxied); else the proxy's own status (404, 500, 503, 30x)
    backend: str | None  # "namespace/service:port" the request is proxied to
    location: str | None  # the Location of a redirect
    upstream_path: str | None  # the path the backend receives (after rewrites)
    explanation: str
    # Response headers the proxy sets that a client relies on (CORS, WWW-Authenticate), lower-case names; compared
    # when both sides report them.
    headers: dict[str, str] = field(default_factory=dict)
    # Request headers the backend receives that the proxy sets (Host, X-Forwarded-Prefix), lower-case names.
    upstream_headers: dict[str, str] = field(default_factory=dict)
    # A weighted split (canary weights, backendRef weights): backend → share of requests. When both sides report
    # one, the shares are compared instead of the backend this one request drew.
    shares: dict[str, float] = field(default_factory=dict)
    # For a burst of requests from one client: (requests, how many get through, what the others get).
    burst: tuple[int, int, int] | None = None
    # On https, the certificate the client is served: "namespace/secret" as the configuration names it, or "fake"
    # (ingress-nginx's own, for a host no Ingress lists under tls). Compared when both sides report one.
    certificate: str | None = None

    def differences(self, other: RouteAnswer) -> list[str]:
        """What differs, in words; empty when a client sees the same."""
        out = []
        if self.status != other.status:
            out.append("status")
        if (self.shares or other.shares) and self.backend is not None and other.backend is not None:
            # A weighted split on either side: the shares are compared, a single backend being all of them.
            if self._split() != other._split():
                out.append("weights")
        elif self.backend != other.backend:
            out.append("backend")
        if _normal_url(self.location) != _normal_url(other.location):
            out.append("location")
        if self.upstream_path is not None and other.upstream_path is not None and \
                self.upstream_path != other.upstream_path:
            out.append("path")
        for name in sorted(set(self.headers) | set(other.headers)):
            if self.headers.get(name) != other.headers.get(name):
                out.append(f"header {name}")
        if self.burst is not None and other.burst is not None and self.burst != other.burst:
            out.append("burst")
        if self.certificate is not None and other.certificate is not None and self.certificate != other.certificate:
            out.append("certificate")
        if self.upstream_headers and other.upstream_headers:  # both sides say what the backend receives
            for name in sorted(set(self.upstream_headers) | set(other.upstream_headers)):
                if self.upstream_headers.get(name) != other.upstream_headers.get(name):
                    out.append(f"upstream header {name}")
        return out

    def _split(self) -> dict[str, float]:
        shares = self.shares or ({self.backend: 1.0} if self.backend else {})
        return {k: round(v, 4) for k, v in shares.items() if v}

    def same_as(self, other: RouteAnswer) -> bool:
        """Same status, backend (or weights) and redirect; when both proxy, the same path and the same proxy-set
        request headers reach the backend; the same CORS and authentication response headers."""
        return not self.differences(other)

    def describe(self) -> str:
        if self.burst is not None:
            n, through, status = self.burst
            return f"{through} of {n} at once" + (f", then {status}" if through < n else "")
        if self.status is None and self.backend is None:
            return "nothing proxied or answered"
        if self.location is not None:
            return f"{self.status} → {self.location}"
        if self.status is not None:
            return f"{self.status}" + (f" (backend {self.backend})" if self.backend else "")
        if self.shares:
            split = ", ".join(f"{b} {share:.0%}" for b, share in sorted(self.shares.items()) if share)
            return f"→ {split}" + (f" {self.upstream_path}" if self.upstream_path else "")
        return f"→ {self.backend}" + (f" {self.upstream_path}" if self.upstream_path else "")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status, "backend": self.backend, "location": self.location,
                               "upstream_path": self.upstream_path, "explanation": self.explanation}
        if self.headers:
            out["headers"] = dict(sorted(self.headers.items()))
        if self.upstream_headers:
            out["upstream_headers"] = dict(sorted(self.upstream_headers.items()))
        if self.shares:
            out["shares"] = dict(sorted(self.shares.items()))
        if self.burst is not None:
            out["burst"] = {"requests": self.burst[0], "through": self.burst[1], "others_get": self.burst[2]}
        if self.certificate is not None:
            out["certificate"] = self.certificate
        return out


# Response headers whose presence on one side only is a difference a client notices.
COMPARED_RESPONSE_HEADERS = ("access-control-allow-origin", "access-control-allow-credentials",
                             "access-control-allow-methods", "access-control-allow-headers",
                             "access-control-expose-headers", "access-control-max-age", "www-authenticate")


def _normal_url(url: str | None) -> str | None:
    """A Location compared as a browser follows it: ``https://host`` and ``https://host/`` are the same."""
    if url is None:
        return None
    scheme, sep, rest = url.partition("://")
    authority, slash, tail = rest.partition("/")
    default = {"http": ":80", "https": ":443"}.get(scheme.lower())
    if sep and default and authority.endswith(default):
        rest = authority[: -len(default)] + slash + tail  # http://host:80/p is http://host/p
    if sep and "/" not in rest.split("?", 1)[0]:
        host, q, query = rest.partition("?")
        return f"{scheme}://{host}/" + (f"?{query}" if q else "")
    return f"{scheme}://{rest}" if sep else url
