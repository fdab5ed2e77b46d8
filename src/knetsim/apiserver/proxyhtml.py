"""The API server proxy's HTML rewriting: links in an HTML answer keep pointing through the proxy.

kube-apiserver wraps the transport of its pod, service and node proxies in a rewriting one (kubernetes/kubernetes
``staging/src/k8s.io/apimachinery/pkg/util/proxy/transport.go``): when the backend answers ``text/html``, every
start tag is written back as the tokenizer reads it (``golang.org/x/net/html`` Token.String: lower-case names,
attributes double-quoted and escaped) and the URL attributes of the tags it knows (``atomsToAttrs``) that hold an
absolute path on the same host get the proxy's path in front: ``<a href="/rewriteme">`` from
``pods/NAME/proxy/`` becomes ``<a href="/api/v1/namespaces/NS/pods/NAME/proxy/rewriteme">``. Text, comments and
end tags pass as they came. The proxy e2e test checks exactly this (test/e2e/network/proxy.go).
"""

from __future__ import annotations

import html
import posixpath
import re
from urllib.parse import urlsplit, urlunsplit

# transport.go atomsToAttrs: the attributes of each element that hold a URL.
URL_ATTRIBUTES: dict[str, frozenset[str]] = {
    "a": frozenset({"href"}), "applet": frozenset({"codebase"}), "area": frozenset({"href"}),
    "audio": frozenset({"src"}), "base": frozenset({"href"}), "blockquote": frozenset({"cite"}),
    "body": frozenset({"background"}), "button": frozenset({"formaction"}), "command": frozenset({"icon"}),
    "del": frozenset({"cite"}), "embed": frozenset({"src"}), "form": frozenset({"action"}),
    "frame": frozenset({"longdesc", "src"}), "head": frozenset({"profile"}), "html": frozenset({"manifest"}),
    "iframe": frozenset({"longdesc", "src"}), "img": frozenset({"longdesc", "src", "usemap"}),
    "input": frozenset({"src", "usemap", "formaction"}), "ins": frozenset({"cite"}), "link": frozenset({"href"}),
    "object": frozenset({"classid", "codebase", "data", "usemap"}), "q": frozenset({"cite"}),
    "script": frozenset({"src"}), "source": frozenset({"src"}), "video": frozenset({"poster", "src"}),
}

_START_TAG = re.compile(r"<([a-zA-Z][^\s/>]*)((?:\s+[^\s=/>]+(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>]+))?)*)\s*(/?)>")
_ATTRIBUTE = re.compile(r"([^\s=/>]+)(?:\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+)))?")


def is_html(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() == "text/html"


def _escape(value: str) -> str:
    # html.EscapeString's set, as Token.String writes attribute values.
    for char, escaped in (("&", "&amp;"), ("'", "&#39;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&#34;"),
                          ("\r", "&#13;")):
        value = value.replace(char, escaped)
    return value


def rewrite_url(target: str, path_prepend: str, source_hosts: tuple[str, ...] = ()) -> str:
    """transport.go rewriteURL, for a server-side request (its scheme and host are empty): an absolute path with
    no host or one of ``source_hosts`` (the backend's ``ip:port``, the request's Host) gets ``path_prepend`` in
    front (unless it has it already) and loses scheme and host; anything else stays as it is."""
    try:
        parts = urlsplit(target)
    except ValueError:
        return target
    if (parts.netloc and parts.netloc not in source_hosts) or not parts.path.startswith("/"):
        return target
    path = parts.path
    if not path.startswith(path_prepend):
        joined = posixpath.normpath(f"{path_prepend}/{path}")  # path.Join: one slash between, cleaned
        joined = "/" + joined.lstrip("/")
        path = joined + ("/" if parts.path.endswith("/") and not joined.endswith("/") else "")
    return urlunsplit(("", "", path, parts.query, parts.fragment))


def rewrite_html(body: str, path_prepend: str, source_hosts: tuple[str, ...] = ()) -> str:
    """``body`` with its start tags written back and their URL attributes rewritten (module docstring)."""

    def tag(match: re.Match[str]) -> str:
        name = match.group(1).lower()
        urls = URL_ATTRIBUTES.get(name, frozenset())
        out = [f"<{name}"]
        for attr in _ATTRIBUTE.finditer(match.group(2)):
            key = attr.group(1).lower()
            value = html.unescape(next((g for g in attr.groups()[1:] if g is not None), ""))
            if key in urls:
                value = rewrite_url(value, path_prepend, source_hosts)
            out.append(f' {key}="{_escape(value)}"')
        out.append("/>" if match.group(3) else ">")
        return "".join(out)

    return _START_TAG.sub(tag, body)


def path_prepend(request_path: str, backend_path: str) -> str:
    """upgradeaware.go defaultProxyTransport's PathPrepend: the request's path without the part the backend gets."""
    suffix = backend_path
    if request_path.endswith("/") and not suffix.endswith("/"):
        suffix += "/"
    return request_path[: -len(suffix)] if suffix and request_path.endswith(suffix) else request_path


__all__ = ["URL_ATTRIBUTES", "is_html", "path_prepend", "rewrite_html", "rewrite_url"]
