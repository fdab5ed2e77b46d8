"""The doctor's fixes, applied as a user would apply them: the printed `kubectl patch` run by the real kubectl
(`--local`, on the manifest), then the doctor run again on the result, which must be clean."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from tests.conftest import EXAMPLES
from tests.doctor.scenarios import NAME_LABEL

from knetsim.cli.main import cli

BROKEN = EXAMPLES / "broken"
needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


def example(name: str) -> str:
    return "\n---\n".join(p.read_text() for p in sorted((BROKEN / name).glob("*.yaml")))


def doctor(text: str, tmp_path: Path) -> tuple[int, dict]:
    path = tmp_path / "objects.yaml"
    path.write_text(text)
    result = CliRunner().invoke(cli, ["doctor", "-f", str(path), "-o", "json"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.output)


def finding(report: dict, code: str) -> dict:
    found = [f for f in report["findings"] if f["code"] == code]
    assert found, [f["code"] for f in report["findings"]]
    return found[0]


def apply_with_kubectl(text: str, command: str, tmp_path: Path) -> str:
    """Run the printed `kubectl -n NS patch RESOURCE NAME --type=T -p BODY` with --local on the object it names."""
    args = shlex.split(command)
    assert args[:1] == ["kubectl"] and "patch" in args, command
    namespace = args[args.index("-n") + 1]
    at = args.index("patch")
    resource, name = args[at + 1], args[at + 2]
    patch_type = next(a for a in args if a.startswith("--type="))
    body = args[args.index("-p") + 1]
    docs = [d for d in yaml.safe_load_all(text) if d]
    index = next(i for i, d in enumerate(docs) if d["kind"].lower() == resource and d["metadata"]["name"] == name
                 and d["metadata"].get("namespace", "default") == namespace)
    target = tmp_path / "target.yaml"
    target.write_text(yaml.safe_dump(docs[index]))
    done = subprocess.run(["kubectl", "patch", "--local", "-f", str(target), "-o", "yaml", patch_type, "-p", body],
                          capture_output=True, text=True, check=False, env={"KUBECONFIG": "/dev/null",
                                                                             "PATH": "/usr/local/bin:/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    docs[index] = yaml.safe_load(done.stdout)
    return yaml.safe_dump_all(docs)


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{name: web, containerPort: 80}]
"""
SERVICE = """
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 80}]
"""


def objects(deployment: str = DEPLOYMENT, service: str = SERVICE) -> str:
    return deployment + "---\n" + service


# (break, the broken objects, the finding the printed patch must clear)
CLASSIC_BREAKS = [
    ("selector-typo", example("selector-typo"), "SelectorMatchesNothing"),
    # The key is wrong, not the value: a strategic merge patch would keep `appp` and still select nothing.
    ("selector-wrong-key", objects(service=SERVICE.replace("selector: {app: web}", "selector: {appp: web}")),
     "SelectorMatchesNothing"),
    ("wrong-targetport", example("wrong-targetport"), "TargetPortNotListening"),
    ("named-port-mismatch", objects(service=SERVICE.replace("targetPort: 80", "targetPort: http")),
     "NamedPortMissing"),
    ("not-ready-pods", objects(DEPLOYMENT.replace("        ports: [{name: web, containerPort: 80}]",
                                                  "        ports: [{name: web, containerPort: 80}]\n"
                                                  "        readinessProbe: {tcpSocket: {port: 8080}}")),
     "PodsNotReady"),
    ("wrong-namespace-dns-name", example("wrong-namespace"), "ShortNameOtherNamespace"),
]


@needs_kubectl
@pytest.mark.parametrize(("name", "text", "code"), CLASSIC_BREAKS, ids=[c[0] for c in CLASSIC_BREAKS])
def test_the_printed_patch_applied_by_kubectl_fixes_the_break(name: str, text: str, code: str,
                                                              tmp_path: Path) -> None:
    exit_code, report = doctor(text, tmp_path)
    assert exit_code == 1
    fix = finding(report, code)["fix"]
    assert fix.startswith("kubectl -n ") and "--type=" in fix, fix
    repaired = apply_with_kubectl(text, fix, tmp_path)
    exit_code, after = doctor(repaired, tmp_path)
    assert exit_code == 0, [(f["code"], f["message"]) for f in after["findings"] if f["severity"] == "error"]
    assert code not in {f["code"] for f in after["findings"]}


def test_a_selector_fix_that_points_at_pods_which_do_not_listen_is_not_offered(tmp_path: Path) -> None:
    # app=wbe is a typo of app=web, but the web pods listen on 80 and the Service sends to 8080: changing the
    # selector alone leaves the Service refusing every connection.
    text = objects(service=SERVICE.replace("selector: {app: web}", "selector: {app: wbe}")
                   .replace("targetPort: 80", "targetPort: 8080"))
    _, report = doctor(text, tmp_path)
    selector = finding(report, "SelectorMatchesNothing")
    assert "patch" not in selector["fix"] and "targetPort" in selector["fix"]
    assert "patch" not in selector
    assert any("not offered" in e and "TargetPortNotListening" in e for e in selector["evidence"])


def test_a_target_port_fix_is_not_offered_when_the_pods_listen_on_different_ports(tmp_path: Path) -> None:
    other = DEPLOYMENT.replace("name: web}", "name: web2}").replace("app: web}", "app: web2}").replace(
        "image: nginx:1.27", "image: registry.k8s.io/e2e-test-images/agnhost:2.53\n        args: [netexec, "
        "--http-port=9000]").replace("containerPort: 80", "containerPort: 9000")
    service = SERVICE.replace("selector: {app: web}", "selector: {tier: front}").replace("targetPort: 80",
                                                                                        "targetPort: 8080")
    text = (objects(DEPLOYMENT.replace("labels: {app: web}", "labels: {app: web, tier: front}"), service) + "---\n"
            + other.replace("labels: {app: web2}", "labels: {app: web2, tier: front}"))
    _, report = doctor(text, tmp_path)
    deaf = finding(report, "TargetPortNotListening")
    assert "patch" not in deaf["fix"] and "patch" not in deaf


@needs_kubectl
def test_a_name_namespace_label_is_diagnosed_and_its_patch_lets_the_traffic_in(tmp_path: Path) -> None:
    from knetsim import Cluster

    _, report = doctor(NAME_LABEL, tmp_path)
    found = finding(report, "NamespaceSelectorMatchesNothing")
    assert found["subject"] == "NetworkPolicy backend/api-from-frontend"
    assert "namespace frontend exists but has no label name=frontend" in found["message"]
    assert "kubernetes.io/metadata.name=frontend" in found["message"]
    api_ip = Cluster.from_yaml(NAME_LABEL).state.pods["backend/api"].pod_ip
    assert Cluster.from_yaml(NAME_LABEL).trace("frontend/web", f"{api_ip}:80").outcome != "connected"
    repaired = apply_with_kubectl(NAME_LABEL, found["fix"].splitlines()[0], tmp_path)
    _, after = doctor(repaired, tmp_path)
    assert "NamespaceSelectorMatchesNothing" not in {f["code"] for f in after["findings"]}
    assert Cluster.from_yaml(repaired).trace("frontend/web", f"{api_ip}:80").outcome == "connected"


@pytest.mark.parametrize(("name", "text", "code"), CLASSIC_BREAKS, ids=[c[0] for c in CLASSIC_BREAKS])
def test_no_fix_is_a_strategic_merge_patch(name: str, text: str, code: str, tmp_path: Path) -> None:
    # A traced client's fix is its Service's verified patch, never the trace's own strategic merge.
    _, report = doctor(text, tmp_path)
    patches = [f["fix"] for f in report["findings"] if " patch " in f["fix"] and "kubectl" in f["fix"]]
    assert patches and all("--type=" in fix for fix in patches), patches
