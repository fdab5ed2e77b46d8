"""Gateway API hostnames: matching, intersection and specificity, as pure functions.

The semantics are the API's (``Listener.Hostname`` and ``HTTPRouteSpec.Hostnames`` in
apis/v1), which differ from Ingress in one way that surprises migrators: a wildcard is a
*suffix* match of any number of labels — ``*.example.com`` matches ``foo.example.com`` and
``foo.bar.example.com`` (an Ingress wildcard covers exactly one label), never
``example.com`` itself. Comparison ignores case and the Host header's port.
"""

from __future__ import annotations


def normalize(host: str) -> str:
    """A Host header as a hostname: port dropped, lower case, no trailing dot."""
    host = host.strip()
    if host.startswith("["):
        end = host.find("]")
        host = host[: end + 1] if end >= 0 else host
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.lower().rstrip(".")


def is_wildcard(hostname: str) -> bool:
    return hostname.startswith("*.")


def matches(pattern: str | None, host: str) -> bool:
    """Does ``pattern`` (None: any host) match the normalized ``host``?"""
    if pattern is None:
        return True
    pattern = pattern.lower()
    if is_wildcard(pattern):
        suffix = pattern[1:]  # ".example.com"
        return host.endswith(suffix) and len(host) > len(suffix)
    return pattern == host


def intersect(a: str | None, b: str | None) -> str | bool | None:
    """The hostnames both accept: the narrower of the two, None for "any", False when disjoint.

    ``very.specific.com`` ∩ ``*.specific.com`` = ``very.specific.com``;
    ``*.example.com`` ∩ ``*.foo.example.com`` = ``*.foo.example.com``.
    """
    if a is None:
        return b
    if b is None:
        return a
    a, b = a.lower(), b.lower()
    if a == b:
        return a
    if is_wildcard(a) and not is_wildcard(b):
        return b if matches(a, b) else False
    if is_wildcard(b) and not is_wildcard(a):
        return a if matches(b, a) else False
    if is_wildcard(a) and is_wildcard(b):
        if b.endswith(a[1:]):
            return b
        if a.endswith(b[1:]):
            return a
    return False


def specificity(hostname: str | None) -> tuple[int, int]:
    """Order of preference for a Host among listener hostnames: exact, then the longest wildcard, then none."""
    if hostname is None:
        return (0, 0)
    if is_wildcard(hostname):
        return (1, len(hostname))
    return (2, len(hostname))


def mismatch_reason(pattern: str, host: str) -> str:
    pattern = pattern.lower()
    if is_wildcard(pattern):
        base = pattern[2:]
        if host == base:
            return f"wildcard {pattern} needs at least one label before {base}; {host} has none"
        return f"{host} does not end in {pattern[1:]}"
    return f"hostname {pattern} is not {host or '<empty Host header>'}"
