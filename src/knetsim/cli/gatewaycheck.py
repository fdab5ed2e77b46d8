"""``knetsim gateway check``: will these Gateways and routes work on implementation X?

Route by route, the extended Gateway API features each object uses (``gateway/features.py``) against what each
implementation's newest conformance report claims (``cluster/gatewayimplementations.py``): the question a
migration from one implementation to another starts with.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from ..cluster.gatewayimplementations import BY_KEY, IMPLEMENTATIONS, Implementation, supported_by
from ..gateway.features import IGNORED, ObjectFeatures, used_features
from .common import EXIT_NEGATIVE, cluster_options, emit, load_cluster, output_option, tabulate, usage_error


@click.group("gateway")
def gateway_group() -> None:
    """Gateway API across implementations (Envoy Gateway, NGINX Gateway Fabric, Cilium, Istio, ...)."""


@gateway_group.command("check")
@cluster_options
@click.option("--implementation", "implementation", default=None,
              help=f"One implementation ({', '.join(BY_KEY)}); default: a table over all of them.")
@output_option("text", "json")
def check_command(filenames: tuple[str, ...], namespace: str | None, cluster_config: str | None,
                  implementation: str | None, output: str) -> None:
    """List, route by route, the extended features used and which implementations support each.

    NO: the implementation refuses the route (Accepted: False, UnsupportedValue); ignored: it serves the route
    without the feature (timeouts, retries, rule names, appProtocol). With --implementation, exit code 1 when
    an object uses a feature that implementation's conformance report does not claim, 0 otherwise.
    """
    impl = None
    if implementation is not None:
        impl = BY_KEY.get(implementation)
        if impl is None:
            usage_error(f"unknown implementation {implementation!r} (known: {', '.join(BY_KEY)})")
    cluster = load_cluster(filenames, namespace, cluster_config)
    objects = [o for o in used_features(cluster.state)
               if namespace is None or o.subject.split(" ", 1)[1].startswith(f"{namespace}/")]
    if impl is not None:
        refused = _one(objects, impl, output)
        sys.exit(EXIT_NEGATIVE if refused else 0)
    _all(objects, output)


def _one(objects: list[ObjectFeatures], impl: Implementation, output: str) -> int:
    rows: list[list[str]] = []
    data: list[dict[str, Any]] = []
    refused = 0
    for obj in objects:
        missing = {u.feature for u in obj.missing(impl)}
        refused += bool(missing)
        uses = []
        for u in obj.uses:
            others = [i.key for i in supported_by(u.feature)] if u.where != "kind" else \
                [i.key for i in IMPLEMENTATIONS if i.serves_kind(u.feature)]
            ok = u.feature not in missing
            verdict = "yes" if ok else "ignored" if u.feature in IGNORED else "NO"
            rows.append([obj.subject, u.feature, u.where, verdict, ", ".join(others) or "none"])
            uses.append({"feature": u.feature, "where": u.where, "supported": ok,
                         "refused": verdict == "NO", "supportedBy": others})
        if not obj.uses:
            rows.append([obj.subject, "-", "-", "yes", "core features only"])
        data.append({"object": obj.subject, "works": not missing, "features": uses})
    if output == "json":
        emit({"implementation": impl.key, "report": impl.report.path, "version": impl.report.version,
              "objects": data}, "json")
        return refused
    click.echo(f"{impl.title} {impl.report.version} (conformance report {impl.report.path}):")
    click.echo(tabulate(["OBJECT", "FEATURE", "WHERE", impl.key.upper(), "SUPPORTED BY"], rows))
    click.echo(f"{refused} of {len(objects)} object(s) use a feature {impl.title} does not claim" if refused
               else f"every object works on {impl.title}")
    return refused


def _cell(missing: list[str]) -> str:
    """yes; ``ignored``: served without a feature the API lets it ignore; NO: the route is refused."""
    if not missing:
        return "yes"
    return "ignored" if all(f in IGNORED for f in missing) else "NO"


def _all(objects: list[ObjectFeatures], output: str) -> None:
    rows = []
    data = []
    for obj in objects:
        verdicts = {i.key: [u.feature for u in obj.missing(i)] for i in IMPLEMENTATIONS}
        rows.append([obj.subject, ", ".join(u.feature for u in obj.uses) or "-",
                     *(_cell(verdicts[i.key]) for i in IMPLEMENTATIONS)])
        data.append({"object": obj.subject, "features": [u.feature for u in obj.uses],
                     "unsupported": {k: v for k, v in verdicts.items() if v}})
    if output == "json":
        emit({"implementations": [i.key for i in IMPLEMENTATIONS], "objects": data}, "json")
        return
    click.echo(tabulate(["OBJECT", "EXTENDED FEATURES", *(i.key.upper() for i in IMPLEMENTATIONS)], rows))
    works = [i.title for i in IMPLEMENTATIONS if all(not d["unsupported"].get(i.key) for d in data)]
    click.echo(f"every object works on: {', '.join(works) or 'no implementation'}")


COMMANDS = [gateway_group]
