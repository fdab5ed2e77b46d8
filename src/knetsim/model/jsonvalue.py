"""Objects as the API holds them: JSON values (dicts, lists, strings, numbers, booleans, null)."""

from __future__ import annotations

from typing import Any


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON value. Stored objects are never changed in place (their versions share what
    did not change), so whoever edits one edits a copy. Copying only dicts and lists is about 2.5x
    faster than a round trip through the JSON codec and 10x faster than copy.deepcopy on such values,
    and this is on the hot paths (10k pods offline, every controller write)."""
    if isinstance(value, dict):
        return {k: json_copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_copy(v) for v in value]
    return value


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: maps merge key by key, null deletes a key, anything else (lists too) replaces.
    The API server applies a client's merge patch with it, and the doctor its own fixes."""
    if not isinstance(patch, dict):
        return json_copy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out
