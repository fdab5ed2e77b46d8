"""What a change changes: two sides compared layer by layer, each by the answer its own command gives.

    objects       admission                      (knetsim validate)
    endpoints     EndpointSlices per Service     (knetsim endpoints)
    dns           the cluster DNS's records      (knetsim dns)
    dataplane     what kube-proxy (or Cilium) programs  (knetsim render)
    reachability  policy, every tier             (knetsim matrix, knetsim policy check)
    routes        Ingress and Gateway answers    (knetsim route, knetsim migrate check)
    findings      the doctor                     (knetsim doctor)

A diff computes nothing of its own: it asks each layer on BEFORE and on AFTER and compares the
answers, so it can never disagree with what those commands say (netpol-analyzer's ``diff`` and
gwctl's ``analyze`` work the same way).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from functools import partial

from . import dataplane, dns, endpoints, findings, objects, parallel, reachability, routes
from .model import CHANGED, FIXED, GAINED, INTRODUCED, LOST, UNCHANGED, Diff, Item, Layer, Side

# In the order a packet meets them, admission first and the doctor's verdict last.
LAYERS: dict[str, Callable[[Side, Side], Layer]] = {
    "objects": objects.compare,
    "endpoints": endpoints.compare,
    "dns": dns.compare,
    "dataplane": dataplane.compare,
    "reachability": reachability.compare,
    "routes": routes.compare,
    "findings": findings.compare,
}


def prepare(side: Side, layers: Sequence[str] = tuple(LAYERS)) -> Side:
    """``side`` with its slowest answer of its own, the doctor's, begun in a forked child (``parallel``):
    called as soon as a side is built, it runs while the other side is built and the other layers compared."""
    if "findings" not in layers or side.doctor is not None:
        return side
    return dataclasses.replace(side, doctor=parallel.start(partial(findings.doctor, side)))


def compare(before: Side, after: Side, layers: Sequence[str] = tuple(LAYERS)) -> Diff:
    """Every layer of ``layers`` (in ``LAYERS`` order) on both sides."""
    unknown = [name for name in layers if name not in LAYERS]
    if unknown:
        raise ValueError(f"unknown layer {unknown[0]!r}: supported values: {', '.join(LAYERS)}")
    return Diff(before.label, after.label, tuple(LAYERS[name](before, after) for name in LAYERS if name in layers))


__all__ = ["CHANGED", "FIXED", "GAINED", "INTRODUCED", "LAYERS", "LOST", "UNCHANGED", "Diff", "Item", "Layer",
           "Side", "compare", "prepare"]
