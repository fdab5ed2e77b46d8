"""``knetsim verify kernel``: the simulation's verdicts against a real Linux network stack."""

from __future__ import annotations

import sys

import click

from .common import EXIT_BAD_INPUT, EXIT_NEGATIVE, EXIT_OK, cluster_options, dump_json, load_cluster, output_option


@click.group("verify")
def verify() -> None:
    """Check knetsim's answers against an independent source."""


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


COMMANDS = [verify]
