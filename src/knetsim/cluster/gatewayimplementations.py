"""Gateway API implementations as data: one declared profile per implementation a user may run.

The simulated Gateway controller is one translator; what differs from one implementation to the next is
declared here and read by everyone (``cluster/gatewayinfra.py`` for the infrastructure, ``gateway/translate.py``
for acceptance and the features a route may use, ``gateway/router.py`` for the replies the spec leaves open,
``knetsim gateway check`` and the table in docs/gateway.md). No module compares an implementation's name:
a GatewayClass is simulated as the profile whose ``controller_names`` holds its ``spec.controllerName``.

Each profile names the conformance report its features come from: the newest one published for it under
kubernetes-sigs/gateway-api ``conformance/reports/v1.6/`` (read 2026-12-06). ``features`` is the union of
the ``supportedFeatures`` of every conformance profile of that report (extended features: core ones are
not listed in a report), which is what the implementation writes into ``GatewayClass.status.supportedFeatures``.

The Gateway API CRDs knetsim serves are the standard channel's (``model/apis``), as on a cluster with the
standard install: a manifest using an experimental field (an HTTPRoute rule's ``retry``) is refused unless
the input brings the experimental CRD, which then takes over its kind. Where an implementation published a
report per channel (Cilium, whose operator reads the installed CRDs), the report simulated is that of the
channel in force (``channel_in_force``: the HTTPRoute CRD's ``gateway.networking.k8s.io/channel``, standard
unless the input brings another); an implementation with one report writes the same features whichever
channel is installed, so that report is simulated on both (its features that need an experimental field —
HTTPRouteRetry — are reachable only once the experimental CRD is in force).

The infrastructure and the replies come from each project's documentation and source (cited per profile).
Where a project leaves a name random (Kong Operator's ``generateName``), knetsim derives a stable suffix
from the Gateway, so two runs print the same objects.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

REPORTS = "kubernetes-sigs/gateway-api conformance/reports/v1.6/"


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


@dataclass(frozen=True, slots=True)
class Report:
    """One published conformance report: where it is and what it claims."""

    path: str  # under kubernetes-sigs/gateway-api conformance/reports/
    version: str  # the implementation's version the report is for
    api_version: str  # the Gateway API version tested
    channel: str  # standard | experimental
    date: str
    profiles: tuple[str, ...]  # conformance profiles that passed (GATEWAY-HTTP, ...)
    features: frozenset[str]  # every supportedFeatures entry of those profiles
    unsupported: frozenset[str] = frozenset()  # unsupportedFeatures of GATEWAY-HTTP, as listed
    # Route kinds whose provisional tests succeeded although no feature names them (Envoy Gateway's
    # TCPRoute and UDPRoute): served, so a route of that kind is not refused.
    provisional_kinds: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Reply:
    """The implementation's own answer where the spec leaves it open."""

    status: int
    body: str
    content_type: str = "text/plain"


@dataclass(frozen=True, slots=True)
class ControlPlaneObject:
    kind: str  # Deployment | Service | DaemonSet
    namespace: str
    name: str
    labels: tuple[tuple[str, str], ...]
    ports: tuple[tuple[str, int], ...] = ()
    image: str = ""
    service_type: str = ""  # "" → ClusterIP
    service_ports: tuple[tuple[str, int, int], ...] = ()  # (name, port, targetPort); () → the container ports


@dataclass(frozen=True, slots=True)
class Infrastructure:
    """What the implementation creates for a Gateway, and where.

    ``namespace`` None: the Gateway's own namespace. ``naming``: how the per-Gateway Deployment and
    Service are named (``hashed-envoy``: Envoy Gateway's ``envoy-<ns>-<name>-<sha256[:8]>``;
    ``gateway-class``: ``<gateway>-<class>``; ``gateway``: the Gateway's name; ``prefix``: ``prefix`` +
    the Gateway's name; ``kong``: ``dataplane-<gateway>-<5>`` and ``dataplane-ingress-<gateway>-<5>``;
    ``shared``: one proxy for every Gateway, the control plane's; ``none``: nothing in the cluster).
    """

    naming: str
    namespace: str | None
    prefix: str = ""
    deployment: bool = True  # a proxy Deployment per Gateway (Cilium: the node's cilium-envoy serves it)
    image: str = ""
    container: str = "proxy"
    shift_privileged_ports: bool = False  # a port below 1024 listens at +10000 inside the container
    extra_service_ports: tuple[tuple[str, int], ...] = ()
    extra_container_ports: tuple[tuple[str, int], ...] = ()
    labels: tuple[tuple[str, str], ...] = ()  # on every proxy object; {gateway}, {namespace}, {name} substituted
    owning_name_label: str = "gateway.networking.k8s.io/gateway-name"
    owning_namespace_label: str | None = None
    external_traffic_policy: str | None = None
    control_plane: tuple[ControlPlaneObject, ...] = ()
    # Where the proxy pods of a Gateway are when they are not per Gateway (Cilium: the cilium-envoy DaemonSet).
    shared_proxy_namespace: str | None = None
    shared_proxy_labels: tuple[tuple[str, str], ...] = ()
    source: str = ""


@dataclass(frozen=True, slots=True)
class Implementation:
    key: str  # what --implementation takes
    title: str
    controller_names: tuple[str, ...]
    reports: tuple[Report, ...]  # newest first; the first is the one simulated
    infrastructure: Infrastructure
    route_miss: Reply  # no listener or rule matches the request
    no_healthy_backend: Reply  # the chosen backend has no ready endpoint
    invalid_backend: Reply  # the chosen backendRef does not resolve
    proxy_word: str  # the program that answers, for messages ("Envoy", "NGINX")
    extension_kinds: tuple[str, ...] = ()  # group/Kind of its own API
    notes: tuple[str, ...] = field(default=())
    # Who writes its own replies on the wire (network/wire.py): "envoy" (lower-case fields, server: envoy),
    # "nginx" (nginx's own fields), "" (plain Date and Content-Length: a proxy knetsim has no wire model of).
    writer: str = "envoy"
    channel: str = "standard"  # the Gateway API channel in force, which picks the report (for_channel)

    @property
    def report(self) -> Report:
        """The report of the channel in force where the implementation published one for it, else its newest."""
        return next((r for r in self.reports if r.channel == self.channel), self.reports[0])

    def for_channel(self, channel: str) -> Implementation:
        """The profile as it runs with that channel's CRDs installed."""
        return self if channel == self.channel else replace(self, channel=channel)

    @property
    def features(self) -> frozenset[str]:
        return self.report.features

    def supports(self, feature: str) -> bool:
        return feature in self.report.features or feature in self.report.provisional_kinds

    def serves_kind(self, kind: str) -> bool:
        """Route kinds: HTTPRoute is core everywhere; GRPCRoute and TLSRoute need their profile; TCPRoute and
        UDPRoute are extended features."""
        if kind == "HTTPRoute":
            return True
        if kind == "GRPCRoute":
            return "GATEWAY-GRPC" in self.report.profiles
        if kind == "TLSRoute":
            return "GATEWAY-TLS" in self.report.profiles
        return self.supports(kind)


_ENVOY_MISS = Reply(404, "")
_ENVOY_NO_UPSTREAM = Reply(503, "no healthy upstream")
_ENVOY_INVALID = Reply(500, "")

# The Gateway-level extended features every implementation's GATEWAY-HTTP profile lists the same way.
_GW_ALL = ("GatewayAddressEmpty GatewayBackendClientCertificate GatewayFrontendClientCertificateValidation "
           "GatewayFrontendClientCertificateValidationInsecureFallback GatewayHTTPListenerIsolation "
           "GatewayHTTPSListenerDetectMisdirectedRequests GatewayInfrastructurePropagation GatewayPort8080 "
           "GatewayStaticAddresses ListenerSet")
_HTTP_ALL = ("BackendTLSPolicy BackendTLSPolicySANValidation HTTPRoute303RedirectStatusCode "
             "HTTPRoute307RedirectStatusCode HTTPRoute308RedirectStatusCode HTTPRouteBackendProtocolH2C "
             "HTTPRouteBackendProtocolWebSocket HTTPRouteBackendRequestHeaderModification HTTPRouteBackendTimeout "
             "HTTPRouteCORS HTTPRouteDestinationPortMatching HTTPRouteHostRewrite HTTPRouteMethodMatching "
             "HTTPRouteNamedRouteRule HTTPRouteParentRefPort HTTPRoutePathRedirect HTTPRoutePathRewrite "
             "HTTPRoutePortRedirect HTTPRouteQueryParamMatching HTTPRouteRequestMirror "
             "HTTPRouteRequestMultipleMirrors HTTPRouteRequestPercentageMirror HTTPRouteRequestTimeout "
             "HTTPRouteResponseHeaderModification HTTPRouteRetry HTTPRouteRetryBackendTimeout "
             "HTTPRouteRetryConnectionError HTTPRouteSchemeRedirect")
# Every extended HTTP feature a v1.6 report's GATEWAY-HTTP profile may list (the table's rows).
HTTP_FEATURES: tuple[str, ...] = tuple(sorted(_names(_GW_ALL + " " + _HTTP_ALL)))
_MESH = ("MeshHTTPRouteBackendRequestHeaderModification MeshHTTPRouteNamedRouteRule MeshHTTPRouteQueryParamMatching "
         "MeshHTTPRouteRedirectPath MeshHTTPRouteRedirectPort MeshHTTPRouteRewritePath MeshHTTPRouteSchemeRedirect")
_GATEWAY_LABEL = "gateway.networking.k8s.io/gateway-name"


def _report(path: str, version: str, api: str, channel: str, date: str, profiles: str, features: str,
            unsupported: str = "", provisional: str = "") -> Report:
    return Report(path, version, api, channel, date, tuple(profiles.split()), _names(features), _names(unsupported),
                  _names(provisional))


ENVOY_GATEWAY = Implementation(
    "envoy-gateway", "Envoy Gateway", ("gateway.envoyproxy.io/gatewayclass-controller",),
    (_report("v1.6/envoy-gateway/experimental-v1.9.0-default-report.yaml", "v1.9.0", "v1.6.1", "experimental",
             "2026-08-18", "GATEWAY-TLS GATEWAY-HTTP GATEWAY-GRPC",
             _GW_ALL.replace("GatewayHTTPSListenerDetectMisdirectedRequests ", "").replace(
                 "GatewayInfrastructurePropagation ", "") + " " + _HTTP_ALL
             + " TLSRouteModeMixed TLSRouteModeTerminate",
             "GatewayHTTPSListenerDetectMisdirectedRequests GatewayInfrastructurePropagation",
             provisional="TCPRoute UDPRoute"),),
    # envoyproxy/gateway internal/infrastructure/kubernetes/proxy (resource names, labels, port shift) and the
    # Helm chart (control plane): today's simulation, unchanged.
    Infrastructure("hashed-envoy", "envoy-gateway-system", image="docker.io/envoyproxy/envoy:distroless-v1.39.0",
                   container="envoy", shift_privileged_ports=True,
                   extra_container_ports=(("metrics", 19001), ("readiness", 19003)),
                   labels=(("app.kubernetes.io/name", "envoy"), ("app.kubernetes.io/component", "proxy"),
                           ("app.kubernetes.io/managed-by", "envoy-gateway")),
                   owning_name_label="gateway.envoyproxy.io/owning-gateway-name",
                   owning_namespace_label="gateway.envoyproxy.io/owning-gateway-namespace",
                   external_traffic_policy="Local",
                   control_plane=(ControlPlaneObject(
                       "Deployment", "envoy-gateway-system", "envoy-gateway",
                       (("control-plane", "envoy-gateway"), ("app.kubernetes.io/name", "gateway-helm"),
                        ("app.kubernetes.io/instance", "eg")),
                       (("grpc", 18000), ("ratelimit", 18001), ("wasm", 18002), ("metrics", 19001)),
                       "docker.io/envoyproxy/gateway:v1.9.0"),),
                   source="envoyproxy/gateway internal/infrastructure/kubernetes/proxy/resource.go; "
                          "charts/gateway-helm"),
    _ENVOY_MISS, _ENVOY_NO_UPSTREAM, _ENVOY_INVALID, "Envoy",
    ("gateway.envoyproxy.io/SecurityPolicy", "gateway.envoyproxy.io/BackendTrafficPolicy",
     "gateway.envoyproxy.io/ClientTrafficPolicy", "gateway.envoyproxy.io/EnvoyProxy",
     "gateway.envoyproxy.io/HTTPRouteFilter", "gateway.envoyproxy.io/Backend"),
)

NGINX_GATEWAY_FABRIC = Implementation(
    "nginx-gateway-fabric", "NGINX Gateway Fabric", ("gateway.nginx.org/nginx-gateway-controller",),
    (_report("v1.6/nginx-nginx-gateway-fabric/experimental-2.7.0-default-report.yaml", "v2.7.0", "v1.6.1",
             "experimental", "2026-09-02", "GATEWAY-TLS GATEWAY-UDP GATEWAY-HTTP GATEWAY-GRPC GATEWAY-TCP",
             _GW_ALL + " BackendTLSPolicy HTTPRoute303RedirectStatusCode HTTPRoute307RedirectStatusCode "
             "HTTPRoute308RedirectStatusCode HTTPRouteBackendProtocolH2C HTTPRouteBackendProtocolWebSocket "
             "HTTPRouteCORS HTTPRouteDestinationPortMatching HTTPRouteHostRewrite HTTPRouteMethodMatching "
             "HTTPRouteParentRefPort HTTPRoutePathRedirect HTTPRoutePathRewrite HTTPRoutePortRedirect "
             "HTTPRouteQueryParamMatching HTTPRouteRequestMirror HTTPRouteRequestMultipleMirrors "
             "HTTPRouteRequestPercentageMirror HTTPRouteResponseHeaderModification HTTPRouteSchemeRedirect "
             "TLSRouteModeMixed TLSRouteModeTerminate UDPRoute TCPRoute",
             "BackendTLSPolicySANValidation HTTPRouteBackendRequestHeaderModification HTTPRouteBackendTimeout "
             "HTTPRouteNamedRouteRule HTTPRouteRequestTimeout HTTPRouteRetry HTTPRouteRetryBackendTimeout "
             "HTTPRouteRetryConnectionError"),),
    # docs.nginx.com/nginx-gateway-fabric/install/deploy-data-plane: "it creates a Service and an NGINX
    # deployment in the same namespace as the Gateway", named <gateway>-<gatewayclass>
    # (internal/framework/controller/resource.go CreateNginxResourceName; labels app.kubernetes.io/name and
    # gateway.networking.k8s.io/gateway-name: internal/controller/provisioner/objects.go); the Helm release
    # "ngf" in namespace nginx-gateway holds the control plane and its ClusterIP Service (agent connections).
    Infrastructure("gateway-class", None, image="ghcr.io/nginx/nginx-gateway-fabric/nginx:2.7.0", container="nginx",
                   labels=(("app.kubernetes.io/name", "{name}"), ("app.kubernetes.io/managed-by", "ngf-nginx"),
                           (_GATEWAY_LABEL, "{gateway}")),
                   control_plane=(ControlPlaneObject(
                       "Deployment", "nginx-gateway", "ngf-nginx-gateway-fabric",
                       (("app.kubernetes.io/name", "nginx-gateway-fabric"), ("app.kubernetes.io/instance", "ngf")),
                       (("agent-grpc", 8443), ("health", 8081), ("metrics", 9113)),
                       "ghcr.io/nginx/nginx-gateway-fabric:2.7.0"),),
                   source="nginx/nginx-gateway-fabric internal/controller/provisioner; docs install/deploy-data-plane"),
    Reply(404, "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n<center><h1>404 Not Found</h1>"
               "</center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n", "text/html"),
    Reply(503, "<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n<center>"
               "<h1>503 Service Temporarily Unavailable</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n"
               "</html>\r\n", "text/html"),
    Reply(500, "<html>\r\n<head><title>500 Internal Server Error</title></head>\r\n<body>\r\n<center><h1>500 "
               "Internal Server Error</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
          "text/html"),
    "NGINX",
    ("gateway.nginx.org/NginxProxy", "gateway.nginx.org/ClientSettingsPolicy", "gateway.nginx.org/ObservabilityPolicy",
     "gateway.nginx.org/UpstreamSettingsPolicy", "gateway.nginx.org/SnippetsFilter"),
    ("internal/controller/nginx/config: an upstream without endpoints is sent to the nginx-503-server socket "
     "(return 503), an invalid backendRef to nginx-500-server (return 500); a host no server names reaches the "
     "default_server, which returns 404; the bodies are NGINX's own error pages",),
    "nginx",
)

_CILIUM_HTTP = (_GW_ALL.replace("GatewayBackendClientCertificate ", "").replace(
    "GatewayFrontendClientCertificateValidation GatewayFrontendClientCertificateValidationInsecureFallback ", "")
    .replace("GatewayHTTPSListenerDetectMisdirectedRequests ", "")
    + " " + _HTTP_ALL.replace("BackendTLSPolicySANValidation ", "").replace("HTTPRouteParentRefPort ", ""))
_CILIUM_INFRA = Infrastructure(
    "prefix", None, prefix="cilium-gateway-", deployment=False,
    labels=(("io.cilium.gateway/owning-gateway", "{gateway}"), (_GATEWAY_LABEL, "{gateway}")),
    owning_name_label="io.cilium.gateway/owning-gateway",
    control_plane=(
        ControlPlaneObject("Deployment", "kube-system", "cilium-operator",
                           (("io.cilium/app", "operator"), ("name", "cilium-operator")),
                           (("health", 9234),), "quay.io/cilium/operator-generic:v1.20.0"),
        ControlPlaneObject("DaemonSet", "kube-system", "cilium-envoy", (("k8s-app", "cilium-envoy"),),
                           (("envoy-metrics", 9964),), "quay.io/cilium/cilium-envoy:v1.20.0"),
    ),
    shared_proxy_namespace="kube-system", shared_proxy_labels=(("k8s-app", "cilium-envoy"),),
    source="cilium/cilium operator/pkg/model/translation/gateway-api (service cilium-gateway-<name>, no selector: "
           "the node's Envoy answers)")
CILIUM = Implementation(
    "cilium", "Cilium", ("io.cilium/gateway-controller",),
    (_report("v1.6/cilium/experimental-v1.20.0-default-report.yaml", "v1.20.0", "v1.6.1", "experimental",
             "2026-07-31", "GATEWAY-TLS GATEWAY-UDP MESH-GRPC MESH-HTTP GATEWAY-HTTP GATEWAY-GRPC GATEWAY-TCP",
             _CILIUM_HTTP + " UDPRoute TCPRoute MeshClusterIPMatching " + _MESH,
             "BackendTLSPolicySANValidation GatewayBackendClientCertificate GatewayFrontendClientCertificateValidation "
             "GatewayFrontendClientCertificateValidationInsecureFallback "
             "GatewayHTTPSListenerDetectMisdirectedRequests HTTPRouteParentRefPort"),
     _report("v1.6/cilium/standard-v1.20.0-default-report.yaml", "v1.20.0", "v1.6.1", "standard", "2026-07-31",
             "GATEWAY-GRPC GATEWAY-TCP GATEWAY-TLS GATEWAY-UDP MESH-GRPC MESH-HTTP GATEWAY-HTTP",
             _CILIUM_HTTP.replace("HTTPRouteRetry HTTPRouteRetryBackendTimeout HTTPRouteRetryConnectionError ", "")
             + " UDPRoute TCPRoute MeshClusterIPMatching " + _MESH,
             "BackendTLSPolicySANValidation GatewayBackendClientCertificate GatewayFrontendClientCertificateValidation "
             "GatewayFrontendClientCertificateValidationInsecureFallback "
             "GatewayHTTPSListenerDetectMisdirectedRequests HTTPRouteParentRefPort HTTPRouteRetry "
             "HTTPRouteRetryBackendTimeout HTTPRouteRetryConnectionError")),
    _CILIUM_INFRA, _ENVOY_MISS, _ENVOY_NO_UPSTREAM, _ENVOY_INVALID, "Envoy",
    ("cilium.io/CiliumGatewayClassConfig", "cilium.io/CiliumEnvoyConfig", "cilium.io/CiliumNetworkPolicy"),
)

ISTIO = Implementation(
    "istio", "Istio", ("istio.io/gateway-controller",),
    (_report("v1.6/istio-istio/1.31.0-default-report.yaml", "1.31", "v1.6.0", "experimental", "2026-09-10",
             "GATEWAY-HTTP GATEWAY-GRPC GATEWAY-TCP GATEWAY-TLS MESH-HTTP",
             _GW_ALL.replace("GatewayBackendClientCertificate ", "").replace(
                 "GatewayHTTPSListenerDetectMisdirectedRequests ", "") + " " + _HTTP_ALL
             + " TCPRoute TLSRouteModeMixed TLSRouteModeTerminate MeshConsumerRoute " + _MESH,
             "GatewayBackendClientCertificate GatewayHTTPSListenerDetectMisdirectedRequests"),),
    # istio.io docs tasks/traffic-management/ingress/gateway-api "Automated Deployment": a Deployment and
    # Service <gateway>-<gatewayclass> in the Gateway's namespace, with the status port 15021.
    Infrastructure("gateway-class", None, image="docker.io/istio/proxyv2:1.31.0", container="istio-proxy",
                   extra_service_ports=(("status-port", 15021),), extra_container_ports=(("status-port", 15021),),
                   labels=((_GATEWAY_LABEL, "{gateway}"), ("istio.io/gateway-name", "{gateway}"),
                           ("gateway.istio.io/managed", "istio.io-gateway-controller")),
                   control_plane=(ControlPlaneObject(
                       "Deployment", "istio-system", "istiod", (("app", "istiod"), ("istio", "pilot")),
                       (("grpc-xds", 15010), ("https-dns", 15012), ("https-webhook", 15017), ("http-monitoring",
                                                                                              15014)),
                       "docker.io/istio/pilot:1.31.0"),),
                   source="istio/istio pilot/pkg/config/kube/gateway/deploymentcontroller.go"),
    _ENVOY_MISS, _ENVOY_NO_UPSTREAM, _ENVOY_INVALID, "Envoy",
    ("security.istio.io/AuthorizationPolicy", "security.istio.io/RequestAuthentication",
     "networking.istio.io/DestinationRule", "networking.istio.io/EnvoyFilter"),
)

KGATEWAY = Implementation(
    "kgateway", "kgateway", ("kgateway.dev/kgateway",),
    (_report("v1.6/kgateway/v2.4.5-report.yaml", "v2.4.5", "v1.6.1", "experimental", "2026-09-21",
             "GATEWAY-HTTP GATEWAY-GRPC GATEWAY-TCP GATEWAY-TLS",
             _GW_ALL.replace("GatewayHTTPSListenerDetectMisdirectedRequests ", "") + " " + _HTTP_ALL
             + " TCPRoute TLSRouteModeMixed TLSRouteModeTerminate",
             "GatewayHTTPSListenerDetectMisdirectedRequests"),),
    # kgateway-dev/kgateway internal/kgateway/deployer: the proxy Deployment and Service carry the Gateway's name.
    Infrastructure("gateway", None, image="cr.kgateway.dev/kgateway-dev/envoy-wrapper:v2.4.5",
                   container="kgateway-proxy",
                   labels=(("app.kubernetes.io/name", "{gateway}"), ("app.kubernetes.io/instance", "{gateway}"),
                           (_GATEWAY_LABEL, "{gateway}")),
                   control_plane=(ControlPlaneObject(
                       "Deployment", "kgateway-system", "kgateway",
                       (("app.kubernetes.io/name", "kgateway"), ("app.kubernetes.io/instance", "kgateway")),
                       (("grpc-xds", 9977), ("health", 9093)), "cr.kgateway.dev/kgateway-dev/kgateway:v2.4.5"),),
                   source="kgateway-dev/kgateway internal/kgateway/deployer; helm chart kgateway"),
    _ENVOY_MISS, _ENVOY_NO_UPSTREAM, _ENVOY_INVALID, "Envoy",
    ("gateway.kgateway.dev/TrafficPolicy", "gateway.kgateway.dev/HTTPListenerPolicy",
     "gateway.kgateway.dev/BackendConfigPolicy", "gateway.kgateway.dev/GatewayParameters",
     "gateway.kgateway.dev/Backend"),
)

AGENTGATEWAY = Implementation(
    "agentgateway", "agentgateway", ("agentgateway.dev/agentgateway",),
    (_report("v1.6/agentgateway-agentgateway/v1.6.0-report.yaml", "v1.6.0", "v1.6.2", "experimental", "2026-10-02",
             "GATEWAY-HTTP GATEWAY-GRPC GATEWAY-TCP GATEWAY-TLS",
             _GW_ALL + " " + _HTTP_ALL + " TCPRoute TLSRouteModeMixed TLSRouteModeTerminate"),),
    Infrastructure("gateway", None, image="cr.agentgateway.dev/agentgateway:v1.6.0", container="agentgateway",
                   labels=(("app.kubernetes.io/name", "{gateway}"), ("app.kubernetes.io/instance", "{gateway}"),
                           (_GATEWAY_LABEL, "{gateway}")),
                   control_plane=(ControlPlaneObject(
                       "Deployment", "agentgateway-system", "agentgateway",
                       (("app.kubernetes.io/name", "agentgateway"), ("app.kubernetes.io/instance", "agentgateway")),
                       (("agw-grpc", 9978), ("health", 9093), ("metrics", 9092)),
                       "cr.agentgateway.dev/controller:v1.6.0"),),
                   source="agentgateway/agentgateway controller/pkg/deployer/agentgateway_parameters.go (the proxy "
                          "takes the Gateway's name); controller/install/helm/agentgateway/values.yaml (ports)"),
    # crates/agentgateway/src/proxy/mod.rs: a ProxyError answers text/plain with its own words
    # (RouteNotFound 404, NoHealthyEndpoints 503, BackendDoesNotExist 500).
    Reply(404, "route not found"), Reply(503, "no healthy backends"), Reply(500, "backend does not exist"),
    "agentgateway",
    ("agentgateway.dev/AgentgatewayPolicy", "agentgateway.dev/AgentgatewayBackend",
     "agentgateway.dev/AgentgatewayParameters"),
    writer="",
)

TRAEFIK = Implementation(
    "traefik", "Traefik", ("traefik.io/gateway-controller",),
    (_report("v1.6/traefik-traefik/experimental-v3.7.10-default-report.yaml", "v3.7.10", "v1.6.1", "experimental",
             "2026-07-30", "GATEWAY-GRPC GATEWAY-HTTP GATEWAY-TLS",
             "BackendTLSPolicy GatewayPort8080 HTTPRoute303RedirectStatusCode HTTPRoute307RedirectStatusCode "
             "HTTPRoute308RedirectStatusCode HTTPRouteBackendProtocolH2C HTTPRouteBackendProtocolWebSocket "
             "HTTPRouteBackendRequestHeaderModification HTTPRouteDestinationPortMatching HTTPRouteHostRewrite "
             "HTTPRouteMethodMatching HTTPRouteNamedRouteRule HTTPRouteParentRefPort HTTPRoutePathRedirect "
             "HTTPRoutePathRewrite HTTPRoutePortRedirect HTTPRouteQueryParamMatching "
             "HTTPRouteResponseHeaderModification HTTPRouteSchemeRedirect TLSRouteModeMixed TLSRouteModeTerminate",
             "BackendTLSPolicySANValidation GatewayAddressEmpty GatewayBackendClientCertificate "
             "GatewayFrontendClientCertificateValidation GatewayFrontendClientCertificateValidationInsecureFallback "
             "GatewayHTTPListenerIsolation GatewayHTTPSListenerDetectMisdirectedRequests "
             "GatewayInfrastructurePropagation GatewayStaticAddresses HTTPRouteBackendTimeout HTTPRouteCORS "
             "HTTPRouteRequestMirror HTTPRouteRequestMultipleMirrors HTTPRouteRequestPercentageMirror "
             "HTTPRouteRequestTimeout HTTPRouteRetry HTTPRouteRetryBackendTimeout HTTPRouteRetryConnectionError "
             "ListenerSet"),),
    # traefik/traefik-helm-chart: one Traefik Deployment and LoadBalancer Service "traefik" in namespace traefik
    # serve every Gateway; listeners are its entryPoints (web 8000 → Service port 80, websecure 8443 → 443).
    Infrastructure("shared", "traefik", image="docker.io/traefik:v3.7.10", container="traefik",
                   labels=(("app.kubernetes.io/name", "traefik"), ("app.kubernetes.io/instance", "traefik-traefik")),
                   owning_name_label="app.kubernetes.io/name",
                   control_plane=(ControlPlaneObject(
                       "Deployment", "traefik", "traefik",
                       (("app.kubernetes.io/name", "traefik"), ("app.kubernetes.io/instance", "traefik-traefik")),
                       (("web", 8000), ("websecure", 8443), ("traefik", 8080)), "docker.io/traefik:v3.7.10",
                       "LoadBalancer", (("web", 80, 8000), ("websecure", 443, 8443))),),
                   source="traefik/traefik-helm-chart traefik/values.yaml (ports.web, ports.websecure)"),
    Reply(404, "404 page not found\n"), Reply(503, "no available server"), Reply(500, "Internal Server Error"),
    "Traefik",
    ("traefik.io/Middleware", "traefik.io/TLSOption", "traefik.io/ServersTransport"),
    writer="",
)

KONG = Implementation(
    "kong", "Kong Operator", ("konghq.com/gateway-operator",),
    (_report("v1.6/kong-operator/experimental-v2.3.2-expressions-standard-report.yaml", "v2.3.2", "v1.6.2",
             "experimental", "2026-09-28", "GATEWAY-TLS GATEWAY-UDP GATEWAY-HTTP GATEWAY-GRPC GATEWAY-TCP",
             "GatewayAddressEmpty GatewayInfrastructurePropagation GatewayPort8080 HTTPRouteBackendTimeout "
             "HTTPRouteHostRewrite HTTPRouteMethodMatching HTTPRoutePathRewrite HTTPRouteQueryParamMatching "
             "HTTPRouteResponseHeaderModification TLSRouteModeTerminate UDPRoute TCPRoute"),),
    # Kong/kong-operator: a DataPlane per Gateway whose Deployment is dataplane-<gateway>-<suffix> and
    # whose ingress Service is dataplane-ingress-<gateway>-<suffix>, in the Gateway's namespace.
    Infrastructure("kong", None, image="kong/kong-gateway:3.12", container="proxy",
                   labels=(("app", "{gateway}"), ("gateway-operator.konghq.com/managed-by", "dataplane"),
                           ("konghq.com/gateway-operator", "dataplane")),
                   owning_name_label="app",
                   control_plane=(ControlPlaneObject(
                       "Deployment", "kong-system", "kong-operator-kong-operator-controller-manager",
                       (("app.kubernetes.io/name", "kong-operator"), ("control-plane", "controller-manager")),
                       (("metrics", 8080), ("webhook", 9443)), "kong/kong-operator:2.3.2"),),
                   source="Kong/kong-operator controller/dataplane (generateName dataplane-<gateway>-)"),
    Reply(404, '{"message":"no Route matched with those values"}', "application/json"),
    Reply(503, '{"message":"failure to get a peer from the ring-balancer"}', "application/json"),
    Reply(500, '{"message":"An unexpected error occurred"}', "application/json"),
    "Kong",
    ("configuration.konghq.com/KongPlugin", "configuration.konghq.com/KongClusterPlugin",
     "gateway-operator.konghq.com/GatewayConfiguration"),
    writer="",
)

GKE = Implementation(
    "gke", "GKE Gateway", ("networking.gke.io/gateway",),
    (_report("v1.6/gke-gateway/v1.6.0-gke-report.yaml", "1.36.2-gke.2154000", "v1.6.0", "standard", "2026-07-23",
             "GATEWAY-HTTP",
             "BackendTLSPolicy BackendTLSPolicySANValidation GatewayBackendClientCertificate "
             "GatewayFrontendClientCertificateValidation GatewayPort8080 HTTPRouteHostRewrite HTTPRoutePathRedirect "
             "HTTPRouteQueryParamMatching HTTPRouteRequestMirror HTTPRouteRequestPercentageMirror "
             "HTTPRouteResponseHeaderModification HTTPRouteSchemeRedirect",
             "GatewayAddressEmpty GatewayFrontendClientCertificateValidationInsecureFallback "
             "GatewayHTTPListenerIsolation GatewayHTTPSListenerDetectMisdirectedRequests "
             "GatewayInfrastructurePropagation GatewayStaticAddresses HTTPRoute303RedirectStatusCode "
             "HTTPRoute307RedirectStatusCode HTTPRoute308RedirectStatusCode HTTPRouteBackendProtocolH2C "
             "HTTPRouteBackendProtocolWebSocket HTTPRouteBackendRequestHeaderModification "
             "HTTPRouteBackendRequestRedirect HTTPRouteBackendTimeout HTTPRouteBackendURLRewrite HTTPRouteCORS "
             "HTTPRouteDestinationPortMatching HTTPRouteMethodMatching HTTPRouteNamedRouteRule "
             "HTTPRouteParentRefPort HTTPRoutePathRewrite HTTPRoutePortRedirect HTTPRouteRequestMultipleMirrors "
             "HTTPRouteRequestTimeout HTTPRouteRetry HTTPRouteRetryBackendTimeout HTTPRouteRetryConnectionError "
             "ListenerSet"),),
    # cloud.google.com/kubernetes-engine/docs/concepts/gateway-api: the Gateway is a Google Cloud load
    # balancer; nothing of it runs in the cluster (no proxy Deployment or Service to list).
    Infrastructure("none", None, deployment=False, source="GKE Gateway controller (managed, outside the cluster)"),
    Reply(404, "response 404 (backend NotFound), service rules for the path non-existent"),
    Reply(503, "no healthy upstream"), Reply(500, ""),
    "the Google Cloud load balancer",
    ("networking.gke.io/GCPBackendPolicy", "networking.gke.io/GCPGatewayPolicy", "networking.gke.io/HealthCheckPolicy"),
    writer="",
)

IMPLEMENTATIONS: tuple[Implementation, ...] = (ENVOY_GATEWAY, NGINX_GATEWAY_FABRIC, CILIUM, ISTIO, KGATEWAY,
                                               AGENTGATEWAY, TRAEFIK, KONG, GKE)
BY_KEY: dict[str, Implementation] = {i.key: i for i in IMPLEMENTATIONS}
BY_CONTROLLER: dict[str, Implementation] = {c: i for i in IMPLEMENTATIONS for c in i.controller_names}
DEFAULT = ENVOY_GATEWAY  # the class `migrate ingress` writes and the docs' examples name


def for_controller(controller_name: str) -> Implementation | None:
    return BY_CONTROLLER.get(controller_name)


HTTPROUTE_CRD = "httproutes.gateway.networking.k8s.io"
CHANNEL_ANNOTATION = "gateway.networking.k8s.io/channel"


def channel_in_force(crds: Iterable[Mapping[str, Any]]) -> str:
    """The Gateway API channel of the HTTPRoute CRD among ``crds`` (CustomResourceDefinition bodies: one in the
    input takes over the kind), "standard" (knetsim's own) when none is there."""
    for crd in crds:
        meta = crd.get("metadata") if isinstance(crd, Mapping) else None
        if isinstance(meta, Mapping) and meta.get("name") == HTTPROUTE_CRD:
            channel = (meta.get("annotations") or {}).get(CHANNEL_ANNOTATION)
            return channel if isinstance(channel, str) and channel else "standard"
    return "standard"


def by_key(key: str) -> Implementation:
    """The profile named ``key`` (its key, or a controllerName); KeyError naming the known keys otherwise."""
    found = BY_KEY.get(key) or BY_CONTROLLER.get(key)
    if found is None:
        raise KeyError(f"unknown Gateway implementation {key!r} (known: {', '.join(BY_KEY)})")
    return found


def _api_domain(group: str) -> str:
    """The last two labels of an API group or controller name's domain (``gateway.envoyproxy.io`` → envoyproxy.io)."""
    return ".".join(group.split("/", 1)[0].split(".")[-2:])


def parameters_problem(impl: Implementation, ref: Mapping[str, Any] | None, namespace: str | None,
                       exists: Callable[[str, str, str], bool]) -> str | None:
    """Why a ``parametersRef`` (GatewayClass ``spec.parametersRef``, Gateway ``spec.infrastructure.parametersRef``)
    is invalid, None when it is absent or resolves (``exists(kind, namespace, name)`` looks the referent up).

    The API types (kubernetes-sigs/gateway-api ``apis/v1/gatewayclass_types.go`` and ``gateway_types.go``): a
    referent that cannot be found or is of an unsupported kind SHOULD make the object ``Accepted: False`` with
    reason ``InvalidParameters``; conformance ``gateway-invalid-parameters-ref.go`` (GatewayInvalidParametersRef)
    names ``invalid.io/InvalidParameters``. Supported: a core kind (ConfigMap: Istio) or a kind of the
    implementation's own API (its extension kinds' and controller name's domains). Read by the translation
    (status) and by the infrastructure (a class that is not accepted gets no proxy)."""
    if not ref:
        return None
    group, kind, name = str(ref.get("group") or ""), str(ref.get("kind") or ""), str(ref.get("name") or "")
    domains = {_api_domain(k) for k in (*impl.extension_kinds, *impl.controller_names)}
    what = f"{group + '/' if group else ''}{kind} {namespace + '/' if namespace else ''}{name}"
    if group and _api_domain(group) not in domains:
        return f"Invalid parametersRef: {what} is not a kind {impl.title} reads its parameters from"
    if not exists(kind, namespace or "", name):
        return f"Invalid parametersRef: {what} not found"
    return None


def supported_by(feature: str, channel: str = "standard") -> list[Implementation]:
    """The implementations whose report for ``channel`` (else their only one) claims ``feature``."""
    return [i for i in IMPLEMENTATIONS if i.for_channel(channel).supports(feature)]


def proxy_name(impl: Implementation, namespace: str, name: str, class_name: str) -> str | None:
    """The name of the per-Gateway Service (and Deployment, where there is one); None where there is none."""
    infra = impl.infrastructure
    if infra.naming == "hashed-envoy":
        # ExpectedResourceHashedName: envoy- + up to 48 characters of ns-name + 8 hex of sha256(ns/name).
        ns_name = f"{namespace}/{name}"
        digest = hashlib.sha256(ns_name.encode()).hexdigest()[:8]
        resource = ns_name.replace("/", "-")
        if len(resource) > 48:
            resource = resource[:48].rstrip("-")
        return f"envoy-{resource}-{digest}"
    if infra.naming == "gateway-class":
        return f"{name}-{class_name}"
    if infra.naming == "gateway":
        return name
    if infra.naming == "prefix":
        return f"{infra.prefix}{name}"
    if infra.naming == "kong":
        return f"dataplane-{name}-{_suffix(namespace, name)}"
    if infra.naming == "shared":
        return infra.control_plane[0].name
    return None


def proxy_service_name(impl: Implementation, namespace: str, name: str, class_name: str) -> str | None:
    if impl.infrastructure.naming == "kong":
        return f"dataplane-ingress-{name}-{_suffix(namespace, name)}"
    return proxy_name(impl, namespace, name, class_name)


def proxy_namespace(impl: Implementation, gateway_namespace: str) -> str:
    infra = impl.infrastructure
    return infra.namespace if infra.namespace is not None else gateway_namespace


def _suffix(namespace: str, name: str) -> str:
    """Kong Operator's generateName suffix, made stable: five characters of sha256(namespace/name)."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"  # the apiserver's generateName alphabet
    digest = hashlib.sha256(f"{namespace}/{name}".encode()).digest()
    return "".join(alphabet[b % len(alphabet)] for b in digest[:5])


# Rows of the features table beyond GATEWAY-HTTP's: the other conformance profiles' route features.
OTHER_FEATURES: tuple[str, ...] = ("TLSRouteModeMixed", "TLSRouteModeTerminate", "TCPRoute", "UDPRoute")


def features_table() -> str:
    """docs/gateway.md's table of implementations × extended features, from the profiles (a test keeps the
    docs equal to it)."""
    keys = [i.key for i in IMPLEMENTATIONS]
    lines = ["| feature | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
    lines.append("| report | " + " | ".join(f"{i.report.version} ({i.report.channel})" for i in IMPLEMENTATIONS)
                 + " |")
    for kind, profile in (("GRPCRoute", "GATEWAY-GRPC"), ("TLSRoute", "GATEWAY-TLS")):
        lines.append(f"| {kind} ({profile}) | "
                     + " | ".join("yes" if i.serves_kind(kind) else "no" for i in IMPLEMENTATIONS) + " |")
    for feature in (*HTTP_FEATURES, *OTHER_FEATURES):
        lines.append(f"| {feature} | " + " | ".join("yes" if i.supports(feature) else "no"
                                                   for i in IMPLEMENTATIONS) + " |")
    lines.append("| **GATEWAY-HTTP extended features** | "
                 + " | ".join(str(len(i.features & set(HTTP_FEATURES))) for i in IMPLEMENTATIONS) + " |")
    return "\n".join(lines)


def infrastructure_table() -> str:
    """docs/gateway.md's table of what each implementation creates for Gateway ``default/eg`` of class ``eg``
    and how it answers where the spec leaves the reply open."""
    lines = ["| implementation | controllerName | control plane | proxy Service for default/eg | route miss | "
             "no ready endpoint |", "|---|---|---|---|---|---|"]
    for i in IMPLEMENTATIONS:
        infra = i.infrastructure
        plane = ", ".join(f"{o.kind} {o.namespace}/{o.name}" for o in infra.control_plane) or "managed by the cloud"
        service = proxy_service_name(i, "default", "eg", "eg")
        where = f"{proxy_namespace(i, 'default')}/{service}" if service else "none (a cloud load balancer)"
        lines.append(f"| {i.title} | `{i.controller_names[0]}` | {plane} | {where} | {i.route_miss.status} | "
                     f"{i.no_healthy_backend.status} |")
    return "\n".join(lines)
