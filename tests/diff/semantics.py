"""What the diff tests share: the reachability tests' (test_connectivity_semantics.py and its admin tiers'
twin) manifests written as JSON documents and netpol-analyzer's pair-by-pair view of ``knetsim diff``, and
an example folder copied with an edit (test_change_sets.py, test_parallel.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from tests.conftest import EXAMPLES

from knetsim.cli.main import cli

# The pods knetsim adds itself, left out of the comparison (netpol-analyzer's inputs have none).
SYSTEM = ("kube-system/", "ingress-nginx/")


def write(folder: Path, *docs: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "all.json").write_text("[" + ",".join(docs) + "]")
    return folder


def pairs(before: Path, after: Path) -> dict[tuple[str, str], tuple[Any, Any]]:
    """(source, destination) -> (ref1, ref2): netpol-analyzer's view of the reachability layer."""
    result = CliRunner().invoke(cli, ["diff", "--before", str(before), "--after", str(after), "--layers",
                                      "reachability", "-o", "json"])
    assert result.exit_code == 0, result.output
    out = {}
    for item in json.loads(result.stdout)["layers"]["reachability"]["items"]:
        src, _, dst = item["subject"].partition(" → ")
        if not src.startswith(SYSTEM) and not dst.startswith(SYSTEM):
            out[(src, dst)] = (item["before"]["allowed"], item["after"]["allowed"])
    return out


def namespace(name: str, **labels: str) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})


def workload(kind: str, ns: str, name: str, labels: dict[str, str],
             ports: list[dict[str, Any]] | None = None) -> str:
    container: dict[str, Any] = {"name": "c", "image": "nginx:1.27", **({"ports": ports} if ports else {})}
    return json.dumps({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": ns},
                       "spec": {"selector": {"matchLabels": labels}, **({"serviceName": name} if kind == "StatefulSet"
                                                                         else {}),
                                "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}}}})


def netpol(ns: str, name: str, spec: dict[str, Any]) -> str:
    return json.dumps({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                       "metadata": {"name": name, "namespace": ns}, "spec": spec})


def conns(**ranges: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """Our JSON form of a connection set: per protocol (by name), its port ranges."""
    return [{"protocol": p, "ports": [list(r) for r in ranges[p]]} for p in sorted(ranges)]


ALL_BUT = {"TCP": [(1, 65535)], "UDP": [(1, 65535)], "SCTP": [(1, 65535)]}


def all_but(protocol: str, port: int) -> list[dict[str, Any]]:
    """Every connection except one port (netpol-analyzer: ``SCTP 1-65535,TCP 1-65535,UDP 1-5352,5354-65535``)."""
    ranges = dict(ALL_BUT)
    ranges[protocol] = [r for r in ((1, port - 1), (port + 1, 65535)) if r[0] <= r[1]]
    return conns(**ranges)


def copy_example(tmp_path: Path, name: str, replace: dict[str, tuple[str, str]]) -> Path:
    """The example ``name`` copied, with ``old`` replaced by ``new`` (once) in each file named."""
    out = tmp_path / "after"
    shutil.copytree(EXAMPLES / name, out)
    for file, (old, new) in replace.items():
        text = (out / file).read_text()
        assert text.count(old) >= 1, (file, old)
        (out / file).write_text(text.replace(old, new, 1))
    return out
