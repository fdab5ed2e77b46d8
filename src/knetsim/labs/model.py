"""Labs as data: ``catalog/<name>.yaml`` → ``Lab`` → ``Task`` → checks; and the graded results.

A lab file holds everything about one lab: its namespaces, the starting objects, and per
task the statement, hints, the kubectl commands a learner would type, a reference solution
(run by the tests with the real kubectl) and the checks. A check is one semantic criterion
(``type`` plus its parameters, see ``criteria.CHECKS``), worth ``points`` (default 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

CATALOG = "knetsim.labs.catalog"


class LabError(ValueError):
    """An unknown lab or task, or a lab file that does not hold together (maps to exit code 2)."""


@dataclass(frozen=True, slots=True)
class Check:
    type: str
    params: Mapping[str, Any]
    points: int = 1


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a reference solution: a kubectl command line, or manifests for ``kubectl apply -f -``."""

    run: str = ""
    apply: str = ""


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    title: str
    statement: str
    hints: tuple[str, ...]
    commands: str
    checks: tuple[Check, ...]
    solution: tuple[Step, ...] = ()

    @property
    def max_points(self) -> int:
        return sum(c.points for c in self.checks)


@dataclass(frozen=True, slots=True)
class Lab:
    name: str
    title: str
    summary: str
    namespace: str  # where the learner works; checks default to it
    namespaces: tuple[str, ...]  # created by `lab start`, deleted by `lab reset`
    setup: tuple[dict[str, Any], ...]  # starting objects, in creation order
    cluster_objects: tuple[tuple[str, str], ...]  # cluster-scoped (kind, name) a learner creates; reset deletes
    tasks: tuple[Task, ...]

    def task(self, task_id: str) -> Task:
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise LabError(f"lab {self.name} has no task {task_id!r} (tasks: {', '.join(t.id for t in self.tasks)})")

    @property
    def max_points(self) -> int:
        return sum(t.max_points for t in self.tasks)


def _task(lab: str, raw: Mapping[str, Any]) -> Task:
    tid = str(raw["id"])
    checks = []
    for i, c in enumerate(raw.get("checks") or []):
        if not isinstance(c, Mapping) or "type" not in c:
            raise LabError(f"lab {lab}, task {tid}: checks[{i}] needs a type")
        params = {k: v for k, v in c.items() if k not in ("type", "points")}
        checks.append(Check(str(c["type"]), params, int(c.get("points", 1))))
    for i, h in enumerate(raw.get("hints") or []):
        if not isinstance(h, str):
            raise LabError(f"lab {lab}, task {tid}: hints[{i}] is not a string (quote it: YAML read ': ' as a mapping)")
    steps = []
    for s in raw.get("solution") or []:
        steps.append(Step(run=str(s)) if isinstance(s, str) else Step(apply=str(s.get("apply", ""))))
    return Task(tid, str(raw.get("title") or tid), str(raw.get("statement") or "").strip(),
                tuple(str(h).strip() for h in raw.get("hints") or []), str(raw.get("commands") or "").strip(),
                tuple(checks), tuple(steps))


def parse_lab(text: str, name: str) -> Lab:
    raw = yaml.safe_load(text)
    if not isinstance(raw, Mapping):
        raise LabError(f"lab file {name}.yaml is not a mapping")
    setup = [d for d in yaml.safe_load_all(raw.get("setup") or "") if d]
    tasks = tuple(_task(name, t) for t in raw.get("tasks") or [])
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        raise LabError(f"lab {name}: duplicate task ids in {ids}")
    cluster_objects = []
    for ref in raw.get("cluster_objects") or []:
        kind, _, obj = str(ref).partition("/")
        cluster_objects.append((kind, obj))
    namespaces = tuple(str(n) for n in raw.get("namespaces") or [raw["namespace"]])
    return Lab(str(raw.get("name") or name), str(raw.get("title") or name), str(raw.get("summary") or "").strip(),
               str(raw["namespace"]), namespaces, tuple(setup), tuple(cluster_objects), tasks)


def lab_names() -> list[str]:
    files = resources.files(CATALOG)
    return sorted(p.name[: -len(".yaml")] for p in files.iterdir() if p.name.endswith(".yaml"))


def load_lab(name: str) -> Lab:
    if name not in lab_names():
        raise LabError(f"no lab named {name!r} (labs: {', '.join(lab_names())})")
    return parse_lab(resources.files(CATALOG).joinpath(f"{name}.yaml").read_text(encoding="utf-8"), name)


def all_labs() -> list[Lab]:
    # The seeds' two labs first, ClusterNetworkPolicy after NetworkPolicy, then the rest by name.
    order = {"services": 0, "netpol": 1, "cluster-policy": 2}
    return sorted((load_lab(n) for n in lab_names()), key=lambda lab: (order.get(lab.name, 9), lab.name))


# --- results ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CriterionResult:
    check: str  # the check type
    description: str
    passed: bool
    expected: str
    found: str
    points: int
    simulated: bool = False  # decided by knetsim's simulation (trace, route, DNS), not read from an object

    @property
    def score(self) -> int:
        return self.points if self.passed else 0

    def to_dict(self) -> dict[str, Any]:
        return {"check": self.check, "description": self.description, "passed": self.passed,
                "expected": self.expected, "found": self.found, "points": self.points, "score": self.score,
                "simulated": self.simulated}


@dataclass(frozen=True, slots=True)
class TaskResult:
    task: str
    title: str
    criteria: tuple[CriterionResult, ...]

    @property
    def score(self) -> int:
        return sum(c.score for c in self.criteria)

    @property
    def max_points(self) -> int:
        return sum(c.points for c in self.criteria)

    @property
    def passed(self) -> bool:
        return self.score == self.max_points

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "title": self.title, "passed": self.passed, "score": self.score,
                "maxScore": self.max_points, "criteria": [c.to_dict() for c in self.criteria]}


@dataclass(frozen=True, slots=True)
class LabResult:
    lab: str
    cluster: str
    knetsim: bool
    tasks: tuple[TaskResult, ...]
    notes: tuple[str, ...] = ()

    @property
    def score(self) -> int:
        return sum(t.score for t in self.tasks)

    @property
    def max_points(self) -> int:
        return sum(t.max_points for t in self.tasks)

    @property
    def passed(self) -> bool:
        return all(t.passed for t in self.tasks)

    def to_dict(self) -> dict[str, Any]:
        return {"lab": self.lab, "cluster": self.cluster, "knetsim": self.knetsim, "passed": self.passed,
                "score": self.score, "maxScore": self.max_points, "tasks": [t.to_dict() for t in self.tasks],
                "notes": list(self.notes)}
