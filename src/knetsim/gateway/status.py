"""The translation as API status: what ``kubectl get -o yaml`` shows and the live controller writes.

Conditions carry ``observedGeneration`` (the object's ``metadata.generation``, as the conformance
helpers compare them) and ``lastTransitionTime``: kept from the previous status while a condition's
status does not change (as ``meta.SetStatusCondition`` does), else ``now``. Keys are in the order
kubectl prints them (alphabetical). A route's ``parents[].parentRef`` and a policy's
``ancestors[].ancestorRef`` carry their defaulted group and kind. Entries that another controller
wrote (route parents, policy ancestors) are kept as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..cluster.gatewayinfra import EG_CONTROLLER
from ..cluster.state import ClusterState
from ..model.gatewayapi import ROUTE_KINDS
from ..model.objects import Object
from .backendtls import ancestor_ref
from .conditions import Conditions, Type
from .listeners import ListenerContext
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


def _listeners(items: list[ListenerContext], generation: int, now: str, previous: Any) -> list[dict[str, Any]]:
    old_listeners = {li.get("name"): li for li in previous or [] if isinstance(li, Mapping)}
    out = []
    for lc in items:
        old = old_listeners.get(lc.name) or {}
        out.append({
            "attachedRoutes": lc.attached_routes,
            "conditions": _conditions(lc.conditions, generation, now, old.get("conditions")),
            "name": lc.name,
            "supportedKinds": [{"group": k.group, "kind": k.kind} for k in lc.supported_kinds],
        })
    return out


def _same_ref(a: Any, b: Mapping[str, Any]) -> bool:
    """Two parentRefs name the same parent once their group and kind are defaulted."""
    if not isinstance(a, Mapping):
        return False
    norm = dict(a)
    norm.setdefault("group", b.get("group"))
    norm.setdefault("kind", b.get("kind"))
    return norm == dict(b)


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
        out_class = {**previous, "conditions": _conditions(conds, generation, when, previous.get("conditions"))}
        impl = entry[1].implementation
        if entry[1].accepted and impl is not None:
            # What its newest conformance report lists (GEP-2162: sorted, one entry per feature name).
            out_class["supportedFeatures"] = [{"name": f} for f in sorted(impl.features)]
        return out_class
    if obj.kind == "Gateway":
        gctx = t.gateways.get(obj.key)
        if gctx is None:
            return None
        out: dict[str, Any] = {}
        if gctx.addresses:
            out["addresses"] = [{"type": "IPAddress", "value": ip} for ip in gctx.addresses]
        if gctx.listener_sets or gctx.gateway.allowed_listeners_from != "None":
            out["attachedListenerSets"] = gctx.attached_listener_sets
        out["conditions"] = _conditions(gctx.conditions, generation, when, previous.get("conditions"))
        out["listeners"] = _listeners(gctx.own_listeners, generation, when, previous.get("listeners"))
        return out
    if obj.kind == "ListenerSet":
        lsc = t.listener_sets.get(obj.key)
        if lsc is None or lsc.gateway is None:
            return None
        return {"conditions": _conditions(lsc.conditions, generation, when, previous.get("conditions")),
                "listeners": _listeners(lsc.listeners, generation, when, previous.get("listeners"))}
    if obj.kind in ROUTE_KINDS:
        rc = t.route(obj.kind, obj.key)
        if rc is None or not rc.parents:
            return None
        old_parents = [p for p in previous.get("parents") or [] if isinstance(p, Mapping)]
        # Each parent's entry is written by the controller of that parent's class.
        ours = {t.gateways[ps.gateway].implementation.controller_names[0] for ps in rc.parents
                if ps.gateway in t.gateways}
        parents = [p for p in old_parents if p.get("controllerName") not in ours]
        for ps in rc.parents:
            ref = ancestor_ref(ps.ref)
            gctx = t.gateways.get(ps.gateway)
            controller = gctx.implementation.controller_names[0] if gctx is not None else EG_CONTROLLER
            old = next((p for p in old_parents if p.get("controllerName") == controller
                        and _same_ref(p.get("parentRef"), ref)), {})
            parents.append({"conditions": _conditions(ps.conditions, generation, when, old.get("conditions")),
                            "controllerName": controller, "parentRef": ref})
        return {"parents": parents}
    if obj.kind == "BackendTLSPolicy":
        pctx = t.policies.get(obj.key)
        if pctx is None or not pctx.ancestors:
            return None
        old_ancestors = [a for a in previous.get("ancestors") or [] if isinstance(a, Mapping)]
        ancestors = [a for a in old_ancestors if a.get("controllerName") != EG_CONTROLLER]
        for anc in pctx.ancestors[:16]:  # the API's limit on ancestors
            old = next((a for a in old_ancestors if a.get("controllerName") == EG_CONTROLLER
                        and _same_ref(a.get("ancestorRef"), anc.ref)), {})
            ancestors.append({"ancestorRef": anc.ref,
                              "conditions": _conditions(anc.conditions, generation, when, old.get("conditions")),
                              "controllerName": EG_CONTROLLER})
        return {"ancestors": ancestors}
    return None


def with_status(state: ClusterState, obj: Object, now: str | None = None) -> dict[str, Any]:
    """The object as the API would return it: its manifest with the controller's status."""
    status = status_of(state, obj, now)
    if status is None:
        return dict(obj.raw)
    return {**obj.raw, "status": status}
