"""``knetsim trace``: one connection, layer by layer, with the failing hop marked."""

from __future__ import annotations

import sys

import click

from ..network.trace import Trace, TraceInputError
from ..network.tracer import trace
from ..policy.engine import PolicyInputError
from .common import EXIT_BAD_INPUT, EXIT_NEGATIVE, cluster_options, emit, load_cluster, print_notices

MARKS = {"ok": ("✓", "green"), "fail": ("✗", "red"), "skip": ("·", None), "info": ("i", "cyan")}


def render_trace(result: Trace) -> str:
    lines = [f"Trace {result.source} → {result.target} ({result.protocol}, data plane {result.dataplane})"]
    failing = result.failing_hop
    for hop in result.hops:
        mark, color = MARKS.get(hop.verdict, ("?", None))
        text = f"  {click.style(mark, fg=color) if color else mark} {hop.layer:<10} {hop.detail}"
        if hop is failing:
            text += click.style("   ◀ here", fg="red", bold=True)
        lines.append(text)
    outcome = result.outcome
    if result.reply is not None and result.reply.status is not None:
        outcome += f" (HTTP {result.reply.status})"
    lines.append(f"Outcome: {click.style(outcome, fg='green' if result.connected else 'red', bold=True)}")
    if result.backend is not None:
        ip = result.backend.ip
        lines.append(f"Backend: {result.backend.pod} {f'[{ip}]' if ':' in ip else ip}:{result.backend.port}")
    if result.findings:
        lines.append("Findings:")
        for finding in result.findings:
            lines.append(f"  - [{finding.layer}] {finding.message}")
            if finding.fix:
                lines.append(f"    fix: {finding.fix}")
    return "\n".join(lines) + "\n"


def succeeded(result: Trace) -> bool:
    """Connected, and the application answered without an error (no 4xx/5xx, no empty reply)."""
    return result.connected and not any(h.layer == "app" and h.verdict == "fail" for h in result.hops)


@click.command("trace")
@click.argument("target")
@click.option("--from", "source", required=True, help="ns/pod, or external (a client outside the cluster).")
@click.option("--proto", "protocol", type=click.Choice(["TCP", "UDP", "SCTP"], case_sensitive=False), default="TCP",
              show_default=True)
@click.option("--method", default="GET", show_default=True, help="HTTP method, for HTTP targets.")
@click.option("-H", "--header", "headers", multiple=True, help="HTTP header 'Name: value' (repeatable).")
@click.option("--dataplane", type=click.Choice(["iptables", "nftables", "ebpf"]), default=None,
              help="Override the cluster config's data plane.")
@cluster_options
@click.option("-o", "--output", type=click.Choice(["text", "json", "yaml"]), default="text", show_default=True)
def trace_command(target: str, source: str, protocol: str, method: str, headers: tuple[str, ...],
                  dataplane: str | None, filenames: tuple[str, ...], namespace: str | None,
                  cluster_config: str | None, output: str) -> None:
    """Can SOURCE reach TARGET? Every layer in order: dns, service, endpoints, dataplane, policy, listener, app.

    TARGET is a URL (http://web.default:80/api), name:port or ip:port.
    Exit code 0 only when the connection succeeds (and an HTTP reply is not an error).

    \b
      knetsim trace -f examples/shop --from shop/web-... http://api.shop:8080/
      knetsim trace -f examples/shop --from external -H 'Host: x' http://shop.example.com/api
    """
    cluster = load_cluster(filenames, namespace, cluster_config)
    print_notices(cluster)
    if source != "external" and source.count("/") == 0:
        source = f"{namespace or cluster.namespace}/{source}"
    elif source != "external" and source.count("/") == 1 and namespace and source.split("/")[0] in (
            "deploy", "deployment", "sts", "statefulset", "ds", "daemonset", "rs", "replicaset", "job"):
        source = f"{namespace}/{source}"
    parsed_headers = {}
    for header in headers:
        name, sep, value = header.partition(":")
        if not sep:
            raise click.BadParameter(f"{header!r}: expected 'Name: value'", param_hint="--header")
        parsed_headers[name.strip()] = value.strip()
    try:
        result = trace(cluster.state, source, target, protocol=protocol.upper(), method=method,
                       headers=parsed_headers, dataplane=dataplane)
    except (TraceInputError, PolicyInputError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if output == "text":
        click.echo(render_trace(result), nl=False)
    else:
        emit(result.to_dict(), output)
    if not succeeded(result):
        sys.exit(EXIT_NEGATIVE)


COMMANDS = [trace_command]
