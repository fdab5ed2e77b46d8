"""The built-in API types of Kubernetes v1.35, and decoding a request body into them as kube-apiserver does.

kube-apiserver decodes a JSON body into Go structs (sigs.k8s.io/json, case-sensitive) before any
validation runs. Three things can happen to a field on the way in, and this module reproduces each:

- it fits its Go type and is kept;
- it does not fit (a string where an ``int32`` goes, ``99999999999`` for an ``int32``, an object for
  a ``map[string]string``...): decoding fails with encoding/json's message, e.g.
  ``json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32``,
  which the handler wraps as ``Deployment in version "v1" cannot be handled as a Deployment: ...``;
- it is not a field of the struct (``spec.selectr``): it is dropped and reported as a *strict*
  error, ``unknown field "spec.selectr"``, which ``fieldValidation`` turns into a 400, a warning or
  nothing. A key given twice in a JSON object is ``duplicate field "..."``, likewise.

``null`` decodes as Go decodes it: a missing value (a nil pointer, or the zero value that
``omitempty`` leaves out), or the zero value of the element type inside lists and maps.

The types come from the v1.35 OpenAPI definitions that kubernetes-validate ships, and the Go type
names the errors print (``v1.Protocol`` where the schema only says "string") from
``data/gotypes-v1.35.json``, generated from k8s.io/api by ``scripts/gen_gotypes.py``.
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from .quantity import QUANTITY as QUANTITY_TEXT

KUBERNETES_VERSION = "v1.35.0"
_DEFS_PREFIX = "#/$defs/"

# Node kinds. Ints, not an Enum: the decoder compares them for every value of every object.
STRUCT, MAP, LIST, STRING, INT32, INT64, FLOAT, BOOL, INT_OR_STRING, QUANTITY, TIME, BYTES, ANY = range(13)

_INT_RANGE = {INT32: (-(2**31), 2**31 - 1), INT64: (-(2**63), 2**63 - 1)}
# Go's name for a JSON value's type, as UnmarshalTypeError prints it.
_JSON_TYPE = {str: "string", bool: "bool", int: "number", float: "number", dict: "object", list: "array"}
# resource.ParseQuantity's refusal (k8s.io/apimachinery/pkg/api/resource/quantity.go); the grammar: model/quantity.py.
_QUANTITY_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
_BASE64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")


def json_type_name(value: Any) -> str:
    """What Go's decoder calls a JSON value's type in its errors (``string``, ``number``, ``object``...)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "number"
    return _JSON_TYPE.get(type(value), "object" if isinstance(value, dict) else "value")


class GoNumber(float):
    """A JSON number with a fraction or exponent, remembering how it was written.

    Go prints the literal in its errors (``cannot unmarshal number 1.5 into ... of type int32``) and,
    unlike YAML (which kubectl re-encodes: ``1.0`` arrives as ``1``), a JSON ``1.0`` never fits an int.
    """

    literal: str

    def __new__(cls, literal: str) -> GoNumber:
        number = super().__new__(cls, literal)
        number.literal = literal
        return number


class DuplicateKeys(dict):  # type: ignore[type-arg]
    """A JSON object that named some key twice (the last value wins, as in Go); ``duplicates`` lists them."""

    duplicates: list[str]


def json_object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for ``json.loads`` that keeps duplicate keys visible to the decoder."""
    out = dict(pairs)
    if len(out) != len(pairs):
        marked = DuplicateKeys(out)
        seen: set[str] = set()
        marked.duplicates = []
        for key, _ in pairs:
            if key in seen and key not in marked.duplicates:
                marked.duplicates.append(key)
            seen.add(key)
        return marked
    return out


def loads_json(raw: bytes | str) -> Any:
    """JSON as the API server reads it: duplicate keys marked, fractional literals kept for error messages."""
    return json.loads(raw, object_pairs_hook=json_object_pairs, parse_float=GoNumber)


class DecodeError(ValueError):
    """The body does not fit the Go types; the message is encoding/json's (``json: cannot unmarshal ...``)."""


class TypeNode:
    __slots__ = ("fields", "go", "item", "kind", "struct")

    def __init__(self, kind: int, go: str, struct: str = "") -> None:
        self.kind = kind
        self.go = go  # the Go type, as reflect prints it: "int32", "[]v1.ServicePort", "v1.ServiceSpec"
        self.struct = struct  # for STRUCT: the Go struct name ("ServiceSpec"), which errors print
        self.fields: dict[str, TypeNode] = {}
        self.item: TypeNode | None = None


@dataclass(frozen=True, slots=True)
class Decoded:
    """A body decoded into the Go types: ``obj`` holds only known fields; ``strict`` what was dropped."""

    obj: dict[str, Any]
    strict: tuple[str, ...]  # 'unknown field "spec.selectr"', 'duplicate field "metadata.name"'


# --- the schemas ---------------------------------------------------------------------------


def _definitions_path() -> Path:
    # find_spec, not import: kubernetes_validate's own import pulls in jsonschema (70 ms) for nothing.
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the kubernetes-validate package (the v1.35 API schemas) is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    return root / "kubernetes-json-schema" / "v1.35.0-local" / "_definitions.json"


@cache
def definitions() -> dict[str, Any]:
    """The v1.35 OpenAPI definitions (kubernetes-validate), by name (``io.k8s.api.core.v1.Service``)."""
    return json.loads(_definitions_path().read_text())["$defs"]  # type: ignore[no-any-return]


@cache
def _go_overrides() -> dict[str, dict[str, str]]:
    path = Path(__file__).resolve().parent.parent / "data" / "gotypes-v1.35.json"
    return json.loads(path.read_text())["fields"]  # type: ignore[no-any-return]


@cache
def builtin_kinds() -> dict[tuple[str, str, str], str]:
    """(group, version, kind) → definition name, for every kind a v1.35 API server can serve."""
    out: dict[tuple[str, str, str], str] = {}
    for name, schema in definitions().items():
        if name.startswith("io.k8s.apimachinery.pkg.apis.meta."):
            continue  # DeleteOptions, WatchEvent, Status: request and response types, not stored kinds
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            version = gvk.get("version", "")
            # Alpha and beta APIs are off by default in v1.35 (every beta still in the tree arrived after
            # the 2022 "new betas off by default" policy): a kind cluster answers "no matches".
            if "alpha" in version or "beta" in version or gvk.get("kind", "").endswith("List"):
                continue
            out[(gvk.get("group", ""), version, gvk.get("kind", ""))] = name
    return out


def builtin_definition(group: str, version: str, kind: str) -> str | None:
    return builtin_kinds().get((group, version, kind))


@cache
def builtin_groups() -> frozenset[str]:
    """Every API group a v1.35 API server owns, including ones whose kinds are gone (``extensions``): a
    kind in such a group that is not served is "no matches", never a foreign custom resource."""
    return frozenset(gvk.get("group", "") for schema in definitions().values()
                     for gvk in schema.get("x-kubernetes-group-version-kind") or ())


_SPECIAL = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": (INT_OR_STRING, "intstr.IntOrString"),
    "io.k8s.apimachinery.pkg.api.resource.Quantity": (QUANTITY, "resource.Quantity"),
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": (TIME, "v1.Time"),
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": (TIME, "v1.MicroTime"),
    "io.k8s.apimachinery.pkg.runtime.RawExtension": (ANY, "runtime.RawExtension"),
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": (ANY, "v1.FieldsV1"),
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON": (ANY, "v1.JSON"),
    **{f"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.{name}": (ANY, f"v1.{name}")
       for name in ("JSONSchemaPropsOrArray", "JSONSchemaPropsOrBool", "JSONSchemaPropsOrStringArray")},
}


def _short(definition: str) -> tuple[str, str]:
    """``io.k8s.api.core.v1.ServiceSpec`` → (``v1.ServiceSpec``, ``ServiceSpec``)."""
    parts = definition.rsplit(".", 2)
    return f"{parts[-2]}.{parts[-1]}", parts[-1]


_NODES: dict[str, TypeNode] = {}


def node_for_definition(name: str) -> TypeNode:
    """The decoding tree of one definition, built once (recursive types such as JSONSchemaProps included)."""
    node = _NODES.get(name)
    if node is not None:
        return node
    special = _SPECIAL.get(name)
    if special is not None:
        node = TypeNode(special[0], special[1])
        _NODES[name] = node
        return node
    schema = definitions().get(name) or {}
    go, struct = _short(name)
    props = schema.get("properties")
    if not props:
        node = _inline_node(schema, go) if schema.get("type") not in (None, "object", ["object", "null"]) \
            else TypeNode(ANY, go)
        _NODES[name] = node
        return node
    node = TypeNode(STRUCT, go, struct)
    _NODES[name] = node  # before the fields: a field may refer back to this type
    overrides = _go_overrides().get(name, {})
    for field, field_schema in props.items():
        node.fields[field] = _field_node(field_schema, overrides.get(field))
    return node


def _base_type(schema: dict[str, Any]) -> str | None:
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    return t  # type: ignore[no-any-return]


def _field_node(schema: dict[str, Any], go: str | None) -> TypeNode:
    ref = schema.get("$ref")
    if ref:
        target = node_for_definition(ref[len(_DEFS_PREFIX):])
        if go and go != target.go and target.kind not in (STRUCT, ANY):
            # A named type over a special one (rare): keep the behaviour, print the Go name.
            clone = TypeNode(target.kind, go, target.struct)
            clone.fields, clone.item = target.fields, target.item
            return clone
        return target
    return _inline_node(schema, go)


def _element_go(go: str | None, prefix: str) -> str | None:
    return go[len(prefix):] if go and go.startswith(prefix) else None


def _inline_node(schema: dict[str, Any], go: str | None) -> TypeNode:
    t = _base_type(schema)
    fmt = schema.get("format")
    if t == "string":
        if fmt == "byte":
            return TypeNode(BYTES, go or "[]uint8")
        return TypeNode(STRING, go or "string")
    if t == "integer":
        kind = INT32 if fmt == "int32" else INT64
        return TypeNode(kind, go or ("int32" if kind == INT32 else "int64"))
    if t == "number":
        return TypeNode(FLOAT, go or "float64")
    if t == "boolean":
        return TypeNode(BOOL, go or "bool")
    if t == "array":
        item = _field_node(schema.get("items") or {}, _element_go(go, "[]"))
        node = TypeNode(LIST, go or f"[]{item.go}")
        node.item = item
        return node
    extra = schema.get("additionalProperties")
    if t == "object" and isinstance(extra, dict):
        value_go = go.split("]", 1)[1] if go and go.startswith("map[") else None
        item = _field_node(extra, value_go)
        node = TypeNode(MAP, go or f"map[string]{item.go}")
        node.item = item
        return node
    return TypeNode(ANY, go or "interface {}")


# --- decoding ------------------------------------------------------------------------------


def _zero(node: TypeNode) -> Any:
    """What ``null`` inside a list or map becomes: the element type's zero value."""
    kind = node.kind
    if kind in (STRING, BYTES, TIME):
        return ""
    if kind in (INT32, INT64, INT_OR_STRING):
        return 0
    if kind == FLOAT:
        return 0.0
    if kind == BOOL:
        return False
    if kind == STRUCT:
        return {}
    return None


class _Decoder:
    __slots__ = ("strict",)

    def __init__(self) -> None:
        self.strict: list[str] = []

    def fail(self, value: Any, node: TypeNode, path: tuple[Any, ...], struct: str,
             literal: bool = False) -> DecodeError:
        jtype = "number" if isinstance(value, int | float) and not isinstance(value, bool) else \
            _JSON_TYPE.get(type(value), "object" if isinstance(value, dict) else "value")
        if literal:
            jtype = f"number {_literal(value)}"
        fields = ".".join(p for p in path if isinstance(p, str) and not p.startswith("["))
        return DecodeError(f"json: cannot unmarshal {jtype} into Go struct field {struct}.{fields} of type {node.go}")

    def value(self, value: Any, node: TypeNode, path: tuple[Any, ...], struct: str) -> Any:
        kind = node.kind
        if kind == STRING:
            if type(value) is str:
                return value
            raise self.fail(value, node, path, struct)
        if kind == STRUCT:
            if not isinstance(value, dict):
                raise self.fail(value, node, path, struct)
            return self.struct(value, node, path)
        if kind in (INT32, INT64):
            return self.integer(value, node, path, struct)
        if kind == BOOL:
            if type(value) is bool:
                return value
            raise self.fail(value, node, path, struct)
        if kind == LIST:
            if not isinstance(value, list):
                raise self.fail(value, node, path, struct)
            item = node.item
            assert item is not None
            out = []
            for i, element in enumerate(value):
                if element is None:
                    out.append(_zero(item))
                else:
                    out.append(self.value(element, item, (*path, f"[{i}]"), struct))
            return out
        if kind == MAP:
            if not isinstance(value, dict):
                raise self.fail(value, node, path, struct)
            item = node.item
            assert item is not None
            self.duplicates(value, path)
            if item.kind == STRING:
                # map[string]string (labels, annotations, selectors): the common case, kept tight.
                result: dict[str, Any] = {}
                for k, v in value.items():
                    if type(v) is str:
                        result[_key(k)] = v
                    elif v is None:
                        result[_key(k)] = ""
                    else:
                        raise self.fail(v, item, path, struct)
                return result
            return {_key(k): (_zero(item) if v is None else self.value(v, item, (*path, f"[{k}]"), struct))
                    for k, v in value.items()}
        if kind == INT_OR_STRING:
            if type(value) is str:
                return value
            if type(value) is bool or not isinstance(value, int | float) or isinstance(value, GoNumber) or (
                    isinstance(value, float) and not value.is_integer()):
                raise DecodeError(self._go_value_error(value, "int32"))
            number = int(value)
            low, high = _INT_RANGE[INT32]
            if not low <= number <= high:
                raise DecodeError(f"json: cannot unmarshal number {number} into Go value of type int32")
            return number
        if kind == FLOAT:
            if isinstance(value, int | float) and type(value) is not bool:
                return value if type(value) is int else float(value)
            raise self.fail(value, node, path, struct)
        if kind == QUANTITY:
            if isinstance(value, int | float) and type(value) is not bool:
                return value if type(value) is int else float(value)
            if type(value) is str and QUANTITY_TEXT.match(value.strip()):
                return value
            if type(value) is str:
                raise DecodeError(_QUANTITY_ERROR)
            raise DecodeError(self._go_value_error(value, "string"))
        if kind == TIME:
            if type(value) is str:
                if value and not _RFC3339.match(value):
                    raise DecodeError(f'parsing time "{value}" as "2006-01-02T15:04:05Z07:00": cannot parse '
                                      f'"{value}" as "2006"')
                return value
            raise DecodeError(self._go_value_error(value, "string"))
        if kind == BYTES:
            if type(value) is not str:
                raise self.fail(value, node, path, struct)
            bad = _base64_error(value)
            if bad is not None:
                raise DecodeError(f"illegal base64 data at input byte {bad}")
            return value
        return value  # ANY: RawExtension, FieldsV1 and the like keep whatever JSON they hold

    @staticmethod
    def _go_value_error(value: Any, go: str) -> str:
        """A custom UnmarshalJSON (IntOrString, Quantity, Time) decodes without the field context."""
        if isinstance(value, GoNumber) or (isinstance(value, float) and not value.is_integer()):
            return f"json: cannot unmarshal number {_literal(value)} into Go value of type {go}"
        jtype = _JSON_TYPE.get(type(value), "object" if isinstance(value, dict) else "value")
        return f"json: cannot unmarshal {jtype} into Go value of type {go}"

    def integer(self, value: Any, node: TypeNode, path: tuple[Any, ...], struct: str) -> int:
        if type(value) is int:
            low, high = _INT_RANGE[node.kind]
            if low <= value <= high:
                return value
            raise self.fail(value, node, path, struct, literal=True)
        if isinstance(value, float) and not isinstance(value, GoNumber):
            # From YAML: kubectl re-encodes 3.0 as 3, and 3.5 stays a fraction.
            low, high = _INT_RANGE[node.kind]
            if value.is_integer() and low <= value <= high:
                return int(value)
            raise self.fail(value, node, path, struct, literal=True)
        if isinstance(value, GoNumber):
            raise self.fail(value, node, path, struct, literal=True)
        raise self.fail(value, node, path, struct)

    def duplicates(self, value: dict[str, Any], path: tuple[Any, ...]) -> None:
        if type(value) is dict:
            return  # only DuplicateKeys (JSON that named a key twice) has any
        dups = getattr(value, "duplicates", None)
        if dups:
            self.strict.extend(f'duplicate field "{_display(path, key)}"' for key in dups)

    def struct(self, value: dict[str, Any], node: TypeNode, path: tuple[Any, ...]) -> dict[str, Any]:
        fields = node.fields
        struct = node.struct
        self.duplicates(value, path)
        out: dict[str, Any] = {}
        for key, v in value.items():
            field = fields.get(key) if type(key) is str else None
            if field is None:
                self.strict.append(f'unknown field "{_display(path, key)}"')
                continue
            if v is None:
                continue
            # The common fits decoded here; anything else (and every misfit, for its error) by ``value``.
            kind = field.kind
            value_type = type(v)
            if kind == STRING and value_type is str:
                out[key] = v
            elif kind == STRUCT and value_type is dict:
                out[key] = self.struct(v, field, (*path, key))
            elif kind == BOOL and value_type is bool:
                out[key] = v
            elif kind == LIST and value_type is list and field.item is not None and field.item.kind == STRUCT:
                out[key] = self.struct_list(v, field.item, (*path, key), struct)
            else:
                out[key] = self.value(v, field, (*path, key), struct)
        return out

    def struct_list(self, value: list[Any], item: TypeNode, path: tuple[Any, ...], struct: str) -> list[Any]:
        """A list of structs (containers, ports, rules, peers), as ``value`` decodes it."""
        out: list[Any] = []
        for i, element in enumerate(value):
            if element is None:
                out.append(_zero(item))
            elif type(element) is dict:
                out.append(self.struct(element, item, (*path, f"[{i}]")))
            else:
                out.append(self.value(element, item, (*path, f"[{i}]"), struct))
        return out


def _key(k: Any) -> str:
    if type(k) is str:
        return k
    if type(k) is bool:
        return "true" if k else "false"
    return str(k)


def _literal(value: Any) -> str:
    if isinstance(value, GoNumber):
        return value.literal
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def _display(path: tuple[Any, ...], key: Any) -> str:
    """``spec.ports[0].nodeport``: the path a strict decoding error prints."""
    text = ""
    for p in (*path, _key(key)):
        if p.startswith("["):
            text += p
        else:
            text = f"{text}.{p}" if text else p
    return text


def _base64_error(text: str) -> int | None:
    """Where Go's base64.StdEncoding stops on ``text`` (None when it decodes)."""
    if _BASE64.match(text) and len(text) % 4 == 0:
        return None
    for i, ch in enumerate(text):
        if not (ch.isascii() and (ch.isalnum() or ch in "+/=")):
            return i
        if ch == "=" and text[i:].strip("=") != "":
            return i
    return len(text) - len(text) % 4 if len(text) % 4 else len(text)


class _Misfit(Exception):
    """The fast decoder met something it leaves to ``_Decoder`` (a misfit, an unknown or duplicate field)."""


# The fast decoder's fallback for the leaf kinds it does not take itself (quantities, times, floats, bytes, raw
# JSON): they never record a strict error, so one shared decoder serves; a value that fails there is decoded
# again by a fresh ``_Decoder``, which names its path.
_LEAVES = _Decoder()


def _fast_struct(value: dict[str, Any], node: TypeNode) -> dict[str, Any]:
    """``_Decoder.struct`` for a body that decodes cleanly, without the field paths that only errors print.

    Why: most admitted objects fit their types; carrying a path tuple, the Go struct name and the strict list
    through every field cost ~40% of decoding (bench/calico.py's 20,000 built-in objects: ~0.30 -> ~0.17 s).
    Anything else (an unknown or duplicate field, a value that does not fit) raises ``_Misfit`` or DecodeError,
    and ``decode`` starts again with ``_Decoder``, so every message and every dropped field is as before."""
    fields = node.fields
    out: dict[str, Any] = {}
    for key, v in value.items():
        field = fields.get(key)  # the fields are named by strings: a key of another type is not found either
        if field is None:
            raise _Misfit
        value_type = type(v)
        if value_type is str:
            if field.kind == STRING:
                out[key] = v
            else:
                out[key] = _fast_value(v, field)
        elif value_type is dict and field.kind == STRUCT:
            out[key] = _fast_struct(v, field)
        elif v is not None:
            out[key] = _fast_value(v, field)
    return out


def _fast_value(v: Any, node: TypeNode) -> Any:
    """``_Decoder.value`` for a value that fits (``_fast_struct``)."""
    kind = node.kind
    value_type = type(v)
    if kind == LIST and value_type is list:
        item = node.item
        assert item is not None
        if item.kind == STRUCT:
            return [_zero(item) if e is None else _fast_struct(e, item) if type(e) is dict else _fast_value(e, item)
                    for e in v]
        return [_zero(item) if e is None else _fast_value(e, item) for e in v]
    if kind == MAP and value_type is dict:
        item = node.item
        assert item is not None
        if item.kind == STRING:
            result: dict[str, Any] = {}
            for k, element in v.items():
                if type(element) is str:
                    result[k if type(k) is str else _key(k)] = element
                elif element is None:
                    result[k if type(k) is str else _key(k)] = ""
                else:
                    raise _Misfit
            return result
        return {_key(k): (_zero(item) if e is None else _fast_value(e, item)) for k, e in v.items()}
    if kind == STRUCT:
        if value_type is dict:
            return _fast_struct(v, node)
        raise _Misfit
    if kind in (STRING, BOOL):
        if value_type is (str if kind == STRING else bool):
            return v
        raise _Misfit
    if kind in (INT32, INT64, INT_OR_STRING) and value_type is int:
        low, high = _INT_RANGE[INT64 if kind == INT64 else INT32]
        if low <= v <= high:
            return v
        raise _Misfit
    if kind == INT_OR_STRING and value_type is str:
        return v
    if kind in (LIST, MAP):
        raise _Misfit  # not a list, not a map: the error is _Decoder's to word
    return _LEAVES.value(v, node, (), "")


def decode(body: dict[str, Any], definition: str) -> Decoded:
    """Decode ``body`` into the Go type of ``definition``; raises DecodeError when a value does not fit."""
    node = node_for_definition(definition)
    if type(body) is dict:  # a DuplicateKeys body has its duplicates to report
        try:
            return Decoded(_fast_struct(body, node), ())
        except (_Misfit, DecodeError):
            pass  # decoded again below, where each path is known: the error or the strict list names it
    decoder = _Decoder()
    obj = decoder.struct(body, node, ())
    return Decoded(obj, tuple(decoder.strict))


def decode_field(value: Any, definition: str, name: str) -> Decoded:
    """One top-level field (a custom object's ``metadata``) decoded into a built-in type."""
    if value is None:
        return Decoded({}, ())
    decoder = _Decoder()
    node = node_for_definition(definition)
    if not isinstance(value, dict):
        raise decoder.fail(value, node, (name,), "")
    return Decoded(decoder.struct(value, node, (name,)), tuple(decoder.strict))


def known_fields(definition: str, path: list[str]) -> list[str]:
    """The field names at ``path`` (names only, no indices) of a definition: for "did you mean" hints."""
    node: TypeNode | None = node_for_definition(definition)
    for part in path:
        while node is not None and node.kind in (LIST, MAP):
            node = node.item
        if node is None or node.kind != STRUCT:
            return []
        node = node.fields.get(part)
    while node is not None and node.kind in (LIST, MAP):
        node = node.item
    return sorted(node.fields) if node is not None and node.kind == STRUCT else []
