"""The ingress-nginx controller's own configuration: its ConfigMap, with the controller's defaults.

ingress-nginx reads one ConfigMap (``--configmap=NAMESPACE/NAME``; kind's manifest passes
``$(POD_NAMESPACE)/ingress-nginx-controller``, which knetsim also assumes when the flag is absent)
and merges it over ``config.NewDefault()`` (``internal/ingress/controller/config``). Only the keys
that change what a client sees are read here; a value the controller would refuse keeps the
default and is reported, as the controller logs it and carries on.

Defaults that matter for the simulation (v1.13): ``use-forwarded-headers: false`` (the client
address is the TCP peer's, X-Forwarded-For is ignored), ``allow-snippet-annotations: false``
(since v1.9), ``annotations-risk-level: High`` (Critical annotations — the snippets — refuse the
Ingress, since v1.12), ``ssl-redirect: true``, ``http-redirect-code: 308``, ``proxy-body-size:
1m``, ``hsts: true`` (``max-age=31536000; includeSubDomains``), ``limit-req-status-code`` and
``limit-conn-status-code`` 503, ``server-tokens: false`` (no ``Server`` header at all: the template
clears it with ``more_clear_headers Server``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..cluster.state import ClusterState
from .annotations.catalog import HIGH, RISK_NAMES
from .annotations.values import parse_bool, parse_cidrs, parse_int
from .controllers import IngressController

DEFAULT_CONFIGMAP = "ingress-nginx-controller"
_REDIRECT_CODES = (301, 302, 307, 308)


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    source: str | None = None  # "namespace/name" of the ConfigMap read, None when there is none
    use_forwarded_headers: bool = False
    compute_full_forwarded_for: bool = False
    forwarded_for_header: str = "X-Forwarded-For"
    proxy_real_ip_cidr: tuple[str, ...] = ("0.0.0.0/0",)
    allow_snippet_annotations: bool = False
    annotations_risk_level: int = HIGH
    allow_cross_namespace_resources: bool = False
    ssl_redirect: bool = True
    force_ssl_redirect: bool = False
    preserve_trailing_slash: bool = False
    http_redirect_code: int = 308
    hsts: bool = True
    hsts_max_age: str = "31536000"
    hsts_include_subdomains: bool = True
    hsts_preload: bool = False
    proxy_body_size: str = "1m"
    whitelist_source_range: tuple[str, ...] = ()
    denylist_source_range: tuple[str, ...] = ()
    block_cidrs: tuple[str, ...] = ()
    custom_http_errors: tuple[int, ...] = ()
    limit_req_status_code: int = 503
    limit_conn_status_code: int = 503
    no_auth_locations: tuple[str, ...] = ("/.well-known/acme-challenge",)
    no_tls_redirect_locations: tuple[str, ...] = ("/.well-known/acme-challenge",)
    server_tokens: bool = False
    use_http2: bool = True
    # Since v1.12 on by default: Exact/Prefix paths with other characters are refused (webhook.py).
    strict_validate_path_type: bool = True
    service_upstream: bool = False
    problems: tuple[str, ...] = field(default=())

    @property
    def hsts_header(self) -> str | None:
        if not self.hsts:
            return None
        value = f"max-age={self.hsts_max_age}"
        if self.hsts_include_subdomains:
            value += "; includeSubDomains"
        if self.hsts_preload:
            value += "; preload"
        return value


DEFAULT = ControllerConfig()


def configmap_name(controller: IngressController | None) -> str | None:
    """``namespace/name`` of the ConfigMap a controller reads."""
    if controller is None or not controller.pods:
        return None
    namespace = (controller.pod or controller.pods[0]).pod.split("/", 1)[0]
    flag = controller.flag("configmap").replace("$(POD_NAMESPACE)", namespace)
    if flag:
        return flag if "/" in flag else f"{namespace}/{flag}"
    return f"{namespace}/{DEFAULT_CONFIGMAP}"


def _split(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def read(data: Mapping[str, str], source: str | None = None) -> ControllerConfig:
    """The controller configuration a ConfigMap's ``data`` gives (ingress-nginx ``ReadConfig``)."""
    values: dict[str, object] = {"source": source}
    problems: list[str] = []

    def boolean(key: str, attr: str) -> None:
        if key in data:
            parsed = parse_bool(str(data[key]).strip())
            if parsed is None:
                problems.append(f"{key}: {data[key]!r} is not a boolean; the default is kept")
            else:
                values[attr] = parsed

    def integer(key: str, attr: str, allowed: tuple[int, ...] = ()) -> None:
        if key in data:
            parsed = parse_int(str(data[key]).strip())
            if parsed is None or (allowed and parsed not in allowed):
                problems.append(f"{key}: {data[key]!r} is not valid; the default is kept")
            else:
                values[attr] = parsed

    for key, attr in (("use-forwarded-headers", "use_forwarded_headers"),
                      ("compute-full-forwarded-for", "compute_full_forwarded_for"),
                      ("allow-snippet-annotations", "allow_snippet_annotations"),
                      ("allow-cross-namespace-resources", "allow_cross_namespace_resources"),
                      ("ssl-redirect", "ssl_redirect"), ("force-ssl-redirect", "force_ssl_redirect"),
                      ("preserve-trailing-slash", "preserve_trailing_slash"), ("hsts", "hsts"),
                      ("hsts-include-subdomains", "hsts_include_subdomains"), ("hsts-preload", "hsts_preload"),
                      ("server-tokens", "server_tokens"), ("use-http2", "use_http2"),
                      ("service-upstream", "service_upstream"),
                      ("strict-validate-path-type", "strict_validate_path_type")):
        boolean(key, attr)
    integer("http-redirect-code", "http_redirect_code", _REDIRECT_CODES)
    integer("limit-req-status-code", "limit_req_status_code")
    integer("limit-conn-status-code", "limit_conn_status_code")
    if "annotations-risk-level" in data:
        # StringRiskToRisk: anything but critical/high/medium counts as Low.
        values["annotations_risk_level"] = RISK_NAMES.get(str(data["annotations-risk-level"]).strip().lower(), 0)
    if "forwarded-for-header" in data and str(data["forwarded-for-header"]).strip():
        values["forwarded_for_header"] = str(data["forwarded-for-header"]).strip()
    if "hsts-max-age" in data:
        values["hsts_max_age"] = str(data["hsts-max-age"]).strip()
    if "proxy-body-size" in data:
        values["proxy_body_size"] = str(data["proxy-body-size"]).strip()
    for key, attr in (("whitelist-source-range", "whitelist_source_range"),
                      ("denylist-source-range", "denylist_source_range"), ("block-cidrs", "block_cidrs"),
                      ("proxy-real-ip-cidr", "proxy_real_ip_cidr")):
        if key in data:
            entries = _split(str(data[key]))
            if parse_cidrs(",".join(entries)) is None:
                problems.append(f"{key}: {data[key]!r} holds an entry that is no address or network")
            values[attr] = entries
    if "custom-http-errors" in data:
        codes = []
        for item in _split(str(data["custom-http-errors"])):
            code = parse_int(item)
            if code is None:
                problems.append(f"custom-http-errors: {item!r} is not a number; skipped")
            else:
                codes.append(code)
        values["custom_http_errors"] = tuple(codes)
    for key, attr in (("no-auth-locations", "no_auth_locations"),
                      ("no-tls-redirect-locations", "no_tls_redirect_locations")):
        if key in data:
            values[attr] = _split(str(data[key]))
    values["problems"] = tuple(problems)
    return ControllerConfig(**values)  # type: ignore[arg-type]


def controller_config(state: ClusterState, controller: IngressController | None) -> ControllerConfig:
    """The configuration of ``controller``: its ConfigMap from the state (defaults when it has none)."""
    key = configmap_name(controller)
    if key is None:
        return DEFAULT
    obj = state.others.get(("ConfigMap", key))
    if obj is None:
        return DEFAULT
    data = obj.raw.get("data") or {}
    return read({str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}, key)
