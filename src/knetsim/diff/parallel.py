"""An answer computed in a forked child while this process goes on: a diff's sides are independent
until they are compared, and the doctor on one side takes as long as building the other.

``start(fn)`` forks where that is safe and useful (Linux, one thread, more than one CPU this process
may run on) and returns at once; ``Pending.result()`` reads the child's pickled answer. Anywhere
else, and whenever the child fails for any reason, ``fn`` runs in this process when its result is
asked for, so the answer (or the error) is the one a single process gives: forking changes when
the work is done, never what it says.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Fork only a single-threaded process (a thread holding a lock at the fork would hold it forever in
    the child), on Linux (macOS's system libraries are not fork-safe), with a second CPU to run on."""
    return sys.platform == "linux" and threading.active_count() == 1 and _cpus() > 1


class Pending(Generic[T]):
    """``fn``'s answer, being computed in child ``pid`` (or, with no child, computed when asked for)."""

    def __init__(self, fn: Callable[[], T], pid: int = 0, pipe: int = -1) -> None:
        self._fn, self._pid, self._pipe = fn, pid, pipe
        self._done = False
        self._value: T | None = None

    def result(self) -> T:
        if not self._done:
            self._value = self._collect()
            self._done = True
        return self._value  # type: ignore[return-value]

    def _collect(self) -> T:
        if not self._pid:
            return self._fn()
        with os.fdopen(self._pipe, "rb") as answer:
            data = answer.read()
        self._reap()
        try:
            ok, value = pickle.loads(data)
        except Exception:  # a child that died mid-answer: the work is done here instead
            ok, value = False, None
        return value if ok else self._fn()

    def cancel(self) -> None:
        """The answer is not wanted (the command failed before asking): the child is stopped and reaped, so
        that it neither runs on as an orphan nor holds anything open."""
        if not self._pid:
            return
        with contextlib.suppress(OSError):
            os.kill(self._pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.close(self._pipe)
        self._reap()
        self._done = True

    def _reap(self) -> None:
        # A process that ignores SIGCHLD (some supervisors pass that on) has its children reaped by the kernel.
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self._pid, 0)
        _RUNNING.discard(self)
        self._pid = 0


_RUNNING: set[Pending[Any]] = set()


@atexit.register
def _cancel_all() -> None:
    """No child outlives the process that started it, whatever way that process ends."""
    for pending in list(_RUNNING):
        pending.cancel()


def start(fn: Callable[[], T]) -> Pending[T]:
    """Begin ``fn`` in a forked child when ``can_fork()``; its answer must pickle."""
    if not can_fork():
        return Pending(fn)
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()  # nothing buffered before the fork is written twice
    read, write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return Pending(fn)
    if pid == 0:  # the child: answer, and leave without running the parent's exit handlers or flushes
        status = 1
        try:
            os.close(read)
            # It writes nothing but its answer: the command's own output (a pipe to `head`, a CI log) is not
            # held open by it.
            quiet = os.open(os.devnull, os.O_WRONLY)
            os.dup2(quiet, 1)
            os.dup2(quiet, 2)
            try:
                payload = pickle.dumps((True, fn()), protocol=pickle.HIGHEST_PROTOCOL)
                status = 0
            except Exception:  # the parent recomputes, and reports any error itself
                payload = pickle.dumps((False, None))
            with os.fdopen(write, "wb") as out:
                out.write(payload)
        finally:
            os._exit(status)
    os.close(write)
    pending = Pending(fn, pid, read)
    _RUNNING.add(pending)
    return pending


__all__ = ["Pending", "can_fork", "start"]
