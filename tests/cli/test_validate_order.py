"""``knetsim validate`` lists its errors in file and document order, as ``kubectl apply`` meets them."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from knetsim.cli.main import cli


def service(name: str, cluster_ip: str = "10.96.0.50", node_port: int = 30080) -> str:
    return (f"apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\nspec:\n  type: NodePort\n"
            f"  clusterIP: {cluster_ip}\n  ports: [{{port: 80, nodePort: {node_port}}}]\n")


def places(output: str) -> list[tuple[str, int]]:
    return [(m[1], int(m[2])) for m in re.finditer(r"^error: (\S+), document (\d+):", output, re.M)]


def test_allocation_clashes_are_listed_document_by_document(tmp_path: Path) -> None:
    """The Services clash on one ClusterIP and one NodePort; their names run against the document order."""
    manifest = tmp_path / "s.yaml"
    manifest.write_text("---\n".join(service(name) for name in ("a", "z", "m", "b")))
    result = CliRunner().invoke(cli, ["validate", "-f", str(manifest)])
    assert result.exit_code == 2
    assert places(result.output) == [(str(manifest), n) for n in (2, 2, 3, 3, 4, 4)]


def test_admission_and_allocation_errors_interleave_in_file_order(tmp_path: Path) -> None:
    (tmp_path / "1-first.yaml").write_text(service("a") + "---\n" + service("b"))
    bad = service("c", cluster_ip="10.96.0.60", node_port=30090).replace("port: 80", "port: 0")
    (tmp_path / "2-second.yaml").write_text(bad + "---\n" + service("d"))
    result = CliRunner().invoke(cli, ["validate", "-f", str(tmp_path)])
    assert result.exit_code == 2
    first, second = str(tmp_path / "1-first.yaml"), str(tmp_path / "2-second.yaml")
    found = places(result.output)
    assert found == sorted(found, key=lambda p: (p[0] != first, p[1])), result.output
    assert {p for p in found} == {(first, 2), (second, 1), (second, 2)}


def test_what_cannot_be_read_comes_first_as_kubectl_apply_reports_it(tmp_path: Path) -> None:
    """kubectl apply reads every file (GetObjects) before it sends anything: a document that does not parse
    and a kind no API serves are reported before any object the API server refuses."""
    (tmp_path / "a.yaml").write_text(service("a") + "---\n" + service("b"))
    (tmp_path / "b.yaml").write_text("apiVersion: v1\nkind: Widget\nmetadata: {name: w}\n")
    (tmp_path / "c.yaml").write_text("kind: [\n")
    result = CliRunner().invoke(cli, ["validate", "-f", str(tmp_path)])
    assert places(result.output) == [(str(tmp_path / "b.yaml"), 1), (str(tmp_path / "c.yaml"), 1),
                                     (str(tmp_path / "a.yaml"), 2), (str(tmp_path / "a.yaml"), 2)], result.output
