"""Core v1 Events as the scheduler, the kubelet and the workload controllers record them.

What ``kubectl describe`` shows under Events: (it finds them with an involvedObject field
selector). Shared by the controllers' plan and the simulated kubelet, so both name events the
same way and never collide.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ..model.jsonvalue import json_copy
from ..model.timestamps import now_rfc3339, parse_rfc3339
from .registry import commit_batch
from .store import Write


def involved(body: Mapping[str, Any], field_path: str = "") -> dict[str, Any]:
    meta = body.get("metadata") or {}
    ref = {"apiVersion": body.get("apiVersion", "v1"), "kind": body.get("kind", ""),
           "name": meta.get("name", ""), "namespace": meta.get("namespace", ""), "uid": meta.get("uid", "")}
    if field_path:
        ref["fieldPath"] = field_path
    return ref


class EventNames:
    """Event names as the recorders make them, ``<object>.<hex of the time in ns>``: later events sort
    after earlier ones, which is the order `kubectl describe` keeps for events of the same second.
    The nanoseconds are a counter persisted in the store, so the plan stays a pure function."""

    def __init__(self, now: str, seq: Mapping[str, str]) -> None:
        self.seconds = int(parse_rfc3339(now).timestamp())
        self.count = int(seq.get("eventseq", "0"))

    def next(self) -> str:
        self.count += 1
        return f"{self.seconds * 10**9 + self.count % 10**9:x}"


def make_event(names: EventNames, involved: dict[str, Any], reason: str, message: str, component: str, now: str,
               *, host: str = "", type_: str = "Normal", action: str = "") -> Write:
    suffix = names.next()
    digest = hashlib.sha256(f"{involved['uid']}|{suffix}".encode()).hexdigest()[:32]
    name = f"{involved['name']}.{suffix}"
    ns = involved.get("namespace") or "default"
    body: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": ns, "uid": str(uuid.UUID(digest)), "creationTimestamp": now},
        "involvedObject": involved, "reason": reason, "message": message, "type": type_,
    }
    if action:
        # events.k8s.io/v1 recorders (the scheduler): eventTime and reporting*, no source/count.
        body.update({"action": action, "eventTime": now.replace("Z", ".000000Z"), "firstTimestamp": None,
                     "lastTimestamp": None, "reportingComponent": component,
                     "reportingInstance": f"{component}-{host}" if host else component, "source": {}})
    else:
        body.update({"source": {"component": component, **({"host": host} if host else {})}, "count": 1,
                     "firstTimestamp": now, "lastTimestamp": now, "reportingComponent": component,
                     "reportingInstance": host})
    return Write(("Event", ns, name), body, "controller")


class Recorder:
    """A component's event recorder outside the controllers' plan (the simulated kubelet).

    Like client-go's ``EventCorrelator``, an event that repeats one already recorded for the same
    object (same reason, message, type and source) within ``AGGREGATE_WINDOW`` updates that event's
    ``count`` and ``lastTimestamp`` instead of adding another: ``kubectl describe`` then shows
    ``Back-off pulling image "x" (x4 over 2m)``."""

    AGGREGATE_WINDOW = 600.0

    def __init__(self, store: Any, component: str) -> None:
        self.store, self.component = store, component
        self.seen: dict[tuple[str, str, str, str, str], tuple[tuple[str, str, str], float]] = {}

    def record(self, involved_ref: dict[str, Any], reason: str, message: str, *, host: str = "",
               type_: str = "Normal") -> None:
        now = now_rfc3339()
        key = (str(involved_ref.get("uid")), str(involved_ref.get("fieldPath", "")), reason, message, type_)
        clock = datetime.now(UTC).timestamp()
        previous = self.seen.get(key)
        if previous is not None and clock - previous[1] < self.AGGREGATE_WINDOW:
            stored = self.store.get(previous[0])
            if stored is not None:
                body = json_copy(stored.body)
                body["count"] = int(body.get("count") or 1) + 1
                body["lastTimestamp"] = now
                commit_batch(self.store, [Write(previous[0], body, "controller")], by=self.component,
                             durable=True)
                self.seen[key] = (previous[0], previous[1])
                return
        names = EventNames(now, self.store.meta)
        write = make_event(names, involved_ref, reason, message, self.component, now, host=host, type_=type_)
        commit_batch(self.store, [write], {"eventseq": str(names.count)}, by=self.component, durable=True)
        self.seen[key] = (write.key, clock)

    def forget(self, uid: str) -> None:
        for key in [k for k in self.seen if k[0] == uid]:
            del self.seen[key]
