"""Custom resources as apiextensions-apiserver admits them: prune, default, validate, CEL.

A CustomResourceDefinition carries a *structural* OpenAPI v3 schema per version. Admission of a
custom object then runs, as ``customresource/strategy.go`` and ``schema/*`` do upstream:

1. **prune** — fields the schema does not describe are dropped (``x-kubernetes-preserve-unknown-fields``
   keeps them) and reported as strict errors (``unknown field "spec.foo"``); ``null`` where the
   schema does not allow it is dropped too, so a default can take its place;
2. **default** — ``default:`` values fill absent properties, top down;
3. **validate** — the OpenAPI keywords (type, enum, required, bounds, lengths, pattern, formats,
   oneOf/anyOf/not), the list-type invariants (``set``/``map`` without duplicates), and then, when
   nothing blocking was found, every ``x-kubernetes-validations`` CEL rule. Errors read as
   kube-openapi and apiextensions word them: ``spec.port: Invalid value: 70000: spec.port in body
   should be less than or equal to 65535``.

The CRDs of the kinds knetsim defines (Gateway API, network-policy-api) are built from its own
definitions (``model.apis``) on first use; a CRD in the user's input (or applied live) takes over
its kind, as installing a CRD does on a cluster.
"""

from __future__ import annotations

import copy
import ipaddress
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from . import shapes
from .fielderr import ErrorType, FieldError, GoValue
from .fielderr import Path as FieldPath

_FORMAT_CHECKS = {
    "ipv4": lambda v: _is_ip(v, 4),
    "ipv6": lambda v: _is_ip(v, 6),
    "date-time": lambda v: re.match(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$", v),
    "cidr": lambda v: _is_cidr(v),
    "uuid": lambda v: re.match(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$", v),
}
_TYPE_NAMES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


def _is_ip(value: str, version: int) -> bool:
    try:
        return ipaddress.ip_address(value).version == version
    except ValueError:
        return False


def _is_cidr(value: str) -> bool:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return "/" in value


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    type: str
    json_path: str
    priority: int = 0
    description: str = ""
    format: str = ""


@dataclass(frozen=True)
class CRDVersion:
    """One served version of one custom kind."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...]
    categories: tuple[str, ...]
    schema: dict[str, Any] = field(repr=False, hash=False, compare=False)
    printer_columns: tuple[PrinterColumn, ...] = ()
    status_subresource: bool = False
    storage: bool = False
    source: str = ""  # where the CRD came from: knetsim's built-in definition, or the input file, with its bundle

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


def versions_of(crd: dict[str, Any], source: str = "") -> list[CRDVersion]:
    """The served versions of a CustomResourceDefinition object (already decoded as one)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    out = []
    for v in spec.get("versions") or []:
        if not v.get("served", True):
            continue
        columns = tuple(PrinterColumn(c.get("name", ""), c.get("type", "string"), c.get("jsonPath", ""),
                                      int(c.get("priority", 0) or 0), c.get("description", ""), c.get("format", ""))
                        for c in v.get("additionalPrinterColumns") or [])
        out.append(CRDVersion(
            group=spec.get("group", ""), version=v.get("name", ""), kind=names.get("kind", ""),
            plural=names.get("plural", ""), singular=names.get("singular") or names.get("kind", "").lower(),
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            short_names=tuple(names.get("shortNames") or ()), categories=tuple(names.get("categories") or ()),
            schema=(v.get("schema") or {}).get("openAPIV3Schema") or {"type": "object",
                                                                       "x-kubernetes-preserve-unknown-fields": True},
            printer_columns=columns, status_subresource="status" in (v.get("subresources") or {}),
            storage=bool(v.get("storage")), source=source))
    return out


def source_of(crd: dict[str, Any], where: str) -> str:
    """How a CRD names itself in messages: which object, where it came from, and the bundle version it carries.

    Gateway API and network-policy-api CRDs carry ``<group>/bundle-version`` and ``<group>/channel``
    annotations; ``knetsim validate`` and the live server say which one is in force.
    """
    spec = crd.get("spec") if isinstance(crd.get("spec"), dict) else {}
    group = str((spec or {}).get("group") or "")
    meta = crd.get("metadata") if isinstance(crd.get("metadata"), dict) else {}
    annotations = (meta or {}).get("annotations") if isinstance((meta or {}).get("annotations"), dict) else {}
    bundle = str((annotations or {}).get(f"{group}/bundle-version") or "")
    channel = str((annotations or {}).get(f"{group}/channel") or "")
    detail = ", ".join(x for x in (f"bundle-version {bundle}" if bundle else "", f"channel {channel}" if channel
                                   else "") if x)
    if where != BUILTIN_SOURCE:
        where = f"CustomResourceDefinition {(meta or {}).get('name') or '?'} from {where}"
    return f"{where} ({detail})" if detail else where


BUILTIN_SOURCE = "knetsim's built-in definition"


@cache
def builtin_crd(group: str, kind: str, channel: str = "standard") -> dict[str, Any] | None:
    """The built-in CustomResourceDefinition object of a kind knetsim defines (model.apis), built on first use.

    The standard channel's is the one in force; the experimental channel's (network-policy-api's ``nodes``
    and ``domainNames`` peers) is there to be applied, as a cluster that runs it has it installed.
    """
    from .apis import catalog

    definition = catalog.BY_KIND.get((group, kind))
    if definition is None:
        return None
    from .apis.generate import custom_resource_definition

    return custom_resource_definition(definition, channel)


def builtin_crds() -> list[dict[str, Any]]:
    """Every built-in CRD, by name (what ``kubectl get crd`` lists on a fresh ``knetsim up``)."""
    from .apis import catalog

    return [c for d in sorted(catalog.DEFINITIONS, key=lambda d: d.name)
            if (c := builtin_crd(d.group, d.kind)) is not None]


@cache
def builtin_versions(group: str, kind: str) -> dict[str, CRDVersion]:
    """The served versions of a built-in kind, by version name."""
    crd = builtin_crd(group, kind)
    if crd is None:
        return {}
    return {v.version: v for v in versions_of(crd, source_of(crd, BUILTIN_SOURCE))}


def builtin(group: str, version: str, kind: str) -> CRDVersion | None:
    """One served version of a built-in custom kind; None when knetsim does not define it."""
    return builtin_versions(group, kind).get(version)


def in_force(installed: Iterable[dict[str, Any]], where: str = "the cluster") -> dict[str, list[str]]:
    """Which definition admits each custom kind knetsim defines, given the CRDs a cluster has: knetsim's built-in
    one when the cluster's CRD is it (or absent), else that CRD (with its bundle version) → the kinds, sorted."""
    from .apis import catalog

    by_kind = {}
    for body in installed:
        spec = body.get("spec") if isinstance(body, dict) and isinstance(body.get("spec"), dict) else {}
        names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
        by_kind[(spec.get("group"), names.get("kind"))] = body
    out: dict[str, set[str]] = {}
    for d in catalog.DEFINITIONS:
        body = by_kind.get((d.group, d.kind))
        builtin = builtin_crd(d.group, d.kind) or {}
        if body is None or body.get("spec") == builtin.get("spec"):
            source = source_of(builtin, BUILTIN_SOURCE)
        else:
            source = source_of(body, where)
        out.setdefault(source, set()).add(d.kind)
    return {source: sorted(kinds) for source, kinds in sorted(out.items())}


def builtin_groups() -> frozenset[str]:
    """The API groups knetsim defines custom kinds in (no schema is built to answer)."""
    from .apis import catalog

    return catalog.GROUPS


# --- admission of one custom object (prune → default → validate) ---------------------------


def prune(body: dict[str, Any], crd: CRDVersion) -> tuple[dict[str, Any], list[str]]:
    """``body`` without what the schema does not describe; the dropped paths as strict errors.

    apiVersion, kind and metadata are kept as they are (metadata is ObjectMeta, the caller's).
    """
    return prune_to_schema(body, crd.schema)


def prune_to_schema(body: Mapping[str, Any], object_schema: dict[str, Any],
                    shared: dict[tuple[Any, ...], Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """``prune`` by a whole object's schema (a CRD version's, or the fields model.apis.cni declares for a CNI's
    kind). ``shared`` (shapes.shared_values, for a kind nothing defaults after pruning): a list item pruned
    without a dropped field is shared with the scope's later objects that write the same item (``_prune_items``)."""
    strict: list[str] = []
    obj = {k: v for k, v in body.items() if k in ("apiVersion", "kind", "metadata")}
    properties = object_schema.get("properties") or {}
    for key, value in body.items():
        if key in ("apiVersion", "kind", "metadata"):
            continue
        sub = properties.get(key)
        if sub is None and not object_schema.get("x-kubernetes-preserve-unknown-fields"):
            strict.append(f'unknown field "{key}"')
            continue
        if value is None and sub is not None and not sub.get("nullable"):
            continue
        obj[key] = _prune(value, sub or {"x-kubernetes-preserve-unknown-fields": True}, key, strict,
                          None if shared is None else (shared, set()))
    return obj, strict


def default(obj: dict[str, Any], crd: CRDVersion) -> dict[str, Any]:
    """Schema defaults, in place (structural defaulting: top down, absent or non-nullable null only)."""
    _default(obj, _body_schema(crd))
    return obj


def validate_custom(obj: dict[str, Any], crd: CRDVersion, old: dict[str, Any] | None = None) -> list[FieldError]:
    return validate(obj, _body_schema(crd), old)


def _body_schema(crd: CRDVersion) -> dict[str, Any]:
    properties = crd.schema.get("properties") or {}
    return {**crd.schema, "properties": {k: v for k, v in properties.items() if k != "metadata"}}


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# What one object's pruning shares: the scope's pruned items by key, and the ids of those this object holds already.
_Sharing = tuple[dict[tuple[Any, ...], Any], set[int]]


def _prune(value: Any, schema: dict[str, Any], path: str, strict: list[str], shared: _Sharing | None = None) -> Any:
    """A pruned copy: dicts and lists the schema describes are rebuilt, what it keeps whole is deep-copied
    (never the caller's objects: defaulting writes into the result)."""
    if schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get("properties") and \
            not schema.get("additionalProperties") and not schema.get("items"):
        return copy.deepcopy(value)
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        out = {}
        for key, v in value.items():
            sub = props.get(key) if props else None
            if sub is None and isinstance(extra, dict):
                sub = extra
            if sub is None:
                if schema.get("x-kubernetes-preserve-unknown-fields") or extra is True:
                    out[key] = copy.deepcopy(v)
                else:
                    strict.append(f'unknown field "{_join(path, key)}"')
                continue
            if v is None and not sub.get("nullable"):
                continue  # pruned before defaulting, so a default can apply
            out[key] = _prune(v, sub, _join(path, key), strict, shared)
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        if shared is not None:
            return _prune_items(value, schema["items"], path, strict, shared)
        return [_prune(v, schema["items"], f"{path}[{i}]", strict) for i, v in enumerate(value)]
    return copy.deepcopy(value) if isinstance(value, dict | list) else value


def _prune_items(value: list[Any], items: dict[str, Any], path: str, strict: list[str], shared: _Sharing,
                 ) -> list[Any]:
    """A list's items pruned, an object item written as one an earlier object of the scope held (and pruned without
    a dropped field) being that object's pruned item: bench/calico.py's 1,000 Calico policies hold 5,000 rules of
    a few contents, each rule's walk ~10 us against a key of ~1.5. An item with a dropped field is pruned again
    where it sits, for its path. What lies within a shared item is its own (not shared again), and one object never
    holds one shared item twice: a YAML dumper would write an anchor and its alias."""
    values, held = shared
    out: list[Any] = []
    for i, v in enumerate(value):
        if type(v) is not dict:
            out.append(_prune(v, items, f"{path}[{i}]", strict))
            continue
        key = shapes.content_key(_SchemaIdentity("pruned", items), v)
        pruned = values.get(key)
        if pruned is None or id(pruned) in held:
            before = len(strict)
            pruned = _prune(v, items, f"{path}[{i}]", strict)
            if len(strict) == before:
                shapes.share_value(values, key, pruned)
        held.add(id(pruned))
        out.append(pruned)
    return out


def _default(value: Any, schema: dict[str, Any]) -> None:
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key, sub in props.items():
            if "default" in sub and (key not in value or (value[key] is None and not sub.get("nullable"))):
                value[key] = copy.deepcopy(sub["default"])
        extra = schema.get("additionalProperties")
        for key, v in value.items():
            sub = props.get(key) or (extra if isinstance(extra, dict) else None)
            if sub is not None:
                _default(v, sub)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for v in value:
            _default(v, schema["items"])


# --- validation ---------------------------------------------------------------------------


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return _TYPE_NAMES.get(type(value), "object" if isinstance(value, dict) else "string")


def _type_ok(value: Any, wanted: str) -> bool:
    if wanted == "object":
        return isinstance(value, dict)
    if wanted == "array":
        return isinstance(value, list)
    if wanted == "string":
        return isinstance(value, str)
    if wanted == "boolean":
        return isinstance(value, bool)
    if wanted == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    if wanted == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


def _in_body(path: str) -> str:
    return f"{path or 'body'} in body" if path else "body"


def _number(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _first_repeats(identities: list[str]) -> list[int]:
    """The indexes where an identity is seen for the second time."""
    seen: dict[str, int] = {}
    out = []
    for i, identity in enumerate(identities):
        seen[identity] = seen.get(identity, 0) + 1
        if seen[identity] == 2:
            out.append(i)
    return out


def _go(value: Any) -> GoValue:
    """An unstructured value as Go's %#v prints it (``map[string]interface {}{"name":"http"}``): the form of a
    duplicate list item or key in the API server's message."""
    def render(v: Any) -> str:
        if isinstance(v, dict):
            return "map[string]interface {}{" + ", ".join(f"{json.dumps(k)}:{render(v[k])}" for k in sorted(v)) + "}"
        if isinstance(v, list):
            return "[]interface {}{" + ", ".join(render(x) for x in v) + "}"
        if v is None:
            return "interface {}(nil)"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return _number(v)
        return json.dumps(v, ensure_ascii=False)
    return GoValue(render(value))


class _Validator:
    def __init__(self) -> None:
        self.errors: list[FieldError] = []
        self.list_errors: list[FieldError] = []  # reported after every keyword error, as upstream orders them

    def add(self, error: FieldError) -> None:
        self.errors.append(error)

    def node(self, value: Any, schema: dict[str, Any], path: str) -> None:
        p = FieldPath(path)
        # kube-openapi's type validator reports InvalidType(path, "body", wanted, actualJSONType) and
        # apiextensions turns it into field.TypeInvalid(path, actualJSONType, message): the value printed is
        # the JSON type name of what was sent, not the value itself. An int-or-string field's schema type is
        # ["integer", "string"], joined with a comma. (apiextensions-apiserver validation.go, kube-openapi
        # validate/type.go; cases in apiextensions' validation_test.go.)
        wanted = "integer,string" if schema.get("x-kubernetes-int-or-string") else schema.get("type")
        if value is None:
            if not schema.get("nullable") and wanted:
                self.add(p.type_invalid("null", f"{_in_body(path)} must be of type {wanted}: \"null\""))
            return
        mistyped = bool(wanted) and not any(_type_ok(value, w) for w in wanted.split(","))
        if mistyped:
            actual = _type_name(value)
            self.add(p.type_invalid(actual, f"{_in_body(path)} must be of type {wanted}: \"{actual}\""))
        # kube-openapi runs every validator of the node, the enum's after the type's, whatever the type said.
        if "enum" in schema and value not in schema["enum"]:
            self.add(p.not_supported(value, [v if isinstance(v, str) else json.dumps(v) for v in schema["enum"]]))
        if mistyped:
            return
        if isinstance(value, str):
            self.string(value, schema, path, p)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            self.number(value, schema, path, p)
        elif isinstance(value, list):
            self.array(value, schema, path, p)
        elif isinstance(value, dict):
            self.object(value, schema, path, p)
        self.combinators(value, schema, path, p)

    def string(self, value: str, schema: dict[str, Any], path: str, p: FieldPath) -> None:
        length = len(value)  # kube-openapi counts runes, as Python counts code points
        if "maxLength" in schema and length > schema["maxLength"]:
            self.add(p.too_long(int(schema["maxLength"])))
        if "minLength" in schema and length < schema["minLength"]:
            self.add(p.invalid(value, f"{_in_body(path)} should be at least {schema['minLength']} chars long"))
        if "pattern" in schema and not _pattern_found(schema["pattern"], value):
            self.add(p.invalid(value, f"{_in_body(path)} should match '{schema['pattern']}'"))
        check = _FORMAT_CHECKS.get(schema.get("format", ""))
        if check is not None and not check(value):
            self.add(p.invalid(value, f"{_in_body(path)} must be of type {schema['format']}: \"{value}\""))

    def number(self, value: float, schema: dict[str, Any], path: str, p: FieldPath) -> None:
        if "maximum" in schema:
            limit = schema["maximum"]
            if value > limit or (schema.get("exclusiveMaximum") and value >= limit):
                word = "less than" if schema.get("exclusiveMaximum") else "less than or equal to"
                self.add(p.invalid(value, f"{_in_body(path)} should be {word} {_number(limit)}"))
        if "minimum" in schema:
            limit = schema["minimum"]
            if value < limit or (schema.get("exclusiveMinimum") and value <= limit):
                word = "greater than" if schema.get("exclusiveMinimum") else "greater than or equal to"
                self.add(p.invalid(value, f"{_in_body(path)} should be {word} {_number(limit)}"))
        if schema.get("multipleOf") and (value / schema["multipleOf"]) % 1:
            self.add(p.invalid(value, f"{_in_body(path)} should be a multiple of {_number(schema['multipleOf'])}"))

    def array(self, value: list[Any], schema: dict[str, Any], path: str, p: FieldPath) -> None:
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            self.add(p.too_many(len(value), int(schema["maxItems"])))
        if "minItems" in schema and len(value) < schema["minItems"]:
            self.add(p.invalid(len(value), f"{_in_body(path)} should have at least {schema['minItems']} items"))
        items = schema.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(value):
                # An object item equal to one found valid by the same items schema is valid (model/shapes.py):
                # 1,000 Calico policies of bench/calico.py hold 5,000 rules of ~200 shapes, and checking a rule
                # (~25 us) costs ten times its key. Only "valid" is reused: an invalid item is checked every time.
                key = shapes.content_key(_SchemaIdentity("items", items), v) if type(v) is dict else None
                if key is not None and shapes.known_valid(key):
                    continue
                found = len(self.errors), len(self.list_errors)
                self.node(v, items, f"{path}[{i}]")
                if key is not None and found == (len(self.errors), len(self.list_errors)):
                    shapes.remember_valid(key)
        self.list_type(value, schema, p)

    def list_type(self, value: list[Any], schema: dict[str, Any], p: FieldPath) -> None:
        """The list-type invariants, as apiextensions' listtype package checks them after the OpenAPI keywords: one
        error per repeated item or key, at its first repetition (a third copy adds nothing)."""
        kind = schema.get("x-kubernetes-list-type")
        if kind == "set":
            for i in _first_repeats([json.dumps(v, sort_keys=True) for v in value]):
                shown = _go(value[i]) if isinstance(value[i], dict | list) else value[i]
                self.list_errors.append(p.index(i).duplicate(shown))
        elif kind == "map":
            keys = schema.get("x-kubernetes-list-map-keys") or []
            item_props = (schema.get("items") or {}).get("properties") or {}
            identities = []
            for v in value:
                # An absent key with a default counts as that default: the defaulter has run before this check.
                identity = {} if not isinstance(v, dict) else {
                    k: v[k] if k in v else (item_props.get(k) or {}).get("default") for k in keys
                    if k in v or "default" in (item_props.get(k) or {})}
                identities.append(identity)
            for i in _first_repeats([json.dumps(x, sort_keys=True) for x in identities]):
                self.list_errors.append(p.index(i).duplicate(_go(identities[i])))

    def object(self, value: dict[str, Any], schema: dict[str, Any], path: str, p: FieldPath) -> None:
        for name in schema.get("required") or []:
            if name not in value:
                self.add(FieldPath(_join(path, name)).required())
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            self.add(p.too_many(len(value), int(schema["maxProperties"])))
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            self.add(p.invalid(len(value), f"{_in_body(path)} should have at least {schema['minProperties']} "
                                            "properties"))
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, v in value.items():
            sub = props.get(key) or (extra if isinstance(extra, dict) else None)
            if sub is not None:
                self.node(v, sub, _join(path, key) if key in props or not path else f"{path}[{key}]")

    def combinators(self, value: Any, schema: dict[str, Any], path: str, p: FieldPath) -> None:
        """oneOf/anyOf/allOf/not: value validations only, in structural schemas."""
        name = path or "body"
        if schema.get("anyOf") and not any(_valid(value, s, path) for s in schema["anyOf"]):
            self.add(p.invalid(value if not isinstance(value, dict | list) else "",
                               f'"{name}" must validate at least one schema (anyOf)'))
        if schema.get("oneOf"):
            matched = sum(1 for s in schema["oneOf"] if _valid(value, s, path))
            if matched != 1:
                found = "Found none valid" if matched == 0 else f"Found {matched} valid alternatives"
                self.add(p.invalid(value if not isinstance(value, dict | list) else "",
                                   f'"{name}" must validate one and only one schema (oneOf). {found}'))
        for s in schema.get("allOf") or []:
            self.node_value_only(value, s, path)
        if isinstance(schema.get("not"), dict) and _valid(value, schema["not"], path):
            self.add(p.invalid(value if not isinstance(value, dict | list) else "",
                               f'"{name}" must not validate the schema (not)'))

    def node_value_only(self, value: Any, schema: dict[str, Any], path: str) -> None:
        sub = _Validator()
        sub.node(value, schema, path)
        self.errors.extend(sub.errors)
        self.list_errors.extend(sub.list_errors)


class _SchemaIdentity:
    """A schema node in a key, by identity (a schema is a dict, which does not hash). The key holds the node, so
    its id cannot be another node's while the key is remembered."""

    __slots__ = ("role", "schema")

    def __init__(self, role: str, schema: dict[str, Any]) -> None:
        self.role, self.schema = role, schema

    def __hash__(self) -> int:
        return hash((self.role, id(self.schema)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _SchemaIdentity) and other.schema is self.schema and other.role == self.role


def _valid(value: Any, schema: dict[str, Any], path: str) -> bool:
    v = _Validator()
    v.node(value, schema, path)
    return not v.errors


def _pattern_found(pattern: str, value: str) -> bool:
    """The OpenAPI ``pattern`` (Go's RE2, linear-time, upstream): time-bounded here, and a pattern that runs
    away counts as not found rather than stalling admission."""
    from . import saferegex  # the regex package loads for the first pattern a schema checks

    rx = saferegex.compiled(pattern) or saferegex.compiled(re.escape(pattern))
    try:
        return rx is not None and saferegex.search(rx, value) is not None
    except saferegex.RegexTimeout:
        return False


_BLOCKING = {ErrorType.NOT_SUPPORTED, ErrorType.REQUIRED, ErrorType.TOO_LONG, ErrorType.TOO_MANY,
             ErrorType.TYPE_INVALID}


def validate(obj: dict[str, Any], schema: dict[str, Any], old: dict[str, Any] | None = None) -> list[FieldError]:
    """Schema errors, then (when none blocks) CEL errors, as customResourceStrategy.Validate orders them."""
    v = _Validator()
    props = schema.get("properties") or {}
    for key, value in obj.items():
        if key in ("apiVersion", "kind", "metadata"):
            continue
        if key in props:
            v.node(value, props[key], key)
    for name in schema.get("required") or []:
        if name not in obj and name not in ("apiVersion", "kind", "metadata"):
            v.add(FieldPath(name).required())
    errors = [*v.errors, *v.list_errors]
    if any(e.type in _BLOCKING for e in errors):
        errors.append(FieldError("<nil>", ErrorType.INVALID, None, "some validation rules were not checked because "
                                 "the object was invalid; correct the existing errors to complete validation"))
        return errors
    extra = schema.get("additionalProperties")
    if schema.get("x-kubernetes-validations") or (isinstance(extra, dict) and _has_rules(extra)) or any(
            _has_rules(sub) for key, sub in props.items() if key not in ("apiVersion", "kind", "metadata")):
        errors.extend(_rules(obj, schema, "", old, old is not None, root=True))
    return errors


# Whether a schema node holds a CEL rule at any depth _rules walks, by node. A CNI's kind's fields (model.apis.cni)
# have none, and walking 1,000 Calico policies for no rule was a fifth of their validation. Bounded: the live
# daemon validates by CRDs that come and go (a node no longer remembered is walked again, no harm).
_RULES_BENEATH: dict[_SchemaIdentity, bool] = {}
_RULES_BENEATH_MAX = 4096


def _has_rules(schema: dict[str, Any]) -> bool:
    key = _SchemaIdentity("rules", schema)
    found = _RULES_BENEATH.get(key)
    if found is None:
        found = _rules_beneath(schema, set())
        if len(_RULES_BENEATH) < _RULES_BENEATH_MAX:
            _RULES_BENEATH[key] = found
    return found


def _rules_beneath(schema: Any, seen: set[int]) -> bool:
    if not isinstance(schema, dict) or id(schema) in seen:
        return False
    if schema.get("x-kubernetes-validations"):
        return True
    seen.add(id(schema))
    extra = schema.get("additionalProperties")
    return any(_rules_beneath(sub, seen) for sub in (schema.get("properties") or {}).values()) or \
        _rules_beneath(extra, seen) or _rules_beneath(schema.get("items"), seen)


def _rules(value: Any, schema: dict[str, Any], path: str, old: Any, has_old: bool,
           root: bool = False) -> list[FieldError]:
    """Every x-kubernetes-validations rule, a node's own before its children's (the CEL validator's walk)."""
    out: list[FieldError] = []
    if value is None:
        return out
    for rule in schema.get("x-kubernetes-validations") or []:
        error = _run_rule(rule, value, schema, path, old, has_old)
        if error is not None:
            out.append(error)
            if "cost budget" in error.detail:
                return out
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, v in value.items():
            if root and key in ("apiVersion", "kind", "metadata"):
                continue
            sub = props.get(key) or (extra if isinstance(extra, dict) else None)
            if sub is None:
                continue
            child = _join(path, key) if key in props or not path else f"{path}[{key}]"
            old_v = old.get(key) if isinstance(old, dict) else None
            out.extend(_rules(v, sub, child, old_v, has_old and isinstance(old, dict) and key in old))
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(value):
            # Upstream correlates old list items by key only for list-type map; transition rules on
            # items of other lists see no oldSelf, and knetsim does the same for every list.
            out.extend(_rules(v, schema["items"], f"{path}[{i}]", None, False))
    return out


def _run_rule(rule: dict[str, Any], value: Any, schema: dict[str, Any], path: str, old: Any,
              has_old: bool) -> FieldError | None:
    """One rule's verdict as apiextensions' CEL validator reports it: the bad value is the schema's type
    (``spec.rules[0].matches[0].path: Invalid value: "object": ...``), the root is ``<nil>``."""
    from . import cel  # cel-python loads its grammar on import: only objects with rules pay for it

    text = str(rule.get("rule") or "")
    if cel.uses_old_self(text) and not has_old and not rule.get("optionalOldSelf"):
        return None  # a transition rule: only checked on update, when there is an old value
    field_path = str(rule.get("fieldPath") or "").lstrip(".")
    target = FieldPath(_join(path, field_path) if field_path else path or "<nil>")
    type_name = str(schema.get("type") or "")
    try:
        ok = cel.evaluate(text, value, old, has_old=has_old)
    except cel.CelError as exc:
        # The API server names the rule by its message when it has one (ruleErrorString).
        named = str(rule.get("message") or "").strip() or text.strip()
        return target.invalid(type_name, f"{exc.detail} evaluating rule: {named}" if exc.evaluating else str(exc))
    if ok:
        return None
    detail = None
    if rule.get("messageExpression"):
        detail = cel.message(str(rule["messageExpression"]), value)
    if detail is None:
        message = str(rule.get("message") or "").strip()
        detail = message or f"failed rule: {text.strip()}"
    reason = rule.get("reason") or "FieldValueInvalid"
    if reason == "FieldValueForbidden":
        return target.forbidden(detail)
    if reason == "FieldValueRequired":
        return target.required(detail)
    if reason == "FieldValueDuplicate":
        return target.duplicate(type_name)
    return target.invalid(type_name, detail)


def all_versions(extra: Iterable[CRDVersion] = ()) -> dict[tuple[str, str, str], CRDVersion]:
    """Every served custom kind version: the built-in ones, replaced kind by kind by ``extra`` (a user's CRD
    takes over all versions of its kind, as applying a CRD replaces the whole object on a cluster)."""
    from .apis import catalog

    taken = {(v.group, v.kind) for v in extra}
    out: dict[tuple[str, str, str], CRDVersion] = {}
    for d in catalog.DEFINITIONS:
        if (d.group, d.kind) not in taken:
            out.update(((d.group, v, d.kind), crd) for v, crd in builtin_versions(d.group, d.kind).items())
    for v in extra:
        out[(v.group, v.version, v.kind)] = v
    return dict(sorted(out.items()))
