"""The redirect family: permanent/temporal redirects, from-to-www, app-root, and the redirect to https.

Parsing is ingress-nginx's ``redirect`` parser (``permanent-redirect[-code]``,
``temporal-redirect[-code]``, ``from-to-www-redirect``, ``relative-redirects``: a validation
error refuses the Ingress, any other error drops the family) and the redirect half of its
``rewrite`` parser (``ssl-redirect``, ``force-ssl-redirect``, ``preserve-trailing-slash``,
``app-root``: an invalid value keeps the default).

Behaviour, as the controller's template and Lua run it:

* ``app-root``: ``if ($uri = /) { return 302 $scheme://$http_host<app-root>; }`` at server level,
  so the first location (in the server's order) that has it answers ``/`` for the whole host;
* ``permanent-redirect`` / ``temporal-redirect``: ``return <code> <url>;`` in the location: code
  301 (a code outside 300–308 falls back to it) or 302 (outside 300–307);
* the redirect to https (``lua_ingress.lua`` ``redirect_to_https``, after the location's rewrite
  directives): plain http to a host that has a certificate (``spec.tls``), or any plain http with
  ``force-ssl-redirect``, unless the path is under a ``no-tls-redirect-locations`` prefix;
  ``https://<host without port><request URI>`` with the trailing slash removed (unless
  ``preserve-trailing-slash``), code ``http-redirect-code`` (308);
* ``from-to-www-redirect``: a server of its own for the other name (``www.`` added or removed)
  answering every request with ``http-redirect-code`` to the same URI on the rule's host.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from .base import DEFAULT, IGNORED, REJECTED, Context, FamilyDropped
from .values import URL_IS_VALID, VALIDATION, matches

_URL = matches(URL_IS_VALID)


@dataclass(frozen=True, slots=True)
class RedirectConfig:
    url: str = ""
    code: int = 0
    from_to_www: bool = False
    relative: bool = False
    ssl_redirect: bool = True
    force_ssl_redirect: bool = False
    preserve_trailing_slash: bool = False
    app_root: str = ""

    @property
    def returns(self) -> bool:
        return bool(self.url)


def _redirect_group(ctx: Context) -> tuple[str, int, bool, bool]:
    r = ctx.reader

    def fail(read) -> FamilyDropped:  # type: ignore[no-untyped-def]
        effect = REJECTED if read.error == VALIDATION else IGNORED
        ctx.reported(read, effect, "the Ingress is refused" if effect == REJECTED else
                     "every redirect annotation of this Ingress is ignored")
        return FamilyDropped()

    www = r.boolean("from-to-www-redirect")
    if www.present and not www.ok:
        raise fail(www)
    relative = r.boolean("relative-redirects")
    if relative.present and not relative.ok:
        raise fail(relative)
    temporal = r.string("temporal-redirect", _URL)
    if temporal.present and not temporal.ok:
        raise fail(temporal)
    if temporal.value:
        code = r.integer("temporal-redirect-code")
        if code.present and not code.ok:
            raise fail(code)
        value = code.value or 0
        if not 300 <= value <= 307:
            value = 302
        scheme = urlsplit(temporal.value).scheme
        if not scheme.startswith("http"):
            ctx.report(temporal.name, IGNORED, f"only http and https are valid protocols ({scheme}): every redirect "
                                               "annotation of this Ingress is ignored")
            raise FamilyDropped()
        return temporal.value, value, bool(www.value), bool(relative.value)
    permanent = r.string("permanent-redirect", _URL)
    if permanent.present and not permanent.ok:
        raise fail(permanent)
    code = r.integer("permanent-redirect-code")
    if code.present and not code.ok:
        raise fail(code)
    value = code.value or 0
    if not 300 <= value <= 308:
        value = 301
    return permanent.value or "", value, bool(www.value), bool(relative.value)


def parse(ctx: Context) -> RedirectConfig:
    r = ctx.reader
    config = ctx.config
    try:
        url, code, www, relative = _redirect_group(ctx)
    except FamilyDropped:
        url, code, www, relative = "", 0, False, False

    def flag(name: str, default: bool) -> bool:
        read = r.boolean(name)
        if read.ok and read.value is not None:
            return read.value
        if read.error == VALIDATION:
            ctx.reported(read, DEFAULT, f"defaulting to {str(default).lower()}")
        return default

    app_root = ""
    root = r.string("app-root")
    if root.ok and root.value:
        parsed = urlsplit(root.value)
        if parsed.scheme or not root.value.startswith("/"):
            ctx.report(root.name, DEFAULT, f"app-root only allows absolute paths ({root.value}): ignored")
        else:
            app_root = root.value
    return RedirectConfig(url, code, www, relative,
                          flag("ssl-redirect", config.ssl_redirect),
                          flag("force-ssl-redirect", config.force_ssl_redirect),
                          flag("preserve-trailing-slash", config.preserve_trailing_slash), app_root)


def https_location(host_header: str, request_uri: str, preserve_trailing_slash: bool) -> str:
    """The Location of the redirect to https: the Host without its port, the request URI as sent."""
    host = host_header.split(":", 1)[0] if not host_header.startswith("[") else host_header.split("]", 1)[0] + "]"
    uri = request_uri
    if not preserve_trailing_slash and uri.endswith("/"):
        uri = uri[:-1]
    return f"https://{host}{uri}"


def www_counterpart(host: str) -> str:
    """The other name of from-to-www-redirect: ``www.`` removed, or added."""
    return host[4:] if host.startswith("www.") else f"www.{host}"
