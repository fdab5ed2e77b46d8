"""nginx's choice of location within a server (``ngx_http_core_find_location``), for the locations
ingress-nginx writes: exact (``= /p``), plain prefix (``/p``) and case-insensitive regex (``~* "^/p"``).

Prefix and exact locations first (``ngx_http_core_find_static_location``), case-sensitive:

1. a location whose path equals the URI: an exact one is taken at once; a prefix one is the match;
2. else, a location whose path is the URI plus ``/`` (``location /foo/`` or ``location = /foo/``
   for ``/foo``) answers ``301`` to the URI with the slash added — nginx's ``auto_redirect`` for
   locations that proxy, taken before any shorter prefix and before the regexes;
3. else the longest prefix the URI starts with.

Then, unless an exact location or the redirect decided, the regex locations in the order written:
the first that matches wins over the prefix. ingress-nginx writes a server either all regex (the
regex mode of ``servers.py``) or none, so in practice one of the two steps decides.

The URI is nginx's normalized ``$uri`` (decoded, ``//``, ``.`` and ``..`` resolved); a regex match
that runs past ``saferegex.MATCH_TIMEOUT`` counts as no match (nginx's PCRE stops at its limit).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import saferegex
from .nginxregex import location_matches
from .servers import Location, Server

EXACT_MATCH = "exact"
PREFIX_MATCH = "prefix"
REGEX_MATCH = "regex"
AUTO_REDIRECT = "auto-redirect"


@dataclass(frozen=True, slots=True)
class Found:
    location: Location | None
    how: str  # exact | prefix | regex | auto-redirect | none
    timed_out: tuple[Location, ...] = ()  # regexes given up on

    @property
    def redirect(self) -> bool:
        return self.how == AUTO_REDIRECT


def regex_hit(location: Location, uri: str) -> bool | None:
    """Does ``~* "^<path>"`` match? None when the match ran past the time bound."""
    try:
        return location_matches(location.path, uri)
    except saferegex.RegexTimeout:
        return None


def find(server: Server, uri: str) -> Found:
    regex = server.regex
    if not regex:
        static = [loc for loc in server.locations]
        for loc in static:
            if loc.path == uri and loc.path_type == "Exact":
                return Found(loc, EXACT_MATCH)
        same = next((loc for loc in static if loc.path == uri), None)
        if same is None:
            # auto_redirect is set on any location whose name ends in "/" and that proxies: exact ones too.
            redirect = next((loc for loc in static if loc.path == uri + "/" and proxies(loc)), None)
            if redirect is not None:
                return Found(redirect, AUTO_REDIRECT)
        prefixes = [loc for loc in static if loc.path_type != "Exact" and uri.startswith(loc.path)]
        if not prefixes:
            return Found(None, "none")
        longest = max(len(loc.path) for loc in prefixes)
        return Found(next(loc for loc in prefixes if len(loc.path) == longest), PREFIX_MATCH)
    timed_out = []
    for loc in server.locations:
        hit = regex_hit(loc, uri)
        if hit is None:
            timed_out.append(loc)
        elif hit:
            return Found(loc, REGEX_MATCH, tuple(timed_out))
    return Found(None, "none", tuple(timed_out))


def proxies(location: Location) -> bool:
    """Does the location end in ``proxy_pass`` (which sets nginx's auto_redirect)? A denied location only
    returns 503."""
    return location.annotations.denied is None
