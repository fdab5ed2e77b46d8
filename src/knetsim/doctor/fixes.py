"""Fixes the doctor can prove: a change written as kubectl would apply it, tried on a copy of the cluster.

A fix printed as a command must fix. So each such fix is a ``Patch`` — the command a user runs — which the
doctor applies to a copy of the objects, rebuilds the cluster from, and checks again before offering it.

Why not kubectl's default patch: ``kubectl patch`` without ``--type`` is a strategic merge patch, which merges
map keys; a selector patch that renames a key (``appp`` → ``app``) keeps the stale one and the Service still
selects nothing. So a selector is replaced with ``--type=merge`` and the stale keys set to null (RFC 7386), and
a list element (a Service port, a container's env) is replaced by its index with ``--type=json`` (RFC 6902).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..cluster.build import build_cluster
from ..cluster.state import COLLECTIONS, ClusterState
from ..model.jsonvalue import json_copy, merge_patch
from ..model.loader import BUILTIN, CONTROLLER, Document

# kubectl's resource names, by kind: what `kubectl patch <resource> <name>` takes.
_RESOURCE = {"Service": "service", "Deployment": "deployment", "StatefulSet": "statefulset",
             "DaemonSet": "daemonset", "ReplicaSet": "replicaset", "Job": "job", "Pod": "pod",
             "NetworkPolicy": "networkpolicy", "Ingress": "ingress"}


@dataclass(frozen=True, slots=True)
class Patch:
    """``kubectl -n NS patch RESOURCE NAME --type=TYPE -p BODY`` (type ``merge`` or ``json``)."""

    kind: str
    namespace: str
    name: str
    type: str
    body: Any
    # The command a user types for the same change when kubectl has a verb for it (`kubectl scale`).
    shown: str = ""

    @property
    def command(self) -> str:
        if self.shown:
            return self.shown
        text = json.dumps(self.body, separators=(",", ":"))
        return (f"kubectl -n {self.namespace} patch {_RESOURCE.get(self.kind, self.kind.lower())} {self.name} "
                f"--type={self.type} -p {shlex.quote(text)}")

    def apply(self, body: dict[str, Any]) -> dict[str, Any]:
        """The object as the API server stores it after this patch (a copy)."""
        out = json_copy(body)
        if self.type == "merge":
            return merge_patch(out, self.body)
        for op in self.body:
            json_patch_op(out, op)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "namespace": self.namespace, "name": self.name, "type": self.type,
                "patch": self.body}


def _pointer(path: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]


def json_patch_op(doc: dict[str, Any], op: dict[str, Any]) -> None:
    """RFC 6902's add, replace and remove (the operations the doctor writes)."""
    *parents, last = _pointer(str(op["path"]))
    node: Any = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    kind = op["op"]
    if isinstance(node, list):
        index = len(node) if last == "-" else int(last)
        if kind == "add":
            node.insert(index, json_copy(op["value"]))
        elif kind == "replace":
            node[index] = json_copy(op["value"])
        else:
            del node[index]
    elif kind in ("add", "replace"):
        node[last] = json_copy(op["value"])
    else:
        node.pop(last, None)


def user_documents(state: ClusterState) -> list[Document]:
    """The objects the user gave (not the built-in system, not what controllers made), as documents again."""
    docs = []
    for attr in COLLECTIONS:
        for obj in getattr(state, attr).values():
            if obj.source is BUILTIN or obj.source is CONTROLLER:
                continue
            docs.append(Document(obj.source, obj.raw))
    return docs


def patched_state(state: ClusterState, patch: Patch) -> ClusterState | None:
    """The patched object's part of the cluster rebuilt with ``patch`` applied; None when the patched object is
    refused or not found."""
    docs, found = [], False
    for doc in user_documents(state):
        # The patched object's namespace, the cluster-scoped objects and every Service (names resolve across
        # namespaces) decide whether a fix works; the rest of a large cluster would only make each check slow.
        if doc.namespace not in ("", patch.namespace) and doc.kind != "Service":
            continue
        body = json_copy(doc.body)
        if doc.kind == patch.kind and doc.name == patch.name and doc.namespace == patch.namespace:
            body, found = patch.apply(body), True
            # The stored status described the old object; the controllers write it again.
            body.pop("status", None)
        docs.append(Document(doc.source, body))
    if not found:
        return None
    result = build_cluster(docs, state.config)
    if any(e.subject == f"{patch.kind} {patch.namespace}/{patch.name}" for e in result.errors):
        return None
    return result.state


def verified(state: ClusterState, patch: Patch, still_broken: Callable[[ClusterState], str | None]) -> str | None:
    """None when ``patch`` fixes what ``still_broken`` looks for on the rebuilt cluster; else why it does not."""
    fixed = patched_state(state, patch)
    if fixed is None:
        return f"the API server would refuse {patch.kind} {patch.namespace}/{patch.name} so patched"
    return still_broken(fixed)
