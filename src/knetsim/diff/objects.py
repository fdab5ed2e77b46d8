"""Objects: which the API server admits on each side, which it refuses, and which fields changed.

The objects are the input's (what ``-f`` or a cluster read gave), named as admission names them
(``Service shop/web``); what admission said of each is the side's ``errors``, the very list every
command reports. Fields are compared as written, without what the server sets itself (status, uid,
resourceVersion, timestamps, managed fields, the last-applied annotation); when the written bodies
differ, both are defaulted by admission first, so a live object (every default filled, a ClusterIP
allocated) and the manifest that changes it differ only where the manifest does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from ..model import admission
from ..model.admission import FieldValidation
from ..model.kinds import BY_KIND, CLUSTER_SCOPED_BUILTINS
from ..model.loader import Document
from ..model.withheld import CERTIFICATE_KEYS, WITHHELD_ANNOTATION, withheld_keys
from .model import CHANGED, GAINED, LOST, Item, Layer, Side

TITLE = "objects (admitted, refused, changed)"
SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink",
                   "deletionTimestamp", "deletionGracePeriodSeconds")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# What the API server allocates when a manifest leaves it out: not a change the manifest makes.
ALLOCATED = re.compile(r"^spec\.(clusterIPs?(\[\d+\])?|ports\[\d+\]\.nodePort|healthCheckNodePort|ipFamilies(\[\d+\])?"
                       r"|ipFamilyPolicy)$")
SHOWN_PATHS = 4
HIDDEN = "(a secret value, not shown)"


def subject(doc: Document, namespace: str) -> str:
    """``Service shop/web``: the object as admission's errors name it (a namespaced kind gets ``namespace``)."""
    info = BY_KIND.get(doc.kind)
    cluster_scoped = (info is not None and not info.namespaced) or doc.kind in CLUSTER_SCOPED_BUILTINS
    ns = "" if cluster_scoped else (doc.namespace or namespace)
    return f"{doc.kind} {ns + '/' if ns else ''}{doc.name or '<unnamed>'}"


def _by_subject(side: Side) -> dict[str, Document]:
    out: dict[str, Document] = {}
    for doc in side.documents:
        out[subject(doc, side.namespace)] = doc  # a later definition wins, as a later kubectl apply does
    return out


def _refused(side: Side) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for e in side.errors:
        if e.subject:
            out.setdefault(e.subject, []).append(str(e.error))
    return out


def _standing(side: Side) -> set[str]:
    """Objects an admitted definition still holds: where a later source's change to one is refused (an
    apply the API server answers 422), the earlier definition stays, as the stored object would."""
    refused_at = {(e.subject, str(e.source)) for e in side.errors if e.subject}
    return {name for doc in side.documents
            if ((name := subject(doc, side.namespace)), str(doc.source)) not in refused_at}


def _as_written(body: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in body.items() if k != "status"}
    meta = out.get("metadata")
    if isinstance(meta, dict):
        meta = {k: v for k, v in meta.items() if k not in SERVER_METADATA}
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED in annotations:
            meta["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED} or None
            if meta["annotations"] is None:
                del meta["annotations"]
        out["metadata"] = meta
    return out


def _defaulted(body: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    try:
        obj, _, _ = admission.admit(body, namespace=namespace, field_validation=FieldValidation.IGNORE,
                                    keep_invalid=True)
    except admission.AdmissionError:
        return dict(body)
    return _as_written(obj)


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        for k in sorted(value):
            yield from _leaves(value[k], f"{path}.{k}" if path else str(k))
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, value


def changed_fields(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(path, before, after) of every leaf that differs; ``None`` where a side lacks the path."""
    a, b = dict(_leaves(before)), dict(_leaves(after))
    missing = object()
    out = []
    for path in sorted(set(a) | set(b)):
        old, new = a.get(path, missing), b.get(path, missing)
        if old == new or (new is missing and ALLOCATED.match(path)):
            continue
        out.append((path, None if old is missing else old, None if new is missing else new))
    return out


def _value(v: Any) -> str:
    return "(unset)" if v is None else json.dumps(v, ensure_ascii=False)


def _fields_text(fields: list[tuple[str, Any, Any]]) -> str:
    shown = [f"{p}: {_value(a)} → {_value(b)}" for p, a, b in fields[:SHOWN_PATHS]]
    more = len(fields) - SHOWN_PATHS
    return "; ".join(shown) + (f" (and {more} more field{'s' if more > 1 else ''})" if more > 0 else "")


def _secret_fields(fields: list[tuple[str, Any, Any]], before: Mapping[str, Any],
                   after: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """A Secret's changes without its secrets: a value that is no certificate is never shown (a diff becomes a
    pull-request comment), and a key whose value a cluster reader withheld (model/withheld.py) is no change:
    what the cluster holds there was not read."""
    withheld = withheld_keys(before) | withheld_keys(after)
    out = []
    for path, old, new in fields:
        if path == f"metadata.annotations.{WITHHELD_ANNOTATION}":
            continue
        field, _, key = path.partition(".")
        if field in ("data", "stringData") and key:
            if key in withheld:
                continue
            if key not in CERTIFICATE_KEYS:
                old, new = (None if v is None else HIDDEN for v in (old, new))
        out.append((path, old, new))
    return out


def compare(before: Side, after: Side) -> Layer:
    old, new = _by_subject(before), _by_subject(after)
    refused_before, refused_after = _refused(before), _refused(after)
    standing = _standing(after)
    items = []
    for name in sorted(set(old) | set(new) | set(refused_before) | set(refused_after)):
        was, now = refused_before.get(name), refused_after.get(name)
        present_before, present_after = name in old or was is not None, name in new or now is not None
        if now and not was:
            what = ("the change is refused (the object stays as it was)" if name in standing
                    else "now refused" if present_before else "added, and refused")
            items.append(Item(LOST, name, f"{what}: {'; '.join(now)}", None, now))
        elif was and not now and present_after:
            items.append(Item(GAINED, name, "admitted now (refused before)", was, None))
        elif was and now and was != now:
            items.append(Item(CHANGED, name, f"still refused, now: {'; '.join(now)}", was, now))
        elif not present_before and present_after:
            items.append(Item(CHANGED, name, "added"))
        elif present_before and not present_after:
            items.append(Item(CHANGED, name, "removed"))
        elif name in old and name in new and not was and not now:
            a, b = _as_written(old[name].body), _as_written(new[name].body)
            if a == b:
                continue
            fields = changed_fields(_defaulted(a, before.namespace), _defaulted(b, after.namespace))
            if old[name].kind == "Secret":
                fields = _secret_fields(fields, a, b)
            if not fields:
                continue
            items.append(Item(CHANGED, name, f"changed: {_fields_text(fields)}",
                              {p: v for p, v, _ in fields}, {p: v for p, _, v in fields}))
    return Layer("objects", TITLE, tuple(items))


__all__ = ["TITLE", "changed_fields", "compare", "subject"]
