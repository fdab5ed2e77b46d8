"""``knetsim route``: which Ingress (or, with ``--gateway``, which HTTPRoute) and Service:port serve an HTTP request."""

from __future__ import annotations

import sys

import click

from ..ingress import RouteError, RouteResult, route
from ..ingress.errorpages import reason
from ..model.http import EXTERNAL_CLIENT, HTTPRequestError, parse_header
from . import gatewayroute
from .common import EXIT_NEGATIVE, cluster_options, emit, load_cluster, output_option, print_notices, tabulate


def _text(result: RouteResult) -> str:
    req = result.request
    lines = [f"Request:     {req.method} {req.scheme}://{req.host}{req.path}  (port {req.port})"]
    extras = [f"{n}: {v}" for n, v in req.headers]
    if req.body_size is not None:
        extras.append(f"body {req.body_size} bytes")
    if extras:
        lines.append(f"Headers:     {'; '.join(extras)}")
    if req.client_ip != EXTERNAL_CLIENT or any(s.what == "source range" for s in result.steps):
        lines.append(f"Client:      {req.client_ip}")
    if result.controller is not None:
        ctl = result.controller
        pod = f"pod {ctl.pod} {ctl.pod_ip}" if ctl.pod else "no ready pod"
        lines.append(f"Controller:  class {ctl.class_name or '<none>'} ({ctl.controller}), {pod}  [{ctl.selected_by}]")
    else:
        lines.append("Controller:  <none>")
    if result.server is not None:
        lines.append(f"Server:      {result.server}")
    if result.match is not None:
        m = result.match
        lines.append(f"Ingress:     {m.ingress}")
        if m.rule is not None:
            lines.append(f"Rule:        #{m.rule} host {m.host or '*'}")
            lines.append(f"Path:        #{m.path_index} {m.path} ({m.path_type})")
        else:
            lines.append("Path:        <none matched>: spec.defaultBackend")
    if result.backend is not None:
        b = result.backend
        extra = f", targetPort {b.target_port}" if b.target_port else ""
        ready = f", {b.ready_endpoints} ready endpoint(s)" if b.ready_endpoints is not None else ""
        lines.append(f"Backend:     {b.describe()}{extra}{ready}")
        if b.problem:
            lines.append(f"Problem:     {b.problem}")
    up = result.upstream_request
    if up is not None and result.routed:
        changed = [f"{k}: {v}" for k, v in up.headers.items() if k in ("x-forwarded-prefix", "x-code")]
        if up.host != req.host:
            changed.insert(0, f"Host: {up.host}")
        if result.upstream != req.path or changed:
            lines.append(f"Upstream:    {up.method} {result.upstream}" + (f"  ({'; '.join(changed)})" if changed
                                                                        else "  (rewrite-target)"))
    for step in result.steps:
        lines.append(f"Annotation:  {step}")
    if result.burst is not None:
        b = result.burst
        lines.append(f"Burst:       {b.requests} requests at once: {b.allowed} through"
                     + (f", {b.rejected} get {b.status}" if b.rejected else "") + f" ({b.why})")
    lines.append(f"TLS:         {result.tls.detail}")
    if result.response is not None:
        shown = [f"{k}: {v}" for k, v in result.response.headers.items() if k != "Content-Type"]
        lines.append(f"Response:    {result.response.status} {reason(result.response.status)}"
                     + (f"  ({'; '.join(shown)})" if shown else ""))
    elif result.response_headers:
        lines.append("Response:    headers added to the backend's answer: "
                     + "; ".join(f"{k}: {v}" for k, v in result.response_headers.items()))
    status = f" (HTTP {result.http_status})" if result.http_status else ""
    lines.append(f"Outcome:     {result.outcome}{status}")
    lines.append(f"Why:         {result.summary}")
    others = [c for c in result.candidates if c.verdict != "chosen"]
    out = "\n".join(lines) + "\n"
    if others:
        rows = [[c.ingress, "default" if c.rule is None else str(c.rule),
                 "-" if c.host is None else (c.host or "*"), c.path or "-", c.path_type or "-", c.backend,
                 f"{c.verdict}: {c.reason}"] for c in others]
        out += "\nOther candidates:\n" + tabulate(["INGRESS", "RULE", "HOST", "PATH", "TYPE", "BACKEND", "WHY NOT"],
                                                 rows)
    for note in result.notes:
        out += f"\nNote: {note}"
    if result.notes:
        out += "\n"
    return out


@click.command("route")
@click.option("--host", default=None,
              help="The request's Host header (a port is ignored, as nginx and Envoy do); the TLS SNI by default.")
@click.option("--path", default="/", show_default=True,
              help="The request path, with a query string (Gateway API query matches read it; Ingress ignores it).")
@click.option("--class", "class_name", default=None,
              help="IngressClass whose controller receives the request (default: the default class's, "
                   "else the only running controller).")
@click.option("--gateway", default=None, metavar="NS/NAME",
              help="Send the request to this Gateway (Gateway API) instead of the Ingress controller.")
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="With --gateway: the listener port the request arrives on (default 80, or 443 for https).")
@click.option("--scheme", type=click.Choice(["http", "https"]), default="http", show_default=True,
              help="https arrives on port 443 and terminates TLS at the controller (or an HTTPS listener).")
@click.option("--method", default="GET", show_default=True,
              help="The request method (Gateway API method matches; an OPTIONS with Origin is a CORS preflight).")
@click.option("--header", "headers", multiple=True, metavar="'NAME: VALUE'",
              help="A request header, as curl -H (repeatable): Origin, Authorization, Cookie, canary headers, "
                   "X-Forwarded-For; Gateway API header matches and modifiers; gRPC metadata.")
@click.option("--client-ip", default=None, metavar="ADDR",
              help=f"The address the request comes from (default {EXTERNAL_CLIENT}); X-Forwarded-For counts only "
                   "where the controller's ConfigMap sets use-forwarded-headers.")
@click.option("--body-size", type=click.IntRange(0), default=None, metavar="BYTES",
              help="The request's Content-Length (proxy-body-size: 413 above the limit).")
@click.option("--burst", type=click.IntRange(1, 1_000_000), default=None, metavar="N",
              help="N requests at once from the same address: what limit-rps / limit-connections (with --gateway: "
                   "a BackendTrafficPolicy's local rate limit) let through.")
@click.option("--protocol", type=click.Choice(gatewayroute.PROTOCOLS), default=None,
              help="With --gateway: what the client speaks (default: --scheme's); grpc is h2c, or TLS with "
                   "--scheme https; tls, tcp and udp need --port.")
@click.option("--sni", default=None, metavar="NAME",
              help="With --gateway: the TLS server name the client sends (default: the host).")
@click.option("--grpc-method", default=None, metavar="PKG.SERVICE/METHOD", help="With --protocol grpc: the call.")
@click.option("--client-cert", default=None, metavar="FILE",
              help="With --gateway: a PEM client certificate (and chain) the client presents in the TLS handshake.")
@cluster_options
@output_option("text", "json", "yaml")
def route_command(host: str | None, path: str, class_name: str | None, gateway: str | None, port: int | None,
                  scheme: str, method: str, headers: tuple[str, ...], client_ip: str | None, body_size: int | None,
                  burst: int | None, protocol: str | None, sni: str | None, grpc_method: str | None,
                  client_cert: str | None, filenames: tuple[str, ...], namespace: str | None,
                  cluster_config: str | None, output: str) -> None:
    """Route one HTTP request through the Ingresses — or, with --gateway, through a Gateway's HTTPRoutes:
    which rule and Service:port serve it, and why every other candidate did not.

    Exit code 0 when the request is proxied to a Service, 1 when the controller or gateway answers
    itself (404, 500, 503, a redirect, no listener), 2 on bad input.

    \b
        knetsim route -f examples/shop --host shop.example.com --path /api/orders
        knetsim route -f examples/gateway/quickstart --gateway default/eg --host www.example.com --path /get
        knetsim route -f DIR --gateway NS/NAME --protocol tls --port 443 --sni db.example.com
    """
    if gateway is None and port is not None:
        raise click.UsageError("--port applies to --gateway (an Ingress controller listens on 80 and 443)")
    if gateway is None and (protocol or sni or grpc_method or client_cert):
        raise click.UsageError("--protocol, --sni, --grpc-method and --client-cert apply to --gateway")
    if gateway is None and host is None:
        raise click.UsageError("Missing option '--host'.")
    if gateway is not None and class_name is not None:
        raise click.UsageError("--class selects an Ingress controller; it cannot be combined with --gateway")
    cluster = load_cluster(filenames, namespace, cluster_config)
    print_notices(cluster)
    if gateway is not None:
        ref = gateway if "/" in gateway else f"{namespace or cluster.namespace}/{gateway}"
        gatewayroute.run(cluster.state, ref, protocol=protocol or scheme, host=host, path=path, method=method,
                         port=port, scheme=scheme, headers=headers, sni=sni, grpc_method=grpc_method,
                         client_cert=client_cert, client_ip=client_ip, body_size=body_size, output=output,
                         burst=burst)
        return
    assert host is not None  # checked above for the Ingress branch
    try:
        parsed = tuple(parse_header(h) for h in headers)
    except HTTPRequestError as exc:
        raise click.BadParameter(str(exc), param_hint="'--header'") from None
    try:
        result = route(cluster.state, host, path, class_name=class_name, scheme=scheme, method=method,
                       headers=parsed, client_ip=client_ip, body_size=body_size, burst=burst)
    except RouteError as exc:
        hint = "'--client-ip'" if "client address" in str(exc) else "'--method'" if "method" in str(exc) else "'--path'"
        raise click.BadParameter(str(exc), param_hint=hint) from None
    if output == "text":
        click.echo(_text(result), nl=False)
    else:
        emit(result.to_dict(), output)
    if not result.routed and not (result.outcome == "passed-through" and result.backend is not None and
                                  result.backend.routable):
        sys.exit(EXIT_NEGATIVE)


COMMANDS = [route_command]
