"""knetsim's API definitions (model/apis) against the upstream CRDs, field by field.

Given the CRDs of Gateway API v1.6.1 and network-policy-api v0.2.0 / v0.1.8 (../shared/upstream, test
data only), then the CRDs knetsim generates from its own types are the same in everything but
descriptions: names, scope, categories, short names, annotations, versions (served, storage,
deprecation, subresources, printer columns) and, version by version, every schema node's type,
format, enum, pattern, bounds, default, required list, list type and map keys, map type, nullable,
preserve-unknown, int-or-string, embedded resource, combinators and validation rules. The rules are
also compared by behaviour, in test_apis_rules.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from knetsim.model.apis import catalog
from knetsim.model.apis.generate import custom_resource_definition

from .. import upstream

# Keywords a structural schema may carry; a node with any other keyword fails the walk (so that a keyword
# knetsim does not generate cannot go unnoticed).
KEYWORDS = {
    "type", "format", "enum", "pattern", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
    "default", "required", "nullable", "properties", "items", "additionalProperties", "oneOf", "anyOf", "allOf",
    "not", "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string", "x-kubernetes-embedded-resource",
    "x-kubernetes-validations", "description", "title", "example", "externalDocs",
}
IGNORED = {"description", "title", "example", "externalDocs"}


def upstream_crds(channel: str = "standard") -> dict[str, dict[str, Any]]:
    return upstream.upstream_crds(*(upstream.STANDARD if channel == "standard" else upstream.EXPERIMENTAL))


def schema_differences(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Every difference between two schema nodes but descriptions, as ``path: what`` lines."""
    if not (isinstance(ours, dict) and isinstance(theirs, dict)):
        return [] if ours == theirs else [f"{path or '.'}: ours {json.dumps(ours)[:300]} != {json.dumps(theirs)[:300]}"]
    out = []
    for key in sorted(set(ours) | set(theirs)):
        where = f"{path}/{key}"
        if key not in KEYWORDS:
            out.append(f"{where}: a keyword this comparison does not know")
        elif key in IGNORED:
            continue
        elif key not in ours or key not in theirs:
            side = "upstream only" if key not in ours else "ours only"
            out.append(f"{where}: {side}: {json.dumps(ours.get(key, theirs.get(key)))[:300]}")
        elif key == "properties":
            for name in sorted(set(ours[key]) | set(theirs[key])):
                if name not in ours[key] or name not in theirs[key]:
                    out.append(f"{where}/{name}: {'upstream' if name not in ours[key] else 'ours'} only")
                else:
                    child = f"{path}.{name}" if path else name
                    out.extend(schema_differences(ours[key][name], theirs[key][name], child))
        elif key in ("items", "additionalProperties", "not") and isinstance(ours[key], dict):
            child = f"{path}[]" if key == "items" else f"{path}{{{key}}}"
            out.extend(schema_differences(ours[key], theirs[key], child))
        elif key in ("oneOf", "anyOf", "allOf"):
            if len(ours[key]) != len(theirs[key]):
                out.append(f"{where}: {len(ours[key])} alternatives, upstream {len(theirs[key])}")
            else:
                for i, (a, b) in enumerate(zip(ours[key], theirs[key], strict=True)):
                    out.extend(schema_differences(a, b, f"{path}/{key}[{i}]"))
        elif ours[key] != theirs[key]:
            out.append(f"{where}: ours {json.dumps(ours[key])[:300]} != upstream {json.dumps(theirs[key])[:300]}")
    return out


def _without_schemas(crd: dict[str, Any]) -> dict[str, Any]:
    spec = dict(crd["spec"])
    spec["versions"] = [{k: v for k, v in version.items() if k != "schema"} for version in spec["versions"]]
    return {"apiVersion": crd["apiVersion"], "kind": crd["kind"],
            "metadata": {k: v for k, v in crd["metadata"].items() if k in ("name", "annotations", "labels")},
            "spec": spec}


DEFINITIONS = [pytest.param(d, id=d.name) for d in catalog.DEFINITIONS]


@pytest.mark.parametrize("definition", DEFINITIONS)
def test_the_crd_is_upstreams_in_names_scope_annotations_and_versions(definition: catalog.Definition) -> None:
    theirs = upstream_crds()[definition.name]
    assert _without_schemas(custom_resource_definition(definition)) == _without_schemas(theirs)


@pytest.mark.parametrize("definition", DEFINITIONS)
def test_every_version_schema_is_upstreams_but_for_descriptions(definition: catalog.Definition) -> None:
    theirs = {v["name"]: v["schema"]["openAPIV3Schema"] for v in upstream_crds()[definition.name]["spec"]["versions"]}
    ours = {v["name"]: v["schema"]["openAPIV3Schema"]
            for v in custom_resource_definition(definition)["spec"]["versions"]}
    assert sorted(ours) == sorted(theirs)
    for version, schema in ours.items():
        assert schema_differences(schema, theirs[version]) == [], f"{definition.name} {version}"


def test_the_experimental_channel_is_upstreams_too() -> None:
    """Given network-policy-api's experimental ClusterNetworkPolicy CRD, then knetsim's experimental-channel
    definition (nodes and domainNames peers, the named-port rule) is the same."""
    theirs = upstream_crds("experimental")["clusternetworkpolicies.policy.networking.k8s.io"]
    ours = custom_resource_definition(catalog.BY_KIND[(catalog.POLICY_GROUP, "ClusterNetworkPolicy")], "experimental")
    assert _without_schemas(ours) == _without_schemas(theirs)
    for mine, their in zip(ours["spec"]["versions"], theirs["spec"]["versions"], strict=True):
        assert schema_differences(mine["schema"]["openAPIV3Schema"], their["schema"]["openAPIV3Schema"]) == []


def test_every_upstream_crd_of_the_two_groups_is_defined() -> None:
    """Given the standard channel's CRDs, then knetsim defines every one of them (and no other)."""
    assert sorted(upstream_crds()) == sorted(d.name for d in catalog.DEFINITIONS)


def test_the_walk_sees_a_difference_where_there_is_one() -> None:
    """The comparison itself: a changed bound, a missing property, a changed rule are each reported; a changed
    description, or a property named description, is not mistaken for one."""
    base = {"type": "object", "properties": {"description": {"type": "string", "maxLength": 64, "description": "x"},
                                             "port": {"type": "integer", "maximum": 65535}},
            "x-kubernetes-validations": [{"rule": "self.port > 0", "message": "m"}]}
    same = json.loads(json.dumps(base))
    same["properties"]["description"]["description"] = "another text"
    assert schema_differences(same, base) == []
    bound = json.loads(json.dumps(base))
    bound["properties"]["port"]["maximum"] = 65534
    assert schema_differences(bound, base) == ["port/maximum: ours 65534 != upstream 65535"]
    missing = json.loads(json.dumps(base))
    del missing["properties"]["description"]
    assert schema_differences(missing, base) == ["/properties/description: upstream only"]
    rule = json.loads(json.dumps(base))
    rule["x-kubernetes-validations"][0]["message"] = "n"
    assert len(schema_differences(rule, base)) == 1
