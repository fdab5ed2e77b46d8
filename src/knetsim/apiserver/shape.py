"""Does a stored object have its kind's shape: the JSON types its Go struct or CRD schema expects?

Admission makes sure of it for what clients write today; a store written by another version, or a
kind whose admission does not check types yet, may still hold ``spec: "x"`` where an object goes.
Every reader of such an object would fail on it, so the boundaries where objects enter the cluster's
readers (the controllers' informer, the start-up recheck) ask here first.

Built-in kinds are checked by decoding into their Go types (``model.schema``: the decoder's own error);
custom kinds against the ``type`` of every node of their CRD's schema (``int-or-string`` and
``preserve-unknown-fields`` as the API server reads them); a kind admitted untyped (its CRD is not
installed) by the API conventions alone. Unknown fields are not a shape problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model import schema
from .registry import kind_of
from .resources import BY_KIND, Resource


def typed(kind: str) -> bool:
    """Does knetsim know the types of ``kind`` (a built-in definition or a CRD schema)?"""
    r = BY_KIND.get(kind)
    if r is None:
        return False
    k = kind_of(r)
    return k.definition is not None or k.crd is not None


def shape_error(kind: str, body: Mapping[str, Any]) -> str | None:
    """Why ``body`` does not have the shape of ``kind`` (the first misplaced type), or None. A kind whose
    types knetsim does not have is held to what every kind's objects are: ``spec`` and ``status`` objects."""
    if not isinstance(body.get("metadata"), Mapping):
        return "metadata: expected an object"
    r: Resource | None = BY_KIND.get(kind)
    if r is None:
        return None
    k = kind_of(r)
    if k.definition is not None:
        try:
            schema.decode(dict(body), k.definition)
        except schema.DecodeError as exc:
            return str(exc)
        return None
    node: Mapping[str, Any] = k.crd.schema if k.crd is not None else _CONVENTION
    for key, value in body.items():
        if key in ("apiVersion", "kind", "metadata"):
            continue
        sub = (node.get("properties") or {}).get(key)
        if sub is not None:
            problem = _check(value, sub, key)
            if problem is not None:
                return problem
    return None


# What the API conventions promise of every kind: its spec and status are objects.
_CONVENTION = {"type": "object", "properties": {"spec": {"type": "object"}, "status": {"type": "object"}}}
_JSON = {"object": dict, "array": list, "string": str, "boolean": bool}


def _check(value: Any, node: Mapping[str, Any], path: str) -> str | None:
    if value is None:
        return None  # null is a missing value to every reader
    if node.get("x-kubernetes-int-or-string"):
        ok = isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
        return None if ok else f"{path}: expected an integer or a string, got {_name(value)}"
    wanted = node.get("type")
    if wanted in _JSON and not isinstance(value, _JSON[wanted]):
        return f"{path}: expected {'an' if wanted[0] in 'aeiou' else 'a'} {wanted}, got {_name(value)}"
    if wanted in ("integer", "number") and (isinstance(value, bool) or not isinstance(value, int | float)):
        return f"{path}: expected {'an integer' if wanted == 'integer' else 'a number'}, got {_name(value)}"
    if isinstance(value, dict):
        props = node.get("properties") or {}
        extra = node.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key) if isinstance(key, str) else None
            if sub is None and isinstance(extra, Mapping):
                sub = extra
            if sub is not None:
                problem = _check(item, sub, f"{path}.{key}")
                if problem is not None:
                    return problem
    elif isinstance(value, list) and isinstance(node.get("items"), Mapping):
        for i, item in enumerate(value):
            problem = _check(item, node["items"], f"{path}[{i}]")
            if problem is not None:
                return problem
    return None


def _name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
