"""``knetsim overview``: what the cluster would have — the main job of ``make run``."""

from __future__ import annotations

import click

from .common import cluster_options, emit, load_cluster, output_option, print_notices, tabulate


@click.command("overview")
@cluster_options
@output_option("text", "json", "yaml")
@click.option("--system", is_flag=True, help="Include kube-system and ingress-nginx objects.")
def overview_command(filenames: tuple[str, ...], namespace: str | None, cluster_config: str | None, output: str,
                     system: bool) -> None:
    """Summarise the simulated cluster: nodes, pods and IPs, Services with their endpoints, Ingress rules."""
    cluster = load_cluster(filenames, namespace, cluster_config)
    result = cluster.overview() if not system else __import__(
        "knetsim.cluster.explain", fromlist=["overview"]).overview(cluster.state, include_system=True)
    if output != "text":
        emit(result.to_dict(), output)
        return
    print_notices(cluster)
    click.echo("NODES")
    click.echo(tabulate(["NODE", "IP", "POD CIDR"], [[n["node"], n["ip"], n["podCIDR"]] for n in result.nodes]))
    click.echo("PODS")
    click.echo(tabulate(["POD", "NODE", "IP", "STATUS", "READY"],
                        [[p["pod"], p["node"] or "<none>", p["ip"] or "<none>", p["status"],
                          "yes" if p["ready"] else f"no ({p['reason']})"] for p in result.pods]))
    click.echo("SERVICES")
    rows = []
    for s in result.services:
        address = s["clusterIP"] or s["externalName"] or "<none>"
        if s["loadBalancer"]:
            address += " / LB " + ",".join(s["loadBalancer"])
        endpoints = ",".join(s["readyEndpoints"]) or ("<none>" if s["type"] != "ExternalName" else "(CNAME)")
        rows.append([s["service"], s["type"], address, "; ".join(s["ports"]) or "<none>", endpoints])
    click.echo(tabulate(["SERVICE", "TYPE", "ADDRESS", "PORTS", "READY ENDPOINTS"], rows))
    if result.ingresses:
        click.echo("INGRESS")
        for ing in result.ingresses:
            click.echo(f"  {ing['ingress']} (class {ing['class'] or '<none>'})")
            for rule in ing["rules"]:
                click.echo(f"    {rule}")
        click.echo("")
    if result.network_policies:
        click.echo("NETWORK POLICIES")
        for name in result.network_policies:
            click.echo(f"  {name}")


COMMANDS = [overview_command]
