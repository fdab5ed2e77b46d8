"""Helm charts given with ``-f``: rendered as ``helm template`` renders them, by Helm's own engine (the
helm-python-sdk bindings of Helm v4, or the helm binary), with ``--values``, ``--set``, ``--release-name``, ``-n``.

The chart is examples/helm/shop: helpers (``_helpers.tpl``, ``include``), ``range`` over the services,
``toYaml | nindent``, a conditional NetworkPolicy, a ``required`` value and NOTES.txt.
"""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import knetsim

from knetsim.sources import HelmChart, HelmValues, render

ROOT = Path(__file__).resolve().parents[2]
CHART = "examples/helm/shop"


def _helm_engine() -> bool:
    try:
        import helm_python  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return shutil.which("helm") is not None
    return True


needs_helm = pytest.mark.skipif(not _helm_engine(), reason="no Helm engine: neither helm-python-sdk nor helm")


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)



def objects(*args: str) -> dict[str, dict[str, Any]]:
    result = knetsim("get", *args, "-o", "json")
    assert result.exit_code == 0, result.output
    return {f"{o['kind']} {o['metadata']['name']}": o for o in json.loads(result.stdout)["items"]}


@needs_helm
def test_helpers_range_and_to_yaml_render_as_helm_template_renders_them() -> None:
    got = objects("deployments,services,networkpolicies", "-f", CHART)
    web = got["Deployment release-name-shop-web"]  # helm template's release name when none is given
    assert "Deployment release-name-shop-api" in got and "Service release-name-shop-api" in got
    assert web["metadata"]["labels"] == {"app.kubernetes.io/instance": "release-name",
                                         "app.kubernetes.io/managed-by": "Helm", "team": "shop"}
    container = web["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"] == {"limits": {"cpu": "500m", "memory": "128Mi"}}  # toYaml | nindent
    assert container["image"] == "nginx:1.27"
    assert got["Service release-name-shop-api"]["spec"]["ports"][0]["port"] == 8080
    assert "NetworkPolicy release-name-shop-default-deny" in got


@needs_helm
def test_values_precedence_chart_values_then_values_files_then_set() -> None:
    def web(*flags: str) -> dict[str, Any]:
        return objects("deployments", "-f", CHART, *flags)["Deployment release-name-shop-web"]

    assert web()["spec"]["replicas"] == 1
    prod = web("--values", f"{CHART}/prod-values.yaml")
    assert prod["spec"]["replicas"] == 2
    # A values file merges into the chart's maps: image.repository stays, image.tag changes.
    assert prod["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27-alpine"
    both = web("--values", f"{CHART}/prod-values.yaml", "--set", "replicaCount=5,image.repository=httpd")
    assert both["spec"]["replicas"] == 5
    assert both["spec"]["template"]["spec"]["containers"][0]["image"] == "httpd:1.27-alpine"


@needs_helm
def test_later_values_files_win(tmp_path: Path) -> None:
    more = tmp_path / "more.yaml"
    more.write_text("replicaCount: 7\n")
    got = objects("deployments", "-f", CHART, "--values", f"{CHART}/prod-values.yaml", "--values", str(more))
    assert got["Deployment release-name-shop-web"]["spec"]["replicas"] == 7


@needs_helm
def test_release_name_and_namespace() -> None:
    got = objects("deployments", "-f", CHART, "--release-name", "blue", "-n", "shop")
    assert got["Deployment blue-shop-web"]["metadata"]["namespace"] == "shop"
    loaded = HelmChart(CHART, HelmValues(release_name="blue"), "shop").read().loaded
    assert not loaded.errors
    assert {d.describe() for d in loaded.documents} >= {"Deployment blue-shop-web", "Service blue-shop-api"}


@needs_helm
def test_each_object_is_named_by_its_template_file_notes_and_helpers_are_not_objects() -> None:
    loaded = HelmChart(CHART).read().loaded
    where = {d.describe(): str(d.source) for d in loaded.documents}
    assert where["Deployment release-name-shop-web"] == f"{CHART}/templates/deployments.yaml, document 1"
    assert where["Deployment release-name-shop-api"] == f"{CHART}/templates/deployments.yaml, document 2"
    assert where["NetworkPolicy release-name-shop-default-deny"] == f"{CHART}/templates/networkpolicy.yaml, document 1"
    assert not any("NOTES" in w or "_helpers" in w for w in where.values())


@needs_helm
def test_an_admission_error_names_the_template_file() -> None:
    result = knetsim("validate", "-f", CHART, "--set", "services[0].name=web,services[0].port=0")
    assert result.exit_code == 2
    assert (f"error: {CHART}/templates/services.yaml, document 1: Service default/release-name-shop-web: "
            "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive") in result.output
    assert (f"error: {CHART}/templates/deployments.yaml, document 1: Deployment default/release-name-shop-web: "
            "spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 0:") in result.output


@needs_helm
def test_a_required_value_names_chart_template_and_line() -> None:
    result = knetsim("validate", "-f", CHART, "--set", "db.enabled=true")
    assert result.exit_code == 2
    assert (f"error: chart {CHART}: execution error at (shop/templates/db.yaml:10:13): "
            "db.port is required when db.enabled is true") in result.output


@needs_helm
def test_a_template_error_names_chart_template_and_line(tmp_path: Path) -> None:
    chart = tmp_path / "bad"
    shutil.copytree(CHART, chart)
    (chart / "templates" / "broken.yaml").write_text("kind: ConfigMap\n{{ .Values.labels | nosuchfunc }}\n")
    result = knetsim("doctor", "-f", str(chart))
    assert result.exit_code == 2
    assert (f"error: chart {chart}: parse error at (shop/templates/broken.yaml:2): "
            'function "nosuchfunc" not defined') in result.output


@needs_helm
def test_a_packaged_chart_renders_too(tmp_path: Path) -> None:
    archive = tmp_path / "shop-0.1.0.tgz"
    with tarfile.open(archive, "w:gz") as tgz:
        tgz.add(CHART, arcname="shop")
    assert render.is_chart(str(archive))
    loaded = HelmChart(str(archive)).read().loaded
    where = {d.describe(): str(d.source) for d in loaded.documents}
    assert where["Service release-name-shop-web"] == f"{archive}:shop/templates/services.yaml, document 1"


@needs_helm
def test_a_directory_holding_a_chart_and_manifests_renders_the_chart_and_reads_the_rest(tmp_path: Path) -> None:
    shutil.copytree(CHART, tmp_path / "charts" / "shop")
    (tmp_path / "client.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: client}\nspec: {containers: [{name: c, image: busybox}]}\n")
    got = objects("pods,deployments", "-f", str(tmp_path))
    assert "Pod client" in got and "Deployment release-name-shop-web" in got


def test_without_a_helm_engine_the_error_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_sdk() -> Any:
        raise render._NoEngine

    monkeypatch.setattr(render, "_helm_sdk", no_sdk)
    monkeypatch.setenv("PATH", str(tmp_path))
    result = knetsim("validate", "-f", CHART)
    assert result.exit_code == 2
    assert (f"error: cannot render the Helm chart {CHART}: no Helm engine is installed; install Helm's engine: "
            "`pip install 'knetsim[helm]'`") in result.output


def test_a_values_file_that_does_not_exist_exit_2() -> None:
    result = knetsim("validate", "-f", CHART, "--values", "nope.yaml")
    assert result.exit_code == 2
    assert f"error: chart {CHART}: --values nope.yaml: No such file or directory" in result.output


@needs_helm
def test_a_subchart_renders_by_its_condition_and_is_named_by_its_own_template(tmp_path: Path) -> None:
    parent = tmp_path / "parent"
    sub = parent / "charts" / "sub"
    (sub / "templates").mkdir(parents=True)
    (parent / "Chart.yaml").write_text("apiVersion: v2\nname: parent\nversion: 0.1.0\ndependencies:\n"
                                       "- {name: sub, version: 0.1.0, condition: sub.enabled}\n")
    (parent / "values.yaml").write_text("sub: {enabled: false, port: 81}\n")  # a parent's values reach the subchart
    (sub / "Chart.yaml").write_text("apiVersion: v2\nname: sub\nversion: 0.1.0\n")
    (sub / "values.yaml").write_text("port: 80\n")
    (sub / "templates" / "svc.yaml").write_text(
        "apiVersion: v1\nkind: Service\nmetadata: {name: '{{ .Release.Name }}-sub'}\n"
        "spec: {ports: [{port: {{ .Values.port }}}]}\n")
    assert HelmChart(str(parent)).read().loaded.documents == []
    loaded = HelmChart(str(parent), HelmValues(set=("sub.enabled=true",))).read().loaded
    assert [(d.describe(), str(d.source)) for d in loaded.documents] == [
        ("Service release-name-sub", f"{parent}/charts/sub/templates/svc.yaml, document 1")]
    assert loaded.documents[0].body["spec"]["ports"] == [{"port": 81}]


@needs_helm
def test_a_dependency_missing_from_charts_is_refused_in_helms_words(tmp_path: Path) -> None:
    chart = tmp_path / "app"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: app\nversion: 0.1.0\n"
                                      "dependencies:\n- {name: redis, version: 1.0.0}\n")
    result = knetsim("validate", "-f", str(chart))
    assert result.exit_code == 2
    assert f"error: chart {chart}: found in Chart.yaml, but missing in charts/ directory: redis" in result.output


@needs_helm
def test_values_that_break_the_charts_schema_are_refused_in_helms_words(tmp_path: Path) -> None:
    chart = tmp_path / "shop"
    shutil.copytree(CHART, chart)
    (chart / "values.schema.json").write_text(
        '{"type": "object", "properties": {"replicaCount": {"type": "integer", "minimum": 1}}}')
    result = knetsim("validate", "-f", str(chart), "--set", "replicaCount=0")
    assert result.exit_code == 2
    assert f"error: chart {chart}: values don't meet the specifications of the schema(s)" in result.output
    assert "at '/replicaCount': minimum: got 0, want 1" in result.output


@needs_helm
def test_set_string_keeps_a_value_a_string_that_set_would_make_a_number() -> None:
    # --set types what it reads (helm's strvals): a label value 123 is an int, which the API server cannot decode.
    typed = knetsim("validate", "-f", CHART, "--set", "labels.team=123")
    assert typed.exit_code == 2
    assert "cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string" in typed.output
    web = objects("deployments", "-f", CHART, "--set-string", "labels.team=123")["Deployment release-name-shop-web"]
    assert web["metadata"]["labels"]["team"] == "123"


@needs_helm
def test_set_string_wins_over_set_whatever_their_order() -> None:
    # helm's MergeValues applies every --set, then every --set-string (pkg/cli/values/options.go).
    web = objects("deployments", "-f", CHART, "--set-string", "labels.team=ops",
                  "--set", "labels.team=dev")["Deployment release-name-shop-web"]
    assert web["metadata"]["labels"]["team"] == "ops"


@needs_helm
def test_set_file_sets_a_value_to_the_content_of_a_file(tmp_path: Path) -> None:
    team = tmp_path / "team.txt"
    team.write_text("payments")
    web = objects("deployments", "-f", CHART, "--set-file", f"labels.team={team}",
                  "--set-string", "labels.team=ops")["Deployment release-name-shop-web"]
    assert web["metadata"]["labels"]["team"] == "payments"  # --set-file comes last, as in helm


@needs_helm
def test_a_set_file_that_cannot_be_read_exit_2_in_helms_words() -> None:
    result = knetsim("validate", "-f", CHART, "--set-file", "labels.team=nope.txt")
    assert result.exit_code == 2
    assert (f"error: chart {CHART}: failed parsing --set-file data: open nope.txt: no such file or directory"
            in result.output)


def test_the_helm_binary_is_given_set_string_and_set_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without the SDK, helm itself parses the value flags: they are passed on as the user wrote them. The stand-in
    # helm prints a ConfigMap holding the arguments it was given.
    def no_sdk() -> Any:
        raise render._NoEngine

    monkeypatch.setattr(render, "_helm_sdk", no_sdk)
    helm = tmp_path / "helm"
    helm.write_text('#!/bin/sh\nprintf -- "---\\n# Source: shop/templates/args.yaml\\napiVersion: v1\\n'
                    'kind: ConfigMap\\nmetadata: {name: args}\\ndata: {args: \\"%s\\"}\\n" "$*"\n')
    helm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    values = HelmValues(set=("a=1",), set_string=("b=2",), set_file=("c=f.txt",))
    loaded = HelmChart(CHART, values).read().loaded
    assert not loaded.errors
    assert loaded.documents[0].body["data"]["args"] == (
        f"template release-name {CHART} --namespace default --set a=1 --set-string b=2 --set-file c=f.txt")
