"""The kubelet's probe bookkeeping (prober): thresholds, the startup gate, the prober's words."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

import pytest

from knetsim.kubelet.prober import ContainerProbes, ProbeError, Schedule, network_result
from knetsim.model.objects import Pod


def test_schedule_defaults_are_the_apis() -> None:
    s = Schedule.of("Liveness", {"tcpSocket": {"port": 80}})
    assert (s.initial_delay, s.period, s.timeout, s.success_threshold, s.failure_threshold) == (0, 10, 1, 1, 3)
    s = Schedule.of("Readiness", {"exec": {"command": ["true"]}, "initialDelaySeconds": 5, "periodSeconds": 2,
                                  "failureThreshold": 1, "successThreshold": 2})
    assert (s.initial_delay, s.due, s.period, s.success_threshold, s.failure_threshold) == (5, 5, 2, 2, 1)


class Recorder:
    def __init__(self, container: Mapping[str, Any], results: list[bool]) -> None:
        self.results = results
        self.calls: list[tuple[str, Any]] = []
        self.probes = ContainerProbes(container, self.network, self.run_exec, self.note("unhealthy"),
                                      self.note("ready"), lambda: self.calls.append(("started", None)),
                                      self.note("kill"))

    def note(self, name: str) -> Any:
        return lambda value: self.calls.append((name, value))

    def network(self, spec: Mapping[str, Any]) -> tuple[bool, str]:
        ok = self.results.pop(0)
        return ok, "" if ok else "dial tcp 10.244.1.5:8080: connect: connection refused"

    async def run_exec(self, argv: list[str], timeout: float) -> tuple[bool, str]:
        return self.network({})

    def run(self, kind: str, times: int) -> list[bool]:
        schedule = next(s for s in self.probes.schedules if s.kind == kind)
        return [asyncio.run(self.probes._probe(schedule)) for _ in range(times)]


def test_liveness_kills_after_failure_threshold_consecutive_failures() -> None:
    r = Recorder({"livenessProbe": {"tcpSocket": {"port": 8080}}}, [False, True, False, False, False])
    assert r.run("Liveness", 5) == [False, False, False, False, True]
    assert r.calls == [("unhealthy", "Liveness probe failed: dial tcp 10.244.1.5:8080: connect: connection refused")] \
        + [("unhealthy", "Liveness probe failed: dial tcp 10.244.1.5:8080: connect: connection refused")] * 3 + \
        [("kill", "liveness")]


def test_readiness_is_false_until_the_first_success_then_follows_the_thresholds() -> None:
    r = Recorder({"readinessProbe": {"exec": {"command": ["cat", "/tmp/ready"]}, "failureThreshold": 2,
                                     "successThreshold": 2}}, [False, True, True, False, False])
    r.run("Readiness", 5)
    assert [c for c in r.calls if c[0] == "ready"] == [("ready", False), ("ready", True), ("ready", False)]


def test_startup_gates_the_others_and_kills_on_its_threshold() -> None:
    container = {"startupProbe": {"httpGet": {"port": 80}, "failureThreshold": 2},
                 "livenessProbe": {"httpGet": {"port": 80}}}
    r = Recorder(container, [False, True])
    assert not r.probes.start_done
    r.run("Startup", 2)
    assert r.probes.start_done and r.calls[-1] == ("started", None)
    r = Recorder(container, [False, False])
    assert r.run("Startup", 2) == [False, True]
    assert r.calls[-1] == ("kill", "startup")


def pod(annotations: dict[str, str] | None = None) -> Pod:
    return Pod.parse({"metadata": {"name": "web", "namespace": "default", "annotations": annotations or {}},
                      "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27",
                                               "ports": [{"name": "http", "containerPort": 80}]}]},
                      "status": {"podIP": "10.244.1.5", "hostIP": "172.18.0.3"}})


def test_network_probes_say_what_the_prober_says() -> None:
    container = {"name": "nginx", "ports": [{"name": "http", "containerPort": 80}]}
    assert network_result(None, pod(), container, {"tcpSocket": {"port": "http"}}) == (True, "")
    assert network_result(None, pod(), container, {"httpGet": {"port": 8080, "path": "healthz"}}) == (
        False, 'Get "http://10.244.1.5:8080/healthz": dial tcp 10.244.1.5:8080: connect: connection refused')
    assert network_result(None, pod(), container, {"tcpSocket": {"port": 81}}) == (
        False, "dial tcp 10.244.1.5:81: connect: connection refused")
    assert network_result(None, pod(), container, {"grpc": {"port": 9090}}) == (
        False, 'timeout: failed to connect service "10.244.1.5:9090" within 1s: context deadline exceeded')
    with pytest.raises(ProbeError, match=re.escape('strconv.Atoi: parsing "metrics": invalid syntax')):
        network_result(None, pod(), container, {"tcpSocket": {"port": "metrics"}})


def test_a_probe_that_cannot_run_errors_and_its_result_is_thrown_away() -> None:
    r = Recorder({"name": "nginx", "livenessProbe": {"tcpSocket": {"port": "metrics"}, "failureThreshold": 1}}, [])
    r.probes.network = lambda spec: network_result(None, pod(), {"name": "nginx"}, spec)
    assert r.run("Liveness", 4) == [False] * 4
    assert r.calls == [("unhealthy", 'Liveness probe errored: strconv.Atoi: parsing "metrics": invalid syntax')] * 4
