"""The resources the API server serves: discovery documents and URL ↔ kind mapping.

Built from the core's ``model.kinds`` (which also lists the unsimulated kinds kubectl verbs touch
on their own: ``create configmap|secret|serviceaccount``), plus Events for ``describe``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..model import versions
from ..model.kinds import CILIUM, CNI_KINDS, KINDS, KindInfo, stored_kind
from ..model.strategy import strategy_for

VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def server_version(version: versions.KubernetesVersion | None = None) -> dict[str, Any]:
    """``GET /version`` as the API server of ``version`` (default: the version in force) answers it, its patch
    release from the table (model/versions.py RELEASES). The gcloud SDK's kubectl dispatcher (on this project's
    test machines) runs kubectl.1.<minor> for minors it has and its built-in 1.32 otherwise: see
    docs/apiserver.md "Which kubectl answers"."""
    row = versions.release(version)
    major, minor = str(row.version.major), str(row.version.minor)
    return {
        "major": major, "minor": minor, "emulationMajor": major, "emulationMinor": minor,
        # The oldest minor whose behaviour it keeps compatible with (compatibility version): the previous one.
        "minCompatibilityMajor": major, "minCompatibilityMinor": str(row.version.minor - 1),
        "gitVersion": row.git_version, "gitCommit": "knetsim", "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.25.5", "compiler": "gc", "platform": "linux/amd64",
    }


@dataclass(frozen=True, slots=True)
class Resource(KindInfo):
    """A kind as the API server serves it: the core's KindInfo plus discovery details."""

    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ("status",)
    # Served because a client applied its CRD (customresources.CustomDefinitions.served), and the version its
    # objects are stored at (the CRD's storage version).
    from_client_crd: bool = False
    storage: str = ""

    @property
    def printer_columns(self) -> tuple[tuple[str, str, str], ...] | None:
        """The columns its upstream or client CRD declares (name, type, jsonPath), Age last, for a kind whose
        columns come from a CRD's additionalPrinterColumns rather than knetsim.printers: a client CRD's kind, a
        CNI's kind kept under its qualified name. None: the printers' (Cilium's kinds keep theirs)."""
        if not self.from_client_crd and (not self.cni or self.key_kind == self.kind):
            return None
        return (*self.columns, ("Age", "date", ".metadata.creationTimestamp"))

    @property
    def key_kind(self) -> str:
        """The kind its objects are stored under (the store's Key): ``NetworkPolicy.projectcalico.org`` for Calico's,
        so that it never meets the Kubernetes NetworkPolicy of the same name; the kind itself for every kind that
        BY_KIND answers (model.kinds.stored_kind, which the offline build keeps ClusterState.others by)."""
        return stored_kind(self.kind, self.api_version)

    def served_with(self, cni: str | None) -> bool:
        """Is it served on a cluster of this CNI? Calico's and Antrea's kinds only where the cluster config names
        their CNI (their CRDs and calico-apiserver come with it); Cilium's everywhere, as before CNIs were named."""
        return not self.cni or self.cni == CILIUM or self.cni == cni

    @property
    def prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(self, namespace: str = "", name: str = "") -> str:
        out = self.prefix
        if self.namespaced and namespace:
            out += f"/namespaces/{namespace}"
        out += f"/{self.plural}"
        if name:
            out += f"/{name}"
        return out


def _from_core() -> list[Resource]:
    out = []
    for k in KINDS:
        if k.crd:
            out.extend(_from_crd(k))
            continue
        # What the kind's strategy serves; kinds knetsim only keeps are served as plain objects.
        subs = strategy_for(k.kind, k.api_version).all_subresources if k.simulated else ()
        out.append(Resource(k.kind, k.group, k.version, k.plural, k.namespaced, k.short_names,
                            simulated=k.simulated, in_all=k.in_all,
                            categories=("all",) if k.in_all else (), subresources=subs))
    return out


def _from_cni(taken: set[str]) -> list[Resource]:
    """The kinds a CNI brings (model.kinds CNI_KINDS). A short name a kind served before it already has stays that
    kind's (``cnp`` is CiliumNetworkPolicy's, as kubectl's discovery order resolves it): it is left out here."""
    out = []
    for k in CNI_KINDS:
        short = tuple(s for s in k.short_names if s not in taken)
        out.append(Resource(k.kind, k.group, k.version, k.plural, k.namespaced, short, cni=k.cni, role=k.role,
                            columns=k.columns, subresources=()))
    return out


def _aliases(resources: list[Resource]) -> set[str]:
    return {alias for r in resources for alias in (r.plural, r.singular, *r.short_names)}


def _from_crd(k: KindInfo) -> list[Resource]:
    """A custom kind at its storage version, then at every other served version (conversion None: the same
    object with another apiVersion, as the API server serves such CRDs)."""
    from ..model.apis.catalog import BY_KIND as DEFINITIONS

    definition = DEFINITIONS[(k.group, k.kind)]
    status = {v.name: v.status for v in definition.versions}
    return [Resource(k.kind, k.group, version, k.plural, k.namespaced, k.short_names, simulated=k.simulated,
                     in_all=k.in_all, crd=True, categories=definition.categories,
                     subresources=("status",) if status.get(version) else ())
            for version in (k.version, *k.other_versions)]


# Every kind the core knows, simulated or only kept (ConfigMap, Secret, ServiceAccount), and the
# Events the controllers write (the API server's own kind: the core never reads them).
_CORE = [*_from_core(), Resource("Event", "", "v1", "events", True, ("ev",), subresources=(), simulated=False)]
# ... and the CNIs' kinds, each served only on a cluster of its CNI (Resource.served_with).
RESOURCES: tuple[Resource, ...] = (*_CORE, *_from_cni(_aliases(_CORE)))

# By the kind the store keys them under (Resource.key_kind): a bare name is the Kubernetes or knetsim kind,
# ``NetworkPolicy.projectcalico.org`` Calico's.
BY_KIND: dict[str, Resource] = {}
for _r in RESOURCES:
    BY_KIND.setdefault(_r.key_kind, _r)  # the storage version: what the store holds
BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}


def served(cni: str | None = None, extra: Iterable[Resource] = ()) -> list[Resource]:
    """The resources a cluster of this CNI serves (``cni`` None: the CNI-less cluster, Cilium's kinds as ever),
    and ``extra``, those its clients' CRDs make served."""
    return [*(r for r in RESOURCES if r.served_with(cni)), *extra]


def group_versions(cni: str | None = None, extra: Iterable[Resource] = ()) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    for r in served(cni, extra):
        if (r.group, r.version) not in seen:
            seen.append((r.group, r.version))
    return seen


def _subresource_entry(r: Resource, sub: str) -> dict[str, Any]:
    kind = {"group": r.group, "version": r.version, "kind": r.kind}
    verbs = ["get", "patch", "update"]
    if sub == "scale":
        kind = {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    elif sub in ("exec", "attach", "portforward"):
        kind = {"group": "", "version": "v1", "kind": "Pod" + sub.capitalize() + "Options"}
        verbs = ["create", "get"]
    elif sub == "log":
        kind = {"group": "", "version": "v1", "kind": "Pod"}
        verbs = ["get"]
    return {"subresource": sub, "responseKind": kind, "verbs": verbs}


def aggregated_discovery(core: bool, served_as: str = "v2", cni: str | None = None,
                         extra: Iterable[Resource] = ()) -> dict[str, Any]:
    """``APIGroupDiscoveryList`` (apidiscovery.k8s.io) for ``/api``
    (core) or ``/apis``; ``served_as`` names the format, v2 or v2beta1 (the same shape)."""
    groups: dict[str, dict[str, Any]] = {}
    for r in served(cni, extra):
        if (r.group == "") != core:
            continue
        entry: dict[str, Any] = {
            "resource": r.plural,
            "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
            "scope": "Namespaced" if r.namespaced else "Cluster",
            "singularResource": r.singular,
            "verbs": VERBS,
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        if r.subresources:
            entry["subresources"] = [_subresource_entry(r, s) for s in r.subresources]
        group = groups.setdefault(r.group, {"metadata": {"name": r.group}, "versions": []})
        version = next((v for v in group["versions"] if v["version"] == r.version), None)
        if version is None:
            version = {"version": r.version, "resources": [], "freshness": "Current"}
            group["versions"].append(version)
        version["resources"].append(entry)
    for group in groups.values():
        group["versions"].sort(key=lambda v: version_priority(v["version"]))
    return {"kind": "APIGroupDiscoveryList", "apiVersion": f"apidiscovery.k8s.io/{served_as}", "metadata": {},
            "items": list(groups.values())}


def api_versions() -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}


def version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes' version order (kube-aware sort): GA before beta before alpha, higher numbers first."""
    import re

    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not m:
        return (3, 0, 0)
    level = {"": 0, "beta": 1, "alpha": 2}[m.group(2) or ""]
    return (level, -int(m.group(1)), -int(m.group(3) or 0))


def api_group_list(cni: str | None = None, extra: Iterable[Resource] = ()) -> dict[str, Any]:
    versions: dict[str, list[str]] = {}
    for group, version in group_versions(cni, extra):
        if group:
            versions.setdefault(group, []).append(version)
    groups = []
    for group, names in versions.items():
        gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in sorted(names, key=version_priority)]
        groups.append({"name": group, "versions": gvs, "preferredVersion": gvs[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(group: str, cni: str | None = None, extra: Iterable[Resource] = ()) -> dict[str, Any] | None:
    for g in api_group_list(cni, extra)["groups"]:
        if g["name"] == group:
            return dict(g, kind="APIGroup", apiVersion="v1")
    return None


def resource_list(group: str, version: str, cni: str | None = None,
                  extra: Iterable[Resource] = ()) -> dict[str, Any] | None:
    items: list[dict[str, Any]] = []
    for r in served(cni, extra):
        if (r.group, r.version) != (group, version):
            continue
        entry: dict[str, Any] = {"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
                                 "kind": r.kind, "verbs": VERBS}
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        items.append(entry)
        for sub in r.subresources:
            s = _subresource_entry(r, sub)
            items.append({"name": f"{r.plural}/{sub}", "singularName": "", "namespaced": r.namespaced,
                          "kind": s["responseKind"]["kind"], "verbs": s["verbs"]})
    if not items:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version, "resources": items}
