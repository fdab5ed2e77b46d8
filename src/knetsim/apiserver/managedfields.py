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
import sys
from collections.abc import Mapping
from functools import cache
from typing import Any

from ..model import admission
from ..model import schema as model_schema

Path = tuple[str, ...]
NODE = "."
# Every leaf is this one empty dict, and the path elements are interned: an object's entries repeat the same few
# hundred names, and a stored body is never changed in place (the store's rule), so they can be shared.
_LEAF: dict[str, Any] = {}

# Set by the server alone: never a manager's (fieldmanager's stripMeta).
_SERVER_METADATA = frozenset({"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                              "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"})


def _resolved(node: Mapping[str, Any] | None, defs: Mapping[str, Any]) -> Mapping[str, Any]:
    while node and "$ref" in node:
        node = defs.get(str(node["$ref"]).rsplit("/", 1)[-1])
    if node and "allOf" in node and len(node["allOf"]) == 1:
        return _resolved(node["allOf"][0], defs)
    return node or {}


class _Node:
    """One node of a kind's schema, with what the field sets need read once, and its children kept (a map's
    values share one node, so the tree is bounded by the schema, not by the objects' keys)."""

    __slots__ = ("_children", "_defs", "_items", "_node", "atomic", "is_map", "list_type", "map_keys")

    def __init__(self, node: Mapping[str, Any] | None, defs: Mapping[str, Any]) -> None:
        self._node = node = _resolved(node, defs)
        self._defs = defs
        self._children: dict[str, _Node] = {}
        self._items: _Node | None = None
        # A map (``additionalProperties``) is owned as a whole too (``.``); a struct only through its fields.
        self.is_map = "additionalProperties" in node and "properties" not in node
        self.atomic = node.get("x-kubernetes-map-type") == "atomic"
        self.list_type = node.get("x-kubernetes-list-type")
        self.map_keys = tuple(node.get("x-kubernetes-list-map-keys") or ())

    def prop(self, name: str) -> _Node:
        key = "" if self.is_map or not self._node else name
        child = self._children.get(key)
        if child is None:
            props = self._node.get("properties") or {}
            extra = self._node.get("additionalProperties")
            child = self._children[key] = _Node(
                props[name] if name in props else extra if isinstance(extra, dict) else None, self._defs)
        return child

    def items(self) -> _Node:
        if self._items is None:
            self._items = _Node(self._node.get("items"), self._defs)
        return self._items


@cache
def _schema(api_version: str, kind: str) -> _Node:
    """The kind's schema: a built-in kind's from the v1.35 definitions the server has loaded already, a custom
    kind's from its CRD (self-contained); none (every list atomic, every object a struct) for a kind unknown."""
    group, _, version = api_version.rpartition("/")
    name = model_schema.builtin_definition(group, version, kind)
    if name is not None:
        defs = model_schema.definitions()
        return _Node(defs.get(name), defs)
    try:
        resolved = admission.resolve(api_version, kind)
    except admission.AdmissionError:
        resolved = None
    crd = resolved.crd if resolved is not None else None
    return _Node(crd.schema if crd is not None else None, {})


def _json(value: Any) -> str:
    """Compact JSON of a key's value: the plain strings and numbers keys are written by hand (json.dumps was
    the most of a status write's cost), anything else by json."""
    if isinstance(value, str) and value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
        return f'"{value}"'
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def _item_key(item: Any, schema: _Node) -> str | None:
    """The path element of one item of a granular list, or None when the list is atomic."""
    if schema.list_type == "set":
        return "v:" + _json(item)
    keys = schema.map_keys
    if schema.list_type == "map" and keys and isinstance(item, dict):
        return "k:{" + ",".join(f'"{k}":{_json(item[k])}' for k in sorted(keys) if k in item) + "}"
    return None


def _granular_items(value: list[Any], schema: _Node) -> dict[str, Any] | None:
    if not value:
        return None
    keyed: dict[str, Any] = {}
    for item in value:
        key = _item_key(item, schema)
        if key is None:
            return None
        keyed[key] = item
    return keyed


def _all(value: Any, schema: _Node, path: Path, out: set[Path]) -> None:
    """Every field of ``value`` at ``path``."""
    if isinstance(value, dict) and value and not schema.atomic:
        if schema.is_map and path:
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
                if isinstance(item, dict) and item and not items.atomic:
                    out.add((*path, key, NODE))  # an item with fields of its own is owned as a whole too
                _all(item, items, (*path, key), out)
            return
    out.add(path)


# Field sets repeat across objects (a set names fields, not values: every pod of a template has the same one), so
# equal subtrees are one object, looked up by their keys and their children's identities. Bounded: emptied when
# full (a child is kept alive by the parents that hold it, so an identity in a key is never reused while listed).
_CANONICAL: dict[tuple[tuple[str, int], ...], dict[str, Any]] = {}
_CANONICAL_MAX = 4096


def _canonical(node: dict[str, Any]) -> dict[str, Any]:
    if not node:
        return _LEAF
    key = tuple((k, id(v)) for k, v in node.items())
    found = _CANONICAL.get(key)
    if found is not None:
        return found
    if len(_CANONICAL) >= _CANONICAL_MAX:
        _CANONICAL.clear()
    _CANONICAL[key] = node
    return node


def _canonical_tree(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with every subtree its canonical one (a new entry's set, built by ``_edited``)."""
    return _canonical({k: _canonical_tree(v) for k, v in node.items()}) if node else _LEAF


def _tree(value: Any, schema: _Node, top: bool = False) -> dict[str, Any]:
    """FieldsV1 of every field of ``value``: what ``_all`` lists, built nested at once (a create's entry)."""
    if isinstance(value, dict) and value and not schema.atomic:
        out: dict[str, Any] = {NODE: _LEAF} if schema.is_map and not top else {}
        for k in sorted(value):
            out[sys.intern(f"f:{k}")] = _tree(value[k], schema.prop(k))
        return _canonical(out)
    if isinstance(value, list):
        keyed = _granular_items(value, schema)
        if keyed is not None:
            items = schema.items()
            out = {NODE: _LEAF}
            for key in sorted(keyed):
                item = keyed[key]
                out[key] = _canonical({NODE: _LEAF, **_tree(item, items)}) if isinstance(item, dict) and item and \
                    not items.atomic else _LEAF
            return _canonical(out)
    return _LEAF


def _diff(old: Any, new: Any, schema: _Node, path: Path, changed: set[Path], removed: set[Path]) -> None:
    """Fields ``new`` added or changed over ``old`` (``changed``) and those it dropped (``removed``)."""
    if old is new or old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict) and not schema.atomic and old and new:
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


def _edited(fields: Mapping[str, Any], add: set[Path], drop: set[Path]) -> dict[str, Any]:
    """The set ``fields`` with ``add`` and without ``drop``, copying only the dicts on the paths it changes (the
    rest stays shared with the entry it came from)."""
    root = dict(fields)
    owned = {id(root)}  # the dicts copied for this result (all alive while it is built, so ids are unique)

    def own(parent: dict[str, Any], element: str) -> dict[str, Any]:
        child = parent.get(element)
        if child is None or id(child) not in owned:
            child = dict(child) if child else {}
            parent[element] = child
            owned.add(id(child))
        return child

    for path in sorted(drop):
        if not _holds(root, path):
            continue
        chain = [root]
        for element in path[:-1]:
            chain.append(own(chain[-1], element))
        if chain[-1].get(path[-1]):
            continue  # a struct over members, not a member itself
        del chain[-1][path[-1]]
        for parent, element, child in zip(reversed(chain[:-1]), reversed(path[:-1]), reversed(chain[1:]),
                                          strict=True):
            if child:
                break
            del parent[element]  # emptied: a struct with no member left is no member either
    for path in sorted(add):
        node = root
        for element in path[:-1]:
            node = own(node, element)
        node.setdefault(sys.intern(path[-1]), _LEAF)
    return root


def _holds(fields: Mapping[str, Any], path: Path) -> bool:
    """Is ``path`` in the set ``fields`` (FieldsV1), as a leaf or a node?"""
    node: Any = fields
    for element in path:
        if not isinstance(node, Mapping) or element not in node:
            return False
        node = node[element]
    return True


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
    if old is None and not previous:  # a create: everything it set is its writer's
        fields_v1 = _tree(_tracked(new, subresource, status_apart), schema, top=True)
        if not fields_v1:
            return []
        entry = {"manager": manager, "operation": operation, "apiVersion": api_version, "time": time,
                 "fieldsType": "FieldsV1", "fieldsV1": fields_v1}
        if subresource:
            entry["subresource"] = subresource
        return [entry]
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
    mine_entry: dict[str, Any] | None = None
    for entry in previous:
        if (entry.get("manager"), entry.get("operation"), entry.get("apiVersion"), entry.get("subresource") or "") \
                == (manager, operation, api_version, subresource):
            mine_entry = entry
            continue
        held = entry.get("fieldsV1") or {}
        if not any(_holds(held, path) for path in gone):
            entries.append(entry)  # nothing of it changed hands: kept as it is (the common case, and cheap)
            continue
        kept = _edited(held, set(), gone)
        if kept:
            entries.append({**entry, "fieldsV1": kept})
    held = (mine_entry or {}).get("fieldsV1") or {}
    if mine_entry is not None and all(_holds(held, path) for path in changed) and \
            not any(_holds(held, path) for path in removed):
        fields_v1 = held  # the same fields again (a status that moved on): only the time is new
    else:
        fields_v1 = _edited(held, changed, removed)
        if mine_entry is None:
            fields_v1 = _canonical_tree(fields_v1)
    if fields_v1:
        entry = {"manager": manager, "operation": operation, "apiVersion": api_version,
                 "time": time if changed or mine_entry is None else mine_entry.get("time", time),
                 "fieldsType": "FieldsV1", "fieldsV1": fields_v1}
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
