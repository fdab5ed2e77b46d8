"""OpenAPI v3 documents, built from the schemas shipped by the PyPI package kubernetes-validate.

kubectl needs them twice: ``apply``/``create -f``/``edit`` ask whether the PATCH operation
declares the ``fieldValidation`` parameter (if not, kubectl validates client-side and wants
``/openapi/v2`` as protobuf), and ``explain`` looks schemas up by
``x-kubernetes-group-version-kind``. The schemas also carry the strategic-merge-patch
metadata (``x-kubernetes-patch-merge-key``/``-patch-strategy``) used by ``patch.py``.

Without kubernetes-validate installed the documents still declare the PATCH operations (so
apply works) but carry no schemas (explain then fails as it would against a server without
them).
"""

from __future__ import annotations

import hashlib
import json
from functools import cache, lru_cache
from typing import Any

import yaml

from ..model.jsonvalue import json_copy
from .resources import RESOURCES, group_versions

SCHEMA_VERSION = "v1.35.0"


@lru_cache(maxsize=1)
def definitions() -> dict[str, Any]:
    """All definitions, converted to OpenAPI v3 (``#/components/schemas/...`` refs), the custom kinds' included."""
    from ..model.schema import definitions as v135

    try:
        raw = v135()
    except (RuntimeError, OSError):
        return {}
    defs = {name: _convert(schema) for name, schema in raw.items()}
    if "io.k8s.apimachinery.pkg.util.intstr.IntOrString" in defs:
        defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = {"type": "string", "format": "int-or-string"}
    defs.update(_crd_definitions())
    defs.update(_cni_definitions())
    return defs


def crd_schema_name(group: str, version: str, kind: str) -> str:
    """How kube-apiserver names a custom kind's schema: the group reversed
    (``io.k8s.networking.gateway.v1.HTTPRoute``)."""
    return ".".join([*reversed(group.split(".")), version, kind])


# The client CRDs in force (apiserver.customresources), which replace knetsim's own definitions of their kinds.
_CUSTOM: dict[tuple[str, str, str], Any] = {}


def use_custom(versions: dict[tuple[str, str, str], Any]) -> None:
    """The CRD versions clients applied: the documents are built again with them (``kubectl explain`` then shows
    the client's schema, as a cluster where that CRD was installed does)."""
    _CUSTOM.clear()
    _CUSTOM.update(versions)
    definitions.cache_clear()
    gv_document.cache_clear()


def _crd_definitions() -> dict[str, Any]:
    """The served custom kinds' schemas, with ObjectMeta for metadata, as the CRD's OpenAPI builder publishes them."""
    from ..model.crd import all_versions

    out: dict[str, Any] = {}
    for (group, version, kind), crd in all_versions(_CUSTOM.values()).items():
        if not any(r.crd and (r.group, r.version, r.kind) == (group, version, kind) for r in RESOURCES):
            continue
        out[crd_schema_name(group, version, kind)] = _with_object_meta(_convert(crd.schema), group, version, kind)
    return out


def _cni_definitions() -> dict[str, Any]:
    """The CNIs' kinds' schemas (model.apis.cni), as their CRDs (or calico-apiserver) publish them: ``kubectl
    explain globalnetworkpolicy.spec`` on a Calico cluster. A client's CRD of such a kind takes its place."""
    from ..model.admission import cni_fields

    out: dict[str, Any] = {}
    for r in RESOURCES:
        # Cilium's rows carry no ``cni`` (they are served on every cluster): cni_fields knows the CNIs' groups.
        fields = cni_fields(r.group, r.kind)
        if fields is None or any((g, k) == (r.group, r.kind) for g, _, k in _CUSTOM):
            continue
        out[crd_schema_name(r.group, r.version, r.kind)] = _with_object_meta(_int_or_string(_convert(fields)),
                                                                              r.group, r.version, r.kind)
    return out


def _int_or_string(node: Any) -> Any:
    """Int-or-string fields typed as the built-in IntOrString is (``string``, format ``int-or-string``), which
    ``kubectl explain`` shows as ``<IntOrString>``."""
    if isinstance(node, list):
        return [_int_or_string(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _int_or_string(v) for k, v in node.items()}
    if out.get("x-kubernetes-int-or-string") and "type" not in out:
        out.update({"type": "string", "format": "int-or-string"})
    return out


def _with_object_meta(schema: dict[str, Any], group: str, version: str, kind: str) -> dict[str, Any]:
    props = dict(schema.get("properties") or {})
    props["metadata"] = {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
                         "description": "Standard object's metadata. More info: https://git.k8s.io/community/"
                                        "contributors/devel/sig-architecture/api-conventions.md#metadata"}
    return {**schema, "properties": props,
            "x-kubernetes-group-version-kind": [{"group": group, "version": version, "kind": kind}]}


def _convert(node: Any, in_properties: bool = False) -> Any:
    if isinstance(node, list):
        return [_convert(x) for x in node]
    if not isinstance(node, dict):
        return node
    if not in_properties and "$ref" in node and len(node) > 1:
        # As the real v3 documents do: siblings of a $ref are ignored by OpenAPI 3.0,
        # so the field's own description sits next to an allOf.
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return {"allOf": [_convert({"$ref": node["$ref"]})], **_convert(rest)}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if in_properties:
            # Keys here are property names (JSONSchemaProps has one literally called "$ref").
            if key in ("apiVersion", "kind") and isinstance(value, dict):
                # The package pins apiVersion/kind with an enum; explain would print it.
                value = {k: v for k, v in value.items() if k != "enum"}
            out[key] = _convert(value)
            continue
        if key == "$ref" and isinstance(value, str):
            out[key] = value.replace("#/$defs/", "#/components/schemas/")
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            if len(types) == 1 or types:
                out[key] = types[0]
        elif key == "properties" and isinstance(value, dict):
            out[key] = _convert(value, in_properties=True)
        else:
            out[key] = _convert(value)
    return out


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _closure(defs: dict[str, Any], roots: list[str]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in seen or name not in defs:
            continue
        seen[name] = defs[name]
        text = json.dumps(defs[name])
        for part in text.split('"#/components/schemas/')[1:]:
            stack.append(part.split('"', 1)[0])
    return dict(sorted(seen.items()))


@cache
def gv_document(group: str, version: str) -> tuple[bytes, str]:
    """The v3 document of one group-version, serialised, and its hash."""
    defs = definitions()
    roots = []
    for name, schema in defs.items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            if gvk.get("group") == group and gvk.get("version") == version and any(
                    r.kind == gvk.get("kind") and r.group == group and r.version == version for r in RESOURCES):
                roots.append(name)
    paths: dict[str, Any] = {}
    params = [{"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
              {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
              {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": True}}]
    for r in RESOURCES:
        if (r.group, r.version) != (group, version):
            continue
        gvk = {"group": group, "version": version, "kind": r.kind}
        schema_name = next((n for n in roots if any(g.get("kind") == r.kind for g in
                                                     defs[n].get("x-kubernetes-group-version-kind") or [])), None)
        ref = {"$ref": f"#/components/schemas/{schema_name}"} if schema_name else {"type": "object"}
        content = {"application/json": {"schema": ref}}
        item = r.path("{namespace}", "{name}") if r.namespaced else r.path("", "{name}")
        paths[item] = {
            "get": {"x-kubernetes-action": "get", "x-kubernetes-group-version-kind": gvk,
                    "responses": {"200": {"description": "OK", "content": content}}},
            "put": {"x-kubernetes-action": "put", "x-kubernetes-group-version-kind": gvk, "parameters": params,
                    "requestBody": {"content": content},
                    "responses": {"200": {"description": "OK", "content": content}}},
            "patch": {"x-kubernetes-action": "patch", "x-kubernetes-group-version-kind": gvk, "parameters": params,
                      "responses": {"200": {"description": "OK", "content": content}}},
        }
        coll = r.path("{namespace}") if r.namespaced else r.path()
        paths[coll] = {"post": {"x-kubernetes-action": "post", "x-kubernetes-group-version-kind": gvk,
                                "parameters": params, "requestBody": {"content": content},
                                "responses": {"201": {"description": "Created", "content": content}}}}
    doc = {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": SCHEMA_VERSION},
           "paths": paths, "components": {"schemas": _closure(defs, roots)}}
    data = json.dumps(doc, separators=(",", ":")).encode()
    return data, hashlib.sha512(data).hexdigest()[:32].upper()


def index(cni: str | None = None) -> dict[str, Any]:
    """The group-versions a cluster of this CNI serves (resources.served), each with its document's hash."""
    paths = {}
    for group, version in group_versions(cni):
        _, digest = gv_document(group, version)
        path = _gv_path(group, version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}


def schema_for(kind: str, group: str, version: str) -> dict[str, Any] | None:
    defs = definitions()
    for schema in defs.values():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            if (gvk.get("group"), gvk.get("version"), gvk.get("kind")) == (group, version, kind):
                return schema  # type: ignore[no-any-return]
    return None


# --- OpenAPI v2, as protobuf -----------------------------------------------------------------
# kubectl validates a `kind: List` on the client (QueryParamVerifier answers "unsupported" for
# v1 List without looking), and its client-side validator reads /openapi/v2 as a gnostic
# openapi_v2.Document protobuf only (Accept: application/com.github.proto-openapi.spec.v2@v1.0
# +protobuf). Field numbers are gnostic's openapiv2/OpenAPIv2.proto.

# The client asks with the deprecated "...spec.v2@v1.0+protobuf"; kube-openapi answers with this
# spelling because Go's mime parser (client-go checks every response type) rejects the "@".
OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _len_field(num: int, payload: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _str(num: int, text: str) -> bytes:
    return _len_field(num, text.encode()) if text else b""


def _bool(num: int, flag: bool) -> bytes:
    return _varint(num << 3) + b"\x01" if flag else b""


def _v2_schema(node: Any) -> bytes:
    """One JSON-schema node (kubernetes-validate's form) as an openapi_v2.Schema message."""
    if not isinstance(node, dict):
        return b""
    if "$ref" in node and isinstance(node["$ref"], str):
        # kube-openapi rejects a reference that also carries a type or properties.
        return _str(1, node["$ref"].replace("#/$defs/", "#/definitions/")) + _str(4, node.get("description", ""))
    out = _str(2, str(node.get("format") or "")) + _str(4, str(node.get("description") or ""))
    for name in node.get("required") or []:
        out += _str(19, str(name))
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        out += _len_field(21, _len_field(1, _v2_schema(extra)))
    elif isinstance(extra, bool):
        out += _len_field(21, _varint(2 << 3) + (b"\x01" if extra else b"\x00"))
    types = node.get("type")
    types = [t for t in (types if isinstance(types, list) else [types]) if t and t != "null"]
    if types:
        out += _len_field(22, _str(1, str(types[0])))
    if isinstance(node.get("items"), dict):
        out += _len_field(23, _len_field(1, _v2_schema(node["items"])))
    for sub in node.get("allOf") or []:
        out += _len_field(24, _v2_schema(sub))
    props = node.get("properties")
    if isinstance(props, dict):
        named = b"".join(_len_field(1, _str(1, k) + _len_field(2, _v2_schema(v))) for k, v in sorted(props.items()))
        out += _len_field(25, named)
    for key in sorted(k for k in node if k.startswith("x-kubernetes-")):
        value = yaml.safe_dump(node[key], default_flow_style=False)
        out += _len_field(31, _str(1, key) + _len_field(2, _str(2, value)))
    return out


@cache
def v2_document() -> bytes:
    """The openapi_v2.Document of the served kinds (with every definition they reference)."""
    from ..model.schema import definitions as v135

    try:
        raw: dict[str, Any] = json_copy(v135())  # a copy: the entries below are rewritten
    except (RuntimeError, OSError):
        raw = {}
    for name in ("io.k8s.apimachinery.pkg.util.intstr.IntOrString", "io.k8s.apimachinery.pkg.api.resource.Quantity"):
        if name in raw:
            raw[name] = {"type": "string", "format": "int-or-string" if "IntOrString" in name else "",
                         "description": raw[name].get("description", "")}
    served = {(r.group, r.version, r.kind) for r in RESOURCES}
    roots = [n for n, s in raw.items() if any((g.get("group"), g.get("version"), g.get("kind")) in served
                                               for g in s.get("x-kubernetes-group-version-kind") or [])]
    seen: dict[str, Any] = {}
    stack = list(roots)
    while stack:
        name = stack.pop()
        if name in seen or name not in raw:
            continue
        seen[name] = raw[name]
        for part in json.dumps(raw[name]).split('"#/$defs/')[1:]:
            stack.append(part.split('"', 1)[0])
    definitions = b"".join(_len_field(1, _str(1, n) + _len_field(2, _v2_schema(seen[n]))) for n in sorted(seen))
    info = _str(1, "Kubernetes") + _str(2, SCHEMA_VERSION)
    return _str(1, "2.0") + _len_field(2, info) + _len_field(9, definitions)
