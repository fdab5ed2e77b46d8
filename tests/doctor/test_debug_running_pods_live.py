"""Debug Running Pods' breaks on `knetsim up`: kubectl shows them as a real cluster does, and the doctor through
--kubeconfig names the same layer, object and fix as offline; the repaired pod gives no error."""

from __future__ import annotations

import subprocess

from tests.doctor.test_debug_running_pods import CRASHING, CRASHING_FIXED, TOO_BIG
from tests.live import Cluster, knetsim_argv, wait_for


def doctor(cluster: Cluster) -> str:
    out = subprocess.run(knetsim_argv("doctor", "--kubeconfig", cluster.kubeconfig), capture_output=True,
                         text=True, env=cluster.env(), timeout=60)
    return out.stdout + out.stderr


def status(cluster: Cluster) -> list[str]:
    return cluster.kubectl("get", "pod", "app", "--no-headers").stdout.split()


def test_a_crashing_container(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=CRASHING)
    assert wait_for(lambda: status(cluster)[2] == "CrashLoopBackOff", timeout=30), status(cluster)
    assert "starting" in cluster.kubectl("logs", "app", "--previous").stdout
    report = doctor(cluster)
    assert "[kubelet] Pod default/app: ContainerExits" in report and "exits with code 1 (Error)" in report, report
    cluster.kubectl("delete", "pod", "app", "--wait=false")
    assert wait_for(lambda: cluster.kubectl("get", "pod", "app", check=False).returncode != 0, timeout=20)
    cluster.kubectl("apply", "-f", "-", input=CRASHING_FIXED)
    assert wait_for(lambda: status(cluster)[1:3] == ["1/1", "Running"], timeout=30), status(cluster)
    assert "ContainerExits" not in doctor(cluster)
    cluster.kubectl("delete", "pod,service", "app", "--wait=false")
    assert wait_for(lambda: cluster.kubectl("get", "pod", "app", check=False).returncode != 0, timeout=20)


def test_a_pod_larger_than_every_node(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=TOO_BIG)
    assert wait_for(lambda: "Insufficient cpu" in cluster.kubectl("describe", "pod", "app").stdout, timeout=20)
    assert status(cluster)[2] == "Pending"
    report = doctor(cluster)
    assert "PodsUnschedulable" in report and "kubectl set resources pod/app -n default --requests=cpu=100m" in report
    cluster.kubectl("delete", "pod,service", "app", "--wait=false")
