"""Redirections: ``>`` ``>>`` ``<`` ``2>&1`` ``&>`` ``n>&-`` and here-documents, applied left to right
into the container's files (``podfs``), ``/dev/null`` and the command's streams."""

from __future__ import annotations

import re
from typing import Any

from ..podfs import FsError
from .ctx import Ctx, Input, Node, ShellError, Sink, Unsupported, discard
from .expand import expand_parts, expand_word
from .parse import text_of


class Redirections:
    """Apply a command's redirections left to right (``> f 2>&1`` differs from ``2>&1 > f``)."""

    def __init__(self, ctx: Ctx, nodes: list[Node]) -> None:
        self.ctx, self.nodes = ctx, nodes

    async def __aenter__(self) -> Ctx:
        ctx = self.ctx
        fds: dict[int, Any] = {0: ctx.stdin, 1: ctx.out, 2: ctx.err}
        for node in self.nodes:
            await self._apply(ctx, node, fds)
        return ctx.with_io(stdin=fds.get(0), out=fds.get(1) or discard, err=fds.get(2) or discard)

    async def __aexit__(self, *_exc: object) -> None:
        return None

    async def _apply(self, ctx: Ctx, node: Node, fds: dict[int, Any]) -> None:
        if node.type == "herestring_redirect":
            raise Unsupported("here-strings (<<<)")
        if node.type == "heredoc_redirect":
            fds[0] = Input.text(await _heredoc(ctx, node), ctx.process)
            return
        descriptor = next((c for c in node.named_children if c.type == "file_descriptor"), None)
        op = next((c.type for c in node.children if not c.is_named), ">")
        dests = node.children_by_field_name("destination")
        target = await expand_word(ctx, dests[0]) if dests else ""
        if op in ("&>", "&>>"):
            sink = self._file_sink(ctx, target, op == "&>>")
            fds[1] = fds[2] = sink
            return
        default = 0 if op.startswith("<") else 1
        fd = int(text_of(descriptor)) if descriptor is not None else default
        if fd > 9:
            raise ShellError(f"{fd}: bad file descriptor", 2)
        if op in (">&", "<&"):
            if target == "-":
                fds[fd] = None
                return
            if target.isdigit():
                source = int(target)
                if source not in fds:
                    raise ShellError(f"{target}: bad file descriptor", 2)
                fds[fd] = fds[source]
                return
            if op == ">&":  # `>&file` is `&>file`
                fds[1] = fds[2] = self._file_sink(ctx, target, False)
                return
            raise ShellError(f"{target}: bad file descriptor", 2)
        if op == "<":
            fds[fd] = Input.text(self._read_file(ctx, target), ctx.process) if fd == 0 else None
            return
        if op in (">", ">>", ">|"):
            fds[fd] = self._file_sink(ctx, target, op == ">>")
            return
        raise Unsupported(f"the redirection `{op}`")

    @staticmethod
    def _read_file(ctx: Ctx, target: str) -> str:
        assert ctx.fs is not None
        if target in ("/dev/stdin", "/dev/tty"):
            raise Unsupported(f"reading {target} by name")
        try:
            return ctx.fs.read(ctx.path(target))
        except FsError:
            raise ShellError(f"can't open {target}: no such file", 1) from None

    @staticmethod
    def _file_sink(ctx: Ctx, target: str, append: bool) -> Sink:
        assert ctx.fs is not None
        path = ctx.path(target)
        if path == "/dev/null":
            return discard
        if path in ("/dev/stdout", "/dev/fd/1"):
            return ctx.out
        if path in ("/dev/stderr", "/dev/fd/2"):
            return ctx.err
        fs = ctx.fs
        try:
            fs.write(path, "", append=append)
        except FsError as exc:
            if exc.errno_name == "EISDIR":
                raise ShellError(f"can't create {target}: Is a directory", 1) from None
            raise ShellError(f"can't create {target}: nonexistent directory", 1) from None

        async def write(text: str) -> None:
            try:
                fs.write(path, text, append=True)
            except FsError as exc:
                raise ShellError(f"write error: {exc.strerror_text} ({exc.detail})", 1) from None
        return write


async def _heredoc(ctx: Ctx, node: Node) -> str:
    start = next((c for c in node.named_children if c.type == "heredoc_start"), None)
    body = next((c for c in node.named_children if c.type == "heredoc_body"), None)
    if any(c.type == "<<-" for c in node.children if not c.is_named):
        raise Unsupported("`<<-` here-documents")
    if body is None:
        return ""
    quoted = start is not None and any(q in text_of(start) for q in "'\"\\")
    if quoted:
        return text_of(body)
    out: list[str] = []
    pos = body.start_byte
    raw = body.text or b""
    base = body.start_byte
    for child in body.named_children:
        if child.type == "heredoc_content":
            continue
        out.append(raw[pos - base:child.start_byte - base].decode(errors="replace"))
        parts = await expand_parts(ctx, child, quoted=True)
        ctx.building(sum(len(t) for t in out) + sum(len(t) for t, _q in parts))
        out.append("".join(t for t, _q in parts))
        pos = child.end_byte
    out.append(raw[pos - base:].decode(errors="replace"))
    text = "".join(out)
    return re.sub(r"\\([$`\\])", r"\1", text)
