"""Every command that reads objects refuses input without any, exit 2 (issue 34, point 5), whatever the source:
a directory without manifests, a file of empty documents, stdin, a kustomization or a Helm chart that renders
nothing. The commands are read from the CLI itself, so a new command that reads ``-f`` is covered or this fails.

tests/cli/test_no_objects.py holds the reproducers; this is the sweep over the command list.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from knetsim.cli.main import cli

# What each command needs besides -f to get as far as reading its input.
ARGS: dict[str, list[str]] = {
    "dns": ["web", "--from", "shop/web"],
    "doctor": [],
    "endpoints": ["web"],
    "gateway check": [],
    "get": ["pods"],
    "matrix": [],
    "migrate check": [],
    "migrate ingress": [],
    "overview": [],
    "packet": ["--src", "10.244.1.2", "--dst", "10.96.0.10", "--dport", "80"],
    "policy check": ["--from", "a", "--to", "b", "--port", "80"],
    "policy describe": ["x"],
    "policy generate": [],
    "policy lint": [],
    "render": [],
    "route": ["--host", "shop.example.com", "--path", "/"],
    "trace": ["--from", "external", "http://web.shop/"],
    "validate": [],
    "verify kernel": [],
    "verify nginx": [],
}


def commands_reading_files() -> set[str]:
    """Every leaf command of the CLI with a -f option."""
    out: set[str] = set()

    def walk(command: click.Command, path: list[str], ctx: click.Context) -> None:
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None:
                    walk(sub, [*path, name], click.Context(sub, parent=ctx))
        elif any("-f" in getattr(p, "opts", ()) for p in command.params):
            out.add(" ".join(path))

    walk(cli, [], click.Context(cli))
    return out


def knetsim(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)


def test_the_sweep_names_every_command_that_reads_files() -> None:
    assert commands_reading_files() == set(ARGS)


@pytest.fixture(scope="module")
def empty_inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("nothing")
    (base / "dir").mkdir()
    (base / "dir" / "README.md").write_text("# not a manifest\n")
    (base / "empty.yaml").write_text("# nothing yet\n---\n---\n")
    (base / "kustomization").mkdir()
    (base / "kustomization" / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n")
    (base / "chart" / "templates").mkdir(parents=True)
    (base / "chart" / "Chart.yaml").write_text("apiVersion: v2\nname: empty\nversion: 0.1.0\n")
    return {name: base / name for name in ("dir", "empty.yaml", "kustomization", "chart")}


@pytest.mark.parametrize("command", sorted(ARGS))
def test_every_command_refuses_input_without_objects(command: str, empty_inputs: dict[str, Path]) -> None:
    words = [*command.split(), *ARGS[command]]
    directory = str(empty_inputs["dir"])
    result = knetsim(*words, "-f", directory)
    assert result.exit_code == 2, result.output
    assert f"error reading [{directory}]: recognized file extensions are [.json .yaml .yml]" in result.output
    for args, stdin in ((["-f", str(empty_inputs["empty.yaml"])], None), (["-f", "-"], "\n---\n")):
        result = knetsim(*words, *args, stdin=stdin)
        assert result.exit_code == 2, (args, result.output)
        assert "error: no objects passed to apply" in result.output


@pytest.mark.skipif(shutil.which("kubectl") is None and shutil.which("kustomize") is None,
                    reason="-k renders with kustomize or kubectl")
@pytest.mark.parametrize("command", ["doctor", "validate", "matrix", "policy lint", "gateway check"])
def test_a_kustomization_that_renders_nothing_is_refused(command: str, empty_inputs: dict[str, Path]) -> None:
    """`kubectl apply -k` of an empty kustomization: "error: no objects passed to apply"; knetsim's doctor
    said "No problems found", exit 0."""
    result = knetsim(*command.split(), *ARGS[command], "-k", str(empty_inputs["kustomization"]))
    assert result.exit_code == 2, result.output
    assert "error: no objects passed to apply" in result.output
    assert "No problems found" not in result.output


@pytest.mark.parametrize("command", ["doctor", "validate"])
def test_a_chart_that_renders_nothing_is_refused(command: str, empty_inputs: dict[str, Path]) -> None:
    result = knetsim(command, "-f", str(empty_inputs["chart"]))
    if "no Helm engine is installed" in result.output:
        pytest.skip("neither the Helm SDK nor helm is installed")
    assert result.exit_code == 2, result.output
    assert "error: no objects passed to apply" in result.output
