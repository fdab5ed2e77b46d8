"""`knetsim validate -n NS` answers as `kubectl apply -n NS --dry-run` does: a namespace the objects contradict,
or one that exists nowhere, is refused (exit 2) instead of every object being called valid."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import knetsim


def test_objects_of_another_namespace_are_refused_in_kubectls_words() -> None:
    result = knetsim("validate", "-f", "examples/shop", "-n", "nonexistent")
    assert result.exit_code == 2
    assert ('examples/shop/10-web.yaml, document 1: the namespace from the provided object "shop" does not match '
            "the namespace \"nonexistent\". You must pass '--namespace=shop' to perform this operation.") in \
        result.output


def test_objects_without_a_namespace_need_the_namespace_to_exist(tmp_path: Path) -> None:
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n")
    missing = knetsim("validate", "-f", str(manifest), "-n", "nonexistent")
    assert missing.exit_code == 2 and 'namespaces "nonexistent" not found' in missing.output
    assert knetsim("validate", "-f", str(manifest), "-n", "kube-system").exit_code == 0
    # A namespace the input itself declares is there to receive them.
    manifest.write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\n"
                        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n")
    assert knetsim("validate", "-f", str(manifest), "-n", "team").exit_code == 0


def test_the_matching_namespace_is_valid() -> None:
    result = knetsim("validate", "-f", "examples/shop", "-n", "shop")
    assert result.exit_code == 0 and result.output.strip().endswith("objects valid")
