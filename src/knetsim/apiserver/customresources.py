"""CustomResourceDefinitions on the live cluster: knetsim's own served from the start, a client's taking over.

A fresh cluster lists the CRDs of every custom kind knetsim defines (``kubectl get crd``): they are
system objects, generated from ``model.apis``. A client that applies its own CRD of such a kind
(``kubectl apply -f standard-install.yaml``, an experimental-channel CRD, an older bundle) replaces
that object, and from then on the kind is admitted by the client's CRD, every version of it, as on
a cluster where the CRD was installed: what it does not serve is ``no matches for kind``, what its
schema does not have is an unknown field. Objects already stored are left as they are (a cluster
does not re-validate them either).

``CustomDefinitions`` follows the store: each committed change to a CustomResourceDefinition of a
knetsim kind updates the versions in force, logs which definition now admits the kind, and clears
the OpenAPI documents (``kubectl explain`` then describes the client's schema).

A client's CRD of a kind knetsim does not serve is served as a real API server serves any CRD
(``CustomDefinitions.served``): its served versions are listed by discovery, its objects are created,
read, listed, watched and deleted at their paths, admitted by the CRD's schema (pruning, defaults,
validation: ``model/crd.py``), stored at its storage version, printed with its additionalPrinterColumns.
A CNI's kind the cluster config does not bring (a Calico CRD applied on a kindnet cluster) is served so
too, with that CNI's admission rules besides the schema.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from ..model import admission, schema
from ..model import crd as crds
from ..model.apis import catalog
from ..model.kinds import BY_GROUP_KIND
from . import openapi
from .errors import ApiError
from .resources import BY_PATH, Resource
from .store import Change, Key, Store, Write

log = logging.getLogger("knetsim.apiserver")

CRD_KIND = "CustomResourceDefinition"


def builtin_writes(store: Store, now: str) -> list[Write]:
    """The writes that give a cluster knetsim's CRDs: each one the store lacks, and each of the system's own that
    an older version wrote differently (a client's CRD, which took over its kind, is left alone)."""
    out = []
    for key, body in builtin_objects(now).items():
        stored = store.get(key)
        if stored is None:
            out.append(Write(key, body, "system"))
        elif stored.managed == "system" and _without_metadata(stored.body) != _without_metadata(body):
            meta = {**stored.body["metadata"], **{k: v for k, v in body["metadata"].items()
                                                  if k in ("annotations", "labels")}}
            meta["generation"] = int(meta.get("generation") or 1) + 1
            out.append(Write(key, {**body, "metadata": meta}, "system"))
    return out


def _without_metadata(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "metadata"}


def builtin_objects(now: str) -> dict[Key, dict[str, Any]]:
    """The built-in CRDs as the system objects a fresh cluster has."""
    from ..model.objects import stable_uid

    out: dict[Key, dict[str, Any]] = {}
    for body in crds.builtin_crds():
        body = json.loads(json.dumps(body))
        meta = body["metadata"]
        meta["uid"] = stable_uid(CRD_KIND, "", meta["name"])
        meta["creationTimestamp"] = now
        meta["generation"] = 1
        out[(CRD_KIND, "", meta["name"])] = body
    return out


def _defines_knetsim_kind(body: dict[str, Any]) -> bool:
    spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    names = (spec or {}).get("names") if isinstance((spec or {}).get("names"), dict) else {}
    return ((spec or {}).get("group"), (names or {}).get("kind")) in catalog.BY_KIND


def _names(body: dict[str, Any]) -> tuple[str, str] | None:
    """(group, kind) a CRD body defines, or None for a body without them."""
    spec = body.get("spec")
    names = spec.get("names") if isinstance(spec, dict) else None
    if not isinstance(names, dict) or not isinstance(spec.get("group"), str) or not isinstance(names.get("kind"), str):
        return None
    return spec["group"], names["kind"]


def _served_by_crd(names: tuple[str, str] | None, cni: str | None) -> bool:
    """Is this a kind only a client's CRD makes served: not knetsim's own (catalog), not a Kubernetes group's, and
    not a kind the cluster serves already (a CNI's kind of the cluster's CNI, Cilium's)?"""
    if names is None or names in catalog.BY_KIND or names[0] in schema.builtin_groups():
        return False
    row = BY_GROUP_KIND.get(names)
    return row is None or (bool(row.cni) and not any(
        r.group == row.group and r.kind == row.kind and r.served_with(cni) for r in BY_PATH.values()))


def _resource(v: crds.CRDVersion, storage: str) -> Resource:
    """A served version of a client's CRD as the API server serves it; a CNI's kind keeps its row's admission."""
    row = BY_GROUP_KIND.get((v.group, v.kind))
    return Resource(v.kind, v.group, v.version, v.plural, v.namespaced, v.short_names, simulated=False,
                    cni=row.cni if row is not None else "", role=row.role if row is not None else "",
                    columns=tuple((c.name, c.type, c.json_path) for c in v.printer_columns if c.priority == 0),
                    categories=v.categories, subresources=("status",) if v.status_subresource else (),
                    storage=storage, from_client_crd=True)


class CustomDefinitions:
    """The CRD versions in force for knetsim's custom kinds, from the store: empty while only the built-in CRDs
    are there (admission then uses the built-in definitions); and the kinds clients' CRDs make served."""

    def __init__(self, store: Store, cni: str | None = None) -> None:
        self.store = store
        self.cni = cni
        self.versions: dict[tuple[str, str, str], crds.CRDVersion] = {}
        self.sources: dict[tuple[str, str], str] = {}  # (group, kind) → the client's CRD in force
        # Kinds served by a client's CRD alone: (group, version, plural) → its resource, (group, version, kind) →
        # the version admission checks them by.
        self.served: dict[tuple[str, str, str], Resource] = {}
        self.served_versions: dict[tuple[str, str, str], crds.CRDVersion] = {}
        self.changed: list[Callable[[], None]] = []  # called when the definitions in force change
        self._kinds: dict[tuple[str, str, str], admission.Kind] = {}
        self._load()
        store.listeners.append(self._on_changes)
        openapi.use_custom(self.versions)

    def _load(self) -> None:
        versions: dict[tuple[str, str, str], crds.CRDVersion] = {}
        sources: dict[tuple[str, str], str] = {}
        served: dict[tuple[str, str, str], Resource] = {}
        served_versions: dict[tuple[str, str, str], crds.CRDVersion] = {}
        for key, stored in sorted(self.store.objects.items()):
            if key[0] == CRD_KIND and _served_by_crd(_names(stored.body), self.cni):
                try:
                    found = crds.versions_of(stored.body, crds.source_of(stored.body, "the cluster"))
                except (AttributeError, TypeError, ValueError):
                    continue
                storage = next((v.version for v in found if v.storage), found[0].version if found else "")
                for v in found:
                    served[(v.group, v.version, v.plural)] = _resource(v, storage)
                    served_versions[(v.group, v.version, v.kind)] = v
                continue
            # The system's own CRDs (bootstrap's) are the built-in definitions; any client write makes one the client's.
            if key[0] != CRD_KIND or stored.managed == "system" or not _defines_knetsim_kind(stored.body):
                continue
            source = crds.source_of(stored.body, "the cluster")
            try:
                found = crds.versions_of(stored.body, source)
            except (AttributeError, TypeError, ValueError):
                continue
            spec = stored.body["spec"]
            sources[(spec["group"], spec["names"]["kind"])] = source
            versions.update(((v.group, v.version, v.kind), v) for v in found)
        self.versions, self.sources, self._kinds = versions, sources, {}
        self.served, self.served_versions = served, served_versions

    def _on_changes(self, changes: list[Change]) -> None:
        if any(c.kind == CRD_KIND and _served_by_crd(_names(c.obj), self.cni) for c in changes):
            before_served = set(self.served)
            self._load()
            for group, version, plural in sorted(set(self.served) ^ before_served):
                log.info("%s.%s/%s is %s by a client's CustomResourceDefinition", plural, group, version,
                         "served" if (group, version, plural) in self.served else "no longer served")
            for fn in self.changed:
                fn()
        touched = [c for c in changes if c.kind == CRD_KIND and _defines_knetsim_kind(c.obj)]
        if not touched:
            return
        before = dict(self.sources)
        self._load()
        for group, kind in sorted({(c.obj["spec"]["group"], c.obj["spec"]["names"]["kind"]) for c in touched}):
            now = self.sources.get((group, kind))
            if now != before.get((group, kind)):
                log.warning("%s (%s) is now admitted by %s", kind, group, now or "knetsim's built-in definition")
        openapi.use_custom(self.versions)
        for fn in self.changed:
            fn()

    def resource_of(self, key_kind: str) -> Resource | None:
        """The resource (at its storage version) of a kind a client's CRD serves, by the kind its objects are
        stored under; None for any other kind."""
        return next((r for r in self.served.values() if r.key_kind == key_kind and r.version == r.storage), None)

    def objects_of(self, crd: dict[str, Any]) -> list[Key]:
        """The stored objects of the kind a client's CRD alone makes served (none for any other CRD)."""
        names = _names(crd)
        served = next((r for r in self.served.values() if (r.group, r.kind) == names), None)
        if served is None:
            return []
        return sorted(key for key, stored in self.store.objects.items() if key[0] == served.key_kind
                      and str(stored.body.get("apiVersion") or "").rpartition("/")[0] == served.group)

    def kind_of(self, r: Resource) -> admission.Kind:
        """The admission kind of a served resource, by the definition in force; 404 for a version a client's CRD
        no longer serves (discovery still lists it: the served resources are fixed at start)."""
        key = (r.group, r.version, r.kind)
        found = self._kinds.get(key)
        if found is None:
            try:
                resolved = admission.resolve(r.api_version, r.kind, {**self.versions, **self.served_versions})
            except admission.NoKindMatch:
                raise ApiError(404, "NotFound", "the server could not find the requested resource") from None
            found = self._kinds[key] = resolved if resolved is not None else admission.Kind(
                r.group, r.version, r.kind, info=r, namespaced=r.namespaced)
        return found
