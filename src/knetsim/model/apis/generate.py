"""The generator: knetsim's API definitions as apiextensions.k8s.io/v1 CustomResourceDefinition objects.

One CRD per ``catalog.Definition``: names and versions from the catalog, each version's
``openAPIV3Schema`` from the kind's class in that version's module (``markers.schema``). The result
is what ``kubectl get crd NAME -o yaml`` shows on ``knetsim up``, and what ``model.crd`` admits
custom objects with. Built on first use and cached: nothing here runs for a command that meets no
custom kind.
"""

from __future__ import annotations

import copy
import importlib
from functools import cache
from typing import Any

from .catalog import DEFINITIONS, Definition, Version
from .markers import STANDARD, Struct, schema


def root_type(definition: Definition, version: str) -> type[Struct]:
    """The class that defines one version of a kind."""
    module = importlib.import_module(definition.module(version))
    found = getattr(module, definition.kind)
    if not (isinstance(found, type) and issubclass(found, Struct)):
        raise TypeError(f"{definition.module(version)}.{definition.kind} is not a type")
    return found


@cache
def _version_schema(definition: Definition, version: str, channel: str) -> dict[str, Any]:
    return schema(root_type(definition, version), channel)


def version_schema(definition: Definition, version: str, channel: str = STANDARD) -> dict[str, Any]:
    """The structural OpenAPI v3 schema of one version (a copy: callers may change it)."""
    return copy.deepcopy(_version_schema(definition, version, channel))


def _version(definition: Definition, version: Version, channel: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if version.columns is not None:
        out["additionalPrinterColumns"] = [c.to_dict() for c in version.columns]
    if version.deprecation:
        out["deprecated"] = True
        out["deprecationWarning"] = version.deprecation
    out.update({
        "name": version.name,
        "schema": {"openAPIV3Schema": version_schema(definition, version.name, channel)},
        "served": version.served,
        "storage": version.storage,
        "subresources": {"status": {}} if version.status else {},
    })
    return out


def custom_resource_definition(definition: Definition, channel: str = STANDARD) -> dict[str, Any]:
    """The complete CustomResourceDefinition object of one kind, in the standard channel unless asked for the
    experimental one (which only the policy group's definitions carry fields of)."""
    names: dict[str, Any] = {}
    if definition.categories:
        names["categories"] = list(definition.categories)
    names.update({"kind": definition.kind, "listKind": f"{definition.kind}List", "plural": definition.plural})
    if definition.short_names:
        names["shortNames"] = list(definition.short_names)
    names["singular"] = definition.singular
    metadata: dict[str, Any] = {"annotations": definition.bundle.annotations(channel)}
    if definition.labels:
        metadata["labels"] = dict(definition.labels)
    metadata["name"] = definition.name
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {
            "group": definition.group,
            "names": names,
            "scope": "Namespaced" if definition.namespaced else "Cluster",
            "versions": [_version(definition, v, channel) for v in sorted(definition.versions, key=lambda v: v.name)],
        },
    }


def all_definitions() -> list[dict[str, Any]]:
    """Every built-in CRD, sorted by name (the order ``kubectl get crd`` lists them in)."""
    return [custom_resource_definition(d) for d in sorted(DEFINITIONS, key=lambda d: d.name)]
