"""``knetsim observe``: the flows the running knetsim saw, as ``hubble observe`` prints them."""

from __future__ import annotations

import sys
from typing import Any

import click

from .common import EXIT_OK, fail_input

FLOWS_PATH = "/knetsim/flows"


def running_flows(kubeconfig: str | None = None, context: str | None = None, last: int | None = None) -> Any:
    """The flow record of the running knetsim (of ``--kubeconfig``/``--context``, else of the state dir)."""
    from ..api import InputError
    from ..model.flows import from_hubble
    from ..sources import ApiError, KubeError, connect
    from .common import _running_knetsim, state_dir

    if kubeconfig is None and context is None:
        kubeconfig = _running_knetsim()
        if kubeconfig is None:
            fail_input(InputError([f"no knetsim runs with state dir {state_dir()} (knetsim up starts one; a cluster "
                                   "with Cilium has its own: hubble observe -o json)"]))
    try:
        with connect(kubeconfig, context) as api:
            body = api.request("GET", FLOWS_PATH, query={"last": last} if last is not None else None)
    except ApiError as exc:
        if exc.code == 404:
            fail_input(InputError([f"the cluster at {exc.server or 'that kubeconfig'} keeps no knetsim flow record "
                                   "(it is not knetsim); with Cilium, hubble observe -o json prints its flows"]))
        fail_input(InputError([str(exc)]))
    except KubeError as exc:
        fail_input(InputError([str(exc)]))
    items = (body or {}).get("items") or []
    flows = [f for f in (from_hubble(item) for item in items) if f is not None]
    return flows, int((body or {}).get("lost") or 0)


def compact(flow: Any) -> str:
    """One line in the shape of ``hubble observe``'s default output."""
    def end(e: Any, port: int) -> str:
        name = f"{e.namespace}/{e.pod}" if e.pod else e.ip
        return f"{name}:{port}" if port else name

    what = flow.summary or flow.protocol
    if flow.l7 and "dns" in flow.l7:
        what = f"dns-request proxy {flow.verdict} (DNS Query {flow.l7['dns'].get('query', '')})"
        return f"{flow.time}: {end(flow.src, flow.src_port)} -> {end(flow.dst, flow.dst_port)} {what}"
    if flow.l7 and "http" in flow.l7:
        what = f"http-{'response' if flow.is_reply else 'request'} {flow.verdict} ({flow.summary})"
        return f"{flow.time}: {end(flow.src, flow.src_port)} -> {end(flow.dst, flow.dst_port)} {what}"
    direction = {"EGRESS": "to-stack", "INGRESS": "to-endpoint"}.get(flow.direction, "")
    reason = f" {flow.drop_reason}" if flow.drop_reason else ""
    return (f"{flow.time}: {end(flow.src, flow.src_port)} -> {end(flow.dst, flow.dst_port)} "
            f"{direction + ' ' if direction else ''}{flow.verdict}{reason} ({what})")


@click.command("observe")
@click.option("--kubeconfig", default=None, type=click.Path(dir_okay=False),
              help="The knetsim whose flows to read (default: the running knetsim of $KNETSIM_STATE).")
@click.option("--context", default=None, help="That kubeconfig's context.")
@click.option("--last", type=click.IntRange(min=0), default=None, help="Only the N newest flows.")
@click.option("-o", "--output", type=click.Choice(["compact", "json"]), default="compact", show_default=True,
              help="json: one GetFlowsResponse object per line, as hubble observe -o json prints them.")
def observe(kubeconfig: str | None, context: str | None, last: int | None, output: str) -> None:
    """The flows the running knetsim saw: exec'd clients, probes, port-forwards, Ingress and Gateway requests,
    DNS lookups, as Hubble records them. -o json feeds `knetsim policy generate --flows`.

    \b
      knetsim observe -o json > flows.json
      knetsim policy generate -f app/ --flows flows.json -o yaml
    """
    from ..model.flows import hubble_lines

    flows, lost = running_flows(kubeconfig, context, last)
    if output == "json":
        sys.stdout.writelines(hubble_lines(flows))
    else:
        for f in flows:
            click.echo(compact(f))
    if lost:
        click.echo(f"Warning: {lost} older flow(s) left the record (it keeps the last 4,095, as Hubble's ring does)",
                   err=True)
    sys.exit(EXIT_OK)


COMMANDS = [observe]
