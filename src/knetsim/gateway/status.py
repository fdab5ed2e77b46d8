"""The translation as API status: what ``kubectl get -o yaml`` shows and the live controller writes.

Conditions carry ``observedGeneration`` (the object's ``metadata.generation``) and
``lastTransitionTime``: kept from the previous status while a condition's status does not
change (as ``meta.SetStatusCondition`` does), else ``now``. Keys are in the order kubectl prints
them (alphabetical). Route parents that another controller wrote are kept as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..cluster.gatewayinfra import EG_CONTROLLER
from ..cluster.state import ClusterState
from ..model.objects import Object
from .conditions import Conditions, Type
from .translate import Translation, translate

EPOCH = "1970-01-01T00:00:00Z"


def _conditions(conds: Conditions, generation: int, now: str, previous: Any) -> list[dict[str, Any]]:
    before = {c.get("type"): c for c in previous or [] if isinstance(c, Mapping)}
    out = []
    for c in conds.values():
        old = before.get(c.type) or {}
        since = old.get("lastTransitionTime") if old.get("status") == c.status and old.get(
            "lastTransitionTime") else now
        out.append({"lastTransitionTime": since, "message": c.message, "observedGeneration": generation,
                    "reason": c.reason, "status": c.status, "type": c.type})
    return out


def _previous(obj: Object) -> Mapping[str, Any]:
    status = obj.raw.get("status")
    return status if isinstance(status, Mapping) else {}


def status_of(state: ClusterState, obj: Object, now: str | None = None, translation: Translation | None = None,
              previous: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The status knetsim's Gateway controller writes for ``obj``; None when the object is not its business.

    ``previous`` is the status the object has now (default: its manifest's), whose transition times are kept.
    """
    t = translation or translate(state)
    when = now or obj.meta.creation_timestamp or EPOCH
    if previous is None or not isinstance(previous, Mapping):
        previous = _previous(obj)
    generation = getattr(obj, "generation", 1)
    if obj.kind == "GatewayClass":
        entry = t.classes.get(obj.name)
        if entry is None or not entry[1].ours:
            return None
        conds = Conditions()
        conds.set(Type.ACCEPTED, entry[1].accepted, entry[1].reason, entry[1].message)
        return {**previous, "conditions": _conditions(conds, generation, when, previous.get("conditions"))}
    if obj.kind == "Gateway":
        gctx = t.gateways.get(obj.key)
        if gctx is None:
            return None
        old_listeners = {li.get("name"): li for li in previous.get("listeners") or [] if isinstance(li, Mapping)}
        listeners = []
        for lc in gctx.listeners:
            old = old_listeners.get(lc.name) or {}
            listeners.append({
                "attachedRoutes": lc.attached_routes,
                "conditions": _conditions(lc.conditions, generation, when, old.get("conditions")),
                "name": lc.name,
                "supportedKinds": [{"group": k.group, "kind": k.kind} for k in lc.supported_kinds],
            })
        out: dict[str, Any] = {}
        if gctx.addresses:
            out["addresses"] = [{"type": "IPAddress", "value": ip} for ip in gctx.addresses]
        out["conditions"] = _conditions(gctx.conditions, generation, when, previous.get("conditions"))
        out["listeners"] = listeners
        return out
    if obj.kind == "HTTPRoute":
        rc = t.routes.get(obj.key)
        if rc is None or not rc.parents:
            return None
        old_parents = [p for p in previous.get("parents") or [] if isinstance(p, Mapping)]
        parents = [p for p in old_parents if p.get("controllerName") != EG_CONTROLLER]
        for ps in rc.parents:
            old = next((p for p in old_parents if p.get("controllerName") == EG_CONTROLLER
                        and p.get("parentRef") == dict(ps.ref.raw)), {})
            parents.append({"conditions": _conditions(ps.conditions, generation, when, old.get("conditions")),
                            "controllerName": EG_CONTROLLER, "parentRef": dict(ps.ref.raw)})
        return {"parents": parents}
    return None


def with_status(state: ClusterState, obj: Object, now: str | None = None) -> dict[str, Any]:
    """The object as the API would return it: its manifest with the controller's status."""
    status = status_of(state, obj, now)
    if status is None:
        return dict(obj.raw)
    return {**obj.raw, "status": status}
