"""A doctor that scales: full nodes are the scheduler's finding (maxPods, "Too many pods"), and findings about
many objects are one finding with counts and a few examples. (Timings are in bench/doctor.py, not here.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from tests.doctor.scenarios import web

from knetsim import Cluster
from knetsim.cli.main import cli
from knetsim.cluster.config import ConfigError, config_from_dict

# kubernetes pkg/scheduler/framework/types.go (FitError) over the tainttoleration and noderesources filters,
# as `kubectl describe pod` shows it on a full kind cluster of one control-plane and two workers.
FULL = ("0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Too "
        "many pods. preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption "
        "victims found for incoming pod.")


def test_the_kubelets_max_pods_fills_the_nodes_and_the_rest_stay_pending() -> None:
    cluster = Cluster.from_yaml(web(300))
    pods = [p for p in cluster.state.pods.values() if p.name.startswith("web-")]
    placed = {n: sum(1 for p in cluster.state.pods.values() if p.node_name == n) for n in cluster.state.nodes}
    assert placed["worker"] == placed["worker2"] == 110  # kube-proxy and kindnet included, as on kind
    pending = [p for p in pods if not p.node_name]
    assert len(pending) == 300 - (220 - 4) and all(p.phase == "Pending" and not p.pod_ip for p in pending)
    condition = next(c for c in pending[0].raw["status"]["conditions"] if c["type"] == "PodScheduled")
    assert condition == {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": FULL}
    # A few notices (kubectl's warnings), then a count: not one warning per pending pod.
    assert [n.message for n in cluster.notices if n.code == "Unschedulable"] == [FULL] * 5 + [
        f"79 more pod(s) of the same shape stay Pending: {FULL}"]


def test_max_pods_from_the_cluster_config() -> None:
    config = config_from_dict({"maxPods": 20})
    cluster = Cluster.from_yaml(web(50), config=config)
    assert {n.raw["status"]["allocatable"]["pods"] for n in cluster.state.nodes.values()} == {"20"}
    assert sum(1 for p in cluster.state.pods.values() if p.name.startswith("web-") and p.node_name) == 40 - 4
    per_node = config_from_dict({"nodes": [{"name": "control-plane", "ip": "172.18.0.2"},
                                           {"name": "worker", "ip": "172.18.0.3", "maxPods": 5}], "maxPods": 50})
    assert [n.max_pods for n in per_node.nodes] == [50, 5]
    for bad in (0, "many", True):
        try:
            config_from_dict({"maxPods": bad})
        except ConfigError as exc:
            assert "maxPods" in str(exc)
        else:
            raise AssertionError(bad)


def test_full_nodes_are_one_finding_that_says_so_not_a_readiness_probe() -> None:
    report = Cluster.from_yaml(web(1000)).doctor()
    [finding] = [f for f in report.findings if f.subject == "Service default/web"]
    assert finding.code == "PodsUnschedulable" and finding.layer == "scheduler"
    assert finding.message.startswith("784 of 1000 selected pod(s) are Pending") and FULL in finding.message
    assert "maxPods" in finding.fix and "readiness" not in finding.fix
    assert finding.fix.startswith("kubectl -n default scale deployment web --replicas=216\n")
    assert len(finding.evidence) == 4 and finding.evidence[-1] == "... and 781 more"


def web_line(path: Path) -> int:
    """The line the Deployment starts at in ``path`` (where a finding about it points)."""
    return path.read_text().splitlines().index("apiVersion: apps/v1") + 1


def test_a_workloads_pods_share_one_finding(tmp_path: Path) -> None:
    path = tmp_path / "web.yaml"
    path.write_text(web(40, image="nginx:1.277"))
    result = CliRunner().invoke(cli, ["doctor", "-f", str(path)])
    assert result.exit_code == 1
    pulls = [line for line in result.output.splitlines() if ": ImagePullError" in line]
    assert pulls == [f"✗ ERROR   [kubelet] Deployment default/web ({path}:{web_line(path)}): ImagePullError"]
    assert "40 pods of Deployment default/web" in result.output and "... and 37 more" in result.output
    assert len(result.output.splitlines()) < 40


def test_the_live_scheduler_counts_max_pods_too(tmp_path: Path) -> None:
    from tests.apiserver.inprocess import Cluster as Live
    from tests.apiserver.inprocess import run

    from knetsim.apiserver.store import Write

    def room(pods: int) -> Any:
        def change(body: dict[str, Any]) -> None:
            body["status"]["allocatable"]["pods"] = str(pods)
        return change

    async def scenario(c: Live) -> None:
        await c.server.settle()
        # Each worker already runs kube-proxy and kindnet: room for 2 more pods each.
        for node in ("worker", "worker2"):
            stored = c.server.store.get(("Node", "", node))
            assert stored is not None
            body = json.loads(json.dumps(stored.body))
            room(4)(body)
            c.server.store.commit([Write(("Node", "", node), body)])
        await c.server.settle()
        c.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                  "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}},
                           "template": {"metadata": {"labels": {"app": "web"}},
                                        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}})
        await c.server.settle()
        pods = [p for name, p in c.objects("Pod").items() if name.startswith("web-")]
        assert sum(1 for p in pods if not p["spec"].get("nodeName")) == 2
        assert {e["message"] for e in c.events("FailedScheduling")} == {FULL}
    run(tmp_path, scenario)
