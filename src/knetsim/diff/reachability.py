"""Reachability: the connections policy allows, gained and lost, per workload pair and external range.

Each side's answer is ``knetsim matrix``'s (``policy.matrix.matrix``, every tier, the pods knetsim
adds itself included so that a policy cutting off the cluster DNS shows, hostNetwork rows left out:
their traffic is node traffic). A pair's lost connections are what BEFORE allowed and AFTER does
not, port by port; external ranges are compared over the address space, as the two sides may cut
it at different places. For each change, one representative connection (the first port of it,
from the first pod of each row) is put to ``policy.evaluate`` on both sides, as ``knetsim policy
check`` would, to name the rule that decided it before and after.
"""

from __future__ import annotations

import ipaddress
import itertools
from dataclasses import dataclass
from typing import Any

from ..policy.engine import PolicyInputError, Verdict, evaluate
from ..policy.matrix import Matrix, matrix
from ..policy.ports import PROTOCOLS, ConnSet
from ..policy.rules import Endpoint
from .model import GAINED, LOST, Item, Layer, Side

TITLE = "reachability (what policy allows, per workload pair and external range)"
Pieces = list[tuple[int, int, ConnSet]]  # [lo, hi) over IPv4, allowed
# The example connection to an address that declares no ports: what clients there most likely open.
COMMON_PORTS = (("TCP", 443), ("TCP", 80), ("UDP", 53))


@dataclass
class Answer:
    """One side's matrix, as pairs of workload rows and, per (workload, direction), pieces of address space."""

    matrix: Matrix
    pairs: dict[tuple[str, str], ConnSet]
    external: dict[tuple[str, str], Pieces]  # (workload, "to" | "from")
    members: dict[str, list[Endpoint]]


def answer(side: Side) -> Answer:
    m = matrix(side.state, include_system=True, all_external=True)
    rows = m.rows
    node_rows = rows.node_rows()
    spans: dict[int, tuple[int, int]] = {}
    for i in range(len(rows)):
        if rows.kinds[i] == "external":
            atom = m.classes.keys[int(rows.class_of[i])][3]
            spans[i] = (m.classes.ip_bounds[atom], m.classes.ip_bounds[atom + 1])
    pairs: dict[tuple[str, str], ConnSet] = {}
    external: dict[tuple[str, str], Pieces] = {}
    for i, j, allowed in m.cells(node_rows):
        if i in spans:
            lo, hi = spans[i]
            external.setdefault((rows.names[j], "from"), []).append((lo, hi, allowed))
        elif j in spans:
            lo, hi = spans[j]
            external.setdefault((rows.names[i], "to"), []).append((lo, hi, allowed))
        else:
            pairs[(rows.names[i], rows.names[j])] = allowed
    members = {rows.names[i]: rows.members[i] for i in range(len(rows)) if i not in node_rows and i not in spans}
    return Answer(m, pairs, external, members)


def _at(pieces: Pieces, point: int) -> ConnSet:
    for lo, hi, allowed in pieces:
        if lo <= point < hi:
            return allowed
    return ConnSet.none()


def _range_name(lo: int, hi: int) -> str:
    nets = list(ipaddress.summarize_address_range(ipaddress.IPv4Address(lo), ipaddress.IPv4Address(hi - 1)))
    return str(nets[0]) if len(nets) == 1 else f"{ipaddress.IPv4Address(lo)}-{ipaddress.IPv4Address(hi - 1)}"


def external_changes(old: Pieces, new: Pieces) -> list[tuple[int, int, ConnSet, ConnSet]]:
    """[lo, hi) pieces where the two answers differ, adjacent pieces with the same pair of answers merged."""
    cuts = sorted({x for lo, hi, _ in (*old, *new) for x in (lo, hi)})
    out: list[tuple[int, int, ConnSet, ConnSet]] = []
    for lo, hi in itertools.pairwise(cuts):
        a, b = _at(old, lo), _at(new, lo)
        if a == b:
            continue
        if out and out[-1][1] == lo and out[-1][2:] == (a, b):
            out[-1] = (out[-1][0], hi, a, b)
        else:
            out.append((lo, hi, a, b))
    return out


def _example_port(conns: ConnSet, dst: Endpoint | str | None) -> tuple[str, int] | None:
    """The connection to put to ``policy check``: the first port the destination pod declares that the set has
    (CoreDNS's is UDP 53), else a common one (``COMMON_PORTS``), else the set's first port, TCP first."""
    if isinstance(dst, Endpoint) and dst.pod is not None:
        for c in dst.pod.containers:
            for p in c.ports:
                if conns.contains(p.protocol, p.container_port):
                    return p.protocol, p.container_port
    for protocol, port in COMMON_PORTS:
        if conns.contains(protocol, port):
            return protocol, port
    for protocol in ("TCP", *(p for p in PROTOCOLS if p != "TCP")):
        ranges = conns.as_dict().get(protocol)
        if ranges:
            return protocol, ranges[0][0]
    return None


def decision(v: Verdict) -> str:
    """``allowed`` / ``denied``, with the deciding rule of each side that has one (only the denying side of a
    denial)."""
    sides = [v.egress, v.ingress] if v.allowed else [d for d in (v.egress, v.ingress) if not d.allowed]
    texts = [t for t in (d.deciding() for d in sides) if t]
    head = "allowed" if v.allowed else "denied"
    return f"{head} ({'; '.join(texts)})" if texts else f"{head} (no policy selects either pod)"


def _verdict(side: Side, src: Endpoint | str, dst: Endpoint | str, at: tuple[str, int]) -> dict[str, Any] | None:
    protocol, port = at
    try:
        v = evaluate(side.state, src, dst, port, protocol)
    except PolicyInputError:
        return None
    return {"connection": f"{v.src} -> {v.dst} {protocol}/{port}", "allowed": v.allowed, "decision": decision(v),
            "egress": v.egress.tier or None, "ingress": v.ingress.tier or None}


def _ends(ans: Answer, src: str, dst: str) -> tuple[Endpoint | None, Endpoint | None]:
    """The first pod of each row; of a row paired with itself, two different pods (a pod reaches itself)."""
    a, b = ans.members.get(src) or [], ans.members.get(dst) or []
    first = a[0] if a else None
    second = next((e for e in b if e is not first), None) if src == dst else (b[0] if b else None)
    return first, second


def _item(effect: str, subject: str, was: ConnSet, now: ConnSet, before: Side, after: Side,
          ends: tuple[tuple[Endpoint | str | None, Endpoint | str | None], tuple[Endpoint | str | None,
                                                                              Endpoint | str | None]]) -> Item:
    """One direction of a pair's change (``was`` → ``now``): what it lost or gained, and the rule of each side."""
    delta = was - now if effect == LOST else now - was
    at = _example_port(delta, ends[1][1] if ends[1][1] is not None else ends[0][1])
    verdicts: list[dict[str, Any] | None] = [None, None]
    if at is not None:
        for k, (side, (src, dst)) in enumerate(((before, ends[0]), (after, ends[1]))):
            if src is not None and dst is not None:
                verdicts[k] = _verdict(side, src, dst, at)
    why = ""
    if verdicts[0] and verdicts[1]:
        why = f"{verdicts[0]['connection']}: before {verdicts[0]['decision']}; after {verdicts[1]['decision']}"
    elif verdicts[1]:
        why = f"{verdicts[1]['connection']}: after {verdicts[1]['decision']}"
    elif verdicts[0]:
        why = f"{verdicts[0]['connection']}: before {verdicts[0]['decision']}"
    verb = "lost" if effect == LOST else "gained"
    return Item(effect, subject, f"{verb} {delta.describe()}", {"allowed": was.to_json(), "rule": verdicts[0]},
                {"allowed": now.to_json(), "rule": verdicts[1]}, why)


def compare(before: Side, after: Side) -> Layer:
    old, new = answer(before), answer(after)
    items = []
    for pair in sorted(set(old.pairs) | set(new.pairs)):
        a, b = old.pairs.get(pair, ConnSet.none()), new.pairs.get(pair, ConnSet.none())
        if a == b:
            continue
        src, dst = pair
        ends = (_ends(old, src, dst), _ends(new, src, dst))
        subject = f"{src} → {dst}"
        for effect, delta in ((LOST, a - b), (GAINED, b - a)):
            if delta:
                items.append(_item(effect, subject, a, b, before, after, ends))
    for key in sorted(set(old.external) | set(new.external)):
        workload, direction = key
        for lo, hi, a, b in external_changes(old.external.get(key, []), new.external.get(key, [])):
            address = str(ipaddress.IPv4Address(lo if lo else lo + 1))
            name = _range_name(lo, hi)
            subject = f"{workload} → {name}" if direction == "to" else f"{name} → {workload}"
            w_old, w_new = _ends(old, workload, workload)[0], _ends(new, workload, workload)[0]
            ends = ((w_old, address), (w_new, address)) if direction == "to" else ((address, w_old), (address, w_new))
            for effect, delta in ((LOST, a - b), (GAINED, b - a)):
                if delta:
                    items.append(_item(effect, subject, a, b, before, after, ends))
    return Layer("reachability", TITLE, tuple(items))


__all__ = ["TITLE", "Answer", "answer", "compare", "decision", "external_changes"]
