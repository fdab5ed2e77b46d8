"""Session affinity: ``affinity: cookie`` and the ``session-cookie-*`` attributes (``sticky.lua``, in Lua).

Parsing is ingress-nginx's ``sessionaffinity`` parser: only ``cookie`` is a type; the cookie is
``INGRESSCOOKIE`` unless named; ``expires``/``max-age`` must be whole seconds, else dropped.

Where it applies: affinity belongs to the *backend* (``namespace-service-port``): the first
Ingress (in the controller's order) with a path to that backend sets it, and every location
proxying to it is sticky; the cookie is only *set* on the paths of Ingresses that ask for it.
With ``service-upstream`` there is one upstream (the ClusterIP): no affinity.

Behaviour: a request carrying ``<name>=<key>|<backend key>`` for an endpoint that still exists goes
to it; otherwise an endpoint is picked and the response sets ``Set-Cookie: <name>=<key>|<backend
key>; [Expires=..; ][Max-Age=..; ][Domain=..; ]Path=<session-cookie-path, else the Ingress path>;
[Secure; ]HttpOnly[; SameSite=..]`` (Secure on https unless set otherwise). The backend key is
``md5(md5(name) .. name)`` of the backend name, as the balancer computes it. ingress-nginx draws the
endpoint key at random and maps it through a hash ring; knetsim uses the md5 of the endpoint's
``ip:port`` — the observable behaviour (a cookie pins an endpoint while it exists) is the same.
A request pinned to the primary backend stays off a canary, and one pinned to the canary stays on it
(``affinity-canary-behavior: sticky``, the default).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from .base import DEFAULT, Context
from .values import VALIDATION, options

DEFAULT_COOKIE = "INGRESSCOOKIE"
_SECONDS = re.compile(r"(^0|-?[1-9]\d*$)")


@dataclass(frozen=True, slots=True)
class AffinityConfig:
    type: str = ""  # "cookie" or "" (none)
    mode: str = ""  # balanced | persistent
    canary_behavior: str = ""  # sticky | legacy
    cookie_name: str = DEFAULT_COOKIE
    cookie_path: str = ""
    cookie_domain: str = ""
    cookie_expires: str = ""
    cookie_max_age: str = ""
    cookie_samesite: str = ""
    cookie_secure: bool | None = None
    conditional_samesite_none: bool = False

    @property
    def enabled(self) -> bool:
        return self.type == "cookie"


def parse(ctx: Context) -> AffinityConfig:
    r = ctx.reader
    kind = r.string("affinity", options(("cookie",)))
    mode = r.string("affinity-mode", options(("balanced", "persistent")))
    behavior = r.string("affinity-canary-behavior", options(("sticky", "legacy")))
    for read in (kind, mode, behavior):
        if read.error == VALIDATION:
            ctx.reported(read, DEFAULT, "ignored")
    if not kind.ok or kind.value != "cookie":
        return AffinityConfig("", mode.value or "" if mode.ok else "", behavior.value or "" if behavior.ok else "")

    def text(name: str) -> str:
        read = r.string(name)
        return read.value or "" if read.ok else ""

    name = text("session-cookie-name") or DEFAULT_COOKIE
    expires, max_age = text("session-cookie-expires"), text("session-cookie-max-age")
    secure = r.boolean("session-cookie-secure")
    conditional = r.boolean("session-cookie-conditional-samesite-none")
    return AffinityConfig(
        "cookie", mode.value or "" if mode.ok else "", behavior.value or "" if behavior.ok else "", name,
        text("session-cookie-path"), text("session-cookie-domain"),
        expires if _SECONDS.search(expires) else "", max_age if _SECONDS.search(max_age) else "",
        text("session-cookie-samesite"), secure.value if secure.ok and secure.value else None,
        bool(conditional.value) if conditional.ok else False)


def backend_key(upstream: str) -> str:
    return hashlib.md5((hashlib.md5(upstream.encode()).hexdigest() + upstream).encode()).hexdigest()


def endpoint_key(endpoint: str) -> str:
    return hashlib.md5(endpoint.encode()).hexdigest()


def pinned(config: AffinityConfig, cookie_value: str | None, upstream: str, endpoints: list[str]) -> str | None:
    """The endpoint a request's affinity cookie pins, if it is for this backend and the endpoint exists."""
    if not cookie_value:
        return None
    key, _, backend = cookie_value.partition("|")
    if backend and backend != backend_key(upstream):
        return None
    return next((e for e in endpoints if endpoint_key(e) == key), None)


def is_affinitized(cookie_value: str | None, upstream: str) -> bool:
    """``is_affinitized``: the cookie's backend key is this backend's."""
    return bool(cookie_value) and cookie_value.partition("|")[2] == backend_key(upstream)


def set_cookie(config: AffinityConfig, endpoint: str, upstream: str, location_path: str, https: bool,
               user_agent: str = "") -> str:
    parts = [f"{config.cookie_name}={endpoint_key(endpoint)}|{backend_key(upstream)}"]
    if config.cookie_expires:
        parts.append(f"Expires=<{config.cookie_expires} s after the response>")
    if config.cookie_max_age:
        parts.append(f"Max-Age={config.cookie_max_age}")
    if config.cookie_domain:
        parts.append(f"Domain={config.cookie_domain}")
    parts.append(f"Path={config.cookie_path or location_path}")
    secure = config.cookie_secure if config.cookie_secure is not None else https
    if secure:
        parts.append("Secure")
    parts.append("HttpOnly")
    samesite = config.cookie_samesite
    if samesite and not (config.conditional_samesite_none and samesite == "None"
                         and _samesite_none_incompatible(user_agent)):
        parts.append(f"SameSite={samesite}")
    return "; ".join(parts)


def _samesite_none_incompatible(user_agent: str) -> bool:
    # util/same_site.lua: Chrome 51-66 and Safari/embedded browsers on iOS 12 and macOS 10.14 mishandle SameSite=None.
    return bool(re.search(r"Chrom(e|ium)/(5[1-9]|6[0-6])\.", user_agent)
                or re.search(r"\(iP.+; CPU .*OS 12[_\d]*.*\) AppleWebKit/", user_agent)
                or re.search(r"\(Macintosh;.*Mac OS X 10_14[_\d]*.*\) AppleWebKit/", user_agent))
