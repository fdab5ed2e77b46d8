"""ReplicationController (core/v1), the kind Kubernetes' e2e Service jig makes its backends with.

Restated from test/e2e/apps/rc.go "ReplicationController should serve a basic image on each replica with a public
image [Conformance]": an RC of agnhost serve-hostname, each replica reached through the API server's pod proxy
answers its own name. Then the lifecycle a user drives with kubectl: scale through the scale subresource, delete
(kubectl's Background cascade takes the pods; an API delete without a policy orphans them, as core/v1 RCs do for
compatibility). Offline: defaulting, validation and `get` as the API server and kubectl do them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from tests.live import Live, wait_for

from knetsim import Cluster
from knetsim.cli.main import cli

RC = """
apiVersion: v1
kind: ReplicationController
metadata: {name: my-hostname-basic, namespace: default}
spec:
  replicas: 2
  template:
    metadata: {labels: {name: my-hostname-basic}}
    spec:
      containers:
      - name: my-hostname-basic
        image: registry.k8s.io/e2e-test-images/agnhost:2.53
        args: [serve-hostname]
        ports: [{containerPort: 9376}]
"""


def _pods(live: Live) -> list[dict]:
    out = live.kubectl("get", "pods", "-l", "name=my-hostname-basic", "-o", "json").stdout
    return [p for p in json.loads(out)["items"] if not p["metadata"].get("deletionTimestamp")]


def test_each_replica_serves_its_own_name(live: Live) -> None:
    live.kubectl("apply", "-f", "-", input=RC)
    pods = wait_for(lambda: [p for p in _pods(live) if p.get("status", {}).get("phase") == "Running"]
                    if len(_pods(live)) == 2 else None, timeout=30)
    assert pods and len(pods) == 2
    for pod in pods:
        name = pod["metadata"]["name"]
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "ReplicationController"
        assert pod["metadata"]["ownerReferences"][0]["apiVersion"] == "v1"
        answer = live.kubectl("get", "--raw", f"/api/v1/namespaces/default/pods/{name}:9376/proxy/").stdout
        assert answer == name
    row = live.kubectl("get", "rc", "my-hostname-basic", "-o", "wide", "--no-headers").stdout.split()
    assert row[:4] == ["my-hostname-basic", "2", "2", "2"] and row[-1] == "name=my-hostname-basic"


def test_scale_and_delete_with_kubectl(live: Live) -> None:
    live.kubectl("apply", "-f", "-", input=RC.replace("my-hostname-basic", "scaled"))
    live.kubectl("scale", "rc", "scaled", "--replicas=3")
    assert wait_for(lambda: len(_named(live, "scaled")) == 3, timeout=30)
    scale = json.loads(live.kubectl("get", "--raw",
                                    "/api/v1/namespaces/default/replicationcontrollers/scaled/scale").stdout)
    assert scale["spec"]["replicas"] == 3 and scale["status"]["selector"] == "name=scaled"
    live.kubectl("delete", "rc", "scaled")
    assert wait_for(lambda: not _named(live, "scaled"), timeout=30)


def _named(live: Live, name: str) -> list[dict]:
    out = live.kubectl("get", "pods", "-l", f"name={name}", "-o", "json").stdout
    return [p for p in json.loads(out)["items"] if not p["metadata"].get("deletionTimestamp")]


def test_an_api_delete_without_a_policy_orphans_the_pods(live: Live) -> None:
    live.kubectl("apply", "-f", "-", input=RC.replace("my-hostname-basic", "orphaning"))
    assert wait_for(lambda: len(_named(live, "orphaning")) == 2, timeout=30)
    code, _ = live.request("DELETE", "/api/v1/namespaces/default/replicationcontrollers/orphaning")
    assert code == 200
    assert wait_for(lambda: live.kubectl("get", "rc", "orphaning", check=False).returncode != 0, timeout=30)
    pods = _named(live, "orphaning")
    assert len(pods) == 2 and all(not p["metadata"].get("ownerReferences") for p in pods)


def test_offline_defaults_and_get() -> None:
    cluster = Cluster.from_yaml(RC)
    rc = cluster.state.workloads[("ReplicationController", "default/my-hostname-basic")].raw
    # SetDefaults_ReplicationController: the template's labels become the selector and the RC's labels.
    assert rc["spec"]["selector"] == {"name": "my-hostname-basic"}
    assert rc["metadata"]["labels"] == {"name": "my-hostname-basic"}
    assert rc["status"]["readyReplicas"] == 2
    owners = [p.meta.owner.kind for p in cluster.state.pods.values() if p.name.startswith("my-hostname-basic-")]
    assert owners == ["ReplicationController", "ReplicationController"]


def test_offline_a_selector_the_template_does_not_match_is_refused(tmp_path: Path) -> None:
    bad = yaml.safe_load(RC)
    bad["spec"]["selector"] = {"name": "other"}
    path = tmp_path / "rc.yaml"
    path.write_text(yaml.safe_dump(bad))
    result = CliRunner().invoke(cli, ["validate", "-f", str(path)])
    assert result.exit_code != 0
    assert ('spec.template.metadata.labels: Invalid value: map[string]string{"name":"my-hostname-basic"}: '
            "`selector` does not match template `labels`") in result.output


@pytest.mark.parametrize("name", ["rc", "replicationcontroller", "replicationcontrollers"])
def test_knetsim_get_knows_the_kind_by_every_name(name: str, tmp_path: Path) -> None:
    path = tmp_path / "rc.yaml"
    path.write_text(RC)
    result = CliRunner().invoke(cli, ["get", name, "-f", str(path)])
    assert result.exit_code == 0 and "my-hostname-basic   2         2         2" in result.output
