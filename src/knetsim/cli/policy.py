"""``knetsim policy check|describe|lint``."""

from __future__ import annotations

import re
import sys
from typing import Any

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
        verdict = evaluate(cluster.state, src, dst, _port_number_or_name(port), protocol.upper(),
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


def _port_number_or_name(text: str) -> int | str:
    """A number (a negative one too, refused as out of range rather than looked up as a port name) or a name."""
    return int(text) if re.fullmatch(r"[+-]?[0-9]+", text) else text


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


@policy.command("generate")
@cluster_options
@click.option("--flows", "flows", multiple=True, type=click.Path(dir_okay=False, allow_dash=True),
              help="Hubble flows: what `hubble observe -o json` (or `knetsim observe -o json`) printed, one JSON "
                   "object per line; - for stdin. Repeatable.")
@click.option("--connections", "declared", type=click.Path(dir_okay=False, allow_dash=True),
              help="A declared list of intended connections: YAML `connections: [{from, to, port, protocol}]`, "
                   "from/to as ns/name, ns/name[Kind], an address or a CIDR.")
@click.option("--include-dropped", is_flag=True, help="Allow dropped flows too: connections that were tried.")
@click.option("--tier", type=click.Choice(["admin", "baseline"], case_sensitive=False), default=None,
              help="ClusterNetworkPolicies of this tier instead of NetworkPolicies.")
@click.option("--priority", type=click.IntRange(0, 1000), default=50, show_default=True,
              help="The ClusterNetworkPolicies' priority (with --tier).")
@click.option("--format", "dialect", type=click.Choice(["kubernetes", "calico", "cilium", "antrea"],
                                                       case_sensitive=False),
              default="kubernetes", show_default=True,
              help="The policies' kind: Kubernetes NetworkPolicy, or the CNI's own (Calico NetworkPolicy, "
                   "CiliumNetworkPolicy, Antrea NetworkPolicy), proven under that CNI.")
@output_option("text", "yaml", "json")
def generate(filenames: tuple[str, ...], namespace: str | None, cluster_config: str | None, flows: tuple[str, ...],
             declared: str | None, include_dropped: bool, tier: str | None, priority: int, dialect: str,
             output: str) -> None:
    """Least-privilege policies from observed traffic, proven against it.

    One NetworkPolicy per workload of the namespaces the connections touch (or -n), allowing
    what was seen and nothing else, with DNS; then the proof: the matrix of the generated set
    allows every observed connection and nothing more (a table), and against the policies
    deployed now, what the generated set would newly deny (the diff). -o yaml prints the
    policies alone (ready for kubectl apply -f -) and the proof on stderr.

    """
    from ..policy.generate import GenerateError

    cluster = load_cluster(filenames, namespace, cluster_config)
    dialect = dialect.lower()
    if dialect != "kubernetes" and tier:
        _input_error(GenerateError(f"--tier writes ClusterNetworkPolicies, --format {dialect} the CNI's own kind: "
                                   "give one of them"))
    try:
        observed, source = _observed(cluster, flows, declared, include_dropped)
        from ..policy.generate import generate as make

        made = make(cluster.state, observed, namespaces=[namespace] if namespace else None,
                    tier=tier.capitalize() if tier else None, priority=priority, source=source,
                    dialect=dialect)
    except GenerateError as exc:
        _input_error(exc)
        return
    if not made.policies:
        _input_error(GenerateError("no workload to write a policy for: the connections touch only the system's "
                                   "own pods (give -n NAMESPACE to lock one down anyway)"))
    proof, changes = _prove(cluster, made, tier is not None or dialect != "kubernetes")
    if output == "json":
        emit({"policies": made.policies, "notes": made.notes, "proof": proof.to_dict(),
              "diff": changes.to_dict()}, "json")
    elif output == "yaml":
        click.echo(made.yaml, nl=False)
        for note in made.notes:
            click.echo(f"note: {note}", err=True)
        click.echo(f"proof: {proof.summary()}", err=True)
        click.echo(f"against the policies deployed now: {_lost_summary(changes)}", err=True)
    else:
        from ..diff.render import text as diff_text

        click.echo(made.yaml, nl=False)
        click.echo("")
        for note in made.notes:
            click.echo(f"note: {note}")
        click.echo(_proof_table(proof), nl=False)
        click.echo("")
        click.echo("Against the policies deployed now (knetsim diff, reachability and findings):")
        click.echo(diff_text(changes), nl=False)
    sys.exit(EXIT_OK if proof.holds else EXIT_NEGATIVE)


def _observed(cluster: Any, flows: tuple[str, ...], declared: str | None, include_dropped: bool) -> tuple[Any, str]:
    from ..model.flows import read_hubble
    from ..policy.generate import GenerateError, Observed, from_declared, from_flows

    observed = Observed()
    sources = []
    if flows:
        read, problems = [], []
        for path in flows:
            lines = sys.stdin if path == "-" else _lines(path)
            got, bad = read_hubble(lines, path)
            read += got
            problems += bad
        if problems:
            raise GenerateError("; ".join(problems[:5]) + (f" (and {len(problems) - 5} more)" if len(problems) > 5
                                                           else ""))
        found = from_flows(cluster.state, read, include_dropped=include_dropped)
        observed.connections += found.connections
        observed.notes += found.notes
        sources.append(f"{len(read)} Hubble flows ({', '.join(flows)})")
    if declared:
        import yaml

        text = sys.stdin.read() if declared == "-" else _text(declared)
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise GenerateError(f"{declared}: not YAML: {exc}") from None
        found = from_declared(cluster.state, doc, declared)
        observed.connections += found.connections
        sources.append(f"the intended connections of {declared}")
    if not flows and not declared:
        from .observe import running_flows

        ctx = click.get_current_context(silent=True)
        meta = ctx.meta if ctx is not None else {}
        read, _lost = running_flows(meta.get("knetsim.kubeconfig"), meta.get("knetsim.context"))
        if not read:
            raise GenerateError("the running knetsim has observed no flow yet: make the connections (kubectl exec "
                                "... wget, curl through the Ingress), or give --flows FILE or --connections FILE")
        found = from_flows(cluster.state, read, include_dropped=include_dropped)
        observed.connections += found.connections
        observed.notes += found.notes
        sources.append(f"{len(read)} flows the running knetsim observed")
    return observed, " and ".join(sources)


def _lines(path: str) -> list[str]:
    return _text(path).splitlines()


def _text(path: str) -> str:
    from ..policy.generate import GenerateError

    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise GenerateError(f'the path "{path}" does not exist') from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GenerateError(f'cannot read "{path}": {exc}') from None


GENERATED = "<generated>"


def _prove(cluster: Any, made: Any, tiered: bool) -> tuple[Any, Any]:
    """The proof over the generated set alone, and the diff from the policies deployed now to the generated set
    (NetworkPolicies of the namespaces it covers replaced; ClusterNetworkPolicies added to the others)."""
    from ..api import Cluster
    from ..diff import Side, compare
    from ..model.loader import Document, Source
    from ..policy.generate import prove

    policy_kinds = ("NetworkPolicy", "CiliumNetworkPolicy", "ClusterNetworkPolicy", "AdminNetworkPolicy",
                    "BaselineAdminNetworkPolicy", "CiliumClusterwideNetworkPolicy", "GlobalNetworkPolicy")
    generated = [Document(Source(GENERATED, i + 1), body) for i, body in enumerate(made.policies)]
    scope = {w.split("/", 1)[0] for w in made.workloads}
    alone = [d for d in cluster.documents if d.kind not in policy_kinds] + generated
    after = [d for d in cluster.documents
             if tiered or not (d.kind == "NetworkPolicy" and (d.namespace or cluster.namespace) in scope)] + generated
    config = cluster.state.config
    if made.dialect != "kubernetes":
        import dataclasses

        # The proof holds in the dialect: the generated set evaluated by that CNI's own engine.
        config = dataclasses.replace(config, cni=made.dialect)
    proof = prove(Cluster.from_documents(alone, namespace=cluster.namespace, config=config, strict=False).state,
                  made)
    applied = Cluster.from_documents(after, namespace=cluster.namespace, config=config, strict=False)
    before = Side("the policies deployed now", cluster.state, tuple(cluster.errors), tuple(cluster.documents),
                  cluster.namespace)
    new = Side("the generated policies", applied.state, tuple(applied.errors), tuple(applied.documents),
               cluster.namespace)
    return proof, compare(before, new, ("reachability", "findings"))


def _lost_summary(changes: Any) -> str:
    lost = changes.layer("reachability").count("lost")
    gained = changes.layer("reachability").count("gained")
    return f"{lost} pair(s) lose connections, {gained} gain some (knetsim policy generate -o text lists them)"


def _proof_table(proof: Any) -> str:
    from .common import tabulate

    rows = [(r.src, r.dst, r.observed.describe() if r.observed else "-", r.allowed.describe() if r.allowed else "-",
             r.verdict + (f": {r.extra_reason}" if r.extra_reason else "")) for r in proof.rows]
    head = "Proof: the matrix of the generated policies alone, pair by pair, against the connections\n"
    return head + tabulate(["FROM", "TO", "OBSERVED", "ALLOWED", "VERDICT"], rows) + proof.summary() + "\n"


COMMANDS = [policy]
