"""Reading manifests: files, directories, stdin; multi-document YAML, ``kind: List``, JSON.

Every object keeps where it came from (file and document number), so that any later
error — validation, allocation, a doctor finding — can point at the exact document.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml

try:  # libyaml is ~10x faster; the wheels ship it, a source build may not
    _BaseLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _BaseLoader = yaml.SafeLoader


class _YamlLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """YAML as sigs.k8s.io/yaml reads it: an unquoted ``2024-05-01T10:00:00Z`` stays a string."""


_YamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True, slots=True)
class Source:
    """Where an object was read: file (``-`` for stdin, ``<builtin>`` for defaults), document, List item."""

    file: str
    document: int  # 1-based, as a person counts documents in a file
    item: int | None = None  # 0-based index inside a `kind: List`

    def __str__(self) -> str:
        text = f"{self.file}, document {self.document}"
        if self.item is not None:
            text += f", items[{self.item}]"
        return text


BUILTIN = Source("<builtin>", 0)
CONTROLLER = Source("<controller>", 0)


@dataclass(slots=True)
class Document:
    source: Source
    body: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.body.get("kind") or "")

    @property
    def name(self) -> str:
        meta = self.body.get("metadata")
        return str(meta.get("name") or "") if isinstance(meta, dict) else ""

    @property
    def namespace(self) -> str:
        meta = self.body.get("metadata")
        return str(meta.get("namespace") or "") if isinstance(meta, dict) else ""

    def describe(self) -> str:
        """``Service default/web`` — how errors name the object."""
        ns = self.namespace
        name = self.name or "<unnamed>"
        return f"{self.kind or '<no kind>'} {ns + '/' if ns else ''}{name}"


@dataclass(frozen=True, slots=True)
class LoadError:
    source: Source | None
    message: str
    subject: str = ""

    def __str__(self) -> str:
        where = str(self.source) if self.source else "input"
        return f"{where}: {self.subject + ': ' if self.subject else ''}{self.message}"


@dataclass(slots=True)
class LoadResult:
    documents: list[Document] = field(default_factory=list)
    errors: list[LoadError] = field(default_factory=list)


def expand_paths(paths: Iterable[str]) -> Iterator[str]:
    """Files as given; directories walked recursively in sorted order (kubectl -R order)."""
    for raw in paths:
        if raw == "-":
            yield raw
            continue
        path = Path(raw)
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs.sort()
                for name in sorted(files):
                    if name.endswith(MANIFEST_SUFFIXES):
                        yield str(Path(root) / name)
        else:
            yield raw


def load_paths(paths: Iterable[str], stdin: IO[str] | None = None) -> LoadResult:
    result = LoadResult()
    for path in expand_paths(paths):
        if path == "-":
            text = (stdin or sys.stdin).read()
        else:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except FileNotFoundError:
                result.errors.append(LoadError(None, f"the path \"{path}\" does not exist"))
                continue
            except (OSError, UnicodeDecodeError) as exc:
                result.errors.append(LoadError(None, f"cannot read \"{path}\": {exc}"))
                continue
        load_text(text, path, result)
    return result


def load_text(text: str, filename: str, result: LoadResult | None = None) -> LoadResult:
    result = result if result is not None else LoadResult()
    stripped = text.lstrip()
    if filename.endswith(".json") or (stripped.startswith(("{", "[")) and _looks_like_json(stripped)):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            result.errors.append(
                LoadError(Source(filename, 1), f"error parsing JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})")
            )
            return result
        bodies = data if isinstance(data, list) else [data]
        for i, body in enumerate(bodies, start=1):
            _add(body, Source(filename, i), result)
        return result
    document = 1
    try:
        for body in yaml.load_all(text, Loader=_YamlLoader):
            if body is not None:  # an empty document between two `---` is skipped
                _add(body, Source(filename, document), result)
            document += 1
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        result.errors.append(LoadError(Source(filename, document), f"error parsing YAML{where}: {problem}"))
    return result


def _looks_like_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _add(body: Any, source: Source, result: LoadResult) -> None:
    if not isinstance(body, dict):
        got = type(body).__name__
        result.errors.append(LoadError(source, f"expected an object with apiVersion and kind, got {got}"))
        return
    kind = body.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(body.get("items"), list):
        # `kubectl get ... -o yaml` prints a v1 List; typed lists (PodList) have the same shape.
        for j, item in enumerate(body["items"]):
            where = Source(source.file, source.document, j)
            if not isinstance(item, dict):
                result.errors.append(LoadError(where, "list item is not an object"))
                continue
            if "kind" not in item and kind != "List":
                # A typed list (ServiceList) names its items' kind once for all of them.
                item = {"kind": kind[: -len("List")], "apiVersion": body.get("apiVersion"), **item}
            _add(item, where, result)
        return
    missing = [f for f in ("apiVersion", "kind") if not body.get(f)]
    if missing:
        subject = Document(source, body).describe()
        result.errors.append(LoadError(source, f"Object 'Kind' is missing in '{_short(body)}'" if "kind" in missing
                                       else "apiVersion not set", subject if "kind" not in missing else ""))
        return
    result.documents.append(Document(source, body))


def _short(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"))[:120]
