"""A running cluster's objects, as the documents a snapshot file would hold.

Only the kinds knetsim analyses are listed (``READ``): namespaces, nodes, workloads and pods,
Services, EndpointSlices, Ingresses and their classes, NetworkPolicies and the custom kinds
knetsim knows (``model/kinds.py``), each at a version the server serves; a kind the server does
not serve (a CRD that is not installed) is skipped. Secrets keep their type and the names of
their keys, and the values of their certificates only (``tls.crt``, ``ca.crt``): a Gateway
listener's certificate is checked as Envoy Gateway checks it, while a private key, a password or a
token is dropped the moment it arrives (``model/withheld.py``) and so reaches no output, cache or
JSON. ConfigMaps are read by name where the analysis needs one: the CA bundles that
``caCertificateRefs`` name (a Gateway's client validation, a BackendTLSPolicy, Envoy Gateway's
policies) and that a TLS server pod mounts for its client CAs (``TLS_CLIENT_CACERTS``), kube-proxy's (its
mode), CoreDNS's (its Corefile) and, where Cilium runs, the policy keys of its cilium-config.
v1 Endpoints are not read: the EndpointSlices say the same, and every Service of a
real cluster has a mirror that would only repeat the deprecation warning.

Objects keep everything the server sent but ``managedFields``; they carry uid and
resourceVersion, so admission reads them as a snapshot (fieldValidation=Warn).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..model.kinds import BY_KIND, CNI_KINDS, KINDS, STORAGE_GROUP_OF, KindInfo
from ..model.loader import Document, LoadResult, Source
from ..model.withheld import withhold
from .kubeapi import ApiError, KubeAPI, KubeError

# Not listed: ConfigMaps (big; the few the analysis reads are read by name, ``_referenced_config_maps``) and
# ServiceAccounts (nothing reads them), v1 Endpoints (see above),
# IPAddresses (one per ClusterIP: the allocator's are derived from the Services).
# CustomResourceDefinitions are not listed (a cluster with operators holds megabytes of them): only the ones of
# the custom kinds knetsim defines are read, by name (``_definitions``), so that the cluster's own are in force.
NOT_READ = frozenset({"Endpoints", "ConfigMap", "ServiceAccount", "IPAddress", "CustomResourceDefinition"})
# The CNIs' kinds are read too where the cluster serves them: policy answers follow the policy the cluster runs.
READ: tuple[KindInfo, ...] = tuple(k for k in (*KINDS, *CNI_KINDS) if k.kind not in NOT_READ)
# What a role without cluster-wide read of these may be refused; the analysis does without them.
OPTIONAL = {
    "Secret": "Ingress TLS Secrets cannot be checked",
    "Node": "nodes are inferred from the pods' nodeName and hostIP",
    "ServiceCIDR": "the cluster config's serviceCIDR stands in for the cluster's ServiceCIDRs",
    # PersistentVolumes and StorageClasses are cluster-scoped and not in the `view` role: a reader of every
    # namespace may be refused them (and a narrower role the claims).
    "PersistentVolumeClaim": "pods' claims are taken as the pods' status says",
    "PersistentVolume": "claims are taken as their status says",
    "StorageClass": "claims' StorageClasses cannot be checked",
}

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
    # kube-proxy's nodePortAddresses there (``node_port_addresses``): (addresses, where it is set), or None.
    node_port_addresses: tuple[tuple[str, ...], str] | None = None


def _version(info: KindInfo, served: dict[str, tuple[str, ...]]) -> str | None:
    versions = served.get(info.group)
    if versions is None:
        return None
    return next((v for v in (info.version, *info.other_versions) if v in versions), None)


def _clean(obj: dict[str, Any], info: KindInfo) -> dict[str, Any]:
    if info.kind == "Secret":
        return withhold(obj)  # no private key, password or token is kept (model/withheld.py)
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
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
        if STORAGE_GROUP_OF.get(info.group) in served:
            continue  # the same objects, read at the group that serves them (Calico's v3)

        def paged(plural: str, count: int) -> None:
            if progress is not None:
                progress(f"{label}: {count} {plural} so far…")

        try:
            items = api.list(info, version=version, progress=paged)
            if info.kind == "Secret":
                items = [withhold(item) for item in items]  # at once: no value but a certificate's is held
        except ApiError as exc:
            if exc.code == 404:
                continue  # the group is served, this resource of it is not
            if exc.code == 403 and info.kind in OPTIONAL:
                out.notes.append(f"{label}: cannot list {info.plural} ({exc.message}); {OPTIONAL[info.kind]}")
                continue
            raise
        items.sort(key=lambda o: (str((o.get("metadata") or {}).get("namespace") or ""),
                                  str((o.get("metadata") or {}).get("name") or "")))
        # Counted by kind, or by Kind.group for a CNI's kind of a built-in's name (Calico's NetworkPolicy).
        out.counts[info.kind if BY_KIND.get(info.kind) in (info, None) else info.qualified_kind] = len(items)
        source = ClusterObject(label, 1)
        out.loaded.documents.extend(Document(source, _clean(item, info)) for item in items)
        if progress is not None and len(items) >= 1000:
            progress(f"{label}: {len(items)} {info.plural}")
    out.loaded.documents.extend(_definitions(api, label, served, out.notes, {k.kind for k in kinds}))
    out.loaded.documents.extend(_referenced_config_maps(api, label, out.loaded.documents, out.notes))
    config_maps: dict[str, dict[str, Any] | None] = {}

    def config_map(name: str) -> dict[str, Any] | None:
        if name not in config_maps:  # each read once: the mode and the NodePort addresses share kube-proxy's
            config_maps[name] = _config_map(api, name)
        return config_maps[name]

    out.dataplane = data_plane(out.loaded.documents, config_map)
    out.node_port_addresses = node_port_addresses(out.loaded.documents, config_map)
    out.loaded.documents.extend(_corefile(api, label, out.loaded.documents))
    out.loaded.documents.extend(_cilium_config(label, out.loaded.documents, config_map))
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
    system = _kube_system_agents(documents)

    def runs(app: str, kind: str) -> dict[str, Any] | None:
        return _runs(system, app, kind)

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


def _kube_system_agents(documents: Iterable[Document]) -> list[Document]:
    """kube-system's DaemonSets and pods: where a node agent (kube-proxy, Cilium) is looked for (``_runs``)."""
    return [d for d in documents if d.namespace == "kube-system" and d.kind in ("DaemonSet", "Pod")]


def _runs(system: list[Document], app: str, kind: str) -> dict[str, Any] | None:
    """The kube-system DaemonSet (or pod) of ``app``, by name or by the labels distributions give it."""
    for d in system:
        meta = d.body.get("metadata") or {}
        labels = meta.get("labels") or {}
        name = str(meta.get("name") or "")
        if d.kind == kind and (name == app or labels.get("k8s-app") == app or labels.get("component") == app
                               or (kind == "Pod" and name.startswith(f"{app}-"))):
            return d.body
    return None


def node_port_addresses(documents: Iterable[Document], config_map: Callable[[str], dict[str, Any] | None]
                        ) -> tuple[tuple[str, ...], str] | None:
    """kube-proxy's nodePortAddresses where it runs: its ``--nodeport-addresses`` flag (comma-separated), else
    ``nodePortAddresses`` of the KubeProxyConfiguration in ConfigMap kube-system/kube-proxy. None: no kube-proxy,
    or none set (the mode's default stands: dataplane/nodeports.py)."""
    system = _kube_system_agents(documents)
    kube_proxy = _runs(system, "kube-proxy", "DaemonSet") or _runs(system, "kube-proxy", "Pod")
    if kube_proxy is None:
        return None
    flag = _flag(kube_proxy, "--nodeport-addresses")
    if flag is not None:
        found, where = tuple(a.strip() for a in flag.split(",") if a.strip()), "its --nodeport-addresses flag"
    else:
        conf = _kube_proxy_configuration(config_map("kube-proxy"))
        listed = conf.get("nodePortAddresses") if conf is not None else None
        found, where = tuple(str(a) for a in listed) if isinstance(listed, list) else (), \
            "ConfigMap kube-system/kube-proxy"
    # A kube-proxy that runs has a valid setting; anything else (a ConfigMap nobody reads) is not taken.
    return (found, where) if found and all(a == "primary" or _is_cidr(a) for a in found) else None


def _is_cidr(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return "/" in text


def _flag_mode(owner: dict[str, Any]) -> str | None:
    """``--proxy-mode`` of kube-proxy's container, in a DaemonSet's pod template or a pod of its own."""
    return _flag(owner, "--proxy-mode")


def _flag(owner: dict[str, Any], flag: str) -> str | None:
    """The value of ``flag`` (``--flag=V`` or ``--flag V``) in a container's command or args, in a DaemonSet's pod
    template or a pod of its own."""
    spec = owner.get("spec") or {}
    pod_spec = (spec.get("template") or {}).get("spec") or {} if owner.get("kind") == "DaemonSet" else spec
    containers = pod_spec.get("containers") or []
    for container in containers if isinstance(containers, list) else []:
        args = [*(container.get("command") or []), *(container.get("args") or [])]
        for i, arg in enumerate(args):
            if str(arg).startswith(f"{flag}="):
                return str(arg).split("=", 1)[1]
            if arg == flag and i + 1 < len(args):
                return str(args[i + 1])
    return None


def _configured_mode(data: dict[str, Any] | None) -> str | None:
    """``mode`` of the KubeProxyConfiguration in kube-proxy's ConfigMap (``config.conf``); None without one."""
    conf = _kube_proxy_configuration(data)
    mode = conf.get("mode") if conf is not None else None
    return str(mode) if mode is not None else ("" if conf is not None else None)


def _kube_proxy_configuration(data: dict[str, Any] | None) -> dict[str, Any] | None:
    """The KubeProxyConfiguration of kube-proxy's ConfigMap (``config.conf``, as kubeadm and kind write it)."""
    import yaml

    text = (data or {}).get("config.conf")
    try:
        conf = yaml.safe_load(text) if isinstance(text, str) else None
    except yaml.YAMLError:
        return None
    return conf if isinstance(conf, dict) else None


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


# What of Cilium's agent configuration the policy answers read: the cluster name an endpoint's
# io.cilium.k8s.policy.cluster label carries, and the policy enforcement mode (default, always, never).
CILIUM_CONFIG_KEYS = ("cluster-name", "enable-policy")


def _cilium_config(label: str, documents: list[Document], config_map: Callable[[str], dict[str, Any] | None]
                   ) -> list[Document]:
    """ConfigMap kube-system/cilium-config with the keys the policy answers read (``CILIUM_CONFIG_KEYS``), where
    kube-system runs Cilium; read by name (already, for the data plane) unless ConfigMaps were listed."""
    system = _kube_system_agents(documents)
    if _runs(system, "cilium", "DaemonSet") is None or any(
            d.kind == "ConfigMap" and d.namespace == "kube-system" and d.name == "cilium-config" for d in documents):
        return []
    data = config_map("cilium-config")
    kept = {k: v for k, v in (data or {}).items() if k in CILIUM_CONFIG_KEYS and isinstance(v, str)}
    if not kept:
        return []
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cilium-config", "namespace": "kube-system"}, "data": kept}
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


def config_map_references(documents: Iterable[Document]) -> list[tuple[str, str]]:
    """(namespace, name) of every ConfigMap the analysis reads, sorted: those ``caCertificateRefs`` name anywhere
    in an object (a Gateway's frontend validation, a BackendTLSPolicy's validation, Envoy Gateway's policies; the
    object's namespace unless the ref names one), and the ConfigMap volumes of a pod whose container names its
    client CA file in ``TLS_CLIENT_CACERTS`` (gateway/backendtls.py reads its CA bundle from there)."""
    found: set[tuple[str, str]] = set()

    def refs(node: Any, namespace: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "caCertificateRefs" and isinstance(value, list):
                    for ref in value:
                        if isinstance(ref, dict) and ref.get("kind") == "ConfigMap" and ref.get("group", "") in (
                                "", "core") and ref.get("name"):
                            found.add((str(ref.get("namespace") or namespace), str(ref["name"])))
                else:
                    refs(value, namespace)
        elif isinstance(node, list):
            for item in node:
                refs(item, namespace)

    for doc in documents:
        if doc.kind == "Pod":
            spec = doc.body.get("spec") or {}
            asks = any(isinstance(e, dict) and e.get("name") == "TLS_CLIENT_CACERTS"
                       for c in spec.get("containers") or [] if isinstance(c, dict) for e in c.get("env") or [])
            if asks:
                found.update((doc.namespace, str(v["configMap"]["name"])) for v in spec.get("volumes") or []
                             if isinstance(v, dict) and isinstance(v.get("configMap"), dict)
                             and v["configMap"].get("name"))
        elif doc.kind not in ("Secret", "CustomResourceDefinition"):
            refs(doc.body.get("spec"), doc.namespace)
    return sorted(found)


def _referenced_config_maps(api: KubeAPI, label: str, documents: list[Document], notes: list[str]) -> list[Document]:
    """The ConfigMaps ``config_map_references`` names, read by name; one that does not exist is left out (the
    analysis then reports the reference, as Envoy Gateway does), one that may not be read is noted."""
    info = next(k for k in KINDS if k.kind == "ConfigMap")
    out = []
    for namespace, name in config_map_references(documents):
        try:
            body = api.get("ConfigMap", namespace, name)
        except ApiError as exc:
            if exc.code == 403:
                notes.append(f"{label}: cannot read ConfigMap {namespace}/{name} ({exc.message}); the CA "
                             "certificates it holds cannot be checked")
                continue
            raise
        if body is not None:
            body.setdefault("kind", "ConfigMap")
            body.setdefault("apiVersion", "v1")
            out.append(Document(ClusterObject(label, 1), _clean(body, info)))
    return out
