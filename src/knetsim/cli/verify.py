"""``knetsim verify kernel`` and ``knetsim verify nginx``: the simulation against a real Linux network stack, and
the Ingress side against a real nginx."""

from __future__ import annotations

import sys

import click

from .common import EXIT_BAD_INPUT, EXIT_NEGATIVE, EXIT_OK, cluster_options, dump_json, load_cluster, output_option


@click.group("verify")
def verify() -> None:
    """Check knetsim's answers against an independent source: the Linux kernel, or a real nginx."""


@verify.command("kernel")
@cluster_options
@click.option("--dataplane", type=click.Choice(["iptables", "nftables"]), default=None,
              help="kube-proxy mode to load (default: the cluster config's data plane).")
@click.option("--max-flows", type=click.IntRange(1, 5000), default=None,
              help="Probe at most this many flows; above it a deterministic sample is taken and printed.")
@output_option("text", "json")
def kernel(filenames: tuple[str, ...], namespace: str | None, cluster_config: str | None, dataplane: str | None,
           max_flows: int | None, output: str) -> None:
    """Build the cluster as network namespaces, send every flow for real, compare with `knetsim trace`.

    One namespace per node (kube-proxy's rules as `knetsim render` prints them, NetworkPolicy as
    nftables from knetsim's policy engine), one per pod (listeners answering as the simulated
    apps), cluster DNS served at the kube-dns ClusterIP. Needs root; everything is removed at
    the end. Exit 0: every flow agrees; 1: a disagreement (each is printed with both sides);
    2: bad input, or this machine cannot build namespaces.
    """
    from ..kernel import KernelError, PlanError, Unavailable, missing_requirements
    from ..kernel.topology import terminating_as_interrupt
    from ..kernel.verify import MAX_FLOWS, format_report
    from ..kernel.verify import verify as run

    cluster = load_cluster(filenames, namespace, cluster_config)
    state = cluster.state
    plane = dataplane or state.config.dataplane
    if plane not in ("iptables", "nftables"):
        click.echo(f"error: data plane {plane!r} cannot be loaded into the kernel: use --dataplane iptables or "
                   "--dataplane nftables (ebpf needs Cilium's agent, not rules)", err=True)
        sys.exit(EXIT_BAD_INPUT)
    missing = missing_requirements(plane)
    if missing:
        click.echo("error: knetsim verify kernel cannot run here:", err=True)
        for item in missing:
            click.echo(f"  - {item}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    try:
        with terminating_as_interrupt():
            report = run(state, plane, max_flows=max_flows or MAX_FLOWS)
    except (Unavailable, PlanError, KernelError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        click.echo("interrupted: the namespaces were removed", err=True)
        sys.exit(130)
    if output == "json":
        click.echo(dump_json(report.to_dict()), nl=False)
    else:
        click.echo(format_report(report), nl=False)
    sys.exit(EXIT_NEGATIVE if report.disagree else EXIT_OK)


@verify.command("nginx")
@cluster_options
@click.option("--class", "class_name", default=None,
              help="IngressClass whose controller's Ingresses are rendered (default as `route`).")
@click.option("--max-requests", type=click.IntRange(1, 100000), default=None,
              help="Send at most this many requests (the first of the generated set).")
@click.option("--keep", default=None, metavar="DIR",
              help="Copy the scratch directory (nginx.conf, logs, htpasswd files) to DIR after the run.")
@output_option("text", "json", "conf")
def nginx(filenames: tuple[str, ...], namespace: str | None, cluster_config: str | None, class_name: str | None,
          max_requests: int | None, keep: str | None, output: str) -> None:
    """Render the nginx configuration ingress-nginx would write for these Ingresses, run a real nginx with it on
    loopback (a scratch directory, high ports, no root), send the generated request set to it and to
    `knetsim route`, and report every request where they disagree.

    Each backend answers as its program does and says who it is, so the comparison covers the status,
    which backend answered, the path it received, Location, the CORS and WWW-Authenticate headers and
    the headers the backend received. What ingress-nginx does in Lua (the redirect to https, canary,
    affinity, upstream-hash-by, the balancer's 503) is listed, not compared. `-o conf` prints the
    configuration without running nginx. Exit 0: every compared request agrees; 1: a disagreement;
    2: bad input, or nginx is not installed.
    """
    from ..ingress.router import controller_view
    from ..nginxproof import ConfigRefused, Unavailable, format_report, missing_requirements
    from ..nginxproof import verify as run

    cluster = load_cluster(filenames, namespace, cluster_config)
    if output == "conf":
        from ..nginxproof.render import Plan, render

        model = controller_view(cluster.state, class_name).model
        if model is None:
            click.echo("error: no Ingress controller serves this cluster", err=True)
            sys.exit(EXIT_BAD_INPUT)
        from ..ingress.backends import ready_endpoints
        from ..nginxproof.verify import upstreams

        servers = {name: [e.address for e in ready_endpoints(cluster.state, service, port)]
                   for name, (service, port) in upstreams(cluster.state, model).items()}
        plan = Plan("/tmp/knetsim-nginx", 80, 443, 8181, servers, certificate="/tmp/knetsim-nginx/tls.crt",
                    key="/tmp/knetsim-nginx/tls.key")
        click.echo(render(model, plan), nl=False)
        return
    missing = missing_requirements()
    if missing:
        click.echo("error: knetsim verify nginx cannot run here:", err=True)
        for item in missing:
            click.echo(f"  - {item}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    try:
        report = run(cluster.state, class_name, max_requests=max_requests or 20000, keep=keep)
    except (Unavailable, ConfigRefused) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if output == "json":
        click.echo(dump_json(report.to_dict()), nl=False)
    else:
        click.echo(format_report(report), nl=False)
    sys.exit(EXIT_NEGATIVE if report.disagree else EXIT_OK)


COMMANDS = [verify]
