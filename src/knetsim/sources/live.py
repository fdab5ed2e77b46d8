"""A running cluster's objects, as the documents a snapshot file would hold.

Only the kinds knetsim analyses are listed (``READ``): namespaces, nodes, workloads and pods,
Services, EndpointSlices, Ingresses and their classes, NetworkPolicies and the custom kinds
knetsim knows (``model/kinds.py``), each at a version the server serves; a kind the server does
not serve (a CRD that is not installed) is skipped. Secrets are read as metadata only
(``PartialObjectMetadataList``): knetsim needs their names (an Ingress's TLS Secret), never
their data. v1 Endpoints are not read: the EndpointSlices say the same, and every Service of a
real cluster has a mirror that would only repeat the deprecation warning.

Objects keep everything the server sent but ``managedFields``; they carry uid and
resourceVersion, so admission reads them as a snapshot (fieldValidation=Warn).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..model.kinds import KINDS, KindInfo
from ..model.loader import Document, LoadResult, Source
from .kubeapi import ApiError, KubeAPI, KubeError

# Not analysed: ConfigMaps and ServiceAccounts (big, and nothing reads them), v1 Endpoints (see above),
# IPAddresses (one per ClusterIP: the allocator's are derived from the Services).
# CustomResourceDefinitions are not listed (a cluster with operators holds megabytes of them): only the ones of
# the custom kinds knetsim defines are read, by name (``_definitions``), so that the cluster's own are in force.
NOT_READ = frozenset({"Endpoints", "ConfigMap", "ServiceAccount", "IPAddress", "CustomResourceDefinition"})
READ: tuple[KindInfo, ...] = tuple(k for k in KINDS if k.kind not in NOT_READ)
# What a role without cluster-wide read of these may be refused; the analysis does without them.
OPTIONAL = {
    "Secret": "Ingress TLS Secrets cannot be checked",
    "Node": "nodes are inferred from the pods' nodeName and hostIP",
    "ServiceCIDR": "the cluster config's serviceCIDR stands in for the cluster's ServiceCIDRs",
}
METADATA_ONLY = {"Secret"}
PARTIAL_METADATA = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class ClusterObject(Source):
    """Where a live object came from: the cluster (``cluster kind-kind``), not a file and document."""

    def __str__(self) -> str:
        return self.file


@dataclass(slots=True)
class ClusterRead:
    """The objects of a cluster, and what could not be read."""

    loaded: LoadResult
    notes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    # What moves Service traffic there, as its kube-system says (``data_plane``): (dataplane, why), or None.
    dataplane: tuple[str, str] | None = None


def _version(info: KindInfo, served: dict[str, tuple[str, ...]]) -> str | None:
    versions = served.get(info.group)
    if versions is None:
        return None
    return next((v for v in (info.version, *info.other_versions) if v in versions), None)


def _clean(obj: dict[str, Any], info: KindInfo) -> dict[str, Any]:
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    if info.kind in METADATA_ONLY:
        # Whatever the server sent (one without PartialObjectMetadata sends the whole Secret), keep no data.
        return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "metadata": meta or {}}
    return obj


def read_cluster(api: KubeAPI, label: str, *, kinds: Iterable[KindInfo] = READ,
                 progress: Progress | None = None) -> ClusterRead:
    """Every object of ``kinds`` in every namespace, in (kind, namespace, name) order."""
    started = time.monotonic()
    out = ClusterRead(LoadResult())
    served = api.served_versions()
    for info in kinds:
        version = _version(info, served)
        if version is None:
            continue  # not served here (a CRD not installed): nothing of that kind exists

        def paged(plural: str, count: int) -> None:
            if progress is not None:
                progress(f"{label}: {count} {plural} so far…")

        try:
            items = api.list(info, version=version, accept=PARTIAL_METADATA if info.kind in METADATA_ONLY else None,
                             progress=paged)
        except ApiError as exc:
            if exc.code == 404:
                continue  # the group is served, this resource of it is not
            if exc.code == 403 and info.kind in OPTIONAL:
                out.notes.append(f"{label}: cannot list {info.plural} ({exc.message}); {OPTIONAL[info.kind]}")
                continue
            raise
        items.sort(key=lambda o: (str((o.get("metadata") or {}).get("namespace") or ""),
                                  str((o.get("metadata") or {}).get("name") or "")))
        out.counts[info.kind] = len(items)
        source = ClusterObject(label, 1)
        out.loaded.documents.extend(Document(source, _clean(item, info)) for item in items)
        if progress is not None and len(items) >= 1000:
            progress(f"{label}: {len(items)} {info.plural}")
    out.loaded.documents.extend(_definitions(api, label, served, out.notes, {k.kind for k in kinds}))
    out.dataplane = data_plane(out.loaded.documents, lambda name: _config_map(api, name))
    out.loaded.documents.extend(_corefile(api, label, out.loaded.documents))
    out.seconds = time.monotonic() - started
    return out


def data_plane(documents: Iterable[Document], config_map: Callable[[str], dict[str, Any] | None]
               ) -> tuple[str, str] | None:
    """The data plane a cluster runs, from its kube-system: kube-proxy (a DaemonSet, or the static or built-in
    pods of distributions that run it outside one) in the mode its configuration names (its ``--proxy-mode``
    flag, else the ``mode`` of ConfigMap kube-system/kube-proxy that kubeadm and kind write); without it, Cilium
    with ``kube-proxy-replacement`` (its ConfigMap cilium-config; a Cilium DaemonSet whose ConfigMap cannot be
    read counts as the replacement, nothing else carrying Services) is ``ebpf``. ``config_map(name)``: the data
    of that kube-system ConfigMap, None when absent or not readable. None: neither runs there."""
    system = [d for d in documents if d.namespace == "kube-system" and d.kind in ("DaemonSet", "Pod")]

    def runs(app: str, kind: str) -> dict[str, Any] | None:
        for d in system:
            meta = d.body.get("metadata") or {}
            labels = meta.get("labels") or {}
            name = str(meta.get("name") or "")
            if d.kind == kind and (name == app or labels.get("k8s-app") == app or labels.get("component") == app
                                   or (kind == "Pod" and name.startswith(f"{app}-"))):
                return d.body
        return None

    kube_proxy = runs("kube-proxy", "DaemonSet") or runs("kube-proxy", "Pod")
    if kube_proxy is None:
        if runs("cilium", "DaemonSet") is None:
            return None
        replacement = str((config_map("cilium-config") or {}).get("kube-proxy-replacement", "")).lower()
        if replacement in ("false", "disabled"):
            return None  # Cilium leaves Services to a kube-proxy this reader does not see
        said = " (cilium-config: kube-proxy-replacement)" if replacement else ""
        return "ebpf", f"kube-system runs Cilium (DaemonSet cilium) and no kube-proxy: Cilium replaces it{said}"
    mode = _flag_mode(kube_proxy)
    where = "its --proxy-mode flag"
    if mode is None:
        mode, where = _configured_mode(config_map("kube-proxy")), "ConfigMap kube-system/kube-proxy"
    if mode == "nftables":
        return "nftables", f"kube-proxy runs in nftables mode ({where})"
    if mode in (None, "", "iptables"):
        said = f"iptables mode ({where})" if mode else "its default mode, iptables"
        return "iptables", f"kube-proxy runs in {said}"
    return "iptables", f"kube-proxy runs in {mode} mode ({where}), which knetsim does not simulate: iptables stands in"


def _flag_mode(owner: dict[str, Any]) -> str | None:
    """``--proxy-mode`` of kube-proxy's container, in a DaemonSet's pod template or a pod of its own."""
    spec = owner.get("spec") or {}
    pod_spec = (spec.get("template") or {}).get("spec") or {} if owner.get("kind") == "DaemonSet" else spec
    containers = pod_spec.get("containers") or []
    for container in containers if isinstance(containers, list) else []:
        args = [*(container.get("command") or []), *(container.get("args") or [])]
        for i, arg in enumerate(args):
            if str(arg).startswith("--proxy-mode="):
                return str(arg).split("=", 1)[1]
            if arg == "--proxy-mode" and i + 1 < len(args):
                return str(args[i + 1])
    return None


def _configured_mode(data: dict[str, Any] | None) -> str | None:
    """``mode`` of the KubeProxyConfiguration in kube-proxy's ConfigMap (``config.conf``); None without one."""
    import yaml

    text = (data or {}).get("config.conf")
    try:
        conf = yaml.safe_load(text) if isinstance(text, str) else None
    except yaml.YAMLError:
        return None
    mode = conf.get("mode") if isinstance(conf, dict) else None
    return str(mode) if mode is not None else ("" if isinstance(conf, dict) else None)


def _config_map(api: KubeAPI, name: str) -> dict[str, Any] | None:
    """The data of ConfigMap kube-system/``name``, read by name; None when absent or not readable."""
    try:
        body = api.get("ConfigMap", "kube-system", name)
    except (ApiError, KubeError):
        return None
    data = (body or {}).get("data")
    return data if isinstance(data, dict) else None


def _corefile(api: KubeAPI, label: str, documents: list[Document]) -> list[Document]:
    """ConfigMap kube-system/coredns with its Corefile only: the cluster's DNS answers come from it
    (dns/coredns.py). Read by name unless ConfigMaps were listed."""
    if any(d.kind == "ConfigMap" and d.namespace == "kube-system" and d.name == "coredns" for d in documents):
        return []
    data = _config_map(api, "coredns")
    if data is None or not isinstance(data.get("Corefile"), str):
        return []
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "coredns", "namespace": "kube-system"},
            "data": {"Corefile": data["Corefile"]}}
    return [Document(ClusterObject(label, 1), body)]


def _definitions(api: KubeAPI, label: str, served: dict[str, tuple[str, ...]], notes: list[str],
                 wanted: set[str]) -> list[Document]:
    """The cluster's CRDs of the custom kinds read (of those knetsim defines, for the groups it serves): admission
    then checks the cluster's objects against the cluster's definitions (its bundle version and channel)."""
    from ..model.apis.catalog import DEFINITIONS

    crd_kind = next(k for k in KINDS if k.kind == "CustomResourceDefinition")
    out = []
    for definition in sorted(DEFINITIONS, key=lambda d: d.name):
        if definition.group not in served or definition.kind not in wanted:
            continue
        try:
            body = api.request("GET", api.path(crd_kind, name=definition.name))
        except ApiError as exc:
            if exc.code == 404:
                continue
            if exc.code == 403:
                notes.append(f"{label}: cannot read CustomResourceDefinitions ({exc.message}); knetsim's own "
                             "definitions of the custom kinds are used")
                return out
            raise
        if isinstance(body, dict):
            body.setdefault("kind", "CustomResourceDefinition")
            body.setdefault("apiVersion", "apiextensions.k8s.io/v1")
            out.append(Document(ClusterObject(label, 1), _clean(body, crd_kind)))
    return out
