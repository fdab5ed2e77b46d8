"""Admission of a CNI's kinds on the live cluster: what Calico or Antrea would refuse is a 422.

The kinds are rows of ``model.kinds`` (``CNI_KINDS``), served where the cluster config names their CNI
(``resources.Resource.served_with``). Their rules are the ones knetsim.policy reads them by, so that the live
cluster refuses exactly what an offline answer would set aside as refused: Calico's policies, tiers and network
sets (policy/calico/model.py, its selector parser), Antrea's policies, tiers and groups (policy/antrea/model.py).
Each reader's error names the field in apimachinery's ``field.Error`` form (``spec.selector: Invalid value: ...``),
the wording calico-apiserver answers with where knetsim knows it. Antrea's validating webhook runs after them, and
its refusal is a 400 in the webhook's words (policy/antrea/webhook.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..model.fielderr import ErrorType, FieldError
from ..model.kinds import ANTREA, CALICO, GROUP, POLICY, SET, STAGED, TIER
from .resources import Resource

_TYPES = {t.label: t for t in ErrorType}


def field_error(message: str) -> FieldError:
    """``spec.order: Invalid value: ...`` as a FieldError whose text is the message itself (path, type, the rest)."""
    path, sep, rest = message.partition(": ")
    label, _, detail = rest.partition(": ")
    if not sep or label not in _TYPES or " " in path:
        return FieldError("", ErrorType.INVALID, detail=message)
    return FieldError(path, _TYPES[label], detail=detail)


def _calico(r: Resource) -> Callable[[Mapping[str, Any]], object] | None:
    from ..policy.calico import model as calico

    if r.role in (POLICY, STAGED):
        return lambda body: calico.parse_policy(r.kind, body)
    if r.role == TIER:
        return calico.parse_tier
    if r.role == SET:
        return lambda body: calico.parse_network_set(r.kind, body)
    return None


def _antrea(r: Resource) -> Callable[[Mapping[str, Any]], object] | None:
    from ..policy.antrea import model as antrea

    if r.role == POLICY:
        return lambda body: antrea.parse_policy(r.kind, body)
    if r.role == TIER:
        return antrea.parse_tier
    if r.role == GROUP:
        return lambda body: antrea.parse_group(r.kind, body)
    return None


def validation_errors(r: Resource, obj: Mapping[str, Any]) -> list[FieldError]:
    """What the CNI's API or schema refuses of ``obj`` (a write of ``r``, decoded and defaulted) by its field; [] for
    any other kind. The CNI's readers are imported here, on its first write: a daemon whose cluster holds no CNI kind
    never loads knetsim.policy (the simulation loads with the first request that needs it)."""
    if r.cni not in (CALICO, ANTREA):
        return []
    from ..policy.antrea import model as antrea
    from ..policy.calico import model as calico
    from ..policy.calico import staged
    from ..policy.calico.selector import SelectorError

    if r.cni == CALICO and r.kind == "StagedKubernetesNetworkPolicy":
        return staged.kubernetes_policy_errors(obj)
    reader = _calico(r) if r.cni == CALICO else _antrea(r) if r.cni == ANTREA else None
    if reader is None:
        return []
    try:
        reader(obj)
    except (calico.CalicoPolicyError, antrea.AntreaPolicyError, SelectorError) as exc:
        return [field_error(str(exc))]
    return []


def webhook_denial(r: Resource, obj: Mapping[str, Any] | None, old: Mapping[str, Any] | None,
                   stored: Callable[[str], list[Mapping[str, Any]]]) -> str | None:
    """What Antrea's validating webhook refuses of a write (``obj``; ``old`` on an update) or of a delete (``obj``
    None, ``old`` the stored object), in the words the API server answers with; None when it admits or the kind is
    not one it validates. ``stored(kind)``: the Antrea objects of that kind the cluster holds."""
    if r.cni != ANTREA or r.kind not in ("ClusterNetworkPolicy", "NetworkPolicy", "Tier"):
        return None
    from ..policy.antrea import webhook

    if r.kind == "Tier":
        if obj is None:
            assert old is not None
            reason = webhook.tier_delete_reason(str(old["metadata"].get("name") or ""),
                                                [*stored("ClusterNetworkPolicy"), *stored("NetworkPolicy")])
        elif old is not None:
            reason = webhook.tier_update_reason(obj, old)
        else:
            reason = webhook.tier_create_reason(obj, [(str(t["metadata"].get("name") or ""),
                                                       (t.get("spec") or {}).get("priority"))
                                                      for t in stored("Tier")])
    elif obj is None:
        return None  # the policy validators admit every delete
    else:
        tiers = {str(t["metadata"].get("name") or "") for t in stored("Tier")}
        reason = webhook.policy_reason(obj, tiers.__contains__)
    return webhook.message(r.kind, reason) if reason else None
