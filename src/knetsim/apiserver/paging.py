"""Lists in pages, as kube-apiserver pages them: ``limit`` and ``continue`` over one consistent snapshot.

A list with ``limit=N`` answers at most N items and, when more remain, ``metadata.continue`` (a token)
and ``metadata.remainingItemCount`` (how many are left; left out when a label or field selector
filters, since the count would then be a guess). Every page of one list is cut from the objects as
they were at the first page's resourceVersion, so writes between two pages neither duplicate nor
skip anything, whatever they changed.

The snapshot a token names is kept RETENTION seconds after its first page (kube-apiserver's etcd keeps every
revision until the compaction that runs every five minutes, ``--etcd-compaction-interval``), however many
writes follow: a client paging through pods while a Deployment churns gets the rest of the same list. Past
that (or past SNAPSHOT_ITEMS kept in all, the oldest dropped first), the watch history still rebuilds it
while it reaches back.

The token is upstream's (apiserver/pkg/storage ``EncodeContinue``): base64url (no padding) of the JSON
``{"v":"meta.k8s.io/v1","rv":<resourceVersion>,"start":"<key after the last item>"}``, the key being
the object's storage key below the listed prefix (``namespace/name`` across namespaces, ``name``
within one) followed by a NUL. Without a kept snapshot, it is the store's objects with the watch history
undone back to that resourceVersion; once neither reaches it (etcd's compaction), the next page
is 410 Expired with upstream's message and a token that continues at the latest resourceVersion (an
inconsistent rest of the list, which the client may take or not).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import itertools
import json
import posixpath
import time
import weakref
from collections import OrderedDict
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
# How long a continue token's snapshot is kept: etcd's history lasts until the next compaction, which
# kube-apiserver runs every 5 minutes by default (--etcd-compaction-interval=5m0s, k8s.io/apiserver
# pkg/server/options/etcd.go).
RETENTION = 300.0
# The objects all kept snapshots may name together: a bound on memory when many large lists are paged at once
# (each item costs a reference and its key, about 100 bytes, and keeps its stored version alive); five
# 100,000-pod lists.
SNAPSHOT_ITEMS = 500_000
clock: Callable[[], float] = time.monotonic

SnapshotKey = tuple[int, str, str]  # (resourceVersion, kind, namespace or "" for all)


class Listing(list[dict[str, Any]]):
    """Objects in storage-key order (etcd's: ``shop-dev/a`` before ``shop/a``, as ``-`` sorts before ``/``), with
    their keys, so a page starts by bisection instead of a walk over everything before it."""

    def __init__(self, objects: list[dict[str, Any]], across_namespaces: bool) -> None:
        keys = [storage_key(o, across_namespaces) for o in objects]
        if any(b < a for a, b in itertools.pairwise(keys)):  # the store lists by (namespace, name)
            order = sorted(range(len(keys)), key=keys.__getitem__)
            objects, keys = [objects[i] for i in order], [keys[i] for i in order]
        super().__init__(objects)
        self.keys = keys
        self.across_namespaces = across_namespaces


def in_key_order(objects: list[dict[str, Any]], across_namespaces: bool) -> Listing:
    if isinstance(objects, Listing) and objects.across_namespaces == across_namespaces:
        return objects
    return Listing(objects, across_namespaces)


@dataclass(frozen=True)
class _Snapshot:
    taken: float
    objects: list[dict[str, Any]]


_snapshots: weakref.WeakKeyDictionary[Store, OrderedDict[SnapshotKey, _Snapshot]] = weakref.WeakKeyDictionary()


def _kept(store: Store) -> OrderedDict[SnapshotKey, _Snapshot]:
    kept = _snapshots.setdefault(store, OrderedDict())
    now = clock()
    while kept and now - next(iter(kept.values())).taken > RETENTION:
        kept.popitem(last=False)
    return kept


def remember(store: Store, kind: str, namespace: str, rv: int, objects: list[dict[str, Any]]) -> None:
    """Keep the list a continue token was handed out for, RETENTION seconds from the first time."""
    kept = _kept(store)
    key = (rv, kind, namespace)
    if key in kept:
        return
    kept[key] = _Snapshot(clock(), objects)
    total = sum(len(s.objects) for s in kept.values())
    while total > SNAPSHOT_ITEMS and len(kept) > 1:
        _key, dropped = kept.popitem(last=False)
        total -= len(dropped.objects)


def recall(store: Store, kind: str, namespace: str, rv: int) -> list[dict[str, Any]] | None:
    snapshot = _kept(store).get((rv, kind, namespace))
    return snapshot.objects if snapshot is not None else None


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
    """The objects of ``kind`` (in ``namespace``, or all) as they were at ``rv``, in key order: the snapshot kept
    for a continue token, or the store undone back to ``rv``; None when neither reaches back that far."""
    kept = recall(store, kind, namespace, rv)
    if kept is not None:
        return kept
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
         start: str = "", across_namespaces: bool, selective: bool, store: Store | None = None, kind: str = "",
         namespace: str = "") -> Page:
    """The page of ``objects`` in storage-key order from key ``start`` on: at most ``limit`` accepted ones (all
    when ``limit`` <= 0), the token for the rest and, unless a selector filters (``selective``), their count.
    With ``store``, the list a token is handed out for is kept for the pages that follow (``remember``)."""
    listing = in_key_order(objects, across_namespaces)
    first = bisect.bisect_left(listing.keys, start) if start else 0
    items: list[dict[str, Any]] = []
    for i in range(first, len(listing)):
        obj = listing[i]
        if not accept(obj):
            continue
        if 0 < limit <= len(items):
            token = encode_continue(rv, storage_key(items[-1], across_namespaces) + "\x00")
            remaining = None if selective else len(listing) - i
            if store is not None:
                remember(store, kind, namespace, rv, listing)
            return Page(items, rv, token, remaining)
        items.append(obj)
    return Page(items, rv)
