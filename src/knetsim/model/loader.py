"""Reading manifests: files, directories, stdin; multi-document YAML, ``kind: List``, JSON.

Every object keeps where it came from (file and document number), so that any later
error — validation, allocation, a doctor finding — can point at the exact document.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml

from . import fastyaml

try:  # libyaml is ~10x faster; the wheels ship it, a source build may not
    _BaseLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _BaseLoader = yaml.SafeLoader


_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"


class _YamlLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """YAML as sigs.k8s.io/yaml reads it: an unquoted ``2024-05-01T10:00:00Z`` stays a string.

    Documents are built from libyaml's node graph by one tight walk: plain maps, lists and strings
    directly, every other tag (ints, bools, merge keys ``<<``) through PyYAML's own constructors.
    PyYAML's generic construction was the larger half of reading 10,000 pods' manifests.
    """

    def construct_document(self, node: yaml.Node) -> Any:
        built: dict[int, Any] = {}  # node id -> object: an alias yields the same object, as in PyYAML
        try:
            data = self._build(node, built)
        except RecursionError:
            # libyaml allows 1000 levels, Python's stack about as many: refuse, never crash.
            raise yaml.constructor.ConstructorError(None, None, "exceeded max depth", node.start_mark) from None
        finally:
            self.constructed_objects = {}
            self.recursive_objects = {}
        return data

    def _build(self, node: yaml.Node, built: dict[int, Any]) -> Any:
        tag = node.tag
        if tag == _STR:
            return node.value
        known = built.get(id(node))
        if known is not None:
            return known
        if tag == _MAP:
            if any(k.tag == "tag:yaml.org,2002:merge" for k, _ in node.value):
                return self.construct_object(node, deep=True)  # `<<:` merge keys: PyYAML's rules
            out: dict[Any, Any] = {}
            built[id(node)] = out
            for key_node, value_node in node.value:
                key = self._build(key_node, built)
                if not isinstance(key, Hashable):
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark, "found unhashable key", key_node.start_mark)
                out[key] = self._build(value_node, built)
            return out
        if tag == _SEQ:
            items: list[Any] = []
            built[id(node)] = items
            items.extend(self._build(child, built) for child in node.value)
            return items
        return self.construct_object(node, deep=True)


    def stream(self) -> Iterator[Any]:
        """The documents of the stream, each built straight from libyaml's events.

        Composing a node graph first (what ``yaml.load_all`` does) holds a node and two marks for every
        scalar until the document is built: a ``kind: List`` of 100,000 pods took 2 GB that way. Built
        from the events, only the objects themselves are held. Streams this builder does not handle
        (merge keys ``<<``, explicitly tagged collections) go through ``construct_document``."""
        self._plain_tags: dict[str, str] = {}
        # One string object per distinct text (a plain scalar that reads as a string; a quoted one): 10,000
        # pods' manifests hold 870,000 strings of 3,000 texts, 46 MB as separate objects. Admission and the
        # cluster build keep the same objects, so the saving carries through the run.
        self._plain_strings: dict[str, str] = {}
        self._quoted_strings: dict[str, str] = {}
        # Per document, in order: whether ``check_aliases`` has to walk it (see ``_alias_target``).
        self.alias_walks: list[bool] = []
        self.get_event()  # StreamStart
        while not self.check_event(yaml.StreamEndEvent):
            self.get_event()  # DocumentStart
            yield self._from_events()
            self.get_event()  # DocumentEnd

    def _from_events(self) -> Any:
        anchors: dict[str, Any] = {}
        # What the aliases of this document add once expanded (``_alias_target``); None: walk it whole.
        self._aliased: int | None = 0
        self._alias_sizes: dict[int, int] = {}
        self.alias_walks.append(False)
        # The open collection (None: none yet), whether it is a list, and the key waiting for its value;
        # the collections it is inside are on the stack, each with its own.
        container: Any = None
        in_list = False
        key: Any = _NO_KEY
        stack: list[tuple[Any, bool, Any]] = []
        get_event, scalar = self.get_event, self._scalar
        scalar_event, alias_event = yaml.ScalarEvent, yaml.AliasEvent
        mapping_start, sequence_start = yaml.MappingStartEvent, yaml.SequenceStartEvent
        plain_strings = self._plain_strings  # a plain scalar's text that reads as a string -> its one object
        while True:
            event = get_event()
            kind = type(event)
            opens = False
            if kind is scalar_event:
                # Most scalars are plain strings whose text was seen before: no call for those.
                value = plain_strings.get(event.value) if event.tag is None and event.implicit[0] else None
                if value is None:
                    value = scalar(event)
            elif kind is alias_event:
                if event.anchor not in anchors:
                    raise yaml.composer.ComposerError(None, None, f"found undefined alias {event.anchor!r}",
                                                      event.start_mark)
                value = anchors[event.anchor]
                if type(value) is dict or type(value) is list:
                    self._alias_target(value, container, stack)
            elif kind is mapping_start or kind is sequence_start:
                if event.tag not in (None, "!", _MAP, _SEQ):
                    raise _NotPlain()
                value = {} if kind is mapping_start else []
                opens = True
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                if not stack:
                    return container
                container, in_list, key = stack.pop()
                continue
            else:  # pragma: no cover - libyaml emits nothing else inside a document
                raise _NotPlain()
            if event.anchor is not None:
                anchors[event.anchor] = value
            if in_list:
                container.append(value)
            elif container is None:
                if not opens:
                    return value
            elif key is _NO_KEY:
                if opens or (type(value) is not str and not isinstance(value, Hashable)):
                    raise yaml.constructor.ConstructorError("while constructing a mapping", None,
                                                            "found unhashable key", event.start_mark)
                key = value
            else:
                container[key] = value
                key = _NO_KEY
            if opens:
                if container is not None:
                    stack.append((container, in_list, key))
                container, in_list, key = value, kind is sequence_start, _NO_KEY

    def _alias_target(self, target: Any, container: Any, stack: list[tuple[Any, bool, Any]]) -> None:
        """Account for an alias to a collection, so that ``check_aliases`` walks only documents that may fail.

        Once expanded, a document holds its written nodes plus, for each alias to a collection, a whole copy
        of the collection with its own aliases expanded: the "aliased" count ``check_aliases`` weighs is at
        most the sum of those copies' sizes (less when a repeated key dropped the alias). While that sum is
        at most the 100 below which go-yaml never refuses, the document needs no walk. An alias to a
        collection still open (one that contains itself) or a larger sum leaves the walk to decide."""
        if self._aliased is None:
            return
        if target is container or any(target is outer for outer, _, _ in stack):
            self._aliased = None
        else:
            try:
                self._aliased += _expanded_size(target, self._alias_sizes)
            except RecursionError:  # the walk refuses it in its own words
                self._aliased = _ALIASED_FREE + 1
            if self._aliased > _ALIASED_FREE:
                self._aliased = None
        if self._aliased is None:
            self.alias_walks[-1] = True

    def _scalar(self, event: yaml.ScalarEvent) -> Any:
        tag = event.tag
        if tag is None or tag == "!":
            if event.implicit[0]:
                # Plain scalars repeat (keys, common values): their tag is resolved once per text.
                tag = self._plain_tags.get(event.value)
                if tag is None:
                    tag = self.resolve(yaml.ScalarNode, event.value, event.implicit)
                    if len(self._plain_tags) < _DISTINCT_STRINGS:
                        self._plain_tags[event.value] = tag
            else:
                tag = self.resolve(yaml.ScalarNode, event.value, event.implicit)
        if tag == _STR:
            text = event.value
            strings = self._plain_strings if event.implicit[0] and event.tag is None else self._quoted_strings
            known = strings.get(text)
            if known is not None:
                return known
            if len(strings) < _DISTINCT_STRINGS:
                strings[text] = text
            return text
        if tag == "tag:yaml.org,2002:merge":
            raise _NotPlain()
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        constructor = self.yaml_constructors.get(tag)
        if constructor is None:
            return self.construct_object(node, deep=True)  # PyYAML's words for a tag it does not know
        return constructor(self, node)


# How many distinct texts a stream's tables remember (plain scalars' tags, shared strings): bounded, so that a
# stream of distinct values does not also fill the tables.
_DISTINCT_STRINGS = 65536


class _NotPlain(Exception):
    """A stream the event builder leaves to PyYAML's own construction."""


_NO_KEY = object()


@contextlib.contextmanager
def many_objects() -> Iterator[None]:
    """Building many objects at once (a large manifest, its admission): the cyclic collector would walk
    every one of them again each time a few hundred more are made (three quarters of the time of reading
    a 30 MB List); they are freed by reference counting as usual."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def yaml_documents(text: str, alias_walks: list[bool] | None = None) -> Iterator[Any]:
    """The documents of a YAML stream as sigs.k8s.io/yaml reads them (see ``_YamlLoader``).

    ``alias_walks``, when given, gets for each document yielded whether ``check_aliases`` must walk it.
    A large stream is read by rapidyaml when that reading is provably this one (``fastyaml``)."""
    if len(text) >= fastyaml.MIN_CHARS:
        documents = fastyaml.read_documents(text, _reference_documents, _RESOLVER_FIRSTS, _DISTINCT_STRINGS)
        if documents is not None:
            if alias_walks is not None:
                alias_walks.extend(False for _ in documents)  # no alias: the fast path refuses them
            yield from documents
            return
    yield from _libyaml_documents(text, alias_walks)


def _libyaml_documents(text: str, alias_walks: list[bool] | None = None) -> Iterator[Any]:
    done = 0
    if "<<" not in text:
        loader = _YamlLoader(text)
        try:
            for document in loader.stream():
                if alias_walks is not None:
                    alias_walks.append(loader.alias_walks[-1])
                yield document
                done += 1
            return
        except _NotPlain:
            pass
        finally:
            loader.dispose()
    for i, document in enumerate(yaml.load_all(text, Loader=_YamlLoader)):
        if i >= done:
            if alias_walks is not None:
                alias_walks.append(True)  # built by PyYAML (merge keys): nothing was counted
            yield document


_YamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}

# The first characters PyYAML's implicit resolvers key on: any other plain scalar reads as a string.
_RESOLVER_FIRSTS = "".join(sorted(first for first in _YamlLoader.yaml_implicit_resolvers if first))


def _reference_documents(text: str) -> list[Any]:
    """A small stream read by libyaml alone (the fast path checks its scalars' readings against this)."""
    return list(_libyaml_documents(text))


MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
# A manifest file larger than this is not a manifest (`-f /dev/zero`, a disk image...): refuse it
# before reading it all. A `kubectl get -A -o yaml` of a 100k-pod cluster is about 400 MiB.
MAX_FILE_BYTES = 512 * 1024 * 1024


class InputTooHostile(ValueError):
    """YAML or JSON that would cost unbounded time or memory to take in; the message says which."""


def _alias_ratio_allowed(decoded: int) -> float:
    # go-yaml's allowedAliasRatio (yaml.v2 decode.go), which sigs.k8s.io/yaml and so kubectl apply use.
    low, high = 400_000, 4_000_000
    if decoded <= low:
        return 0.99
    if decoded >= high:
        return 0.10
    return 0.99 - 0.89 * (decoded - low) / (high - low)


def check_aliases(text: str, documents: list[Any] | None = None, alias_walks: list[bool] | None = None) -> None:
    """Refuse a YAML stream whose aliases expand it beyond what go-yaml allows (the "billion laughs").

    PyYAML shares aliased nodes, so the load itself is cheap; the expansion happens later (every
    copy, every JSON encoding). go-yaml counts each node as often as an alias brings it back and
    stops with "document contains excessive aliasing"; this counts the same way over the loaded
    documents (each shared node visited once), and refuses a node that contains itself.
    ``alias_walks`` (from ``yaml_documents``, one per document): the documents the loader could not
    clear by itself; the others are not walked.
    """
    if "*" not in text:
        return  # no alias: the common case costs one scan
    if documents is None:
        alias_walks = []
        documents = list(yaml_documents(text, alias_walks))
    for i, doc in enumerate(documents):
        if alias_walks is not None and i < len(alias_walks) and not alias_walks[i]:
            continue
        expanded, distinct = _expansion(doc)
        aliased = expanded - distinct
        if aliased > 100 and expanded > 1000 and aliased / expanded > _alias_ratio_allowed(expanded):
            raise InputTooHostile("yaml: document contains excessive aliasing")


# At most this many nodes brought back by aliases, a document is never refused (``check_aliases``).
_ALIASED_FREE = 100


def _expanded_size(node: Any, sizes: dict[int, int]) -> int:
    """The nodes of a finished collection once its aliases are expanded, as ``_expansion`` counts them; ``sizes``
    remembers the collections already sized (an alias brings back the same object)."""
    known = sizes.get(id(node))
    if known is not None:
        return known
    total = 1 + (len(node) if type(node) is dict else 0)
    for child in (node.values() if type(node) is dict else node):
        total += _expanded_size(child, sizes) if type(child) is dict or type(child) is list else 1
    sizes[id(node)] = total
    return total


def _expansion(root: Any) -> tuple[int, int]:
    """(nodes once every alias is expanded, nodes as written): a shared container is walked once and its
    expanded size reused wherever an alias brings it back."""
    sizes: dict[int, int] = {}  # id -> expanded size; -1 while being sized (met again: it contains itself)
    distinct = 0

    def size(node: Any) -> int:
        nonlocal distinct
        key = id(node)
        known = sizes.get(key)
        if known is not None:
            if known < 0:
                raise InputTooHostile("yaml: anchor contains itself")
            return known
        sizes[key] = -1
        own = total = 1 + (len(node) if type(node) is dict else 0)
        for child in (node.values() if type(node) is dict else node):
            kind = type(child)
            if kind is dict or kind is list:
                total += size(child)
            else:
                total += 1
                own += 1
        distinct += own
        sizes[key] = total
        return total

    if type(root) is not dict and type(root) is not list:
        return 1, 1
    try:
        return size(root), distinct
    except RecursionError:
        raise InputTooHostile("exceeded max depth") from None


def load_yaml_documents(text: str) -> list[Any]:
    """Every document of a YAML stream, bounded: aliases by check_aliases, nesting by libyaml (1000 levels)."""
    with many_objects():
        alias_walks: list[bool] = []
        documents = list(yaml_documents(text, alias_walks))
    check_aliases(text, documents, alias_walks)
    return documents


def loads_json_bounded(raw: str | bytes, **kwargs: Any) -> Any:
    """json.loads with the nesting guard Go has (it stops at 10000 levels; Python's stack at about 1000)."""
    try:
        return json.loads(raw, **kwargs)
    except RecursionError:
        raise InputTooHostile("exceeded max depth") from None


def _read_stream(stream: IO[str]) -> str:
    """stdin, bounded like a file (``cat /dev/zero | knetsim validate -f -`` ends at once)."""
    parts: list[str] = []
    total = 0
    while True:
        part = stream.read(1 << 20)
        if not part:
            return "".join(parts)
        if "\0" in part:
            raise InputTooHostile("cannot read standard input: binary data (a NUL byte), not YAML or JSON")
        total += len(part)
        if total > MAX_FILE_BYTES:
            raise InputTooHostile(f"cannot read standard input: larger than {MAX_FILE_BYTES >> 20} MiB")
        parts.append(part)


def read_manifest(path: str) -> str:
    """A manifest file's text; refuses binary, huge and endless inputs (``-f /dev/zero``) early."""
    chunks: list[bytes] = []
    total = 0
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(1 << 20)
            if not chunk:
                break
            nul = chunk.find(b"\0")
            if nul >= 0:
                raise InputTooHostile(f"cannot read \"{path}\": binary data (a NUL byte at offset {total + nul}), "
                                      "not YAML or JSON")
            total += len(chunk)
            if total > MAX_FILE_BYTES:
                raise InputTooHostile(f"cannot read \"{path}\": larger than {MAX_FILE_BYTES >> 20} MiB")
            chunks.append(chunk)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputTooHostile(f"cannot read \"{path}\": not UTF-8 text (byte {exc.start})") from None


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


# kubectl's words for input that holds no object (k8s.io/cli-runtime pkg/resource/visitor.go and
# k8s.io/kubectl pkg/cmd/apply/apply.go): a gate that reads nothing must not pass.
NO_OBJECTS = "no objects passed to apply"


def _no_manifests(directory: str) -> str:
    extensions = " ".join(sorted(MANIFEST_SUFFIXES))
    return f"error reading [{directory}]: recognized file extensions are [{extensions}]"


def nothing_read(message: str) -> bool:
    """Does this load error say the input held nothing to read (``NO_OBJECTS``, a directory without manifests)?"""
    return message == NO_OBJECTS or (message.startswith("error reading [")
                                     and message.endswith(_no_manifests("")[len("error reading []"):]))


def load_paths(paths: Iterable[str], stdin: IO[str] | None = None) -> LoadResult:
    """The documents of files, directories (recursive) and ``-``. As ``kubectl apply -f``, a directory without a
    manifest file is an error, and so is input that holds no object at all (``NO_OBJECTS``)."""
    result = LoadResult()
    paths = list(paths)
    for raw in paths:
        if raw != "-" and Path(raw).is_dir() and next(expand_paths([raw]), None) is None:
            result.errors.append(LoadError(None, _no_manifests(raw)))
    for path in expand_paths(paths):
        if path == "-":
            try:
                text = _read_stream(stdin or sys.stdin)
            except InputTooHostile as exc:
                result.errors.append(LoadError(None, str(exc)))
                continue
        else:
            try:
                text = read_manifest(path)
            except FileNotFoundError:
                result.errors.append(LoadError(None, f"the path \"{path}\" does not exist"))
                continue
            except InputTooHostile as exc:
                result.errors.append(LoadError(None, str(exc)))
                continue
            except OSError as exc:
                result.errors.append(LoadError(None, f"cannot read \"{path}\": {exc.strerror or exc}"))
                continue
        load_text(text, path, result)
    if not result.documents and not result.errors:
        result.errors.append(LoadError(None, NO_OBJECTS))
    return result


def load_text(text: str, filename: str, result: LoadResult | None = None) -> LoadResult:
    result = result if result is not None else LoadResult()
    stripped = text.lstrip()
    is_json = filename.endswith(".json")
    if is_json or stripped.startswith(("{", "[")):
        # Parsed once: text that looks like JSON but is not (YAML flow style) is read as YAML below.
        try:
            with many_objects():
                data = loads_json_bounded(text)
        except json.JSONDecodeError as exc:
            if is_json:
                result.errors.append(LoadError(Source(filename, 1), f"error parsing JSON: {exc.msg} (line "
                                                                    f"{exc.lineno}, column {exc.colno})"))
                return result
            data = _NOT_JSON
        except InputTooHostile as exc:
            if is_json:
                result.errors.append(LoadError(Source(filename, 1), f"error parsing JSON: {exc}"))
                return result
            data = _NOT_JSON
    else:
        data = _NOT_JSON
    if data is not _NOT_JSON:
        bodies = data if isinstance(data, list) else [data]
        for i, body in enumerate(bodies, start=1):
            _add(body, Source(filename, i), result)
        return result
    document = 1
    bodies: list[Any] = []
    alias_walks: list[bool] = []
    try:
        with many_objects():
            for body in yaml_documents(text, alias_walks):
                bodies.append(body)
                document += 1
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        result.errors.append(LoadError(Source(filename, document), f"error parsing YAML{where}: {problem}"))
    try:
        check_aliases(text, bodies, alias_walks)
    except InputTooHostile as exc:
        result.errors.append(LoadError(Source(filename, 1), f"error converting YAML to JSON: {exc}"))
        return result
    for i, body in enumerate(bodies, start=1):
        if body is not None:  # an empty document between two `---` is skipped
            _add(body, Source(filename, i), result)
    return result


_NOT_JSON = object()


def _add(body: Any, source: Source, result: LoadResult) -> None:
    if type(body) is dict:  # the common case in two lookups (20,000 documents of the 10k-pod bench: 15 -> 8 ms)
        kind = body.get("kind")
        if kind and body.get("apiVersion") and not (type(kind) is str and kind.endswith("List")):
            result.documents.append(Document(source, body))
            return
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
