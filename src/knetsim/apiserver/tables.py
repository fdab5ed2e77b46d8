"""Server-side Table output (``meta.k8s.io/v1 Table``), as kube-apiserver's TableConvertor builds it.

kubectl has no client-side printers for built-in kinds any more: without a Table it prints only
NAME and AGE. The columns and cells are ``knetsim.printers`` (shared with ``knetsim get``); this
module only assembles the Table JSON: column definitions, rows with their partial metadata or
object, and the Completed condition of finished pods.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .. import printers

Obj = Mapping[str, Any]


Columns = tuple[tuple[str, str, str], ...]  # a CRD's additionalPrinterColumns: (name, type, jsonPath)


def _crd_cells(columns: Columns, o: Obj, now: datetime) -> list[Any]:
    """As the CRD table convertor fills them: the first value a column's path selects; none, an empty cell."""
    out: list[Any] = [(o.get("metadata") or {}).get("name", "")]
    for _name, kind, path in columns:
        values = printers.jsonpath(o, path)
        value = values[0] if values else None
        if kind == "date":
            out.append(printers.since(value, now))
        elif value is None:
            out.append("" if kind == "string" else None)
        else:
            out.append(value if kind in ("integer", "number", "boolean") else
                       json.dumps(value, separators=(",", ":")) if isinstance(value, list | dict) else str(value))
    return out


def column_definitions(kind: str, columns: Columns | None = None) -> list[dict[str, Any]]:
    """The Table's columns: ``columns`` when a CRD declares them (resources.Resource.printer_columns: a client's
    CRD, a CNI's kind), else the printers' of ``kind``."""
    if columns is not None:
        return [{"name": "Name", "type": "string", "format": "name", "priority": 0,
                 "description": "Name must be unique within a namespace."},
                *({"name": name, "type": "string" if t == "date" else t, "format": "", "priority": 0,
                   "description": name} for name, t, _ in columns)]
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


def row(kind: str, o: Obj, include: str = "Metadata", now: datetime | None = None,
        columns: Columns | None = None) -> dict[str, Any]:
    now = now or printers.utc_now()
    cells = _crd_cells(columns, o, now) if columns is not None else printers.cells(kind, o, now)
    out: dict[str, Any] = {"cells": cells}
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
          headers: bool = True, columns: Columns | None = None) -> dict[str, Any]:
    now = printers.utc_now()
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": resource_version},
            "columnDefinitions": column_definitions(kind, columns) if headers else [],
            "rows": [row(kind, o, include, now, columns) for o in objects]}
