"""The live cluster runs the Kubernetes version it is started as, and the real kubectl sees it.

Two clusters: 1.33 chosen by the cluster config's ``kubernetesVersion`` (kubectl's dispatcher on the test
machines then runs its kubectl.1.33: a second real client), 1.38 by ``knetsim up --kubernetes-version``. Each
admits, warns of, reports (``kubectl version``) and serves discovery as that version's API server
(model/versions.py, docs/versions.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from .conftest import Live

pytestmark = pytest.mark.live  # starts a cluster of its own

V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

LEGACY_SERVICE = """
apiVersion: v1
kind: Service
metadata: {name: legacy}
spec:
  selector: {app: legacy}
  ports: [{port: 80}]
  externalIPs: ["010.0.0.5"]
  trafficDistribution: PreferClose
"""
DIGIT_NAME = """
apiVersion: v1
kind: Service
metadata: {name: 2048-game}
spec:
  selector: {app: game}
  ports: [{port: 80}]
"""


def knetsim(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-m", "knetsim.cli.main", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def start(base: Path, *args: str) -> Live:
    state, home = base / "state", base / "home"
    home.mkdir(parents=True)
    up = knetsim("up", "--state", str(state), "--port", "0", *args)
    assert up.returncode == 0, up.stderr
    info = json.loads((state / "ready.json").read_text())
    # The daemon is `knetsim up`'s, detached; `knetsim down` stops it.
    return Live(state, home, cast(Any, None), info)


@pytest.fixture(scope="module")
def v133(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    base = tmp_path_factory.mktemp("v133")
    config = base / "cluster.yaml"
    config.write_text('kubernetesVersion: "1.33"\n')
    live = start(base, "--cluster-config", str(config))
    try:
        yield live
    finally:
        knetsim("down", "--state", str(live.state))


@pytest.fixture(scope="module")
def v138(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    live = start(tmp_path_factory.mktemp("v138"), "--kubernetes-version", "1.38")
    try:
        yield live
    finally:
        knetsim("down", "--state", str(live.state))


def test_up_says_which_version_runs_and_kubectl_version_reports_it(v133: Live, v138: Live) -> None:
    for live, minor in ((v133, "33"), (v138, "38")):
        assert live.info["cluster"]["kubernetesVersion"] == f"1.{minor}"
        server = json.loads(live.kubectl("version", "-o", "json").stdout)["serverVersion"]
        assert (server["major"], server["minor"], server["gitVersion"]) == ("1", minor, f"v1.{minor}.0")
        assert f"Server Version: v1.{minor}.0\n" in live.kubectl("version").stdout
        # The nodes' kubelets and kube-proxy are that release too (`kubectl get nodes` VERSION).
        nodes = json.loads(live.kubectl("get", "nodes", "-o", "json").stdout)["items"]
        assert {n["status"]["nodeInfo"]["kubeletVersion"] for n in nodes} == {f"v1.{minor}.0"}
        proxy = json.loads(live.kubectl("get", "daemonset", "kube-proxy", "-n", "kube-system", "-o", "json").stdout)
        assert proxy["spec"]["template"]["spec"]["containers"][0]["image"] == f"registry.k8s.io/kube-proxy:v1.{minor}.0"
    status = knetsim("status", "--state", str(v133.state))
    assert "# Kubernetes  1.33" in status.stdout


def test_a_leading_zero_address_is_admitted_with_a_warning_on_1_33_and_refused_on_1_38(v133: Live,
                                                                                     v138: Live) -> None:
    old = v133.kubectl("apply", "-f", "-", input=LEGACY_SERVICE)
    assert "service/legacy created" in old.stdout
    assert ('Warning: spec.externalIPs[0]: non-standard IP address "010.0.0.5" will be considered invalid in a '
            'future Kubernetes release: use "10.0.0.5"') in old.stderr
    # Neither deprecation is 1.33's: PreferClose (1.35) and externalIPs (1.36).
    assert "deprecated" not in old.stderr
    stored = json.loads(v133.kubectl("get", "service", "legacy", "-o", "json").stdout)
    assert stored["spec"]["externalIPs"] == ["10.0.0.5"]  # read as every reader reads it (decimal)

    new = v138.kubectl("apply", "-f", "-", input=LEGACY_SERVICE, check=False)
    assert new.returncode == 1
    assert 'spec.externalIPs[0]: Invalid value: "010.0.0.5": must not have leading 0s' in new.stderr


def test_1_38_warns_of_externalips_and_preferclose_as_kubectl_prints_them(v138: Live) -> None:
    created = v138.kubectl("apply", "-f", "-", input=LEGACY_SERVICE.replace("010.0.0.5", "10.0.0.5"))
    assert "service/legacy created" in created.stdout
    assert 'Warning: spec.trafficDistribution: "PreferClose" is deprecated; use "PreferSameZone"' in created.stderr
    assert "Warning: spec.externalIPs is deprecated" in created.stderr
    # An update that keeps them draws them again (WarningsOnUpdate).
    updated = v138.kubectl("label", "service", "legacy", "tier=web")
    assert "Warning: spec.externalIPs is deprecated" in updated.stderr


def test_a_service_name_that_starts_with_a_digit_is_1_38s_not_1_33s(v133: Live, v138: Live) -> None:
    refused = v133.kubectl("apply", "-f", "-", input=DIGIT_NAME, check=False)
    assert refused.returncode == 1 and "a DNS-1035 label must consist of" in refused.stderr
    assert "service/2048-game created" in v138.kubectl("apply", "-f", "-", input=DIGIT_NAME).stdout


def test_discovery_as_each_version_serves_it(v133: Live, v138: Live) -> None:
    for live in (v133, v138):
        assert "networkpolicies" in live.kubectl("api-resources").stdout
        plain = json.loads(live.kubectl("get", "--raw", "/apis").stdout)
        assert plain["kind"] == "APIGroupList"
        missing = live.kubectl("get", "--raw", "/apis/no.such.group/v1", check=False)
        assert missing.returncode == 1
        assert "Error from server (NotFound): the server could not find the requested resource" in missing.stderr
        code, body = live.request("GET", "/apis", headers={"Accept": V2})
        assert (code, body["apiVersion"]) == (200, "apidiscovery.k8s.io/v2")
        code, body = live.request("GET", "/apis", headers={"Accept": "application/json;drop=metadata.managedFields"})
        assert (code, body["kind"]) == (200, "APIGroupList")
    code, body = v133.request("GET", "/apis", headers={"Accept": V2BETA1})
    assert (code, body["apiVersion"]) == (200, "apidiscovery.k8s.io/v2beta1")
    code, body = v138.request("GET", "/apis", headers={"Accept": V2BETA1})
    assert (code, body["kind"], body["reason"]) == (406, "Status", "NotAcceptable")


def test_up_refuses_another_version_over_a_running_cluster_and_an_unknown_version(v133: Live,
                                                                                tmp_path: Path) -> None:
    again = knetsim("up", "--state", str(v133.state), "--kubernetes-version", "1.38")
    assert again.returncode == 2 and again.stdout == ""
    assert "is running Kubernetes 1.33" in again.stderr and "knetsim down" in again.stderr
    unknown = knetsim("up", "--state", str(tmp_path / "s"), "--kubernetes-version", "1.30")
    assert unknown.returncode == 2
    assert "unsupported Kubernetes version '1.30': knetsim simulates 1.33 to 1.38" in unknown.stderr
    config = tmp_path / "bad.yaml"
    config.write_text("kubernetesVersion: v1.39\n")
    bad = knetsim("up", "--state", str(tmp_path / "t"), "--cluster-config", str(config))
    assert bad.returncode == 2 and f"{config}: kubernetesVersion: unsupported Kubernetes version" in bad.stderr


def kubectl_binaries() -> dict[str, str]:
    """The real kubectl builds on this machine beside the Google Cloud SDK's dispatcher (kubectl.1.31 ...)."""
    import shutil

    found = shutil.which("kubectl")
    if found is None:
        return {}
    folder = Path(found).resolve().parent
    return {minor: str(folder / f"kubectl.{minor}") for minor in ("1.31", "1.32", "1.33")
            if (folder / f"kubectl.{minor}").exists()}


@pytest.mark.parametrize("client", ["1.31", "1.32", "1.33"])
def test_each_installed_kubectl_discovers_and_writes_on_both_versions(v133: Live, v138: Live, client: str,
                                                                     tmp_path: Path) -> None:
    binary = kubectl_binaries().get(client)
    if binary is None:
        pytest.skip(f"kubectl.{client} is not installed")
    for live in (v133, v138):
        cache = tmp_path / f"cache-{live.info['cluster']['kubernetesVersion']}"

        def run(*args: str, stdin: str | None = None, cache: Path = cache,
                live: Live = live) -> subprocess.CompletedProcess[str]:
            return subprocess.run([binary, "--cache-dir", str(cache), *args], input=stdin, capture_output=True,
                                  text=True, env=live.env(), timeout=60)

        resources = run("api-resources", "-v=6")
        assert resources.returncode == 0, resources.stderr
        assert "networkpolicies" in resources.stdout
        # Every discovery request answered 200: nothing this client asks for is refused or missing. (1.33 logs
        # `"Response" verb="GET" url=... status="200 OK"`, older clients `GET https://... 200 OK`.)
        discovery = [line for line in resources.stderr.splitlines() if "https://" in line and "GET" in line
                     and ("/api?" in line or "/apis?" in line)]
        assert len(discovery) >= 2 and all("200 OK" in line for line in discovery), resources.stderr
        name = f"from-kubectl-{client.replace('.', '-')}"
        applied = run("apply", "-f", "-", stdin=f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\n")
        assert applied.returncode == 0 and f"configmap/{name} created" in applied.stdout, applied.stderr
        server = json.loads(run("version", "-o", "json").stdout)["serverVersion"]
        assert server["gitVersion"] == f"v{live.info['cluster']['kubernetesVersion']}.0"


def test_a_config_that_changes_only_the_version_upgrades_the_cluster_instead_of_being_refused(
        tmp_path: Path) -> None:
    from knetsim.cluster.config import ConfigError
    from knetsim.daemon.clusterconfig import adopt, check

    state = tmp_path / "state"
    state.mkdir()
    first = tmp_path / "first.yaml"
    first.write_text('dataplane: nftables\nkubernetesVersion: "1.35"\n')
    assert adopt(state, str(first)).config.kubernetes_version == "1.35"
    upgraded = tmp_path / "upgraded.yaml"
    upgraded.write_text('dataplane: nftables\nkubernetesVersion: "1.38"\n')
    in_force = adopt(state, str(upgraded))
    assert (in_force.config.dataplane, in_force.config.kubernetes_version) == ("nftables", "1.38")
    reshaped = tmp_path / "reshaped.yaml"
    reshaped.write_text('dataplane: iptables\nkubernetesVersion: "1.38"\n')
    with pytest.raises(ConfigError, match="nodes, address ranges and data plane are fixed"):
        check(state, str(reshaped))
