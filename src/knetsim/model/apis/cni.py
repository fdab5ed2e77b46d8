"""The fields of the CNIs' own kinds (Calico's, Cilium's, Antrea's), by API group and kind: what admission prunes an
object of such a kind to (an unknown field is refused under strict field validation, as the real API server refuses
it) and what ``kubectl explain`` shows on a cluster that runs the CNI.

These kinds are rows of ``model.kinds`` (Calico's and Antrea's in ``CNI_KINDS``; Cilium's, served on every cluster,
in ``KINDS`` with ``cni == "cilium"``); here are only their fields. Calico's v3 kinds have the same fields in the
``crd.projectcalico.org/v1`` CRDs that store them.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from .markers import Struct, schema

# Each group's declarations by module, imported for the first object of its group: a Calico input does not load
# Cilium's and Antrea's (~3 ms of a cold command's start).
MODULES: dict[str, str] = {
    "projectcalico.org": "calico_v3",
    "crd.projectcalico.org": "calico_v3",  # the CRDs that store Calico's v3 kinds have the same fields
    "cilium.io": "cilium_v2",
    "crd.antrea.io": "antrea_v1beta1",
}


def _kinds(group: str) -> dict[str, type[Struct]]:
    module = MODULES.get(group)
    return importlib.import_module(f"{__package__}.{module}").KINDS if module is not None else {}


def roots() -> dict[tuple[str, str], type[Struct]]:
    """Every CNI kind's root type, by (group, kind)."""
    return {(group, kind): root for group in MODULES for kind, root in _kinds(group).items()}


@cache
def object_schema(group: str, kind: str) -> dict[str, Any] | None:
    """The structural schema of a whole object of the CNI's kind (apiVersion, kind, metadata, spec...); None
    for any other kind."""
    root = _kinds(group).get(kind)
    return schema(root) if root is not None else None
