"""``knetsim matrix``: what policy allows between workloads (or pods), in every format, and the explorer."""

from __future__ import annotations

import sys
from typing import Any

import click

from .common import cluster_options, emit, load_cluster, output_option, usage_error

PROTOCOL = click.Choice(["TCP", "UDP", "SCTP"], case_sensitive=False)


@click.command("matrix")
@cluster_options
@click.option("--pods", is_flag=True, help="Answer per pod instead of per workload (streamed: any size).")
@click.option("--include-system", is_flag=True,
              help="Keep the pods knetsim adds itself (kube-system, ingress-nginx) as rows.")
@click.option("--port", type=click.IntRange(1, 65535), default=80, show_default=True,
              help="Port of the grid (table) and of the explorer's first view (html).")
@click.option("--proto", "protocol", type=PROTOCOL, default="TCP", show_default=True)
@click.option("--exposure", is_flag=True,
              help="Instead of pairs: the workloads that accept connections from any namespace, from outside the "
                   "cluster or through an Ingress/Gateway, on which ports, and the rule that opens each.")
@output_option("table", "list", "json", "yaml", "csv", "dot", "html", default="table")
def matrix(filenames: tuple[str, ...], namespace: str | None, cluster_config: str | None, pods: bool,
           include_system: bool, port: int, protocol: str, exposure: bool, output: str) -> None:
    """What policy allows between every ordered pair of workloads (and external ranges).

    Rows are workloads (ns/name[Kind]); --pods gives one row per pod. -n NS keeps that
    namespace's rows; policies of every namespace still count. -o html writes the explorer,
    one self-contained page. --exposure lists each workload's ways in instead.
    """
    from ..policy.matrix import matrix as build_matrix
    from ..policy.render import WRITERS, write_table

    cluster = load_cluster(filenames, namespace, cluster_config)
    if exposure:
        _exposure(cluster, namespace, include_system, output)
        return
    m = build_matrix(cluster.state, namespace, pods=pods, include_system=include_system)
    stream = sys.stdout
    if output == "table":
        write_table(m, stream, protocol.upper(), port)
    elif output == "html":
        from ..explorer.page import page

        stream.write(page(cluster.state, m, protocol.upper(), port))
    else:
        WRITERS[output](m, stream)
    stream.flush()


def _exposure(cluster: Any, namespace: str | None, include_system: bool, output: str) -> None:
    from ..network.exposure import exposure

    found = exposure(cluster.state, namespace, include_system=include_system)
    if output in ("json", "yaml"):
        emit({"workloads": [e.to_dict() for e in found]}, output)
        return
    if output not in ("table", "list"):
        usage_error(f"--exposure prints text (table, list), json or yaml, not {output}")
    if not found:
        click.echo("No workload accepts connections from any namespace, from outside the cluster, or through an "
                   "Ingress or a Gateway.")
    for e in found:
        click.echo(e.workload)
        for o in e.openings:
            closed = "" if o.admitted else " (policy does not let the proxy in)"
            click.echo(f"  {o.via}: {o.allowed.describe()}{closed}")
            click.echo(f"    {o.peer}")
            if o.rule:
                click.echo(f"    {o.rule}")


COMMANDS = [matrix]
