"""The state directory: private (Secrets live in its store) and owned by one daemon at a time.

Ownership is an advisory ``flock`` on ``<state>/lock``, held by the daemon for its whole life,
with its PID written inside. Unlike a PID file it cannot go stale: the kernel drops the lock when
the daemon exits, however it exits, so a reused PID never passes for a running cluster and two
daemons can never share one store.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from typing import Any

LOCK_NAME = "lock"


class StateDirInUse(Exception):
    def __init__(self, state: Path, pid: int | None) -> None:
        owner = f" (pid {pid})" if pid else ""
        super().__init__(f"the state directory {state} is in use by another knetsim daemon{owner}")
        self.pid = pid


def make_private(state: Path) -> None:
    """0700 for the directory, 0600 for what is in it; new files follow through the umask."""
    state.mkdir(parents=True, exist_ok=True)
    os.chmod(state, 0o700)
    for entry in state.iterdir():
        with contextlib.suppress(OSError):
            os.chmod(entry, 0o700 if entry.is_dir() else 0o600)
    os.umask(0o077)


def _read_pid(fd: int) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        return int(os.pread(fd, 32, 0).decode().strip() or 0) or None
    return None


def acquire(state: Path) -> int:
    """Take the state directory for this process; returns the lock's fd (keep it open). Raises StateDirInUse."""
    fd = os.open(state / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = _read_pid(fd)
        os.close(fd)
        raise StateDirInUse(state, pid) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd


def owner(state: Path) -> int | None:
    """The PID of the daemon holding the state directory, or None when no daemon holds it."""
    try:
        fd = os.open(state / LOCK_NAME, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_pid(fd) or 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A daemon that has exited stays a zombie until its reaper (often PID 1, which may poll
    # only every second or so) collects it; kill(pid, 0) still succeeds on a zombie.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def running(state: Path) -> dict[str, Any] | None:
    """The ready daemon of ``state`` (its ready.json): it holds the state directory's lock and has said so."""
    pid = owner(state)
    if not pid:
        return None
    try:
        info = json.loads((state / "ready.json").read_text())
    except (FileNotFoundError, NotADirectoryError, ValueError):
        return None
    if not isinstance(info, dict):
        return None
    return info if int(info.get("pid", 0)) == pid and _pid_alive(pid) else None


# --- ports: who holds one the daemon was asked to bind ----------------------------------------------------------

def _listening_inodes(port: int, udp: bool) -> set[str]:
    """The socket inodes bound to ``port`` (listening, for TCP), from /proc/net (Linux); empty elsewhere."""
    inodes: set[str] = set()
    for table in (("udp", "udp6") if udp else ("tcp", "tcp6")):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                if len(fields) < 10:
                    continue
                local_port = int(fields[1].rpartition(":")[2], 16)
                if local_port == port and (udp or fields[3] == "0A"):  # 0A: TCP_LISTEN
                    inodes.add(fields[9])
    return inodes


def _holder_pid(inodes: set[str]) -> int | None:
    """The process with one of these socket inodes open (one we may look into: our own user's, or any as root)."""
    wanted = {f"socket:[{inode}]" for inode in inodes}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (proc / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in wanted:
                        return int(proc.name)
    return None


def knetsim_state_of(pid: int) -> Path | None:
    """The state directory of the knetsim daemon ``pid`` (``python -m knetsim.daemon --state DIR``); None when the
    process is no knetsim daemon or cannot be read."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    args = [a.decode(errors="replace") for a in argv]
    if "knetsim.daemon" not in args:
        return None
    for i, arg in enumerate(args):
        if arg == "--state" and i + 1 < len(args):
            return Path(args[i + 1])
        if arg.startswith("--state="):
            return Path(arg.split("=", 1)[1])
    return None


def port_in_use(host: str, port: int, *, udp: bool = False) -> bool:
    """Would binding ``host:port`` fail because it is taken (as the daemon binds: SO_REUSEADDR for TCP)?"""
    import errno
    import socket

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if udp else socket.SOCK_STREAM)
    try:
        if not udp:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        return exc.errno == errno.EADDRINUSE
    finally:
        sock.close()
    return False


def taken_ports(host: str, ports: dict[str, int], *, udp: frozenset[str] = frozenset()) -> list[str]:
    """One sentence per port of ``ports`` (what it is for → number; 0: any free port, never taken) that is in use:
    which port, who holds it (a knetsim, with its state directory and how to stop it, or another program) and
    that ``--port 0`` (or the option of that port) picks a free one. ``udp``: the names also bound over UDP."""
    out = []
    for what, port in ports.items():
        if not port:
            continue
        over_udp = what in udp and port_in_use(host, port, udp=True)
        if not (port_in_use(host, port) or over_udp):
            continue
        pid = _holder_pid(_listening_inodes(port, udp=False) | (_listening_inodes(port, udp=True) if what in udp
                                                                  else set()))
        state = knetsim_state_of(pid) if pid else None
        if state is not None:
            holder = (f"by a running knetsim (pid {pid}, state dir {state}: `knetsim status --state {state}` shows "
                      f"it, `knetsim down --state {state}` stops it)")
        elif pid:
            holder = f"by another program (pid {pid})"
        else:
            holder = "by another program"
        option = {"API server": "--port"}.get(what, f"--{what.lower()}-port")
        out.append(f"{what} port {host}:{port} is already in use {holder}; `knetsim up {option} 0` picks a free "
                   "port")
    return out
