"""Saved progress: STATUS is the latest check; a task that passed once and broke since says so."""

from __future__ import annotations

from knetsim.labs import load_lab
from knetsim.labs.model import CriterionResult, LabResult, TaskResult
from knetsim.labs.progress import ProgressStore


def _result(lab: str, task: str, passed: bool) -> LabResult:
    criterion = CriterionResult("trace", "a connects to b", passed, "connected", "connected" if passed else "timeout",
                                1)
    return LabResult(lab, "https://127.0.0.1:6443", True, (TaskResult(task, task, (criterion,)),), ())


def test_status_follows_the_last_check(tmp_path) -> None:
    lab = load_lab("netpol")
    task = lab.tasks[0]
    store = ProgressStore(tmp_path)
    store.record(_result("netpol", task.id, True), when="2026-12-03T01:00:00Z")
    row = next(r for r in store.rows([lab]) if r[1] == task.id)
    assert row[2] == "passed" and row[-1] == "2026-12-03T01:00:00Z"
    store.record(_result("netpol", task.id, False), when="2026-12-03T02:00:00Z")
    row = next(r for r in store.rows([lab]) if r[1] == task.id)
    assert row[2] == "passed earlier" and row[-1] == "2026-12-03T01:00:00Z"
