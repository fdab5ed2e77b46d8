"""Limits: ``proxy-body-size`` (413), ``limit-rps`` / ``limit-rpm`` / ``limit-connections`` (what a burst gets).

* ``proxy-body-size`` (default: the ConfigMap's ``proxy-body-size``, ``1m``) is
  ``client_max_body_size``: a request whose Content-Length is larger gets 413 Request Entity Too
  Large — nginx checks it when it picks the location, before any redirect, CORS or auth; ``0``
  means no limit. A size the template cannot write (e.g. ``8b``) leaves nginx's own 1m in force.
* ``limit-rps`` / ``limit-rpm`` are ``limit_req zone=... burst=<limit × limit-burst-multiplier (5)>
  nodelay`` per client address, ``limit-connections`` is ``limit_conn ... <n>``: requests over the
  limit get ``limit-req-status-code`` / ``limit-conn-status-code`` (503). A burst of ``n``
  simultaneous requests from one address therefore gets ``min(n, burst + 1)`` through per request
  zone, and ``min(n, limit-connections)`` through the connection limit; addresses in
  ``limit-allowlist`` (``limit-whitelist``) are not limited. Limits are per controller replica.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import DEFAULT, IGNORED, REJECTED, Context, FamilyDropped
from .values import SIZE, VALIDATION, matches, parse_cidrs, parse_size, valid_cidrs


@dataclass(frozen=True, slots=True)
class LimitsConfig:
    body_size: str = "1m"
    rps: int = 0
    rpm: int = 0
    connections: int = 0
    burst_multiplier: int = 5
    allowlist: tuple[str, ...] = ()

    @property
    def max_body_bytes(self) -> int | None:
        """The client_max_body_size in bytes; None for no limit."""
        size = parse_size(self.body_size)
        if size is None:
            size = 1024 * 1024  # not written by the template: nginx's own default, 1m
        return None if size == 0 else size

    @property
    def rate_limited(self) -> bool:
        return bool(self.rps or self.rpm or self.connections)


def parse(ctx: Context) -> LimitsConfig:
    r = ctx.reader
    body = r.string("proxy-body-size", matches(SIZE, remove_space=True))
    if body.error == VALIDATION:
        ctx.reported(body, DEFAULT, f"the ConfigMap's proxy-body-size ({ctx.config.proxy_body_size}) applies")
    body_size = body.value if body.ok and body.value else ctx.config.proxy_body_size
    values: dict[str, int] = {}
    try:
        for name in ("limit-rpm", "limit-rps", "limit-connections"):
            read = r.integer(name)
            if read.error == VALIDATION:
                ctx.reported(read, REJECTED, "the Ingress is refused")
                raise FamilyDropped()
            values[name] = read.value or 0 if read.ok else 0
        multiplier = r.integer("limit-burst-multiplier")
        allowlist = r.string("limit-allowlist", valid_cidrs, ("limit-whitelist",))
        if allowlist.error == VALIDATION:
            ctx.reported(allowlist, REJECTED, "the Ingress is refused")
            raise FamilyDropped()
        cidrs = parse_cidrs(allowlist.value or "") if allowlist.ok else ()
        if cidrs is None:
            ctx.reported(allowlist, IGNORED, "no rate limit")
            raise FamilyDropped()
    except FamilyDropped:
        return LimitsConfig(body_size)
    return LimitsConfig(body_size, values["limit-rps"], values["limit-rpm"], values["limit-connections"],
                        multiplier.value if multiplier.ok and multiplier.value is not None else 5, cidrs)


@dataclass(frozen=True, slots=True)
class Burst:
    requests: int
    allowed: int
    rejected: int
    status: int  # what the rejected ones get
    why: str


def burst(config: LimitsConfig, requests: int, req_status: int, conn_status: int, exempt: bool) -> Burst:
    """What ``requests`` simultaneous requests from one address get from this location's limits."""
    if exempt or not config.rate_limited:
        why = "the client address is in limit-allowlist" if exempt else "no rate limit"
        return Burst(requests, requests, 0, 0, why)
    allowed = requests
    reasons = []
    status = 0
    if config.connections:
        if config.connections < allowed:
            allowed, status = config.connections, conn_status
        reasons.append(f"limit-connections {config.connections}")
    for name, limit in (("limit-rps", config.rps), ("limit-rpm", config.rpm)):
        if limit:
            burst_size = limit * config.burst_multiplier
            if burst_size + 1 < allowed:
                allowed, status = burst_size + 1, req_status
            reasons.append(f"{name} {limit} (burst {burst_size}, nodelay: {burst_size + 1} at once)")
    return Burst(requests, allowed, requests - allowed, status if allowed < requests else 0, "; ".join(reasons))
