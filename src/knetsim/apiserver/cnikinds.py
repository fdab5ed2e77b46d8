"""Admission of a CNI's kinds on the live cluster: what Calico or Antrea would refuse is a 422.

The kinds are rows of ``model.kinds`` (``CNI_KINDS``), served where the cluster config names their CNI
(``resources.Resource.served_with``). Their rules are the ones knetsim.policy reads them by, so that the live
cluster refuses exactly what an offline answer would set aside as refused: Calico's policies, tiers and network
sets (policy/calico/model.py, its selector parser), Antrea's policies, tiers and groups (policy/antrea/model.py).
Each reader's error names the field in apimachinery's ``field.Error`` form (``spec.selector: Invalid value: ...``),
the wording calico-apiserver and Antrea's validating webhook answer with where knetsim knows it.
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


def validation_errors(r: Resource, obj: Mapping[str, Any],
                      tier_exists: Callable[[str], bool] | None = None) -> list[FieldError]:
    """What the CNI refuses of ``obj`` (a write of ``r``, decoded and defaulted); [] for any other kind. The CNI's
    readers are imported here, on its first write: a daemon whose cluster holds no CNI kind never loads
    knetsim.policy (the simulation loads with the first request that needs it). ``tier_exists``: whether the
    cluster holds an Antrea Tier of that name (Antrea's webhook refuses a policy in a tier that does not exist)."""
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
        read = reader(obj)
    except (calico.CalicoPolicyError, antrea.AntreaPolicyError, SelectorError) as exc:
        return [field_error(str(exc))]
    tier = getattr(read, "tier", None) if r.cni == ANTREA and r.role == POLICY else None
    if tier and tier not in antrea.STATIC_TIERS and tier_exists is not None and not tier_exists(tier):
        # antrea-io/antrea pkg/controller/networkpolicy/validate.go, validateTierForPolicy.
        return [FieldError("spec.tier", ErrorType.NOT_FOUND, tier, f"tier {tier} does not exist")]
    return []
