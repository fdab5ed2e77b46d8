"""The kinds knetsim knows: API group/version, resource names and kubectl short names."""

from __future__ import annotations

from dataclasses import dataclass


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


KINDS: tuple[KindInfo, ...] = (
    KindInfo("Namespace", "", "v1", "namespaces", False, ("ns",)),
    KindInfo("Node", "", "v1", "nodes", False, ("no",)),
    KindInfo("Pod", "", "v1", "pods", True, ("po",), in_all=True),
    KindInfo("Service", "", "v1", "services", True, ("svc",), in_all=True),
    KindInfo("Endpoints", "", "v1", "endpoints", True, ("ep",)),
    KindInfo("Deployment", "apps", "v1", "deployments", True, ("deploy",), in_all=True),
    KindInfo("ReplicaSet", "apps", "v1", "replicasets", True, ("rs",), in_all=True),
    KindInfo("StatefulSet", "apps", "v1", "statefulsets", True, ("sts",), in_all=True),
    KindInfo("DaemonSet", "apps", "v1", "daemonsets", True, ("ds",), in_all=True),
    KindInfo("Job", "batch", "v1", "jobs", True, (), in_all=True),
    KindInfo("CronJob", "batch", "v1", "cronjobs", True, ("cj",), in_all=True),
    KindInfo("EndpointSlice", "discovery.k8s.io", "v1", "endpointslices", True, ()),
    KindInfo("Ingress", "networking.k8s.io", "v1", "ingresses", True, ("ing",)),
    KindInfo("IngressClass", "networking.k8s.io", "v1", "ingressclasses", False, ()),
    KindInfo("NetworkPolicy", "networking.k8s.io", "v1", "networkpolicies", True, ("netpol",)),
    KindInfo("ServiceCIDR", "networking.k8s.io", "v1", "servicecidrs", False, ()),
    KindInfo("IPAddress", "networking.k8s.io", "v1", "ipaddresses", False, ("ip",)),
    KindInfo("CiliumNetworkPolicy", "cilium.io", "v2", "ciliumnetworkpolicies", True, ("cnp", "ciliumnp")),
    # The CRDs of the custom kinds (model.apis): served live, knetsim's own from the start; one in the input
    # or applied by a client takes over its kind.
    KindInfo("CustomResourceDefinition", "apiextensions.k8s.io", "v1", "customresourcedefinitions", False,
             ("crd", "crds"), simulated=False),
    # Read and kept (an Ingress's TLS Secret, a Pod's ConfigMap) but not simulated.
    KindInfo("ConfigMap", "", "v1", "configmaps", True, ("cm",), simulated=False),
    KindInfo("Secret", "", "v1", "secrets", True, (), simulated=False),
    KindInfo("ServiceAccount", "", "v1", "serviceaccounts", True, ("sa",), simulated=False),
    # Envoy Gateway's policies (its CRDs come with it): the built-in Gateway controller is Envoy Gateway's,
    # and knetsim.gateway applies them to the requests its Gateways route.
    KindInfo("SecurityPolicy", "gateway.envoyproxy.io", "v1alpha1", "securitypolicies", True, ("sp",)),
    KindInfo("BackendTrafficPolicy", "gateway.envoyproxy.io", "v1alpha1", "backendtrafficpolicies", True, ("btp",)),
    KindInfo("ClientTrafficPolicy", "gateway.envoyproxy.io", "v1alpha1", "clienttrafficpolicies", True, ("ctp",)),
)

# Envoy Gateway's policies, read by knetsim.gateway from ClusterState.others.
ENVOY_GATEWAY_POLICY_KINDS: tuple[str, ...] = ("SecurityPolicy", "BackendTrafficPolicy", "ClientTrafficPolicy")

# The custom kinds knetsim.policy's tiers read (from ClusterState.others, where the build keeps them).
CLUSTER_POLICY_KINDS: frozenset[str] = frozenset({"ClusterNetworkPolicy", "AdminNetworkPolicy",
                                                  "BaselineAdminNetworkPolicy"})
# The Gateway API kinds knetsim.gateway simulates (model/gatewayapi.py's KINDS, named here so that a reader
# without Gateway API objects need not load that module; a test keeps them equal), and the core kinds it reads
# as they are kept (certificates, CA bundles).
GATEWAY_API_KINDS: frozenset[str] = frozenset({
    "GatewayClass", "Gateway", "HTTPRoute", "ReferenceGrant", "GRPCRoute", "TLSRoute", "TCPRoute", "UDPRoute",
    "ListenerSet", "BackendTLSPolicy"})
GATEWAY_READ_AS_KEPT: frozenset[str] = frozenset({"ConfigMap", "Secret"})
# Custom kinds knetsim simulates (the other custom kinds it defines are served and validated, not simulated).
SIMULATED_CRD_KINDS: frozenset[str] = GATEWAY_API_KINDS | CLUSTER_POLICY_KINDS


def _crd_kinds() -> tuple[KindInfo, ...]:
    """The custom kinds knetsim defines (model.apis.catalog: names only, no schema built), at their storage
    version, with the other versions they are served at."""
    from .apis.catalog import DEFINITIONS

    out = []
    for d in DEFINITIONS:
        storage = d.storage.name
        out.append(KindInfo(d.kind, d.group, storage, d.plural, d.namespaced, d.short_names,
                            simulated=d.kind in SIMULATED_CRD_KINDS, in_all="all" in d.categories, crd=True,
                            other_versions=tuple(v.name for v in d.served if v.name != storage)))
    return tuple(out)


KINDS = (*KINDS, *_crd_kinds())
BY_KIND = {k.kind: k for k in KINDS}

_ALIASES: dict[str, KindInfo] = {}
for _k in KINDS:
    for _alias in (_k.kind.lower(), _k.plural, _k.singular, _k.qualified_plural, *_k.short_names):
        # First come, first served: built-in kinds, then CRDs; `cnp` stays CiliumNetworkPolicy's, as
        # kubectl's discovery order (cilium.io before policy.networking.k8s.io) resolves it.
        _ALIASES.setdefault(_alias, _k)


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
