"""``knetsim matrix``: what policy allows between workloads (or pods), in every format, and the explorer."""

from __future__ import annotations

import sys

import click

from .common import cluster_options, load_cluster, output_option

PROTOCOL = click.Choice(["TCP", "UDP", "SCTP"], case_sensitive=False)


@click.command("matrix")
@cluster_options
@click.option("--pods", is_flag=True, help="Answer per pod instead of per workload (streamed: any size).")
@click.option("--include-system", is_flag=True,
              help="Keep the pods knetsim adds itself (kube-system, ingress-nginx) as rows.")
@click.option("--port", type=click.IntRange(1, 65535), default=80, show_default=True,
              help="Port of the grid (table) and of the explorer's first view (html).")
@click.option("--proto", "protocol", type=PROTOCOL, default="TCP", show_default=True)
@output_option("table", "list", "json", "yaml", "csv", "dot", "html", default="table")
def matrix(filenames: tuple[str, ...], namespace: str | None, cluster_config: str | None, pods: bool,
           include_system: bool, port: int, protocol: str, output: str) -> None:
    """What policy allows between every ordered pair of workloads (and external ranges).

    Rows are workloads (ns/name[Kind]); --pods gives one row per pod. -n NS keeps that
    namespace's rows; policies of every namespace still count. -o html writes the explorer,
    one self-contained page.
    """
    from ..policy.matrix import matrix as build_matrix
    from ..policy.render import WRITERS, write_table

    cluster = load_cluster(filenames, namespace, cluster_config)
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


COMMANDS = [matrix]
