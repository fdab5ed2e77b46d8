"""The kinds knetsim knows, each declared once: API group/version, resource names, kubectl short names,
and where the simulation keeps it.

A built-in kind is one row of ``KINDS`` below; a custom kind knetsim defines is one ``Definition`` in
``model/apis/catalog.py`` (its schema is the types module beside it). Everything else that lists kinds is
derived from these rows: the Gateway API and cluster-policy kind sets, ClusterState's collections
(``cluster/state.py``), the typed-view lookup (``view_of``) the informer and the offline build use, the
printer columns and discovery. A kind declared twice (twice here, or here and in the catalog) stops the import.

A CNI's kinds are rows too (Cilium's in ``KINDS``, Calico's and Antrea's in ``CNI_KINDS``), each naming the CNI
that brings it. Their names are not unique (three NetworkPolicies, two Tiers), so they are found by (group, kind):
``BY_GROUP_KIND``, ``info_for``; ``BY_KIND`` keeps answering a bare name with the Kubernetes or knetsim kind, and
``stored_kind`` keeps a CNI's kind under ``Kind.group`` wherever objects are kept by kind.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from .apis.catalog import DEFINITIONS, GATEWAY_GROUP, POLICY_GROUP

# The CNIs that bring kinds of their own (policy/cni.py names them the same).
CALICO, CILIUM, ANTREA = "calico", "cilium", "antrea"
# KindInfo.role: what a CNI's kind is to its policy engine.
POLICY, STAGED, SET, TIER, GROUP = "policy", "staged", "set", "tier", "group"

# The ClusterState collections that hold several kinds, keyed by (kind, "namespace/name"): workloads
# (kept for `get`) and every kind without a collection of its own.
WORKLOADS, OTHERS = "workloads", "others"


@dataclass(frozen=True, slots=True)
class KindInfo:
    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    simulated: bool = True
    # `kubectl get all` shows the kinds in the "all" category.
    in_all: bool = False
    # A custom kind knetsim defines (model.apis), and the other versions it is served at.
    crd: bool = False
    other_versions: tuple[str, ...] = ()
    # The ClusterState attribute its objects live in: a collection of its own (keyed by name when the kind is
    # cluster-scoped, by "namespace/name" otherwise), or WORKLOADS; empty: OTHERS, as they were read.
    collection: str = ""
    # Its typed view, "module:Class" under knetsim, imported on first use (so a cluster without the kind never
    # loads its model): the class's parse(raw, source), or parse_kind(kind, raw, source) for a class that
    # several kinds share. Empty: the generic Object.
    view: str = ""
    # The CNI whose kind it is (served on a live cluster only when the cluster config names that CNI; read by
    # knetsim.policy's dialect of it), empty for Kubernetes' and knetsim's own kinds.
    cni: str = ""
    # What the kind is to its CNI's policy engine: POLICY (decides connections), STAGED (a preview, never
    # enforced), SET (addresses a policy selects), TIER (orders policies), GROUP (peers a policy names).
    role: str = ""
    # The printer columns its upstream CRD declares (additionalPrinterColumns, after Name): (name, type,
    # jsonPath). Empty: Age only.
    columns: tuple[tuple[str, str, str], ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def qualified_plural(self) -> str:
        """``deployments.apps``, the name kubectl prints before ``/name`` for grouped kinds."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def qualified_kind(self) -> str:
        """``NetworkPolicy.projectcalico.org``: the kind with its group, kubectl's way of naming one of several
        kinds of one name."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def keyed_collection(self) -> bool:
        """Its objects have a ClusterState collection of their own (not shared by kind)."""
        return bool(self.collection) and self.collection not in (WORKLOADS, OTHERS)


KINDS: tuple[KindInfo, ...] = (
    KindInfo("Namespace", "", "v1", "namespaces", False, ("ns",), collection="namespaces",
             view="model.objects:Namespace"),
    KindInfo("Node", "", "v1", "nodes", False, ("no",), collection="nodes", view="model.objects:Node"),
    KindInfo("Pod", "", "v1", "pods", True, ("po",), in_all=True, collection="pods", view="model.objects:Pod"),
    KindInfo("Service", "", "v1", "services", True, ("svc",), in_all=True, collection="services",
             view="model.objects:Service"),
    KindInfo("Endpoints", "", "v1", "endpoints", True, ("ep",), collection=WORKLOADS),
    KindInfo("Deployment", "apps", "v1", "deployments", True, ("deploy",), in_all=True, collection=WORKLOADS),
    KindInfo("ReplicaSet", "apps", "v1", "replicasets", True, ("rs",), in_all=True, collection=WORKLOADS),
    KindInfo("ReplicationController", "", "v1", "replicationcontrollers", True, ("rc",), in_all=True,
             collection=WORKLOADS),
    KindInfo("StatefulSet", "apps", "v1", "statefulsets", True, ("sts",), in_all=True, collection=WORKLOADS),
    KindInfo("DaemonSet", "apps", "v1", "daemonsets", True, ("ds",), in_all=True, collection=WORKLOADS),
    KindInfo("Job", "batch", "v1", "jobs", True, (), in_all=True, collection=WORKLOADS),
    KindInfo("CronJob", "batch", "v1", "cronjobs", True, ("cj",), in_all=True),
    KindInfo("EndpointSlice", "discovery.k8s.io", "v1", "endpointslices", True, (), collection="endpoint_slices",
             view="model.objects:EndpointSlice"),
    KindInfo("Ingress", "networking.k8s.io", "v1", "ingresses", True, ("ing",), collection="ingresses",
             view="model.objects:Ingress"),
    KindInfo("IngressClass", "networking.k8s.io", "v1", "ingressclasses", False, (), collection="ingress_classes",
             view="model.objects:IngressClass"),
    KindInfo("NetworkPolicy", "networking.k8s.io", "v1", "networkpolicies", True, ("netpol",),
             collection="network_policies", view="model.objects:NetworkPolicy"),
    KindInfo("ServiceCIDR", "networking.k8s.io", "v1", "servicecidrs", False, ()),
    # Storage: a pod mounting a claim waits for it (the scheduler's VolumeBinding), and kind's local-path
    # provisioner makes a claim's volume on its first consumer's node (cluster/storage.py).
    KindInfo("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", True, ("pvc",)),
    KindInfo("PersistentVolume", "", "v1", "persistentvolumes", False, ("pv",)),
    KindInfo("StorageClass", "storage.k8s.io", "v1", "storageclasses", False, ("sc",)),
    KindInfo("IPAddress", "networking.k8s.io", "v1", "ipaddresses", False, ("ip",)),
    KindInfo("CiliumNetworkPolicy", "cilium.io", "v2", "ciliumnetworkpolicies", True, ("cnp", "ciliumnp"),
             cni=CILIUM, role=POLICY),
    # Cluster-scoped (cilium/cilium pkg/k8s/apis/cilium.io/v2 CiliumClusterwideNetworkPolicy; short names ccnp).
    KindInfo("CiliumClusterwideNetworkPolicy", "cilium.io", "v2", "ciliumclusterwidenetworkpolicies", False,
             ("ccnp",), cni=CILIUM, role=POLICY),
    # The CRDs of the custom kinds (model.apis): served live, knetsim's own from the start; one in the input
    # or applied by a client takes over its kind.
    KindInfo("CustomResourceDefinition", "apiextensions.k8s.io", "v1", "customresourcedefinitions", False,
             ("crd", "crds"), simulated=False),
    # Read and kept (an Ingress's TLS Secret, a Pod's ConfigMap) but not simulated.
    KindInfo("ConfigMap", "", "v1", "configmaps", True, ("cm",), simulated=False),
    KindInfo("Secret", "", "v1", "secrets", True, (), simulated=False),
    # Read: a pod runs as one, and the API server refuses a pod whose account does not exist.
    KindInfo("ServiceAccount", "", "v1", "serviceaccounts", True, ("sa",)),
    # Envoy Gateway's policies (its CRDs come with it): the built-in Gateway controller is Envoy Gateway's,
    # and knetsim.gateway applies them to the requests its Gateways route.
    KindInfo("SecurityPolicy", "gateway.envoyproxy.io", "v1alpha1", "securitypolicies", True, ("sp",)),
    KindInfo("BackendTrafficPolicy", "gateway.envoyproxy.io", "v1alpha1", "backendtrafficpolicies", True, ("btp",)),
    KindInfo("ClientTrafficPolicy", "gateway.envoyproxy.io", "v1alpha1", "clienttrafficpolicies", True, ("ctp",)),
)


def _calico_kinds() -> tuple[KindInfo, ...]:
    """Calico's policy kinds, at ``projectcalico.org/v3`` as calico-apiserver serves them and at
    ``crd.projectcalico.org/v1``, the CRDs that store them (a cluster without calico-apiserver returns those).
    Short names: calico-apiserver's REST storage (projectcalico/calico
    apiserver/pkg/registry/projectcalico/rest/storage_calico.go); the v1 CRDs declare none
    (libcalico-go/config/crd/crd.projectcalico.org_*.yaml)."""
    rows = (  # kind, plural, namespaced, role, calico-apiserver's short names
        ("NetworkPolicy", "networkpolicies", True, POLICY, ("cnp", "caliconetworkpolicy", "caliconetworkpolicies")),
        ("GlobalNetworkPolicy", "globalnetworkpolicies", False, POLICY, ("gnp", "cgnp", "calicoglobalnetworkpolicies")),
        ("StagedNetworkPolicy", "stagednetworkpolicies", True, STAGED, ()),
        ("StagedGlobalNetworkPolicy", "stagedglobalnetworkpolicies", False, STAGED, ()),
        ("StagedKubernetesNetworkPolicy", "stagedkubernetesnetworkpolicies", True, STAGED, ()),
        ("NetworkSet", "networksets", True, SET, ("netsets",)),
        ("GlobalNetworkSet", "globalnetworksets", False, SET, ()),
        ("Tier", "tiers", False, TIER, ()),
    )
    return tuple(KindInfo(kind, group, version, plural, namespaced, short if group == "projectcalico.org" else (),
                          cni=CALICO, role=role)
                 for group, version in (("projectcalico.org", "v3"), ("crd.projectcalico.org", "v1"))
                 for kind, plural, namespaced, role, short in rows)


# Antrea's policy CRDs (antrea-io/antrea build/charts/antrea/crds/*.yaml): short names and printer columns as they
# declare them, at the crd.antrea.io version Antrea stores.
_ANTREA_POLICY_COLUMNS = (("Tier", "string", ".spec.tier"), ("Priority", "number", ".spec.priority"),
                          ("Desired Nodes", "number", ".status.desiredNodesRealized"),
                          ("Current Nodes", "number", ".status.currentNodesRealized"))
ANTREA_KINDS: tuple[KindInfo, ...] = (
    KindInfo("ClusterNetworkPolicy", "crd.antrea.io", "v1beta1", "clusternetworkpolicies", False, ("acnp",),
             cni=ANTREA, role=POLICY, columns=_ANTREA_POLICY_COLUMNS),
    KindInfo("NetworkPolicy", "crd.antrea.io", "v1beta1", "networkpolicies", True, ("anp",),
             cni=ANTREA, role=POLICY, columns=_ANTREA_POLICY_COLUMNS),
    KindInfo("Tier", "crd.antrea.io", "v1beta1", "tiers", False, ("tr",), cni=ANTREA, role=TIER,
             columns=(("Priority", "integer", ".spec.priority"),)),
    KindInfo("ClusterGroup", "crd.antrea.io", "v1beta1", "clustergroups", False, ("cg",), cni=ANTREA, role=GROUP),
    KindInfo("Group", "crd.antrea.io", "v1beta1", "groups", True, ("grp",), cni=ANTREA, role=GROUP),
)
# The kinds a CNI brings besides Cilium's (which are rows of KINDS: their names are no Kubernetes kind's). Their
# names are not unique (Calico's and Antrea's NetworkPolicy, Tier): they are found by (group, kind), never in
# BY_KIND, which keeps answering a bare name with the Kubernetes or knetsim kind.
CNI_KINDS: tuple[KindInfo, ...] = (*_calico_kinds(), *ANTREA_KINDS)
# A group whose objects are another group's in storage form: a cluster that serves both returns each object twice
# (calico-apiserver keeps its projectcalico.org/v3 objects in the crd.projectcalico.org/v1 CRDs), so a reader of
# a cluster reads the storage group only where the other is not served.
STORAGE_GROUP_OF: dict[str, str] = {"crd.projectcalico.org": "projectcalico.org"}

# Envoy Gateway's policies (the rows of its group above), read by knetsim.gateway from ClusterState.others.
ENVOY_GATEWAY_POLICY_KINDS: tuple[str, ...] = tuple(k.kind for k in KINDS if k.group == "gateway.envoyproxy.io")

# Derived from the catalog, by group: the custom kinds knetsim.policy's tiers read (from ClusterState.others,
# where the build keeps them), and the Gateway API kinds knetsim.gateway simulates (routes: the kinds that
# attach to Gateways), named here so that a reader without Gateway API objects need not load their model.
CLUSTER_POLICY_KINDS: frozenset[str] = frozenset(d.kind for d in DEFINITIONS if d.group == POLICY_GROUP)
GATEWAY_API_KINDS: frozenset[str] = frozenset(d.kind for d in DEFINITIONS if d.group == GATEWAY_GROUP)
ROUTE_KINDS: tuple[str, ...] = tuple(d.kind for d in DEFINITIONS if d.route)
# The core kinds knetsim.gateway reads as they are kept (certificates, CA bundles).
GATEWAY_READ_AS_KEPT: frozenset[str] = frozenset({"ConfigMap", "Secret"})
# Custom kinds knetsim simulates (the other custom kinds it defines are served and validated, not simulated).
SIMULATED_CRD_KINDS: frozenset[str] = GATEWAY_API_KINDS | CLUSTER_POLICY_KINDS


def _crd_kinds() -> tuple[KindInfo, ...]:
    """The custom kinds knetsim defines (model.apis.catalog: names only, no schema built), at their storage
    version, with the other versions they are served at."""
    out = []
    for d in DEFINITIONS:
        storage = d.storage.name
        out.append(KindInfo(d.kind, d.group, storage, d.plural, d.namespaced, d.short_names,
                            simulated=d.kind in SIMULATED_CRD_KINDS, in_all="all" in d.categories, crd=True,
                            other_versions=tuple(v.name for v in d.served if v.name != storage),
                            collection=d.collection, view=d.view))
    return tuple(out)


class DuplicateKind(ValueError):
    """A kind declared twice, or two kinds claiming one collection of their own."""


def index(kinds: Iterable[KindInfo]) -> dict[str, KindInfo]:
    """The kinds by name; a second declaration of a kind, or a second kind in a keyed collection, is an error
    (the lists derived from the rows would silently keep one of them)."""
    out: dict[str, KindInfo] = {}
    owners: dict[str, str] = {}
    for info in kinds:
        if info.kind in out:
            raise DuplicateKind(f"kind {info.kind} is declared twice (model/kinds.py KINDS, model/apis/catalog.py)")
        if info.keyed_collection:
            if info.collection in owners:
                raise DuplicateKind(f"kinds {owners[info.collection]} and {info.kind} both declare the ClusterState "
                                    f"collection {info.collection!r}")
            owners[info.collection] = info.kind
        out[info.kind] = info
    return out


def index_by_group_kind(kinds: Iterable[KindInfo]) -> dict[tuple[str, str], KindInfo]:
    """The kinds by (group, kind); one declared twice is an error."""
    out: dict[tuple[str, str], KindInfo] = {}
    for info in kinds:
        if (info.group, info.kind) in out:
            raise DuplicateKind(f"kind {info.kind} of group {info.group or 'core'} is declared twice (model/kinds.py "
                                "KINDS, CNI_KINDS, model/apis/catalog.py)")
        out[(info.group, info.kind)] = info
    return out


KINDS = (*KINDS, *_crd_kinds())
BY_KIND = index(KINDS)
# Every kind knetsim knows, a CNI's included, by (group, kind).
BY_GROUP_KIND = index_by_group_kind((*KINDS, *CNI_KINDS))
# The API groups of each CNI's kinds, derived from the rows.
CNI_GROUPS: dict[str, frozenset[str]] = {
    cni: frozenset(k.group for k in BY_GROUP_KIND.values() if k.cni == cni) for cni in (CALICO, CILIUM, ANTREA)}
# Every CNI's groups together: where a kind is the CNI's rather than Kubernetes' whatever its name.
ALL_CNI_GROUPS: frozenset[str] = frozenset().union(*CNI_GROUPS.values())


def group_of(api_version: object) -> str:
    """``projectcalico.org`` of ``projectcalico.org/v3``; "" for the core group (``v1``)."""
    return str(api_version or "").rpartition("/")[0]


def info_for(api_version: object, kind: str) -> KindInfo | None:
    """The row of ``kind`` in ``api_version``'s group: Calico's NetworkPolicy for ``projectcalico.org/v3``,
    Kubernetes' for ``networking.k8s.io/v1``; None for a kind knetsim does not know in that group."""
    return BY_GROUP_KIND.get((group_of(api_version), kind))


def stored_kind(kind: str, api_version: object) -> str:
    """The name an object's kind is kept under (ClusterState's others, the live store's keys): ``kind`` itself, or
    ``Kind.group`` (kubectl's qualified form) for a CNI's kind that BY_KIND does not answer (Calico's, Antrea's:
    two groups hold each of their names) and for a kind BY_KIND names in another group. A
    ``projectcalico.org/v3`` NetworkPolicy or a ``crd.antrea.io`` ClusterNetworkPolicy is not the Kubernetes kind
    of the same name: keyed by name alone it would be read (and enforced) as one."""
    group = group_of(api_version)
    info = BY_KIND.get(kind)
    row = BY_GROUP_KIND.get((group, kind))
    if row is not None and row.cni and info is not row:
        return row.qualified_kind
    if info is None or info.group == group or not group:
        return kind
    return f"{kind}.{group}"

_VIEWS: dict[str, Callable[..., Any] | None] = {}


def view_of(kind: str) -> Callable[..., Any] | None:
    """The parser of ``kind``'s typed view (``parser(raw, source)``), its module imported on first use; None for
    a kind without one (a generic ``Object``)."""
    if kind in _VIEWS:
        return _VIEWS[kind]
    info = BY_KIND.get(kind)
    parser: Callable[..., Any] | None = None
    if info is not None and info.view:
        module, _, name = info.view.partition(":")
        cls = getattr(importlib.import_module(f"knetsim.{module}"), name)
        parser = partial(cls.parse_kind, kind) if hasattr(cls, "parse_kind") else cls.parse
    _VIEWS[kind] = parser
    return parser


_ALIASES: dict[str, KindInfo] = {}
for _k in KINDS:
    for _alias in (_k.kind.lower(), _k.plural, _k.singular, _k.qualified_plural, *_k.short_names):
        # First come, first served: built-in kinds, then CRDs; `cnp` stays CiliumNetworkPolicy's, as
        # kubectl's discovery order (cilium.io before policy.networking.k8s.io) resolves it.
        _ALIASES.setdefault(_alias, _k)


def names_of(info: KindInfo) -> frozenset[str]:
    """What a user may call ``info`` on a command line: its qualified names (``globalnetworkpolicies.
    projectcalico.org``, ``globalnetworkpolicy.projectcalico.org``), and those of its plain names (kind, plural,
    singular, short names) that no kind of ``KINDS`` claims first (``clusternetworkpolicies`` stays the
    network-policy-api kind's, ``acnp`` is Antrea's)."""
    qualified = {info.qualified_plural, f"{info.singular}.{info.group}"} if info.group else set()
    plain = {info.kind.lower(), info.plural, info.singular, *info.short_names}
    return frozenset(qualified | {n for n in plain if _ALIASES.get(n, info) is info})


def resolve_kind(name: str) -> KindInfo | None:
    """What ``kubectl get NAME`` would resolve: plural, singular, short name, or ``plural.group``."""
    return _ALIASES.get(name.lower())

# Built-in kinds without a namespace (the OpenAPI schemas do not say; the API server's REST mapping does).
CLUSTER_SCOPED_BUILTINS = frozenset({
    "APIService", "CertificateSigningRequest", "ClusterRole", "ClusterRoleBinding", "ComponentStatus",
    "CSIDriver", "CSINode", "CustomResourceDefinition", "DeviceClass", "FlowSchema", "IngressClass", "IPAddress",
    "MutatingWebhookConfiguration", "Namespace", "Node", "PersistentVolume", "PriorityClass",
    "PriorityLevelConfiguration", "ResourceSlice", "RuntimeClass", "SelfSubjectAccessReview", "SelfSubjectReview",
    "SelfSubjectRulesReview", "ServiceCIDR", "StorageClass", "SubjectAccessReview", "TokenReview",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration",
    "VolumeAttachment", "VolumeAttributesClass",
})
