"""``knetsim endpoints SERVICE``: why a Service has (or lacks) ready endpoints."""

from __future__ import annotations

import sys

import click

from ..cluster.explain import NotFound, explain_endpoints
from .common import (
    EXIT_BAD_INPUT,
    EXIT_NEGATIVE,
    cluster_options,
    emit,
    load_cluster,
    output_option,
    print_notices,
    tabulate,
)


@click.command("endpoints")
@click.argument("service")
@cluster_options
@output_option("text", "json", "yaml")
def endpoints_command(service: str, filenames: tuple[str, ...], namespace: str | None,
                      cluster_config: str | None, output: str) -> None:
    """Explain a Service's endpoints: matched pods, readiness, resolved ports, near-miss labels.

    Exit code 1 when the Service has no ready endpoint.
    """
    cluster = load_cluster(filenames, namespace, cluster_config)
    print_notices(cluster)
    ns = namespace or cluster.namespace
    if "/" in service:
        ns, _, service = service.partition("/")
    try:
        result = explain_endpoints(cluster.state, ns, service)
    except NotFound as exc:
        click.echo(f"Error from server (NotFound): {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if output != "text":
        emit(result.to_dict(), output)
    else:
        click.echo(f"Service:   {result.service} ({result.type})")
        click.echo(f"Selector:  {result.selector if result.selector is not None else '<none>'}")
        click.echo(f"Slices:    {', '.join(result.slices) or '<none>'}")
        click.echo(f"Verdict:   {result.verdict}")
        if result.pods:
            click.echo("")
            rows = [[p.pod, p.ip or "<none>", p.node or "<none>", "yes" if p.ready else "no",
                     ", ".join(p.ports) or "<none>", p.reason or "-"] for p in result.pods]
            click.echo(tabulate(["POD", "IP", "NODE", "READY", "PORTS", "WHY NOT READY"], rows), nl=False)
        for hint in result.hints:
            click.echo(f"\nHint: selector wants {hint.wanted}; the closest label on a pod is {hint.nearest} "
                       f"({hint.how}). A typo?")
        for problem in result.problems:
            click.echo(f"Problem: {problem}")
    if not result.has_ready_endpoints:
        sys.exit(EXIT_NEGATIVE)


COMMANDS = [endpoints_command]
