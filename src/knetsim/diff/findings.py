"""Findings: the doctor on both sides, its findings introduced, fixed and unchanged (gwctl's buckets).

A finding is the same on both sides when its code and subject are (``SelectorMatchesNothing`` on
``Service shop/web``): its message may name pods whose names a rollout changed, and it is still the
same problem. Several findings of one code and subject are matched by message first, then in order.
"""

from __future__ import annotations

from ..doctor import Finding, diagnose
from .model import FIXED, INTRODUCED, UNCHANGED, Item, Layer, Side

TITLE = "findings (knetsim doctor: introduced, fixed, unchanged)"


def _text(f: Finding) -> str:
    return f"{f.severity.upper()} [{f.layer}] {f.code}: {f.message}"


def doctor(side: Side) -> list[Finding]:
    """What ``knetsim doctor`` finds on ``side``."""
    return diagnose(side.state, side.errors).findings


def compare(before: Side, after: Side) -> Layer:
    old = before.doctor.result() if before.doctor is not None else doctor(before)
    new = after.doctor.result() if after.doctor is not None else doctor(after)
    groups: dict[tuple[str, str], tuple[list[Finding], list[Finding]]] = {}
    for f in old:
        groups.setdefault((f.code, f.subject), ([], []))[0].append(f)
    for f in new:
        groups.setdefault((f.code, f.subject), ([], []))[1].append(f)
    items: list[Item] = []
    for (_code, subject), (was, now) in sorted(groups.items(), key=lambda g: (g[0][1], g[0][0])):
        pairs = []
        for f in list(now):  # the same message first
            twin = next((g for g in was if g.message == f.message), None)
            if twin is not None:
                was.remove(twin)
                now.remove(f)
                pairs.append((twin, f))
        k = min(len(was), len(now))
        pairs += list(zip(was[:k], now[:k], strict=True))
        items += [Item(UNCHANGED, subject, _text(b), a.to_dict(), b.to_dict()) for a, b in pairs]
        items += [Item(FIXED, subject, _text(f), f.to_dict(), None) for f in was[k:]]
        items += [Item(INTRODUCED, subject, _text(f), None, f.to_dict(), f"fix: {f.fix}" if f.fix else "")
                  for f in now[k:]]
    order = {INTRODUCED: 0, FIXED: 1, UNCHANGED: 2}
    items.sort(key=lambda i: (order[i.effect], i.subject, i.text))
    return Layer("findings", TITLE, tuple(items))


__all__ = ["TITLE", "compare", "doctor"]
