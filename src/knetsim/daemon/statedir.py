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
