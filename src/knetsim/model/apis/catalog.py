"""The custom kinds knetsim defines, by name: the CRD-level markers of each root type.

What kubebuilder writes as ``+kubebuilder:resource`` (plural, scope, short names, categories),
``+kubebuilder:subresource:status``, ``+kubebuilder:printcolumn``, ``+kubebuilder:storageversion``
and the deprecated/unserved versions lives here, in plain data, so that the kinds are known at
start-up (``model.kinds``, discovery) without building a schema. The schemas themselves are the
types in ``gateway_<version>`` and ``policy_<version>`` (the kind's class in the version's module),
built on first use.

The facts are those of Gateway API v1.6.1 (standard channel) and network-policy-api v0.2.0
(ClusterNetworkPolicy) / v0.1.8 (AdminNetworkPolicy, BaselineAdminNetworkPolicy): names, versions,
which version is stored, which are still served, the columns ``kubectl get`` prints.
"""

from __future__ import annotations

GATEWAY_GROUP = "gateway.networking.k8s.io"
POLICY_GROUP = "policy.networking.k8s.io"


# Plain classes, not dataclasses: this module is imported at start-up by every command (model.kinds), and
# generating dataclass methods for a handful of records costs more than the rest of the module.


class Column:
    __slots__ = ("json_path", "name", "priority", "type")

    def __init__(self, name: str, type: str, json_path: str, priority: int = 0) -> None:
        self.name, self.type, self.json_path, self.priority = name, type, json_path, priority

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"jsonPath": self.json_path, "name": self.name, "type": self.type}
        if self.priority:
            out["priority"] = self.priority
        return out


class Version:
    """One version of a kind: whether it is served and stored, its status subresource, its printer columns."""

    __slots__ = ("columns", "deprecation", "name", "served", "status", "storage")

    def __init__(self, name: str, *, served: bool = True, storage: bool = False, status: bool = True,
                 columns: tuple[Column, ...] | None = None, deprecation: str = "") -> None:
        self.name, self.served, self.storage, self.status = name, served, storage, status
        self.columns = columns
        self.deprecation = deprecation  # the warning a client gets for a deprecated version


class Bundle:
    """A release of an API group's definitions: the annotations its CRDs carry, the modules they live in."""

    __slots__ = ("approval", "group", "module", "version")

    def __init__(self, group: str, module: str, version: str, *, approval: str = "") -> None:
        self.group = group
        self.module = module  # the version modules are model/apis/<module>_<version>.py
        self.version = version  # the bundle version the CRDs are annotated with
        self.approval = approval  # api-approved.kubernetes.io: *.k8s.io groups need an approved API review

    def annotations(self, channel: str = "standard") -> dict[str, str]:
        prefix = self.group
        out = {f"{prefix}/bundle-version": self.version, f"{prefix}/channel": channel}
        if self.approval:
            out["api-approved.kubernetes.io"] = self.approval
        return out


class Definition:
    """One CustomResourceDefinition: names, scope and versions (alphabetical, as the CRD lists them), and where
    the simulation keeps its objects: ``collection`` (a ClusterState attribute; none: kept as read, in
    ``others``), ``view`` (its typed view, ``module:Class`` under knetsim, imported on first use; see
    ``model.kinds.KindInfo``) and ``route`` (a Gateway API route kind: it attaches to Gateways by parentRefs)."""

    __slots__ = ("bundle", "categories", "collection", "kind", "labels", "namespaced", "plural", "route",
                 "short_names", "versions", "view")

    def __init__(self, bundle: Bundle, kind: str, plural: str, versions: tuple[Version, ...], *,
                 namespaced: bool = True, short_names: tuple[str, ...] = (), categories: tuple[str, ...] = (),
                 labels: tuple[tuple[str, str], ...] = (), collection: str = "", view: str = "",
                 route: bool = False) -> None:
        self.bundle, self.kind, self.plural, self.versions = bundle, kind, plural, versions
        self.namespaced, self.short_names, self.categories, self.labels = namespaced, short_names, categories, labels
        self.collection, self.view, self.route = collection, view, route

    @property
    def group(self) -> str:
        return self.bundle.group

    @property
    def name(self) -> str:
        """The CRD's metadata.name: ``httproutes.gateway.networking.k8s.io``."""
        return f"{self.plural}.{self.group}"

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def storage(self) -> Version:
        return next(v for v in self.versions if v.storage)

    @property
    def served(self) -> tuple[Version, ...]:
        return tuple(v for v in self.versions if v.served)

    def module(self, version: str) -> str:
        return f"{__package__}.{self.bundle.module}_{version}"


GATEWAY_API = Bundle(GATEWAY_GROUP, "gateway", "v1.6.1",
                     approval="https://github.com/kubernetes-sigs/gateway-api/pull/4530")
# The v0.1.8 release's standard CRDs still carry v0.1.7 in their bundle-version annotation.
NETWORK_POLICY_API_V1ALPHA1 = Bundle(POLICY_GROUP, "policy", "v0.1.7",
                                     approval="https://github.com/kubernetes-sigs/network-policy-api/pull/300")
NETWORK_POLICY_API = Bundle(POLICY_GROUP, "policy", "v0.2.0",
                            approval="https://github.com/kubernetes-sigs/network-policy-api/pull/347")

AGE = Column("Age", "date", ".metadata.creationTimestamp")
_AGE_ONLY = (AGE,)
_HOSTNAMES = (Column("Hostnames", "string", ".spec.hostnames"), AGE)
_GATEWAY_CLASS = (Column("Controller", "string", ".spec.controllerName"),
                  Column("Accepted", "string", '.status.conditions[?(@.type=="Accepted")].status'), AGE,
                  Column("Description", "string", ".spec.description", priority=1))
_GATEWAY = (Column("Class", "string", ".spec.gatewayClassName"),
            Column("Address", "string", ".status.addresses[*].value"),
            Column("Programmed", "string", '.status.conditions[?(@.type=="Programmed")].status'), AGE)
_LISTENER_SET = (Column("Accepted", "string", '.status.conditions[?(@.type=="Accepted")].status'),
                 Column("Programmed", "string", '.status.conditions[?(@.type=="Programmed")].status'), AGE)


def _retired(version: str, kind: str, columns: tuple[Column, ...] | None = _AGE_ONLY) -> Version:
    """A version still in the CRD (so stored objects can be read back) but no longer served."""
    return Version(version, served=False, columns=columns,
                   deprecation=f"The {version} version of {kind} has been deprecated and will be removed in a "
                               "future release of the API. Please upgrade to v1.")


DEFINITIONS: tuple[Definition, ...] = (
    Definition(GATEWAY_API, "BackendTLSPolicy", "backendtlspolicies",
               (Version("v1", storage=True, columns=_AGE_ONLY), _retired("v1alpha3", "BackendTLSPolicy", None)),
               short_names=("btlspolicy",), categories=("gateway-api",),
               collection="backend_tls_policies", view="model.gatewayapi:BackendTLSPolicy",
               labels=(("gateway.networking.k8s.io/policy", "Direct"),)),
    Definition(GATEWAY_API, "GatewayClass", "gatewayclasses",
               (Version("v1", storage=True, columns=_GATEWAY_CLASS), Version("v1beta1", columns=_GATEWAY_CLASS)),
               namespaced=False, short_names=("gc",), categories=("gateway-api",),
               collection="gateway_classes", view="model.gatewayapi:GatewayClass"),
    Definition(GATEWAY_API, "Gateway", "gateways",
               (Version("v1", storage=True, columns=_GATEWAY), Version("v1beta1", columns=_GATEWAY)),
               short_names=("gtw",), categories=("gateway-api",),
               collection="gateways", view="model.gatewayapi:Gateway"),
    Definition(GATEWAY_API, "GRPCRoute", "grpcroutes", (Version("v1", storage=True, columns=_HOSTNAMES),),
               categories=("gateway-api",),
               collection="grpc_routes", view="model.gatewayapi:GRPCRoute", route=True),
    Definition(GATEWAY_API, "HTTPRoute", "httproutes",
               (Version("v1", storage=True, columns=_HOSTNAMES), Version("v1beta1", columns=_HOSTNAMES)),
               categories=("gateway-api",),
               collection="http_routes", view="model.gatewayapi:HTTPRoute", route=True),
    Definition(GATEWAY_API, "ListenerSet", "listenersets", (Version("v1", storage=True, columns=_LISTENER_SET),),
               short_names=("lset",), categories=("gateway-api",),
               collection="listener_sets", view="model.gatewayapi:ListenerSet"),
    # v1beta1 is still the stored version of ReferenceGrant; v1 is served beside it.
    Definition(GATEWAY_API, "ReferenceGrant", "referencegrants",
               (Version("v1", status=False, columns=_AGE_ONLY),
                Version("v1beta1", storage=True, status=False, columns=_AGE_ONLY)),
               short_names=("refgrant",), categories=("gateway-api",),
               collection="reference_grants", view="model.gatewayapi:ReferenceGrant"),
    Definition(GATEWAY_API, "TCPRoute", "tcproutes",
               (Version("v1", storage=True, columns=_AGE_ONLY), _retired("v1alpha2", "TCPRoute")),
               categories=("gateway-api",),
               collection="tcp_routes", view="model.gatewayapi:StreamRoute", route=True),
    Definition(GATEWAY_API, "TLSRoute", "tlsroutes",
               (Version("v1", storage=True, columns=_AGE_ONLY), _retired("v1alpha2", "TLSRoute"),
                _retired("v1alpha3", "TLSRoute")),
               categories=("gateway-api",),
               collection="tls_routes", view="model.gatewayapi:StreamRoute", route=True),
    Definition(GATEWAY_API, "UDPRoute", "udproutes",
               (Version("v1", storage=True, columns=_AGE_ONLY), _retired("v1alpha2", "UDPRoute")),
               categories=("gateway-api",),
               collection="udp_routes", view="model.gatewayapi:StreamRoute", route=True),
    Definition(NETWORK_POLICY_API_V1ALPHA1, "AdminNetworkPolicy", "adminnetworkpolicies",
               (Version("v1alpha1", storage=True, columns=(Column("Priority", "string", ".spec.priority"), AGE)),),
               namespaced=False, short_names=("anp",)),
    Definition(NETWORK_POLICY_API_V1ALPHA1, "BaselineAdminNetworkPolicy", "baselineadminnetworkpolicies",
               (Version("v1alpha1", storage=True, columns=_AGE_ONLY),), namespaced=False, short_names=("banp",)),
    Definition(NETWORK_POLICY_API, "ClusterNetworkPolicy", "clusternetworkpolicies",
               (Version("v1alpha2", storage=True, columns=(Column("Tier", "string", ".spec.tier"),
                                                           Column("Priority", "string", ".spec.priority"), AGE)),),
               namespaced=False, short_names=("cnp",)),
)

GROUPS: frozenset[str] = frozenset(d.group for d in DEFINITIONS)
BY_KIND: dict[tuple[str, str], Definition] = {(d.group, d.kind): d for d in DEFINITIONS}
