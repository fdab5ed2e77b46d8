"""The shell's own builtins: ``sh`` itself, ``exit``, ``cd``, ``set``, ``read``, ``eval``, ``.``, ``wait``...

They change the shell they run in (its variables, directory, positional parameters, control
flow), so they work on the ``Ctx`` directly; ``shell/`` is the interpreter they plug into.
"""

from __future__ import annotations

import asyncio
import re

from .podfs import FsError
from .shell import (
    MAX_DEPTH,
    SHELL_BUILTINS,
    Ctx,
    ExitShell,
    FunctionReturn,
    LoopControl,
    ShellError,
    Unsupported,
    register,
    run_argv,
    run_line,
    run_script,
)


@register("sh", "ash", "bash", "zsh")
async def _sh(ctx: Ctx, argv: list[str]) -> int:
    args = argv[1:]
    flags: set[str] = set()
    while args and args[0].startswith("-") and args[0] not in ("-", "--") and args[0] != "-c":
        flags.update(args.pop(0)[1:])
    if args and args[0] == "--":
        args.pop(0)
    sub = ctx.fork()
    sub.functions = {}
    sub.env = ctx.exported_env
    sub.unexported = set()
    sub.cwd = ctx.cwd
    if "e" in flags:
        raise Unsupported(f"`{argv[0]} -{''.join(sorted(flags))}`")
    if "x" in flags:
        sub.options.add("x")
    if args and args[0] == "-c":
        if len(args) < 2:
            await ctx.err(f"{argv[0]}: -c requires an argument\n")
            return 2
        sub.arg0 = args[2] if len(args) > 2 else argv[0]
        sub.args = args[3:]
        return await run_script(sub, args[1])
    if args:
        assert ctx.fs is not None
        try:
            script = ctx.fs.read(ctx.path(args[0]))
        except FsError:
            await ctx.err(f"{argv[0]}: can't open '{args[0]}': No such file or directory\n")
            return 2
        sub.arg0, sub.args = args[0], args[1:]
        return await run_script(sub, script)
    if ctx.stdin is not None:
        # `echo 'cmd' | sh`: the script is what arrives on stdin.
        return await run_script(sub, await ctx.read_stdin())
    return 0


@register("exec")
async def _exec(ctx: Ctx, argv: list[str]) -> int:
    # The shell's process is replaced: whatever the command returns is the shell's exit.
    if len(argv) < 2:
        return 0
    raise ExitShell(await run_argv(ctx, argv[1:]))


@register("exit")
async def _exit(ctx: Ctx, argv: list[str]) -> int:
    try:
        code = int(argv[1]) if len(argv) > 1 else ctx.last
    except ValueError:
        await ctx.err(f"sh: exit: line 1: Illegal number: {argv[1]}\n")
        code = 2
    raise ExitShell(code & 0xFF)


@register("return")
async def _return(ctx: Ctx, argv: list[str]) -> int:
    raise FunctionReturn(int(argv[1]) & 0xFF if len(argv) > 1 and argv[1].lstrip("-").isdigit() else ctx.last)


@register("break", "continue")
async def _break(ctx: Ctx, argv: list[str]) -> int:
    if not ctx.loops:
        return 0
    levels = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 1
    raise LoopControl(argv[0], max(1, min(levels, ctx.loops)))


@register("true", ":")
async def _true(ctx: Ctx, argv: list[str]) -> int:
    return 0


@register("false")
async def _false(ctx: Ctx, argv: list[str]) -> int:
    return 1


@register("cd")
async def _cd(ctx: Ctx, argv: list[str]) -> int:
    assert ctx.fs is not None
    target = argv[1] if len(argv) > 1 else ctx.env.get("HOME", "/")
    path = ctx.path(target)
    if not ctx.fs.is_dir(path):
        await ctx.err(f"sh: cd: line 1: can't cd to {target}: No such file or directory\n")
        return 2
    ctx.cwd = path
    ctx.env["PWD"] = path
    return 0


@register("set")
async def _set(ctx: Ctx, argv: list[str]) -> int:
    args = argv[1:]
    if not args:
        await ctx.out("".join(f"{k}='{v}'\n" for k, v in sorted(ctx.env.items())))
        return 0
    while args and args[0][:1] in "-+" and args[0] not in ("-", "--"):
        flag = args.pop(0)
        on = flag[0] == "-"
        if flag[1:] == "o" and args:
            name = args.pop(0)
            if name != "pipefail":
                raise Unsupported(f"`set {flag} {name}`")
            (ctx.options.add if on else ctx.options.discard)(name)
            continue
        for letter in flag[1:]:
            if letter in ("u", "x"):
                (ctx.options.add if on else ctx.options.discard)(letter)
            elif letter == "e":
                raise Unsupported(f"`set {flag}`")
            else:
                raise Unsupported(f"`set {flag}`")
    if args and args[0] == "--":
        args.pop(0)
    if args or (argv[1:] and argv[-1] == "--"):
        ctx.args = list(args)
    return 0


@register("shift")
async def _shift(ctx: Ctx, argv: list[str]) -> int:
    n = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 1
    if n > len(ctx.args):
        return 1
    ctx.args = ctx.args[n:]
    return 0


@register("eval")
async def _eval(ctx: Ctx, argv: list[str]) -> int:
    ctx.depth += 1
    try:
        if ctx.depth > MAX_DEPTH:
            raise ShellError("knetsim: eval nested too deep", 2)
        return await run_line(ctx, " ".join(argv[1:]))
    finally:
        ctx.depth -= 1


@register(".", "source")
async def _source(ctx: Ctx, argv: list[str]) -> int:
    assert ctx.fs is not None
    if len(argv) < 2:
        return 0
    try:
        script = ctx.fs.read(ctx.path(argv[1]))
    except FsError:
        await ctx.err(f"sh: .: line 1: can't open '{argv[1]}': No such file or directory\n")
        return 2
    return await run_line(ctx, script)


@register("read")
async def _read(ctx: Ctx, argv: list[str]) -> int:
    args = argv[1:]
    raw = False
    while args and args[0].startswith("-"):
        flag = args.pop(0)
        if flag == "-r":
            raw = True
        else:
            raise Unsupported(f"`read {flag}`")
    names = args or ["REPLY"]
    line = await ctx.stdin.line() if ctx.stdin is not None else None
    if line is None:
        for n in names:
            ctx.env[n] = ""
        return 1
    text = line.decode(errors="replace").rstrip("\n")
    if not raw:
        text = re.sub(r"\\(.)", r"\1", text)
    words = text.split(None, len(names) - 1) if len(names) > 1 else [text.strip()]
    for i, n in enumerate(names):
        ctx.env[n] = words[i] if i < len(words) else ""
    return 0


@register("wait")
async def _wait(ctx: Ctx, argv: list[str]) -> int:
    code = 0
    for job in list(ctx.jobs):
        try:
            code = await job
        except asyncio.CancelledError:
            code = 143
    ctx.jobs.clear()
    return code


@register("type", "command", "which")
async def _type(ctx: Ctx, argv: list[str]) -> int:
    args = argv[1:]
    if argv[0] == "command":
        if args and args[0] in ("-v", "-V"):
            args = args[1:]
        elif args:
            return await run_argv(ctx, args)
    code = 0
    for name in args:
        if name in ctx.functions:
            line = f"{name} is a function" if argv[0] == "type" else name
        elif name in ctx.tools:
            if name in SHELL_BUILTINS or name in ("echo", "printf", "test", "[", "true", "false", "pwd", ":"):
                line = f"{name} is a shell builtin" if argv[0] == "type" else name
            else:
                line = f"{name} is /bin/{name}" if argv[0] == "type" else f"/bin/{name}"
        else:
            code = 1
            if argv[0] == "type":
                await ctx.out(f"{name}: not found\n")
            continue
        if argv[0] == "which" and not line.startswith("/"):
            line = f"/bin/{name}"
        await ctx.out(line + "\n")
    return code

