"""The fields of the CNIs' own kinds (Calico's, Cilium's, Antrea's), by API group and kind: what admission prunes an
object of such a kind to (an unknown field is refused under strict field validation, as the real API server refuses
it) and what ``kubectl explain`` shows on a cluster that runs the CNI.

These kinds are rows of ``model.kinds`` (Calico's and Antrea's in ``CNI_KINDS``; Cilium's, served on every cluster,
in ``KINDS`` with ``cni == "cilium"``); here are only their fields. Calico's v3 kinds have the same fields in the
``crd.projectcalico.org/v1`` CRDs that store them.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from . import antrea_v1beta1, calico_v3, cilium_v2
from .markers import Struct, schema

ROOTS: dict[tuple[str, str], type[Struct]] = {
    **{("projectcalico.org", kind): root for kind, root in calico_v3.KINDS.items()},
    **{("crd.projectcalico.org", kind): root for kind, root in calico_v3.KINDS.items()},
    **{("cilium.io", kind): root for kind, root in cilium_v2.KINDS.items()},
    **{("crd.antrea.io", kind): root for kind, root in antrea_v1beta1.KINDS.items()},
}


@cache
def object_schema(group: str, kind: str) -> dict[str, Any] | None:
    """The structural schema of a whole object of the CNI's kind (apiVersion, kind, metadata, spec...); None
    for any other kind."""
    root = ROOTS.get((group, kind))
    return schema(root) if root is not None else None
