"""Grading a lab's end state, and setting a lab up or tearing it down, through the Kubernetes API."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..model.jsonvalue import json_copy
from ..sources import KubeAPI
from .criteria import Context, evaluate
from .model import CriterionResult, Lab, LabResult, TaskResult
from .snapshot import Snapshot, fetch

LAB_LABEL = "labs.knetsim.io/lab"


def grade(lab: Lab, snapshot: Snapshot, tasks: Sequence[str] | None = None) -> LabResult:
    """Every criterion of the chosen tasks (all by default), in the lab file's order."""
    chosen = [lab.task(t) for t in tasks] if tasks else list(lab.tasks)
    ctx = Context(snapshot, lab.namespace, lab.namespaces)
    results = []
    for task in chosen:
        criteria = [evaluate(ctx, c) for c in task.checks]
        results.append(TaskResult(task.id, task.title, _withhold_open_door_credit(task.checks, criteria)))
    notes = [f"graded against {snapshot.where}"]
    if any(c.simulated for t in results for c in t.criteria) and snapshot.simulation_errors:
        notes += [f"left out of the simulation: {e}" for e in snapshot.simulation_errors]
    return LabResult(lab.name, snapshot.server, snapshot.knetsim, tuple(results), tuple(notes))


def _withhold_open_door_credit(checks: Sequence[Any], criteria: list[CriterionResult]) -> tuple[CriterionResult, ...]:
    """"A may connect" proves nothing while everything may connect, and "must be blocked" nothing while
    everything the task opens is still blocked.

    In a task that also requires some traffic to stay blocked, the connections that must work
    earn their points only once at least one blocked connection is really blocked; otherwise a
    cluster with no policy at all would collect them. Conversely the blocked connections marked
    ``closed_at_start`` (already blocked when the lab starts) earn theirs only once one connection
    the task must open works.
    """
    def expects_block(check: Any) -> bool:
        return check.type == "trace" and check.params.get("outcome", "connected") != "connected"

    negatives = [r for c, r in zip(checks, criteria, strict=True) if expects_block(c)]
    positives = [r for c, r in zip(checks, criteria, strict=True) if c.type == "trace" and not expects_block(c)]
    if negatives and positives and not any(r.passed for r in positives):
        # The mirror image, for checks marked `closed_at_start`: "must stay blocked" proves nothing while
        # every connection the task opens is still closed (the lab's starting state already blocks it).
        out = []
        for c, r in zip(checks, criteria, strict=True):
            if expects_block(c) and r.passed and c.params.get("closed_at_start"):
                r = replace(r, passed=False, found=f"{r.found} — but so is every connection this task must open: "
                            "nothing is let through yet, so this earns nothing")
            out.append(r)
        return tuple(out)
    # Something is blocked (even the wrong way, e.g. DNS): the open connections then mean something.
    if not negatives or not all(r.found.startswith("connected") for r in negatives):
        return tuple(criteria)
    out = []
    for c, r in zip(checks, criteria, strict=True):
        if c.type == "trace" and not expects_block(c) and r.passed:
            r = replace(r, passed=False, found=f"{r.found} — but so does every connection this task must block: "
                        "no policy isolates anything yet, so this earns nothing")
        out.append(r)
    return tuple(out)


def check(lab: Lab, client: KubeAPI, tasks: Sequence[str] | None = None) -> LabResult:
    return grade(lab, fetch(client), tasks)


@dataclass(frozen=True, slots=True)
class Applied:
    kind: str
    namespace: str
    name: str
    action: str  # created | replaced | deleted | absent

    def __str__(self) -> str:
        ref = f"{self.kind.lower()}/{self.name}"
        return f"{ref} {self.action}" + (f" (namespace {self.namespace})" if self.namespace else "")


def _labelled(obj: dict[str, Any], lab: Lab) -> dict[str, Any]:
    body = json_copy(obj)
    meta = body.setdefault("metadata", {})
    meta.setdefault("labels", {})[LAB_LABEL] = lab.name
    return body


# Cluster-scoped kinds a lab's starting objects may hold (no namespace; reset deletes them by name).
CLUSTER_SCOPED = ("IngressClass", "GatewayClass", "ClusterNetworkPolicy", "AdminNetworkPolicy",
                  "BaselineAdminNetworkPolicy")


def _namespace_body(name: str, lab: Lab) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {LAB_LABEL: lab.name}}}


def start(lab: Lab, client: KubeAPI, wait: float = 60) -> list[Applied]:
    """Create the lab's namespaces and starting objects (replace those present)."""
    out: list[Applied] = []
    _wait_gone(client, lab, wait)
    declared = {(o.get("kind"), (o.get("metadata") or {}).get("name")) for o in lab.setup}
    for ns in lab.namespaces:
        if ("Namespace", ns) not in declared:
            out.append(Applied("Namespace", "", ns, client.apply(_namespace_body(ns, lab))))
    for obj in lab.setup:
        body = _labelled(obj, lab)
        meta = body["metadata"]
        if body.get("kind") != "Namespace" and body.get("kind") not in CLUSTER_SCOPED:
            meta.setdefault("namespace", lab.namespace)
        out.append(Applied(str(body["kind"]), str(meta.get("namespace") or ""), str(meta["name"]),
                           client.apply(body)))
    return out


def reset(lab: Lab, client: KubeAPI, wait: float = 60) -> list[Applied]:
    """Delete the lab's namespaces (with everything in them, the learner's objects too) and its
    cluster-scoped objects, then wait until the namespaces are gone (a real cluster finalizes them)."""
    out: list[Applied] = []
    cluster_scoped = [(str(o["kind"]), str(o["metadata"]["name"])) for o in lab.setup
                      if o.get("kind") in CLUSTER_SCOPED]
    for kind, name in sorted(set(cluster_scoped) | set(lab.cluster_objects)):
        out.append(Applied(kind, "", name, "deleted" if client.delete(kind, None, name) else "absent"))
    for ns in lab.namespaces:
        out.append(Applied("Namespace", "", ns, "deleted" if client.delete("Namespace", None, ns) else "absent"))
    _wait_gone(client, lab, wait)
    return out


def _wait_gone(client: KubeAPI, lab: Lab, wait: float) -> None:
    deadline = time.monotonic() + wait
    while True:
        terminating = [ns for ns in lab.namespaces
                       if ((client.get("Namespace", None, ns) or {}).get("status") or {}).get("phase") == "Terminating"]
        if not terminating or time.monotonic() > deadline:
            return
        time.sleep(0.5)


def tasks_text(lab: Lab, ids: Iterable[str] | None = None) -> str:
    """The statements, as ``lab start`` prints them."""
    lines = [f"{lab.title} (lab {lab.name}, namespace {lab.namespace})", ""]
    if lab.summary:
        lines += [lab.summary, ""]
    chosen = [lab.task(i) for i in ids] if ids else lab.tasks
    for n, t in enumerate(chosen, 1):
        lines.append(f"{n}. [{t.id}] {t.title}  ({t.max_points} points)")
        lines += ["   " + line if line else "" for line in t.statement.splitlines()]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
