"""``metadata.managedFields``: who set which field, as kube-apiserver's field manager records an update.

Every write that names its manager (a client's ``fieldManager``, an in-process controller's or the kubelet's
name) leaves an entry ``{manager, operation, apiVersion, time, fieldsType: FieldsV1, fieldsV1, subresource}``.
What the write added or changed becomes the manager's; other managers lose what it changed; what it
removed is nobody's; an entry left owning nothing goes. What the write's subresource cannot change is
not counted (its status strategy's reset fields: the spec for ``/status``, the status for the object
itself), nor what only the server sets (name, uid, resourceVersion, generation, timestamps).

The field set is FieldsV1's: ``f:<name>`` for a field, ``k:{"key":value}`` for an item of a list of
type map (``x-kubernetes-list-map-keys``), ``v:<value>`` for an item of a set, ``.`` for a map, a granular
list or a list item owned as a whole; an atomic list or struct is one leaf. Facts from upstream:
k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager (the update manager, the entries' order),
sigs.k8s.io/structured-merge-diff/fieldpath (the set and its serialization). Server-side apply is still
the strategic-merge approximation (``patch.py``): its entry is recorded as this update's would be, under
operation ``Apply``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import Any

from . import patch

Path = tuple[str, ...]
NODE = "."

# Set by the server alone: never a manager's (fieldmanager's stripMeta).
_SERVER_METADATA = frozenset({"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                              "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"})


@cache
def _schema(api_version: str, kind: str) -> Any:
    group, _, version = api_version.rpartition("/")
    return patch.schema_for_kind(kind, group, version)


def _is_map(schema: Any) -> bool:
    """A map (``additionalProperties``) is owned as a whole too (``.``); a struct only through its fields."""
    node = schema.node
    return bool(node) and "additionalProperties" in node and "properties" not in node


def _atomic(schema: Any) -> bool:
    return schema.node.get("x-kubernetes-map-type") == "atomic"


def _item_key(item: Any, schema: Any) -> str | None:
    """The path element of one item of a granular list, or None when the list is atomic."""
    list_type = schema.node.get("x-kubernetes-list-type")
    if list_type == "set":
        return "v:" + json.dumps(item, separators=(",", ":"))
    keys = schema.node.get("x-kubernetes-list-map-keys")
    if list_type == "map" and keys and isinstance(item, dict):
        return "k:" + json.dumps({k: item[k] for k in keys if k in item}, separators=(",", ":"), sort_keys=True)
    return None


def _granular_items(value: list[Any], schema: Any) -> dict[str, Any] | None:
    if not value:
        return None
    keyed: dict[str, Any] = {}
    for item in value:
        key = _item_key(item, schema)
        if key is None:
            return None
        keyed[key] = item
    return keyed


def _all(value: Any, schema: Any, path: Path, out: set[Path]) -> None:
    """Every field of ``value`` at ``path``."""
    if isinstance(value, dict) and value and not _atomic(schema):
        if _is_map(schema) and path:
            out.add((*path, NODE))
        for k, v in value.items():
            _all(v, schema.prop(k), (*path, f"f:{k}"), out)
        return
    if isinstance(value, list):
        keyed = _granular_items(value, schema)
        if keyed is not None:
            items = schema.items()
            if path:
                out.add((*path, NODE))  # a granular list made by this write is its writer's as a whole too
            for key, item in keyed.items():
                out.add((*path, key, NODE))
                if isinstance(item, dict):
                    _all(item, items, (*path, key), out)
            return
    out.add(path)


def _diff(old: Any, new: Any, schema: Any, path: Path, changed: set[Path], removed: set[Path]) -> None:
    """Fields ``new`` added or changed over ``old`` (``changed``) and those it dropped (``removed``)."""
    if old is new or old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict) and not _atomic(schema) and old and new:
        for k, v in new.items():
            child, sub = schema.prop(k), (*path, f"f:{k}")
            if k in old:
                _diff(old[k], v, child, sub, changed, removed)
            else:
                _all(v, child, sub, changed)
        for k, v in old.items():
            if k not in new:
                _all(v, schema.prop(k), (*path, f"f:{k}"), removed)
        return
    if isinstance(old, list) and isinstance(new, list):
        old_items, new_items = _granular_items(old, schema), _granular_items(new, schema)
        if old_items is not None and new_items is not None:
            items = schema.items()
            for key, item in new_items.items():
                if key in old_items:
                    _diff(old_items[key], item, items, (*path, key), changed, removed)
                else:
                    _all(item, items, (*path, key), changed)
            for key, item in old_items.items():
                if key not in new_items:
                    _all(item, items, (*path, key), removed)
            return
    _all(old, schema, path, removed)
    _all(new, schema, path, changed)
    removed -= changed


def _tracked(body: Mapping[str, Any] | None, subresource: str, status_apart: bool) -> dict[str, Any]:
    """The part of ``body`` a write of ``subresource`` can set: what the managers' sets are about."""
    if body is None:
        return {}
    meta = {k: v for k, v in (body.get("metadata") or {}).items() if k not in _SERVER_METADATA}
    if subresource == "status":
        out = {k: v for k, v in body.items() if k == "status"}
    elif subresource:
        out = {k: v for k, v in body.items() if k == "spec"}
    else:
        out = {k: v for k, v in body.items() if k not in ("apiVersion", "kind", "metadata")
               and not (status_apart and k == "status")}
    if meta:
        out["metadata"] = meta
    return out


def _decode(fields: Mapping[str, Any], path: Path, out: set[Path]) -> None:
    for key, sub in fields.items():
        if key == NODE:
            out.add((*path, NODE))
        elif isinstance(sub, dict) and sub:
            _decode(sub, (*path, key), out)
        else:
            out.add((*path, key))


def _encode(paths: set[Path]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for element in path[:-1]:
            node = node.setdefault(element, {})
        node.setdefault(path[-1], {})
    return root


def _order(entry: Mapping[str, Any]) -> tuple[str, str, str, str, str]:
    """Apply before Update, then oldest first, then by manager (the field manager's encoding order)."""
    return (str(entry.get("operation") or ""), str(entry.get("time") or ""), str(entry.get("manager") or ""),
            str(entry.get("apiVersion") or ""), str(entry.get("subresource") or ""))


def recorded(previous: list[dict[str, Any]], old: Mapping[str, Any] | None, new: Mapping[str, Any], *,
             manager: str, time: str, subresource: str = "", operation: str = "Update",
             status_apart: bool = True) -> list[dict[str, Any]]:
    """The ``managedFields`` after ``manager`` wrote ``new`` over ``old`` (None: a create), ``previous`` the
    entries before it. ``status_apart``: the kind has a status subresource, so a write of the object itself
    sets no status field."""
    api_version = str(new.get("apiVersion") or "")
    schema = _schema(api_version, str(new.get("kind") or ""))
    changed: set[Path] = set()
    removed: set[Path] = set()
    _diff(_tracked(old, subresource, status_apart), _tracked(new, subresource, status_apart), schema, (),
          changed, removed)
    changed.discard(())
    removed.discard(())
    if not changed and not removed:
        return previous
    gone = changed | removed
    entries: list[dict[str, Any]] = []
    mine: set[Path] = set()
    mine_entry: dict[str, Any] | None = None
    for entry in previous:
        fields: set[Path] = set()
        _decode(entry.get("fieldsV1") or {}, (), fields)
        if (entry.get("manager"), entry.get("operation"), entry.get("apiVersion"), entry.get("subresource") or "") \
                == (manager, operation, api_version, subresource):
            mine, mine_entry = fields, entry
            continue
        kept = fields - gone
        if kept == fields:
            entries.append(entry)
        elif kept:
            entries.append({**entry, "fieldsV1": _encode(kept)})
    mine = (mine | changed) - removed
    if mine:
        entry = {"manager": manager, "operation": operation, "apiVersion": api_version,
                 "time": time if changed or mine_entry is None else mine_entry.get("time", time),
                 "fieldsType": "FieldsV1", "fieldsV1": _encode(mine)}
        if subresource:
            entry["subresource"] = subresource
        entries.append(entry)
    return sorted(entries, key=_order)


def with_managed_fields(body: dict[str, Any], entries: list[dict[str, Any]]) -> dict[str, Any]:
    """``body`` with these entries (a new top-level dict and metadata: the body may share parts with stored ones)."""
    meta = {k: v for k, v in body["metadata"].items() if k != "managedFields"}
    if entries:
        meta["managedFields"] = entries
    return {**body, "metadata": meta}
