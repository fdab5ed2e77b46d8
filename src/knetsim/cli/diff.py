"""``knetsim diff``: what applying a change changes, layer by layer (docs/diff.md)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from .common import (
    EXIT_NEGATIVE,
    EXIT_OK,
    dump_json,
    dump_yaml,
    fail_input,
    running_cluster_config,
    validate_option,
    validation_mode,
)

if TYPE_CHECKING:
    from ..api import Cluster
    from ..diff import Side
    from ..sources import Source

CLUSTER = "cluster:"
FAIL_ON = ("lost", "gained", "findings", "any")
LAYER_NAMES = ("objects", "endpoints", "dns", "dataplane", "reachability", "routes", "findings")


def _live(ctx_meta: dict[str, Any], spec: str) -> Source:
    """``cluster:`` (the --kubeconfig/--context cluster, else the running knetsim) or ``cluster:CONTEXT``."""
    from ..sources import Live
    from .common import _running_knetsim, state_dir

    context = spec[len(CLUSTER):] or ctx_meta.get("context")
    kubeconfig = ctx_meta.get("kubeconfig")
    if kubeconfig or context:
        return Live(kubeconfig, context)
    running = _running_knetsim()
    if running is None:
        fail_input(_error(f"{spec}: no --kubeconfig or --context, and no knetsim runs with state dir {state_dir()} "
                          "(knetsim up starts one)"))
    return Live(running, label=f"the running knetsim ({state_dir()})")


def _error(message: str) -> Any:
    from ..api import InputError

    return InputError([message])


def _sources(specs: Sequence[str], meta: dict[str, Any], clusters: dict[str, Source]) -> list[Source]:
    """The sources of one side; a cluster is read once for both sides (``clusters``): both must see the same
    objects, and a live cluster changes between two reads."""
    from ..sources import GitManifests, KubeError, Manifests, Preloaded, read
    from ..sources.git import PREFIX

    out: list[Source] = []
    paths: list[str] = []

    def flush() -> None:
        if paths:
            out.append(Manifests(tuple(paths), sys.stdin))
            paths.clear()

    for spec in specs:
        if spec.startswith(PREFIX):
            flush()
            out.append(GitManifests(spec))
        elif spec.startswith(CLUSTER):
            flush()
            if spec not in clusters:
                try:
                    clusters[spec] = Preloaded(read([_live(meta, spec)], lambda line: click.echo(line, err=True)))
                except KubeError as exc:
                    fail_input(_error(str(exc)))
            out.append(clusters[spec])
        else:
            paths.append(spec)
    flush()
    return out


def _label(specs: Sequence[str]) -> str:
    return " + ".join(specs)


def _cluster(sources: list[Source], namespace: str | None, cluster_config: str | None) -> Cluster:
    from ..api import Cluster, InputError
    from ..sources import GitSourceError, KubeError

    try:
        cluster = Cluster.from_sources(sources, namespace=namespace, cluster_config=cluster_config, strict=False,
                                       validation=validation_mode(), progress=lambda line: click.echo(line, err=True))
    except InputError as exc:
        fail_input(exc)
    except (KubeError, GitSourceError) as exc:
        fail_input(InputError([str(exc)]))
    for note in cluster.source_notes:
        click.echo(f"Warning: {note}", err=True)
    if cluster.unreadable:
        fail_input(InputError([str(e) for e in cluster.unreadable]))
    return cluster


def _side(label: str, cluster: Cluster) -> Side:
    from ..diff import Side

    return Side(label, cluster.state, tuple(cluster.errors), tuple(cluster.documents), cluster.namespace)


def _choices(value: tuple[str, ...], allowed: Sequence[str], option: str) -> list[str]:
    out = [v.strip() for item in value for v in item.split(",") if v.strip()]
    bad = [v for v in out if v not in allowed]
    if bad:
        raise click.BadParameter(f"{bad[0]!r}: supported values: {', '.join(allowed)}", param_hint=option)
    return out


@click.command("diff")
@click.option("--before", "before", multiple=True, metavar="SRC",
              help="What the cluster holds now: a manifest file or folder (or -), git:REV:PATH, or cluster: / "
                   "cluster:CONTEXT (the --kubeconfig/--context cluster, else the running knetsim). Repeatable, "
                   "as -f is. Default: cluster:.")
@click.option("--after", "after", multiple=True, metavar="SRC", required=True,
              help="What it would hold: the same forms. Without --before, the change applied over the cluster "
                   "(cluster: is implied first).")
@click.option("--kubeconfig", "kubeconfig", default=None, type=click.Path(dir_okay=False),
              help="The cluster `cluster:` names (default: the running knetsim).")
@click.option("--context", "context", default=None, help="The kubeconfig context `cluster:` names.")
@click.option("-n", "--namespace", default=None, help="Namespace of manifests that set none.")
@click.option("--cluster-config", "cluster_config", type=click.Path(dir_okay=False),
              help="Cluster shape (nodes, CIDRs, domain, data plane), for both sides; see docs/cluster-config.md.")
@validate_option
@click.option("--layers", "layers", multiple=True, metavar="LIST",
              help=f"Compare only these layers (comma-separated: {', '.join(LAYER_NAMES)}). Default: all.")
@click.option("--fail-on", "fail_on", multiple=True, metavar="LIST",
              help="Exit 1 when the diff has: lost (a connection, endpoint, name, route or object that worked "
                   "stops), gained (a new connection, e.g. a new exposure), findings (doctor errors or warnings "
                   "introduced), any (any change). Comma-separated or repeated.")
@click.option("-o", "--output", type=click.Choice(["text", "json", "yaml", "markdown"]), default="text",
              show_default=True, help="Output format (markdown: a pull-request comment).")
def diff(before: tuple[str, ...], after: tuple[str, ...], kubeconfig: str | None, context: str | None,
         namespace: str | None, cluster_config: str | None, layers: tuple[str, ...], fail_on: tuple[str, ...],
         output: str) -> None:
    """What a change changes: objects, endpoints, DNS, data plane, reachability, routes, doctor findings.

    Exit 0, or 1 when a --fail-on condition holds (a CI gate); 2 for bad input.

    \b
      knetsim diff --before examples/broken/selector-typo --after fixed/
      knetsim diff --before git:main:deploy --after deploy -o markdown --fail-on lost
      knetsim diff --after change.yaml            # the running knetsim, and it with change.yaml applied
    """
    from ..diff import compare, prepare
    from ..diff.render import markdown, text

    gates = _choices(fail_on, FAIL_ON, "--fail-on")
    chosen = _choices(layers, LAYER_NAMES, "--layers") or list(LAYER_NAMES)
    meta = {"kubeconfig": kubeconfig, "context": context}
    before_specs = list(before) or [CLUSTER]
    after_specs = list(after) if before else [CLUSTER, *after]
    clusters: dict[str, Source] = {}
    before_sources, after_sources = _sources(before_specs, meta, clusters), _sources(after_specs, meta, clusters)
    if clusters and cluster_config is None:  # a running knetsim's own shape (its data plane, its ranges)
        cluster_config = running_cluster_config(kubeconfig)
    old = prepare(_side(_label(before_specs), _cluster(before_sources, namespace, cluster_config)), chosen)
    try:
        new = prepare(_side(_label(after_specs), _cluster(after_sources, namespace, cluster_config)), chosen)
    except BaseException:  # AFTER is bad input (exit 2) or the build failed: BEFORE's doctor is not wanted
        if old.doctor is not None:
            old.doctor.cancel()
        raise
    result = compare(old, new, chosen)
    if output == "json":
        click.echo(dump_json(result.to_dict()), nl=False)
    elif output == "yaml":
        click.echo(dump_yaml(result.to_dict()), nl=False)
    elif output == "markdown":
        click.echo(markdown(result), nl=False)
    else:
        click.echo(text(result), nl=False)
    held = result.fails(gates)
    if held:
        click.echo(f"--fail-on: {', '.join(held)}", err=True)
    sys.exit(EXIT_NEGATIVE if held else EXIT_OK)


COMMANDS = [diff]
