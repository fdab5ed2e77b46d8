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
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from ..model.loader import Source
from .render import OverlaySource

# Reading a file again to find one line must stay cheap: a snapshot of a large cluster (`kubectl get -A -o yaml`
# of 100k pods is ~400 MiB) is named by document and item, as the loader's messages name it.
MAX_LOCATED_BYTES = 8 * 1024 * 1024

try:  # libyaml's composer when PyYAML has it: the same nodes and marks, much faster
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Loader = yaml.SafeLoader


@dataclass(frozen=True, slots=True)
class _Written:
    """What a document (or List item) says of itself where it starts."""

    line: int  # 1-based
    kind: str
    name: str


def describe(source: Source | None, kind: str = "", name: str = "") -> str | None:
    """``file:line`` of the object ``kind``/``name`` read from ``source``; what the source says of itself
    (``file, document N``) when no line can be given; None for objects that come from no file (knetsim's
    defaults, the controllers' objects, an API request)."""
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
    """The line where the object of ``source`` starts in its file, or None (see the module docstring)."""
    path = Path(source.file)
    try:
        stat = path.stat()
    except (OSError, ValueError):
        return None
    if not path.is_file() or stat.st_size > MAX_LOCATED_BYTES:
        return None
    written = _located(os.path.abspath(path), stat.st_mtime_ns, stat.st_size).get((source.document, source.item))
    if written is None:
        return None
    if kind and written.kind != kind:
        return None
    if name and written.name and written.name not in name:
        return None
    return written.line


@lru_cache(maxsize=64)
def _located(path: str, mtime_ns: int, size: int) -> dict[tuple[int, int | None], _Written]:
    """Every document and List item of the file, by (document, item) as the loader numbers them. Keyed by
    modification time and size, so a file edited between two reports is read again."""
    try:
        text = Path(path).read_text()
        nodes = list(yaml.compose_all(text, Loader=_Loader))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    # The loader reads a JSON array as one object per element, numbered as documents (model/loader.py).
    json_array = (path.endswith(".json") or text.lstrip().startswith("[")) and len(nodes) == 1 and \
        isinstance(nodes[0], yaml.SequenceNode)
    documents = nodes[0].value if json_array else nodes
    out: dict[tuple[int, int | None], _Written] = {}
    for number, node in enumerate(documents, start=1):
        if not isinstance(node, yaml.MappingNode):
            continue
        out[(number, None)] = _written(node)
        items = _field(node, "items")
        if isinstance(items, yaml.SequenceNode):
            for index, item in enumerate(items.value):
                if isinstance(item, yaml.MappingNode):
                    out[(number, index)] = _written(item)
    return out


def _written(node: yaml.MappingNode) -> _Written:
    kind = _field(node, "kind")
    meta = _field(node, "metadata")
    name = _field(meta, "name") if isinstance(meta, yaml.MappingNode) else None
    return _Written(node.start_mark.line + 1, _scalar(kind), _scalar(name))


def _field(node: yaml.Node | None, key: str) -> yaml.Node | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    return next((value for k, value in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)


def _scalar(node: yaml.Node | None) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else ""
