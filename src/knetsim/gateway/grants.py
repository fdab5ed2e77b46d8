"""ReferenceGrant: may an object in one namespace refer to an object in another?

A pure predicate over typed ends (Envoy Gateway's ``isCrossNamespaceReferencePermitted`` takes
``crossNamespaceFrom{group, kind, namespace}`` and ``crossNamespaceTo{group, kind, namespace, name}``
for the same reason: eight positional strings would let a swapped pair pass silently).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..model.gatewayapi import GROUP, ReferenceGrant


@dataclass(frozen=True, slots=True)
class ReferenceFrom:
    """The referring object's group, kind and namespace (``ReferenceGrantFrom``)."""

    group: str
    kind: str
    namespace: str

    @classmethod
    def gateway_api(cls, kind: str, namespace: str) -> ReferenceFrom:
        return cls(GROUP, kind, namespace)


@dataclass(frozen=True, slots=True)
class ReferenceTo:
    """The referred object (``ReferenceGrantTo`` plus the namespace the reference names)."""

    group: str
    kind: str
    namespace: str
    name: str

    @classmethod
    def core(cls, kind: str, namespace: str, name: str) -> ReferenceTo:
        return cls("", kind, namespace, name)


def reference_permitted(from_: ReferenceFrom, to: ReferenceTo, grants: Iterable[ReferenceGrant]) -> bool:
    """The same namespace always may. Otherwise a ReferenceGrant in the *target* namespace must list
    the source (group, kind, namespace) in ``from`` and the target (group, kind, and a name equal to
    ``to.name`` or none) in ``to``."""
    if from_.namespace == to.namespace:
        return True
    for grant in grants:
        if grant.namespace != to.namespace:
            continue
        if not any(f.group == from_.group and f.kind == from_.kind and f.namespace == from_.namespace
                   for f in grant.from_):
            continue
        if any(t.group == to.group and t.kind == to.kind
               and (t.name is None or t.name == to.name) for t in grant.to):
            return True
    return False
