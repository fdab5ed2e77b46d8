"""ingress-nginx's regex locations and ``rewrite-target``, as its template renders them.

An Ingress with ``nginx.ingress.kubernetes.io/use-regex: "true"``, or with a ``rewrite-target``
that differs from its path, switches **every** location of the nginx ``server`` it shares (one
per host) to a case-insensitive regex anchored at the start (``enforceRegexModifier`` and
``buildLocation`` of the controller's template: ``location ~* "^<path>"``), Exact and Prefix
paths included. nginx tries regex locations in the order they are written and takes the first
that matches; ingress-nginx writes them longest path first ("Ingress Path Matching" in its docs).

The matched location's ``rewrite-target`` is applied as ``rewrite "(?i)<path>" <target> break;``:
when the path, as an unanchored case-insensitive regex, matches the URI, the whole URI becomes the
target with ``$1``…``$9`` replaced by the captures; nginx keeps the query string.

The ``regex`` package (re's syntax) stands in for PCRE: the constructs Ingress paths use (groups,
alternation, classes, ``.*``, ``$``) mean the same; a path it cannot compile is reported and never
matches (nginx would refuse the configuration, and the controller the Ingress); a match that runs
past ``saferegex.MATCH_TIMEOUT`` is given up on (``location_matches`` raises RegexTimeout).
"""

from __future__ import annotations

import re

from regex import Pattern

from ..model import saferegex

_CAPTURE = re.compile(r"\$(\d)")


def compiled(path: str) -> Pattern[str] | None:
    return saferegex.compiled("^" + path, ignore_case=True)


def regex_error(path: str) -> str | None:
    problem = saferegex.compile_error(path)
    return None if problem is None else f"{path!r} is not a valid regular expression ({problem})"


def location_matches(path: str, request_path: str) -> bool:
    """Does ``location ~* "^<path>"`` match? Raises ``saferegex.RegexTimeout`` for a match that runs away."""
    pattern = compiled(path)
    return pattern is not None and saferegex.match(pattern, request_path) is not None


def rewrite(path: str, target: str, uri_path: str, query: str) -> str:
    """The URI the backend receives: ``rewrite "(?i)<path>" <target> break;`` applied to ``uri_path``."""
    pattern = saferegex.compiled(path, ignore_case=True)
    try:
        found = saferegex.search(pattern, uri_path) if pattern is not None else None
    except saferegex.RegexTimeout:
        found = None  # nginx's PCRE gives up too (its match limit): the URI is left as it is
    if found is None:
        new = uri_path
    else:
        groups = found.groups()
        new = _CAPTURE.sub(lambda m: (groups[int(m.group(1)) - 1] or "") if 0 < int(m.group(1)) <= len(groups)
                           else "", target)
    if query and "?" not in new:
        new += f"?{query}"
    return new

