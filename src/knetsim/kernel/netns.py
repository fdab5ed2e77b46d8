"""Network namespaces: naming, locking, creating, entering, and removing what a crash left.

Every namespace a topology makes is called ``knetsim-<id>-<role>`` where ``<id>`` is
``<pid>.<n>`` of the process that made it, and that process holds an exclusive ``flock`` on
``/run/knetsim/<id>.lock`` while the topology lives. A namespace whose lock nobody holds
belongs to a process that died (Ctrl-C is handled; ``kill -9`` and crashes are not), so the
next start removes it (``sweep``). A PID reused by an unrelated process does not fool this:
the lock dies with its holder, the PID does not matter.

Entering a namespace (``entered``) moves only the calling thread, and only for a moment:
``setns`` there and back around a ``socket()`` call. A socket keeps the namespace it was
created in, so the listeners and probe clients of every namespace are served by one asyncio
loop in one thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

PREFIX = "knetsim-"
NETNS_DIR = Path("/run/netns")
LOCK_DIR = Path("/run/knetsim")
ETC_NETNS = Path("/etc/netns")  # `ip netns exec` bind-mounts /etc/netns/<name>/* over /etc/*
CLONE_NEWNET = 0x40000000

T = TypeVar("T")


class KernelError(RuntimeError):
    """The kernel refused something (a command failed, a namespace is missing); maps to exit code 2."""


class Unavailable(KernelError):
    """This machine cannot build a topology: not root, or a tool/kernel feature is missing."""

    def __init__(self, missing: Sequence[str]) -> None:
        super().__init__("kernel mode is unavailable: " + "; ".join(missing))
        self.missing = tuple(missing)


# --- what the machine offers ---------------------------------------------------------------

TOOLS = {
    "ip": "iproute2 (ip netns, veth)",
    "nft": "nftables (nft)",
    "iptables-restore": "iptables (iptables-restore, nf_tables backend)",
    "nsenter": "util-linux (nsenter)",
}


def missing_requirements(dataplane: str | None = None) -> list[str]:
    """What stops a topology from being built here (empty: nothing). Cheap: no namespace is made."""
    missing = []
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        missing.append("root privileges (run as root: network namespaces, veth pairs and netfilter rules need "
                       "CAP_NET_ADMIN and CAP_SYS_ADMIN)")
    tools = dict(TOOLS)
    if dataplane == "nftables":
        tools.pop("iptables-restore")
    for tool, package in tools.items():
        if shutil.which(tool) is None:
            missing.append(f"{tool} not found (Debian package: {package.split(' ')[0]})")
    if not Path("/proc/self/ns/net").exists():
        missing.append("network namespaces (/proc/self/ns/net is missing: a kernel without CONFIG_NET_NS)")
    return missing


def require(dataplane: str | None = None) -> None:
    missing = missing_requirements(dataplane)
    if missing:
        raise Unavailable(missing)


# --- entering a namespace -------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"setns: {os.strerror(code)}")


@contextlib.contextmanager
def entered(name: str) -> Iterator[None]:
    """Put the calling thread into namespace ``name`` for the ``with`` body, then back home.

    Sockets opened inside stay in ``name`` for their whole life; so do ``/proc/sys/net``
    files opened inside. Only this thread moves, and only for the body.
    """
    try:
        target = os.open(NETNS_DIR / name, os.O_RDONLY)
    except FileNotFoundError:
        raise KernelError(f"network namespace {name} does not exist") from None
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        _setns(target)
        try:
            yield
        finally:
            # Failing to go home would leave this thread (perhaps an event loop) in a pod's
            # namespace: nothing sensible can continue after that.
            _setns(home)
    finally:
        os.close(target)
        os.close(home)


def in_netns(name: str, fn: Callable[[], T]) -> T:
    """``fn()`` run inside namespace ``name`` (see ``entered``)."""
    with entered(name):
        return fn()


def socket_in(name: str, kind: int, proto: int = 0, family: int = socket.AF_INET) -> socket.socket:
    """A non-blocking socket (IPv4 unless ``family`` says otherwise) that belongs to namespace ``name``."""
    with entered(name):
        sock = socket.socket(family, kind, proto)
    sock.setblocking(False)
    return sock


def write_sysctl(name: str, settings: dict[str, str]) -> None:
    """Write ``/proc/sys/...`` keys inside namespace ``name``."""
    with entered(name):
        for key, value in settings.items():
            Path("/proc/sys", *key.split(".")).write_text(value)


# --- commands ---------------------------------------------------------------------------------


def run(argv: Sequence[str], stdin: str | None = None, *, what: str = "") -> str:
    """Run a command; a failure raises ``KernelError`` with its stderr."""
    try:
        proc = subprocess.run(list(argv), input=stdin, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KernelError(f"{what or argv[0]}: {exc}") from None
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()
        raise KernelError(f"{what or ' '.join(argv[:4])}: exit {proc.returncode}: {detail}")
    return proc.stdout


def ip_batch(lines: Iterable[str], netns: str | None = None, *, what: str = "", ipv6: bool = False) -> None:
    """``ip [-6] [-n NS] -batch -``: many ip commands in one process (the fast path for tens of pods).
    ``ipv6``: for commands whose family the arguments do not say (``rule add fwmark``, ``default``)."""
    text = "\n".join(lines)
    if not text:
        return
    argv = ["ip", *(["-6"] if ipv6 else []), *(["-n", netns] if netns else []), "-batch", "-"]
    run(argv, text + "\n", what=what or f"ip -n {netns}")


def exec_in(netns: str, argv: Sequence[str], stdin: str | None = None, *, what: str = "") -> str:
    """Run a tool inside ``netns`` (nsenter: no mount namespace needed for nft/iptables)."""
    return run(["nsenter", f"--net={NETNS_DIR / netns}", *argv], stdin, what=what or f"{argv[0]} in {netns}")


# --- ownership and leftovers -------------------------------------------------------------------

_counter = 0
_counter_lock = threading.Lock()


class Owner:
    """The lock that says "the namespaces called knetsim-<id>-* are alive"."""

    def __init__(self) -> None:
        global _counter
        with _counter_lock:
            _counter += 1
            n = _counter
        self.id = f"{os.getpid()}.{n}"
        LOCK_DIR.mkdir(parents=True, exist_ok=True)
        self.path = LOCK_DIR / f"{self.id}.lock"
        self._fd: int | None = _lock_file(self.path)

    def name(self, role: str) -> str:
        return f"{PREFIX}{self.id}-{role}"

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            os.close(self._fd)
            self._fd = None


def _lock_file(path: Path) -> int:
    """An exclusive lock on the file at ``path`` that is still the file there: a sweeper that found this owner
    dead between our open and our flock has unlinked what we opened, so we lock a fresh one."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


def _held(owner_id: str) -> bool:
    """Is the owner alive? A dead one's lock file is removed here, while we hold its lock, so that its
    removal can never take the file of an owner that is just starting (which re-checks, see _lock_file)."""
    path = LOCK_DIR / f"{owner_id}.lock"
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return True
        raise
    try:
        if os.stat(path).st_ino == os.fstat(fd).st_ino:
            path.unlink()
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)
    return False


def owner_of(name: str) -> str | None:
    if not name.startswith(PREFIX):
        return None
    rest = name[len(PREFIX):]
    owner, sep, _ = rest.partition("-")
    return owner if sep else None


def list_netns() -> list[str]:
    try:
        return sorted(p.name for p in NETNS_DIR.iterdir())
    except FileNotFoundError:
        return []


def delete(names: Iterable[str]) -> None:
    """Remove namespaces (and their /etc/netns files); already-gone ones are fine."""
    names = [n for n in names if n]
    existing = set(list_netns())
    lines = [f"netns del {n}" for n in names if n in existing]
    if lines:
        # `ip -force -batch` goes on after a failed line: one stuck namespace must not keep the rest.
        subprocess.run(["ip", "-force", "-batch", "-"], input="\n".join(lines) + "\n", capture_output=True,
                       text=True, timeout=60, check=False)
    for n in names:
        shutil.rmtree(ETC_NETNS / n, ignore_errors=True)


def sweep() -> list[str]:
    """Remove every knetsim namespace whose owner is gone; returns their names."""
    dead: dict[str, bool] = {}
    stale = []
    for name in list_netns():
        owner = owner_of(name)
        if owner is None:
            continue
        if owner not in dead:
            dead[owner] = not _held(owner)
        if dead[owner]:
            stale.append(name)
    if ETC_NETNS.is_dir():
        for path in sorted(ETC_NETNS.iterdir()):
            owner = owner_of(path.name)
            if owner is not None and owner not in dead and not _held(owner):
                dead[owner] = True
            if owner is not None and dead.get(owner):
                shutil.rmtree(path, ignore_errors=True)
    delete(stale)
    return stale
