"""Expansion: a word of the syntax tree becomes the text or the fields a command receives — quoting,
``$VAR`` and ``${VAR...}``, ``$(...)``, ``$((...))``, field splitting and pathname expansion. Each
piece of a word is a ``Part`` (its text, and whether it was quoted: quoted text is neither split nor
globbed)."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Awaitable, Callable

import regex

from ...model import saferegex
from .arith import arith_value, arithmetic
from .ctx import Ctx, Node, ShellError, Unsupported
from .parse import PARSER, text_of

_GLOB_CHARS = re.compile(r"[*?\[]")
Part = tuple[str, bool]  # (text, quoted)
_BREAK: Part = ("\0break", True)  # "$@": a field boundary inside quotes


# `$(...)` runs commands, which is run.py's work; run.py expands the words of every command it runs, so
# this module cannot import it (tests/test_architecture.py forbids the circle). run.py hands its
# substitution over when it is imported, as the tools register themselves; the package's face imports
# run.py, so it is in place before any word is expanded.
Substitution = Callable[[Ctx, Node], Awaitable[str]]


async def _no_interpreter(_ctx: Ctx, _node: Node) -> str:
    raise RuntimeError("knetsim.container.shell.run is not imported: nothing runs $(...)")


_substitute: Substitution = _no_interpreter


def substitutes(fn: Substitution) -> Substitution:
    """Install ``fn`` as what ``$(...)`` and backticks run (run.py's command substitution)."""
    global _substitute
    _substitute = fn
    return fn


async def expand_words(ctx: Ctx, nodes: list[Node]) -> list[str]:
    """Arguments as the shell passes them: expanded, split on whitespace, pathname-expanded."""
    out: list[str] = []
    for node in nodes:
        out.extend(await _fields(ctx, await expand_parts(ctx, node)))
    return out


async def expand_word(ctx: Ctx, node: Node, pattern: bool = False) -> str:
    """One word with no splitting (assignments, redirection targets, case patterns)."""
    parts = await expand_parts(ctx, node)
    ctx.building(sum(len(t) for t, _ in parts))
    if pattern:
        return "".join(_escape_glob(t) if q else t for t, q in parts if (t, q) != _BREAK)
    return "".join(t if (t, q) != _BREAK else " " for t, q in parts)


def _escape_glob(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


FIELD_COST = 56  # bytes a field costs besides its text (what a str and its list slot take in Python)


async def _fields(ctx: Ctx, parts: list[Part]) -> list[str]:
    if ctx.process is not None:
        # Counted before splitting: `echo $x` of a large $x makes a field per word.
        blanks = sum(t.count(" ") + t.count("\t") + t.count("\n") for t, q in parts if not q)
        ctx.building(sum(len(t) for t, _ in parts) + FIELD_COST * blanks)
    fields: list[list[Part]] = []
    current: list[Part] | None = None
    for text, quoted in parts:
        if (text, quoted) == _BREAK:
            if current is not None:
                fields.append(current)
            current = None
            continue
        if quoted:
            current = (current or []) + [(text, True)]
            continue
        for token in re.split(r"([ \t\n]+)", text):
            if not token:
                continue
            if token.isspace():
                if current is not None:
                    fields.append(current)
                current = None
            else:
                current = (current or []) + [(token, False)]
    if current is not None:
        fields.append(current)
    out: list[str] = []
    assert ctx.fs is not None
    for f in fields:
        word = "".join(t for t, _ in f)
        if any(not q and _GLOB_CHARS.search(t) for t, q in f):
            pattern = "".join(t if not q else _escape_glob(t) for t, q in f)
            matches = sorted(ctx.fs.glob(pattern, ctx.cwd))
            if matches:
                out.extend(matches)
                continue
        out.append(word)
    return out


def _unescape_word(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text, flags=re.S).replace("\\\n", "")


async def expand_parts(ctx: Ctx, node: Node, quoted: bool = False) -> list[Part]:
    kind = node.type
    if kind in ("word", "number", "file_descriptor", "regex", "extglob_pattern", "special_variable_name",
                "variable_name", "heredoc_start", "test_operator"):
        text = text_of(node)
        if kind == "word" and not quoted:
            if text.startswith("~") and (len(text) == 1 or text[1] == "/"):
                return [(ctx.env.get("HOME", "/root"), True), *_word_parts(text[1:])]
            return _word_parts(text)
        return [(text, quoted)]
    if kind == "raw_string":
        return [(text_of(node)[1:-1], True)]
    if kind == "ansi_c_string":
        return [(_ansi_c(text_of(node)[2:-1]), True)]
    if kind in ("string", "translated_string"):
        return await _string_parts(ctx, node)
    if kind == "string_content":
        return [(re.sub(r'\\([$`"\\])', r"\1", text_of(node)).replace("\\\n", ""), True)]
    if kind == "concatenation":
        return await _between(ctx, node, quoted)
    if kind == "simple_expansion":
        return _value_parts(ctx, _special_or_var(ctx, node), quoted, text_of(node))
    if kind == "expansion":
        return await _expansion(ctx, node, quoted)
    if kind == "command_substitution":
        return [(await _substitute(ctx, node), quoted)]
    if kind == "arithmetic_expansion":
        expression = node.named_children[0] if node.named_children else node
        return [(str(await arithmetic(ctx, expression, expand_word)), quoted)]
    if kind == "brace_expression":
        return [(text_of(node), quoted)]  # ash has no brace expansion: the text stays as typed
    if kind == "process_substitution":
        raise Unsupported("process substitution <(...)")
    raise Unsupported(f"`{text_of(node)[:40]}` ({kind.replace('_', ' ')})")


def _word_parts(text: str) -> list[Part]:
    """An unquoted word: backslash-escaped characters are quoted (not split, not globbed)."""
    parts: list[Part] = []
    i = 0
    buf = ""
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            if buf:
                parts.append((buf, False))
                buf = ""
            if text[i + 1] != "\n":
                parts.append((text[i + 1], True))
            i += 2
            continue
        buf += ch
        i += 1
    if buf:
        parts.append((buf, False))
    return parts or [("", True)]


async def _between(ctx: Ctx, node: Node, quoted: bool) -> list[Part]:
    """A node's children in order, with any source text between them kept literally."""
    out: list[Part] = []
    raw = node.text or b""
    base = node.start_byte
    pos = base
    for child in node.children:
        if child.start_byte > pos:
            gap = raw[pos - base:child.start_byte - base].decode(errors="replace")
            out.extend([(gap, True)] if quoted else _word_parts(gap))
        if child.is_named:
            out.extend(await expand_parts(ctx, child, quoted))
        else:
            gap = text_of(child)
            out.extend([(gap, True)] if quoted else _word_parts(gap))
        pos = child.end_byte
    if node.end_byte > pos:
        gap = raw[pos - base:].decode(errors="replace")
        out.extend([(gap, True)] if quoted else _word_parts(gap))
    return out


async def _string_parts(ctx: Ctx, node: Node) -> list[Part]:
    raw = node.text or b""
    base = node.start_byte
    inner_start = base + (2 if raw.startswith(b'$"') else 1)
    inner_end = node.end_byte - 1
    out: list[Part] = [("", True)]
    pos = inner_start
    for child in node.named_children:
        if child.start_byte > pos:
            gap = raw[pos - base:child.start_byte - base].decode(errors="replace")
            out.append((re.sub(r'\\([$`"\\])', r"\1", gap), True))
        out.extend(await expand_parts(ctx, child, quoted=True))
        pos = child.end_byte
    if inner_end > pos:
        gap = raw[pos - base:inner_end - base].decode(errors="replace")
        out.append((re.sub(r'\\([$`"\\])', r"\1", gap), True))
    return out


def _ansi_c(text: str) -> str:
    table = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "e": "\x1b",
             "f": "\f", "v": "\v", "0": "\0"}
    return re.sub(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)", lambda m: (
        chr(int(m.group(1)[1:], 16)) if m.group(1).startswith("x") else
        chr(int(m.group(1), 8)) if m.group(1)[0].isdigit() and m.group(1) != "0" else table.get(m.group(1),
                                                                                               "\\" + m.group(1))),
        text)


def _special_or_var(ctx: Ctx, node: Node) -> str | list[str] | None:
    name_node = node.named_children[0] if node.named_children else None
    name = text_of(name_node) if name_node is not None else text_of(node).lstrip("$")
    return _lookup(ctx, name)


def _lookup(ctx: Ctx, name: str) -> str | list[str] | None:
    if name == "?":
        return str(ctx.last)
    if name == "#":
        return str(len(ctx.args))
    if name in ("@", "*"):
        return list(ctx.args) if name == "@" else " ".join(ctx.args)
    if name == "$":
        return "1"
    if name == "!":
        return str(len(ctx.jobs) + 1) if ctx.jobs else ""
    if name == "-":
        return "hB"
    if name == "0":
        return ctx.arg0
    if name.isdigit():
        i = int(name)
        return ctx.args[i - 1] if i <= len(ctx.args) else None
    if name == "RANDOM":
        raise Unsupported("$RANDOM (knetsim is deterministic)")
    if "u" in ctx.options and name not in ctx.env:
        raise ShellError(f"{name}: parameter not set", 2)
    return ctx.env.get(name)


def _value_parts(ctx: Ctx, value: str | list[str] | None, quoted: bool, text: str) -> list[Part]:
    if isinstance(value, list):  # "$@"
        if not quoted:
            return [(" ".join(value), False)]
        out: list[Part] = []
        for i, v in enumerate(value):
            if i:
                out.append(_BREAK)
            out.append((v, True))
        return out or [_BREAK]
    return [(value or "", quoted)]


async def _expansion(ctx: Ctx, node: Node, quoted: bool) -> list[Part]:
    children = node.children
    inner = [c for c in children if c.type not in ("${", "}")]
    if not inner:
        raise ShellError(f"{text_of(node)}: bad substitution", 2)
    length = inner[0].type == "#" and len(inner) > 1
    if length:
        inner = inner[1:]
    name_node = inner[0]
    if name_node.type not in ("variable_name", "special_variable_name"):
        raise ShellError(f"{text_of(node)}: bad substitution", 2)
    name = text_of(name_node)
    value = _lookup(ctx, name)
    if isinstance(value, list):
        value = " ".join(value)
    rest = inner[1:]
    if length:
        if rest:
            raise ShellError(f"{text_of(node)}: bad substitution", 2)
        return [(str(len(value or "")), quoted)]
    if not rest:
        return _value_parts(ctx, value, quoted, text_of(node))
    op = rest[0].type if not rest[0].is_named else ""
    operands = rest[1:] if op else rest
    word = "".join(t for t, _ in await _operand_parts(ctx, operands))
    unset_or_null = value is None or (value == "" and op.startswith(":"))
    if op in (":-", "-"):
        return [(word if unset_or_null else (value or ""), quoted)]
    if op in (":=", "="):
        if unset_or_null:
            ctx.set_var(name, word)
            return [(word, quoted)]
        return [(value or "", quoted)]
    if op in (":+", "+"):
        return [("" if unset_or_null else word, quoted)]
    if op in (":?", "?"):
        if unset_or_null:
            raise ShellError(f"{name}: {word or 'parameter not set'}", 1)
        return [(value or "", quoted)]
    if op in ("#", "##", "%", "%%"):
        pattern = "".join(_escape_glob(t) if q else t for t, q in await _operand_parts(ctx, operands))
        return [(await _trim(ctx, value or "", pattern, op), quoted)]
    if op == ":":
        numbers = [c for c in operands if c.is_named]
        try:
            offset = arith_value(ctx, await expand_word(ctx, numbers[0])) if numbers else 0
            count = arith_value(ctx, await expand_word(ctx, numbers[1])) if len(numbers) > 1 else None
        except ShellError:
            raise ShellError(f"{text_of(node)}: bad substitution", 2) from None
        text = value or ""
        start = offset if offset >= 0 else max(0, len(text) + offset)
        end = len(text) if count is None else (start + count if count >= 0 else len(text) + count)
        return [(text[start:end], quoted)]
    if op in ("/", "//", "/#", "/%"):
        return [(await _replace(ctx, value or "", op, operands), quoted)]
    raise Unsupported(f"the parameter expansion `{text_of(node)}`")


async def _replace(ctx: Ctx, value: str, op: str, operands: list[Node]) -> str:
    """``${VAR/pattern/replacement}`` (``//``: every match), as ash does it: the leftmost, longest
    match of the pattern (a glob; quoted characters literal) replaced by the expanded replacement."""
    separator = next((i for i, n in enumerate(operands) if not n.is_named and text_of(n) == "/"), len(operands))
    pattern: list[Part] = []
    for n in operands[:separator]:
        pattern.extend(await _pattern_parts(ctx, n) if n.type == "regex" else await _operand_parts(ctx, [n]))
    if op in ("/#", "/%"):
        # busybox's ash has no anchored forms: the `#` or `%` is the first character of the pattern.
        pattern.insert(0, (op[1], True))
    replacement = "".join(t for t, _ in await _operand_parts(ctx, operands[separator + 1:]))
    if not "".join(t for t, _ in pattern):
        return value
    matcher = regex.compile(_glob_regex(pattern), regex.POSIX | regex.DOTALL)
    out: list[str] = []
    pos = size = checked = 0
    while pos <= len(value):
        try:
            found = matcher.search(value, pos, timeout=saferegex.MATCH_TIMEOUT)
        except TimeoutError:
            raise ShellError(f"knetsim: the pattern of ${{...}} ran past {saferegex.MATCH_TIMEOUT * 1000:.0f} ms",
                             2) from None
        if found is None or (found.start() == found.end() and value):
            break  # an empty match replaces nothing (but the whole of an empty value)
        out.append(value[pos:found.start()] + replacement)
        size += len(out[-1])
        if size - checked > (64 << 10):  # `${x//a/$big}`: the result may dwarf the value
            ctx.building(size + len(value) - found.end())
            checked = size
            await ctx.tick()
        pos = found.end()
        if op != "//" or pos == len(value):
            break
    return "".join(out) + value[pos:] if out else value


async def _pattern_parts(ctx: Ctx, node: Node) -> list[Part]:
    r"""The pattern of ``${VAR/pattern/...}``, which the grammar keeps as raw text: parsed as the words
    of a command line, each expanded as any word is (``$p`` expands and globs, ``\)`` and quotes are
    literal); what lies between the words (blanks, an operator character) is literal too."""
    text = text_of(node)
    prefix = ": "
    source = (prefix + text).encode()
    command = PARSER.parse(source).root_node.children[0] if text.strip() else None
    parts: list[Part] = []
    offset = len(prefix.encode())
    for word in (command.named_children[1:] if command is not None and command.type == "command" else []):
        if word.start_byte < offset or word.end_byte > len(source):
            continue
        if word.start_byte > offset:
            parts.append((source[offset:word.start_byte].decode(errors="replace"), True))
        parts.extend(await expand_parts(ctx, word))
        offset = word.end_byte
    if offset < len(source):
        parts.append((source[offset:].decode(errors="replace"), True))
    return parts


def _glob_regex(parts: list[Part]) -> str:
    """A shell pattern as a regular expression: ``*``, ``?`` and ``[...]`` where unquoted, every other
    character (and every quoted one) literal."""
    merged: list[Part] = []
    for text, quoted in parts:  # a bracket expression may span words the grammar split (`[`, `an`, `]`)
        if merged and merged[-1][1] == quoted:
            merged[-1] = (merged[-1][0] + text, quoted)
        else:
            merged.append((text, quoted))
    out: list[str] = []
    for text, quoted in merged:
        if quoted:
            out.append(regex.escape(text))
            continue
        i = 0
        while i < len(text):
            ch = text[i]
            end = _bracket_end(text, i) if ch == "[" else None
            if ch == "*":
                out.append(".*")
            elif ch == "?":
                out.append(".")
            elif end is not None:
                body = text[i + 1:end]
                negate = body[:1] in ("!", "^")
                members = body[1:] if negate else body
                out.append("[" + ("^" if negate else "") + members.replace("\\", "\\\\").replace("[", "\\[") + "]")
                i = end
            else:
                out.append(regex.escape(ch))
            i += 1
    return "".join(out)


def _bracket_end(text: str, start: int) -> int | None:
    """The index of the ``]`` closing the bracket expression at ``start`` (None: a literal ``[``)."""
    i = start + 1
    if i < len(text) and text[i] in "!^":
        i += 1
    if i < len(text) and text[i] == "]":
        i += 1  # a ] first in the class is a member
    end = text.find("]", i)
    return end if end != -1 else None


async def _operand_parts(ctx: Ctx, nodes: list[Node]) -> list[Part]:
    out: list[Part] = []
    for n in nodes:
        if n.type in ("regex", "extglob_pattern"):
            out.append((text_of(n), False))
        elif n.is_named:
            out.extend(await expand_parts(ctx, n, quoted=True) if n.type != "word" else _word_parts(text_of(n)))
        else:
            out.append((text_of(n), False))
    return out


async def _trim(ctx: Ctx, value: str, pattern: str, op: str) -> str:
    """``${VAR#p}`` ``##`` ``%`` ``%%``: the shortest or longest prefix or suffix matching the glob, cut off.
    Each candidate is one match over a window of the value (no copy); a long value yields as it goes."""
    matcher = re.compile(fnmatch.translate(pattern))
    indices = range(len(value) + 1)
    prefix = op in ("#", "##")
    order = indices if op in ("#", "%%") else reversed(indices)
    for n, i in enumerate(order):
        if n % 256 == 255:
            await ctx.tick()
        if (matcher.fullmatch(value, 0, i) if prefix else matcher.fullmatch(value, i)) is not None:
            return value[i:] if prefix else value[:i]
    return value


