"""A click group that imports a command's module only when that command runs.

Importing every command module to build the group costs the import of every layer
(numpy, the doctor, the labs, the API server...) before ``knetsim --help`` can print a
line. Instead, each module's source is read: its ``COMMANDS = [...]`` list names the
functions, and their ``@click.command("name")`` / ``@click.group("name")`` decorators and
docstrings give what the help lists. Running a command imports its module and uses the real
command object; a module whose commands cannot be read that way is imported up front.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

HERE = Path(__file__).resolve().parent
NOT_COMMANDS = {"main", "common", "lazy"}


@dataclass(frozen=True)
class Entry:
    name: str
    module: str
    help: str


def _decorator_name(fn: Any) -> str | None:
    import ast

    for deco in fn.decorator_list:
        if (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute)
                and isinstance(deco.func.value, ast.Name) and deco.func.value.id == "click"
                and deco.func.attr in ("command", "group")):
            if deco.args and isinstance(deco.args[0], ast.Constant) and isinstance(deco.args[0].value, str):
                return deco.args[0].value
            return fn.name.replace("_", "-")
    return None


def read_module(path: Path) -> list[Entry] | None:
    """The commands ``path`` registers, or None when its source does not say them plainly."""
    import ast  # for --help and for commands not named after their module: running one needs no parse
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    listed: list[str] | None = None
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "COMMANDS"):
            if not isinstance(node.value, ast.List) or not all(isinstance(e, ast.Name) for e in node.value.elts):
                return None
            listed = [e.id for e in node.value.elts]  # type: ignore[attr-defined]
    if listed is None:
        return []
    out = []
    for var in listed:
        fn = functions.get(var)
        name = _decorator_name(fn) if fn is not None else None
        if fn is None or name is None:
            return None
        out.append(Entry(name, path.stem, ast.get_docstring(fn) or ""))
    return out


def command_index() -> tuple[dict[str, Entry], list[str]]:
    """Command name -> where it lives, and the modules that must be imported to know theirs."""
    index: dict[str, Entry] = {}
    eager = []
    for path in sorted(HERE.glob("*.py")):
        if path.stem in NOT_COMMANDS or path.stem.startswith("_"):
            continue
        entries = read_module(path)
        if entries is None:
            eager.append(path.stem)
            continue
        for entry in entries:
            index[entry.name] = entry
    return index, eager


class LazyGroup(click.Group):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._index: dict[str, Entry] | None = None

    def _entries(self) -> dict[str, Entry]:
        if self._index is None:
            self._index, eager = command_index()
            for module in eager:
                for command in importlib.import_module(f"{__package__}.{module}").COMMANDS:
                    self.add_command(command)
        return self._index

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self._entries()) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and self._index is None and cmd_name.isidentifier() \
                and cmd_name not in NOT_COMMANDS and (HERE / f"{cmd_name}.py").is_file():
            # Most commands live in the module of their name: running one needs that import only, not the
            # index of every module's source (reading it costs a cold start more than the import).
            for command in getattr(importlib.import_module(f"{__package__}.{cmd_name}"), "COMMANDS", ()):
                self.add_command(command)
            if cmd_name in self.commands:
                return self.commands[cmd_name]
        entry = self._entries().get(cmd_name)
        if cmd_name not in self.commands and entry is not None:
            for command in importlib.import_module(f"{__package__}.{entry.module}").COMMANDS:
                self.add_command(command)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The listing of ``--help`` from the source index: no command module is imported for it."""
        entries = self._entries()
        commands = [(name, self.commands.get(name) or click.Command(name, help=entries[name].help))
                    for name in self.list_commands(ctx)]
        commands = [(name, c) for name, c in commands if not c.hidden]
        if commands:
            limit = formatter.width - 6 - max(len(name) for name, _ in commands)
            rows = [(name, c.get_short_help_str(limit)) for name, c in commands]
            with formatter.section("Commands"):
                formatter.write_dl(rows)


__all__ = ["Entry", "LazyGroup", "command_index", "read_module"]
