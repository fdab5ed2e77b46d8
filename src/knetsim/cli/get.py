"""``knetsim get``: the simulated cluster's objects, printed as kubectl prints them.

Offline there is no clock that means anything: AGE is measured from the newest
``creationTimestamp`` in the input (the moment a snapshot was taken), or from
``KNETSIM_NOW`` (RFC 3339) when set; objects without a timestamp show ``<unknown>``,
as kubectl does. This keeps the output byte-identical from run to run. A cluster read
live (``--kubeconfig``, the running knetsim) is measured from the moment it was read.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

import click

from .. import printers
from ..api import Cluster
from ..gateway import with_status
from ..model import gatewayapi
from ..model.kinds import KINDS, KindInfo, resolve_kind
from ..model.labels import Selector, SelectorSyntaxError
from ..model.objects import Object
from ..model.strategy import strategy_for
from ..model.timestamps import parse_rfc3339, rfc3339
from .common import EXIT_BAD_INPUT, cluster_options, dump_json, dump_yaml, load_cluster, print_notices, tabulate


def _now(objects: list[Object], read_at: datetime | None = None) -> datetime | None:
    env = os.environ.get("KNETSIM_NOW")
    if env:
        return parse_rfc3339(env)
    if read_at is not None:
        return read_at.replace(microsecond=0)
    stamps = [o.meta.creation_timestamp for o in objects if o.meta.creation_timestamp]
    return parse_rfc3339(max(stamps)) if stamps else None


def _kinds(spec: str) -> list[KindInfo]:
    out: list[KindInfo] = []
    for part in spec.split(","):
        if part == "all":
            out.extend(k for k in KINDS if k.in_all)
            continue
        info = resolve_kind(part)
        if info is None:
            raise click.UsageError(f'the server doesn\'t have a resource type "{part}"')
        out.append(info)
    return out


def _requests(args: list[str], with_selector: bool = False) -> list[tuple[KindInfo, str | None]]:
    """What ``kubectl get ARGS`` asks for, in its order: ``TYPE[,TYPE...] [NAME...]`` or ``TYPE/NAME...``.

    As cli-runtime's ResourceTypeOrNameArgs reads them: several types with names become every type/name
    pair; arguments are either all TYPE/NAME or none of them; and a label selector picks objects of whole
    types, never among named ones (the builder's visitBySelector refuses both).
    """
    types = args[0].split(",")
    if len(args) > 1 and len(types) > 1:
        args = [f"{t}/{name}" for t in types for name in args[1:]]
    slashed = [a for a in args if "/" in a]
    if slashed and len(slashed) != len(args):
        raise _ArgumentError("there is no need to specify a resource type as a separate argument when passing "
                             "arguments in resource/name form (e.g. 'knetsim get resource/<resource_name>' "
                             "instead of 'knetsim get resource resource/<resource_name>'")
    if with_selector and slashed:
        raise _ArgumentError("selectors and the all flag cannot be used when passing resource/name arguments")
    if with_selector and len(args) > 1:
        raise _ArgumentError("name cannot be provided when a selector is specified")
    if not slashed:
        return [(info, name) for info in _kinds(args[0]) for name in (args[1:] or [None])]
    out: list[tuple[KindInfo, str | None]] = []
    for arg in args:
        parts = arg.split("/")
        if len(parts) != 2:
            raise _ArgumentError("arguments in resource/name form may not have more than one slash")
        resource, name = parts
        if not resource or not name or "," in resource:
            raise _ArgumentError("arguments in resource/name form must have a single resource and name")
        info = resolve_kind(resource)
        if info is None:
            raise click.UsageError(f'the server doesn\'t have a resource type "{resource}"')
        out.append((info, name))
    return out


class _ArgumentError(Exception):
    """Arguments kubectl refuses before asking the server anything."""


def _body(cluster: Cluster, obj: Object, now: datetime | None) -> dict[str, Any]:
    """The object as the API returns it: Gateway API objects carry the built-in Gateway controller's status."""
    if obj.kind in gatewayapi.KINDS:
        stamp = rfc3339(now) if now is not None else None
        return with_status(cluster.state, obj, stamp)
    return obj.raw


def _output_object(obj: Object, body: dict[str, Any] | None = None) -> dict[str, Any]:
    body = dict(obj.raw if body is None else body)
    from ..model.kinds import BY_KIND

    info = BY_KIND.get(obj.kind)
    if info is not None:
        body = {"apiVersion": info.api_version, "kind": obj.kind, **{k: v for k, v in body.items()
                                                                      if k not in ("apiVersion", "kind")}}
    return body


def select(cluster: Cluster, kind: KindInfo, name: str | None, namespace: str | None,
           selector: Selector | None) -> list[Object]:
    objects = cluster.state.objects_of(kind.kind)
    if kind.namespaced and namespace is not None:
        objects = [o for o in objects if o.namespace == namespace]
    if name is not None:
        objects = [o for o in objects if o.name == name]
    if selector is not None:
        objects = [o for o in objects if selector.matches(o.labels)]
    return objects


@click.command("get")
@click.argument("kind", metavar="TYPE[,TYPE...] [NAME...] | TYPE/NAME...")
@click.argument("names", nargs=-1, metavar="")
@cluster_options
@click.option("-A", "--all-namespaces", is_flag=True, help="List across all namespaces.")
@click.option("-l", "--selector", "label_selector", default=None, help="Label selector, e.g. app=web,tier!=db.")
@click.option("-o", "--output", type=click.Choice(["text", "wide", "yaml", "json", "name"]), default="text",
              help="Output format (text is kubectl's default table).")
@click.option("--show-labels", is_flag=True, help="Add a LABELS column.")
def get_command(kind: str, names: tuple[str, ...], filenames: tuple[str, ...], namespace: str | None,
                cluster_config: str | None, all_namespaces: bool, label_selector: str | None, output: str,
                show_labels: bool) -> None:
    """Print objects of the simulated cluster, with kubectl's columns (computed ones included).

    \b
      knetsim get pods -f examples/shop -n shop -o wide
      knetsim get endpointslices -f app/ -l kubernetes.io/service-name=web
      knetsim get svc,ing -f app/ -A
      knetsim get svc/web deploy/web -f examples/shop -n shop
    """
    try:
        requests = _requests([kind, *names], with_selector=bool(label_selector and label_selector.strip()))
    except _ArgumentError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_BAD_INPUT) from None
    kinds = list(dict.fromkeys(info for info, _ in requests))
    selector = None
    if label_selector:
        try:
            selector = Selector.parse(label_selector)
        except SelectorSyntaxError as exc:
            click.echo(f"error: unable to parse requirement: {exc}", err=True)
            raise SystemExit(EXIT_BAD_INPUT) from None
    # As kubectl get: a namespace that does not exist lists nothing ("No resources found"), it is no error.
    cluster = load_cluster(filenames, namespace, cluster_config, namespace_must_exist=False)
    print_notices(cluster)
    for info in kinds:  # the API server's deprecation warning, as kubectl prints it
        deprecation = strategy_for(info.kind).deprecation
        if deprecation:
            click.echo(f"Warning: {deprecation}", err=True)
    ns_filter = None if all_namespaces else (namespace or cluster.namespace)
    groups: list[tuple[KindInfo, list[Object]]] = []
    missing = 0
    for info, name in requests:
        found = select(cluster, info, name, ns_filter, selector)
        if name is not None and not found:
            # As kubectl: every name that does not exist is reported, and what does is printed all the same.
            where = f' in namespace "{ns_filter}"' if info.namespaced and ns_filter else ""
            click.echo(f'Error from server (NotFound): {info.plural}{"." + info.group if info.group else ""} '
                       f'"{name}" not found{where}', err=True)
            missing += 1
            continue
        if groups and groups[-1][0] == info:  # kubectl prints one table while the type stays the same
            groups[-1][1].extend(found)
        else:
            groups.append((info, list(found)))
    # kubectl names the type in each row when more than one type was asked for.
    _print(cluster, requests, groups, output, ns_filter, all_namespaces, show_labels, len(kinds) > 1,
           quiet=bool(missing))
    if missing:
        raise SystemExit(EXIT_BAD_INPUT)  # names something that does not exist: bad input


def _print(cluster: Cluster, requests: list[tuple[KindInfo, str | None]], groups: list[tuple[KindInfo, list[Object]]],
           output: str, ns_filter: str | None, all_namespaces: bool, show_labels: bool, prefix: bool, *,
           quiet: bool) -> None:
    """The objects found, in ``output``'s form; ``quiet``: say nothing when there are none (a name was missing,
    and said so)."""
    everything = [o for _, objs in groups for o in objs]
    now = _now(cluster.state.objects_of("Pod") + everything, cluster.read_at)
    if output in ("yaml", "json"):
        bodies = [_output_object(o, _body(cluster, o, now)) for o in everything]
        single = len(requests) == 1 and requests[0][1] is not None  # cli-runtime's singleItemImplied
        if single and not bodies:
            return  # the one object asked for is missing: kubectl prints only the error, not an empty List
        data: Any = bodies[0] if single and len(bodies) == 1 else {
            "apiVersion": "v1", "items": bodies, "kind": "List", "metadata": {"resourceVersion": ""}}
        click.echo(dump_json(data) if output == "json" else dump_yaml(data), nl=False)
        return
    if output == "name":
        for info, objs in groups:
            for o in objs:
                click.echo(f"{_prefix(info)}/{o.name}")
        return
    if not everything:
        if not quiet:
            # kubectl names the namespace only where one was looked in (not for nodes, CRDs, classes).
            namespaced = any(info.namespaced for info, _ in requests)
            where = f" in {ns_filter} namespace" if ns_filter and namespaced else ""
            click.echo(f"No resources found{where}.", err=True)
        return
    blocks = []
    for info, objs in groups:
        if not objs:
            continue
        cols = [c for c, priority in printers.columns(info.kind) if priority == 0 or output == "wide"]
        keep = [i for i, (_, priority) in enumerate(printers.columns(info.kind)) if priority == 0 or output == "wide"]
        rows = []
        for o in objs:
            cells = printers.row(info.kind, _body(cluster, o, now), now)
            cells = [cells[i] for i in keep]
            if prefix:
                cells[0] = f"{_prefix(info)}/{cells[0]}"
            if all_namespaces and info.namespaced:
                cells.insert(0, o.namespace)
            if show_labels:
                cells.append(",".join(f"{k}={v}" for k, v in sorted(o.labels.items())) or "<none>")
            rows.append(cells)
        headers = list(cols)
        if all_namespaces and info.namespaced:
            headers.insert(0, "NAMESPACE")
        if show_labels:
            headers.append("LABELS")
        blocks.append(tabulate(headers, rows))
    click.echo("\n".join(blocks), nl=False)


def _prefix(info: KindInfo) -> str:
    return f"{info.singular}.{info.group}" if info.group else info.singular


COMMANDS = [get_command]
