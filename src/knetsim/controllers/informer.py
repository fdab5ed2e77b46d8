"""The controllers' view of the store: indexes kept from its change notifications.

client-go's shared informers and indexers in one object. The store holds the objects; this
keeps what the controllers look them up by, updated for each committed change before any
controller hears of it:

* names by (kind, namespace), and label indexes of the kinds that are selected (Pods,
  ReplicaSets, EndpointSlices by their Service's name): ``select(kind, namespace, selector)``;
* the selectors of the kinds that select (Services and the workload kinds), indexed by their
  ``key=value`` pairs: ``selecting(kind, namespace, labels)`` answers "which ReplicaSets or
  Services want a pod with these labels" without trying every one;
* uids, and dependents by owner uid (``ownerReferences``): owners, children, garbage;
* pods per node and the pod IPs in use (the scheduler's load, the node IPAM).

Typed views (each kind's declared view: ``model.kinds.view_of``) are parsed on first use and kept until the
object changes.

An object of the wrong shape (a ``spec`` that is a string: what an older store or a gap in admission
may hold) is this boundary's to catch, once: it is left out of the indexes and of the typed views
(``unreadable`` names it, with why), and a line in the log says so; the controllers and the
ClusterState never see it, and the API still serves it as it is. A built-in kind with Go types is not
checked again here: every write of one goes through the registry, whose decoder is the same check, and
a store from another version is rechecked at start (``apiserver.recheck``); the check stays for custom
kinds and kinds knetsim has no types for.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import Any

from ..apiserver.cnikinds import validation_errors as cni_validation_errors
from ..apiserver.registry import kind_of
from ..apiserver.resources import BY_KIND
from ..apiserver.shape import shape_error
from ..apiserver.store import Change, Key, Store
from ..cluster.state import WORKLOAD_KINDS
from ..model.kinds import view_of
from ..model.labels import EQUALS, Selector
from ..model.loader import BUILTIN, Source
from ..model.objects import Meta, Object

log = logging.getLogger("knetsim.controllers")
SHAPE_ERRORS = (AttributeError, TypeError, ValueError, KeyError, IndexError)  # a reader meets the wrong type
API_SOURCE = Source("<api>", 1)
SELECTED = ("Pod", "ReplicaSet", "EndpointSlice")


@cache
def decoded_at_admission(kind: str) -> bool:
    """Does the registry decode every write of ``kind`` into its Go types (a built-in kind, not a CRD's)?
    Then its shape was checked where it was written, by the check ``shape_error`` would repeat."""
    r = BY_KIND.get(kind)
    return r is not None and not r.crd and kind_of(r).definition is not None
SELECTING = ("Service", *WORKLOAD_KINDS)


def key_of(kind: str, body: Mapping[str, Any]) -> Key:
    meta = body.get("metadata") or {}
    return (kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def controller_ref(body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in (body.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller"):
            return ref
    return None


def selector_of(kind: str, body: Mapping[str, Any]) -> Selector | None:
    """What an object selects: a Service's ``spec.selector`` map (none when empty: dropped on storage),
    a workload's label selector."""
    spec = body.get("spec") or {}
    if kind == "Service":
        selector = spec.get("selector")
        return Selector.from_map(selector) if isinstance(selector, Mapping) and selector else None
    if kind in WORKLOAD_KINDS and isinstance(spec.get("selector"), Mapping):
        return Selector.of_workload(kind, spec["selector"])
    return None


def _pairs(selector: Selector) -> list[tuple[str, str]]:
    return [(r.key, r.values[0]) for r in selector.requirements if r.op == EQUALS]


class Informer:
    def __init__(self, store: Store) -> None:
        self.store = store
        # Called with each batch of changes once the indexes include them (the controllers' handlers).
        self.handlers: list[Callable[[list[Change]], None]] = []
        self._names: dict[tuple[str, str], set[str]] = defaultdict(set)
        self._labels: dict[tuple[str, str], dict[tuple[str, str], set[str]]] = defaultdict(lambda: defaultdict(set))
        self._selectors: dict[Key, Selector] = {}
        self._by_pair: dict[tuple[str, str], dict[tuple[str, str], set[str]]] = defaultdict(lambda: defaultdict(set))
        self._scan: dict[tuple[str, str], set[str]] = defaultdict(set)
        self._uids: dict[str, Key] = {}
        self._dependents: dict[str, set[Key]] = defaultdict(set)
        self._node_pods: dict[str, set[Key]] = defaultdict(set)
        self._pod_ips: dict[str, Key] = {}
        self._typed: dict[Key, Object] = {}
        self.unreadable: dict[Key, str] = {}  # objects of the wrong shape, left out (why)
        self.newly_unreadable: list[Key] = []  # not reported yet (the manager records their events)
        for key, stored in store.objects.items():
            self._add(key, stored.body)
        store.listeners.append(self._on_changes)

    # --- upkeep ---------------------------------------------------------------------------

    def _on_changes(self, changes: list[Change]) -> None:
        readable = []
        for c in changes:
            key = key_of(c.kind, c.obj)
            if c.old is not None and key not in self.unreadable:
                self._remove(key, c.old)
            self.unreadable.pop(key, None)
            if c.type != "DELETED" and c.new is not None:
                self._add(key, c.new)
            self._typed.pop(key, None)
            if key not in self.unreadable:
                readable.append(c)
        for fn in self.handlers:
            fn(readable)

    def _add(self, key: Key, body: Mapping[str, Any]) -> None:
        stored = self.store.objects.get(key)
        if (stored is None or stored.managed == "user") and not decoded_at_admission(key[0]):
            # What a client wrote passed admission, which checks the types of built-in kinds only (a store
            # from another version was rechecked at start): a custom or untyped kind's shape is checked
            # once here. The controllers' own objects are knetsim's making.
            problem = shape_error(key[0], body)
            r = BY_KIND.get(key[0])
            if problem is None and r is not None and r.cni:
                # A CNI's kind is read by its dialect in knetsim.policy: what that CNI refuses (what admission
                # refuses of it: cnikinds) would stop the reader, as a misplaced type stops the others.
                problem = "; ".join(str(e) for e in cni_validation_errors(r, body)) or None
            if problem is not None:
                self.left_out(key, problem)
                return
        try:
            self._index(key, body)
        except SHAPE_ERRORS as exc:
            self._remove(key, body, partial=True)
            self.left_out(key, f"{type(exc).__name__}: {exc}")

    def left_out(self, key: Key, why: str) -> None:
        """Leave an object of the wrong shape to the API alone: no controller, no ClusterState reads it."""
        if key not in self.unreadable:
            log.warning("%s %s/%s is left out of the cluster: it cannot be read (%s)", *key, why)
            self.newly_unreadable.append(key)
        self.unreadable[key] = why
        self._typed.pop(key, None)

    def _index(self, key: Key, body: Mapping[str, Any]) -> None:
        kind, ns, name = key
        meta = body.get("metadata") or {}
        self._names[(kind, ns)].add(name)
        if kind in SELECTED:
            index = self._labels[(kind, ns)]
            for pair in (meta.get("labels") or {}).items():
                index[pair].add(name)
        if kind in SELECTING:
            selector = selector_of(kind, body)
            if selector is not None:
                self._selectors[key] = selector
                pairs = _pairs(selector)
                for pair in pairs:
                    self._by_pair[(kind, ns)][pair].add(name)
                if not pairs:
                    self._scan[(kind, ns)].add(name)
        if meta.get("uid"):
            self._uids[str(meta["uid"])] = key
        for ref in meta.get("ownerReferences") or []:
            if isinstance(ref, Mapping) and ref.get("uid"):
                self._dependents[str(ref["uid"])].add(key)
        if kind == "Pod":
            node = (body.get("spec") or {}).get("nodeName")
            if node:
                self._node_pods[str(node)].add(key)
            ip = (body.get("status") or {}).get("podIP")
            if ip and not (body.get("spec") or {}).get("hostNetwork"):
                self._pod_ips[str(ip)] = key

    def _remove(self, key: Key, body: Mapping[str, Any], partial: bool = False) -> None:
        """Drop ``body`` from the indexes (``partial``: after indexing it failed half-way)."""
        try:
            self._unindex(key, body)
        except SHAPE_ERRORS:
            if not partial:
                raise

    def _unindex(self, key: Key, body: Mapping[str, Any]) -> None:
        kind, ns, name = key
        meta = body.get("metadata") or {}
        self._names[(kind, ns)].discard(name)
        if kind in SELECTED:
            index = self._labels[(kind, ns)]
            for pair in (meta.get("labels") or {}).items():
                index[pair].discard(name)
                if not index[pair]:
                    del index[pair]
        selector = self._selectors.pop(key, None)
        if selector is not None:
            for pair in _pairs(selector):
                self._by_pair[(kind, ns)][pair].discard(name)
            self._scan[(kind, ns)].discard(name)
        if meta.get("uid") and self._uids.get(str(meta["uid"])) == key:
            del self._uids[str(meta["uid"])]
        for ref in meta.get("ownerReferences") or []:
            if isinstance(ref, Mapping) and ref.get("uid"):
                self._dependents[str(ref["uid"])].discard(key)
        if kind == "Pod":
            node = (body.get("spec") or {}).get("nodeName")
            if node:
                self._node_pods[str(node)].discard(key)
            ip = (body.get("status") or {}).get("podIP")
            if ip and self._pod_ips.get(str(ip)) == key:
                del self._pod_ips[str(ip)]

    # --- lookups ----------------------------------------------------------------------------

    def get(self, key: Key) -> dict[str, Any] | None:
        stored = self.store.objects.get(key)
        return stored.body if stored is not None and key not in self.unreadable else None

    def typed(self, key: Key) -> Object | None:
        """The object's typed view (``model.objects``), parsed once per version."""
        cached = self._typed.get(key)
        if cached is not None:
            return cached
        stored = self.store.objects.get(key)
        if stored is None or key in self.unreadable:
            return None
        source = BUILTIN if stored.managed == "system" else API_SOURCE
        # Its declared view (model.kinds), the view's module imported at the first object of the kind: a
        # cluster without Gateway API objects (every start of the live cluster) never builds their classes.
        parser = view_of(key[0])
        # A kind kept under its qualified name (``NetworkPolicy.projectcalico.org``: model.kinds.stored_kind) is
        # read as the object says, as the offline build keeps it: Calico's and Antrea's readers ask for the
        # kind and its group, and ClusterView keys it in ClusterState.others by the store's qualified kind.
        kind = str(stored.body.get("kind") or key[0]) if "." in key[0] else key[0]
        try:
            obj = parser(stored.body, source) if parser is not None else \
                Object(kind, Meta.parse(kind, stored.body.get("metadata") or {}), stored.body, source)
        except SHAPE_ERRORS as exc:
            self.left_out(key, f"{type(exc).__name__}: {exc}")
            return None
        self._typed[key] = obj
        return obj

    def names(self, kind: str, namespace: str) -> list[str]:
        return sorted(self._names.get((kind, namespace), ()))

    def keys(self, kind: str) -> list[Key]:
        """Every object of a kind, in (namespace, name) order."""
        return sorted((kind, ns, name) for (k, ns), names in self._names.items() if k == kind for name in names)

    def select(self, kind: str, namespace: str, selector: Selector) -> list[str]:
        """Names of ``kind`` (Pod, ReplicaSet) in ``namespace`` whose labels the selector matches, sorted."""
        if selector.nothing:
            return []
        pairs = _pairs(selector)
        if pairs:
            index = self._labels.get((kind, namespace), {})
            sets = sorted((index.get(p, set()) for p in pairs), key=len)
            candidates: Iterable[str] = set(sets[0]).intersection(*sets[1:])
        else:
            candidates = self._names.get((kind, namespace), ())
        out = []
        for name in candidates:
            body = self.get((kind, namespace, name))
            if body is not None and selector.matches((body.get("metadata") or {}).get("labels") or {}):
                out.append(name)
        return sorted(out)

    def selecting(self, kind: str, namespace: str, labels: Mapping[str, str]) -> list[str]:
        """Names of ``kind`` objects (Services, workloads) in ``namespace`` whose selector matches ``labels``."""
        by_pair = self._by_pair.get((kind, namespace), {})
        candidates = set(self._scan.get((kind, namespace), ()))
        for pair in labels.items():
            candidates.update(by_pair.get(pair, ()))
        return sorted(n for n in candidates if self._selectors[(kind, namespace, n)].matches(labels))

    def selector(self, key: Key) -> Selector | None:
        return self._selectors.get(key)

    def by_uid(self, uid: str) -> Key | None:
        return self._uids.get(uid)

    def dependents(self, uid: str) -> list[Key]:
        return sorted(self._dependents.get(uid, ()))

    def owned(self, owner: Mapping[str, Any], kind: str) -> list[Key]:
        """Objects of ``kind`` whose controller reference is ``owner`` (by uid), sorted."""
        uid = str((owner.get("metadata") or {}).get("uid") or "")
        out = []
        for key in self._dependents.get(uid, ()):
            if key[0] != kind:
                continue
            body = self.get(key)
            ref = controller_ref(body) if body is not None else None
            if ref is not None and str(ref.get("uid")) == uid:
                out.append(key)
        return sorted(out)

    def node_load(self, node: str) -> int:
        return len(self._node_pods.get(node, ()))

    def pods_on(self, node: str) -> list[Key]:
        """The pods bound to ``node`` (sorted)."""
        return sorted(self._node_pods.get(node, ()))

    def ip_in_use(self, ip: str) -> bool:
        return ip in self._pod_ips

