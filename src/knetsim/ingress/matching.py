"""Host and path matching of networking.k8s.io/v1 Ingress rules, as pure functions.

Semantics are the API's (``HTTPIngressPath.PathType``, ``IngressRule.Host``) and the
"Examples" and "Hostname wildcards" tables of the Kubernetes docs
(kubernetes/website content/en/docs/concepts/services-networking/ingress.md); the tests
reproduce both tables row by row.

- Exact: the request path equals the rule path, case-sensitive (``/foo`` ≠ ``/foo/``).
- Prefix: the rule path's ``/``-separated elements are a prefix of the request path's
  elements; a trailing slash is an empty element ignored on either side, and a partial
  last element is no match (``/aaa/bbb`` does not match ``/aaa/bbbxyz``).
- ImplementationSpecific: for the built-in ingress-nginx knetsim documents and applies it
  as Prefix (an empty path is ``/``, as ingress-nginx reads it).
- Host: equal to the request's Host (case-insensitive, port ignored); ``*.foo.com``
  covers exactly one label (``bar.foo.com`` yes, ``baz.bar.foo.com`` and ``foo.com`` no);
  a rule without host matches every host.
"""

from __future__ import annotations

import posixpath
from urllib.parse import unquote

from ..model.http import exact_mismatch_reason, prefix_mismatch_reason

EXACT = "Exact"
PREFIX = "Prefix"
IMPLEMENTATION_SPECIFIC = "ImplementationSpecific"
PATH_TYPES = (EXACT, IMPLEMENTATION_SPECIFIC, PREFIX)


def effective_path(path: str) -> str:
    """The path a controller uses: ingress-nginx reads an empty path as ``/``."""
    return path or "/"


def effective_path_type(path_type: str) -> str:
    """How knetsim matches the type: ImplementationSpecific is treated as Prefix (documented choice)."""
    return PREFIX if path_type == IMPLEMENTATION_SPECIFIC else path_type


def _elements(path: str) -> list[str]:
    # Empty elements come from leading/trailing slashes; the API says they are ignored.
    return [e for e in path.split("/") if e]


def path_matches(path_type: str, rule_path: str, request_path: str) -> bool:
    """Does ``request_path`` match the rule path of ``path_type``?"""
    rule_path = effective_path(rule_path)
    if effective_path_type(path_type) == EXACT:
        return request_path == rule_path
    want = _elements(rule_path)
    have = _elements(request_path)
    return have[: len(want)] == want


def match_length(path_type: str, rule_path: str) -> int:
    """The length compared for "longest matching path wins".

    nginx compares location string lengths; ingress-nginx renders Prefix ``/foo`` and
    ``/foo/`` as ``location /foo/``, so the trailing slash of a Prefix path does not make it
    longer than the Exact path it ties with (and Exact then wins, as the docs require).
    """
    rule_path = effective_path(rule_path)
    if effective_path_type(path_type) == EXACT:
        return len(rule_path)
    return len(rule_path.rstrip("/"))


def path_mismatch_reason(path_type: str, rule_path: str, request_path: str) -> str:
    """Why the path does not match, in the docs' words."""
    rule_path = effective_path(rule_path)
    if effective_path_type(path_type) == EXACT:
        return exact_mismatch_reason(rule_path, request_path)
    return prefix_mismatch_reason("Prefix", rule_path, request_path)


def string_prefix_only(path_type: str, rule_path: str, request_path: str) -> bool:
    """ImplementationSpecific paths that ingress-nginx would match as a plain nginx prefix but Prefix would not."""
    rule_path = effective_path(rule_path)
    return (path_type == IMPLEMENTATION_SPECIFIC and request_path.startswith(rule_path)
            and not path_matches(PREFIX, rule_path, request_path))


def normalize_host(host: str) -> str:
    """The Host header as a server name: port dropped, lower case, no trailing dot."""
    host = host.strip()
    if host.startswith("["):  # [v6]:port
        end = host.find("]")
        host = host[: end + 1] if end >= 0 else host
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.lower().rstrip(".")


def host_matches(rule_host: str, request_host: str) -> bool:
    """Does a rule's ``host`` (``""`` = any) match the normalized request host?"""
    if not rule_host:
        return True
    rule_host = rule_host.lower()
    if rule_host.startswith("*."):
        suffix = rule_host[1:]
        if not request_host.endswith(suffix):
            return False
        label = request_host[: -len(suffix)]
        return bool(label) and "." not in label
    return rule_host == request_host


def host_mismatch_reason(rule_host: str, request_host: str) -> str:
    rule_host = rule_host.lower()
    if rule_host.startswith("*."):
        suffix = rule_host[1:]
        if request_host == suffix[1:]:
            return f"wildcard {rule_host} needs exactly one label before {suffix[1:]}; {request_host} has none"
        if request_host.endswith(suffix):
            extra = request_host[: -len(suffix)]
            return (f"wildcard {rule_host} covers exactly one DNS label; {request_host} has "
                    f"{extra.count('.') + 1} ({extra}) before {suffix[1:]}")
        return f"{request_host} does not end in {suffix}"
    return f"host {rule_host} is not {request_host or '<empty Host header>'}"


def normalize_request_path(raw: str) -> str:
    """The URI path nginx matches locations against: query dropped, %XX decoded, ``//``, ``.`` and ``..`` resolved.

    Raises ValueError for a path that is not absolute.
    """
    path = raw.split("#", 1)[0].split("?", 1)[0]
    if not path.startswith("/"):
        raise ValueError(f"request path {raw!r} must start with '/'")
    path = unquote(path)
    trailing = path.endswith("/") and path != "/"
    path = posixpath.normpath(path)
    if path.startswith("//"):  # normpath keeps a leading '//' (POSIX); nginx merges it
        path = "/" + path.lstrip("/")
    if trailing and path != "/":
        path += "/"
    return path
