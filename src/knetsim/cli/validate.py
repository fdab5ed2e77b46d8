"""``knetsim validate``: admission only — defaulting, validation and allocation, nothing simulated."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from ..api import Cluster, InputError
from ..cluster.build import ManifestError
from ..model.loader import expand_paths
from .common import cluster_options, fail_input, live_requested, load_cluster, print_notices, rendering_requested


@click.command("validate")
@cluster_options
def validate_command(filenames: tuple[str, ...], namespace: str | None, cluster_config: str | None) -> None:
    """Check manifests as the API server would; every error names file, document, object and field.

    Exit code 0 when everything is valid, 2 otherwise (all errors are listed, not only the first).
    With --kubeconfig, what a cluster holds is checked against v1.35 admission (before an upgrade).
    """
    if not filenames and not live_requested() and not rendering_requested():
        fail_input(InputError(["no manifests given: use -f FILE|DIR|- (or --kubeconfig FILE for a cluster's "
                               "objects)"]))
    if namespace and filenames:
        _enforce_namespace(filenames, namespace)
    cluster = load_cluster(filenames, namespace, cluster_config, report=False, simulate=False)
    print_notices(cluster)
    _print_definitions(cluster)
    cluster.errors.extend(_cni_refusals(cluster))
    if cluster.errors:
        # Every file's errors, even when another file does not parse; then the verdict.
        rejected = len({str(e.source) for e in cluster.errors if e not in cluster.unreadable})
        summary = f"{cluster.read - rejected} object(s) valid, {rejected} rejected"
        if cluster.unreadable:
            summary += f", {len(cluster.unreadable)} unreadable"
        errors = _in_file_order(cluster, filenames)
        fail_input(InputError([str(e) for e in errors]), summary=summary, always_summarize=True)
    count = cluster.read
    click.echo(f"{count} object{'s' if count != 1 else ''} valid")


# The namespaces every cluster has before anything is applied.
_BUILTIN_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})


def _enforce_namespace(filenames: tuple[str, ...], namespace: str) -> None:
    """`kubectl apply -n NS -f FILES` as the client checks it before sending anything (cli-runtime's
    RequireNamespace with enforcement): an object naming another namespace is refused in kubectl's words, and
    objects that would land in a namespace neither the cluster nor the input has are refused as the API server
    refuses them. Only plain manifest files are read here (what the validation reads next reads them again)."""
    from ..model.kinds import BY_KIND, CLUSTER_SCOPED_BUILTINS
    from ..model.loader import load_paths

    try:
        documents = load_paths([f for f in filenames if f != "-" and ":" not in f.split("/", 1)[0]]).documents
    except Exception:  # what does not load is reported by the validation that follows
        return
    declared = {d.name for d in documents if d.kind == "Namespace"}
    problems = []
    for doc in documents:
        info = BY_KIND.get(doc.kind)
        if doc.kind in CLUSTER_SCOPED_BUILTINS or (info is not None and not info.namespaced):
            continue
        if doc.namespace and doc.namespace != namespace:
            problems.append(f'{doc.source}: the namespace from the provided object "{doc.namespace}" does not match '
                            f'the namespace "{namespace}". You must pass \'--namespace={doc.namespace}\' to perform '
                            "this operation.")
    if not problems and documents and namespace not in _BUILTIN_NAMESPACES | declared:
        problems.append(f'namespaces "{namespace}" not found')
    if problems:
        fail_input(InputError(problems))


def _in_file_order(cluster: Cluster, filenames: tuple[str, ...]) -> list[ManifestError]:
    """Errors as ``kubectl apply`` meets them. First what it finds reading the files (GetObjects: a path that
    does not exist, a document that does not parse, a kind no API serves), then what the API server refuses,
    object by object: each group file by file in the order the files are read, document by document.
    (Allocation runs after admission, over every Service at once, so its errors would otherwise follow all
    the others, in name order.) Errors of sources that are no file keep their order."""
    rank = {path: i for i, path in enumerate(dict.fromkeys(expand_paths(filenames)))}
    unreadable = {id(e) for e in cluster.unreadable}

    def position(error: ManifestError) -> tuple[int, int, int, int]:
        read = id(error) in unreadable or (isinstance(error.error, str)
                                           and error.error.startswith("no matches for kind"))
        phase = 0 if read else 1
        source = error.source
        if source is None:
            return (phase, -1, 0, 0)
        if source.file not in rank:
            return (phase, len(rank), 0, 0)
        return (phase, rank[source.file], source.document, -1 if source.item is None else source.item)

    return sorted(cluster.errors, key=position)


def _print_definitions(cluster: Cluster) -> None:
    """Which definition the custom kinds were checked against: knetsim's built-in one, or a CRD of the input
    that took over its kind (with the bundle version each carries)."""
    from ..cluster.build import input_crds
    from ..model.admission import definitions_in_force

    in_force = definitions_in_force([d.body for d in cluster.documents], input_crds(cluster.documents))
    for source, kinds in in_force.items():
        click.echo(f"{', '.join(kinds)}: checked against {source}")


def _cni_refusals(cluster: Cluster) -> list[ManifestError]:
    """What Calico's API server or Antrea's webhook refuses beyond the fields (a selector that does not parse, an
    action it does not know): the check the live cluster's admission runs (apiserver/cnikinds.py), so that
    `validate` does not pass what `kubectl apply` would be refused."""
    from ..model.kinds import ALL_CNI_GROUPS, group_of

    candidates = [d for d in cluster.documents if group_of(d.body.get("apiVersion")) in ALL_CNI_GROUPS]
    if not candidates:
        return []
    from ..apiserver.cnikinds import validation_errors, webhook_denial
    from ..apiserver.resources import RESOURCES
    from ..model.admission import Kind, invalid

    by_group_kind = {(r.group, r.kind): r for r in RESOURCES if r.cni}
    refused = {str(e.source) for e in cluster.errors}
    # Tiers first, in the order `kubectl apply -f` sends them (of two on one priority the webhook refuses the later);
    # then the rest, a policy finding its Tier wherever the input holds it (a second apply admits it), as every
    # answer reads them (policy/antrea/read.py).
    tiers_first = sorted(range(len(candidates)), key=lambda i: (candidates[i].kind != "Tier", i))
    admitted: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    found: dict[int, ManifestError] = {}
    for i in tiers_first:
        doc = candidates[i]
        group = group_of(doc.body.get("apiVersion"))
        resource = by_group_kind.get((group, doc.kind))
        if resource is None or str(doc.source) in refused:
            continue
        errors = validation_errors(resource, doc.body)
        if errors:
            kind = Kind(resource.group, resource.version, resource.kind, namespaced=resource.namespaced)
            found[i] = ManifestError(doc.source, doc.describe(), invalid(kind, doc.name, errors).message)
            continue
        denial = webhook_denial(resource, doc.body, None,
                                lambda kind, group=group: admitted.get((group, kind), []))
        if denial:
            found[i] = ManifestError(doc.source, doc.describe(), denial)
            continue
        admitted.setdefault((group, doc.kind), []).append(doc.body)
    return [found[i] for i in sorted(found)]


COMMANDS = [validate_command]
