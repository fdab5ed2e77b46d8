"""Every ``$ knetsim ...`` example in README.md and docs/ prints what the docs say it prints.

A ```console block is read as a terminal transcript: a line starting with ``$ knetsim`` is a
command, the lines after it (up to the next ``$``) its output, stdout and stderr as a terminal
interleaves them. Commands shown without output (usage lists), commands that need the live
cluster or root (``verify kernel``, ``up``), and shell constructs (pipes, redirections, variables)
are not run here; their own tests cover them. ``verify nginx`` runs where Debian's nginx is installed.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from knetsim.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_OFFLINE = ("verify kernel", "up", "down", "status", "lab ")


def transcripts() -> list[tuple[str, int, str, str]]:
    out = []
    for doc in DOCS:
        text = doc.read_text()
        for block in re.finditer(r"^```console\n(.*?)^```", text, re.S | re.M):
            line_no = text[:block.start()].count("\n") + 2
            lines = block.group(1).splitlines()
            i = 0
            while i < len(lines):
                line = lines[i]
                if not line.startswith("$ "):
                    i += 1
                    continue
                j = i + 1
                while j < len(lines) and not lines[j].startswith("$ "):
                    j += 1
                command, expected = line[2:], lines[i + 1:j]
                if command.startswith("knetsim ") and expected and not re.search(r"[|<>$]", command) and \
                        not command[len("knetsim "):].startswith(NOT_OFFLINE):
                    out.append((f"{doc.relative_to(ROOT)}:{line_no + i}", command, "\n".join(expected)))
                i = j
    return out


EXAMPLES = transcripts()


def test_the_docs_have_transcripts() -> None:
    assert len(EXAMPLES) >= 4  # a guard against this reader silently matching nothing


@pytest.mark.parametrize(("where", "command", "expected"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_a_docs_example_prints_what_the_docs_show(where: str, command: str, expected: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    args = shlex.split(command.split("  #", 1)[0])[1:]
    if args[:2] == ["verify", "nginx"]:
        from knetsim.nginxproof import missing_requirements

        if missing := missing_requirements():
            pytest.skip("verify nginx cannot run here: " + "; ".join(missing))
    result = CliRunner().invoke(cli, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.output.rstrip("\n") == expected.rstrip("\n"), f"{where}: {command}"
