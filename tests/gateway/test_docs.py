"""docs/gateway.md shows real output: every `$ knetsim ...` block is run and compared with what it shows.

A console block is the command and its exact stdout; a block ending in `...` shows the start of the
output; a command block followed directly by a ```json block shows its JSON document.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from knetsim.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "gateway.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```console\n\$ (knetsim [^\n]*)\n(.*?)```\n(?:\n```json\n(.*?)```\n)?", DOC, re.S)


def test_the_doc_has_its_examples() -> None:
    assert len(BLOCKS) >= 9


@pytest.mark.parametrize(("command", "shown", "json_doc"), BLOCKS, ids=[b[0][:70] for b in BLOCKS])
def test_example_is_current(command: str, shown: str, json_doc: str) -> None:
    result = CliRunner().invoke(cli, shlex.split(command)[1:])
    assert result.exit_code in (0, 1), result.output
    if json_doc:
        assert not shown
        assert json.loads(result.stdout) == json.loads(json_doc)
    elif shown.endswith("...\n"):
        assert result.stdout.startswith(shown[: -len("...\n")])
    else:
        assert result.stdout == shown


def test_route_json_has_the_documented_fields_in_order() -> None:
    result = CliRunner().invoke(cli, ["route", "-f", str(ROOT / "examples" / "gateway" / "quickstart"), "--gateway",
                                      "default/eg", "--host", "www.example.com", "--path", "/", "-o", "json"])
    assert result.exit_code == 0
    assert list(json.loads(result.stdout)) == [
        "outcome", "http_status", "backends", "backend", "match", "redirect", "upstream_request", "response_headers",
        "response_headers_removed", "candidates", "request", "gateway", "address", "listener", "proxy_pod", "summary",
        "notes"]
