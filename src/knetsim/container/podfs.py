"""A container's filesystem as the simulated shell sees it: the kubelet's files plus what commands write.

``/etc/resolv.conf``, ``/etc/hosts`` and ``/etc/hostname`` are the kubelet's (computed from the
cluster, so they follow DNS config changes); ``/dev/null``, ``/dev/stdout`` and ``/dev/stderr``
are devices the shell handles itself. Files a command writes (``wget -O /tmp/page``, ``echo x >
/tmp/f``) live in memory for as long as the container does (a restart gets a fresh writable
layer, as with a real runtime), bounded so that no command can grow the server without limit.
Under an emptyDir's mount path the files are the pod's (``Volume``): every container that mounts it sees
them, an init container's writes reach the containers after it, and a restart keeps them.

Errors are ``FsError`` with the errno name the shell and applets turn into their own words
(ash: ``can't create X: nonexistent directory``; cat: ``can't open 'X': No such file or directory``).
"""

from __future__ import annotations

import fnmatch
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field

MAX_FILE = 1 << 20  # bytes per file
MAX_TOTAL = 4 << 20  # bytes per container
# The directories of a small Linux userland (busybox/alpine/debian all have these).
BASE_DIRS = frozenset({"/", "/bin", "/dev", "/etc", "/home", "/proc", "/root", "/run", "/sbin", "/sys", "/tmp",
                       "/usr", "/usr/bin", "/usr/local", "/usr/local/bin", "/usr/sbin", "/var", "/var/log",
                       "/var/run", "/var/tmp"})
DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/zero", "/dev/tty"})
ERRNO_TEXT = {"ENOENT": "No such file or directory", "EISDIR": "Is a directory", "ENOTDIR": "Not a directory",
              "ENOSPC": "No space left on device", "EEXIST": "File exists", "ENOTEMPTY": "Directory not empty",
              "EACCES": "Permission denied"}


def as_bytes(text: str) -> bytes:
    """The bytes a command's text stands for. Files and streams are str; bytes that are no UTF-8 (a tar
    archive from `kubectl cp`) travel as lone surrogates (``surrogateescape``) and come back unchanged."""
    return text.encode("utf-8", "surrogateescape")


def as_text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


class FsError(OSError):
    def __init__(self, errno_name: str, path: str, detail: str = "") -> None:
        super().__init__(f"{path}: {ERRNO_TEXT.get(errno_name, errno_name)}")
        self.errno_name, self.path, self.detail = errno_name, path, detail

    @property
    def strerror_text(self) -> str:
        return ERRNO_TEXT.get(self.errno_name, self.errno_name)


@dataclass
class Volume:
    """A writable volume of the pod (an emptyDir): what any of its containers writes under its mount path, every
    container that mounts it sees, for as long as the pod lives (a container restart keeps it). Paths are
    relative to the volume's root ("" is the root), since two containers may mount it at different paths."""

    files: dict[str, str] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)


@dataclass
class PodFS:
    """``static`` gives the kubelet-managed files on demand; ``files``/``dirs`` are what commands wrote outside a
    volume; ``volumes`` are the pod's shared writable volumes by this container's mount path."""

    static: Callable[[], dict[str, str]] = dict
    files: dict[str, str] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)
    volumes: dict[str, Volume] = field(default_factory=dict)

    @staticmethod
    def resolve(path: str, cwd: str = "/") -> str:
        return posixpath.normpath(posixpath.join(cwd, path)) if path else cwd

    def _static(self) -> dict[str, str]:
        return {p: t for p, t in self.static().items() if p not in self.removed}

    def _volume(self, path: str) -> tuple[Volume, str] | None:
        """The volume ``path`` lies in (the deepest mount path that holds it) and the path inside it."""
        for mount in sorted(self.volumes, key=len, reverse=True):
            if path == mount or path.startswith(mount.rstrip("/") + "/"):
                return self.volumes[mount], path[len(mount):].lstrip("/")
        return None

    def is_dir(self, path: str) -> bool:
        inside = self._volume(path)
        if inside is not None:
            return inside[1] == "" or inside[1] in inside[0].dirs
        return path in BASE_DIRS or path in self.dirs

    def exists(self, path: str) -> bool:
        inside = self._volume(path)
        if inside is not None:
            return self.is_dir(path) or inside[1] in inside[0].files
        return self.is_dir(path) or path in self.files or path in self._static() or path in DEVICES

    def read(self, path: str) -> str:
        if self.is_dir(path):
            raise FsError("EISDIR", path)
        inside = self._volume(path)
        if inside is not None:
            if inside[1] in inside[0].files:
                return inside[0].files[inside[1]]
            raise FsError("ENOENT", path)
        if path in self.files:
            return self.files[path]
        static = self._static()
        if path in static:
            return static[path]
        if path in ("/dev/null", "/dev/zero"):
            return ""
        raise FsError("ENOENT", path)

    def write(self, path: str, text: str, append: bool = False) -> None:
        if path == "/dev/null":
            return
        parent = posixpath.dirname(path)
        if self.is_dir(path):
            raise FsError("EISDIR", path)
        if not self.is_dir(parent):
            raise FsError("ENOTDIR" if self.exists(parent) else "ENOENT", path)
        inside = self._volume(path)
        if inside is not None:
            volume, rel = inside
            new = (volume.files.get(rel, "") if append else "") + text
            if len(as_bytes(new)) > MAX_FILE or sum(len(as_bytes(t)) for r, t in volume.files.items()
                                                      if r != rel) + len(as_bytes(new)) > MAX_TOTAL:
                raise FsError("ENOSPC", path, f"knetsim keeps at most {MAX_FILE >> 20} MiB per file and "
                                              f"{MAX_TOTAL >> 20} MiB per volume")
            volume.files[rel] = new
            return
        old = self.files.get(path, self._static().get(path, "")) if append else ""
        new = old + text
        size = len(as_bytes(new))
        used = sum(len(as_bytes(t)) for p, t in self.files.items() if p != path)
        if size > MAX_FILE or used + size > MAX_TOTAL:
            raise FsError("ENOSPC", path, f"knetsim keeps at most {MAX_FILE >> 20} MiB per file and "
                                          f"{MAX_TOTAL >> 20} MiB per container")
        self.files[path] = new
        self.removed.discard(path)

    def remove(self, path: str) -> None:
        if self.is_dir(path):
            raise FsError("EISDIR", path)
        inside = self._volume(path)
        if inside is not None:
            if inside[1] not in inside[0].files:
                raise FsError("ENOENT", path)
            del inside[0].files[inside[1]]
        elif path in self.files:
            del self.files[path]
        elif path in self._static():
            self.removed.add(path)
        else:
            raise FsError("ENOENT", path)

    def mkdir(self, path: str, parents: bool = False) -> None:
        if self.exists(path):
            if parents and self.is_dir(path):
                return
            raise FsError("EEXIST", path)
        parent = posixpath.dirname(path)
        if not self.is_dir(parent):
            if not parents:
                raise FsError("ENOENT", path)
            self.mkdir(parent, parents=True)
        inside = self._volume(path)
        if inside is not None:
            inside[0].dirs.add(inside[1])
        else:
            self.dirs.add(path)

    def listdir(self, path: str) -> list[str]:
        if not self.is_dir(path):
            if self.exists(path):
                raise FsError("ENOTDIR", path)
            raise FsError("ENOENT", path)
        names = set()
        prefix = path.rstrip("/") + "/"
        in_volumes = [posixpath.join(mount, rel) for mount, volume in self.volumes.items()
                      for rel in [*volume.dirs, *volume.files] if rel]
        for p in [*BASE_DIRS, *self.dirs, *self.files, *self._static(), *DEVICES, *self.volumes, *in_volumes]:
            if p != path and p.startswith(prefix):
                names.add(p[len(prefix):].split("/", 1)[0])
        return sorted(names)

    def glob(self, pattern: str, cwd: str) -> list[str]:
        """Pathname expansion of one word (``*.txt``, ``/etc/*``); no match leaves the word as it is."""
        absolute = pattern.startswith("/")
        full = self.resolve(pattern, cwd)
        directory, base = posixpath.split(full)
        if any(c in directory for c in "*?["):
            return []  # wildcards in directory parts: not simulated; the caller keeps the word
        try:
            names = self.listdir(directory)
        except FsError:
            return []
        hits = [n for n in names if fnmatch.fnmatchcase(n, base) and (base.startswith(".") or not n.startswith("."))]
        if absolute:
            return [posixpath.join(directory, n) for n in hits]
        rel_dir = posixpath.dirname(pattern)
        return [posixpath.join(rel_dir, n) if rel_dir else n for n in hits]
