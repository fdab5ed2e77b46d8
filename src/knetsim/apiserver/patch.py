"""The four PATCH flavours kubectl sends: JSON merge (RFC 7386), JSON patch (RFC 6902),
strategic merge (kubectl apply/edit/set image), and apply (server-side apply, approximated).

Strategic merge reads list semantics from the OpenAPI schema of the kind
(``x-kubernetes-patch-strategy: merge`` + ``x-kubernetes-patch-merge-key``); when the schemas
are not installed a built-in table of the common merge keys is used.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from . import openapi


class PatchError(ValueError):
    """A patch that cannot be applied (HTTP 422 or 400, as the API server answers)."""


# --- JSON patch --------------------------------------------------------------------------


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str]) -> tuple[Any, str]:
    node = doc
    for p in parts[:-1]:
        if isinstance(node, list):
            try:
                node = node[int(p)]
            except (ValueError, IndexError) as exc:
                raise PatchError(f"doc is missing path: {p}") from exc
        elif isinstance(node, dict) and p in node:
            node = node[p]
        else:
            raise PatchError(f"doc is missing path: \"/{'/'.join(parts)}\": missing value")
    return node, parts[-1]


def _get(doc: Any, path: str) -> Any:
    node = doc
    for p in _pointer(path):
        if isinstance(node, list):
            try:
                node = node[int(p)]
            except (ValueError, IndexError) as exc:
                raise PatchError(f"doc is missing path: {path}") from exc
        elif isinstance(node, dict) and p in node:
            node = node[p]
        else:
            raise PatchError(f"doc is missing path: {path}")
    return node


def json_patch(doc: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise PatchError("json patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise PatchError("json patch operation must be an object with an \"op\"")
        kind = op["op"]
        path = op.get("path", "")
        if kind in ("add", "replace", "test") and "value" not in op:
            raise PatchError(f"json patch {kind} operation is missing a value")
        if kind == "test":
            if _get(doc, path) != op["value"]:
                raise PatchError(f"testing value {path} failed")
            continue
        if kind in ("move", "copy"):
            value = copy.deepcopy(_get(doc, op.get("from", "")))
            if kind == "move":
                doc = _remove(doc, op.get("from", ""))
            doc = _add(doc, path, value)
            continue
        if kind == "remove":
            doc = _remove(doc, path)
        elif kind == "add":
            doc = _add(doc, path, copy.deepcopy(op["value"]))
        elif kind == "replace":
            _get(doc, path)
            doc = _remove(doc, path)
            doc = _add(doc, path, copy.deepcopy(op["value"]))
        else:
            raise PatchError(f"Unexpected kind: {kind}")
    return doc


def _add(doc: Any, path: str, value: Any) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent, last = _parent(doc, parts)
    if isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            try:
                i = int(last)
            except ValueError as exc:
                raise PatchError(f"invalid array index {last!r}") from exc
            if not 0 <= i <= len(parent):
                raise PatchError(f"add operation does not apply: doc is missing path: {path}")
            parent.insert(i, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise PatchError(f"doc is missing path: {path}")
    return doc


def _remove(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return None
    parent, last = _parent(doc, parts)
    try:
        if isinstance(parent, list):
            del parent[int(last)]
        else:
            del parent[last]
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        raise PatchError(f"remove operation does not apply: doc is missing path: {path}: missing value") from exc
    return doc


# --- strategic merge patch ---------------------------------------------------------------

# Used when the OpenAPI schemas are not installed: (parent field, list field) → merge key.
_FALLBACK_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name", "env": "name",
    "volumes": "name", "imagePullSecrets": "name", "volumeMounts": "mountPath", "conditions": "type",
    "ownerReferences": "uid", "hostAliases": "ip", "topologySpreadConstraints": "topologyKey",
}


class _Schema:
    """A node of the kind's OpenAPI schema, $refs resolved lazily."""

    def __init__(self, node: Mapping[str, Any] | None, defs: Mapping[str, Any], path: tuple[str, ...] = ()):
        self.defs = defs
        self.path = path
        while node and "$ref" in node:
            node = defs.get(str(node["$ref"]).rsplit("/", 1)[-1])
        if node and "allOf" in node and len(node["allOf"]) == 1:
            node = node["allOf"][0]
            while node and "$ref" in node:
                node = defs.get(str(node["$ref"]).rsplit("/", 1)[-1])
        self.node = node or {}

    def prop(self, name: str) -> _Schema:
        props = self.node.get("properties") or {}
        if name in props:
            return _Schema(props[name], self.defs, (*self.path, name))
        extra = self.node.get("additionalProperties")
        return _Schema(extra if isinstance(extra, dict) else None, self.defs, (*self.path, name))

    def items(self) -> _Schema:
        return _Schema(self.node.get("items"), self.defs, self.path)

    def list_meta(self, field: str) -> tuple[str, str | None]:
        """(strategy, merge key) of the list property ``field``."""
        raw = (self.node.get("properties") or {}).get(field)
        if raw is not None:
            return str(raw.get("x-kubernetes-patch-strategy") or ""), raw.get("x-kubernetes-patch-merge-key")
        if self.node:
            return "", None
        if field == "ports":
            return "merge", "containerPort" if "containers" in self.path or "initContainers" in self.path else "port"
        if field in _FALLBACK_KEYS:
            return "merge", _FALLBACK_KEYS[field]
        if field == "finalizers":
            return "merge", None
        return "", None


def schema_for_kind(kind: str, group: str, version: str) -> _Schema:
    defs = openapi.definitions()
    return _Schema(openapi.schema_for(kind, group, version), defs)


def strategic_merge(original: Any, patch: Any, schema: _Schema) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = copy.deepcopy(original) if isinstance(original, dict) else {}
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$setElementOrder/"):
            orders[key.split("/", 1)[1]] = value
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(out.get(field), list) and isinstance(value, list):
                out[field] = [x for x in out[field] if x not in value]
            continue
        if value is None:
            out.pop(key, None)
            continue
        sub = schema.prop(key)
        if isinstance(value, list):
            strategy, merge_key = schema.list_meta(key)
            out[key] = _merge_list(out.get(key), value, strategy, merge_key, sub.items())
        elif isinstance(value, dict):
            merged = strategic_merge(out.get(key), value, sub)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        else:
            out[key] = copy.deepcopy(value)
    for field, order in orders.items():
        strategy, merge_key = schema.list_meta(field)
        if isinstance(out.get(field), list):
            out[field] = _reorder(out[field], order, merge_key)
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _merge_list(original: Any, patch: list[Any], strategy: str, merge_key: str | None, item: _Schema) -> list[Any]:
    orig = list(original) if isinstance(original, list) else []
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [copy.deepcopy(p) for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    if "merge" not in strategy:
        return [_strip(p) for p in patch]
    if merge_key is None:  # a merged list of primitives
        out = list(orig)
        for p in patch:
            if p not in out:
                out.append(copy.deepcopy(p))
        return out
    out = [copy.deepcopy(o) for o in orig]
    for p in patch:
        if not isinstance(p, dict):
            continue
        key = p.get(merge_key)
        idx = next((i for i, o in enumerate(out) if isinstance(o, dict) and o.get(merge_key) == key), None)
        if p.get("$patch") == "delete":
            out = [o for o in out if not (isinstance(o, dict) and o.get(merge_key) == key)]
            continue
        if idx is None:
            out.append(_strip(p))
        else:
            out[idx] = strategic_merge(out[idx], p, item)
    return out


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _reorder(items: list[Any], order: list[Any], merge_key: str | None) -> list[Any]:
    def ident(x: Any) -> Any:
        return x.get(merge_key) if merge_key and isinstance(x, dict) else x
    wanted = [ident(o) for o in order]
    ranked = sorted(range(len(items)), key=lambda i: (wanted.index(ident(items[i])) if ident(items[i]) in wanted
                                                      else len(wanted) + i))
    return [items[i] for i in ranked]
