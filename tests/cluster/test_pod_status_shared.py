"""The pods of equal templates share one containers list (cluster.workloads.expand_workloads), and what pod_status
reads of that list alone is judged once per list. What depends on the pod (its namespace's ConfigMaps, its
annotations) must still be judged per pod: a verdict of one pod never leaks into another's."""

from __future__ import annotations

import yaml
from click.testing import CliRunner
from tests.conftest import cluster_from

from knetsim.cli.main import cli


def _deployment(namespace: str) -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: {namespace}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        env: [{{name: MODE, valueFrom: {{configMapKeyRef: {{name: settings, key: mode}}}}}}]
"""


def _settings(namespace: str, data: str) -> str:
    return f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: settings, namespace: {namespace}}}
data: {data}
"""


PLAIN = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: plain, namespace: %s}
spec:
  replicas: 2
  selector: {matchLabels: {app: plain}}
  template:
    metadata: {labels: {app: plain}}
    spec:
      containers: [{name: app, image: nginx:1.27}]
"""


def _waiting(cluster, namespace: str, prefix: str) -> set[str]:  # type: ignore[no-untyped-def]
    return {str(((cs.get("state") or {}).get("waiting") or {}).get("reason") or "running")
            for p in cluster.state.pods.values() if p.namespace == namespace and p.name.startswith(prefix)
            for cs in p.raw["status"]["containerStatuses"]}


def test_a_config_error_of_one_namespace_does_not_reach_the_pods_of_an_equal_template_elsewhere() -> None:
    text = "---".join([_deployment("a"), _deployment("b"), _deployment("c"),
                       _settings("a", "{other: x}"), _settings("b", "{mode: fast}"), _settings("c", "{other: y}")])
    cluster = cluster_from(text)
    assert _waiting(cluster, "a", "web-") == {"CreateContainerConfigError"}
    assert _waiting(cluster, "b", "web-") == {"running"}
    assert _waiting(cluster, "c", "web-") == {"CreateContainerConfigError"}
    ready = {p.namespace: p.ready for p in cluster.state.pods.values() if p.name.startswith("web-")}
    assert ready == {"a": False, "b": True, "c": False}


def test_plain_containers_run_ready_and_a_readiness_annotation_is_read_per_pod() -> None:
    unready = PLAIN.replace("{labels: {app: plain}}",
                            '{labels: {app: plain}, annotations: {knetsim.io/ready: "false"}}')
    text = PLAIN % "a" + "---" + unready % "b"
    cluster = cluster_from(text)
    assert _waiting(cluster, "a", "plain-") == _waiting(cluster, "b", "plain-") == {"running"}
    ready = {(p.namespace, p.ready) for p in cluster.state.pods.values() if p.name.startswith("plain-")}
    assert ready == {("a", True), ("b", False)}


def test_pods_of_one_containers_list_print_their_whole_status_each() -> None:
    # Their ready conditions and container statuses are one pair of lists in the build: printed, each pod shows them
    # in full (no YAML anchor and alias), as kubectl does.
    result = CliRunner().invoke(cli, ["get", "pods", "-n", "a", "-o", "yaml", "-f", "-"], input=PLAIN % "a")
    assert result.exit_code == 0, result.output
    items = yaml.safe_load(result.stdout)["items"]
    assert len(items) == 2 and "&id" not in result.output and "*id" not in result.output
    for item in items:
        assert [c["type"] for c in item["status"]["conditions"]] == [
            "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
        assert item["status"]["containerStatuses"][0]["ready"] is True
