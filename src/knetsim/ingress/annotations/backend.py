"""How the controller talks to the backend: ``backend-protocol``, ``service-upstream``, ``upstream-hash-by``,
``load-balance``, ``ssl-passthrough``.

* ``backend-protocol`` (HTTP, HTTPS, AUTO_HTTP, GRPC, GRPCS, FCGI; case-insensitive; an invalid
  value keeps HTTP): ``proxy_pass http://`` / ``https://`` / ``$scheme://``, ``grpc_pass grpc://`` /
  ``grpcs://``, ``fastcgi_pass``. A backend that speaks another protocol than the one chosen
  answers the controller with an error, which the client sees as 502.
* ``service-upstream: "true"``: one upstream, the Service's ClusterIP and port (kube-proxy picks the
  pod) instead of the endpoints — session affinity and upstream hashing no longer apply.
* ``upstream-hash-by``: consistent hashing of an nginx variable expression (``$request_uri``,
  ``$remote_addr``, ``$http_x_user``, ``$cookie_id``, text) onto the endpoints (``chash.lua``): the
  same key always reaches the same endpoint. ``-subset`` hashes onto groups of endpoints.
* ``ssl-passthrough``: works only when the controller runs with ``--enable-ssl-passthrough``; then
  TLS for the host is forwarded by SNI to the backend (layer 4) and every other annotation of the
  Ingress is ignored; without the flag the annotation does nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .base import DEFAULT, IGNORED, REJECTED, Context
from .values import VALIDATION, options

PROTOCOLS = ("auto_http", "http", "https", "grpc", "grpcs", "fcgi")
_HASH_BY = re.compile(r"^[A-Za-z0-9\-_${}]*$")
_BALANCE = ("round_robin", "ewma")


@dataclass(frozen=True, slots=True)
class BackendConfig:
    protocol: str = "HTTP"
    service_upstream: bool = False
    hash_by: str = ""
    hash_by_subset: bool = False
    hash_by_subset_size: int = 3
    load_balance: str = ""
    ssl_passthrough: bool = False


def parse(ctx: Context) -> BackendConfig:
    r = ctx.reader
    protocol = r.string("backend-protocol", options(PROTOCOLS))
    if protocol.error == VALIDATION:
        ctx.reported(protocol, DEFAULT, "defaulting to HTTP")
    service_upstream = r.boolean("service-upstream")
    if service_upstream.error == VALIDATION:
        ctx.reported(service_upstream, DEFAULT, "false")
    su = service_upstream.value if service_upstream.ok else (
        ctx.config.service_upstream if service_upstream.error == "missing" else False)
    hash_by = r.string("upstream-hash-by", lambda v: None if _HASH_BY.match(v) else f"value {v} is invalid")
    subset = r.boolean("upstream-hash-by-subset")
    size = r.integer("upstream-hash-by-subset-size")
    hashing = ("", False, 3)
    failed = next((x for x in (hash_by, subset, size) if x.present and not x.ok), None)
    if failed is not None:
        effect = REJECTED if failed.error == VALIDATION else IGNORED
        ctx.reported(failed, effect, "the Ingress is refused" if effect == REJECTED else "no upstream hashing")
    else:
        hashing = (hash_by.value or "", bool(subset.value), size.value or 3)
    balance = r.string("load-balance", options(_BALANCE, case_sensitive=True))
    passthrough_bool = r.boolean("ssl-passthrough")
    if passthrough_bool.error == VALIDATION:
        ctx.reported(passthrough_bool, REJECTED, "the Ingress is refused")
    return BackendConfig(protocol.value.strip().upper() if protocol.ok and protocol.value else "HTTP", bool(su),
                         *hashing, balance.value.strip() if balance.ok and balance.value else "",
                         bool(passthrough_bool.value))


def hash_key(expression: str, variable) -> str:  # type: ignore[no-untyped-def]
    """The value of an nginx variable expression (``$request_uri$host``, ``${cookie_id}-x``): ``variable``
    gives each variable's value ("" when unset)."""
    def value(found: re.Match[str]) -> str:
        return str(variable(found.group(1) or found.group(2)))
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", value, expression)
