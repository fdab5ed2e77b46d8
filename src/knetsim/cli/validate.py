"""``knetsim validate``: admission only — defaulting, validation and allocation, nothing simulated."""

from __future__ import annotations

import click

from ..api import Cluster, InputError
from .common import cluster_options, fail_input, live_requested, load_cluster, print_notices


@click.command("validate")
@cluster_options
def validate_command(filenames: tuple[str, ...], namespace: str | None, cluster_config: str | None) -> None:
    """Check manifests as the API server would; every error names file, document, object and field.

    Exit code 0 when everything is valid, 2 otherwise (all errors are listed, not only the first).
    With --kubeconfig, what a cluster holds is checked against v1.35 admission (before an upgrade).
    """
    if not filenames and not live_requested():
        fail_input(InputError(["no manifests given: use -f FILE|DIR|- (or --kubeconfig FILE for a cluster's "
                               "objects)"]))
    cluster = load_cluster(filenames, namespace, cluster_config, report=False, simulate=False)
    print_notices(cluster)
    _print_definitions(cluster)
    if cluster.errors:
        # Every file's errors, even when another file does not parse; then the verdict.
        rejected = len({str(e.source) for e in cluster.errors if e not in cluster.unreadable})
        summary = f"{cluster.read - rejected} object(s) valid, {rejected} rejected"
        if cluster.unreadable:
            summary += f", {len(cluster.unreadable)} unreadable"
        fail_input(InputError([str(e) for e in cluster.errors]), summary=summary, always_summarize=True)
    count = cluster.read
    click.echo(f"{count} object{'s' if count != 1 else ''} valid")


def _print_definitions(cluster: Cluster) -> None:
    """Which definition the custom kinds were checked against: knetsim's built-in one, or a CRD of the input
    that took over its kind (with the bundle version each carries)."""
    from ..cluster.build import input_crds
    from ..model.admission import definitions_in_force

    in_force = definitions_in_force([d.body for d in cluster.documents], input_crds(cluster.documents))
    for source, kinds in in_force.items():
        click.echo(f"{', '.join(kinds)}: checked against {source}")


COMMANDS = [validate_command]
