"""``knetsim route --gateway NS/NAME``: one request, call or connection through a Gateway, in every protocol
its listeners speak (http, https, grpc, tls, tcp, udp), and the text each answer prints."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..gateway import GatewayRouteError, GatewayRouteResult
from ..gateway import route as gateway_route
from ..gateway.certs import CertificateError, load_pem_chain
from ..gateway.envoypolicies import Decision
from ..gateway.grpc import GRPC_STATUS_NAMES, GRPCRouteResult, call_from, route_grpc
from ..gateway.handshake import TLSHandshake
from ..gateway.streams import StreamRouteResult, route_stream
from ..model.http import HTTPRequest, HTTPRequestError, parse_header
from .common import EXIT_NEGATIVE, emit, tabulate

PROTOCOLS = ("http", "https", "grpc", "tls", "tcp", "udp")


def _tls_lines(hs: TLSHandshake | None) -> list[str]:
    if hs is None:
        return []
    lines = []
    head = f"SNI {hs.sni or '<none>'}"
    if hs.listener:
        head += f" → listener {hs.listener} ({hs.mode})"
    if hs.route:
        head += f", TLSRoute {hs.route}"
    lines.append(f"TLS:         {head}")
    if hs.certificate is not None:
        c = hs.certificate
        names = ", ".join(c.dns_names + c.ip_addresses) or "none"
        covers = "" if hs.covers_sni is None else (", covers the SNI" if hs.covers_sni else
                                                   ", does NOT cover the SNI (a client checking names refuses it)")
        lines.append(f"Certificate: {c.subject} (issuer {c.issuer}, SANs {names}, until {c.not_after}) from "
                     f"{hs.certificate_from}{covers}")
    if hs.client_certificate:
        lines.append(f"Client cert: {hs.client_certificate}")
    if hs.error:
        lines.append(f"TLS error:   {hs.error}" + (f" (alert: {hs.alert})" if hs.alert else ""))
    return lines


def _backend_lines(result: GatewayRouteResult | GRPCRouteResult) -> list[str]:
    """The rule's weighted backends, the one chosen, its TLS and the Envoy Gateway policies' verdicts: the same
    for an HTTP request and a gRPC call."""
    lines = []
    if result.backends:
        lines.append("Backends:    " + ", ".join(f"{b.service}:{b.port} (weight {b.weight})" + (
            "" if b.valid else f" INVALID: {b.problem}") for b in result.backends))
    if result.backend is not None and result.backend.valid:
        b = result.backend
        lines.append(f"Backend:     {b.service}:{b.port}, targetPort {b.target_port}, {b.ready_endpoints} ready "
                     "endpoint(s)")
    return [*lines, *_backend_tls_lines(result.backend_tls), *_policy_lines(result.policy)]


def _backend_tls_lines(backend_tls: Any) -> list[str]:
    if backend_tls is None:
        return []
    c = backend_tls.certificate
    verdict = "verified" if backend_tls.verdict.ok else f"NOT verified: {backend_tls.verdict.describe()}"
    return [f"Backend TLS: BackendTLSPolicy {backend_tls.policy} (SNI {backend_tls.sni}): pod {backend_tls.pod} "
            f"presents {c.subject} (issuer {c.issuer}, SANs {', '.join(c.dns_names + c.uris) or 'none'}): {verdict}"]


def _policy_lines(decision: Decision | None) -> list[str]:
    """Envoy Gateway's policies on the request: which apply, the client they saw, each filter's verdict."""
    if decision is None:
        return []
    names = ", ".join(decision.policies) or "the rule's CORS filter"
    lines = [f"Policies:    {names} (client {decision.client})"]
    lines += [f"Filter:      {step}" for step in decision.steps]
    if decision.burst is not None:
        n, through, status = decision.burst
        lines.append(f"Burst:       {n} requests at once: {through} through" + (
            f", {n - through} get {status} (local_rate_limited)" if through < n else ""))
    return lines


def http_text(result: GatewayRouteResult) -> str:
    req = result.request
    lines = [f"Request:     {req.method} {req.url}  (port {req.effective_port})"]
    where = f"Gateway:     {result.gateway}"
    if result.address:
        where += f" {result.address}"
    if result.listener:
        where += f", listener {result.listener}"
    if result.proxy_pod:
        where += f", proxy {result.proxy_pod}"
    lines.append(where)
    lines += _tls_lines(result.tls)
    if result.match is not None:
        m = result.match
        name = f" ({m.rule_name})" if m.rule_name else ""
        host = f", hostname {m.hostname}" if m.hostname else ""
        lines.append(f"Route:       {m.route} rule {m.rule}{name} match {m.match} ({m.path_type} {m.path}){host}")
    lines += _backend_lines(result)
    if result.redirect is not None:
        lines.append(f"Redirect:    {result.redirect.status} Location: {result.redirect.location}")
    if result.upstream_request is not None and result.outcome in ("proxied", "no-endpoints"):
        u = result.upstream_request
        headers = " ".join(f"{k}={v}" for k, v in u.headers.items())
        lines.append(f"Upstream:    {u.method} {u.host} {u.path}" + (f"  headers: {headers}" if headers else ""))
    if result.response_headers or result.response_headers_removed:
        shown = [f"{k}={v}" for k, v in result.response_headers.items()] + [
            f"-{k}" for k in result.response_headers_removed]
        lines.append("Response:    headers " + " ".join(shown))
    status = f" (HTTP {result.http_status})" if result.http_status else ""
    lines.append(f"Outcome:     {result.outcome}{status}")
    lines.append(f"Why:         {result.summary}")
    out = "\n".join(lines) + "\n"
    others = [c for c in result.candidates if c.verdict != "chosen"]
    if others:
        rows = [[c.route, "-" if c.rule is None else str(c.rule), "-" if c.match is None else str(c.match),
                 c.listener or "-", c.path or "-", c.backends, f"{c.verdict}: {c.reason}"] for c in others]
        out += "\nOther candidates:\n" + tabulate(["ROUTE", "RULE", "MATCH", "LISTENER", "PATH", "BACKENDS",
                                                   "WHY NOT"], rows)
    for note in result.notes:
        out += f"\nNote: {note}"
    if result.notes:
        out += "\n"
    return out


def grpc_text(result: GRPCRouteResult) -> str:
    call = result.call
    lines = [f"Call:        {call.path} to {call.authority}  (port {call.effective_port}, "
             f"{'TLS' if call.tls else 'h2c'})"]
    where = f"Gateway:     {result.gateway}" + (f" {result.address}" if result.address else "")
    where += f", listener {result.listener}" if result.listener else ""
    where += f", proxy {result.proxy_pod}" if result.proxy_pod else ""
    lines.append(where)
    lines += _tls_lines(result.tls)
    if result.match is not None:
        m = result.match
        name = f" ({m.rule_name})" if m.rule_name else ""
        host = f", hostname {m.hostname}" if m.hostname else ""
        lines.append(f"Route:       {result.route_kind} {m.route} rule {m.rule}{name} match {m.match} "
                     f"({m.method}){host}")
    lines += _backend_lines(result)
    if result.upstream_metadata:
        lines.append("Metadata:    " + " ".join(f"{k}={v}" for k, v in result.upstream_metadata.items()))
    if result.response_metadata:
        lines.append("Response:    metadata " + " ".join(f"{k}={v}" for k, v in result.response_metadata.items()))
    status = f" (grpc-status {result.grpc_status} {GRPC_STATUS_NAMES.get(result.grpc_status, '')})" \
        if result.grpc_status is not None else ""
    lines.append(f"Outcome:     {result.outcome}{status}")
    lines.append(f"Why:         {result.summary}")
    out = "\n".join(lines) + "\n"
    others = [c for c in result.candidates if c.verdict != "chosen"]
    if others:
        rows = [[c.route, "-" if c.rule is None else str(c.rule), "-" if c.match is None else str(c.match),
                 c.path or "-", c.backends, f"{c.verdict}: {c.reason}"] for c in others]
        out += "\nOther candidates:\n" + tabulate(["ROUTE", "RULE", "MATCH", "METHOD", "BACKENDS", "WHY NOT"], rows)
    for note in result.notes:
        out += f"\nNote: {note}"
    if result.notes:
        out += "\n"
    return out


def stream_text(result: StreamRouteResult) -> str:
    lines = [f"Connection:  {result.protocol.upper()} to port {result.port}"]
    where = f"Gateway:     {result.gateway}" + (f" {result.address}" if result.address else "")
    where += f", listener {result.listener}" if result.listener else ""
    where += f", proxy {result.proxy_pod}" if result.proxy_pod else ""
    lines.append(where)
    lines += _tls_lines(result.tls)
    if result.route:
        lines.append(f"Route:       {result.route}")
    if result.backends:
        lines.append("Backends:    " + ", ".join(f"{b.service}:{b.port} (weight {b.weight})" + (
            "" if b.valid else f" INVALID: {b.problem}") for b in result.backends))
    if result.endpoint is not None:
        lines.append(f"Endpoint:    {result.endpoint.describe()}")
    lines += _backend_tls_lines(result.backend_tls)
    lines.append(f"Outcome:     {result.outcome}")
    lines.append(f"Why:         {result.summary}")
    out = "\n".join(lines) + "\n"
    for note in result.notes:
        out += f"\nNote: {note}"
    if result.notes:
        out += "\n"
    return out


def _client_chain(path: str | None) -> list[Any] | None:
    if path is None:
        return None
    try:
        return load_pem_chain(Path(path).read_bytes())
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path}: {exc.strerror}", param_hint="'--client-cert'") from None
    except CertificateError as exc:
        raise click.BadParameter(f"{path}: {exc}", param_hint="'--client-cert'") from None


def run(state: Any, ref: str, *, protocol: str, host: str | None, path: str, method: str, port: int | None,
        scheme: str, headers: tuple[str, ...], sni: str | None, grpc_method: str | None, client_cert: str | None,
        output: str, client_ip: str | None = None, body_size: int | None = None, burst: int | None = None) -> None:
    """The gateway branch of ``knetsim route``: prints the answer, exits 1 unless it reaches a backend."""
    chain = _client_chain(client_cert)
    result: GatewayRouteResult | GRPCRouteResult | StreamRouteResult
    try:
        if protocol in ("http", "https", "grpc") and not host:
            raise click.UsageError(f"--host is required for --protocol {protocol}")
        pairs = tuple(parse_header(h) for h in headers)
        if protocol in ("http", "https"):
            request = HTTPRequest(host or "", path, method.upper(), protocol, port, pairs, client_ip, body_size)
            result = gateway_route(state, ref, request, sni=sni, client_chain=chain, burst=burst)
        elif protocol == "grpc":
            if not grpc_method:
                raise click.UsageError("--grpc-method pkg.Service/Method is required for --protocol grpc")
            tls = scheme == "https" or sni is not None or chain is not None
            try:
                call = call_from(host or "", grpc_method, metadata=pairs, port=port, tls=tls)
            except GatewayRouteError as exc:
                # call_from's only errors are the call's own: --grpc-method's (they read as --gateway's below).
                raise click.BadParameter(str(exc), param_hint="'--grpc-method'") from None
            result = route_grpc(state, ref, call, sni=sni, client_chain=chain)
        else:
            if burst is not None:
                raise click.UsageError(f"--burst applies to HTTP requests, not to --protocol {protocol}")
            if port is None:
                raise click.UsageError(f"--port is required for --protocol {protocol} (the listener's port)")
            result = route_stream(state, ref, protocol, port, sni=sni if sni is not None else host,
                                  client_chain=chain)
    except (HTTPRequestError, GatewayRouteError) as exc:
        raise click.BadParameter(str(exc), param_hint="'--gateway'" if isinstance(exc, GatewayRouteError)
                                 else "the request") from None
    if output == "text":
        if isinstance(result, GatewayRouteResult):
            click.echo(http_text(result), nl=False)
        elif isinstance(result, GRPCRouteResult):
            click.echo(grpc_text(result), nl=False)
        else:
            click.echo(stream_text(result), nl=False)
    else:
        emit(result.to_dict(), output)
    if not result.proxied:
        sys.exit(EXIT_NEGATIVE)
