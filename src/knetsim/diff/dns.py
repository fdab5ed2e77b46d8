"""DNS: the answers of the cluster DNS that differ, name by name (``dns.records.zone_records``).

Every record the cluster DNS serves is compared (A/AAAA, CNAME, SRV, the StatefulSet pods' own
names), but two kinds that only mirror what other layers report: reverse (PTR) records, and the
per-endpoint names of a Service (``10-244-1-2.web.shop.svc...``, one per endpoint address, which
the endpoints layer already counts). A name that answered and no longer does is lost.
"""

from __future__ import annotations

import re

from ..dns.records import zone_records
from .model import CHANGED, GAINED, LOST, Item, Layer, Side

TITLE = "DNS (the cluster DNS's answers, per name and type)"
ENDPOINT_NAME = re.compile(r"^\d+-\d+-\d+-\d+\.")  # an IPv4 address, dashed (knetsim's clusters are IPv4)


def answers(side: Side) -> dict[tuple[str, str], tuple[str, ...]]:
    out: dict[tuple[str, str], list[str]] = {}
    for r in zone_records(side.state, reverse=False, addressed=False):
        if ENDPOINT_NAME.match(r.name):
            continue
        out.setdefault((r.name, r.type), []).append(r.data)
    return {k: tuple(v) for k, v in out.items()}


def compare(before: Side, after: Side) -> Layer:
    old, new = answers(before), answers(after)
    items = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key, ()), new.get(key, ())
        if a == b:
            continue
        name, rtype = key
        subject = f"{name} {rtype}"
        if not b:
            items.append(Item(LOST, subject, f"no longer answered (was {', '.join(a)})", list(a), []))
        elif not a:
            items.append(Item(GAINED, subject, f"answered now: {', '.join(b)}", [], list(b)))
        else:
            items.append(Item(CHANGED, subject, f"{', '.join(a)} → {', '.join(b)}", list(a), list(b)))
    return Layer("dns", TITLE, tuple(items))


__all__ = ["TITLE", "answers", "compare"]
