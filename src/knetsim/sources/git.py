"""Manifests as a git revision holds them: ``git:REV:PATH`` (``git:main:deploy/``, ``git:HEAD~1:app.yaml``).

What a pull request changes is two revisions of one folder; reading the base revision straight from
the repository saves a CI job the checkout of a second work tree. The files are those a checkout
would give for ``PATH`` (a file, or a folder walked recursively in name order, ``.yaml``/``.yml``/
``.json`` only, as ``-f DIR`` reads), each named ``git:REV:file`` in every message. Read with the
``git`` command of the machine (``git ls-tree``, ``git cat-file --batch``), in the repository that
holds the current directory, ``PATH`` relative to it as git takes it.
"""

from __future__ import annotations

from ..model.loader import MANIFEST_SUFFIXES, NO_OBJECTS, LoadError, LoadResult, load_text

PREFIX = "git:"


class GitSourceError(ValueError):
    """The revision or path cannot be read (no repository, unknown revision, no such path); exit code 2."""


def parse(spec: str) -> tuple[str, str]:
    """``git:REV:PATH`` → (REV, PATH); PATH may be empty (the whole tree at REV)."""
    rest = spec[len(PREFIX):]
    rev, sep, path = rest.partition(":")
    if not sep or not rev:
        raise GitSourceError(f"{spec!r}: expected git:REVISION:PATH (e.g. git:main:deploy/)")
    return rev, path


def _git(args: list[str], stdin: bytes | None = None) -> bytes:
    import subprocess  # only a git: source runs git; every command imports this module

    try:
        done = subprocess.run(["git", *args], input=stdin, capture_output=True, check=False, timeout=120)
    except FileNotFoundError:
        raise GitSourceError("git is not installed (needed to read a git:REV:PATH source)") from None
    except subprocess.TimeoutExpired:
        raise GitSourceError(f"git {' '.join(args)}: no answer within 120 s") from None
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise GitSourceError(f"git {' '.join(args[:2])}: {message[-1] if message else f'exit {done.returncode}'}")
    return done.stdout


def load(spec: str) -> LoadResult:
    """The manifests ``git:REV:PATH`` names, as ``-f`` would read them from a checkout."""
    rev, path = parse(spec)
    try:
        commit = _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"]).decode().strip()
    except GitSourceError as exc:
        why = str(exc).split(": ", 1)[1]
        raise GitSourceError(f"{spec}: unknown revision {rev!r}"
                             + (f" ({why})" if not why.startswith("exit ") else "")) from None
    listed = _git(["ls-tree", "-r", "-z", "--full-name", "--name-only", commit, "--", path or "."])
    names = sorted(n for n in listed.decode(errors="surrogateescape").split("\0") if n)
    if not names:
        raise GitSourceError(f"{spec}: no such path at {rev}")
    files = [n for n in names if n.endswith(MANIFEST_SUFFIXES)]
    result = LoadResult()
    if not files:
        result.errors.append(LoadError(None, f"{spec}: no .yaml, .yml or .json file at {rev}"))
        return result
    batch = _git(["cat-file", "--batch"], "".join(f"{commit}:{n}\n" for n in files).encode())
    offset = 0
    for name in files:
        header_end = batch.index(b"\n", offset)
        _oid, kind, size = batch[offset:header_end].decode().split(" ")
        body = batch[header_end + 1:header_end + 1 + int(size)]
        offset = header_end + 1 + int(size) + 1
        where = f"{PREFIX}{rev}:{name}"
        if kind != "blob":
            continue  # a submodule's commit: nothing to read
        if b"\0" in body:
            result.errors.append(LoadError(None, f'cannot read "{where}": binary data, not YAML or JSON'))
            continue
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            result.errors.append(LoadError(None, f'cannot read "{where}": not UTF-8'))
            continue
        load_text(text, where, result)
    if not result.documents and not result.errors:
        result.errors.append(LoadError(None, NO_OBJECTS))  # as -f: a source that holds nothing is no input
    return result


__all__ = ["PREFIX", "GitSourceError", "load", "parse"]
