"""A gate that reads nothing must not pass (issue 34, point 5).

``kubectl apply -f DIR`` with no manifest in DIR says ``error reading [DIR]: recognized file extensions are
[.json .yaml .yml]``, and input without a single object ``error: no objects passed to apply`` (both exit 1 in
kubectl; knetsim's bad-input code is 2). Every knetsim command that reads ``-f`` refuses the same way, and a
``-n`` naming a namespace that does not exist is an error where the namespace must exist.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import Result
from tests.conftest import EXAMPLES
from tests.helpers import knetsim_raising

# Every command that reads -f, with what else it needs to get as far as reading its input.
COMMANDS = [
    ["doctor"], ["validate"], ["get", "pods"], ["endpoints", "web"], ["matrix"], ["overview"], ["render"],
    ["migrate", "ingress"], ["migrate", "check"], ["dns", "web", "--from", "shop/web"],
    ["trace", "--from", "external", "http://web.shop/"], ["route", "--host", "shop.example.com", "--path", "/"],
    ["packet", "--src", "10.244.1.2", "--dst", "10.96.0.10", "--dport", "80"],
    ["policy", "check", "--from", "a", "--to", "b", "--port", "80"], ["policy", "lint"], ["policy", "describe", "x"],
]


def knetsim(*args: str, stdin: str | None = None) -> Result:
    return knetsim_raising(*args, input=stdin)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_a_directory_without_manifests_is_refused_in_kubectls_words(command: list[str], tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# not a manifest\n")
    result = knetsim(*command, "-f", str(tmp_path))
    assert result.exit_code == 2, result.output
    assert f"error: error reading [{tmp_path}]: recognized file extensions are [.json .yaml .yml]" in result.output
    assert "No problems found" not in result.output and "valid" not in result.output


@pytest.mark.parametrize("command", [["doctor"], ["validate"], ["matrix"]], ids=lambda c: c[0])
def test_input_without_objects_is_refused(command: list[str], tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing yet\n---\n")
    for args, stdin in ((["-f", str(empty)], None), (["-f", "-"], "\n")):
        result = knetsim(*command, *args, stdin=stdin)
        assert result.exit_code == 2, result.output
        assert "error: no objects passed to apply" in result.output


def test_the_docs_folder_is_no_passing_gate() -> None:
    """The issue's reproducer: `knetsim doctor -f docs` said "No problems found", exit 0."""
    docs = str(EXAMPLES.parent / "docs")
    for command in (["doctor"], ["validate"]):
        result = knetsim(*command, "-f", docs)
        assert result.exit_code == 2
        assert "recognized file extensions are [.json .yaml .yml]" in result.output


def test_a_directory_without_manifests_beside_one_with_them_is_still_refused(tmp_path: Path) -> None:
    """As kubectl: one path that reads nothing fails the command, though others hold objects."""
    result = knetsim("doctor", "-f", str(tmp_path), "-f", str(EXAMPLES / "shop"))
    assert result.exit_code == 2
    assert f"error reading [{tmp_path}]" in result.output


def test_a_namespace_that_does_not_exist_is_an_error() -> None:
    shop = str(EXAMPLES / "shop")
    for command in (["doctor"], ["matrix"], ["endpoints", "web"], ["overview"]):
        result = knetsim(*command, "-f", shop, "-n", "nonexistent")
        assert result.exit_code == 2, (command, result.output)
        assert 'error: namespaces "nonexistent" not found' in result.output
    assert knetsim("doctor", "-f", shop, "-n", "shop").exit_code == 0


def test_get_in_a_namespace_that_does_not_exist_lists_nothing_as_kubectl_does() -> None:
    result = knetsim("get", "pods", "-f", str(EXAMPLES / "shop"), "-n", "nonexistent")
    assert result.exit_code == 0
    assert "No resources found in nonexistent namespace." in result.output


def test_a_diff_side_without_objects_is_refused(tmp_path: Path) -> None:
    shop = str(EXAMPLES / "shop")
    for before, after in ((str(tmp_path), shop), (shop, str(tmp_path))):
        result = knetsim("diff", "--before", before, "--after", after)
        assert result.exit_code == 2, result.output
        assert f"error reading [{tmp_path}]" in result.output


def test_input_of_which_nothing_can_be_read_is_refused_by_the_doctor_too(tmp_path: Path) -> None:
    """doctor reports an unreadable file among others as a finding; when nothing at all could be read, no
    analysis ran, and it says so with exit 2 rather than a report (exit 1) that looks like one."""
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: x\n")
    for path in (str(broken), str(tmp_path / "missing.yaml")):
        result = knetsim("doctor", "-f", path)
        assert result.exit_code == 2, result.output
        assert "error(s)" not in result.output
    result = knetsim("doctor", "-f", str(broken), "-f", str(EXAMPLES / "shop"))
    assert result.exit_code == 1 and "RejectedByAPIServer" in result.output
