"""Source ranges: ``whitelist-source-range`` (``allowlist-source-range``) and ``denylist-source-range``.

Parsing is ingress-nginx's ``ipallowlist``/``ipdenylist``: comma-separated networks or addresses;
a missing annotation takes the ConfigMap's ``whitelist-source-range`` / ``denylist-source-range``
(so the annotation *replaces* the global list, it does not add to it); a value that does not parse
denies the location — every location of the Ingress answers 503, failing closed.

Behaviour (the location block): ``deny`` for every denylist entry, then ``allow`` for every
allowlist entry and ``deny all``: nginx's access module takes the first rule that matches the
client address, so an address on both lists is denied. A denied client gets 403. The address is
``$remote_addr``: the TCP peer, or — only with the ConfigMap's ``use-forwarded-headers`` — the
address the realip module takes from ``X-Forwarded-For`` (every proxy trusted: ``proxy-real-ip-cidr``
defaults to ``0.0.0.0/0``, so the leftmost address of the header).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from .base import DENIED, Context
from .values import parse_cidrs, valid_cidrs


@dataclass(frozen=True, slots=True)
class AccessConfig:
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    allow_from: str = ""  # the annotation the list came from, or "ConfigMap"
    deny_from: str = ""


def _list(ctx: Context, name: str, aliases: tuple[str, ...], default: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
    read = ctx.reader.string(name, valid_cidrs, aliases)
    if read.error == "missing":
        return tuple(sorted(parse_cidrs(",".join(default)) or ())), "ConfigMap" if default else ""
    if not read.ok or read.value is None:
        ctx.reported(read, DENIED, "every location of this Ingress answers 503 (location denied)")
        return (), read.name
    cidrs = parse_cidrs(read.value)
    if cidrs is None:
        ctx.report(read.name, DENIED, "the annotation does not contain a valid IP address or network: every "
                                      "location of this Ingress answers 503 (location denied)")
        return (), read.name
    return cidrs, read.name


def parse(ctx: Context) -> AccessConfig:
    allow, allow_from = _list(ctx, "allowlist-source-range", ("whitelist-source-range",),
                              ctx.config.whitelist_source_range)
    deny, deny_from = _list(ctx, "denylist-source-range", (), ctx.config.denylist_source_range)
    return AccessConfig(allow, deny, allow_from, deny_from)


def _contains(entry: str, address: str) -> bool:
    try:
        return ipaddress.ip_address(address) in ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False


def verdict(config: AccessConfig, address: str) -> tuple[bool, str]:
    """(allowed, why) for a client address, as nginx's access module evaluates the rules."""
    for entry in config.deny:
        if _contains(entry, address):
            return False, f"{address} is in denylist-source-range entry {entry}"
    if not config.allow:
        return True, "no allowlist"
    for entry in config.allow:
        if _contains(entry, address):
            return True, f"{address} is in {config.allow_from} entry {entry}"
    return False, f"{address} is not in {config.allow_from} ({', '.join(config.allow)}): deny all"


def real_ip(peer: str, forwarded_for: str | None, trusted: tuple[str, ...]) -> str:
    """``$remote_addr`` with realip on (``real_ip_header X-Forwarded-For; real_ip_recursive on``): from the
    right, skip trusted addresses; the first untrusted one is the client, or the leftmost when all are."""
    if forwarded_for is None or not any(_contains(t, peer) for t in trusted):
        return peer
    chain = [a.strip() for a in forwarded_for.split(",") if a.strip()]
    client = peer
    for address in reversed(chain):
        try:
            ipaddress.ip_address(address)
        except ValueError:
            break
        client = address
        if not any(_contains(t, address) for t in trusted):
            break
    return client
