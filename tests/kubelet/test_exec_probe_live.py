"""The live kubelet judges the exec probes of tests/kubelet/test_exec_probe_offline.py as the offline build does."""

from __future__ import annotations

from tests.live import Cluster, wait_for

from .test_exec_probe_offline import ALWAYS, MISSING_FILE


def test_the_live_kubelet_agrees(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input="---\n".join([MISSING_FILE, ALWAYS]))

    def ready(name: str) -> str:
        return cluster.kubectl("get", "pod", name, "-o", "jsonpath={.status.containerStatuses[0].ready}").stdout

    assert wait_for(lambda: ready("always") == "true", timeout=30)
    assert wait_for(lambda: "can't open '/tmp/healthy'" in cluster.kubectl("describe", "pod", "nofile").stdout,
                    timeout=30)
    assert ready("nofile") == "false"
