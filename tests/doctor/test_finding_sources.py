"""Every doctor finding names the file its object was written in (issue 31): ``app.yaml:12`` in the text
report after the object, ``"source"`` in -o json/yaml; a chart's template file, a kustomization's base file; a
pod's finding names its workload's file; objects of no file (knetsim's defaults) name none."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import knetsim

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # sources are paths as the command line gave them


def findings(*args: str) -> dict[tuple[str, str], dict[str, Any]]:
    result = knetsim("doctor", *args, "-o", "json")
    assert result.exit_code in (0, 1), result.output
    return {(f["code"], f["subject"]): f for f in json.loads(result.stdout)["findings"]}


def line_of(path: Path | str, text: str, occurrence: int = 1) -> int:
    """The 1-based line of the ``occurrence``-th line of ``path`` equal to ``text``."""
    lines = [i for i, line in enumerate(Path(path).read_text().splitlines(), start=1) if line == text]
    return lines[occurrence - 1]


def test_a_finding_names_the_file_and_line_of_its_object_in_text_and_json() -> None:
    app = "examples/broken/wrong-targetport/app.yaml"
    where = f"{app}:{line_of(app, 'apiVersion: v1', 1)}"  # the Service is the file's second document
    assert Path(app).read_text().splitlines()[int(where.rsplit(':')[1])] == "kind: Service"
    got = findings("-f", "examples/broken/wrong-targetport")
    assert got[("TargetPortNotListening", "Service default/web")]["source"] == where
    text = knetsim("doctor", "-f", "examples/broken/wrong-targetport").output
    assert f"✗ ERROR   [listener] Service default/web ({where}): TargetPortNotListening" in text


def test_yaml_output_carries_the_source_too() -> None:
    import yaml

    result = knetsim("doctor", "-f", "examples/broken/wrong-targetport", "-o", "yaml")
    found = yaml.safe_load(result.stdout)["findings"]
    assert all("source" in f for f in found)
    assert any(str(f["source"]).startswith("examples/broken/wrong-targetport/app.yaml:") for f in found)


def test_an_admission_finding_names_the_file_and_line_not_only_evidence() -> None:
    got = findings("-f", "examples/broken/unknown-field")
    finding = got[("UnknownField", "Service default/web")]
    assert finding["source"] == "examples/broken/unknown-field/app.yaml:21"
    assert Path("examples/broken/unknown-field/app.yaml").read_text().splitlines()[20:22] == [
        "apiVersion: v1", "kind: Service"]
    assert finding["evidence"] == []  # said once, as the source


def test_a_pod_made_by_a_deployment_names_the_deployments_file(tmp_path: Path) -> None:
    app = tmp_path / "app.yaml"
    app.write_text("# a Deployment whose image has no such tag\n"
                   "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
                   "spec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n"
                   "  template:\n    metadata: {labels: {app: web}}\n"
                   "    spec: {containers: [{name: web, image: 'nginx:1.277'}]}\n")
    got = findings("-f", str(app))
    pulls = [f for (code, _), f in got.items() if code == "ImagePullError"]
    assert len(pulls) == 1 and pulls[0]["subject"].startswith("Pod default/web-")
    assert pulls[0]["source"] == f"{app}:2"


def test_a_snapshots_object_is_named_by_its_list_item(tmp_path: Path) -> None:
    got = findings("-f", "examples/snapshot")
    ingress = got[("IngressPathFails", "Ingress default/web")]
    line = int(ingress["source"].rsplit(":", 1)[1])
    assert ingress["source"].startswith("examples/snapshot/default.yaml:")
    assert Path("examples/snapshot/default.yaml").read_text().splitlines()[line - 1:line + 1] == [
        "- apiVersion: networking.k8s.io/v1", "  kind: Ingress"]


def test_objects_of_no_file_name_none() -> None:
    got = findings("-f", "examples/broken/wrong-targetport")
    assert got[("PodsNotIsolated", "Namespace default")]["source"] is None  # the built-in namespace
    text = knetsim("doctor", "-f", "examples/broken/wrong-targetport").output
    assert "i INFO    [policy] Namespace default: PodsNotIsolated" in text


def test_a_file_edited_since_is_not_given_a_line_of_another_object(tmp_path: Path) -> None:
    from knetsim.model.loader import Source
    from knetsim.sources.locate import describe

    app = tmp_path / "app.yaml"
    app.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: web}\n")
    assert describe(Source(str(app), 1), "Service", "web") == f"{app}:1"
    # The document there now is another object: the finding keeps file and document, never a wrong line.
    app.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n")
    assert describe(Source(str(app), 1), "Service", "web") == f"{app}, document 1"


def _helm_engine() -> bool:
    try:
        import helm_python  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return shutil.which("helm") is not None
    return True


@pytest.mark.skipif(not _helm_engine(), reason="no Helm engine: neither helm-python-sdk nor helm")
def test_a_charts_finding_names_the_template_file() -> None:
    # nginx serves on 80: a targetPort of 8080 on the web Service reaches nothing.
    got = findings("-f", "examples/helm/shop", "--set", "services[0].name=web,services[0].port=80,"
                   "services[0].targetPort=8080")
    finding = got[("TargetPortNotListening", "Service default/release-name-shop-web")]
    # The template renders each Service from one `range`: its rendered document, not a line of the template.
    assert finding["source"] == "examples/helm/shop/templates/services.yaml, document 1"


@pytest.mark.skipif(shutil.which("kustomize") is None and shutil.which("kubectl") is None,
                    reason="neither kustomize nor kubectl is installed")
def test_a_kustomizations_finding_names_the_base_file_and_line(tmp_path: Path) -> None:
    shutil.copytree("examples/kustomize", tmp_path / "kustomize")
    service = tmp_path / "kustomize" / "base" / "service.yaml"
    service.write_text("# the Service every overlay serves\n" + service.read_text().replace("targetPort: 80",
                                                                                         "targetPort: 8080"))
    got = findings("-k", str(tmp_path / "kustomize" / "overlays" / "prod"))
    finding = got[("TargetPortNotListening", "Service shop/prod-web")]
    assert finding["source"] == f"{tmp_path}/kustomize/overlays/prod -> {tmp_path}/kustomize/base/service.yaml:2"
