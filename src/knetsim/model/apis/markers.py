"""The vocabulary knetsim's API definitions are written in: types whose fields carry their markers.

A definition module reads like a Go ``*_types.go`` file with kubebuilder markers, in Python:

    Hostname = String("A DNS name, optionally with a leading wildcard label.",
                      min_length=1, max_length=253, pattern=r"^(\\*\\.)?[a-z0-9]...$")

    class Fraction(Struct, rules=[Rule("self.numerator <= self.denominator",
                                       "numerator must be less than or equal to denominator")]):
        \"\"\"A ratio, numerator over denominator.\"\"\"

        numerator = Field(Int32(minimum=0), "The part taken.", required=True)
        denominator = Field(Int32(minimum=1), "The whole.", default=100)

- named scalar types (``String``, ``Integer``, ``Boolean``) are values, refined per field with
  ``Field(Hostname, max_length=...)`` as a field marker narrows a type marker;
- ``ListOf``/``MapOf`` carry the list and map markers (``max_items``, ``list_type``, ``map_keys``...);
- a ``Struct`` subclass is an object type: its ``Field`` attributes are its properties (JSON name
  from the attribute: ``section_name`` is ``sectionName``, a trailing ``_`` escapes a Python keyword,
  ``json=`` names the irregular ones), and class keywords carry the object markers (``rules``,
  ``min_properties``, ``max_properties``, ``map_type``, ``one_of``). Inheritance is Go's inline
  embedding: the base's fields and rules come first;
- ``Rule`` is an ``x-kubernetes-validations`` entry: its rule and message are facts of the API (the
  API server prints the message), so they are kept byte for byte;
- ``channel="experimental"`` on a field or a rule keeps it out of the standard channel's CRD (a rule
  may also be ``channel="standard"``-only), as upstream's ``<...:experimental>`` markers do.

``schema(type, channel)`` is the one generator from these declarations to the structural OpenAPI v3 schema
(keys sorted, so the output is the same on every run); ``model.apis.generate`` builds the
CustomResourceDefinitions around it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias

_MISSING: Any = object()


STANDARD = "standard"
EXPERIMENTAL = "experimental"


def _in(channel: str, wanted: str) -> bool:
    """Whether a marker for ``channel`` ("" for both) belongs in the ``wanted`` channel's CRD."""
    return not channel or channel == wanted


@dataclass(frozen=True)
class Rule:
    """One ``x-kubernetes-validations`` rule (CEL), with the words the API server reports when it fails."""

    rule: str
    message: str = ""
    message_expression: str = ""
    reason: str = ""
    field_path: str = ""
    optional_old_self: bool = False
    channel: str = ""  # "" in both channels' CRDs, or only in the "standard" or "experimental" one

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule}
        if self.message:
            out["message"] = self.message
        if self.message_expression:
            out["messageExpression"] = self.message_expression
        if self.reason:
            out["reason"] = self.reason
        if self.field_path:
            out["fieldPath"] = self.field_path
        if self.optional_old_self:
            out["optionalOldSelf"] = True
        return out


class Type:
    """A value type: a scalar, a list or a map (objects are ``Struct`` subclasses)."""

    doc: str
    rules: tuple[Rule, ...]

    def node(self, channel: str = STANDARD) -> dict[str, Any]:
        """The schema node without its description, as the ``channel``'s CRD has it."""
        raise NotImplementedError

    def refined(self, **markers: Any) -> Type:
        """This type narrowed by a field's own markers; a field's rules come after the type's."""
        rules = tuple(markers.pop("rules", ()))
        changed: Type = dataclasses.replace(self, **markers) if markers else self  # type: ignore[type-var]
        if rules:
            changed = dataclasses.replace(changed, rules=(*changed.rules, *rules))  # type: ignore[type-var]
        return changed


TypeRef: TypeAlias = "Type | type[Struct]"


def _common(node: dict[str, Any], rules: Sequence[Rule], channel: str) -> dict[str, Any]:
    kept = [r.to_dict() for r in rules if _in(r.channel, channel)]
    if kept:
        node["x-kubernetes-validations"] = kept
    return node


@dataclass(frozen=True)
class String(Type):
    doc: str = ""
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    enum: tuple[str, ...] = ()
    format: str | None = None
    rules: tuple[Rule, ...] = ()

    def node(self, channel: str = STANDARD) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "string"}
        if self.min_length is not None:
            out["minLength"] = self.min_length
        if self.max_length is not None:
            out["maxLength"] = self.max_length
        if self.pattern is not None:
            out["pattern"] = self.pattern
        if self.enum:
            out["enum"] = list(self.enum)
        if self.format:
            out["format"] = self.format
        return _common(out, self.rules, channel)


@dataclass(frozen=True)
class Integer(Type):
    doc: str = ""
    format: str | None = None  # "int32" / "int64" (Go's int32 and int64); None for Go's int
    minimum: int | None = None
    maximum: int | None = None
    enum: tuple[int, ...] = ()
    rules: tuple[Rule, ...] = ()

    def node(self, channel: str = STANDARD) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "integer"}
        if self.format:
            out["format"] = self.format
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        if self.enum:
            out["enum"] = list(self.enum)
        return _common(out, self.rules, channel)


def Int32(doc: str = "", **markers: Any) -> Integer:
    return Integer(doc, "int32", **markers)


def Int64(doc: str = "", **markers: Any) -> Integer:
    return Integer(doc, "int64", **markers)


@dataclass(frozen=True)
class Number(Type):
    """Go's float64 (``type: number``): Calico's policy and tier ``order``, Antrea's ``priority``."""

    doc: str = ""
    rules: tuple[Rule, ...] = ()

    def node(self, channel: str = STANDARD) -> dict[str, Any]:
        return _common({"type": "number"}, self.rules, channel)


@dataclass(frozen=True)
class IntOrString(Type):
    """apimachinery's IntOrString and types like it (a port number or a name or range, a protocol number or
    name): ``x-kubernetes-int-or-string``."""

    doc: str = ""
    rules: tuple[Rule, ...] = ()

    def node(self, channel: str = STANDARD) -> dict[str, Any]:
        return _common({"x-kubernetes-int-or-string": True}, self.rules, channel)


@dataclass(frozen=True)
class Untyped(Type):
    """A value of any shape, kept as written (``x-kubernetes-preserve-unknown-fields``): for a field whose type
    changed between the releases a definition covers."""

    doc: str = ""
    rules: tuple[Rule, ...] = ()

    def node(self, channel: str = STANDARD) -> dict[str, Any]:
        return _common({"x-kubernetes-preserve-unknown-fields": True}, self.rules, channel)


@dataclass(frozen=True)
class Boolean(Type):
    doc: str = ""
    rules: tuple[Rule, ...] = ()

    def node(self, channel: str = STANDARD) -> dict[str, Any]:
        return _common({"type": "boolean"}, self.rules, channel)


@dataclass(frozen=True)
class ListOf(Type):
    items: TypeRef
    doc: str = ""
    min_items: int | None = None
    max_items: int | None = None
    list_type: str | None = None  # "atomic" | "set" | "map"
    map_keys: tuple[str, ...] = ()
    rules: tuple[Rule, ...] = ()

    def node(self, channel: str = STANDARD) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "array", "items": schema(self.items, channel)}
        if self.min_items is not None:
            out["minItems"] = self.min_items
        if self.max_items is not None:
            out["maxItems"] = self.max_items
        if self.list_type:
            out["x-kubernetes-list-type"] = self.list_type
        if self.map_keys:
            out["x-kubernetes-list-map-keys"] = list(self.map_keys)
        return _common(out, self.rules, channel)


@dataclass(frozen=True)
class MapOf(Type):
    """A string-keyed map (Go's ``map[K]V``); the key type's markers do not reach the schema, as upstream."""

    values: TypeRef
    doc: str = ""
    min_properties: int | None = None
    max_properties: int | None = None
    rules: tuple[Rule, ...] = ()

    def node(self, channel: str = STANDARD) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object", "additionalProperties": schema(self.values, channel)}
        if self.min_properties is not None:
            out["minProperties"] = self.min_properties
        if self.max_properties is not None:
            out["maxProperties"] = self.max_properties
        return _common(out, self.rules, channel)


class Field:
    """One property of a Struct: its type (narrowed by field markers), description, and whether it is required."""

    def __init__(self, type_: TypeRef, doc: str = "", *, json: str | None = None, required: bool = False,
                 default: Any = _MISSING, channel: str = "", **markers: Any) -> None:
        self.type = type_
        self.doc = doc
        self.json = json
        self.required = required
        self.default = default
        self.channel = channel  # "experimental": only in the experimental channel's CRD
        # Markers on the field itself (Go: on the struct member): they narrow a scalar/list/map type, or add
        # rules to an object type (x-kubernetes-validations placed beside its $ref, merged by the generator).
        self.markers = markers
        if isinstance(type_, type) and set(markers) - {"rules"}:
            raise TypeError(f"an object field takes only rules as field markers, not {sorted(markers)}")

    @property
    def has_default(self) -> bool:
        return self.default is not _MISSING

    def resolved(self) -> TypeRef:
        if self.markers and isinstance(self.type, Type):
            return self.type.refined(**self.markers)
        return self.type

    def node(self, channel: str = STANDARD) -> dict[str, Any]:
        out = schema(self.resolved(), channel)
        extra = [r.to_dict() for r in self.markers.get("rules", ()) if _in(r.channel, channel)]
        if isinstance(self.type, type) and extra:
            out = {**out, "x-kubernetes-validations": [*out.get("x-kubernetes-validations", []), *extra]}
        doc = self.doc or _doc_of(self.type)
        if doc:
            out = {**out, "description": doc}
        if self.has_default:
            out = {**out, "default": self.default}
        return out


def json_name(attribute: str) -> str:
    """``section_name`` → ``sectionName``; ``from_`` → ``from`` (a Python keyword, escaped)."""
    head, *rest = attribute.rstrip("_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class Struct:
    """An object type. Subclasses declare ``Field`` attributes; class keywords are the object's markers."""

    __fields__: ClassVar[dict[str, Field]] = {}
    __rules__: ClassVar[tuple[Rule, ...]] = ()
    __object_markers__: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, *, rules: Iterable[Rule] = (), min_properties: int | None = None,
                          max_properties: int | None = None, map_type: str | None = None,
                          one_of: Sequence[Mapping[str, Any]] = (), **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields = dict(cls.__fields__)
        for attribute, value in list(vars(cls).items()):
            if isinstance(value, Field):
                fields[value.json or json_name(attribute)] = value
        cls.__fields__ = fields
        cls.__rules__ = (*cls.__rules__, *rules)
        markers = dict(cls.__object_markers__)
        for key, value in (("minProperties", min_properties), ("maxProperties", max_properties),
                           ("x-kubernetes-map-type", map_type), ("oneOf", list(one_of) or None)):
            if value is not None:
                markers[key] = value
        cls.__object_markers__ = markers

    @classmethod
    def node(cls, channel: str = STANDARD) -> dict[str, Any]:
        fields = {name: f for name, f in cls.__fields__.items() if _in(f.channel, channel)}
        out: dict[str, Any] = {"type": "object"}
        if fields:
            out["properties"] = {name: fields[name].node(channel) for name in sorted(fields)}
        required = sorted(name for name, f in fields.items() if f.required)
        if required:
            out["required"] = required
        out.update(cls.__object_markers__)
        return _common(out, cls.__rules__, channel)


def _doc_of(ref: TypeRef) -> str:
    if isinstance(ref, type):
        return _clean_doc(ref.__doc__ or "")
    return ref.doc


def _clean_doc(text: str) -> str:
    """A docstring as a description: paragraphs kept, each paragraph's lines joined."""
    paragraphs = [" ".join(line.strip() for line in block.strip().splitlines())
                  for block in re.split(r"\n\s*\n", text.strip())]
    return "\n\n".join(p for p in paragraphs if p)


def schema(ref: TypeRef, channel: str = STANDARD) -> dict[str, Any]:
    """The structural schema of a type in a channel's CRD, with its own description (a field's replaces it)."""
    node = ref.node(channel)
    doc = _doc_of(ref)
    if doc:
        node["description"] = doc
    return node


__all__ = ["EXPERIMENTAL", "STANDARD", "Boolean", "Field", "Int32", "Int64", "IntOrString", "Integer", "ListOf",
           "MapOf", "Number", "Rule", "String", "Struct", "Type", "TypeRef", "Untyped", "json_name", "schema"]
