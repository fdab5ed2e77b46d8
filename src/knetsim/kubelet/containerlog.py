"""Container logs as the kubelet keeps them: files on the node, in the CRI log format.

Each run of a container writes ``<state>/pods/<ns>_<pod>_<uid>/<container>/<restartCount>.log``
(the kubelet's ``/var/log/pods`` layout), one line per write::

    2026-01-02T10:00:00.123456789Z stdout F GET / ...
    2026-01-02T10:00:00.200000000Z stderr P a line without its newline yet

so ``kubectl logs`` still answers after ``knetsim down``/``up`` (a real node keeps its logs when
the API server restarts). A file holds at most ``LOG_LIMIT`` bytes of text: past that the
oldest lines go, as the kubelet's rotation drops old files. The current and the previous run
are kept (``kubectl logs --previous``); the pod's directory goes with the pod.

``Renderer`` applies a log request's ``tailLines``, ``timestamps``, ``sinceSeconds``/``sinceTime``
and ``limitBytes``.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..model.timestamps import parse_rfc3339

LOG_LIMIT = 1 << 20  # bytes kept per container run (the kubelet rotates at 10 MiB)


def stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


def _parse_stamp(text: str) -> datetime:
    return datetime.strptime(text[:26], "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=UTC)


@dataclass
class Log:
    """One run's output: (time, stream, text) chunks in order, stdout and stderr interleaved as written."""

    path: Path | None = None
    chunks: list[tuple[datetime, str]] = field(default_factory=list)
    streams: list[str] = field(default_factory=list)
    size: int = 0
    on_disk: int = 0  # text bytes in the file: it is rewritten from memory past twice the limit
    followers: list[asyncio.Queue[tuple[datetime, str] | None]] = field(default_factory=list)
    closed: bool = False

    @classmethod
    def load(cls, path: Path) -> Log:
        """The log a file holds (after a server restart), ready to be appended to."""
        log = cls(path)
        with contextlib.suppress(OSError):
            for line in path.read_text(errors="replace").splitlines():
                parts = line.split(" ", 3)
                if len(parts) < 3:
                    continue
                text = parts[3] if len(parts) > 3 else ""
                try:
                    when = _parse_stamp(parts[0])
                except ValueError:
                    continue
                log._remember(when, parts[1], text + ("\n" if parts[2] == "F" else ""))
        log.on_disk = log.size + LOG_LIMIT  # rewrite (trim) at the next write
        return log

    def _remember(self, when: datetime, stream: str, text: str) -> None:
        self.chunks.append((when, text))
        self.streams.append(stream)
        self.size += len(text)
        while self.size > LOG_LIMIT and len(self.chunks) > 1:
            self.size -= len(self.chunks.pop(0)[1])
            self.streams.pop(0)

    def write(self, text: str, stream: str = "stdout") -> None:
        if not text:
            return
        item = (datetime.now(UTC), text)
        self._remember(item[0], stream, text)
        if self.path is not None:
            self.on_disk += len(text)
            # Appending is cheap; the file is cut back to what memory holds only now and then.
            rewrite = self.on_disk > 2 * LOG_LIMIT
            self._persist(item[0], stream, text, rewrite=rewrite)
            if rewrite:
                self.on_disk = self.size
        for q in self.followers:
            _offer(q, item)

    def _persist(self, when: datetime, stream: str, text: str, rewrite: bool) -> None:
        assert self.path is not None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if rewrite:
                lines = [_cri_lines(t, s, x) for (t, x), s in zip(self.chunks, self.streams, strict=True)]
                self.path.write_text("".join(lines))
            else:
                with self.path.open("a") as f:
                    f.write(_cri_lines(when, stream, text))
        except OSError:
            self.path = None  # the state dir went away: keep the log in memory only

    def close(self) -> None:
        self.closed = True
        for q in self.followers:
            _offer(q, None)

    def lines(self) -> list[tuple[datetime, str]]:
        """Whole lines (the last one may lack its newline), each with the time it started."""
        out: list[tuple[datetime, str]] = []
        open_line = False
        for t, text in self.chunks:
            for piece in text.splitlines(keepends=True):
                if open_line:
                    out[-1] = (out[-1][0], out[-1][1] + piece)
                else:
                    out.append((t, piece))
                open_line = not piece.endswith("\n")
        return out


def _cri_lines(when: datetime, stream: str, text: str) -> str:
    out = []
    for piece in text.splitlines(keepends=True):
        tag = "F" if piece.endswith("\n") else "P"
        out.append(f"{stamp(when)} {stream} {tag} {piece.rstrip(chr(10))}\n")
    return "".join(out)


class LogStore:
    """The node's log directory: one ``Log`` per (pod uid, container, restart count)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self.logs: dict[tuple[str, str, int], Log] = {}
        self.dirs: dict[str, Path] = {}

    def _dir(self, namespace: str, pod: str, uid: str) -> Path | None:
        if self.root is None:
            return None
        return self.root / f"{namespace}_{pod}_{uid}"

    def get(self, namespace: str, pod: str, uid: str, container: str, restart: int, fresh: bool = False) -> Log:
        key = (uid, container, restart)
        if key in self.logs and not fresh:
            return self.logs[key]
        directory = self._dir(namespace, pod, uid)
        path = directory / container / f"{restart}.log" if directory is not None else None
        if directory is not None:
            self.dirs[uid] = directory
        if fresh and path is not None:
            with contextlib.suppress(OSError):
                path.unlink()
        log = Log.load(path) if path is not None and path.exists() else Log(path)
        self.logs[key] = log
        # The kubelet keeps the current and the previous run of a container.
        for old in [k for k in self.logs if k[0] == uid and k[1] == container and k[2] < restart - 1]:
            self.logs.pop(old)
            if directory is not None:
                with contextlib.suppress(OSError):
                    (directory / container / f"{old[2]}.log").unlink()
        return log

    def find(self, namespace: str, pod: str, uid: str, container: str, restart: int) -> Log | None:
        """An existing run's log, from memory or from the node's files; None when there is none."""
        key = (uid, container, restart)
        if key in self.logs:
            return self.logs[key]
        directory = self._dir(namespace, pod, uid)
        if directory is None or not (directory / container / f"{restart}.log").exists():
            return None
        return self.get(namespace, pod, uid, container, restart)

    def remove_pod(self, namespace: str, pod: str, uid: str) -> None:
        for key in [k for k in self.logs if k[0] == uid]:
            self.logs.pop(key).close()
        directory = self.dirs.pop(uid, None) or self._dir(namespace, pod, uid)
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)


class Renderer:
    """``tailLines``, ``timestamps``, ``sinceSeconds``/``sinceTime`` and ``limitBytes`` of a log request."""

    def __init__(self, q: Mapping[str, str]) -> None:
        self.timestamps = q.get("timestamps") in ("true", "1")
        self.tail = int(q["tailLines"]) if q.get("tailLines", "").lstrip("-").isdigit() else None
        self.limit = int(q["limitBytes"]) if q.get("limitBytes", "").isdigit() else None
        self.since: datetime | None = None
        if q.get("sinceSeconds", "").isdigit():
            self.since = datetime.now(UTC) - timedelta(seconds=int(q["sinceSeconds"]))
        elif q.get("sinceTime"):
            with contextlib.suppress(ValueError):
                self.since = parse_rfc3339(q["sinceTime"])
        self.sent = 0
        self.at_line_start = True

    @property
    def exhausted(self) -> bool:
        return self.limit is not None and self.sent >= self.limit

    def _cap(self, text: str) -> str:
        if self.limit is None:
            return text
        room = self.limit - self.sent
        data = text.encode()[:max(room, 0)]
        self.sent += len(data)
        return data.decode(errors="ignore")

    def backlog(self, lines: list[tuple[datetime, str]]) -> str:
        if self.since is not None:
            lines = [(t, s) for t, s in lines if t >= self.since]
        if self.tail is not None and self.tail >= 0:
            lines = lines[len(lines) - self.tail:] if self.tail else []
        out = "".join((f"{stamp(t)} " if self.timestamps else "") + s for t, s in lines)
        if lines:
            self.at_line_start = lines[-1][1].endswith("\n")
        return self._cap(out)

    def chunk(self, t: datetime, text: str) -> str:
        if not self.timestamps:
            return self._cap(text)
        out = []
        for piece in text.splitlines(keepends=True):
            if self.at_line_start:
                out.append(f"{stamp(t)} ")
            out.append(piece)
            self.at_line_start = piece.endswith("\n")
        return self._cap("".join(out))


FOLLOW_BACKLOG = 4096  # chunks a `kubectl logs -f` that reads slower than the container writes may lag behind


def _offer(queue: asyncio.Queue[Any], item: Any) -> None:
    """Hand a chunk to a follower; one that has fallen ``FOLLOW_BACKLOG`` chunks behind loses its oldest (as a
    reader of a rotated log file does), so a stalled client cannot grow the server."""
    if queue.maxsize and queue.full():
        with contextlib.suppress(asyncio.QueueEmpty):
            queue.get_nowait()
    queue.put_nowait(item)
