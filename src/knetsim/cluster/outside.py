"""The world outside the cluster: a small, fixed set of public names, their addresses and what answers there.

A real cluster's CoreDNS ends its Corefile with ``forward . /etc/resolv.conf``: a name outside the
cluster domain goes to the node's resolver and on to the Internet, and a pod's connection to a
public address leaves through its node (masqueraded, see ``dataplane/masquerade.py``). knetsim has no
Internet, so it carries a deterministic stand-in: the names below (and those the cluster config's
``outside.hosts`` adds or replaces) resolve to their real, published addresses, and each address
answers as a plain web server on 80 and 443; the two public resolvers also take DNS on 53.

The built-in names, and where their addresses come from:

* ``example.com``, ``www.example.com`` — the domain RFC 2606 reserves for examples; the addresses are
  the ones IANA's example.com answered with from 2024 (93.184.215.14, 2606:2800:21f:cb07:6820:80da:af6b:8b2c).
  Its hosting has moved since: a cluster config can say where it is today.
* ``one.one.one.one`` — Cloudflare's public resolver (1.1.1.1, 1.0.0.1, 2606:4700:4700::1111,
  2606:4700:4700::1001), as one.one.one.one documents them.
* ``dns.google`` — Google Public DNS (8.8.8.8, 8.8.4.4, 2001:4860:4860::8888, 2001:4860:4860::8844), as
  developers.google.com/speed/public-dns documents them.

Everything else outside is silent: a name no one lists is NXDOMAIN, an address no one lists never
answers (``169.254.169.254``, the cloud metadata address, included: a kind node has no cloud).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

BUILT_IN: dict[str, tuple[str, ...]] = {
    "example.com": ("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"),
    "www.example.com": ("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"),
    "one.one.one.one": ("1.1.1.1", "1.0.0.1", "2606:4700:4700::1111", "2606:4700:4700::1001"),
    "dns.google": ("8.8.8.8", "8.8.4.4", "2001:4860:4860::8888", "2001:4860:4860::8844"),
}
RESOLVERS = frozenset({"one.one.one.one", "dns.google"})
WEB_PORTS = ((80, "TCP"), (443, "TCP"))
DNS_PORTS = ((53, "UDP"), (53, "TCP"))


class OutsideError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class OutsideHost:
    name: str
    addresses: tuple[str, ...]
    ports: tuple[tuple[int, str], ...]  # (port, protocol) something listens on

    def listens(self, port: int, protocol: str) -> bool:
        return (port, protocol.upper()) in self.ports


@dataclass(frozen=True, slots=True)
class OutsideWorld:
    """The names and addresses beyond the cluster. ``overrides``: the cluster config's ``outside.hosts``
    (name → addresses; an empty list removes a built-in name)."""

    overrides: tuple[tuple[str, tuple[str, ...]], ...] = ()
    hosts: Mapping[str, OutsideHost] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        names = {**BUILT_IN, **dict(self.overrides)}
        hosts = {}
        for name in sorted(names):
            addresses = names[name]
            if not addresses:
                continue
            ports = WEB_PORTS + (DNS_PORTS if name in RESOLVERS else ())
            hosts[name] = OutsideHost(name, tuple(addresses), ports)
        object.__setattr__(self, "hosts", hosts)

    def addresses(self, name: str) -> tuple[str, ...]:
        host = self.hosts.get(name.lower().rstrip("."))
        return host.addresses if host else ()

    def host_at(self, address: str) -> OutsideHost | None:
        """Who answers at ``address`` (the first name listing it, in name order)."""
        canonical = _canonical(address)
        return next((h for h in self.hosts.values() if canonical in {_canonical(a) for a in h.addresses}), None)

    def reverse(self) -> dict[str, str]:
        """address → name for the PTR records the built-in public resolvers publish for their addresses
        (1.1.1.1 → one.one.one.one, 8.8.8.8 → dns.google); other names publish none knetsim knows."""
        kept = [n for n in sorted(RESOLVERS) if n in self.hosts and self.hosts[n].addresses == BUILT_IN[n]]
        return {_canonical(a): name for name in kept for a in self.hosts[name].addresses}

    def dns_hosts(self) -> dict[str, tuple[str, ...]]:
        """name. → addresses, as the upstream DNS answers them."""
        return {f"{name}.": host.addresses for name, host in self.hosts.items()}


def _canonical(address: str) -> str:
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return address


def outside_from_dict(raw: Any, origin: str) -> OutsideWorld:
    """The cluster config's ``outside`` section: ``{hosts: {NAME: [ADDRESS, ...]}}``."""
    if not isinstance(raw, Mapping):
        raise OutsideError(f"{origin}: outside: expected a mapping with hosts")
    unknown = sorted(set(raw) - {"hosts"})
    if unknown:
        raise OutsideError(f"{origin}: outside: unknown field(s) {', '.join(unknown)}; known: hosts")
    hosts = raw.get("hosts") or {}
    if not isinstance(hosts, Mapping):
        raise OutsideError(f"{origin}: outside.hosts: expected a mapping of names to address lists")
    out: list[tuple[str, tuple[str, ...]]] = []
    for name, addresses in sorted(hosts.items(), key=lambda kv: str(kv[0])):
        where = f"{origin}: outside.hosts[{name}]"
        key = str(name).lower().rstrip(".")
        if not key or any(not label or len(label) > 63 for label in key.split(".")) or len(key) > 253:
            raise OutsideError(f"{where}: not a DNS name")
        if isinstance(addresses, str):
            addresses = [addresses]
        if not isinstance(addresses, list):
            raise OutsideError(f"{where}: expected a list of IP addresses")
        parsed = []
        for address in addresses:
            try:
                parsed.append(str(ipaddress.ip_address(str(address))))
            except ValueError:
                raise OutsideError(f"{where}: {address!r} is not an IP address") from None
        out.append((key, tuple(parsed)))
    return OutsideWorld(tuple(out))
