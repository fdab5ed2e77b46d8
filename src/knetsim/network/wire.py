"""A traced reply's header lines as the server that wrote it sends them on HTTP/1.1.

The simulation's ``Reply`` carries what the writer chose (status, body, its own headers); the lines a
server adds on its way out — ``Date``, ``Content-Length``, ``Connection``, ``server`` — and the case of
their names are the writer's habit:

* ``nginx`` (ingress-nginx): ``Date``, ``Content-Type``, ``Content-Length``, ``Location``,
  ``Connection`` in the order of nginx's header filter (``ngx_http_header_filter_module.c``), then the
  headers the configuration added (``more_set_headers``, ``add_header``) as written. No ``Server``:
  ingress-nginx's template clears it (``more_clear_headers Server``, ``server_tokens off``).
* ``envoy`` (a Gateway's Envoy, Cilium's proxy): lower-case names (Envoy's HTTP/1 codec writes them so).
  A local reply with a body sets ``content-length`` and ``content-type`` first; the connection manager then
  adds ``date`` and ``server: envoy``; a reply without a body gets ``content-length: 0`` from the codec
  last (``date``, ``server``, ``content-length``, as curl shows for a route miss).
* ``""`` (a pod's server): its headers as given, then ``Date`` and ``Content-Length``.

``date`` is the caller's (the live cluster's clock); offline answers show no Date, which keeps them
byte-identical from run to run.
"""

from __future__ import annotations

from .trace import Reply

# nginx writes these itself, in this order, before the configured headers (the filter's own fields).
_NGINX_OWN = ("content-type", "content-length", "location")


def has_body(status: int) -> bool:
    """Whether a Content-Length belongs to the answer (none for 1xx, 204, 304)."""
    return not (100 <= status < 200 or status in (204, 304))


def header_lines(reply: Reply, date: str, *, keep_alive: bool = True) -> list[tuple[str, str]]:
    """The header lines ``reply``'s writer sends, in order, names cased as on the wire."""
    status = reply.status or 200
    length = str(len(reply.body.encode()))
    given = list(reply.headers.items())
    if reply.writer == "nginx":
        own = {k.lower(): (k, v) for k, v in given if k.lower() in _NGINX_OWN}
        out = [("Date", date)]
        # nginx writes its own fields with its own spelling, whatever case the upstream used.
        if "content-type" in own:
            out.append(("Content-Type", own["content-type"][1]))
        if "content-length" in own:
            out.append(("Content-Length", own["content-length"][1]))
        elif has_body(status):
            out.append(("Content-Length", length))
        if "location" in own:
            out.append(("Location", own["location"][1]))
        out.append(("Connection", "keep-alive" if keep_alive else "close"))
        # An upstream's Date and Server never pass (proxy_hide_header's defaults); nginx's own Server is cleared.
        out.extend((k, v) for k, v in given if k.lower() not in (*_NGINX_OWN, "date", "server"))
        return out
    if reply.writer == "envoy":
        rest = [(k.lower(), v) for k, v in given if k.lower() not in ("content-length", "date", "server")]
        if reply.body and not any(k == "content-type" for k, _ in rest):
            rest.insert(0, ("content-type", "text/plain"))  # a local reply's body is text/plain
        trailer = [] if keep_alive else [("connection", "close")]
        if reply.body:
            return [("content-length", length), *rest, ("date", date), ("server", "envoy"), *trailer]
        tail = [("content-length", "0")] if has_body(status) else []
        return [*rest, ("date", date), ("server", "envoy"), *tail, *trailer]
    out = [(k, v) for k, v in given if k.lower() not in ("content-length", "date")]
    out.append(("Date", date))
    if has_body(status):
        out.append(("Content-Length", length))
    if not keep_alive:
        out.append(("Connection", "close"))
    return out
