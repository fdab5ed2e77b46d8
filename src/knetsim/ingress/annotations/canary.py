"""The canary family: an Ingress marked ``canary: "true"`` sends part of another Ingress's traffic elsewhere.

Parsing is ingress-nginx's ``canary`` parser: every invalid value keeps its default (weight 0,
weight-total 100, no header, no cookie); canary settings on an Ingress not marked canary make the
parser fail, and the family is dropped: the Ingress is an ordinary one.

Where it applies (``controller.go`` ``mergeAlternativeBackends``): a canary Ingress creates no
server and no location. Each of its paths is matched to a location of the same host with the same
path and pathType; the canary's backend becomes the *alternative backend* of that location's
backend (``namespace-service-port``) — so it applies wherever that backend serves, on every host
and path using it. Only the first alternative counts (``balancer.lua``: "TODO: support traffic
shaping for n > 1"). A canary whose path matches no location is dropped.

The decision (``balancer.lua`` ``route_to_alternative_balancer``, in Lua), in order:

1. ``canary-by-header`` present in the request: with ``-value``, equal → canary (else fall
   through); with ``-pattern``, a regex match anywhere → canary (else fall through; an error →
   primary); without either, ``always`` → canary, ``never`` → primary, anything else falls through;
2. ``canary-by-cookie``: ``always`` → canary, ``never`` → primary, else fall through;
3. ``canary-weight``: ``math.random(total) <= weight`` (total is ``canary-weight-total`` when above
   100, else 100). Lua draws at random; knetsim draws from a hash of the request, so the same
   request always gets the same answer and the share over many requests is ``weight/total``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from ...model import saferegex
from .base import DEFAULT, IGNORED, Context
from .values import BASIC_CHARS, IS_VALID_REGEX, PREFIX, VALIDATION, matches


@dataclass(frozen=True, slots=True)
class CanaryConfig:
    enabled: bool = False
    weight: int = 0
    weight_total: int = 100
    header: str = ""
    header_value: str = ""
    header_pattern: str = ""
    cookie: str = ""

    @property
    def total(self) -> int:
        return self.weight_total if self.weight_total > 100 else 100


@dataclass(frozen=True, slots=True)
class Decision:
    canary: bool
    by: str  # header | cookie | weight
    reason: str
    share: float | None = None  # for a weight decision: the canary's share of requests


def parse(ctx: Context) -> CanaryConfig:
    r = ctx.reader
    values: dict[str, object] = {}
    for name, attr, kind in (("canary", "enabled", "bool"), ("canary-weight", "weight", "int"),
                             ("canary-weight-total", "weight_total", "int")):
        read = r.boolean(name) if kind == "bool" else r.integer(name)
        if read.ok:
            values[attr] = read.value
        elif read.error == VALIDATION:
            ctx.reported(read, DEFAULT, "the default is kept")
    for name, attr, pattern, strip in (("canary-by-header", "header", BASIC_CHARS, True),
                                       ("canary-by-header-value", "header_value", BASIC_CHARS, True),
                                       ("canary-by-header-pattern", "header_pattern", IS_VALID_REGEX, False),
                                       ("canary-by-cookie", "cookie", BASIC_CHARS, True)):
        read = r.string(name, matches(pattern, remove_space=strip))
        if read.ok:
            values[attr] = read.value
        elif read.error == VALIDATION:
            ctx.reported(read, DEFAULT, "ignored")
    config = CanaryConfig(**values)  # type: ignore[arg-type]
    if not config.enabled and (config.weight > 0 or config.header or config.header_value or config.cookie
                               or config.header_pattern):
        ctx.report(f"{PREFIX}canary", IGNORED,
                   f"canary settings without {PREFIX}canary: \"true\" (\"configured but not "
                   "enabled\"): the canary annotations are ignored and this Ingress is an ordinary one")
        return CanaryConfig()
    return config


def roll(identity: str, total: int) -> int:
    """A number in 1..total drawn from the request (Lua's ``math.random(total)``, made repeatable)."""
    return int.from_bytes(hashlib.sha256(identity.encode()).digest()[:8], "big") % total + 1


def decide(config: CanaryConfig, header: Callable[[str], str | None], cookie: Callable[[str], str | None],
           identity: str) -> Decision:
    """Does this request go to the canary? ``header``/``cookie`` look values up by name."""
    if config.header:
        value = header(config.header)
        if value is not None:
            name = config.header
            if config.header_value:
                if value == config.header_value:
                    return Decision(True, "header", f"header {name}: {value} equals canary-by-header-value")
            elif config.header_pattern:
                pattern = saferegex.compiled(config.header_pattern)
                try:
                    hit = pattern is not None and saferegex.search(pattern, value) is not None
                except saferegex.RegexTimeout:
                    hit = False
                if pattern is None:
                    return Decision(False, "header", f"canary-by-header-pattern {config.header_pattern!r} does not "
                                                     "compile: the request stays on the primary backend")
                if hit:
                    return Decision(True, "header", f"header {name}: {value} matches canary-by-header-pattern "
                                                    f"{config.header_pattern!r}")
            elif value == "always":
                return Decision(True, "header", f"header {name}: always")
            elif value == "never":
                return Decision(False, "header", f"header {name}: never")
    if config.cookie:
        value = cookie(config.cookie)
        if value == "always":
            return Decision(True, "cookie", f"cookie {config.cookie}=always")
        if value == "never":
            return Decision(False, "cookie", f"cookie {config.cookie}=never")
    total = config.total
    share = min(max(config.weight, 0), total) / total
    drawn = roll(identity, total)
    if drawn <= config.weight:
        return Decision(True, "weight", f"canary-weight {config.weight}/{total}: this request drew {drawn}", share)
    return Decision(False, "weight", f"canary-weight {config.weight}/{total}: this request drew {drawn}", share)
