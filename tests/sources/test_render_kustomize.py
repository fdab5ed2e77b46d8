"""``-k DIR``: a kustomization rendered by Kustomize itself (the ``kustomize`` binary, else ``kubectl kustomize``),
each object named by the base or overlay file it came from.

The overlay is examples/kustomize/overlays/prod: a base with a Deployment and a Service, namePrefix, namespace,
a configMapGenerator (hash suffix), a strategic-merge patch and a JSON 6902 patch.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import knetsim

from knetsim.cli.main import cli
from knetsim.sources import Kustomization

ROOT = Path(__file__).resolve().parents[2]
OVERLAY = "examples/kustomize/overlays/prod"
BROKEN = "examples/kustomize/overlays/broken"

pytestmark = pytest.mark.skipif(shutil.which("kustomize") is None and shutil.which("kubectl") is None,
                                reason="neither kustomize nor kubectl is installed")


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)



def objects(*args: str) -> dict[str, dict[str, Any]]:
    result = knetsim("get", *args, "-o", "json")
    assert result.exit_code == 0, result.output
    return {f"{o['kind']} {o['metadata'].get('namespace', '')}/{o['metadata']['name']}": o
            for o in json.loads(result.stdout)["items"]}


def test_an_overlay_is_what_kustomize_builds_prefix_namespace_patches_and_generator() -> None:
    got = objects("deployments,services,configmaps", "-k", OVERLAY, "-n", "shop")
    deployment = got["Deployment shop/prod-web"]
    assert deployment["spec"]["replicas"] == 3  # the strategic-merge patch
    assert got["Service shop/prod-web"]["spec"]["ports"][0]["port"] == 8080  # the JSON 6902 patch
    generated = [k for k in got if k.startswith("ConfigMap shop/prod-web-config-")]
    assert len(generated) == 1 and re.fullmatch(r"ConfigMap shop/prod-web-config-[a-z0-9]{10}", generated[0])
    # Kustomize rewrote the Deployment's reference to the generated name, hash suffix included.
    env_from = deployment["spec"]["template"]["spec"]["containers"][0]["envFrom"]
    assert env_from == [{"configMapRef": {"name": generated[0].split("/")[1]}}]


def test_the_origin_annotation_that_names_the_files_is_not_left_on_the_objects() -> None:
    got = objects("deployments,services", "-k", OVERLAY, "-n", "shop")
    for key in ("Deployment shop/prod-web", "Service shop/prod-web"):
        annotations = got[key]["metadata"].get("annotations") or {}
        assert "config.kubernetes.io/origin" not in annotations


def test_each_object_remembers_its_base_or_overlay_file() -> None:
    loaded = Kustomization(OVERLAY).read().loaded
    assert not loaded.errors
    where = {d.describe(): str(d.source) for d in loaded.documents}
    # A base's object names the overlay that may have patched it, then the base's file.
    assert where["Service shop/prod-web"] == f"{OVERLAY} -> examples/kustomize/base/service.yaml, document 1"
    assert where["Deployment shop/prod-web"] == f"{OVERLAY} -> examples/kustomize/base/deployment.yaml, document 1"
    assert where["Namespace shop"] == "examples/kustomize/overlays/prod/namespace.yaml, document 1"
    generated = [w for d, w in where.items() if d.startswith("ConfigMap")]
    assert generated == ["examples/kustomize/overlays/prod/kustomization.yaml, document 1"]


def test_an_admission_error_names_the_base_file_the_patched_object_came_from() -> None:
    result = knetsim("validate", "-k", BROKEN)
    assert result.exit_code == 2
    assert (f"error: {BROKEN} -> examples/kustomize/base/service.yaml, document 1: Service default/web: "
            "spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive") in result.output


def test_a_file_with_several_objects_names_the_document_of_each(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (base / "services.yaml").write_text(
        "apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {ports: [{port: 80}]}\n---\n"
        "apiVersion: v1\nkind: Service\nmetadata: {name: b}\nspec: {ports: [{port: 0}]}\n")
    (base / "kustomization.yaml").write_text("namePrefix: x-\nresources: [services.yaml]\n")
    result = knetsim("validate", "-k", str(base))
    assert result.exit_code == 2
    assert f"error: {base}/services.yaml, document 2: Service default/x-b: spec.ports[0].port: " in result.output


def test_dash_f_with_dash_k_is_refused_in_kubectls_words() -> None:
    result = knetsim("doctor", "-f", "examples/shop", "-k", OVERLAY)
    assert result.exit_code == 2
    assert result.output.strip() == "error: only one of -f or -k can be specified"


def test_kustomizes_own_error_exit_2(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: [missing.yaml]\n")
    result = knetsim("validate", "-k", str(tmp_path))
    assert result.exit_code == 2
    assert f"error: kustomize build {tmp_path}: accumulating resources" in result.output
    assert "missing.yaml" in result.output and "knetsim-kustomize" not in result.output  # the user's paths


def test_without_kustomize_or_kubectl_the_error_says_what_to_install(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    result = knetsim("validate", "-k", OVERLAY)
    assert result.exit_code == 2
    assert (f"error: cannot render -k {OVERLAY}: neither kustomize nor kubectl is on PATH; install kustomize "
            in result.output)


def test_the_kustomize_binary_is_preferred_over_kubectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl stands in for kustomize here")
    calls = tmp_path / "calls"
    fake = tmp_path / "kustomize"
    # A kustomize that records how it was called and builds with kubectl's bundled Kustomize.
    fake.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n[ "$1" = build ] && exec {kubectl} kustomize "$2"\nexit 9\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    got = objects("deployments", "-k", OVERLAY, "-n", "shop")
    assert "Deployment shop/prod-web" in got
    assert calls.read_text().startswith("build ")


def test_every_command_that_takes_dash_f_takes_dash_k() -> None:
    import click

    ctx = click.Context(cli)
    readers = []
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        subs = ([command.get_command(ctx, s) for s in command.list_commands(ctx)]
                if isinstance(command, click.Group) else [command])
        for sub in subs:
            options = {o for p in sub.params for o in getattr(p, "opts", [])}
            if "--filename" in options:
                readers.append(sub.name)
                assert {"-k", "--kustomize", "--values", "--set", "--release-name"} <= options, sub.name
    assert {"doctor", "trace", "get", "validate", "matrix"} <= set(readers)


def test_the_python_api_reads_an_overlay_as_a_source() -> None:
    from knetsim import Cluster

    cluster = Cluster.from_sources([Kustomization(OVERLAY)], namespace="shop")
    endpoints = cluster.endpoints("prod-web", namespace="shop").to_dict()
    # The overlay's patch made three replicas of the base's Deployment, all behind the prefixed Service.
    assert endpoints["service"] == "shop/prod-web" and len(endpoints["ready_addresses"]) == 3
