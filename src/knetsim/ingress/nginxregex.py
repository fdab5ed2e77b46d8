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

Python's ``re`` stands in for PCRE: the constructs Ingress paths use (groups, alternation,
classes, ``.*``, ``$``) mean the same; a path ``re`` cannot compile is reported and never matches
(nginx would refuse the configuration, and the controller the Ingress).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

NGINX = "nginx.ingress.kubernetes.io/"
USE_REGEX = f"{NGINX}use-regex"
REWRITE_TARGET = f"{NGINX}rewrite-target"
_CAPTURE = re.compile(r"\$(\d)")


@lru_cache(maxsize=1024)
def compiled(path: str, anchored: bool = True) -> re.Pattern[str] | None:
    try:
        return re.compile(("^" if anchored else "") + path, re.IGNORECASE)
    except (re.error, RecursionError, OverflowError):
        return None


def regex_error(path: str) -> str | None:
    if compiled(path) is not None:
        return None
    try:
        re.compile(path)
    except re.error as exc:
        return f"{path!r} is not a valid regular expression ({exc})"
    except (RecursionError, OverflowError):
        pass
    return f"{path!r} is not a valid regular expression"


def location_matches(path: str, request_path: str) -> bool:
    pattern = compiled(path)
    return pattern is not None and pattern.match(request_path) is not None


def needs_rewrite(path: str, annotations: Mapping[str, str]) -> bool:
    target = annotations.get(REWRITE_TARGET) or ""
    return bool(target) and target != path


def enforces_regex(path: str, annotations: Mapping[str, str]) -> bool:
    return annotations.get(USE_REGEX) == "true" or needs_rewrite(path, annotations)


def rewrite(path: str, target: str, uri_path: str, query: str) -> str:
    """The URI the backend receives: ``rewrite "(?i)<path>" <target> break;`` applied to ``uri_path``."""
    pattern = compiled(path, anchored=False)
    found = pattern.search(uri_path) if pattern is not None else None
    if found is None:
        new = uri_path
    else:
        groups = found.groups()
        new = _CAPTURE.sub(lambda m: (groups[int(m.group(1)) - 1] or "") if 0 < int(m.group(1)) <= len(groups)
                           else "", target)
    if query and "?" not in new:
        new += f"?{query}"
    return new

