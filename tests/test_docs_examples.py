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


# --- the README's tour: the ```sh blocks' knetsim lines ---------------------------------------------------------

# Lines that name the reader's own things (a folder of theirs, their kind cluster, their fix): not runnable here.
PLACEHOLDERS = (" my-app/", " fix.yaml", "--context ")


def tour() -> list[tuple[str, str, str]]:
    """(README.md:LINE, command, what its comment claims) for every runnable ``knetsim`` line of README.md's
    ```sh blocks; a comment goes on over the ``#`` lines right below its command."""
    readme = ROOT / "README.md"
    lines = readme.read_text().splitlines()
    out = []
    inside = False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            inside = line == "```sh"
            continue
        if not inside or not line.startswith("knetsim "):
            continue
        command, _, comment = line.partition(" #")
        j = i + 1
        while j < len(lines) and lines[j].lstrip().startswith("#") and not lines[j].startswith("```"):
            comment += " " + lines[j].lstrip().lstrip("#").strip()
            j += 1
        if command[len("knetsim "):].startswith(NOT_OFFLINE) or re.search(r"[|<>$&]", command) or \
                any(p in command for p in PLACEHOLDERS) or not re.search(r" (-f|--before) ", command):
            continue  # (a line without -f or --before reads the running knetsim: tests/e2e reads the tour live)
        out.append((f"README.md:{i + 1}", command.strip(), comment.strip()))
    return out


TOUR = tour()


def test_the_tour_is_read() -> None:
    assert len(TOUR) >= 15


@pytest.mark.parametrize(("where", "command", "claim"), TOUR, ids=[t[0] for t in TOUR])
def test_a_tour_line_does_what_its_comment_says(where: str, command: str, claim: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Every tour line runs (exit 0, or 1 for a negative answer; never bad input or a crash), and what its
    comment claims holds: ``exit N`` is its exit code, "proved"/"proven" is exit 0, "N differ" is in its output.
    A ``diff`` is shown with its output in docs/ (so the change it shows is checked line by line)."""
    monkeypatch.chdir(ROOT)
    args = shlex.split(command)[1:]
    if args[:2] == ["verify", "nginx"]:
        from knetsim.nginxproof import missing_requirements

        if missing := missing_requirements():
            pytest.skip("verify nginx cannot run here: " + "; ".join(missing))
    result = CliRunner().invoke(cli, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    claimed = re.search(r"\bexit (\d)\b", claim)
    if claimed:
        assert result.exit_code == int(claimed.group(1)), f"{where}: {command}\n{result.output}"
    elif re.search(r"\bprov(ed|en)\b", claim):
        assert result.exit_code == 0, f"{where}: {command} claims a proof\n{result.output}"
    else:
        assert result.exit_code in (0, 1), f"{where}: {command}\n{result.output}"
    for count in re.findall(r"\b(\d+) differ\b", claim):
        assert f" {count} differ" in result.output, f"{where}: {command}"
    if args[0] == "diff":
        shown = {c for _, c, _ in EXAMPLES}
        assert command in shown, f"{where}: {command} is shown with its output nowhere in docs/"
