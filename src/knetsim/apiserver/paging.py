"""Lists in pages, as kube-apiserver pages them: ``limit`` and ``continue`` over one consistent snapshot.

A list with ``limit=N`` answers at most N items and, when more remain, ``metadata.continue`` (a token)
and ``metadata.remainingItemCount`` (how many are left; left out when a label or field selector
filters, since the count would then be a guess). Every page of one list is cut from the objects as
they were at the first page's resourceVersion, so writes between two pages neither duplicate nor
skip anything, whatever they changed.

The token is upstream's (apiserver/pkg/storage ``EncodeContinue``): base64url (no padding) of the JSON
``{"v":"meta.k8s.io/v1","rv":<resourceVersion>,"start":"<key after the last item>"}``, the key being
the object's storage key below the listed prefix (``namespace/name`` across namespaces, ``name``
within one) followed by a NUL. The snapshot is the store's objects with the watch history undone
back to that resourceVersion; once the history no longer reaches it (etcd's compaction), the next page
is 410 Expired with upstream's message and a token that continues at the latest resourceVersion (an
inconsistent rest of the list, which the client may take or not).
"""

from __future__ import annotations

import base64
import binascii
import json
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import ApiError
from .store import Store

VERSION = "meta.k8s.io/v1"
LATEST = -1  # a token's rv for "continue at the latest resourceVersion" (after an expired one)
EXPIRED_LIST = "The resourceVersion for the provided list is too old."
INCONSISTENT_CONTINUE = ("The provided continue parameter is too old to display a consistent list result. You can "
                         "start a new list without the continue parameter, or use the continue token in this "
                         "response to retrieve the remainder of the results. Continuing with the provided token "
                         "results in an inconsistent list - objects that were created, modified, or deleted "
                         "between the time the first chunk was returned and now may show up in the list.")
INVALID_KEY = "continue key is not valid"


def encode_continue(rv: int, start: str) -> str:
    raw = json.dumps({"v": VERSION, "rv": rv, "start": start}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[str, int]:
    """(start key, resourceVersion) of a token; 400 ``invalid continue token: ...`` in upstream's words."""
    def bad(detail: str) -> ApiError:
        return ApiError(400, "BadRequest", f"invalid continue token: {detail}")

    try:
        data = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        if not token or "=" in token or not all(c.isalnum() or c in "-_" for c in token):
            raise binascii.Error("illegal base64 data")
        fields = json.loads(data)
    except (binascii.Error, ValueError) as exc:
        raise bad(f"{INVALID_KEY}: {exc}") from None
    if not isinstance(fields, dict):
        raise bad(f"{INVALID_KEY}: json: cannot unmarshal {type(fields).__name__} into Go value of type "
                  "storage.continueToken")
    version, rv, start = fields.get("v"), fields.get("rv"), fields.get("start")
    if version != VERSION:
        raise bad(f"{INVALID_KEY}: server does not recognize this encoded version {version if version else ''}"
                  .rstrip())
    if not isinstance(rv, int) or isinstance(rv, bool) or rv == 0:
        raise bad(f"{INVALID_KEY}: incorrect encoded start resourceVersion (version {VERSION})")
    if not isinstance(start, str) or not start:
        raise bad(f"{INVALID_KEY}: encoded start key empty (version {VERSION})")
    # As upstream defends against a client's path traversal: the key must already be clean.
    key = start if start.startswith("/") else "/" + start
    if posixpath.normpath(key) != key or key.startswith("//"):
        raise bad(f"{INVALID_KEY}: {start}")
    return key[1:], rv


def storage_key(obj: dict[str, Any], across_namespaces: bool) -> str:
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    namespace = str(meta.get("namespace", ""))
    return f"{namespace}/{name}" if across_namespaces and namespace else name


def objects_at(store: Store, kind: str, namespace: str, rv: int) -> list[dict[str, Any]] | None:
    """The objects of ``kind`` (in ``namespace``, or all) as they were at ``rv``, in key order; None when the
    watch history no longer reaches back that far."""
    history = store.since(kind, rv)
    if history is None:
        return None
    objects = {(s.body["metadata"].get("namespace", ""), s.body["metadata"]["name"]): s.body
               for s in store.list(kind, namespace)}
    for change in reversed(history):
        meta = change.obj.get("metadata") or {}
        key = (str(meta.get("namespace", "")), str(meta.get("name", "")))
        if namespace and key[0] != namespace:
            continue
        if change.old is None:
            objects.pop(key, None)
        else:
            objects[key] = change.old
    return [objects[k] for k in sorted(objects)]


@dataclass(frozen=True)
class Page:
    items: list[dict[str, Any]]
    resource_version: int
    continue_token: str = ""
    remaining: int | None = None


def page(objects: list[dict[str, Any]], accept: Callable[[dict[str, Any]], bool], *, rv: int, limit: int,
         start: str = "", across_namespaces: bool, selective: bool) -> Page:
    """The page of ``objects`` (key order) from key ``start`` on: at most ``limit`` accepted ones (all when
    ``limit`` <= 0), the token for the rest and, unless a selector filters (``selective``), their count."""
    candidates = [o for o in objects if not start or storage_key(o, across_namespaces) >= start]
    items: list[dict[str, Any]] = []
    for i, obj in enumerate(candidates):
        if not accept(obj):
            continue
        if 0 < limit <= len(items):
            rest = candidates[i:]
            token = encode_continue(rv, storage_key(items[-1], across_namespaces) + "\x00")
            remaining = None if selective else len(rest)
            return Page(items, rv, token, remaining)
        items.append(obj)
    return Page(items, rv)
