"""Running: a syntax tree evaluated as busybox ash would — lists, pipelines, background jobs, compound
commands, functions — and a command run by name from the context's tool table (``run_argv``). Also
command substitution, the one expansion that runs commands: it is handed to expand.py on import."""

from __future__ import annotations

import asyncio
import fnmatch
import re
from collections.abc import Awaitable, Callable

from ..cgroup import Held, Process
from ..podfs import FsError
from .ctx import (
    BUSYBOX_APPLETS,
    MAX_DEPTH,
    SHELL_BUILTINS,
    BrokenPipe,
    Ctx,
    ExitShell,
    FunctionReturn,
    Input,
    LoopControl,
    Node,
    Pipe,
    ShellError,
    ToolError,
    Unsupported,
)
from .expand import expand_word, expand_words, substitutes
from .parse import parse, text_of
from .redirect import Redirections


async def run_line(ctx: Ctx, line: str) -> int:
    """Run one line or script in ``ctx`` (the shell itself, not a subshell); return ``$?``."""
    try:
        root = parse(line)
    except ShellError as exc:
        await ctx.err(f"sh: {exc.message}\n")
        ctx.last = exc.status
        return ctx.last
    try:
        ctx.last = await _statements(ctx, root.named_children, root)
    except ShellError as exc:
        await ctx.err(f"sh: {exc.message}\n")
        ctx.last = exc.status
    except (LoopControl, FunctionReturn) as exc:
        ctx.last = exc.code if isinstance(exc, FunctionReturn) else 0
    return ctx.last


async def run_script(ctx: Ctx, script: str) -> int:
    """``sh -c SCRIPT``: the script to its end or ``exit``."""
    try:
        return await run_line(ctx, script)
    except ExitShell as exc:
        return exc.code
    finally:
        await reap(ctx)


async def reap(ctx: Ctx) -> None:
    for job in ctx.jobs:
        job.cancel()
    ctx.jobs.clear()


def _separator_after(parent: Node, child: Node) -> str:
    sibling = child.next_sibling
    while sibling is not None and not sibling.is_named:
        if sibling.type in ("&", ";", "\n", ";;"):
            return sibling.type
        sibling = sibling.next_sibling
    return ""


async def _statements(ctx: Ctx, nodes: list[Node], parent: Node) -> int:
    code = ctx.last
    for node in nodes:
        if node.type == "comment":
            continue
        if _separator_after(parent, node) == "&":
            job_ctx = ctx.fork(stdin=Input.text(""))
            ctx.jobs.append(ctx.spawn(_guarded(job_ctx, node)))
            code = ctx.last = 0
            continue
        code = ctx.last = await evaluate(ctx, node)
    return code


async def _guarded(ctx: Ctx, node: Node) -> int:
    """Run a node as its own process would: errors printed, exit ends only that process."""
    try:
        return await evaluate(ctx, node)
    except ExitShell as exc:
        return exc.code
    except ShellError as exc:
        await ctx.err(f"sh: {exc.message}\n")
        return exc.status
    except BrokenPipe:
        return 141
    except (LoopControl, FunctionReturn):
        return 0


async def evaluate(ctx: Ctx, node: Node) -> int:
    if ctx.process is not None:
        await ctx.process.tick()
    kind = node.type
    handler = _HANDLERS.get(kind)
    if handler is None:
        raise Unsupported(f"`{text_of(node)[:40]}` ({kind.replace('_', ' ')})")
    return await handler(ctx, node)


async def _command(ctx: Ctx, node: Node, extra: list[str] | None = None,
                   redirects: list[Node] | None = None) -> int:
    assignments: list[Node] = []
    words: list[Node] = []
    inline_redirects: list[Node] = list(redirects or [])
    for child in node.named_children:
        if child.type == "variable_assignment":
            assignments.append(child)
        elif child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            inline_redirects.append(child)
        elif child.type == "command_name":
            words.extend(child.named_children or [child])
        elif child.type == "comment":
            continue
        else:
            words.append(child)
    argv = await expand_words(ctx, words)
    argv.extend(extra or [])
    values = [(text_of(a.child_by_field_name("name") or a), await _assignment_value(ctx, a)) for a in assignments]
    if not argv:
        if "x" in ctx.options and values:
            await _xtrace(ctx, [f"{n}={v}" for n, v in values], [])
        for name, value in values:
            ctx.set_var(name, value)
        if inline_redirects:
            async with Redirections(ctx, inline_redirects) as _io:
                pass
        return ctx.last if any(a.child_by_field_name("value") is not None and _has_substitution(a)
                               for a in assignments) else 0
    if "x" in ctx.options:
        await _xtrace(ctx, [f"{n}={v}" for n, v in values], argv)
    run_ctx = ctx
    if values:
        run_ctx = ctx.with_io(env={**ctx.env, **dict(values)},
                              unexported=ctx.unexported - {n for n, _ in values})
    if inline_redirects:
        async with Redirections(run_ctx, inline_redirects) as io_ctx:
            return await run_argv(io_ctx, argv)
    return await run_argv(run_ctx, argv)


# What ash's xtrace leaves unquoted (its maybe_single_quote, busybox shell/ash.c): + , - . / digits : @ letters
# ] ^ _; any other character makes the word single-quoted.
_XTRACE_PLAIN = re.compile(r"[+,\-./0-9:@A-Z\]^_a-z]*")


def _xtrace_word(word: str) -> str:
    if _XTRACE_PLAIN.fullmatch(word):
        return word
    # ash's single_quote: 'abc'"'"'def' (a run of single quotes goes inside double quotes).
    return "".join(f'"{part}"' if part.startswith("'") else f"'{part}'"
                   for part in re.findall(r"'+|[^']+", word)) or "''"


async def _xtrace(ctx: Ctx, assignments: list[str], argv: list[str]) -> None:
    """`sh -x` / `set -x`: each simple command, expanded, on stderr after $PS4 (``+ ``), as ash prints it."""
    words = [f"{a.partition('=')[0]}={_xtrace_word(a.partition('=')[2])}" for a in assignments]
    words += [_xtrace_word(w) for w in argv]
    await ctx.err(ctx.env.get("PS4", "+ ") + " ".join(words) + "\n")


def _has_substitution(node: Node) -> bool:
    if node.type == "command_substitution":
        return True
    return any(_has_substitution(c) for c in node.named_children)


async def _assignment_value(ctx: Ctx, node: Node) -> str:
    value = node.child_by_field_name("value")
    if value is None:
        return ""
    if value.type == "array":
        raise Unsupported("arrays")
    return await expand_word(ctx, value)


async def run_argv(ctx: Ctx, argv: list[str]) -> int:
    """Run a command by name: a function, a builtin or tool, or what a real container would say."""
    if not argv:
        return 0
    name = argv[0]
    if name in ctx.functions:
        return await _call_function(ctx, ctx.functions[name], argv)
    base = name.rsplit("/", 1)[-1] if name.startswith("/") or name.startswith("./") else name
    tool = ctx.tools.get(base)
    if tool is None:
        if base in BUSYBOX_APPLETS or base in SHELL_BUILTINS:
            await ctx.err(f"sh: {base}: this command is not simulated by knetsim\n")
            return 127
        await ctx.err(f"sh: {name}: not found\n")
        return 127
    try:
        return await tool(ctx, argv)
    except FsError as exc:
        await ctx.err(f"{base}: {exc.path}: {exc.strerror_text}\n")
        return 1
    except Unsupported as exc:
        shellish = base in SHELL_BUILTINS or base in ("sh", "ash", "bash", "zsh", "test", "[", "[[")
        await ctx.err(f"{'sh' if shellish else base}: {exc.message}\n")
        return exc.status
    except ToolError as exc:
        await ctx.err(f"{base}: {exc.message}\n")
        return exc.status


async def _call_function(ctx: Ctx, body: Node, argv: list[str]) -> int:
    saved = ctx.args
    ctx.args = argv[1:]
    ctx.depth += 1
    try:
        if ctx.depth > MAX_DEPTH:
            raise ShellError("knetsim: functions nested too deep", 2)
        return await evaluate(ctx, body)
    except FunctionReturn as ret:
        return ret.code
    finally:
        ctx.depth -= 1
        ctx.args = saved


# --- compound commands ----------------------------------------------------------------------


async def _program(ctx: Ctx, node: Node) -> int:
    return await _statements(ctx, node.named_children, node)


async def _list(ctx: Ctx, node: Node) -> int:
    left, right = node.named_children[0], node.named_children[-1]
    op = next((c.type for c in node.children if not c.is_named and c.type in ("&&", "||")), "&&")
    code = ctx.last = await evaluate(ctx, left)
    if (op == "&&" and code == 0) or (op == "||" and code != 0):
        code = ctx.last = await evaluate(ctx, right)
    return code


async def _negated(ctx: Ctx, node: Node) -> int:
    return 0 if await evaluate(ctx, node.named_children[0]) else 1


async def _pipeline(ctx: Ctx, node: Node) -> int:
    stages = list(node.named_children)
    # `! a | b` negates the whole pipeline (POSIX 2.9.2); tree-sitter-bash binds the `!` to the first command, so it
    # is taken off that stage and applied to the pipeline's status (the e2e framework's `! ss ... | grep LISTEN`).
    negate = bool(stages) and stages[0].type == "negated_command" and bool(stages[0].named_children)
    if negate:
        stages[0] = stages[0].named_children[0]
    merge = [c.type == "|&" for c in node.children if not c.is_named and c.type in ("|", "|&")]
    pipes = [Pipe(ctx.process) for _ in stages[1:]]
    tasks = []
    for i, stage in enumerate(stages):
        out = pipes[i].write if i < len(pipes) else ctx.out
        sub = ctx.fork(stdin=pipes[i - 1].input if i else ctx.stdin, out=out)
        if i < len(merge) and merge[i]:
            sub.err = out
        tasks.append(ctx.spawn(_stage(sub, stage, pipes[i - 1] if i else None,
                                      pipes[i] if i < len(pipes) else None)))
    try:
        codes = await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        raise
    code = next((c for c in reversed(codes) if c), 0) if "pipefail" in ctx.options else codes[-1]
    return (0 if code else 1) if negate else code


async def _stage(ctx: Ctx, node: Node, reading: Pipe | None, writing: Pipe | None) -> int:
    try:
        return await _guarded(ctx, node)
    finally:
        await reap(ctx)
        if writing is not None:
            writing.close_writer()
        if reading is not None:
            reading.close_reader()


async def _subshell(ctx: Ctx, node: Node) -> int:
    sub = ctx.fork()
    try:
        return await _statements(sub, node.named_children, node)
    except ExitShell as exc:
        return exc.code
    finally:
        await reap(sub)


async def _group(ctx: Ctx, node: Node) -> int:
    return await _statements(ctx, node.named_children, node)


async def _redirected(ctx: Ctx, node: Node) -> int:
    body = node.child_by_field_name("body")
    redirects = [c for c in node.named_children if c != body]
    extra: list[str] = []
    for r in redirects:
        # tree-sitter-bash reads `echo > f hi` as a redirect to `f hi`: what follows the first word
        # are the command's arguments.
        dests = r.children_by_field_name("destination")
        if r.type == "file_redirect" and len(dests) > 1:
            extra.extend(await expand_words(ctx, dests[1:]))
    if body is not None and body.type == "command":
        return await _command(ctx, body, extra, redirects)
    if extra:
        raise ShellError(f'syntax error: unexpected "{extra[0]}"', 2)
    async with Redirections(ctx, redirects) as io_ctx:
        if body is None:
            return 0
        return await evaluate(io_ctx, body)


def _split_clauses(node: Node) -> list[tuple[str, list[Node]]]:
    """``if a; then b; elif c; then d; else e; fi`` → [("if", [a]), ("then", [b]), ("elif", ...)...]."""
    parts: list[tuple[str, list[Node]]] = []
    for child in node.children:
        if not child.is_named:
            if child.type in ("if", "then", "elif", "else", "do", "while", "until"):
                parts.append((child.type, []))
            continue
        if child.type in ("elif_clause", "else_clause"):
            parts.extend(_split_clauses(child))
            continue
        if child.type == "comment":
            continue
        if parts:
            parts[-1][1].append(child)
    return parts


async def _run_nodes(ctx: Ctx, nodes: list[Node], parent: Node) -> int:
    return await _statements(ctx, nodes, parent) if nodes else 0


async def _if(ctx: Ctx, node: Node) -> int:
    clauses = _split_clauses(node)
    i = 0
    while i < len(clauses):
        keyword, nodes = clauses[i]
        if keyword in ("if", "elif"):
            cond = await _run_nodes(ctx, nodes, node)
            if cond == 0:
                return await _run_nodes(ctx, clauses[i + 1][1], node)
            i += 2
        elif keyword == "else":
            return await _run_nodes(ctx, nodes, node)
        else:
            i += 1
    return 0


async def _loop_body(ctx: Ctx, body: Node) -> str:
    """Run one iteration; '' to go on, 'break' to stop."""
    try:
        ctx.last = await _statements(ctx, body.named_children, body)
    except LoopControl as exc:
        if exc.levels > 1:
            raise LoopControl(exc.kind, exc.levels - 1) from None
        return "break" if exc.kind == "break" else ""
    return ""


async def _loop(ctx: Ctx, body: Node | None, next_round: Callable[[], Awaitable[bool]]) -> int:
    """Run ``body`` while ``next_round()`` says so; the status of the last body run (0 if none)."""
    code = 0
    ctx.loops += 1
    try:
        while True:
            # An empty body still takes its turn: `while :; do :; done` must yield like any other loop.
            await ctx.tick()
            if not await next_round():
                break
            if body is not None and await _loop_body(ctx, body) == "break":
                code = ctx.last
                break
            code = ctx.last
    finally:
        ctx.loops -= 1
    return code


async def _while(ctx: Ctx, node: Node) -> int:
    until = any(c.type == "until" for c in node.children if not c.is_named)
    conditions = [c for c in node.children_by_field_name("condition") if c.is_named]

    async def again() -> bool:
        return (await _run_nodes(ctx, conditions, node) == 0) != until
    return await _loop(ctx, node.child_by_field_name("body"), again)


async def _for(ctx: Ctx, node: Node) -> int:
    variable = text_of(node.child_by_field_name("variable"))  # type: ignore[arg-type]
    values = [v for v in node.children_by_field_name("value") if v.is_named]
    has_in = any(c.type == "in" for c in node.children if not c.is_named)
    items = iter(await expand_words(ctx, values) if has_in else list(ctx.args))

    async def again() -> bool:
        item = next(items, None)
        if item is None:
            return False
        ctx.env[variable] = item
        ctx.grew(len(item))
        return True
    return await _loop(ctx, node.child_by_field_name("body"), again)


async def _case(ctx: Ctx, node: Node) -> int:
    value = await expand_word(ctx, node.child_by_field_name("value"))  # type: ignore[arg-type]
    for item in node.named_children:
        if item.type != "case_item":
            continue
        patterns = [p for p in item.children_by_field_name("value") if p.is_named]
        for p in patterns:
            if fnmatch.fnmatchcase(value, await expand_word(ctx, p, pattern=True)):
                body = [c for c in item.named_children if c not in patterns]
                return await _run_nodes(ctx, body, item)
    return 0


async def _function(ctx: Ctx, node: Node) -> int:
    name = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    if name is not None and body is not None:
        ctx.functions[text_of(name)] = body
    return 0


async def _assignment(ctx: Ctx, node: Node) -> int:
    name = node.child_by_field_name("name")
    if name is None or name.type != "variable_name":
        raise Unsupported(f"`{text_of(node)}`")
    value = await _assignment_value(ctx, node)
    if "x" in ctx.options:
        await _xtrace(ctx, [f"{text_of(name)}={value}"], [])
    ctx.set_var(text_of(name), value)
    return ctx.last if _has_substitution(node) else 0


async def _assignments(ctx: Ctx, node: Node) -> int:
    code = 0
    for child in node.named_children:
        code = await _assignment(ctx, child)
    return code


async def _declaration(ctx: Ctx, node: Node) -> int:
    keyword = next((c.type for c in node.children if not c.is_named), "")
    if keyword not in ("export", "readonly", "local"):
        raise Unsupported(f"`{keyword}`")
    for child in node.named_children:
        if child.type == "variable_assignment":
            await _assignment(ctx, child)
            if keyword == "export":
                ctx.unexported.discard(text_of(child.child_by_field_name("name") or child))
        elif child.type == "word" and text_of(child).startswith("-"):
            if keyword == "export" and text_of(child) == "-p":
                await ctx.out("".join(f"export {k}='{v}'\n" for k, v in sorted(ctx.env.items())))
                continue
            raise Unsupported(f"`{keyword} {text_of(child)}`")
        else:
            name = await expand_word(ctx, child)
            if name not in ctx.env:
                ctx.set_var(name, "")
            if keyword == "export":
                ctx.unexported.discard(name)
    return 0


async def _unset(ctx: Ctx, node: Node) -> int:
    for child in node.named_children:
        name = await expand_word(ctx, child)
        if name == "-f":
            continue
        ctx.env.pop(name, None)
        ctx.functions.pop(name, None)
    return 0


async def _test_command(ctx: Ctx, node: Node) -> int:
    opener = next((c.type for c in node.children if not c.is_named), "[")
    argv = [opener]
    for child in node.named_children:
        argv.extend(await _test_words(ctx, child))
    argv.append("]]" if opener == "[[" else "]")
    return await run_argv(ctx, argv)


async def _test_words(ctx: Ctx, node: Node) -> list[str]:
    if node.type in ("binary_expression", "unary_expression", "parenthesized_expression", "negated_expression"):
        out: list[str] = []
        for child in node.children:
            if child.is_named and child.type != "test_operator":
                out.extend(await _test_words(ctx, child))
            else:
                if child.type in ("=~",):
                    raise Unsupported("`=~` (regular expression match)")
                out.append(text_of(child))
        return out
    if node.type in ("regex", "extglob_pattern"):
        return [text_of(node)]
    return await expand_words(ctx, [node])


_HANDLERS: dict[str, Callable[[Ctx, Node], Awaitable[int]]] = {
    "program": _program, "command": _command, "list": _list, "pipeline": _pipeline,
    "negated_command": _negated, "subshell": _subshell, "compound_statement": _group,
    "redirected_statement": _redirected, "if_statement": _if, "while_statement": _while,
    "for_statement": _for, "case_statement": _case, "function_definition": _function,
    "variable_assignment": _assignment, "variable_assignments": _assignments,
    "declaration_command": _declaration, "unset_command": _unset, "test_command": _test_command,
    "do_group": _group,
}


# --- command substitution -------------------------------------------------------------------


class _Capture(Held):
    """The output a ``$(...)`` collects: the shell's memory until the value is made."""

    def __init__(self, process: Process | None) -> None:
        self.chunks: list[str] = []
        self.size = 0
        self.process = process
        if process is not None:
            process.hold(self)

    def held(self) -> int:
        return self.size

    async def collect(self, text: str) -> None:
        if self.process is not None:
            self.process.grew(len(text))
        self.chunks.append(text)
        self.size += len(text)


@substitutes
async def _substitute(ctx: Ctx, node: Node) -> str:
    """``$(...)`` / backticks: the commands' stdout in a subshell, trailing newlines removed."""
    capture = _Capture(ctx.process)
    captured = capture.chunks
    sub = ctx.fork(out=capture.collect)
    inner = node.named_children
    backtick = (node.text or b"").startswith(b"`")
    try:
        if backtick and len(inner) == 1 and inner[0].type == "command" and "\\`" in text_of(node):
            # Nested backticks: the inner text is re-parsed after removing one level of escaping.
            ctx.last = await run_line(sub, text_of(node)[1:-1].replace("\\`", "`").replace("\\\\", "\\"))
        else:
            ctx.last = await _statements(sub, inner, node)
    except ExitShell as exc:
        ctx.last = exc.code
    finally:
        await reap(sub)
    size, capture.size = capture.size, 0  # the output collected becomes the value: held once, not twice
    ctx.building(size)
    return "".join(captured).rstrip("\n")
