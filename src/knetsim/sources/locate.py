"""Where in its file an object was written: ``app.yaml:12`` for a report about it.

A ``Source`` (model/loader.py) says file and document (and List item), which is what the loader knows when it
reads; a person fixing a finding wants the line, as kube-linter and yamllint print it. The line is found when
asked, by reading the file again (only the few files a report names, each once): the document's, or the List
item's, first line.

The line is only given when the document there is the object (same kind, and the name written there is the
object's or part of it: Kustomize's namePrefix/nameSuffix and hash suffixes extend it). A Helm template is not
its rendered output (``range`` makes several objects of one document, ``{{ }}`` is no YAML), so a chart's
object keeps ``templates/x.yaml, document 2`` (the template file and which object it rendered); an object of
a cluster, of stdin or of a git revision has no file here to read and keeps what its source says.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from ..model.loader import Source
from .render import OverlaySource

# Reading a file again to find one line must stay cheap: a snapshot of a large cluster (`kubectl get -A -o yaml`
# of 100k pods is ~400 MiB) is named by document and item, as the loader's messages name it. Below this, the file
# is scanned line by line (no YAML parse of the whole file: a 1 MB file composes in seconds) and only the document
# found is parsed, to check it is the object.
MAX_LOCATED_BYTES = 32 * 1024 * 1024

try:  # libyaml's loader when PyYAML has it: the one document found is parsed, to check it is the object
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Loader = yaml.SafeLoader

_SEPARATOR = re.compile(r"---(?:[ \t]|$)")
_ITEMS = re.compile(r"items:[ \t]*(?:#.*)?$")


@dataclass(frozen=True, slots=True)
class _Span:
    """Lines ``start`` (its first line of content, 0-based) to ``end`` (exclusive) of one document or item."""

    start: int
    end: int


def describe(source: Source | None, kind: str = "", name: str = "") -> str | None:
    """``file:line`` of the object ``kind``/``name`` read from ``source``; what the source says of itself
    (``file, document N``) when no line can be given; None for objects that come from no file (knetsim's
    defaults, the controllers' objects, an API request, a cluster read)."""
    if source is None or not source.file or source.file.startswith("<") or source.document < 1 or _of_a_cluster(source):
        return None
    line = line_of(source, kind, name)
    if line is None:
        return str(source)
    # A kustomization's object from a base: the overlay that may have patched it, then the base's line.
    overlay = f"{source.overlay} -> " if isinstance(source, OverlaySource) else ""
    return f"{overlay}{source.file}:{line}"


def _of_a_cluster(source: Source) -> bool:
    """An object read from a cluster's API (sources/live.py). Only a live read makes such sources, and the API
    client is not loaded by a command that reads files: it is looked for among the loaded modules only."""
    live = sys.modules.get(f"{__package__}.live")
    return live is not None and isinstance(source, live.ClusterObject)


def line_of(source: Source, kind: str = "", name: str = "") -> int | None:
    """The 1-based line where the object of ``source`` starts in its file, or None (see the module docstring)."""
    path = Path(source.file)
    try:
        stat = path.stat()
    except (OSError, ValueError):
        return None
    if not path.is_file() or stat.st_size > MAX_LOCATED_BYTES or path.suffix == ".json":
        return None  # JSON: the loader numbers an array's elements as documents; no line is given for them
    lines, documents = _scanned(os.path.abspath(path), stat.st_mtime_ns, stat.st_size)
    if not 1 <= source.document <= len(documents) or documents[source.document - 1] is None:
        return None
    span = documents[source.document - 1]
    assert span is not None
    if source.item is not None:
        items = _items(lines, span)
        if not 0 <= source.item < len(items):
            return None
        span = items[source.item]
    if not _is_the_object(lines, span, kind, name):
        return None
    return span.start + 1


@lru_cache(maxsize=16)
def _scanned(path: str, mtime_ns: int, size: int) -> tuple[tuple[str, ...], list[_Span | None]]:
    """The file's lines and documents, scanned once per report; keyed by modification time and size, so a file
    edited between two reports is read again."""
    try:
        lines = tuple(Path(path).read_text().splitlines())
    except (OSError, UnicodeDecodeError):
        return (), []
    return lines, _documents(lines)


def _documents(lines: tuple[str, ...]) -> list[_Span | None]:
    """Each document of the stream as PyYAML counts them (the loader's numbering): an explicit ``---`` starts one
    (an empty one is a document too), content before the first ``---`` is one; comments and blank lines are no
    content. None: an empty document."""
    out: list[_Span | None] = []
    first: int | None = None
    explicit = False

    def close(at: int) -> None:
        if first is not None:
            out.append(_Span(first, at))
        elif explicit:
            out.append(None)

    for i, line in enumerate(lines):
        if _SEPARATOR.match(line):
            close(i)
            rest = line[3:].strip()
            first, explicit = (i if rest and not rest.startswith("#") else None), True
        elif line.startswith("..."):
            close(i)
            first, explicit = None, False
        elif first is None and line.strip() and not line.lstrip().startswith("#"):
            first = i
    close(len(lines))
    return out


def _items(lines: tuple[str, ...], span: _Span) -> list[_Span]:
    """The entries of a top-level ``items:`` sequence (a ``kind: List``, what ``kubectl get -o yaml`` prints):
    each starts with ``- `` at the sequence's indentation."""
    start = next((i for i in range(span.start, span.end) if _ITEMS.match(lines[i])), None)
    if start is None:
        return []
    starts: list[int] = []
    indent: int | None = None
    for i in range(start + 1, span.end):
        line = lines[i]
        stripped = line.lstrip(" ")
        if not stripped or stripped.startswith("#"):
            continue
        depth = len(line) - len(stripped)
        if indent is None:
            if not stripped.startswith("-"):
                return []
            indent = depth
        if depth < indent or (depth == indent and not stripped.startswith("-")):
            break  # the next key of the document: the sequence is over
        if depth == indent and (stripped == "-" or stripped.startswith("- ")):
            starts.append(i)
    ends = [*starts[1:], span.end]
    return [_Span(s, e) for s, e in zip(starts, ends, strict=True)]


def _is_the_object(lines: tuple[str, ...], span: _Span, kind: str, name: str) -> bool:
    """Is the document (or item) there the object: its kind, and the name written there the object's name or
    part of it (Kustomize's prefixes and suffixes)? Parsed on its own: one object, never the whole file."""
    if not kind and not name:
        return True
    text = "\n".join(lines[span.start:span.end])
    if lines[span.start].lstrip(" ").startswith("- "):  # a List item: its entry, as a document of its own
        indent = len(lines[span.start]) - len(lines[span.start].lstrip(" ")) + 2
        text = "\n".join(line[indent:] for line in lines[span.start:span.end])
    try:
        body = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError:
        return False
    if not isinstance(body, dict):
        return False
    meta = body.get("metadata")
    written = str(meta.get("name") or "") if isinstance(meta, dict) else ""
    return (not kind or str(body.get("kind") or "") == kind) and (not name or not written or written in name)
