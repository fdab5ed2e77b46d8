"""`knetsim validate` of a large List: admission and allocation only, every error still reported.

Given a List of many Pods with a bad item, a name given twice and two Services claiming one
ClusterIP, as JSON and as YAML, then validate names each problem with file, document and item.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from knetsim.cli.main import cli


def _items(count: int) -> list[dict]:
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "labels": {"app": "web"}},
             "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}}
            for i in range(count)]
    pods[7]["spec"]["containers"][0]["ports"][0]["containerPort"] = "eighty"
    pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p3"},
                 "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    services = [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                 "spec": {"clusterIP": "10.96.5.5", "ports": [{"port": 80}]}} for name in ("a", "b")]
    return pods + services


@pytest.mark.parametrize("suffix", ["json", "yaml"])
def test_every_problem_of_a_large_list_is_reported(tmp_path: Path, suffix: str) -> None:
    doc = {"apiVersion": "v1", "kind": "List", "items": _items(2000)}
    path = tmp_path / f"big.{suffix}"
    path.write_text(json.dumps(doc) if suffix == "json" else yaml.safe_dump(doc))
    result = CliRunner().invoke(cli, ["validate", "-f", str(path)])
    assert result.exit_code == 2
    out = result.output
    assert f"{path}, document 1, items[7]: Pod default/p7: Pod in version \"v1\" cannot be handled as a Pod: json: " \
           "cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort of " \
           "type int32" in out
    assert f"{path}, document 1, items[2002]: Service default/b: spec.clusterIPs: Invalid value: " in out
    assert "Pod default/p3: defined again at" in out and "items[2000]" in out
    assert "2 errors; 2001 object(s) valid, 2 rejected" in out
