"""``knetsim route``: which Ingress, rule, path and Service:port would serve an HTTP request."""

from __future__ import annotations

import sys

import click

from ..ingress import RouteError, RouteResult, route
from .common import EXIT_NEGATIVE, cluster_options, emit, load_cluster, output_option, print_notices, tabulate


def _text(result: RouteResult) -> str:
    req = result.request
    lines = [f"Request:     GET {req.scheme}://{req.host}{req.path}  (port {req.port})"]
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
    lines.append(f"TLS:         {result.tls.detail}")
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
@click.option("--host", required=True, help="The request's Host header (a port is ignored, as nginx does).")
@click.option("--path", default="/", show_default=True, help="The request path (query string ignored).")
@click.option("--class", "class_name", default=None,
              help="IngressClass whose controller receives the request (default: the default class's, "
                   "else the only running controller).")
@click.option("--scheme", type=click.Choice(["http", "https"]), default="http", show_default=True,
              help="https arrives on port 443 and terminates TLS at the controller.")
@cluster_options
@output_option("text", "json", "yaml")
def route_command(host: str, path: str, class_name: str | None, scheme: str, filenames: tuple[str, ...],
                  namespace: str | None, cluster_config: str | None, output: str) -> None:
    """Route one HTTP request through the Ingresses: which Ingress, rule, path and Service:port serve it,
    and why every other path did not.

    Exit code 0 when a Service backend is chosen, 1 otherwise (404, missing backend, no controller).

        knetsim route -f examples/shop --host shop.example.com --path /api/orders
    """
    cluster = load_cluster(filenames, namespace, cluster_config)
    print_notices(cluster)
    try:
        result = route(cluster.state, host, path, class_name=class_name, scheme=scheme)
    except RouteError as exc:
        raise click.BadParameter(str(exc), param_hint="'--path'") from None
    if output == "text":
        click.echo(_text(result), nl=False)
    else:
        emit(result.to_dict(), output)
    if not result.routed:
        sys.exit(EXIT_NEGATIVE)


COMMANDS = [route_command]
