"""The live kubelet agrees with the offline build of tests/doctor/test_probe_restarts.py: a liveness probe on a path
nginx answers 404, a startup probe on a port nothing listens on, and a command busybox refuses each crash-loop
(READY 0/1, STATUS CrashLoopBackOff, RESTARTS climbing), the container's last words are what the doctor quotes,
and the doctor through --kubeconfig names the same break."""

from __future__ import annotations

import subprocess

import pytest
from tests.live import Cluster, knetsim_argv, wait_for

from .test_probe_restarts import BAD_FLAG, CONFIG, INIT_FAILS, LIVENESS_404, STARTUP_PORT, findings, statuses

# The live prober keeps time: one failure kills (failureThreshold 1) and probes run each second, so the crash loop
# shows within seconds. The offline build reads the same objects (it has no clock: thresholds do not change it).
FAST = "\n          periodSeconds: 1\n          failureThreshold: 1\n"
LIVENESS = LIVENESS_404.replace("replicas: 2", "replicas: 1").replace(
    "httpGet: {path: /healthz, port: 80}\n", "httpGet: {path: /healthz, port: 80}" + FAST)
STARTUP = STARTUP_PORT.replace("replicas: 2", "replicas: 1").replace(
    "tcpSocket: {port: 8080}\n          failureThreshold: 30\n", "tcpSocket: {port: 8080}" + FAST)


def rows(cluster: Cluster, selector: str) -> list[list[str]]:
    out = cluster.kubectl("get", "pods", *selector.split(), "--no-headers").stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def settled_as(cluster: Cluster, selector: str, expected: set[tuple[str, str]]) -> list[list[str]] | None:
    """The pods' rows once every one shows the READY and STATUS the offline build gives, with RESTARTS >= 1."""
    found = rows(cluster, selector)
    return found if found and {(r[1], r[2]) for r in found} == expected and all(int(r[3]) >= 1 for r in found) \
        else None


def doctor(cluster: Cluster) -> str:
    out = subprocess.run(knetsim_argv("doctor", "--kubeconfig", cluster.kubeconfig), capture_output=True,
                         text=True, env=cluster.env(), timeout=120)
    return out.stdout + out.stderr


@pytest.mark.parametrize(("text", "selector", "code", "last_words"), [
    (LIVENESS, "-l app=web", "LivenessProbeFails", None),
    (STARTUP, "-l app=api", "StartupProbeFails", None),
    (BAD_FLAG, "sleepy", "ContainerExits", ("sleepy", "app", "sleep: invalid number 'forever'")),
    (INIT_FAILS, "initfail", "ContainerExits", ("initfail", "setup", "migrating")),
])
def test_the_live_kubelet_crash_loops_the_pod_the_offline_build_does(
        cluster: Cluster, text: str, selector: str, code: str, last_words: tuple[str, str, str] | None) -> None:
    offline = {tuple(row.split()[:2]) for row in statuses(text).values()}
    assert offline in ({("0/1", "CrashLoopBackOff")}, {("0/1", "Init:CrashLoopBackOff")}), offline
    assert findings(text, code)
    cluster.kubectl("apply", "-f", "-", input=text)
    try:
        found = wait_for(lambda: settled_as(cluster, selector, offline), timeout=60)
        assert found, rows(cluster, selector)
        assert code in doctor(cluster)
        if last_words is not None:
            # What the doctor quotes offline is what the container printed before it exited.
            pod, container, said = last_words
            logs = cluster.kubectl("logs", pod, "-c", container, "--previous").stdout
            assert said in logs, logs
            assert said in findings(text, code)[0].message
    finally:
        cluster.kubectl("delete", "-f", "-", "--wait=false", input=text)


def test_the_live_kubelet_cannot_create_the_container_the_offline_build_cannot(cluster: Cluster) -> None:
    assert list(statuses(CONFIG).values()) == ["0/1 CreateContainerConfigError 0"]
    cluster.kubectl("apply", "-f", "-", input=CONFIG)
    try:
        def waiting() -> list[list[str]] | None:
            found = rows(cluster, "-l app=app")
            return found if found and all(r[1:3] == ["0/1", "CreateContainerConfigError"] for r in found) else None
        assert wait_for(waiting, timeout=60), rows(cluster, "-l app=app")
        assert "ContainerConfigError" in doctor(cluster)
    finally:
        cluster.kubectl("delete", "-f", "-", "--wait=false", input=CONFIG)
