"""``knetsim policy check|describe|lint``."""

from __future__ import annotations

import sys

import click

from ..cluster.lookup import PodNotFound, is_workload_ref, resolve_pod
from ..policy.describe import describe as describe_policy
from ..policy.engine import PolicyInputError, evaluate
from ..policy.lint import lint as lint_policies
from ..policy.render import verdict_text
from .common import EXIT_BAD_INPUT, EXIT_NEGATIVE, EXIT_OK, cluster_options, emit, load_cluster, output_option

PROTOCOL = click.Choice(["TCP", "UDP", "SCTP"], case_sensitive=False)


def _input_error(exc: Exception) -> None:
    click.echo(f"error: {exc}", err=True)
    sys.exit(EXIT_BAD_INPUT)


@click.group("policy")
def policy() -> None:
    """NetworkPolicy: check one connection, describe a policy in words, lint for likely mistakes."""


@policy.command("check")
@cluster_options
@click.option("--from", "src", required=True, help="Source: NS/POD, POD (in -n) or an IP address.")
@click.option("--to", "dst", required=True, help="Destination: NS/POD, POD (in -n) or an IP address.")
@click.option("--port", required=True, help="Destination port: a number, or a container port name of the pod.")
@click.option("--proto", "protocol", type=PROTOCOL, default="TCP", show_default=True)
@output_option("text", "json", "yaml")
def check(filenames: tuple[str, ...], namespace: str | None, cluster_config: str | None, src: str, dst: str,
          port: str, protocol: str, output: str) -> None:
    """Would policy allow SRC to open PORT on DST? Exit 0 allowed, 1 denied.

        knetsim policy check -f examples/shop --from shop/web-... --to shop/db-0 --port 5432
    """
    cluster = load_cluster(filenames, namespace, cluster_config)
    try:
        # `ns/deploy/NAME` names a workload's first pod, as kubectl exec does; the engine takes pods and IPs.
        src, dst = (resolve_pod(cluster.state, ref, namespace or cluster.namespace).key if is_workload_ref(ref) else ref
                    for ref in (src, dst))
        verdict = evaluate(cluster.state, src, dst, int(port) if port.isdigit() else port, protocol.upper(),
                           namespace=namespace or cluster.namespace)
    except PodNotFound as exc:
        _input_error(PolicyInputError(str(exc)))
        return
    except PolicyInputError as exc:
        _input_error(exc)
        return
    if output == "text":
        click.echo(verdict_text(verdict), nl=False)
    else:
        emit(verdict.to_dict(), output)
    sys.exit(EXIT_OK if verdict.allowed else EXIT_NEGATIVE)


@policy.command("describe")
@cluster_options
@click.argument("name")
@output_option("text", "json", "yaml")
def describe(filenames: tuple[str, ...], namespace: str | None, cluster_config: str | None, name: str,
             output: str) -> None:
    """A NetworkPolicy (or CiliumNetworkPolicy) in words: one line per peer, AND and OR spelled out."""
    cluster = load_cluster(filenames, namespace, cluster_config)
    ns, _, short = name.rpartition("/")
    try:
        found = describe_policy(cluster.state, short, ns or namespace or cluster.namespace)
    except PolicyInputError as exc:
        _input_error(exc)
        return
    if output == "text":
        click.echo("\n".join(d.text() for d in found), nl=False)
    else:
        data = [d.to_dict() for d in found]
        emit(data[0] if len(data) == 1 else data, output)


@policy.command("lint")
@cluster_options
@output_option("text", "json", "yaml")
def lint(filenames: tuple[str, ...], namespace: str | None, cluster_config: str | None, output: str) -> None:
    """Likely policy mistakes, each with a fix. Exit 1 when a finding is an error (e.g. DNS blocked)."""
    cluster = load_cluster(filenames, namespace, cluster_config)
    findings = lint_policies(cluster.state)
    if output == "text":
        if not findings:
            click.echo("no findings")
        for f in findings:
            click.echo(f"{f.severity:<8} {f.code}  {f.subject}: {f.message}")
            if f.fix:
                fix = f.fix.rstrip("\n").replace("\n", "\n         ")
                click.echo(f"         fix: {fix}")
    else:
        emit({"findings": [f.to_dict() for f in findings]}, output)
    sys.exit(EXIT_NEGATIVE if any(f.severity == "error" for f in findings) else EXIT_OK)


COMMANDS = [policy]
