"""A diff never shows a Secret's secrets (issue 34, point 2: no private key into any output).

`knetsim diff -o markdown` is a pull-request comment: a Secret whose private key or password changes is
said to change, without the values; its certificates (public) are shown. A cluster read live holds no
private key (tests/sources/test_live_secrets.py), so a manifest's key is no change against it.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import yaml
from tests.fakeapi import fake_api, kubeconfig_for
from tests.helpers import knetsim_raising as knetsim


def _secret(key: bytes, password: str = "hunter2") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": "shop-cert", "namespace": "default"},
            "data": {"tls.crt": base64.b64encode(b"CERT-ONE").decode(), "tls.key": base64.b64encode(key).decode(),
                     "password": base64.b64encode(password.encode()).decode()}}



def test_a_changed_private_key_is_said_to_change_and_never_shown(tmp_path: Path) -> None:
    before, after = tmp_path / "before.yaml", tmp_path / "after.yaml"
    before.write_text(yaml.safe_dump(_secret(b"OLD-PRIVATE-KEY")))
    after.write_text(yaml.safe_dump(_secret(b"NEW-PRIVATE-KEY", "correct-horse")))
    secrets = [base64.b64encode(v).decode() for v in (b"OLD-PRIVATE-KEY", b"NEW-PRIVATE-KEY", b"hunter2",
                                                      b"correct-horse")]
    for output in ("text", "json", "markdown"):
        result = knetsim("diff", "--before", str(before), "--after", str(after), "-o", output)
        assert result.exit_code == 0, result.output
        assert "Secret default/shop-cert" in result.output
        assert "data.tls.key" in result.output and "data.password" in result.output
        assert not [s for s in secrets if s in result.output], output


def test_a_manifests_key_is_no_change_against_a_cluster_that_was_read_without_it(tmp_path: Path) -> None:
    stored = _secret(b"THE-PRIVATE-KEY")
    stored["metadata"].update(uid="u1", resourceVersion="5")
    manifest = tmp_path / "secret.yaml"
    manifest.write_text(yaml.safe_dump(_secret(b"THE-PRIVATE-KEY")))
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default", "uid": "u0"}}
    with fake_api([namespace, stored], token="") as api:
        config = tmp_path / "config"
        config.write_text(yaml.safe_dump(kubeconfig_for(api.url, {})))
        result = knetsim("diff", "--kubeconfig", str(config), "--after", str(manifest), "-o", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert "Secret default/shop-cert" not in json.dumps(data.get("layers", data))
    assert base64.b64encode(b"THE-PRIVATE-KEY").decode() not in result.output
