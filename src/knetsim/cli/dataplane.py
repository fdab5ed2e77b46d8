"""``knetsim render`` (what a data plane programs) and ``knetsim packet`` (one packet through it)."""

from __future__ import annotations

import sys

import click

from ..dataplane import BACKENDS, Connection, DataplaneError, Packet, render, trace_connections, trace_packet
from ..dataplane.model import join_host_port
from .common import EXIT_NEGATIVE, cluster_options, emit, load_cluster, output_option, print_notices

_COST_UNIT = {"iptables": "rules evaluated", "nftables": "rules evaluated (incl. map lookups)",
              "ebpf": "BPF map lookups"}


KUBE_PROXY_MODES = ("iptables", "nftables")


def no_kube_proxy(mode: str) -> str:
    """Why an ebpf cluster has no kube-proxy rules to show (the seed's `iptables-save | grep -c KUBE-` is 0)."""
    return (f"this cluster runs no kube-proxy: its dataplane is ebpf (Cilium's kube-proxy replacement), so no node "
            f"holds kube-proxy's {mode} rules; `knetsim render ebpf` shows the BPF maps Cilium programs instead "
            f"(a cluster config with dataplane: {mode} shows what kube-proxy would program)")


@click.command("render")
@click.argument("dataplane", required=False, type=click.Choice(list(BACKENDS)))
@cluster_options
@click.option("--node", default=None, help="Node whose rules to show (default: the first worker).")
@output_option("text", "json")
def render_command(dataplane: str | None, filenames: tuple[str, ...], namespace: str | None,
                   cluster_config: str | None, node: str | None, output: str) -> None:
    """Print what a data plane programs on a node: iptables-save text, nft list ruleset, or Cilium's BPF maps.

    DATAPLANE defaults to the cluster config's `dataplane`.
    """
    cluster = load_cluster(filenames, namespace, cluster_config)
    print_notices(cluster)
    if dataplane in KUBE_PROXY_MODES and cluster.state.config.dataplane == "ebpf":
        click.echo(f"error: {no_kube_proxy(dataplane)}", err=True)
        sys.exit(EXIT_NEGATIVE)
    try:
        ruleset = render(cluster.state, dataplane, node)
    except DataplaneError as exc:
        raise click.UsageError(str(exc)) from None
    if output == "json":
        emit(ruleset.to_dict(), output)
    else:
        click.echo(ruleset.text, nl=False)


@click.command("packet")
@cluster_options
@click.option("--src", "--client", "src", required=True, help="Source IP (a pod, a node, or an outside client).")
@click.option("--dst", required=True, help="Destination IP (ClusterIP, node IP, LoadBalancer or external IP).")
@click.option("--dport", required=True, type=int, help="Destination port.")
@click.option("--proto", default="TCP", show_default=True, type=click.Choice(["TCP", "UDP", "SCTP"],
                                                                              case_sensitive=False))
@click.option("--node", default=None, help="Node the packet arrives on (default: derived from --dst/--src).")
@click.option("--dataplane", type=click.Choice(list(BACKENDS)), default=None,
              help="Data plane to trace through (default: the cluster config's).")
@click.option("--count", default=1, show_default=True, type=int,
              help="New connections from the client, one after the other (sessionAffinity pins the next ones).")
@click.option("--interval", default=1.0, show_default=True, type=float,
              help="Seconds between two connections (--count); longer than timeoutSeconds lets affinity expire.")
@output_option("text", "json")
def packet_command(filenames: tuple[str, ...], namespace: str | None, cluster_config: str | None, src: str,
                   dst: str, dport: int, proto: str, node: str | None, dataplane: str | None, count: int,
                   interval: float, output: str) -> None:
    """Trace one packet through the rules a data plane programmed: what matched, where it goes.

    With --count N, N connections from the same client (--client, the same as --src), --interval
    seconds apart: each one's backend, and whether the data plane's session affinity pinned it.

    Exit code 0 when the packet is DNATed to a backend or accepted, 1 when it is rejected,
    dropped or matches no Service (not a Service address).
    """
    cluster = load_cluster(filenames, namespace, cluster_config)
    print_notices(cluster)
    try:
        packet = Packet(src, dst, dport, proto.upper(), node)
        if count != 1:
            connections = trace_connections(cluster.state, packet, count, interval, dataplane)
            _print_connections(connections, output)
            if not all(c.result.ok for c in connections):
                sys.exit(EXIT_NEGATIVE)
            return
        result = trace_packet(cluster.state, packet, dataplane)
    except DataplaneError as exc:
        raise click.UsageError(str(exc)) from None
    if output == "json":
        emit(result.to_dict(), output)
    else:
        click.echo(f"Packet:      {packet.src} -> {join_host_port(packet.dst, dport)}/{proto.upper()}")
        click.echo(f"Data plane:  {result.backend} on node {result.node}")
        click.echo(f"Service:     {result.service or '<none>'}")
        click.echo(f"Verdict:     {result.verdict}")
        if result.targets:
            targets = ", ".join(f"{t.address} ({t.probability:.0%})" for t in result.targets)
            click.echo(f"Targets:     {targets}")
            click.echo(f"Masquerade:  {'yes' if result.masquerade else 'no'}")
        click.echo(f"Cost:        {result.cost} {_COST_UNIT[result.backend]}")
        if result.steps:
            click.echo("\nMatched:")
            width = max(len(s.where) for s in result.steps)
            for s in result.steps:
                click.echo(f"  {s.where.ljust(width)}  {s.text}")
        for note in result.notes:
            click.echo(f"Note: {note}")
    if not result.ok:
        sys.exit(EXIT_NEGATIVE)


def _print_connections(connections: list[Connection], output: str) -> None:
    if output == "json":
        emit([c.to_dict() for c in connections], output)
        return
    first = connections[0].result
    click.echo(f"Client:      {first.packet.src} -> {join_host_port(first.packet.dst, first.packet.dport)}/"
               f"{first.packet.proto}, {len(connections)} connections")
    click.echo(f"Data plane:  {first.backend} on node {first.node}")
    click.echo(f"Service:     {first.service or '<none>'}\n")
    rows = [("#", "AT", "VERDICT", "BACKEND", "WHY")]
    for c in connections:
        if c.result.verdict != "DNAT":
            why = c.result.notes[-1] if c.result.notes else ""
        elif c.result.pinned:
            why = f"pinned: {c.result.affinity}"
        else:
            why = f"balanced over {len(c.result.targets)} endpoints" if len(c.result.targets) > 1 else \
                "the only endpoint"
            if c.result.affinity:
                why += f" ({c.result.affinity})"
            if c.remembered:
                why += f"; remembered in {c.remembered}"
        rows.append((str(c.index), f"{c.at:g}s", c.result.verdict, c.backend or "-", why))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        click.echo("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4])


COMMANDS = [render_command, packet_command]
