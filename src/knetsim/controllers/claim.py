"""ControllerRefManager (pkg/controller/controller_ref_manager.go): which objects a controller owns.

An owner controls the objects whose controller reference names its uid. Claiming re-checks that
against its selector: an owned object whose labels no longer match is released (its controller
reference removed, so ``kubectl label pod X app=debug`` takes a pod out of its ReplicaSet), and an
orphan that matches is adopted (a reference added), unless either is being deleted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..apiserver.store import Key
from ..model.jsonvalue import json_copy
from ..model.labels import Selector
from .informer import Informer, controller_ref


def claim(informer: Informer, owner: Mapping[str, Any], owner_api_version: str, kind: str, selector: Selector,
          eligible: Callable[[Mapping[str, Any]], bool] = lambda body: True,
          ) -> tuple[list[dict[str, Any]], list[tuple[Key, dict[str, Any]]]]:
    """(the objects ``owner`` controls after claiming, the adoptions and releases to write)."""
    meta = owner.get("metadata") or {}
    uid, namespace = str(meta.get("uid") or ""), str(meta.get("namespace") or "")
    deleting = bool(meta.get("deletionTimestamp"))
    keys = set(informer.owned(owner, kind))
    keys.update((kind, namespace, name) for name in informer.select(kind, namespace, selector))
    kept: list[dict[str, Any]] = []
    writes: list[tuple[Key, dict[str, Any]]] = []
    for key in sorted(keys):
        body = informer.get(key)
        if body is None or not eligible(body):
            continue
        labels = (body.get("metadata") or {}).get("labels") or {}
        ref = controller_ref(body)
        if ref is not None and str(ref.get("uid")) == uid:
            if selector.matches(labels) or deleting:
                kept.append(body)
                continue
            released = json_copy(body)
            refs = [r for r in released["metadata"]["ownerReferences"] if str(r.get("uid")) != uid]
            if refs:
                released["metadata"]["ownerReferences"] = refs
            else:
                del released["metadata"]["ownerReferences"]
            writes.append((key, released))
        elif ref is None and not deleting and not (body.get("metadata") or {}).get("deletionTimestamp"):
            adopted = json_copy(body)
            adopted["metadata"].setdefault("ownerReferences", []).append(
                {"apiVersion": owner_api_version, "kind": owner.get("kind"), "name": meta.get("name"), "uid": uid,
                 "controller": True, "blockOwnerDeletion": True})
            writes.append((key, adopted))
            kept.append(adopted)
    return kept, writes
