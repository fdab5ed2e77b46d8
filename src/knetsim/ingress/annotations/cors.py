"""CORS: ``enable-cors`` and the ``cors-*`` annotations, including the preflight answer.

Parsing is ingress-nginx's ``cors`` parser: every invalid value keeps its default — origin ``*``,
methods ``GET, PUT, POST, DELETE, PATCH, OPTIONS``, headers ``DNT,Keep-Alive,User-Agent,
X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization``, credentials
``true``, max-age ``1728000``, no expose headers; an origin that is not ``scheme://host[:port]``
(one ``*.`` label allowed), ``*`` or ``null`` is skipped.

Behaviour (the template's ``CORS`` block, in the location's rewrite phase): with origin ``*`` every
request is a CORS request (``set $http_origin *``, so ``Access-Control-Allow-Origin: *`` even when
the client sent no Origin); with a list, only a request whose ``Origin`` matches one of them
(case-insensitively, the ``*`` standing for one label of letters, digits and ``-``) is. A CORS
``OPTIONS`` request is answered by the controller itself: 204 with the CORS headers (the
preflight never reaches the backend); any other CORS request gets the headers added to the
response, whatever its status. Headers: ``Access-Control-Allow-Origin`` (the request's origin),
``-Allow-Credentials: true`` (when on), ``-Allow-Methods``, ``-Allow-Headers``, ``-Expose-Headers``
(when set), ``-Max-Age``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .base import DEFAULT, Context
from .values import HEADERS_VARIABLE, VALIDATION

DEFAULT_METHODS = "GET, PUT, POST, DELETE, PATCH, OPTIONS"
DEFAULT_HEADERS = ("DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,"
                   "Authorization")
DEFAULT_MAX_AGE = 1728000

_ORIGIN_VALIDATOR = re.compile(r"^((((([a-z]+://)?(\*\.)?[A-Za-z0-9\-.]*(:\d+)?,?)|null)+)|\*)?$")
_ORIGIN = re.compile(r"^([a-z]+://(\*\.)?[A-Za-z0-9\-.]*(:\d+)?|\*|null)?$")
_METHODS = re.compile(r"^([A-Za-z]+,?\s?)+$")
_EXPOSE = re.compile(r"^(([A-Za-z0-9\-\_]+|\*),?\s?)+$")


@dataclass(frozen=True, slots=True)
class CorsConfig:
    enabled: bool = False
    allow_origin: tuple[str, ...] = ("*",)
    allow_methods: str = DEFAULT_METHODS
    allow_headers: str = DEFAULT_HEADERS
    expose_headers: str = ""
    allow_credentials: bool = True
    max_age: int = DEFAULT_MAX_AGE


def _checked(pattern: re.Pattern[str], strip: bool = True):  # type: ignore[no-untyped-def]
    def check(value: str) -> str | None:
        candidate = value.replace(" ", "") if strip else value
        return None if pattern.search(candidate) and "\n" not in candidate and "\r" not in candidate \
            else f"value {candidate} is invalid"
    return check


def parse(ctx: Context) -> CorsConfig:
    r = ctx.reader
    enabled = r.boolean("enable-cors")
    if enabled.error == VALIDATION:
        ctx.reported(enabled, DEFAULT, "CORS stays off")
    origins: list[str] = []
    origin_read = r.string("cors-allow-origin", _checked(_ORIGIN_VALIDATOR))
    if origin_read.ok and origin_read.value is not None:
        for origin in origin_read.value.split(","):
            origin = origin.strip()
            if not origin:
                continue
            if origin == "*":
                origins = ["*"]
                break
            if not _ORIGIN.match(origin):
                ctx.report(origin_read.name, DEFAULT, f"incorrect origin {origin!r} skipped")
                continue
            origins.append(origin)
    else:
        if origin_read.error == VALIDATION:
            ctx.reported(origin_read, DEFAULT, "defaulting to '*'")
        origins = ["*"]
    headers = r.string("cors-allow-headers", _checked(HEADERS_VARIABLE))
    methods = r.string("cors-allow-methods", _checked(_METHODS))
    credentials = r.boolean("cors-allow-credentials")
    expose = r.string("cors-expose-headers", _checked(_EXPOSE))
    max_age = r.integer("cors-max-age")
    for read in (headers, methods, credentials, expose, max_age):
        if read.error == VALIDATION:
            ctx.reported(read, DEFAULT, "the default is kept")
    return CorsConfig(
        bool(enabled.value),
        tuple(origins),
        methods.value if methods.ok and methods.value and _METHODS.match(methods.value) else DEFAULT_METHODS,
        headers.value if headers.ok and headers.value and HEADERS_VARIABLE.match(headers.value) else DEFAULT_HEADERS,
        expose.value if expose.ok and expose.value and _EXPOSE.match(expose.value) else "",
        credentials.value if credentials.ok and credentials.value is not None else True,
        max_age.value if max_age.ok and max_age.value is not None else DEFAULT_MAX_AGE,
    )


def origin_regex(origin: str) -> str:
    """``buildOriginRegex``: the origin quoted, its first ``*`` one label of ``[A-Za-z0-9-]``."""
    return "(" + re.escape(origin).replace(r"\*", r"[A-Za-z0-9\-]+", 1) + ")"


def allowed_origin(config: CorsConfig, origin: str | None) -> str | None:
    """The value of ``Access-Control-Allow-Origin`` for this request, None when it is not a CORS request.

    ``if ($http_origin ~* ((o1)|(o2))$)``: case-insensitive, anchored only at the end.
    """
    if config.allow_origin == ("*",):
        return "*"
    if origin is None:
        return None
    pattern = "(" + "|".join(origin_regex(o) for o in config.allow_origin) + ")$"
    return origin if re.search(pattern, origin, re.IGNORECASE) else None


def headers(config: CorsConfig, allow_origin: str, preflight: bool) -> tuple[tuple[str, str], ...]:
    out = [("Access-Control-Allow-Origin", allow_origin)]
    if config.allow_credentials:
        out.append(("Access-Control-Allow-Credentials", "true"))
    out.append(("Access-Control-Allow-Methods", config.allow_methods))
    out.append(("Access-Control-Allow-Headers", config.allow_headers))
    if config.expose_headers:
        out.append(("Access-Control-Expose-Headers", config.expose_headers))
    out.append(("Access-Control-Max-Age", str(config.max_age)))
    if preflight:
        out.append(("Content-Type", "text/plain charset=UTF-8"))
        out.append(("Content-Length", "0"))
    return tuple(out)
