"""The TLS handshake at a Gateway port: which listener the client's SNI reaches, what certificate it is served,
and whether its own certificate is accepted.

Envoy Gateway programs one Envoy listener per port; each HTTPS listener is a filter chain matched by
its hostname, and each TLSRoute on a TLS listener one matched by the route's hostnames (``server_names``).
Envoy picks the chain whose server name matches the SNI most specifically — exact, then the longest
wildcard (``*.example.com`` covers any depth), then a chain without names; no chain: the connection is
closed during the handshake. A terminating chain serves the listener's certificate (of several, the
first whose names cover the SNI, else the first) and, when the Gateway validates client certificates
on that port (``spec.tls.frontend``), asks for one: ``AllowValidOnly`` refuses a missing or unverified
one with an alert, ``AllowInsecureFallback`` lets the connection through.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from . import certs, hostnames
from .listeners import ListenerContext

TERMINATE = "terminate"
PASSTHROUGH = "passthrough"


@dataclass(frozen=True, slots=True)
class TLSHandshake:
    """What the client sees of the handshake (the ``tls`` part of a route answer)."""

    sni: str | None
    listener: str | None = None  # the listener whose chain took the connection
    mode: str | None = None  # terminate | passthrough
    route: str | None = None  # the TLSRoute whose SNI chain took it (passthrough, or terminate with TLSRoute)
    certificate: certs.CertificateInfo | None = None  # what the client was served (by the proxy, or the backend)
    certificate_from: str | None = None  # "Secret ns/name", "backend pod ns/name"
    covers_sni: bool | None = None  # would a client checking the name accept it
    client_certificate: str | None = None  # the client certificate check, when the listener asks for one
    alert: str | None = None  # the TLS alert the proxy sends when it refuses the handshake
    error: str | None = None  # why the handshake failed (None: it succeeded)

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        return {"sni": self.sni, "listener": self.listener, "mode": self.mode, "route": self.route,
                "certificate": self.certificate.to_dict() if self.certificate else None,
                "certificate_from": self.certificate_from, "covers_sni": self.covers_sni,
                "client_certificate": self.client_certificate, "alert": self.alert, "error": self.error}


@dataclass(frozen=True, slots=True)
class Chain:
    """One filter chain of a port: a terminating HTTPS/TLS listener, or a TLSRoute entry of a TLS listener."""

    listener: ListenerContext
    server_names: tuple[str, ...]  # () = every SNI (and none)
    entry: Any = None  # the StreamEntry (TLSRoute) for a TLS listener's chain

    def rank(self, sni: str | None) -> tuple[int, int] | None:
        """How well the chain's names match ``sni`` (bigger wins); None when they do not."""
        if not self.server_names:
            return (0, 0)
        if sni is None:
            return None
        best: tuple[int, int] | None = None
        for name in self.server_names:
            if hostnames.matches(name, sni):
                score = hostnames.specificity(name)
                best = score if best is None or score > best else best
        return best


def chains(listeners: Sequence[ListenerContext], port: int) -> list[Chain]:
    """The filter chains Envoy has on ``port``, in listener order."""
    out = []
    for lc in listeners:
        if lc.port != port or not lc.programmed:
            continue
        if lc.protocol == "HTTPS":
            out.append(Chain(lc, (lc.hostname,) if lc.hostname else ()))
        elif lc.protocol == "TLS":
            for entry in lc.streams:
                names = entry.hostnames or ((lc.hostname,) if lc.hostname else ())
                out.append(Chain(lc, tuple(names), entry))
    return out


def select(port_chains: Sequence[Chain], sni: str | None) -> Chain | None:
    ranked = [(r, i, c) for i, c in enumerate(port_chains) if (r := c.rank(sni)) is not None]
    if not ranked:
        return None
    ranked.sort(key=lambda t: (-t[0][0], -t[0][1], t[1]))
    return ranked[0][2]


def serving_certificate(lc: ListenerContext, sni: str | None) -> certs.ServingCertificate | None:
    if not lc.certificates:
        return None
    if sni is not None:
        for c in lc.certificates:
            if c.info.covers(sni):
                return c
    return lc.certificates[0]


def handshake(listeners: Sequence[ListenerContext], port: int, sni: str | None,
              client_chain: Sequence[Any] | None, now: datetime, *,
              check_client: bool = True) -> tuple[TLSHandshake, Chain | None]:
    """The handshake a client sending ``sni`` (and optionally ``client_chain``) has at ``port``.

    ``check_client=False`` stops after the certificate choice: a server that reads the ClientHello before
    the client's certificate is sent (the live listeners) checks that certificate in its own TLS stack."""
    sni = hostnames.normalize(sni) if sni else None
    port_chains = chains(listeners, port)
    chain = select(port_chains, sni)
    if chain is None:
        names = sorted({n for c in port_chains for n in c.server_names}) or ["none"]
        why = (f"no filter chain on port {port} matches SNI {sni}" if sni else
               f"the client sent no SNI and every filter chain on port {port} requires one")
        return TLSHandshake(sni, error=f"{why} (server names: {', '.join(names)}): Envoy closes the connection "
                                       "during the handshake"), None
    lc = chain.listener
    route = chain.entry.route.key if chain.entry is not None else None
    if lc.protocol == "TLS" and lc.listener.tls_mode == "Passthrough":
        return TLSHandshake(sni, lc.label, PASSTHROUGH, route), chain
    serving = serving_certificate(lc, sni)
    if serving is None:  # pragma: no cover - a programmed terminating listener has a certificate
        return TLSHandshake(sni, lc.label, TERMINATE, route, error="the listener has no certificate"), None
    info = serving.info
    base = {"sni": sni, "listener": lc.label, "mode": TERMINATE, "route": route, "certificate": info,
            "certificate_from": f"Secret {serving.source}", "covers_sni": info.covers(sni) if sni else None}
    frontend = lc.frontend
    if frontend is None or frontend.error is not None or not check_client:
        return TLSHandshake(**base), chain
    fallback = frontend.mode == "AllowInsecureFallback"
    if not client_chain:
        if fallback:
            return TLSHandshake(**base, client_certificate="none sent (AllowInsecureFallback lets the connection "
                                                           "through)"), chain
        return TLSHandshake(**base, client_certificate="none sent", alert="certificate required",
                            error=f"listener {lc.label} requires a client certificate ({frontend.source}: "
                                  "AllowValidOnly) and the client sent none"), None
    verdict = certs.verify(list(client_chain), list(frontend.cas), now)
    if verdict.ok:
        subject = certs.CertificateInfo.of(client_chain[0]).subject
        return TLSHandshake(**base, client_certificate=f"{subject}: verified against {frontend.source}"), chain
    if fallback:
        return TLSHandshake(**base, client_certificate=f"not verified: {verdict.describe()} (AllowInsecureFallback "
                                                       "lets the connection through)"), chain
    alert = "unknown ca" if "issuer" in (verdict.error or "") or "self-signed" in (verdict.error or "") \
        else "bad certificate"
    return TLSHandshake(**base, client_certificate=f"not verified: {verdict.describe()}", alert=alert,
                        error=f"the client certificate does not verify against {frontend.source}: "
                              f"{verdict.describe()}"), None
