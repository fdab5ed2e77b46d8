"""``knetsim dns``: resolve a name as a pod does, print its resolv.conf, or list the cluster's records."""

from __future__ import annotations

import sys

import click

from ..cluster.lookup import PodNotFound, resolve_pod
from ..cluster.state import ClusterState
from ..dns.records import QTYPES, Answer, answer_lines
from ..dns.resolver import MODES, Query, Resolution, resolv_conf, resolve
from ..model.names import is_ip as _is_ip
from ..model.objects import Pod
from .common import (
    EXIT_BAD_INPUT,
    EXIT_NEGATIVE,
    cluster_options,
    emit,
    load_cluster,
    output_option,
    usage_error,
)


@click.command("dns")
@click.argument("name", required=False)
@click.option("--from", "from_ref", metavar="NS/POD", help="The pod whose resolver asks (its namespace and dnsPolicy).")
@click.option("--type", "qtype", type=click.Choice(QTYPES[:6], case_sensitive=False), default=None,
              help="Record type [default: A, or PTR when NAME is an address].")
@click.option("--resolver", "mode", type=click.Choice(MODES), default="glibc", show_default=True,
              help="The client: glibc or musl getaddrinfo (curl, wget), or busybox nslookup.")
@click.option("--resolv-conf", "resolv_ref", metavar="NS/POD", help="Print the pod's /etc/resolv.conf instead.")
@click.option("--records", "list_records", is_flag=True, help="Print every record the cluster DNS serves.")
@output_option("text", "json", "yaml")
@cluster_options
def dns_command(name: str | None, from_ref: str | None, qtype: str | None, mode: str, resolv_ref: str | None,
                list_records: bool, output: str, filenames: tuple[str, ...], namespace: str | None,
                cluster_config: str | None) -> None:
    """Resolve NAME from a pod: every query its resolver sends, and the answers, dig-style.

    \b
      knetsim dns web -f examples/shop --from shop/web-7c8c4869fb-knbt7
      knetsim dns data --from test/client --resolver busybox-nslookup -f app/
      knetsim dns --resolv-conf shop/db-0 -f examples/shop
      knetsim dns --records -f examples/shop -o json

    Exit status 1 when the name does not resolve (NXDOMAIN, NODATA, SERVFAIL, timeout).
    """
    modes = sum(bool(x) for x in (name, resolv_ref, list_records))
    if modes != 1:
        usage_error("give exactly one of NAME (with --from), --resolv-conf NS/POD or --records")
    cluster = load_cluster(filenames, namespace, cluster_config)
    state = cluster.state
    default_ns = namespace or cluster.namespace
    if list_records:
        from ..dns.records import zone_records

        records = zone_records(state)
        if output == "text":
            click.echo("\n".join(r.text() for r in records))
        else:
            emit([r.to_dict() for r in records], output)
        return
    if resolv_ref:
        pod = _find_pod(state, resolv_ref, default_ns)
        conf = resolv_conf(state, pod)
        for note in conf.notes:
            click.echo(f"Warning: {pod.key}: {note}", err=True)
        if output == "text":
            click.echo(conf.text(), nl=False)
        else:
            emit(conf.to_dict(), output)
        return
    assert name is not None
    if not from_ref:
        usage_error("NAME needs --from NS/POD: resolution depends on the pod's namespace and dnsPolicy")
    assert from_ref is not None
    pod = _find_pod(state, from_ref, default_ns)
    if qtype is None:
        qtype = "PTR" if _is_ip(name.rstrip(".")) else "A"
    try:
        result = resolve(state, pod, name, qtype.upper(), mode=mode)
    except ValueError as exc:
        usage_error(str(exc))
        return
    if output == "text":
        click.echo(render(result), nl=False)
    else:
        emit(result.to_dict(), output)
    if not result.ok:
        sys.exit(EXIT_NEGATIVE)


def _find_pod(state: ClusterState, ref: str, default_ns: str) -> Pod:
    try:
        return resolve_pod(state, ref, default_ns)
    except PodNotFound as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)




def render(result: Resolution) -> str:
    """Every query with dig's header and sections, then one line with the verdict."""
    conf = result.resolv_conf
    lines = [f";; resolv.conf of {result.pod} (dnsPolicy {conf.dns_policy}"
             + (f", applied as {conf.effective_policy}" if conf.effective_policy != conf.dns_policy else "") + "):"]
    lines += [f";;   {line}" for line in conf.text().splitlines()]
    lines += [f";; note: {note}" for note in conf.notes]
    lines.append(f";; {result.mode}: {result.explanation}")
    lines.append("")
    for query in result.queries:
        lines += _query_lines(query, len(result.queries))
    if result.mode == "busybox-nslookup":
        lines.append(";; what busybox nslookup prints:")
        lines += [f"   {m}" if m else "" for m in result.messages]
    lines.append(_verdict(result))
    return "\n".join(lines) + "\n"


def _query_lines(query: Query, total: int) -> list[str]:
    where = f"@{query.nameserver}#{query.port} ({query.protocol})"
    head = f";; query {query.index} of {total}: {query.name} {query.qtype} {where}"
    lines = [head]
    if query.unreachable:
        lines.append(f";; no answer from {', '.join(query.unreachable)}")
    answer = query.answer
    if answer is None:
        return [*lines, ";; connection timed out; no servers could be reached", ""]
    lines += _dig_lines(answer)
    if answer.reason and (answer.outcome != "answer"):
        lines.append(f";; knetsim: {answer.reason}")
        lines.append("")
    return lines


def _dig_lines(answer: Answer) -> list[str]:
    lines = [
        f";; ->>HEADER<<- opcode: QUERY, status: {answer.rcode}",
        f";; flags: {' '.join(answer.flags)}; QUERY: 1, ANSWER: {len(answer.answer)}, "
        f"AUTHORITY: {len(answer.authority)}, ADDITIONAL: {len(answer.additional)}",
        "",
        ";; QUESTION SECTION:",
        f";{answer.qname}\tIN\t{answer.qtype}",
        "",
    ]
    return lines + answer_lines(answer)


def _verdict(result: Resolution) -> str:
    count = len(result.queries)
    tried = f"{count} {'query' if count == 1 else 'queries'}"
    if result.outcome == "resolved":
        values = " ".join(result.values) or "(records of another type)"
        return f"{result.name}: {result.fqdn} {result.qtype} {values} (query {result.answered} of {count})"
    if result.outcome == "external":
        answer = result.answer
        cname = next((r.data for r in answer.answer if r.type == "CNAME"), result.fqdn) if answer else result.fqdn
        return (f"{result.name}: {result.fqdn} points outside the cluster ({cname}); its addresses come from "
                f"the upstream DNS, which knetsim does not simulate (query {result.answered} of {count})")
    detail = f" ({result.messages[0].split(': ', 1)[-1]})" if result.mode != "busybox-nslookup" and result.messages \
        else ""
    return f"{result.name}: {result.outcome.upper()} after {tried}{detail}"


COMMANDS = [dns_command]
