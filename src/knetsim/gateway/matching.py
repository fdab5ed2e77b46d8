"""HTTPRoute matching and filters, as pure functions (apis/v1 httproute_types.go).

* Path ``Exact``: the whole path, case-sensitive (``/two`` ≠ ``/two/`` ≠ ``/Two``).
* Path ``PathPrefix``: by ``/``-separated elements, case-sensitive; a trailing ``/`` of the
  prefix is ignored (``/v2`` and ``/v2/`` both match ``/v2``, ``/v2/x``; neither ``/v2example``).
* Path ``RegularExpression`` (implementation-specific): a full match of Python's ``re``
  (Envoy uses RE2; the common syntax is the same).
* Headers: names case-insensitive, values exact (or RegularExpression); of two matches with
  the same name only the first counts. Query params: names and values exact (case-sensitive),
  the first value of a repeated parameter. Method: exact.
* Precedence across every candidate rule of the listener (``HTTPRouteRule.Matches``):
  the route's matching hostname (longest non-wildcard, then longest), Exact path, then the
  longest PathPrefix (RegularExpression between the two, as Envoy Gateway ranks it), then a
  method match, most header matches, most query matches, the oldest route, ``namespace/name``,
  the first rule, the first match.

The request path is normalized as Envoy Gateway configures Envoy (``normalize_path`` and
``merge_slashes``): percent-encoded unreserved characters decoded, ``//`` merged, ``.`` and
``..`` resolved; a trailing slash stays.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl

from ..model import saferegex
from ..model.gatewayapi import HeaderModifier, PathModifier, RouteMatch, ValueMatch
from ..model.http import HTTPRequest, exact_mismatch_reason, prefix_mismatch_reason
from . import hostnames

_UNRESERVED = re.compile(r"%([0-9A-Fa-f]{2})")


def normalize_path(path: str) -> str:
    """RFC 3986 normalization as Envoy's ``normalize_path``, plus ``merge_slashes``."""

    def decode(m: re.Match[str]) -> str:
        char = chr(int(m.group(1), 16))
        return char if (char.isalnum() and char.isascii()) or char in "-._~" else "%" + m.group(1).upper()

    path = _UNRESERVED.sub(decode, path)
    trailing = path.endswith("/") and path != "/"
    out: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if out:
                out.pop()
            continue
        out.append(segment)
    result = "/" + "/".join(out)
    if trailing and result != "/":
        result += "/"
    return result


def _elements(path: str) -> list[str]:
    return [e for e in path.split("/") if e]


def path_matches(match_type: str, value: str, path: str) -> bool:
    if match_type == "Exact":
        return path == value
    if match_type == "PathPrefix":
        want = _elements(value)
        return _elements(path)[: len(want)] == want
    if match_type == "RegularExpression":
        return saferegex.envoy_full_match(value, path)
    return False


def path_mismatch_reason(match_type: str, value: str, path: str) -> str:
    if match_type == "Exact":
        return exact_mismatch_reason(value, path)
    if match_type == "RegularExpression":
        return f"RegularExpression {value} does not match the whole path {path}"
    return prefix_mismatch_reason("PathPrefix", value, path)


def _first_by_name(items: Sequence[ValueMatch], fold: bool) -> list[ValueMatch]:
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.name.lower() if fold else item.name
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _value_ok(match: ValueMatch, value: str | None) -> bool:
    if value is None:
        return False
    if match.type == "RegularExpression":
        return saferegex.envoy_full_match(match.value, value)
    return value == match.value


def query_values(request: HTTPRequest) -> dict[str, str]:
    """The first value of each query parameter, decoded."""
    out: dict[str, str] = {}
    for name, value in parse_qsl(request.query, keep_blank_values=True):
        out.setdefault(name, value)
    return out


@dataclass(frozen=True, slots=True)
class MatchResult:
    matched: bool
    reason: str = ""  # why not, when not matched
    part: str = ""  # path | method | header | query: what did not match


def match_request(match: RouteMatch, request: HTTPRequest, path: str, query: dict[str, str]) -> MatchResult:
    """Does one HTTPRouteMatch accept the request (whose normalized path and query are given)?"""
    if not path_matches(match.path.type, match.path.value, path):
        return MatchResult(False, path_mismatch_reason(match.path.type, match.path.value, path), "path")
    if match.method is not None and match.method != request.method:
        return MatchResult(False, f"method {match.method} is required, the request is {request.method}", "method")
    for h in _first_by_name(match.headers, fold=True):
        value = request.header(h.name)
        if not _value_ok(h, value):
            have = "absent" if value is None else repr(value)
            return MatchResult(False, f"header {h.name} must be {h.value!r}"
                               f"{' (regex)' if h.type == 'RegularExpression' else ''}; it is {have}", "header")
    for q in _first_by_name(match.query_params, fold=False):
        value = query.get(q.name)
        if not _value_ok(q, value):
            have = "absent" if value is None else repr(value)
            hint = ""
            if value is None and any(k.lower() == q.name.lower() for k in query):
                hint = " (query parameter names are case-sensitive)"
            return MatchResult(False, f"query parameter {q.name} must be {q.value!r}; it is {have}{hint}", "query")
    return MatchResult(True)


_PATH_RANK = {"Exact": 2, "RegularExpression": 1, "PathPrefix": 0}


def match_rank(match: RouteMatch) -> tuple[int, int, int, int, int]:
    """How specific a match is (bigger wins): path type, path length, method, headers, query params."""
    return (_PATH_RANK.get(match.path.type, -1), len(match.path.value), 1 if match.method else 0,
            len(_first_by_name(match.headers, fold=True)), len(_first_by_name(match.query_params, fold=False)))


def hostname_rank(hostname: str | None) -> tuple[int, int]:
    """The spec's first two criteria: characters of a matching non-wildcard hostname, then of any."""
    if hostname is None:
        return (0, 0)
    return (0 if hostnames.is_wildcard(hostname) else len(hostname), len(hostname))


def why_lower(winner: RouteMatch, loser: RouteMatch) -> str:
    """Which precedence criterion made ``winner`` beat ``loser`` (their hostnames and routes tie otherwise)."""
    w, lo = match_rank(winner), match_rank(loser)
    if w[0] != lo[0]:
        return f"{winner.path.type} {winner.path.value} takes precedence over {loser.path.type} {loser.path.value}"
    if w[1] != lo[1]:
        return f"{winner.path.value} is longer than {loser.path.value}"
    if w[2] != lo[2]:
        return "a match with a method takes precedence"
    if w[3] != lo[3]:
        return f"more header matches ({w[3]} > {lo[3]})"
    if w[4] != lo[4]:
        return f"more query parameter matches ({w[4]} > {lo[4]})"
    return ""


# --- filters -----------------------------------------------------------------------------


def replace_prefix(path: str, prefix: str, replacement: str) -> str:
    """ReplacePrefixMatch, element-wise (the table of HTTPPathModifier.ReplacePrefixMatch)."""
    rest = path[len(prefix.rstrip("/")):]
    result = replacement.rstrip("/") + rest
    return result or "/"


def modify_path(modifier: PathModifier, path: str, matched_prefix: str | None) -> str:
    if modifier.type == "ReplaceFullPath" and modifier.replace_full_path is not None:
        return modifier.replace_full_path or "/"
    if modifier.type == "ReplacePrefixMatch" and modifier.replace_prefix_match is not None and matched_prefix:
        return replace_prefix(path, matched_prefix, modifier.replace_prefix_match)
    return path


def apply_header_modifier(headers: dict[str, str], modifier: HeaderModifier) -> None:
    """set overwrites, add appends (``old,new``), remove deletes; names compare case-insensitively."""
    for name, value in modifier.set:
        headers[name.lower()] = value
    for name, value in modifier.add:
        key = name.lower()
        headers[key] = f"{headers[key]},{value}" if key in headers else value
    for name in modifier.remove:
        headers.pop(name.lower(), None)


def redirect_location(request: HTTPRequest, listener_port: int, listener_protocol: str, *, scheme: str | None,
                      hostname: str | None, port: int | None, path: str) -> str:
    """The Location of a RequestRedirect (HTTPRequestRedirectFilter.Port's rules for the port)."""
    out_scheme = scheme or ("https" if listener_protocol == "HTTPS" else "http")
    host = hostname or hostnames.normalize(request.host)
    if port is None:
        port = {"http": 80, "https": 443}[out_scheme] if scheme else listener_port
    default = (out_scheme == "http" and port == 80) or (out_scheme == "https" and port == 443)
    query = f"?{request.query}" if request.query else ""
    return f"{out_scheme}://{host}{'' if default else f':{port}'}{path}{query}"
