"""The kinds knetsim knows: API group/version, resource names and kubectl short names."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


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
    # A custom kind (its CRD vendored under data/crds/), and the other versions it is served at.
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
    # Gateway API, standard channel: hand-registered while its CRDs are not vendored under data/crds/
    # (then _crd_kinds() derives them and these lines go; SIMULATED_CRD_KINDS must name the ten).
    KindInfo("GatewayClass", "gateway.networking.k8s.io", "v1", "gatewayclasses", False, ("gc",),
             other_versions=("v1beta1",)),
    KindInfo("Gateway", "gateway.networking.k8s.io", "v1", "gateways", True, ("gtw",), other_versions=("v1beta1",)),
    KindInfo("HTTPRoute", "gateway.networking.k8s.io", "v1", "httproutes", True, (), other_versions=("v1beta1",)),
    KindInfo("ReferenceGrant", "gateway.networking.k8s.io", "v1", "referencegrants", True, ("refgrant",),
             other_versions=("v1beta1",)),
    KindInfo("GRPCRoute", "gateway.networking.k8s.io", "v1", "grpcroutes", True, ()),
    KindInfo("TLSRoute", "gateway.networking.k8s.io", "v1", "tlsroutes", True, ()),
    KindInfo("TCPRoute", "gateway.networking.k8s.io", "v1", "tcproutes", True, ()),
    KindInfo("UDPRoute", "gateway.networking.k8s.io", "v1", "udproutes", True, ()),
    KindInfo("ListenerSet", "gateway.networking.k8s.io", "v1", "listenersets", True, ("lset",)),
    KindInfo("BackendTLSPolicy", "gateway.networking.k8s.io", "v1", "backendtlspolicies", True, ("btlspolicy",)),
    KindInfo("CiliumNetworkPolicy", "cilium.io", "v2", "ciliumnetworkpolicies", True, ("cnp", "ciliumnp")),
    # Read and kept (an Ingress's TLS Secret, a Pod's ConfigMap) but not simulated.
    KindInfo("ConfigMap", "", "v1", "configmaps", True, ("cm",), simulated=False),
    KindInfo("Secret", "", "v1", "secrets", True, (), simulated=False),
    KindInfo("ServiceAccount", "", "v1", "serviceaccounts", True, ("sa",), simulated=False),
)

# Custom kinds knetsim simulates (the rest of the vendored CRDs are served and validated, not simulated).
SIMULATED_CRD_KINDS: frozenset[str] = frozenset(
    {"ClusterNetworkPolicy", "AdminNetworkPolicy", "BaselineAdminNetworkPolicy"})  # knetsim.policy's tiers


def _crd_kinds() -> tuple[KindInfo, ...]:
    """The vendored CRDs' kinds, at their storage version, from data/crds/index.json (no YAML parsed)."""
    path = Path(__file__).resolve().parent.parent / "data" / "crds" / "index.json"
    out = []
    for crd in json.loads(path.read_text()) if path.exists() else []:
        versions = [v["name"] for v in crd["versions"]]
        storage = next((v["name"] for v in crd["versions"] if v["storage"]), versions[0])
        out.append(KindInfo(crd["kind"], crd["group"], storage, crd["plural"], crd["scope"] == "Namespaced",
                            tuple(crd["shortNames"]), simulated=crd["kind"] in SIMULATED_CRD_KINDS,
                            in_all="all" in crd["categories"], crd=True,
                            other_versions=tuple(v for v in versions if v != storage)))
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
