"""A busybox-like ``sh`` for ``kubectl exec`` and the containers the simulated kubelet runs.

Scripts are parsed by tree-sitter's bash grammar (``tree-sitter-bash``: maintained, made for
exactly this, and it keeps what a tokenizer like ``shlex`` loses: which text was quoted, where
``$(...)`` and backticks nest, which ``>`` is a redirection). ``bashlex`` was the other
candidate; it is GPL-3 (this project is Apache-2.0) and unmaintained since 2023. The tree is
then evaluated here as busybox ``ash`` would:

* lists ``;`` ``&&`` ``||`` ``!``, pipelines ``|`` (``|&``), background ``&`` and ``wait``;
* redirections ``>`` ``>>`` ``<`` ``2>&1`` ``>&2`` ``&>`` ``n>&-`` and here-documents, into the
  container's simulated filesystem (``podfs``) and ``/dev/null``;
* quoting (single, double, backslash, ``$'...'``), parameter expansion (``$VAR`` ``${VAR}``
  ``${VAR:-x}`` ``${#VAR}`` ``${VAR#pat}`` ``${VAR%pat}`` ``${VAR/a/b}`` ``$?`` ``$#`` ``$@``
  ``$1``...), command substitution ``$(...)`` and backticks, arithmetic ``$((...))``, field
  splitting and pathname expansion of unquoted results;
* ``if`` ``while`` ``until`` ``for`` ``case``, ``{ }``, ``( )``, functions, ``[ ]``/``test``.

Anything else (process substitution, ``[[ =~ ]]``, arrays, ``trap``, job control...) answers
``sh: ... is not simulated by knetsim`` with exit 2, never a silently wrong result. Commands are
looked up in ``TOOLS`` (``register``): the shell's builtins live in ``builtins.py``, the applets in
``applets.py`` and ``nettools.py``.
A busybox applet knetsim does not imitate says so (exit 127); a name busybox does not have is
``sh: NAME: not found`` (127), as in a real container.

What keeps the server responsive: every command runs in its container's cgroup (``cgroup.py``):
the interpreter ticks at every step (yielding the event loop, sleeping when over its CPU quota), and
what a shell holds (variables, pipes, here-documents, ``$(...)`` output, a value being expanded) is
counted against the container's memory, which OOM-kills it when full. Nesting (``sh -c`` in
``$(...)`` in functions) stops at ``MAX_DEPTH``, pipes hold at most ``PIPE_CHUNKS`` unread chunks,
and a script longer than ``MAX_SCRIPT`` is not parsed.
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import regex
import tree_sitter
import tree_sitter_bash

from ..model import saferegex
from .cgroup import Held, Process
from .podfs import FsError, PodFS, as_bytes

MAX_DEPTH = 40
PIPE_CHUNKS = 64
BUILD_CHECK = 4096  # bytes: smaller values are counted when they are stored, not before they are made
# Parsing holds the event loop (tree-sitter keeps the GIL) about 1 ms per KiB and 75 bytes per byte of script.
MAX_SCRIPT = 64 << 10
BUSYBOX_BANNER = "BusyBox v1.36.1 (2023-05-18 22:34:17 UTC) multi-call binary."

Sink = Callable[[str], Awaitable[None]]
Tool = Callable[["Ctx", list[str]], Awaitable[int]]
_REGISTERED: dict[str, Tool] = {}
# The commands the simulated container has (builtins, applets, net tools: each module registers its
# own when imported; proc.py, through which every command runs, imports them all). Read-only: a
# creator that wants other tools (kernel mode runs the real ones in the pod's namespace) hands its
# Ctx a table of its own.
BUILTIN_TOOLS: Mapping[str, Tool] = MappingProxyType(_REGISTERED)

# busybox 1.36's applets (`busybox --list` of the docker-library busybox image). A command in
# this list that knetsim has no tool for says it is not simulated; any other unknown name is
# `not found`, as a real container answers.
_APPLET_NAMES = """
[ [[ acpid add-shell addgroup adduser adjtimex arch arp arping ascii ash awk base32 base64 basename bc beep
blkdiscard blkid blockdev bootchartd brctl bunzip2 bzcat bzip2 cal cat chat chattr chgrp chmod chown chpasswd
chpst chroot chrt chvt cksum clear cmp comm conspy cp cpio crc32 crond crontab cryptpw cttyhack cut date dc dd
deallocvt delgroup deluser depmod devmem df dhcprelay diff dirname dmesg dnsd dnsdomainname dos2unix dpkg
dpkg-deb du dumpkmap dumpleases echo ed egrep eject env envdir envuidgid ether-wake expand expr factor
fakeidentd fallocate false fatattr fbset fbsplash fdflush fdformat fdisk fgconsole fgrep find findfs flock
fold free freeramdisk fsck fsck.minix fsfreeze fstrim fsync ftpd ftpget ftpput fuser getfattr getopt getty
grep groups gunzip gzip halt hd hdparm head hexdump hexedit hostid hostname httpd hush hwclock i2cdetect
i2cdump i2cget i2cset i2ctransfer id ifconfig ifdown ifenslave ifplugd ifup inetd init insmod install ionice
iostat ip ipaddr ipcalc ipcrm ipcs iplink ipneigh iproute iprule iptunnel kbd_mode kill killall killall5 klogd
last less link linux32 linux64 linuxrc ln loadfont loadkmap logger login logname logread losetup lpd lpq lpr
ls lsattr lsmod lsof lspci lsscsi lsusb lzcat lzma lzop man md5sum mdev mesg microcom mim mkdir mkdosfs mke2fs
mkfifo mkfs.ext2 mkfs.minix mkfs.vfat mknod mkpasswd mkswap mktemp modinfo modprobe more mount mountpoint
mpstat mt mv nameif nanddump nandwrite nbd-client nc netstat nice nl nmeter nohup nologin nproc nsenter
nslookup ntpd nuke od openvt partprobe passwd paste patch pgrep pidof ping ping6 pipe_progress pivot_root
pkill pmap popmaildir poweroff powertop printenv printf ps pscan pstree pwd pwdx raidautorun rdate rdev
readahead readlink readprofile realpath reboot reformime remove-shell renice reset resize resume rev rm rmdir
rmmod route rpm rpm2cpio rtcwake run-init run-parts runlevel runsv runsvdir rx script scriptreplay sed
sendmail seq setarch setconsole setfattr setfont setkeycodes setlogcons setpriv setserial setsid setuidgid sh
sha1sum sha256sum sha3sum sha512sum showkey shred shuf slattach sleep smemcap softlimit sort split ssl_client
start-stop-daemon stat strings stty su sulogin sum sv svc svlogd svok swapoff swapon switch_root sync sysctl
syslogd tac tail tar taskset tc tcpsvd tee telnet telnetd test tftp tftpd time timeout top touch tr traceroute
traceroute6 tree true truncate ts tsort tty ttysize tunctl ubiattach ubidetach ubimkvol ubirename ubirmvol
ubirsvol ubiupdatevol udhcpc udhcpc6 udhcpd udpsvd uevent umount uname unexpand uniq unix2dos unlink unlzma
unshar unxz unzip uptime users usleep uudecode uuencode vconfig vi vlock volname w wall watch watchdog wc wget
which who whoami whois xargs xxd xz xzcat yes zcat zcip
"""
BUSYBOX_APPLETS = frozenset(_APPLET_NAMES.split())
SHELL_BUILTINS = frozenset({":", ".", "break", "cd", "continue", "eval", "exec", "exit", "export", "local",
                            "read", "readonly", "return", "set", "shift", "source", "type", "command", "unset",
                            "wait", "trap", "ulimit", "umask", "alias", "unalias", "getopts", "hash", "jobs",
                            "fg", "bg", "times", "let"})

_LANGUAGE = tree_sitter.Language(tree_sitter_bash.language())
_PARSER = tree_sitter.Parser(_LANGUAGE)
Node = tree_sitter.Node


def register(*names: str) -> Callable[[Tool], Tool]:
    def wrap(fn: Tool) -> Tool:
        for name in names:
            _REGISTERED[name] = fn
        return fn
    return wrap


# --- errors and control flow ---------------------------------------------------------------


class ExitShell(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class ShellError(Exception):
    """An error the shell reports as ``sh: MESSAGE`` before the command's status becomes ``status``."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.message, self.status = message, status


class Unsupported(ShellError):
    def __init__(self, what: str) -> None:
        super().__init__(f"{what} is not simulated by knetsim", 2)


class ToolError(ShellError):
    """A command's own error: printed as ``<command>: MESSAGE``, its exit status ``status``."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message, status)


class BrokenPipe(Exception):
    """The reading end of a pipe is gone: the writer dies of SIGPIPE (status 141)."""


class LoopControl(Exception):
    def __init__(self, kind: str, levels: int) -> None:
        super().__init__(kind)
        self.kind, self.levels = kind, levels


class FunctionReturn(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


# --- I/O --------------------------------------------------------------------------------


class Input(Held):
    """A command's stdin: chunks from a source (exec stdin, a pipe, a file), readable line by line
    so that ``read`` in a loop consumes one line at a time and leaves the rest. What it has read and
    not handed out yet is memory of the ``process`` reading it."""

    def __init__(self, source: Callable[[], Awaitable[bytes]] | None = None, data: bytes = b"",
                 process: Process | None = None) -> None:
        self._source = source
        self._buf = bytearray(data)
        self._eof = source is None
        self.process = process
        if process is not None:
            process.hold(self)
            process.grew(len(data))

    @classmethod
    def text(cls, text: str, process: Process | None = None) -> Input:
        return cls(None, as_bytes(text), process)

    def held(self) -> int:
        return len(self._buf)

    async def _fill(self) -> bool:
        if self._eof:
            return False
        assert self._source is not None
        chunk = await self._source()
        if not chunk:
            self._eof = True
            return False
        if self.process is not None:
            self.process.grew(len(chunk))
        self._buf.extend(chunk)
        return True

    async def chunk(self) -> bytes:
        if not self._buf and not await self._fill():
            return b""
        data = bytes(self._buf)
        self._buf.clear()
        return data

    async def line(self) -> bytes | None:
        while b"\n" not in self._buf:
            if not await self._fill():
                if not self._buf:
                    return None
                data = bytes(self._buf)
                self._buf.clear()
                return data
        nl = self._buf.index(b"\n")
        data = bytes(self._buf[:nl + 1])
        del self._buf[:nl + 1]
        return data

    async def all(self) -> bytes:
        while await self._fill():
            pass
        data = bytes(self._buf)
        self._buf.clear()
        return data


class Pipe(Held):
    """``a | b``: a's stdout feeds b's stdin; when b is gone, a's next write is a broken pipe. The
    chunks in between are the writing process's memory (a pipe buffer is charged to its cgroup)."""

    def __init__(self, process: Process | None = None) -> None:
        self._queue: asyncio.Queue[bytes] = asyncio.Queue(PIPE_CHUNKS)
        self.reader_gone = False
        self.process = process
        self.input = Input(self._read, process=process)
        self._queued = 0
        if process is not None:
            process.hold(self)

    def held(self) -> int:
        return self._queued

    async def _read(self) -> bytes:
        chunk = await self._queue.get()
        self._queued -= len(chunk)
        return chunk

    async def write(self, text: str) -> None:
        if self.reader_gone:
            raise BrokenPipe()
        if text:
            data = as_bytes(text)
            if self.process is not None:
                self.process.grew(len(data))
                await self.process.tick()
            self._queued += len(data)
            await self._queue.put(data)

    def close_writer(self) -> None:
        try:
            self._queue.put_nowait(b"")
        except asyncio.QueueFull:  # the reader is behind; it sees EOF after draining
            asyncio.get_running_loop().create_task(self._queue.put(b""))

    def close_reader(self) -> None:
        self.reader_gone = True
        while not self._queue.empty():  # unblock a writer waiting on a full pipe
            self._queued -= len(self._queue.get_nowait())


async def _discard(_text: str) -> None:
    return None


# --- the context --------------------------------------------------------------------------


@dataclass
class Ctx:
    """What a command sees: the cluster, its pod, its environment, files and I/O."""

    state: Any  # ClusterState
    pod: Any  # model.objects.Pod
    container: str
    out: Sink
    err: Sink
    env: dict[str, str] = field(default_factory=dict)
    stdin: Input | None = None
    last: int = 0
    # The container's files: its creator (the kubelet) gives them the files it writes (/etc/hosts,
    # resolv.conf) and the mounted volumes; a bare Ctx has an empty filesystem.
    fs: PodFS = field(default_factory=PodFS)
    cwd: str = "/"
    # Told about every HTTP request a tool sends that a pod answers (the server's access log).
    served: Callable[[Any], None] | None = None
    # Told about every connection a tool makes and every lookup (the node's flow record, as Hubble's).
    observed: Callable[[Any], None] | None = None
    args: list[str] = field(default_factory=list)
    arg0: str = "sh"
    functions: dict[str, Node] = field(default_factory=dict)
    options: set[str] = field(default_factory=set)
    unexported: set[str] = field(default_factory=set)  # shell variables `env` and child shells do not see
    depth: int = 0
    loops: int = 0
    jobs: list[asyncio.Task[int]] = field(default_factory=list)
    tools: Mapping[str, Tool] = field(default_factory=lambda: BUILTIN_TOOLS)
    # The process (and through it the container's cgroup) whose memory and CPU this shell uses.
    process: Process | None = None
    # How the node's data plane picks each connection's backend (network.balance.Balancer); None: one trace's
    # deterministic pick.
    balancer: Any = None

    def __post_init__(self) -> None:
        if self.process is not None:
            self.process.track(self)

    def memory(self) -> list[Any]:
        """What this shell holds, for its process's count: variables, arguments, functions."""
        return [self.env, self.args, self.functions]

    @property
    def source(self) -> str:
        return str(self.pod.key)

    def fork(self, **changes: Any) -> Ctx:
        """A subshell: a copy of the variables and functions, the same files and cluster."""
        child = replace(self, env=dict(self.env), args=list(self.args), functions=dict(self.functions),
                        options=set(self.options), unexported=set(self.unexported), depth=self.depth + 1,
                        loops=0, jobs=[], **changes)
        if child.depth > MAX_DEPTH:
            raise ShellError("knetsim: subshells nested too deep", 2)
        return child  # __post_init__ has put it in its process

    def with_io(self, **changes: Any) -> Ctx:
        """The same shell with other streams (a redirection): variables stay shared."""
        return replace(self, **changes)

    def set_var(self, name: str, value: str) -> None:
        if name not in self.env:
            self.unexported.add(name)
        self.env[name] = value
        self.grew(len(value))

    def grew(self, nbytes: int) -> None:
        """This shell holds ``nbytes`` more (its process is OOM-killed if that is too much)."""
        if self.process is not None:
            self.process.grew(nbytes)

    def building(self, nbytes: int) -> None:
        """A value of ``nbytes`` is about to be made: OOM-killed first if the container cannot hold it."""
        if self.process is not None and nbytes > BUILD_CHECK:
            self.process.building(nbytes)

    async def tick(self) -> None:
        if self.process is not None:
            await self.process.tick()

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        """A task of this shell's process (a pipeline stage, a background job)."""
        return self.process.spawn(coro) if self.process is not None else asyncio.ensure_future(coro)

    @property
    def exported_env(self) -> dict[str, str]:
        return {k: v for k, v in self.env.items() if k not in self.unexported}

    def path(self, name: str) -> str:
        return PodFS.resolve(name, self.cwd)

    async def read_stdin(self) -> str:
        if self.stdin is None:
            return ""
        data = await self.stdin.all()
        self.building(2 * len(data))  # the bytes and the text made of them
        return data.decode(errors="replace")


# --- parsing --------------------------------------------------------------------------------


def parse(script: str) -> Node:
    """The script's syntax tree; ``ShellError`` with busybox's words when it is not valid sh."""
    if len(script) > MAX_SCRIPT:
        raise ShellError(f"knetsim: scripts longer than {MAX_SCRIPT >> 10} KiB are not simulated", 2)
    tree = _PARSER.parse(script.encode())
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


# --- running --------------------------------------------------------------------------------


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
    stages = node.named_children
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
    if "pipefail" in ctx.options:
        return next((c for c in reversed(codes) if c), 0)
    return codes[-1]


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


# --- redirections ---------------------------------------------------------------------------


class Redirections:
    """Apply a command's redirections left to right (``> f 2>&1`` differs from ``2>&1 > f``)."""

    def __init__(self, ctx: Ctx, nodes: list[Node]) -> None:
        self.ctx, self.nodes = ctx, nodes

    async def __aenter__(self) -> Ctx:
        ctx = self.ctx
        fds: dict[int, Any] = {0: ctx.stdin, 1: ctx.out, 2: ctx.err}
        for node in self.nodes:
            await self._apply(ctx, node, fds)
        return ctx.with_io(stdin=fds.get(0), out=fds.get(1) or _discard, err=fds.get(2) or _discard)

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
            return _discard
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
        parts = await _parts(ctx, child, quoted=True)
        ctx.building(sum(len(t) for t in out) + sum(len(t) for t, _q in parts))
        out.append("".join(t for t, _q in parts))
        pos = child.end_byte
    out.append(raw[pos - base:].decode(errors="replace"))
    text = "".join(out)
    return re.sub(r"\\([$`\\])", r"\1", text)


# --- expansion ------------------------------------------------------------------------------

_GLOB_CHARS = re.compile(r"[*?\[]")
Part = tuple[str, bool]  # (text, quoted)
_BREAK: Part = ("\0break", True)  # "$@": a field boundary inside quotes


async def expand_words(ctx: Ctx, nodes: list[Node]) -> list[str]:
    """Arguments as the shell passes them: expanded, split on whitespace, pathname-expanded."""
    out: list[str] = []
    for node in nodes:
        out.extend(await _fields(ctx, await _parts(ctx, node)))
    return out


async def expand_word(ctx: Ctx, node: Node, pattern: bool = False) -> str:
    """One word with no splitting (assignments, redirection targets, case patterns)."""
    parts = await _parts(ctx, node)
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


async def _parts(ctx: Ctx, node: Node, quoted: bool = False) -> list[Part]:
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
        return [(str(await _arith_node(ctx, node.named_children[0] if node.named_children else node)), quoted)]
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
            out.extend(await _parts(ctx, child, quoted))
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
        out.extend(await _parts(ctx, child, quoted=True))
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
            offset = _arith_value(ctx, await expand_word(ctx, numbers[0])) if numbers else 0
            count = _arith_value(ctx, await expand_word(ctx, numbers[1])) if len(numbers) > 1 else None
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
    command = _PARSER.parse(source).root_node.children[0] if text.strip() else None
    parts: list[Part] = []
    offset = len(prefix.encode())
    for word in (command.named_children[1:] if command is not None and command.type == "command" else []):
        if word.start_byte < offset or word.end_byte > len(source):
            continue
        if word.start_byte > offset:
            parts.append((source[offset:word.start_byte].decode(errors="replace"), True))
        parts.extend(await _parts(ctx, word))
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
            out.extend(await _parts(ctx, n, quoted=True) if n.type != "word" else _word_parts(text_of(n)))
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


# --- arithmetic -----------------------------------------------------------------------------


def _int64(value: int) -> int:
    """ash computes in int64_t: results wrap around as two's complement does."""
    return ((value + 2**63) % 2**64) - 2**63


def _divide(x: int, y: int) -> int:
    """C's division: truncated toward zero, exactly (a float loses digits past 2**53)."""
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


def _power(x: int, y: int) -> int:
    if y < 0:
        raise ShellError("exponent less than 0", 2)
    return pow(x, y, 2**64)  # repeated int64 multiplication keeps exactly these bits


_ARITH_OPS: dict[str, Callable[[int, int], int]] = {
    "+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
    "/": _divide, "%": lambda x, y: x - y * _divide(x, y), "**": _power,
    "<": lambda x, y: int(x < y), ">": lambda x, y: int(x > y), "<=": lambda x, y: int(x <= y),
    ">=": lambda x, y: int(x >= y), "==": lambda x, y: int(x == y), "!=": lambda x, y: int(x != y),
    "&&": lambda x, y: int(bool(x and y)), "||": lambda x, y: int(bool(x or y)),
    "&": lambda x, y: x & y, "|": lambda x, y: x | y, "^": lambda x, y: x ^ y,
    # x86-64 shifts by the count modulo 64 (a C shift by 64 or more is undefined)
    "<<": lambda x, y: x << (y & 63), ">>": lambda x, y: x >> (y & 63)}


async def _arith_node(ctx: Ctx, node: Node) -> int:
    return _int64(await _arith(ctx, node))


async def _arith(ctx: Ctx, node: Node) -> int:
    kind = node.type
    if kind == "number":
        text = text_of(node)
        try:
            return _int64(int(text, 0) if not re.fullmatch(r"0[0-7]+", text) else int(text, 8))
        except ValueError:
            raise ShellError(f"arithmetic syntax error: {text}", 2) from None
    if kind in ("variable_name", "word"):
        return _arith_value(ctx, text_of(node))
    if kind in ("simple_expansion", "expansion", "command_substitution", "string"):
        return _arith_value(ctx, await expand_word(ctx, node))
    if kind == "parenthesized_expression":
        return await _arith_node(ctx, node.named_children[0])
    if kind == "unary_expression":
        op = next((c.type for c in node.children if not c.is_named), "")
        value = await _arith_node(ctx, node.named_children[0])
        return _int64({"-": -value, "+": value, "!": int(not value), "~": ~value}.get(op, value))
    if kind == "binary_expression":
        left, right = node.named_children[0], node.named_children[-1]
        op = next((c.type for c in node.children if not c.is_named), "")
        if op == "=":
            value = await _arith_node(ctx, right)
            ctx.set_var(text_of(left), str(value))
            return value
        a, b = await _arith_node(ctx, left), await _arith_node(ctx, right)
        if op in ("/", "%") and b == 0:
            raise ShellError("arithmetic syntax error: divide by zero", 2)
        if op not in _ARITH_OPS:
            raise Unsupported(f"the arithmetic operator `{op}`")
        return _int64(_ARITH_OPS[op](a, b))
    if kind == "ternary_expression":
        cond, yes, no = node.named_children[:3]
        return await _arith_node(ctx, yes if await _arith_node(ctx, cond) else no)
    raise Unsupported(f"the arithmetic `{text_of(node)}`")


def _arith_value(ctx: Ctx, text: str, seen: frozenset[str] = frozenset()) -> int:
    text = text.strip()
    if not text:
        return 0
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        if text in seen:  # x=x: ash follows a variable's value only until it comes back to one
            raise ShellError("expression recursion loop detected", 2)
        return _arith_value(ctx, ctx.env.get(text, "0"), seen | {text})
    try:
        return _int64(int(text))
    except ValueError:
        raise ShellError(f"arithmetic syntax error: {text}", 2) from None
