"""Routes: requests whose answer changes, through the Ingress side and the Gateway side.

The requests are those ``knetsim migrate check`` generates (every host and path boundary either
side defines, ``migration.check.requests``), from BEFORE and AFTER together, and each is answered on
each side as ``migrate check`` answers it (``migration.check.compare``: ingress-nginx for the
Ingresses, the Gateway that serves the host for the HTTPRoutes). A request's answer is its status,
backend, redirect and, on the Gateway side, the weighted split of the rule that answered (a weight
shift changes the split, whichever backend one request happens to get). An answer that becomes an
error (a 4xx/5xx of the proxy itself, or nothing answering) is lost; one that stops being an error
gained; any other difference changed.
"""

from __future__ import annotations

from typing import Any

from ..migration.check import Comparison
from ..migration.check import compare as route_both
from ..migration.check import requests as request_set
from ..model.http import HTTPRequest, RouteAnswer
from .model import CHANGED, GAINED, LOST, Item, Layer, Side

TITLE = "routes (Ingress and Gateway answers to the request set of migrate check)"


def _failed(answer: RouteAnswer) -> bool:
    if answer.status is None:
        return answer.backend is None  # nothing proxied or answered
    return answer.status >= 400


Split = tuple[tuple[str, int], ...]


def _served(answer: RouteAnswer, split: Split) -> dict[str, Any]:
    """What is compared: the status, the redirect, and where the requests go (the weighted split of the rule
    when it has several backends: which one a single request picks is the proxy's draw)."""
    out: dict[str, Any] = {"status": answer.status, "location": answer.location}
    if len(split) > 1 and answer.location is None:
        total = sum(w for _, w in split) or 1
        out["split"] = [{"backend": b, "weight": w, "percent": round(100 * w / total)} for b, w in split]
    else:
        out["backend"] = answer.backend
        out["upstream_path"] = answer.upstream_path
    return out


def _text(served: dict[str, Any]) -> str:
    if served.get("location"):
        return f"{served['status']} redirect to {served['location']}"
    if "split" in served:
        shares = ", ".join(f"{s['backend']} {s['percent']}%" for s in served["split"])
        head = f"{served['status']} " if served["status"] else ""
        return f"{head}split {shares}"
    if served["status"] is not None:
        return f"{served['status']}" + (f" (backend {served['backend']})" if served["backend"] else "")
    if served["backend"] is None:
        return "no answer"
    return f"proxied to {served['backend']}"


def _sides(c: Comparison) -> dict[str, tuple[RouteAnswer, Split, str | None]]:
    return {"Ingress": (c.ingress, (), None), "Gateway": (c.gateway, c.gateway_split, c.gateway_name)}


def compare(before: Side, after: Side) -> Layer:
    asked: dict[tuple[str, str, str], HTTPRequest] = {}
    for side in (before, after):
        for r in request_set(side.state):
            asked.setdefault((r.host, r.path, r.scheme), r)
    # Requests answered alike on both sides by the same change are one item (a weight shift moves every
    # request of the rule), listed in request order.
    grouped: dict[tuple[str, str, str, str], list[tuple[HTTPRequest, RouteAnswer]]] = {}
    for key in sorted(asked):
        request = asked[key]
        old, new = _sides(route_both(before.state, request)), _sides(route_both(after.state, request))
        for via in ("Ingress", "Gateway"):
            (a, split_a, gw_a), (b, split_b, gw_b) = old[via], new[via]
            served_a, served_b = _served(a, split_a), _served(b, split_b)
            if served_a == served_b:
                continue
            if _failed(a) and _failed(b) and a.status == b.status:
                continue  # the same failure explained differently (another Gateway's 404)
            where = via if via == "Ingress" else f"Gateway {gw_b or gw_a or '(none)'}"
            effect = LOST if _failed(b) and not _failed(a) else GAINED if _failed(a) and not _failed(b) else CHANGED
            texts = (_text(served_a), _text(served_b))
            if texts[0] == texts[1]:  # only the path the backend receives differs (a rewrite)
                texts = (f"{texts[0]} as {served_a.get('upstream_path')}",
                         f"{texts[1]} as {served_b.get('upstream_path')}")
            grouped.setdefault((where, effect, *texts), []).append((request, b))
    items = []
    for (where, effect, was, now), hits in grouped.items():
        first, answer = hits[0]
        more = f" and {len(hits) - 1} more request{'s' if len(hits) > 2 else ''}" if len(hits) > 1 else ""
        subject = f"{where}: {first.method} {first.url}{more}"
        items.append(Item(effect, subject, f"{was} → {now}", {"answer": was},
                          {"answer": now, "requests": [f"{r.method} {r.url}" for r, _ in hits]}, answer.explanation))
    items.sort(key=lambda i: i.subject)
    return Layer("routes", TITLE, tuple(items))


__all__ = ["TITLE", "compare"]
