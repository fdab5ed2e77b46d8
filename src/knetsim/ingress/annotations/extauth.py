"""External authentication: ``auth-url`` (a subrequest that allows or denies), ``auth-signin`` and friends.

Parsing is ingress-nginx's ``authreq`` parser: ``auth-url`` must be an absolute URL with a host
(else the location is denied: 503); an invalid ``auth-method`` or ``auth-response-headers`` denies
too; an invalid ``auth-cache-duration``, ``auth-request-redirect`` or ``auth-always-set-cookie``
makes the parser fail, and the whole family is dropped — the location is *not* protected.

Behaviour (the template's ``auth_request``): before proxying, nginx sends a subrequest to the
auth URL — method ``auth-method`` (GET by default), no body, the client's headers plus
``X-Original-URL``, ``X-Original-Method``, ``X-Sent-From: nginx-ingress-controller``,
``X-Real-IP``, ``X-Forwarded-For``, ``X-Auth-Request-Redirect``, and ``Host`` the auth URL's host.
A 2xx answer lets the request through (``auth-response-headers`` copied from it to the backend
request); 401 and 403 are returned to the client (401 keeps the auth service's
``WWW-Authenticate``); anything else, or an auth service that cannot be reached, is a 500.
With ``auth-signin``, a 401 becomes a 302 to the sign-in URL with ``rd=<the original URL>``
(``auth-signin-redirect-param`` renames ``rd``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from .base import DENIED, IGNORED, REJECTED, Context, FamilyDropped
from .values import (
    HEADERS_VARIABLE,
    MISSING,
    URL_IS_VALID,
    URL_WITH_NGINX_VARIABLE,
    VALIDATION,
    matches,
    valid_bool,
)

_METHODS = re.compile("(GET|HEAD|POST|PUT|PATCH|DELETE|CONNECT|OPTIONS|TRACE)")
_HEADER = re.compile(r"^[a-zA-Z\d\-_]+$")
_DURATION = re.compile(r"^\d+(ms|s|m|h|d|w|M|y)$")
_CODE = re.compile(r"^\d{3}$")


@dataclass(frozen=True, slots=True)
class ExtAuthConfig:
    url: str
    host: str
    method: str  # "" → GET (the subrequest keeps the original request's method only via auth_request's GET)
    signin: str
    signin_redirect_param: str
    response_headers: tuple[str, ...]
    request_redirect: str
    snippet: str


def _valid_cache_duration(value: str) -> bool:
    for part in value.split(","):
        seen_duration = False
        elements = part.split()
        for element in elements:
            if _CODE.match(element):
                if seen_duration:
                    return False
            elif _DURATION.match(element):
                seen_duration = True
            else:
                return False
        if elements and not seen_duration:
            return False
    return True


def parse(ctx: Context) -> ExtAuthConfig | None:
    r = ctx.reader
    url = r.string("auth-url", matches(URL_WITH_NGINX_VARIABLE, remove_space=True))
    if url.error == MISSING:
        return None
    if not url.ok or url.value is None:
        effect = REJECTED if url.error == VALIDATION else IGNORED
        ctx.reported(url, effect, "the Ingress is refused" if effect == REJECTED else "no external authentication")
        raise FamilyDropped()
    parsed = urlsplit(url.value)
    if not parsed.scheme or not parsed.netloc or ".." in parsed.netloc:
        why = "url scheme is empty" if not parsed.scheme else "url host is empty" if not parsed.netloc \
            else "invalid url host"
        ctx.report(url.name, DENIED, f"could not parse auth-url annotation: {why}: every location of this Ingress "
                                     "answers 503")
        raise FamilyDropped()
    method = r.string("auth-method", matches(_METHODS, remove_space=True))
    if method.error == VALIDATION:
        ctx.report(method.name, DENIED, "invalid HTTP method: every location of this Ingress answers 503")
        raise FamilyDropped()
    signin = r.string("auth-signin", matches(URL_WITH_NGINX_VARIABLE, remove_space=True))
    param = r.string("auth-signin-redirect-param", matches(URL_IS_VALID, remove_space=True))
    duration = r.string("auth-cache-duration")
    if duration.error == VALIDATION or (duration.ok and duration.value and not _valid_cache_duration(duration.value)):
        ctx.report(duration.name, IGNORED, "auth-cache-duration contains invalid value: the parser fails and the "
                                           "location is NOT protected by auth-url")
        raise FamilyDropped()
    headers: list[str] = []
    response_headers = r.string("auth-response-headers", matches(HEADERS_VARIABLE, remove_space=True))
    if response_headers.error == VALIDATION:
        ctx.report(response_headers.name, DENIED, "validation error: every location of this Ingress answers 503")
        raise FamilyDropped()
    for header in (response_headers.value or "").split(","):
        header = header.strip()
        if header and not _HEADER.match(header):
            ctx.report(response_headers.name, DENIED, "invalid headers list: every location of this Ingress answers "
                                                      "503")
            raise FamilyDropped()
        if header:
            headers.append(header)
    redirect = r.string("auth-request-redirect", matches(URL_IS_VALID, remove_space=True))
    always = r.string("auth-always-set-cookie", valid_bool)
    for read in (redirect, always):
        if read.error == VALIDATION:
            ctx.reported(read, IGNORED, "the parser fails and the location is NOT protected by auth-url")
            raise FamilyDropped()
    snippet = r.string("auth-snippet")
    host = parsed.hostname or ""
    return ExtAuthConfig(url.value, host, (method.value or "").strip(), signin.value or "" if signin.ok else "",
                         param.value or "" if param.ok else "", tuple(headers), redirect.value or "",
                         snippet.value or "" if snippet.ok else "")


def signin_location(config: ExtAuthConfig, scheme: str, http_host: str, request_uri: str) -> str:
    """``buildAuthSignURL``: the sign-in URL with ``rd=<scheme>://<Host><escaped request URI>`` appended
    (``?`` or ``&``), unless the URL already carries that parameter."""
    param = config.signin_redirect_param or "rd"
    query = urlsplit(config.signin).query
    original = f"{scheme}://{http_host}{quote(request_uri, safe='')}"  # set_escape_uri: a URI component
    if not query:
        return f"{config.signin}?{param}={original}"
    if any(part.split("=", 1)[0] == param and part.split("=", 1)[-1] for part in query.split("&")):
        return config.signin
    return f"{config.signin}&{param}={original}"
