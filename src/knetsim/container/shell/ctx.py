"""What a command sees (``Ctx``): the cluster, its pod, its variables, files and streams; the pipes and
stdin between commands (``Input``, ``Pipe``); the errors and control flow the interpreter raises; and
the table of commands a container has (``register``, ``BUILTIN_TOOLS``) with busybox's names for the
ones it lacks. Every other module of the shell builds on this one; it imports none of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import tree_sitter

from ..cgroup import Held, Process
from ..podfs import PodFS, as_bytes

if TYPE_CHECKING:
    from ...cluster.state import ClusterState
    from ...model.objects import Pod

MAX_DEPTH = 40
# A pipe's capacity, as Linux's default (pipe(7): 16 pages): a writer waits while this much is unread.
PIPE_BYTES = 64 << 10
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
    bytes in between are the writing process's memory (a pipe buffer is charged to its cgroup), at most
    ``PIPE_BYTES`` and the chunk being written: a writer finding the pipe full waits, as write(2) blocks."""

    def __init__(self, process: Process | None = None) -> None:
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._room = asyncio.Event()
        self._room.set()
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
        if self._queued < PIPE_BYTES:
            self._room.set()
        return chunk

    async def write(self, text: str) -> None:
        if self.reader_gone:
            raise BrokenPipe()
        if text:
            data = as_bytes(text)
            while self._queued >= PIPE_BYTES:
                self._room.clear()
                await self._room.wait()
                if self.reader_gone:
                    raise BrokenPipe()
            if self.process is not None:
                self.process.grew(len(data))
                await self.process.tick()
            self._queued += len(data)
            self._queue.put_nowait(data)

    def close_writer(self) -> None:
        self._queue.put_nowait(b"")  # after what is unread: the reader sees EOF once it has drained it

    def close_reader(self) -> None:
        self.reader_gone = True
        while not self._queue.empty():
            self._queued -= len(self._queue.get_nowait())
        self._room.set()  # unblock a writer waiting on a full pipe: its write is a broken pipe


async def discard(_text: str) -> None:
    """Where output to ``/dev/null`` or a closed descriptor goes."""
    return None


# --- the context --------------------------------------------------------------------------


@dataclass
class Ctx:
    """What a command sees: the cluster, its pod, its environment, files and I/O."""

    state: ClusterState
    pod: Pod
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
    # Runs a command in another pod's first container (agnhost netexec's /shell, asked by a tool here): (pod key,
    # script) → (combined output, exit code). None where no kubelet runs pods (offline): /shell is not answered.
    peer_shell: Callable[[str, str], Awaitable[tuple[str, int]]] | None = None
    # Ends the program serving (pod key, port) with an exit code (agnhost netexec's /exit, asked by a tool here);
    # None where no kubelet runs pods.
    peer_exit: Callable[[str, int, int], None] | None = None

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
