"""docs/gateway.md shows real output. Its transcripts are run by tests/test_docs_examples.py (as a terminal
shows them, warnings included); here: the ```json documents shown under a bare `$ knetsim ... -o json` line,
and the field order of the route JSON the issue specifies.
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
BLOCKS = re.findall(r"```console\n\$ (knetsim [^\n]*)\n```\n\n```json\n(.*?)```\n", DOC, re.S)


@pytest.mark.parametrize(("command", "json_doc"), BLOCKS, ids=[b[0][:70] for b in BLOCKS])
def test_json_example_is_current(command: str, json_doc: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(cli, shlex.split(command)[1:])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads(json_doc)


def test_the_doc_has_its_json_example() -> None:
    assert len(BLOCKS) == 1


def test_route_json_has_the_documented_fields_in_order() -> None:
    result = CliRunner().invoke(cli, ["route", "-f", str(ROOT / "examples" / "gateway" / "quickstart"), "--gateway",
                                      "default/eg", "--host", "www.example.com", "--path", "/", "-o", "json"])
    assert result.exit_code == 0
    assert list(json.loads(result.stdout)) == [
        "outcome", "http_status", "backends", "backend", "match", "redirect", "upstream_request", "response_headers",
        "response_headers_removed", "candidates", "request", "gateway", "address", "listener", "proxy_pod", "summary",
        "notes", "tls", "backend_tls", "policies", "mirrors"]
