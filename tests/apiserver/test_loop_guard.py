"""The store's write counter names an object the controllers write in a loop (issue 34, point 0).

The live test suites fail a test whose cluster logged such a line (the ``no_controller_loop`` fixtures in
tests/apiserver, tests/e2e and tests/labs conftest.py); this proves the counter says it, and only then.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from knetsim.apiserver.store import LOOP_BOUND, LOOP_MARK, LOOP_WINDOW, Store, Write


def configmap(name: str, value: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"v": value}}


def test_an_object_the_controllers_rewrite_past_the_bound_within_the_window_is_logged_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = Store(tmp_path / "db")
    now = [0.0]
    store.controller_writes.clock = lambda: now[0]
    store.controller_writes.window_start = 0.0
    key = ("ConfigMap", "default", "looping")
    with caplog.at_level(logging.ERROR, logger="knetsim.apiserver"):
        for i in range(LOOP_BOUND * 2):
            store.commit([Write(key, configmap("looping", str(i)), "controller")], durable=False)
            now[0] += LOOP_WINDOW / (LOOP_BOUND * 4)  # all within one window
    loops = [r.getMessage() for r in caplog.records if LOOP_MARK in r.getMessage()]
    assert loops == [loops[0]] and "ConfigMap default/looping" in loops[0]
    store.close()


def test_client_writes_and_a_steady_controller_writer_below_the_bound_are_not_a_loop(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = Store(tmp_path / "db")
    now = [0.0]
    store.controller_writes.clock = lambda: now[0]
    store.controller_writes.window_start = 0.0
    with caplog.at_level(logging.ERROR, logger="knetsim.apiserver"):
        for i in range(LOOP_BOUND * 3):
            store.commit([Write(("ConfigMap", "default", "client"), configmap("client", str(i)))])  # a client's
            # A controller's status writer at twice the fastest legitimate cadence (one burst every 50 ms).
            store.commit([Write(("ConfigMap", "default", "steady"), configmap("steady", str(i)), "controller")],
                         durable=False)
            now[0] += 0.025
    assert not [r for r in caplog.records if LOOP_MARK in r.getMessage()]
    store.close()
