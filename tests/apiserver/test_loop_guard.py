"""The store's write counter names an object the controllers write in a loop (issue 34, point 0).

The live test suites fail a test whose cluster logged such a line (the ``no_controller_loop`` fixtures in
tests/apiserver, tests/e2e and tests/labs conftest.py); this proves the counter says it, and only then.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from knetsim.apiserver.store import LOOP_BOUND, LOOP_MARK, LOOP_WINDOW, Change, Store, Write, WriteCounter


def configmap(name: str, value: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"v": value}}


def loops(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if LOOP_MARK in r.getMessage()]


def test_an_object_rewritten_past_the_bound_within_the_window_is_logged_once_per_window(
        caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    counter = WriteCounter(clock=lambda: now[0])
    with caplog.at_level(logging.ERROR, logger="knetsim.apiserver"):
        for window in range(2):
            for i in range(LOOP_BOUND * 2):
                counter.count([Change("MODIFIED", "ConfigMap", i, None, configmap("looping", str(i)))])
                now[0] += LOOP_WINDOW / (LOOP_BOUND * 4)  # all within one window
            now[0] = (window + 1) * LOOP_WINDOW * 1.5
    assert len(loops(caplog)) == 2 and "ConfigMap default/looping" in loops(caplog)[0]
    assert counter.reported == [("ConfigMap", "default", "looping")] * 2


def test_a_steady_writer_below_the_bound_is_not_a_loop(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    counter = WriteCounter(clock=lambda: now[0])
    with caplog.at_level(logging.ERROR, logger="knetsim.apiserver"):
        # Twice the fastest legitimate cadence (an owner's status once per 50 ms burst), for ten windows.
        for i in range(int(10 * LOOP_WINDOW / 0.025)):
            counter.count([Change("MODIFIED", "ReplicaSet", i, None, configmap("steady", str(i)))])
            now[0] += 0.025
    assert loops(caplog) == []


def test_only_the_controllers_writes_are_counted(tmp_path: Path) -> None:
    store = Store(tmp_path / "db")
    store.commit([Write(("ConfigMap", "default", "client"), configmap("client", "1"))])  # a client's
    store.commit([Write(("ConfigMap", "default", "derived"), configmap("derived", "1"), "controller")], durable=False)
    assert dict(store.controller_writes.counts) == {("ConfigMap", "default", "derived"): 1}
    store.close()
