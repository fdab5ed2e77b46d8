"""Debug Running Pods' breaks on `knetsim up`: kubectl shows them as a real cluster does, and the doctor through
--kubeconfig names the same layer, object and fix as offline; the repaired pod gives no error."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from tests.doctor.test_debug_running_pods import CRASHING, CRASHING_FIXED, TOO_BIG
from tests.e2e.conftest import KUBECTL, Cluster, knetsim_argv, start, stop, wait_for

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    cluster = start(tmp_path_factory.mktemp("debugpods"))
    try:
        yield cluster
    finally:
        stop(cluster)


def doctor(cluster: Cluster) -> str:
    out = subprocess.run(knetsim_argv("doctor", "--kubeconfig", cluster.kubeconfig), capture_output=True,
                         text=True, env=cluster.env(), timeout=60)
    return out.stdout + out.stderr


def status(cluster: Cluster) -> list[str]:
    return cluster.kubectl("get", "pod", "app", "--no-headers").stdout.split()


def test_a_crashing_container(live: Cluster) -> None:
    live.kubectl("apply", "-f", "-", input=CRASHING)
    assert wait_for(lambda: status(live)[2] == "CrashLoopBackOff", timeout=30), status(live)
    assert "starting" in live.kubectl("logs", "app", "--previous").stdout
    report = doctor(live)
    assert "[kubelet] Pod default/app: ContainerExits" in report and "exits with code 1 (Error)" in report, report
    live.kubectl("delete", "pod", "app", "--wait=false")
    assert wait_for(lambda: live.kubectl("get", "pod", "app", check=False).returncode != 0, timeout=20)
    live.kubectl("apply", "-f", "-", input=CRASHING_FIXED)
    assert wait_for(lambda: status(live)[1:3] == ["1/1", "Running"], timeout=30), status(live)
    assert "ContainerExits" not in doctor(live)
    live.kubectl("delete", "pod,service", "app", "--wait=false")
    assert wait_for(lambda: live.kubectl("get", "pod", "app", check=False).returncode != 0, timeout=20)


def test_a_pod_larger_than_every_node(live: Cluster) -> None:
    live.kubectl("apply", "-f", "-", input=TOO_BIG)
    assert wait_for(lambda: "Insufficient cpu" in live.kubectl("describe", "pod", "app").stdout, timeout=20)
    assert status(live)[2] == "Pending"
    report = doctor(live)
    assert "PodsUnschedulable" in report and "kubectl set resources pod/app -n default --requests=cpu=100m" in report
    live.kubectl("delete", "pod,service", "app", "--wait=false")
