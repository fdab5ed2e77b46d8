"""Server-side Table output (``meta.k8s.io/v1 Table``), as kube-apiserver's TableConvertor builds it.

kubectl has no client-side printers for built-in kinds any more: without a Table it prints only
NAME and AGE. The columns and cells are ``knetsim.printers`` (shared with ``knetsim get``); this
module only assembles the Table JSON: column definitions, rows with their partial metadata or
object, and the Completed condition of finished pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .. import printers

Obj = Mapping[str, Any]


def column_definitions(kind: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for c in printers.column_defs(kind):
        if c.name == "Name" and c.priority == 0:
            out.append({"name": "Name", "type": "string", "format": "name", "priority": 0,
                        "description": "Name must be unique within a namespace."})
        else:
            out.append({"name": c.name, "type": c.type, "format": "", "priority": c.priority, "description": c.name})
    return out


def partial_metadata(o: Obj) -> dict[str, Any]:
    meta = o.get("metadata")
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": dict(meta) if isinstance(meta, Mapping) else {}}


def row(kind: str, o: Obj, include: str = "Metadata", now: datetime | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"cells": printers.cells(kind, o, now or printers.utc_now())}
    if include == "Object":
        out["object"] = dict(o)
    elif include != "None":
        out["object"] = partial_metadata(o)
    status = o.get("status")
    phase = status.get("phase") if kind == "Pod" and isinstance(status, Mapping) else None
    if phase in ("Succeeded", "Failed"):
        out["conditions"] = [{"type": "Completed", "status": "True", "reason": phase,
                              "message": "The pod has completed"}]
    return out


def table(kind: str, objects: list[Obj], resource_version: str, include: str = "Metadata",
          headers: bool = True) -> dict[str, Any]:
    now = printers.utc_now()
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": resource_version},
            "columnDefinitions": column_definitions(kind) if headers else [],
            "rows": [row(kind, o, include, now) for o in objects]}
