"""Parsing: a script becomes tree-sitter-bash's syntax tree, or busybox's words for why it is not sh
(``parse``); ``static_commands`` names the commands a script would run without running it."""

from __future__ import annotations

import re

import tree_sitter
import tree_sitter_bash

from .ctx import MAX_SCRIPT, Node, ShellError

_LANGUAGE = tree_sitter.Language(tree_sitter_bash.language())
PARSER = tree_sitter.Parser(_LANGUAGE)


def parse(script: str) -> Node:
    """The script's syntax tree; ``ShellError`` with busybox's words when it is not valid sh."""
    if len(script) > MAX_SCRIPT:
        raise ShellError(f"knetsim: scripts longer than {MAX_SCRIPT >> 10} KiB are not simulated", 2)
    tree = PARSER.parse(script.encode())
    root = tree.root_node
    if root.has_error or (b";;" in script.encode() and _first_error(root) is not None):
        raise ShellError(f"syntax error: {_syntax_error(script, root)}", 2)
    return root


def _syntax_error(script: str, root: Node) -> str:
    quote = ""
    i = 0
    while i < len(script):
        ch = script[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = ""
        elif ch == "\\":
            i += 1
        elif ch in "'\"`":
            quote = ch
        elif ch == "#" and (i == 0 or script[i - 1].isspace()):
            nl = script.find("\n", i)
            i = len(script) if nl < 0 else nl
        i += 1
    if quote:
        return "unterminated quoted string"
    bad = _first_error(root)
    if bad is None or bad.start_byte >= len(script.rstrip().encode()):
        for opener, closer in (("do", "done"), ("then", "fi"), ("case", "esac"), ("{", "}"), ("(", ")")):
            if re.search(rf"(^|[\s;]){re.escape(opener)}([\s;]|$)", script) and not re.search(
                    rf"(^|[\s;]){re.escape(closer)}([\s;]|$)", script):
                return f'unexpected end of file (expecting "{closer}")'
        return "unexpected end of file"
    token = script.encode()[bad.start_byte:bad.end_byte].decode(errors="replace").split()
    word = token[0] if token else "newline"
    return f'unexpected "{word[:2] if word[:1] in "|&;)" else word}"'


def _first_error(node: Node) -> Node | None:
    if node.type == "ERROR" or node.is_missing or (node.type == ";;" and node.parent is not None and
                                                   node.parent.type not in ("case_item", "case_statement")):
        return node
    for child in node.children:
        found = _first_error(child)
        if found is not None:
            return found
    return None


def static_commands(script: str) -> list[str] | None:
    """The command names a script runs, or None when they cannot be known before it runs
    (a syntax error, a name that is itself an expansion like ``$CMD``)."""
    try:
        root = parse(script)
    except ShellError:
        return None
    names: list[str] = []
    functions: set[str] = set()

    def walk(node: Node) -> bool:
        if node.type == "function_definition":
            name = node.child_by_field_name("name")
            if name is not None:
                functions.add(text_of(name))
        if node.type == "command":
            name = node.child_by_field_name("name")
            if name is not None:
                word = name.named_children[0] if name.named_children else name
                if word.type not in ("word", "raw_string", "string") or (
                        word.type == "string" and word.named_children and
                        any(c.type != "string_content" for c in word.named_children)):
                    return False
                names.append(text_of(word).strip("'\""))
        return all(walk(child) for child in node.named_children)
    if not walk(root):
        return None
    return [n for n in names if n not in functions]


def text_of(node: Node) -> str:
    return (node.text or b"").decode(errors="replace")
