"""One command running in the simulated shell: its stdin, a tty's line discipline, Ctrl-C.

Shared by ``kubectl exec`` sessions (``wsexec.Session``) and the containers the simulated
kubelet runs (``kubelet.Container``): both feed bytes in with ``feed``/``eof`` and get text out
through the ``Ctx``'s ``out``/``err``. With a tty the line discipline does what a pty does:
echo, backspace, Ctrl-C (interrupts the running command), Ctrl-D on an empty line (EOF).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

# They register themselves in shell.BUILTIN_TOOLS.
from . import agnhost, applets, archive, builtins, ciliumdbg, nettools, nodetools, shell  # noqa: F401
from .cgroup import Held, Killed

SHELLS = ("sh", "ash", "bash", "zsh")
STDIN_BUFFER = 64 << 10  # bytes of stdin waiting to be read before the sender is held back (a pipe's size)


def builtin_tools() -> Mapping[str, shell.Tool]:
    """Every command the simulated container has (this module imports each tool's module)."""
    return shell.BUILTIN_TOOLS


def is_interactive_shell(argv: list[str]) -> bool:
    """``sh`` (or ``sh -i``/``bash -l``...): a shell that reads its commands from stdin."""
    return bool(argv) and argv[0].rsplit("/", 1)[-1] in SHELLS and all(a in ("-i", "-l", "-") for a in argv[1:])


class Proc(Held):
    """``ctx.process`` (when its creator put it in a cgroup) is what it runs as: killed, ``run`` returns
    the kill's status (137 for SIGKILL) whatever the command was doing."""

    def __init__(self, ctx: shell.Ctx, tty: bool, stdin: bool) -> None:
        self.ctx, self.tty, self.stdin_open = ctx, tty, stdin
        self.inbox: asyncio.Queue[bytes] = asyncio.Queue()  # b"" = EOF
        self.queued = 0  # bytes in the inbox: the stdin pipe's contents
        self.room = asyncio.Event()  # set while the sender may send more
        self.room.set()
        self.current: asyncio.Task[int] | None = None
        self._interrupted = False
        self.process = ctx.process
        if self.process is not None:
            self.process.hold(self)
        ctx.stdin = shell.Input(self._stdin, process=self.process) if stdin else None

    def held(self) -> int:
        return self.queued

    async def _stdin(self) -> bytes:
        data = await self.inbox.get()
        self.queued -= len(data)
        if self.queued <= STDIN_BUFFER:
            self.room.set()
        return data

    def feed(self, data: bytes) -> None:
        if self.tty and b"\x03" in data and self.current is not None and not self.current.done():
            self._interrupted = True
            self.current.cancel()
            return
        if self.process is not None and self.process.killed is not None:
            return  # nobody reads a dead process's stdin
        self.inbox.put_nowait(data)
        self.queued += len(data)
        if self.queued > STDIN_BUFFER:
            self.room.clear()  # the sender waits (``room``) until the command has read some

    def eof(self) -> None:
        self.inbox.put_nowait(b"")

    async def _run_task(self, coro: Any) -> int:
        self.current = self.ctx.spawn(coro)
        if self.process is not None:
            self.process.task = self.current
        try:
            return int(await self.current)
        except Killed as exc:
            return exc.code
        except asyncio.CancelledError:
            if self.process is not None and self.process.killed is not None:
                return self.process.killed.code
            if not self._interrupted:
                raise
            self._interrupted = False
            await self.ctx.out("^C\n")
            return 130
        finally:
            self.current = None

    async def run(self, argv: list[str]) -> int:
        """Run ``argv`` to its exit code; a lone shell with stdin reads and runs lines (a REPL)."""
        try:
            if self.stdin_open and is_interactive_shell(argv):
                return await self._repl()
            return await self._run_task(self._run_argv(list(argv)))
        except shell.ExitShell as exc:
            return exc.code
        finally:
            self.room.set()
            if self.process is not None:
                self.process.exit()

    async def _run_argv(self, argv: list[str]) -> int:
        try:
            return await shell.run_argv(self.ctx, argv)
        except shell.ShellError as exc:
            await self.ctx.err(f"sh: {exc.message}\n")
            return exc.status
        finally:
            await shell.reap(self.ctx)

    async def _readline(self, buf: bytearray) -> str | None:
        while True:
            nl = buf.find(b"\n") if not self.tty else -1
            if nl >= 0:
                line = bytes(buf[:nl])
                del buf[:nl + 1]
                return line.decode(errors="replace")
            chunk = await self._stdin()
            if not chunk:
                if buf:
                    line = bytes(buf)
                    buf.clear()
                    return line.decode(errors="replace")
                return None
            if not self.tty:
                buf.extend(chunk)
                continue
            for b in chunk:
                if b in (0x0D, 0x0A):
                    await self.ctx.out("\n")
                    line = bytes(buf)
                    buf.clear()
                    return line.decode(errors="replace")
                if b in (0x7F, 0x08):
                    if buf:
                        del buf[-1]
                        await self.ctx.out("\b \b")
                elif b == 0x04:
                    if not buf:
                        return None
                elif b == 0x03:
                    buf.clear()
                    await self.ctx.out("^C\n/ # ")
                elif b >= 0x20 or b == 0x09:
                    buf.append(b)
                    await self.ctx.out(chr(b))

    async def _repl(self) -> int:
        buf = bytearray()
        code = 0
        while True:
            if self.tty:
                await self.ctx.out("/ # ")
            line = await self._readline(buf)
            if line is None:
                return code
            try:
                code = await self._run_task(shell.run_line(self.ctx, line))
            except shell.ExitShell:
                await shell.reap(self.ctx)
                raise
            if self.process is not None and self.process.killed is not None:
                return code  # the shell itself was killed
