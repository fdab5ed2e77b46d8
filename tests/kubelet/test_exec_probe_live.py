"""The live kubelet judges the exec probes of tests/kubelet/test_exec_probe_offline.py as the offline build does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.e2e.conftest import KUBECTL, Cluster, start, stop, wait_for

from .test_exec_probe_offline import ALWAYS, MISSING_FILE

pytestmark = pytest.mark.live  # starts a cluster of its own


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed")
    cluster = start(tmp_path_factory.mktemp("execprobe"))
    try:
        yield cluster
    finally:
        stop(cluster)


def test_the_live_kubelet_agrees(live: Cluster) -> None:
    live.kubectl("apply", "-f", "-", input="---\n".join([MISSING_FILE, ALWAYS]))

    def ready(name: str) -> str:
        return live.kubectl("get", "pod", name, "-o", "jsonpath={.status.containerStatuses[0].ready}").stdout

    assert wait_for(lambda: ready("always") == "true", timeout=30)
    assert wait_for(lambda: "can't open '/tmp/healthy'" in live.kubectl("describe", "pod", "nofile").stdout,
                    timeout=30)
    assert ready("nofile") == "false"
