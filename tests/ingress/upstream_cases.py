"""Cases copied from upstream, kept apart from knetsim's own tests.

PATH_EXAMPLES: the "Examples" table of the Kubernetes docs, row by row
  kubernetes/website content/en/docs/concepts/services-networking/ingress.md,
  section "Path types" → "Examples" (same table in ../shared/reference/
  dataplane-dns-ingress-validation.md §6.2). Columns: kind, path(s), request path(s),
  expected — the rule path that serves the request, or None for "No".
  "(all paths)" is expanded to a few representative request paths.

HOST_EXAMPLES: the "Hostname wildcards" table of the same page.

CONFORMANCE_PATHS / CONFORMANCE_HOSTS: kubernetes-sigs/ingress-controller-conformance
  features/path_rules.feature and host_rules.feature (HEAD f91a7996): request → the
  backend Service that must answer, or None for 404.
"""

from __future__ import annotations

ALL_PATHS = ("/", "/foo", "/aaa/bbb/ccc", "/x/", "/FOO")

# (kind, [(path, pathType)], [request paths], expected served path or None)
PATH_EXAMPLES: list[tuple[str, list[tuple[str, str]], tuple[str, ...], str | None]] = [
    ("Prefix", [("/", "Prefix")], ALL_PATHS, "/"),
    ("Exact", [("/foo", "Exact")], ("/foo",), "/foo"),
    ("Exact", [("/foo", "Exact")], ("/bar",), None),
    ("Exact", [("/foo", "Exact")], ("/foo/",), None),
    ("Exact", [("/foo/", "Exact")], ("/foo",), None),
    ("Prefix", [("/foo", "Prefix")], ("/foo", "/foo/"), "/foo"),
    ("Prefix", [("/foo/", "Prefix")], ("/foo", "/foo/"), "/foo/"),
    ("Prefix", [("/aaa/bb", "Prefix")], ("/aaa/bbb",), None),
    ("Prefix", [("/aaa/bbb", "Prefix")], ("/aaa/bbb",), "/aaa/bbb"),
    ("Prefix", [("/aaa/bbb/", "Prefix")], ("/aaa/bbb",), "/aaa/bbb/"),  # Yes, ignores trailing slash
    ("Prefix", [("/aaa/bbb", "Prefix")], ("/aaa/bbb/",), "/aaa/bbb"),  # Yes, matches trailing slash
    ("Prefix", [("/aaa/bbb", "Prefix")], ("/aaa/bbb/ccc",), "/aaa/bbb"),  # Yes, matches subpath
    ("Prefix", [("/aaa/bbb", "Prefix")], ("/aaa/bbbxyz",), None),  # No, does not match string prefix
    ("Prefix", [("/", "Prefix"), ("/aaa", "Prefix")], ("/aaa/ccc",), "/aaa"),  # Yes, matches /aaa prefix
    ("Prefix", [("/", "Prefix"), ("/aaa", "Prefix"), ("/aaa/bbb", "Prefix")], ("/aaa/bbb",), "/aaa/bbb"),
    ("Prefix", [("/", "Prefix"), ("/aaa", "Prefix"), ("/aaa/bbb", "Prefix")], ("/ccc",), "/"),  # matches / prefix
    ("Prefix", [("/aaa", "Prefix")], ("/ccc",), None),  # No, uses default backend
    ("Mixed", [("/foo", "Prefix"), ("/foo", "Exact")], ("/foo",), "/foo"),  # Yes, prefers Exact (asserted apart)
]

# (rule host, Host header, matches?)
HOST_EXAMPLES = [
    ("*.foo.com", "bar.foo.com", True),  # Matches based on shared suffix
    ("*.foo.com", "baz.bar.foo.com", False),  # No match, wildcard only covers a single DNS label
    ("*.foo.com", "foo.com", False),  # No match, wildcard only covers a single DNS label
]

# path_rules.feature: hosts exact-path-rules / prefix-path-rules / mixed-path-rules / trailing-slash-path-rules
CONFORMANCE_PATH_INGRESSES = {
    "exact-path-rules": [("/foo", "Exact", "foo-exact")],
    "prefix-path-rules": [("/foo", "Prefix", "foo-prefix"), ("/aaa/bbb", "Prefix", "aaa-slash-bbb-prefix"),
                          ("/aaa", "Prefix", "aaa-prefix")],
    "mixed-path-rules": [("/foo", "Prefix", "foo-prefix"), ("/foo", "Exact", "foo-exact")],
    "trailing-slash-path-rules": [("/aaa/bbb/", "Prefix", "aaa-slash-bbb-slash-prefix"),
                                  ("/foo/", "Exact", "foo-slash-exact")],
}
CONFORMANCE_PATHS = [
    ("exact-path-rules", "/foo", "foo-exact"),
    ("exact-path-rules", "/foo/", None),
    ("exact-path-rules", "/FOO", None),
    ("exact-path-rules", "/bar", None),
    ("prefix-path-rules", "/foo", "foo-prefix"),
    ("prefix-path-rules", "/foo/", "foo-prefix"),
    ("prefix-path-rules", "/FOO", None),
    ("prefix-path-rules", "/aaa/bbb", "aaa-slash-bbb-prefix"),
    ("prefix-path-rules", "/aaa/bbb/ccc", "aaa-slash-bbb-prefix"),
    ("prefix-path-rules", "/aaa/ccc", "aaa-prefix"),
    ("prefix-path-rules", "/aaaccc", None),
    ("mixed-path-rules", "/foo", "foo-exact"),
    ("trailing-slash-path-rules", "/aaa/bbb", "aaa-slash-bbb-slash-prefix"),
    ("trailing-slash-path-rules", "/aaa/bbb/", "aaa-slash-bbb-slash-prefix"),
    ("trailing-slash-path-rules", "/foo", None),
]

# host_rules.feature: `*.foo.com` → wildcard-foo-com, `foo.bar.com` → foo-bar-com (port by name, TLS for foo.bar.com)
CONFORMANCE_HOSTS = [
    ("https", "foo.bar.com", "foo-bar-com"),
    ("http", "foo.bar.com", "foo-bar-com"),
    ("http", "subdomain.bar.com", None),
    ("http", "bar.foo.com", "wildcard-foo-com"),
    ("http", "baz.bar.foo.com", None),
    ("http", "foo.com", None),
]
